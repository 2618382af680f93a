"""Ingesting one session file into the index (under the index's write lock; see :mod:`logkit.store.index`).

Contract: :meth:`Ingest.session` looks at the file again (another refresh may have ingested it
meanwhile), ingests what it must (the appended complete lines, or the whole file), and records the
file's inode, size, mtime, the ingested prefix's length, line count and the sha256 of its last 4 KiB.
Each line is validated by :func:`logkit.store.reader.iter_events`, which also carries the clash state of
the lines before (rebuilt from the ``events`` rows for an append); each event becomes an ``events``
row (where its line is: byte offset and length, no copy of it) and, by kind, a row of ``hypotheses``,
``verdicts``, ``decisions`` or ``metrics``; each attempt an event touched gets its row again from
:func:`logkit.store.derive.attempt_row` (on an append, its earlier events are read again from the
file at their offsets: :func:`logkit.store.index.lines_at`); the facts of a launch config, an
environment, a command or a metric's labels seen before in the same ingest come from its memo (the
rows are the same without it). Rows are inserted with one ``executemany`` per table and session.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from datetime import UTC, datetime
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from . import files
from ..errors import StoreError
from .reader import Problem, iter_events
from .derive import ATTEMPT_COLUMNS, ATTEMPT_KINDS, METRIC_COLUMNS, attempt_values, light, metric_row
from .index import lines_at

__all__ = ["Ingest", "TABLES"]

#: The tables holding a session's rows.
TABLES = ("events", "problems", "attempts", "attempt_backends", "metrics", "hypotheses", "verdicts", "decisions", "sessions")
_TAIL = 4096
#: Rows per INSERT statement of the narrow, many-rowed tables (events, metrics, attempt_backends):
#: sqlite3's executemany pays a reset, a step and a GIL release per statement, more than SQLite
#: pays to insert a narrow row: 32 rows to a statement (at most 32 x 14 variables) insert the
#: events rows in about two thirds of the time (0.20 -> 0.13 s CPU per 100k rows).
PACK = 32


#: the tzinfo pydantic gives a time written with ``Z`` or ``+00:00`` (asked, not assumed)
_PARSED_UTC = TypeAdapter(datetime).validate_json(b'"2000-01-01T00:00:00Z"').tzinfo


#: "00" to "99": the two-digit fields of a time, looked up rather than %-formatted
_TWO = tuple(f"{n:02d}" for n in range(100))


def _iso(when: datetime) -> str:
    """``when.isoformat()``, put together here for UTC without microseconds (a fifth of the instructions)."""
    tz = when.tzinfo
    if (tz is _PARSED_UTC or tz is UTC) and not when.microsecond:
        year = when.year
        if year >= 1000:
            two = _TWO
            return (f"{year}-{two[when.month]}-{two[when.day]}T{two[when.hour]}:{two[when.minute]}:"
                    f"{two[when.second]}+00:00")
    return when.isoformat()


# A None parameter is bound as NULL either way; without an adapter of its own, sqlite3 (3.11) first
# asks its protocol type for ``__adapt__``, and that failed lookup formats an AttributeError message,
# once per None: about an eighth of the binding's instructions at ingest (most rows have NULL
# columns). Registered adapters are the documented way (sqlite3.register_adapter); this one returns
# the None it is given, for any connection. It is an empty dict's ``get`` (None for any key): a C
# call, where a Python function would cost a frame per None (1% of a build from nothing).
sqlite3.register_adapter(type(None), {}.get)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@cache
def _insert_sql(table: str, width: int, rows: int) -> str:
    one = "(" + ", ".join("?" * width) + ")"
    return f"INSERT INTO {table} VALUES " + ", ".join([one] * rows)


def _insert(conn: sqlite3.Connection, table: str, width: int, rows: list[tuple[Any, ...]]) -> None:
    """Insert ``rows`` (tuples of ``width`` values) into ``table`` in order, :data:`PACK` to a statement."""
    whole = len(rows) - len(rows) % PACK
    if whole:
        conn.executemany(_insert_sql(table, width, PACK),
                         [tuple(chain.from_iterable(rows[at:at + PACK])) for at in range(0, whole, PACK)])
    if whole < len(rows):
        conn.executemany(_insert_sql(table, width, 1), rows[whole:])


class Ingest:
    """The rows of the sessions one refresh ingests."""

    def __init__(self, conn: sqlite3.Connection, root: Path) -> None:
        self.conn = conn
        self.root = root
        #: the facts of the launch configs, environments, commands and metric labels seen in this
        #: ingest (:func:`~logkit.store.derive.attempt_values`, :func:`~logkit.store.derive.metric_row`)
        self.memo: dict[Any, Any] = {}

    def forget(self, sid: str) -> None:
        """Delete every row of ``sid``."""
        for table in TABLES:
            self.conn.execute(f"DELETE FROM {table} WHERE session = ?", (sid,))

    def session(self, sid: str, path: Path) -> int:
        """Bring ``sid`` up to date; 1 if lines were looked at, 0 if it was up to date already."""
        try:
            fh = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError:
            self.forget(sid)
            return 1
        with fh:
            st = os.fstat(fh.fileno())
            row = self.conn.execute("SELECT ino, seen, mtime, size, lines, tail FROM sessions WHERE session = ?",
                                    (sid,)).fetchone()
            if row is not None and row[:3] == (st.st_ino, st.st_size, st.st_mtime_ns):
                return 0
            start, after, seen, prev = 0, 0, None, b""
            if row is not None and row[0] == st.st_ino and 0 < row[3] <= st.st_size:
                size, lines, tail = row[3:]
                fh.seek(max(0, size - _TAIL))
                prev = fh.read(size - max(0, size - _TAIL))
                if _sha(prev) == tail:
                    start, after, seen = size, lines, self._seen(sid)
            if seen is None:
                if row is not None:
                    self.forget(sid)
                prev, row = b"", None
                fh.seek(0)
            data = fh.read(max(0, st.st_size - start))
        cut = data.rfind(b"\n") + 1
        body = data[:cut]
        chunks = body.split(b"\n")
        chunks.pop()  # the empty piece after the last newline
        lines = after + len(chunks)
        torn = lines + 1 if data[cut:].strip() else None
        try:
            added, meta = self._lines(sid, path, body, chunks, after, start, seen or {}) if chunks else (0, {})
        except StoreError:  # an earlier line moved (a same-size edit the tail hash missed): ingest it whole
            self.forget(sid)
            return self.session(sid, path)
        if row is None:
            self.conn.execute("INSERT INTO sessions (session, events) VALUES (?, 0)", (sid,))
        # the ids any line claims, a damaged or newer one too (never handed out again), the torn one included
        claims = files.max_short_numbers(data)
        self.conn.execute(
            "UPDATE sessions SET ino = ?, seen = ?, mtime = ?, size = ?, lines = ?, tail = ?, torn = ?,"
            " events = events + ?, max_a = max(max_a, ?), max_h = max(max_h, ?) WHERE session = ?",
            (st.st_ino, st.st_size, st.st_mtime_ns, start + cut, lines, _sha((prev + body)[-_TAIL:]), torn, added,
             *claims, sid))
        if meta:
            self.conn.execute("UPDATE sessions SET title = ?, goal = ?, started = ?, host = ?, tags = ?"
                              " WHERE session = ? AND title IS NULL", (*meta.values(), sid))
        return 1

    def _seen(self, sid: str) -> dict[str, int]:
        """The :func:`logkit.store.reader.clash` state of the lines ingested so far."""
        seen: dict[str, int] = {}
        for line, kind, event_id, short, attempt in self.conn.execute(
                "SELECT line, kind, id, short_id, attempt FROM events WHERE session = ?", (sid,)):
            seen[event_id] = line
            if short is not None:
                seen[short] = line
            if kind == "outcome":
                seen["outcome:" + attempt] = line
        return seen

    def _lines(self, sid: str, path: Path, body: bytes, chunks: list[bytes], after: int, start: int,
               seen: dict[str, int]) -> tuple[int, dict[str, Any]]:
        """Validate and insert the complete lines ``body`` (after line ``after``, at byte ``start``); (events, meta)."""
        problems: list[Problem] = []
        events, hyps, verdicts, decisions, metrics = [], [], [], [], []
        groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        meta: dict[str, Any] = {}
        for number, at, length, event in iter_events(path, body, problems, seen=seen, after=after, chunks=chunks):
            fields = event.__dict__
            kind = fields["kind"]
            ref = fields.get("attempt")
            if kind == "sweep_cell":
                ref = fields["attempts"][0] if fields["attempts"] else None
            provenance = fields["provenance"]
            ts = _iso(fields["ts"])
            events.append((sid, number, kind, fields["id"], fields.get("short_id"), ref, start + at, length, ts,
                           provenance.source if provenance is not None else None))
            if kind in ATTEMPT_KINDS:
                data = light(event, ts)
                if kind == "sweep_cell":
                    for short in fields["attempts"]:
                        groups.setdefault(short, []).append((number, data))
                else:
                    groups.setdefault(fields["short_id"] if kind == "attempt" else ref, []).append((number, data))
            elif kind == "metric":
                metrics.append(metric_row(sid, number, event, ts, self.memo))
            elif kind == "hypothesis":
                hyps.append((sid, event.short_id, number, ts, event.text, event.priority, json.dumps(event.tags)))
            elif kind == "verdict":
                verdicts.append((sid, number, ts, event.hypothesis, event.verdict, json.dumps(event.evidence),
                                 event.because))
            elif kind == "decision":
                decisions.append((sid, number, ts, event.decision_id, event.title, event.status, event.supersedes))
            elif kind == "session" and not meta:
                meta = {"title": event.title, "goal": event.goal, "started": ts, "host": event.host,
                        "tags": json.dumps(event.tags)}
        run = self.conn.executemany
        _insert(self.conn, "events", 10, events)
        run("INSERT INTO problems VALUES (?, ?, ?, ?)", [(sid, p.line, p.message, p.field) for p in problems])
        run("INSERT OR REPLACE INTO hypotheses VALUES (?, ?, ?, ?, ?, ?, ?)", hyps)
        run("INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?)", verdicts)
        run("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?)", decisions)
        _insert(self.conn, "metrics", len(METRIC_COLUMNS), metrics)
        rows, backends = [], []
        for short, group in groups.items():
            if after:  # an append: the attempt's earlier events are in the file, where its rows say
                group = self._attempt_events(sid, short, path)
            facts = attempt_values(sid, short, group, self.memo)
            if facts is not None:
                rows.append(facts[0])
                backends += facts[1]
        if after:
            run("DELETE FROM attempt_backends WHERE session = ? AND short_id = ?", [(sid, short) for short in groups])
        run(f"INSERT OR REPLACE INTO attempts ({', '.join(ATTEMPT_COLUMNS)})"
            f" VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})", rows)
        _insert(self.conn, "attempt_backends", 11, backends)
        return len(events), meta

    def _attempt_events(self, sid: str, short: str, path: Path | None = None) -> list[tuple[int, dict[str, Any]]]:
        """Every ingested event of attempt ``short`` (its sweep cells too), in file order, read at their offsets."""
        spans = self.conn.execute(
            "SELECT line, id, offset, length FROM events WHERE session = ? AND (short_id = ? AND kind = 'attempt'"
            " OR attempt = ? OR kind = 'sweep_cell') ORDER BY line", (sid, short, short)).fetchall()
        found = lines_at(path or files.events_path(self.root, sid), [s[1:] for s in spans])
        return [(line, data) for (line, *_), data in zip(spans, found, strict=True)
                if data["kind"] != "sweep_cell" or short in (data.get("attempts") or [])]
