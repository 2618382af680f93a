"""One read transaction of the index (:meth:`logkit.store.index.Index.snapshot`): the queries every
reader makes, and :func:`lines_at`, which reads whole events back from their lines in
``events.jsonl`` (the index keeps where a line is, not a copy of it). The columns are documented in
:mod:`logkit.store.index`."""

from __future__ import annotations

import contextlib
import gc
import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import files
from ..errors import StoreError
from .derive import ATTEMPT_COLUMNS, METRIC_COLUMNS

__all__ = ["Snapshot", "gc_paused", "lines_at"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (many rows, no cycles); restores the previous state, so it nests."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def lines_at(path: Path, spans: list[tuple[str, int, int]]) -> Iterator[dict[str, Any]]:
    """The event dicts at ``spans`` (id, offset, length) of ``path``; StoreError when one moved (file rewritten)."""
    if not spans:
        return
    with open(path, "rb") as fh:
        raw = []
        for _id, offset, length in spans:
            fh.seek(offset)
            raw.append(fh.read(length))
    for (event_id, offset, _length), line in zip(spans, raw, strict=True):
        try:
            data = files.load(line)
        except (ValueError, StoreError):
            data = None
        if data is None or data.get("id") != event_id:
            raise StoreError(f"{path}: the line at byte {offset} is not event {event_id}, which the index recorded "
                             "there (the file was rewritten since the index was brought up to date)",
                             fix="run the command again (it refreshes the index first)")
        yield data


def _columns(wanted: tuple[str, ...], known: tuple[str, ...]) -> str:
    """``wanted`` as a SELECT list, each checked against the table's ``known`` columns."""
    unknown = [c for c in wanted if c not in known]
    if unknown or not wanted:
        raise ValueError(f"unknown columns {unknown}: choose from {', '.join(known)}")
    return ", ".join(wanted)


class Snapshot:
    """The queries of one read transaction (see the module's contract for the columns)."""

    def __init__(self, conn: sqlite3.Connection, root: Path) -> None:
        self.conn = conn
        self.root = root

    def _rows(self, sql: str, args: tuple[Any, ...] | list[Any] = (), tuples: bool = False) -> list[Any]:
        cursor = self.conn.execute(sql, args)
        with gc_paused():  # a reader of every row makes a million objects, none in a cycle
            if tuples:
                return cursor.fetchall()
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, r, strict=True)) for r in cursor]

    @staticmethod
    def _where(**filters: Any) -> tuple[str, list[Any]]:
        terms, args = [], []
        for column, value in filters.items():
            if value is None:
                continue
            if isinstance(value, (list, tuple, set, frozenset)):
                terms.append(f"{column} IN ({','.join('?' * len(value))})")
                args += list(value)
            else:
                terms.append(f"{column} = ?")
                args.append(value)
        return (" WHERE " + " AND ".join(terms)) if terms else "", args

    def sessions(self, *, session: str | None = None) -> list[dict[str, Any]]:
        """One row per session (``session``: that one), sorted, with its counts of events, attempts and problems."""
        where, args = self._where(**{"s.session": session})
        rows = self._rows(
            "SELECT s.session, s.title, s.goal, s.started, s.host, s.tags, s.events, s.torn,"
            " (SELECT count(*) FROM attempts a WHERE a.session = s.session) AS attempts,"
            " (SELECT count(*) FROM problems p WHERE p.session = s.session) AS problems"
            f" FROM sessions s{where} ORDER BY s.session", args)
        for row in rows:
            row["problems"] += 1 if row.pop("torn") else 0
            row["path"] = str(files.events_path(self.root, row["session"]))
        return rows

    def attempts(self, *, session: str | None = None, short_id: str | None = None, role: str | None = None,
                 open_only: bool = False, columns: tuple[str, ...] = ATTEMPT_COLUMNS, tuples: bool = False) -> list[Any]:
        """Attempt rows in (session, line) order, filtered; ``columns``: just these; ``tuples``: rows as tuples."""
        where, args = self._where(session=session, short_id=short_id, role=role)
        if open_only:
            where += (" AND " if where else " WHERE ") + "status IS NULL"
        return self._rows(f"SELECT {_columns(columns, ATTEMPT_COLUMNS)} FROM attempts{where} ORDER BY session, line",
                          args, tuples)

    def cell_counts(self, backends: dict[str, Any], arch: str, *, model: str | None = None,
                    sglang: str | None = None) -> list[tuple[Any, ...]]:
        """``(axis, value, model, sglang, flashinfer, category, count)`` of the cells ``backends`` fall in."""
        pairs = [(axis, str(value).strip().lower()) for axis, value in backends.items()]
        if not pairs:
            return []
        match = " OR ".join("(axis = ? AND value = ?)" for _ in pairs)
        return self._rows(
            "SELECT axis, value, model, sglang, flashinfer, matrix, count(*) FROM attempt_backends"
            f" WHERE arch = ? AND matrix IS NOT NULL AND ({match})"
            " AND (? IS NULL OR model IS NULL OR model = ?) AND (? IS NULL OR sglang IS NULL OR sglang = ?)"
            " GROUP BY axis, value, model, sglang, flashinfer, matrix",
            [arch, *(x for pair in pairs for x in pair), model, model, sglang, sglang], tuples=True)

    def cell_latest(self, key: tuple[Any, ...], category: str) -> dict[str, Any] | None:
        """The latest attempt row of cell ``key`` in matrix ``category``: one seek in the cell's index."""
        model, axis, value, arch, sglang, flashinfer = key
        found = self.conn.execute(
            "SELECT session, short_id FROM attempt_backends WHERE axis = ? AND value = ? AND arch = ?"
            " AND matrix = ? AND model IS ? AND sglang IS ? AND flashinfer IS ?"
            " ORDER BY started DESC, session DESC, num DESC LIMIT 1",
            (axis, value, arch, category, model, sglang, flashinfer)).fetchone()
        if found is None:
            return None
        rows = self.attempts(session=found[0], short_id=found[1])
        return rows[0] if rows else None

    def metrics(self, *, session: str | None = None, columns: tuple[str, ...] = METRIC_COLUMNS,
                tuples: bool = False) -> list[Any]:
        """Metric rows in (session, line) order (``columns``, ``tuples``: as :meth:`attempts`)."""
        where, args = self._where(session=session)
        return self._rows(f"SELECT {_columns(columns, METRIC_COLUMNS)} FROM metrics{where} ORDER BY session, line",
                          args, tuples)

    def hypotheses(self, *, session: str | None = None) -> list[dict[str, Any]]:
        """Hypothesis rows in (session, line) order."""
        where, args = self._where(session=session)
        return self._rows(f"SELECT session, short_id, line, ts, text, priority, tags FROM hypotheses{where}"
                          " ORDER BY session, line", args)

    def verdicts(self, *, session: str | None = None) -> list[dict[str, Any]]:
        """Verdict rows in (session, line) order (the last of a hypothesis is its verdict)."""
        where, args = self._where(session=session)
        return self._rows(f"SELECT session, line, ts, hypothesis, verdict, evidence, because FROM verdicts{where}"
                          " ORDER BY session, line", args)

    def decisions(self, *, session: str | None = None) -> list[dict[str, Any]]:
        """Decision rows in (session, line) order, each with its whole event (read from its line) as ``event``."""
        where, args = self._where(session=session)
        rows = self._rows(f"SELECT d.session, d.line, d.ts, d.decision_id, d.title, d.status, d.supersedes,"
                          f" e.id AS _id, e.offset AS _offset, e.length AS _length"
                          f" FROM decisions d JOIN events e USING (session, line){where}"
                          " ORDER BY d.session, d.line", args)
        for sid, group in itertools.groupby(rows, key=lambda r: r["session"]):
            group = list(group)
            spans = [(r.pop("_id"), r.pop("_offset"), r.pop("_length")) for r in group]
            for row, event in zip(group, lines_at(files.events_path(self.root, sid), spans), strict=True):
                row["event"] = event
        return rows

    def events(self, session: str, kinds: list[str] | tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """The events of ``session`` in file order, streamed, each with its dict as ``event`` and ``ts`` as written."""
        where, args = self._where(session=session, kind=list(kinds) if kinds else None)
        names = ("session", "line", "kind", "id", "short_id", "attempt")
        cursor = self.conn.execute(f"SELECT {', '.join(names)}, offset, length FROM events{where} ORDER BY line", args)
        path = files.events_path(self.root, session)
        while batch := cursor.fetchmany(512):
            for row, event in zip(batch, lines_at(path, [r[3:4] + r[6:] for r in batch]), strict=True):
                yield {**dict(zip(names, row, strict=False)), "ts": event.get("ts"), "event": event}

    def attempt_events(self, session: str, short_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The ``attempt`` events of ``short_ids`` in ``session`` (as dicts), by short id."""
        found: dict[str, dict[str, Any]] = {}
        path = files.events_path(self.root, session)
        for start in range(0, len(short_ids), 500):
            part = short_ids[start:start + 500]
            rows = self.conn.execute(
                "SELECT a.short_id, e.id, e.offset, e.length FROM attempts a"
                " JOIN events e ON e.session = a.session AND e.line = a.line"
                f" WHERE a.session = ? AND a.short_id IN ({','.join('?' * len(part))})", (session, *part)).fetchall()
            for (short, *_), event in zip(rows, lines_at(path, [r[1:] for r in rows]), strict=True):
                found[short] = event
        return found

    def problems(self, *, session: str | None = None) -> list[Any]:
        """The problems of every line that did not validate, a torn last one too, in (session, line) order."""
        from .reader import Problem

        where, args = self._where(session=session)
        out = [Problem(files.events_path(self.root, r["session"]), r["line"], r["message"], field=r["field"])
               for r in self._rows(f"SELECT session, line, message, field FROM problems{where}"
                                   " ORDER BY session, line", args)]
        for r in self._rows(f"SELECT session, torn FROM sessions{where} ORDER BY session", args):
            if r["torn"]:
                out.append(Problem(files.events_path(self.root, r["session"]), r["torn"],
                                   "torn last line (logkit was killed while writing it); skipped", torn=True))
        return out

    def next_short_id(self, session: str, prefix: str) -> str:
        """The next ``A<n>``/``H<n>`` no line of ``session`` claims, damaged lines included."""
        row = self.conn.execute(f"SELECT max_{prefix.lower()} FROM sessions WHERE session = ?", (session,)).fetchone()
        return f"{prefix}{(row[0] if row else 0) + 1}"

    def last_launch(self, session: str) -> dict[str, Any] | None:
        """The last ``launch`` attempt of ``session`` as a dict, with its later-probed environment; or None."""
        # INDEXED BY: the planner would walk the (session, line) key backwards through every attempt
        # row of the session (about 1 KB each) to the last launch, often far back
        row = self.conn.execute("SELECT short_id, line FROM attempts INDEXED BY attempts_role WHERE session = ?"
                                " AND role = 'launch' ORDER BY line DESC LIMIT 1", (session,)).fetchone()
        if row is None:
            return None
        found: dict[str, Any] | None = None
        spans = self.conn.execute(
            "SELECT id, offset, length, line FROM events WHERE session = ? AND line = ? UNION ALL"
            " SELECT id, offset, length, line FROM events INDEXED BY events_environment"
            " WHERE session = ? AND attempt = ? AND kind = 'environment' ORDER BY 4",
            (session, row[1], session, row[0])).fetchall()
        spans = [(event_id, offset, length) for event_id, offset, length, _line in spans]
        for event in lines_at(files.events_path(self.root, session), spans):
            if event["kind"] == "attempt":
                found = event
            elif found is not None:
                found["environment"] = event.get("environment")
        return found

    def ingested(self, session: str) -> dict[str, Any] | None:
        """How far ``session`` is ingested: ``ino``, ``size``, ``tail`` hash, ``max_a``/``max_h``; None if not held."""
        rows = self._rows("SELECT ino, size, tail, max_a, max_h FROM sessions WHERE session = ?", (session,))
        return rows[0] if rows else None

    def open_attempts(self, session: str) -> list[dict[str, Any]]:
        """The ``attempt`` dicts of ``session`` without an outcome, in file order, through the status index."""
        spans = self.conn.execute(
            "SELECT e.id, e.offset, e.length FROM attempts a JOIN events e ON e.session = a.session AND e.line = a.line"
            " WHERE a.status IS NULL AND +a.session = ? ORDER BY a.line", (session,)).fetchall()
        return list(lines_at(files.events_path(self.root, session), spans))
