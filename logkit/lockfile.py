"""The one write discipline for ``events.jsonl``, shared by the store and the pydantic-free journal.

:func:`appending` opens the file ``O_APPEND``, takes an exclusive ``flock`` and makes sure the file
ends in a newline before anyone appends (a writer killed mid-line leaves a torn line that must not
swallow the next one). Each line is then written with one ``write``; closing releases the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from .errors import StoreError

__all__ = ["appending"]


@contextlib.contextmanager
def appending(path: Path, *, fix: str) -> Iterator[int]:
    """Hold ``path``'s write lock; yields its ``O_APPEND`` descriptor. ``fix`` goes into the error."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot open {path} for writing: {exc.strerror}", fix=fix) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    os.write(fd, b"\n")  # end a torn line so it cannot eat ours
        yield fd
    finally:
        os.close(fd)  # closing releases the flock
