"""The one derived index of a sessions root: what every reader queries instead of re-reading JSONL.

Contract:

* **Where**: one SQLite file (standard-library :mod:`sqlite3`, WAL), ``<root>/.cache/index.sqlite``
  (``<root>/.cache/.gitignore`` keeps it out of git). When the root is on a network filesystem
  (:func:`on_network_fs`: NFS, Lustre, CIFS, sshfs, GPFS, BeeGFS, Ceph, 9p...; ``$LOGKIT_NETWORK_FS``
  ``1``/``0`` overrides), where SQLite's locks are unreliable, it lives on local disk instead:
  ``$XDG_CACHE_HOME/logkit/index/<sha256 of the resolved root>.sqlite`` (default ``~/.cache``).
  When SQLite cannot open, lock or write that file (a read-only store, a lock that fails, a full
  disk) the index is an in-memory database ingested afresh: always correct, only slower
  (:attr:`Index.path` is then None).
* **Never trusted**: the schema is made by numbered :data:`MIGRATIONS` (``PRAGMA user_version``),
  the file carries :data:`APPLICATION_ID`, and a ``meta`` row holds the derivation key (the
  derivation version, the event schema version and the bytes of the data tables the rows are
  derived with). A file that is not a database, another application's, a newer schema's or another
  derivation's is deleted and rebuilt. Deleting ``.cache/`` loses nothing.
* **Built aside**: a missing file is made by the first full :meth:`Index.refresh`, in a private
  file linked into place only when complete (:mod:`logkit.store.fill`: a crash leaves no half
  index; a large store's sessions are shared with worker processes). ``refresh(only=[...])`` with
  no file makes it empty and ingests those sessions only, as an append would.
* **Refresh** (:meth:`Index.refresh`): one pass over ``<root>/<id>/events.jsonl``. A file with the
  inode, size and mtime seen last is skipped. Same inode, grown, and the sha256 of the last 4 KiB
  of the ingested prefix unchanged: only the appended complete lines are ingested (a torn last
  line waits until it ends; :meth:`Snapshot.problems` names it meanwhile). Anything else: the
  session's rows are deleted and it is ingested whole; a vanished session's rows go. Every line is
  validated once, here, by :func:`logkit.reader.iter_events` (with the clash state of the lines
  before); its problems become ``problems`` rows, and a bad line never stops the rest. The rows of
  an attempt are derived by :func:`logkit.store.derive.attempt_row` whenever one of its events arrives.
* **No copies**: an ``events`` row holds where its line is (byte offset, length) and the columns
  readers filter on; a reader of whole events reads those lines from ``events.jsonl`` again
  (:func:`lines_at`: dicts at the current schema, not validated again), and a line that is no
  longer the event its row names (the file rewritten since the refresh) raises
  :class:`~logkit.errors.StoreError`.
* **Concurrency**: writers of ``events.jsonl`` never touch the index. Refreshing readers take
  SQLite's write lock (``BEGIN IMMEDIATE``) and, holding it, look at each file again, so two
  refreshes never ingest a line twice; a reader waits for another's refresh (it would have had to
  do the same work) up to :data:`BUSY_SECONDS`, then ingests into memory instead. A long refresh
  commits every :data:`BATCH_SECONDS` (whole sessions), so a waiting one soon shares the work. Readers query
  inside :meth:`Index.snapshot`: one read transaction, a consistent snapshot that a concurrent
  refresh does not change.
* **Reads** return plain dicts, one per row, keyed by column name (``attempts``/``metrics``:
  ``columns=`` picks some, ``tuples=True`` makes each row a tuple of them, for readers of every row):
  ``sessions``: session, title, goal, started, host, tags (JSON), events, attempts, problems, path;
  ``attempts``: :data:`~logkit.store.derive.ATTEMPT_COLUMNS` (``fingerprint``, ``config``,
  ``backends``, ``tests`` are JSON text; ``status`` None: no outcome yet; ``label`` the attempt's,
  ``outcome_label`` its outcome's); ``attempt_backends``: session, short_id, axis, value (stripped,
  lower case), arch: one row per backend axis an attempt chose (:meth:`Snapshot.choosing`);
  ``metrics``: :data:`~logkit.store.derive.METRIC_COLUMNS`; ``hypotheses``: session, short_id,
  line, ts, text, priority, tags; ``verdicts``: session, line, ts, hypothesis, verdict, evidence
  (JSON), because; ``decisions``: session, line, ts, decision_id, title, status, supersedes, event
  (the event dict, read from its line); ``events``: session, line, kind, id, short_id, attempt, ts,
  event (the dict, read from its line).
  Times are ISO 8601 text as written.

Only :meth:`Index.refresh` imports pydantic (when a line is to be validated); opening the index
and reading it need the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import files
from ..errors import StoreError
from .derive import ATTEMPT_COLUMNS, DERIVATION, METRIC_COLUMNS
from .schema import MIGRATIONS

__all__ = [
    "APPLICATION_ID",
    "BATCH_SECONDS",
    "BUSY_SECONDS",
    "ENV_NETWORK_FS",
    "INDEX_FILE",
    "Index",
    "MIGRATIONS",
    "NETWORK_FS",
    "Snapshot",
    "filesystem_type",
    "index_path",
    "lines_at",
    "on_network_fs",
]

INDEX_FILE = "index.sqlite"
APPLICATION_ID = 0x4C4B4958  # "LKIX"
ENV_NETWORK_FS = "LOGKIT_NETWORK_FS"
BUSY_SECONDS = 30.0
#: A long refresh (a cold index) commits at least this often, so another refresh waits at most this long.
BATCH_SECONDS = 1.0
NETWORK_FS = frozenset({
    "nfs", "nfs4", "lustre", "cifs", "smb3", "smbfs", "fuse.sshfs", "sshfs", "gpfs", "beegfs", "ceph",
    "fuse.ceph", "fuse.cephfs", "9p", "afs", "glusterfs", "fuse.glusterfs", "panfs", "fuse.s3fs", "fuse.gcsfuse",
})
_OCTAL = re.compile(r"\\([0-7]{3})")
_DATA = Path(__file__).resolve().parent.parent / "data"


class _Untrusted(Exception):
    """The index file is not one this logkit built: delete and rebuild it."""


def filesystem_type(path: Path, mounts: str | None = None) -> str | None:
    """The type of the filesystem holding ``path``: the longest mount point above it in ``mounts``
    (the text of ``/proc/self/mountinfo``; read when not given, else ``/proc/mounts``)."""
    tables = [mounts] if mounts is not None else []
    for source in () if mounts is not None else ("/proc/self/mountinfo", "/proc/mounts"):
        with contextlib.suppress(OSError):
            tables.append(Path(source).read_text(encoding="utf-8", errors="replace"))
            break
    target = str(path)
    best, kind = -1, None
    for text in tables:
        for line in text.splitlines():
            head, dash, tail = line.partition(" - ")
            fields = head.split()
            if dash and len(fields) >= 5 and tail.split():  # mountinfo: point is field 5, type after " - "
                point, fstype = fields[4], tail.split()[0]
            elif not dash and len(fields) >= 3:  # /proc/mounts: device, point, type
                point, fstype = fields[1], fields[2]
            else:
                continue
            point = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), point)  # "\040" is a space
            inside = target == point or target.startswith(point.rstrip("/") + "/")
            if inside and len(point) > best:
                best, kind = len(point), fstype
    return kind


def on_network_fs(path: Path) -> bool:
    """Whether ``path`` is on a network filesystem (``$LOGKIT_NETWORK_FS`` = 1/0 decides first)."""
    forced = os.environ.get(ENV_NETWORK_FS)
    if forced in ("0", "1"):
        return forced == "1"
    return (filesystem_type(path) or "") in NETWORK_FS


def index_path(root: Path) -> Path:
    """Where the index of ``root`` lives (see the module's contract)."""
    resolved = Path(root).resolve()
    if not on_network_fs(resolved):
        return resolved / ".cache" / INDEX_FILE
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "logkit" / "index" / (hashlib.sha256(str(resolved).encode()).hexdigest()[:32] + ".sqlite")


def _derivation() -> str:
    """The derivation key: what the rows depend on besides the files themselves."""
    digest = hashlib.sha256(f"{DERIVATION}:{files.SCHEMA_VERSION}".encode())
    for name in ("statuses.toml", "launch.toml"):
        with contextlib.suppress(OSError):
            digest.update((_DATA / name).read_bytes())
    return digest.hexdigest()[:16]


class Index:
    """The index of one sessions root; use as a context manager (or :meth:`close`)."""

    def __init__(self, root: Path | str, *, path: Path | None | bool = True, busy: float = BUSY_SECONDS) -> None:
        """``path``: True for :func:`index_path`, None for an in-memory index, or a file; ``busy``: how
        long to wait for another process's write lock (``logkit run`` waits little before its spawn)."""
        self.root = Path(root)
        self.busy = busy
        wanted = index_path(self.root) if path is True else (path or None)
        self.path: Path | None = None
        #: the file is still to be built (by the next :meth:`refresh`); meanwhile an empty index in memory
        self._build = False
        self.conn = self._open(wanted) if wanted is not None and self.root.is_dir() else None
        if self.conn is not None or self._build:
            self.path = wanted
        if self.conn is None:
            self.conn = self._connect(None)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # -- opening -------------------------------------------------------------------------------

    def _open(self, path: Path) -> sqlite3.Connection | None:
        """The file's connection, migrated; a damaged or foreign file is deleted and made again once;
        None when SQLite cannot use a file there, or when there is none yet (``_build`` is then set)."""
        for _try in range(2):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.parent.name == ".cache" and not (path.parent / ".gitignore").exists():
                    (path.parent / ".gitignore").write_text("# logkit's index: derived from events.jsonl, never committed\n*\n")
                if not path.exists():
                    self._build = True
                    return None
                return self._connect(path)
            except _Untrusted:
                _unlink(path)
            except (sqlite3.Error, OSError):
                return None
        return None

    def _connect(self, path: Path | None) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:" if path is None else path, timeout=self.busy, isolation_level=None,
                               check_same_thread=False)
        try:
            if path is not None:
                try:
                    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                except sqlite3.DatabaseError as exc:
                    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                        raise
                    raise _Untrusted(str(exc)) from exc
                if str(mode).lower() != "wal":
                    raise sqlite3.OperationalError(f"journal mode {mode}")
                conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Apply the missing :data:`MIGRATIONS`; :class:`_Untrusted` for a file that is not ours."""
        def state() -> tuple[int, int, int]:
            try:
                tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                return (conn.execute("PRAGMA application_id").fetchone()[0],
                        conn.execute("PRAGMA user_version").fetchone()[0], tables)
            except sqlite3.DatabaseError as exc:
                raise _Untrusted(str(exc)) from exc

        def check(app: int, version: int, tables: int) -> None:
            if (app, version, tables) != (0, 0, 0) and (app != APPLICATION_ID or version != len(MIGRATIONS)):
                # an older schema too: its rows were derived under it (a migration that reshapes a
                # table would leave the sessions it held marked ingested), so it is rebuilt, not migrated
                raise _Untrusted(f"application id {app}, schema {version}")

        app, version, tables = state()
        check(app, version, tables)
        if version < len(MIGRATIONS):
            conn.execute("BEGIN IMMEDIATE")
            try:
                app, version, tables = state()  # under the lock: another process may have done it
                check(app, version, tables)
                for number in range(version, len(MIGRATIONS)):
                    for statement in MIGRATIONS[number].split(";"):
                        if statement.strip():
                            conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('derivation', ?)", (_derivation(),))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        row = conn.execute("SELECT value FROM meta WHERE key = 'derivation'").fetchone()
        if row is None or row[0] != _derivation():
            raise _Untrusted("derived by another logkit")

    # -- refreshing ----------------------------------------------------------------------------

    def refresh(self, only: list[str] | None = None, *, fallback: bool = True) -> int:
        """Bring the index up to date with the files (``only``: with these sessions' files alone);
        returns the number of sessions (re)ingested. ``fallback=False``: an error raises instead of
        ingesting into memory (a refresh done only for the next reader)."""
        try:
            built = self._build_file(only) if self._build else 0
            return built + self._refresh(only)
        except (sqlite3.Error, OSError, _Untrusted):  # _Untrusted: a foreign file linked in meanwhile
            if self.path is None or not fallback:
                raise
            # a full disk, a lock that fails or waits too long: ingest into memory (correct, slower)
            self.conn.close()
            self.conn, self.path, self._build = self._connect(None), None, False
            return self._refresh(only)

    def _build_file(self, only: list[str] | None) -> int:
        """Make the missing index file (:func:`logkit.store.fill.build`: aside, linked into place when
        complete); with ``only`` (one session wanted now) it is made empty and filled as always."""
        assert self.path is not None
        count = 0
        if only is None:
            from .fill import build

            count = build(self.root, self.path, self._migrate, BUSY_SECONDS)
        conn = self._connect(self.path)
        self.conn.close()
        self.conn, self._build = conn, False
        return count

    def _refresh(self, only: list[str] | None) -> int:
        found = _scan(self.root, only)
        known = {r[0]: tuple(r[1:]) for r in self.conn.execute("SELECT session, ino, seen, mtime FROM sessions")}
        todo = [s for s in found if known.get(s[0]) != _stat_key(s[2])]
        gone = (set(known) if only is None else set(only) & set(known)) - {s[0] for s in found}
        if not todo and not gone:
            return 0
        from .ingest import Ingest  # pydantic from here on, and only when something changed

        self.conn.execute("BEGIN IMMEDIATE")
        try:
            ingest = Ingest(self.conn, self.root)
            for sid in gone:
                ingest.forget(sid)
            count, since = 0, time.monotonic()
            for sid, path, _st in todo:
                count += ingest.session(sid, path)
                if time.monotonic() - since > BATCH_SECONDS:  # let a waiting refresh in: it goes on from here
                    self.conn.execute("COMMIT")
                    self.conn.execute("BEGIN IMMEDIATE")
                    since = time.monotonic()
            self.conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            raise
        return count

    # -- reading -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """One read transaction: every query inside sees the same state of the index."""
        self.conn.execute("BEGIN")
        try:
            self.conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # the snapshot starts at the first read
            yield Snapshot(self.conn, self.root)
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("COMMIT")


def _stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _unlink(path: Path) -> None:
    """Delete an index file with its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(f"{path}{suffix}")


def lines_at(path: Path, spans: list[tuple[str, int, int]]) -> Iterator[dict[str, Any]]:
    """The events whose lines are at ``spans`` (``(id, byte offset, length)``, from ``events`` rows) of
    ``path``, as event dicts at the current schema. They are read again, not validated again (the
    index validated each at ingest). :class:`~logkit.errors.StoreError` when a line is not the event
    the row names: the file was rewritten after the last refresh."""
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


def _scan(root: Path, only: list[str] | None = None) -> list[tuple[str, Path, os.stat_result]]:
    """Every session file with its stat (:func:`logkit.files.session_dirs`), or those of ``only``."""
    return [(d.id, Path(d.events), d.stat) for d in files.session_dirs(root, only)]


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
        """One row per session (``session``: that one alone), sorted by id, with its counts of events,
        attempts and problems."""
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

    def attempts(self, *, session: str | None = None, short_id: str | list[str] | None = None,
                 role: str | None = None, status: str | list[str] | None = None, category: str | None = None,
                 arch: str | None = None, model: str | None = None, open_only: bool = False,
                 columns: tuple[str, ...] = ATTEMPT_COLUMNS, tuples: bool = False) -> list[Any]:
        """Attempt rows in (session, line) order, filtered by the given columns (a list: any of them);
        ``open_only``: those without an outcome. ``columns``: just these; ``tuples``: each row a tuple
        of them in that order, not a dict (a reader of every row: a third faster)."""
        where, args = self._where(session=session, short_id=short_id, role=role, status=status,
                                  category=category, arch=arch, model=model)
        if open_only:
            where += (" AND " if where else " WHERE ") + "status IS NULL"
        return self._rows(f"SELECT {_columns(columns, ATTEMPT_COLUMNS)} FROM attempts{where} ORDER BY session, line",
                          args, tuples)

    def choosing(self, backends: dict[str, Any], arch: str) -> list[dict[str, Any]]:
        """The attempt rows that chose one of ``backends``' axis=value (compared stripped, in lower case)
        on ``arch``, in (session, line) order: every row of the matrix cells such a launch falls in."""
        pairs = [(axis, str(value).strip().lower()) for axis, value in backends.items()]
        if not pairs:
            return []
        match = " OR ".join("(b.axis = ? AND b.value = ?)" for _ in pairs)
        names = ", ".join(f"a.{c}" for c in ATTEMPT_COLUMNS)
        return self._rows(f"SELECT DISTINCT {names} FROM attempt_backends b JOIN attempts a USING (session, short_id)"
                          f" WHERE b.arch = ? AND ({match}) ORDER BY a.session, a.line",
                          [arch, *(x for pair in pairs for x in pair)])

    def metrics(self, *, session: str | None = None, attempt: str | None = None,
                name: str | list[str] | None = None, columns: tuple[str, ...] = METRIC_COLUMNS,
                tuples: bool = False) -> list[Any]:
        """Metric rows in (session, line) order (``columns``, ``tuples``: as :meth:`attempts`)."""
        where, args = self._where(session=session, attempt=attempt, name=name)
        return self._rows(f"SELECT {_columns(columns, METRIC_COLUMNS)} FROM metrics{where} ORDER BY session, line",
                          args, tuples)

    def hypotheses(self, *, session: str | None = None) -> list[dict[str, Any]]:
        """Hypothesis rows in (session, line) order."""
        where, args = self._where(session=session)
        return self._rows(f"SELECT session, short_id, line, ts, text, priority, tags FROM hypotheses{where}"
                          " ORDER BY session, line", args)

    def verdicts(self, *, session: str | None = None, hypothesis: str | None = None) -> list[dict[str, Any]]:
        """Verdict rows in (session, line) order (the last of a hypothesis is its verdict)."""
        where, args = self._where(session=session, hypothesis=hypothesis)
        return self._rows(f"SELECT session, line, ts, hypothesis, verdict, evidence, because FROM verdicts{where}"
                          " ORDER BY session, line", args)

    def decisions(self, *, session: str | None = None) -> list[dict[str, Any]]:
        """Decision rows in (session, line) order, each with its whole event as ``event`` (read from
        its line of ``events.jsonl``)."""
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
        """The validated events of ``session`` in file order, one row at a time (a big session is never
        all in memory), each with the event dict as ``event`` (its line read again, not validated
        again) and its ``ts`` as written."""
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
        """The :class:`logkit.reader.Problem` of every line that did not validate, in (session, line)
        order; a torn last line (still being written, or left by a killed writer) is named too."""
        from ..reader import Problem

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
        """The next ``A<n>``/``H<n>`` no line of ``session`` claims (as of the last refresh), counting
        lines that did not validate (a newer schema's, a damaged one that still names its id)."""
        row = self.conn.execute(f"SELECT max_{prefix.lower()} FROM sessions WHERE session = ?", (session,)).fetchone()
        return f"{prefix}{(row[0] if row else 0) + 1}"

    def last_launch(self, session: str) -> dict[str, Any] | None:
        """The last ``launch`` attempt of ``session`` as its event dict, with the environment probed
        after its start (an ``environment`` event) in place of the one it started with; or None."""
        row = self.conn.execute("SELECT short_id, line FROM attempts WHERE session = ? AND role = 'launch'"
                                " ORDER BY line DESC LIMIT 1", (session,)).fetchone()
        if row is None:
            return None
        found: dict[str, Any] | None = None
        spans = self.conn.execute(
            "SELECT id, offset, length FROM events WHERE session = ? AND (kind = 'attempt' AND short_id = ?"
            " OR kind = 'environment' AND attempt = ?) ORDER BY line", (session, row[0], row[0])).fetchall()
        for event in lines_at(files.events_path(self.root, session), spans):
            if event["kind"] == "attempt":
                found = event
            elif found is not None:
                found["environment"] = event.get("environment")
        return found

    def ingested(self, session: str) -> dict[str, Any] | None:
        """How far ``session``'s file is ingested: ``ino``, ``size`` (the ingested prefix, in bytes),
        ``tail`` (the sha256 of that prefix's last 4 KiB), ``max_a``/``max_h`` (the highest numbers any
        line claims, as :meth:`next_short_id`); None for a session the index does not hold."""
        rows = self._rows("SELECT ino, size, tail, max_a, max_h FROM sessions WHERE session = ?", (session,))
        return rows[0] if rows else None

    def open_attempts(self, session: str) -> list[dict[str, Any]]:
        """The ``attempt`` events (dicts, as stored) of ``session`` that have no outcome, in file order;
        by the status index (few attempts are open in a whole store), not a scan of the session's."""
        spans = self.conn.execute(
            "SELECT e.id, e.offset, e.length FROM attempts a JOIN events e ON e.session = a.session AND e.line = a.line"
            " WHERE a.status IS NULL AND +a.session = ? ORDER BY a.line", (session,)).fetchall()
        return list(lines_at(files.events_path(self.root, session), spans))

    def ids(self, session: str, prefix: str) -> list[str]:
        """The ``A<n>``/``H<n>`` short ids ``session`` records, in file order."""
        return [r[0] for r in self.conn.execute(
            "SELECT short_id FROM events WHERE session = ? AND short_id LIKE ? ORDER BY line", (session, prefix + "%"))]
