"""The one write discipline for ``events.jsonl``, shared by the typed store and the pydantic-free journal.

:func:`appending` opens the file ``O_APPEND``, takes an exclusive ``flock`` and makes sure the file
ends in a newline before anyone appends (a writer killed mid-line leaves a torn line that must not
swallow the next one). Each line is then written with one ``write`` (:func:`logkit.store.files.write_line`
checks that it was written whole); closing releases the lock.

A file replaced by a rename while a writer waited for its lock (:func:`logkit.store.files.rewrite`) is
noticed after the lock is granted: the writer holds a lock on the old inode, so it lets go and
locks the file now at ``path``. A line is never appended to a file that was renamed away.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError

__all__ = ["appending"]


def _open_locked(path: Path, fix: str) -> int:
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open {path} for writing: {exc.strerror}", fix=fix) from exc
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # replaced while we waited: lock the new file


@contextlib.contextmanager
def appending(path: Path, *, fix: str) -> Iterator[int]:
    """Hold ``path``'s write lock; yields its ``O_APPEND`` descriptor. ``fix`` goes into the error."""
    fd = _open_locked(path, fix)
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                ends_torn = fh.read(1) != b"\n"
            if ends_torn:
                try:
                    os.write(fd, b"\n")  # end a torn line so it cannot eat ours
                except OSError as exc:
                    raise StoreError(f"cannot write to {path}: {exc.strerror}", fix=fix) from exc
        yield fd
    finally:
        os.close(fd)  # closing releases the flock
