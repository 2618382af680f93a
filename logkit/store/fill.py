"""Building a missing index file from nothing, aside (see :mod:`logkit.store.index`).

Contract:

* :func:`build` makes the index file ``path`` when it is missing: every session is ingested into a
  private ``<path>.<pid>.build`` that nobody else can see (no journal, no syncing but one at the
  end, the non-unique indexes made after the rows), which is hard-linked into place only when
  complete. A crash leaves no half index; a file another process linked first wins and is never
  replaced under its readers. Builders serialise on ``<path>.lock`` (a waiter then finds the file
  made and builds nothing), waiting up to :data:`~logkit.store.index.BUSY_SECONDS`.
* **Workers**: a build of more than :data:`PARALLEL_BYTES` of ``events.jsonl`` shares the sessions
  (runs of about equal bytes, in id order) with up to :func:`workers` ``- 1`` worker processes. Each is a fresh
  interpreter (``python -m logkit.store.fill``, spawned, never a fork of the caller) that ingests
  its share into its own file with the same code; the caller ingests its own share meanwhile, then
  copies the workers' rows in (``INSERT ... SELECT``). A worker that fails has its sessions ingested
  by the caller. ``$LOGKIT_INDEX_WORKERS`` sets the number of processes (``1``: the caller alone).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["ENV_WORKERS", "PARALLEL_BYTES", "build", "fill", "workers"]

ENV_WORKERS = "LOGKIT_INDEX_WORKERS"
#: Below this much JSONL a build is quicker than starting a worker interpreter (about half a second).
PARALLEL_BYTES = 50_000_000
#: The interpreter a worker runs (this one).
PYTHON = sys.executable
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)

Migrate = Callable[[sqlite3.Connection], None]


def workers() -> int:
    """Processes a large build uses: ``$LOGKIT_INDEX_WORKERS``, else the CPUs this process may run on (at most 4)."""
    forced = os.environ.get(ENV_WORKERS, "")
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


def build(root: Path, path: Path, migrate: Migrate, busy: float) -> int:
    """Make the missing index file ``path`` of ``root`` (see the contract); sessions ingested (0 when
    another process made it meanwhile)."""
    from .index import _scan, _unlink

    count = 0
    with _flock(path.with_name(path.name + ".lock"), busy):
        if path.exists():
            return 0
        _unlink(path)  # a -wal or -shm left without its database would be replayed into the new one
        tmp = path.with_name(f"{path.name}.{os.getpid()}.build")
        try:
            sessions = [(sid, events, st.st_size) for sid, events, st in _scan(root)]
            count = _build(root, tmp, sessions, migrate)
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            except OSError:  # a filesystem without hard links: a rename, unless one appeared meanwhile
                if not path.exists():
                    os.replace(tmp, path)
        finally:
            for name in tmp.parent.glob(tmp.name + "*"):
                with contextlib.suppress(OSError):
                    os.unlink(name)
    return count


def _build(root: Path, tmp: Path, sessions: list[tuple[str, Path, int]], migrate: Migrate) -> int:
    """Fill ``tmp`` with ``sessions``, sharing them with worker processes when there are many bytes."""
    from .ingest import TABLES

    shares = _shares(sessions, workers() if sum(s[2] for s in sessions) > PARALLEL_BYTES else 1)
    started = []
    for number, share in enumerate(shares[1:], start=1):
        part = tmp.with_name(f"{tmp.name}.{number}")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_PARENT, os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen([PYTHON, "-m", "logkit.store.fill", str(root), str(part), *share],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append((proc, part, share))
    conn = _open(tmp, migrate)
    try:
        later = _drop_indexes(conn)
        count = fill(conn, root, shares[0] if shares else [])
        for proc, part, share in started:
            if proc.wait() == 0:
                conn.execute("ATTACH DATABASE ? AS part", (str(part),))
                conn.execute("BEGIN")
                for table in TABLES:
                    conn.execute(f"INSERT INTO main.{table} SELECT * FROM part.{table}")
                conn.execute("COMMIT")
                conn.execute("DETACH DATABASE part")
                count += len(share)
            else:  # the caller does its share (correct, slower)
                count += fill(conn, root, share)
        for sql in later:
            conn.execute(sql)
        conn.execute("PRAGMA journal_mode=WAL")  # kept in the file: every later connection uses WAL
    finally:
        conn.close()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    return count


def _shares(sessions: list[tuple[str, Path, int]], count: int) -> list[list[str]]:
    """The sessions (in id order) cut into ``count`` runs of about equal bytes. Runs, not a deal: the
    caller fills the first and appends the others' rows after it, so the file's rows stay in session
    order and a reader of every row reads it front to back."""
    total = sum(s[2] for s in sessions) or 1
    shares: list[list[str]] = [[] for _ in range(max(1, count))]
    done = 0
    for sid, _events, size in sorted(sessions):
        shares[min(count - 1, (2 * done + size) * count // (2 * total))].append(sid)  # where its middle falls
        done += size
    return [share for share in shares if share]


def _open(tmp: Path, migrate: Migrate) -> sqlite3.Connection:
    """A new private index file: no journal, no syncing (nobody sees it until it is complete)."""
    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    migrate(conn)
    return conn


def _drop_indexes(conn: sqlite3.Connection) -> list[str]:
    """Drop the non-unique indexes (cheaper made once, after the rows); their CREATE statements."""
    later = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                         " AND sql NOT LIKE 'CREATE UNIQUE%'").fetchall()
    for name, _sql in later:
        conn.execute(f"DROP INDEX {name}")
    return [sql for _name, sql in later]


def fill(conn: sqlite3.Connection, root: Path, sessions: list[str]) -> int:
    """Ingest ``sessions`` of ``root`` into ``conn`` in one transaction; sessions ingested."""
    from .. import files
    from .ingest import Ingest

    conn.execute("BEGIN")
    ingest = Ingest(conn, root)
    count = sum(ingest.session(sid, files.events_path(root, sid)) for sid in sessions)
    conn.execute("COMMIT")
    return count


@contextlib.contextmanager
def _flock(path: Path, busy: float) -> Iterator[None]:
    """An exclusive lock on ``path`` (made if missing), waited for up to ``busy`` seconds; past that,
    or where it cannot be taken, the caller goes on without it (its work is then done twice, never
    wrongly)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        end = time.monotonic() + busy
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    break
                time.sleep(0.05)
            except OSError:
                break
        yield
    finally:
        os.close(fd)


def _main(argv: list[str]) -> int:
    """A worker: ``python -m logkit.store.fill ROOT PART SESSION...`` fills the new file PART."""
    from .index import Index

    root, part, *sessions = argv
    conn = _open(Path(part), Index._migrate)
    try:
        _drop_indexes(conn)
        fill(conn, Path(root), sessions)
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
