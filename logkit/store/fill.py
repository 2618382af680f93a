"""Building a missing index file from nothing, aside (see :mod:`logkit.store.index`).

Contract:

* :func:`build` makes the index file ``path`` when it is missing: every session is ingested into a
  private ``<path>.<pid>.build`` that nobody else can see (no journal, no syncing but one at the
  end, the non-unique indexes made after the rows), which is hard-linked into place only when
  complete. A crash leaves no half index; a file another process linked first wins and is never
  replaced under its readers. Builders serialise on ``<path>.lock`` (a waiter then finds the file
  made and builds nothing), waiting up to :data:`~logkit.store.index.BUSY_SECONDS`.
* One process: worker processes bought nothing measurable here (bench/RESULTS.md).
* The file is made with :data:`~logkit.store.schema.PAGE_SIZE` pages, and cyclic GC is paused
  while sessions are ingested (each session's objects go when it is done; none is in a cycle).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["build"]

Migrate = Callable[[sqlite3.Connection], None]


def build(root: Path, path: Path, migrate: Migrate, busy: float) -> int:
    """Make the missing index file ``path`` of ``root``; sessions ingested (0 when another process made it)."""
    from .index import _scan, _unlink

    count = 0
    with _flock(path.with_name(path.name + ".lock"), busy):
        if path.exists():
            return 0
        _unlink(path)  # a -wal or -shm left without its database would be replayed into the new one
        tmp = path.with_name(f"{path.name}.{os.getpid()}.build")
        try:
            sessions = [(sid, events) for sid, events, _st in _scan(root)]
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


def _build(root: Path, tmp: Path, sessions: list[tuple[str, Path]], migrate: Migrate) -> int:
    """Fill ``tmp`` with ``sessions``: the rows first, then the non-unique indexes, then WAL."""
    from .ingest import Ingest
    from .snapshot import gc_paused

    conn = _open(tmp, migrate)
    try:
        # the non-unique indexes are cheaper made once, after the rows
        later = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                             " AND sql NOT LIKE 'CREATE UNIQUE%'").fetchall()
        for name, _sql in later:
            conn.execute(f"DROP INDEX {name}")
        conn.execute("BEGIN")
        ingest = Ingest(conn, root)
        with gc_paused():  # each session's objects go when it is done, none in a cycle: 5% of the CPU saved
            count = sum(ingest.session(sid, events) for sid, events in sessions)
        conn.execute("COMMIT")
        for _name, sql in later:
            conn.execute(sql)
        conn.execute("PRAGMA journal_mode=WAL")  # kept in the file: every later connection uses WAL
    finally:
        conn.close()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    return count


def _open(tmp: Path, migrate: Migrate) -> sqlite3.Connection:
    """A new private index file: no journal, no syncing (nobody sees it until it is complete)."""
    from .schema import PAGE_SIZE

    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    migrate(conn)
    return conn


@contextlib.contextmanager
def _flock(path: Path, busy: float) -> Iterator[None]:
    """Lock ``path``, waiting up to ``busy`` seconds; past that, or failing, go on without (work done twice)."""
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
