"""The one write discipline for ``events.jsonl``, shared by the typed store and the pydantic-free journal.

:func:`appending` opens the file ``O_APPEND``, takes an exclusive ``flock`` and makes sure the file
ends in a newline before anyone appends (a writer killed mid-line leaves a torn line that must not
swallow the next one). Each line is then written with one ``write`` (:func:`logkit.store.files.write_line`
checks that it was written whole); closing releases the lock.

A file replaced by a rename while a writer waited for its lock (:func:`logkit.store.files.rewrite`) is
noticed after the lock is granted: the writer holds a lock on the old inode, so it lets go and
locks the file now at ``path``. A line is never appended to a file that was renamed away.

:func:`lock` is every exclusive lock of the store (this file's, the store's, a running sweep's). Where
the filesystem has no working ``flock`` (NFS without its lock daemon: ``ENOLCK``; Lustre mounted
without ``-o flock``: ``ENOSYS``; some FUSE and CIFS mounts) it takes a lock file instead:
``<path>.lock``, made ``O_EXCL`` (atomic on NFS too) and holding ``pid host token``; released by
deleting it. One left by a killed holder is taken over when its pid is gone on this host, or, for the
short locks (an append, an id), when it is older than :data:`STALE_SECONDS`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from .. import procs
from ..errors import StoreError

__all__ = ["NO_LOCKS", "STALE_SECONDS", "appending", "lock"]

#: ``flock``'s errors on a filesystem without working locks (not a lock held by another process)
NO_LOCKS = frozenset({errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL})
#: A lock file of a short lock (an append, an id) older than this was left by a killed holder.
STALE_SECONDS = 30.0


def _released() -> None:
    """Nothing to undo: closing the descriptor releases a ``flock``."""


def lock(fd: int, path: Path, *, wait: bool = True) -> Callable[[], None]:
    """Lock ``fd`` (the file at ``path``) exclusively; returns what releases it (call it before closing ``fd``).

    ``wait=False``: :class:`BlockingIOError` while another process holds it. Where ``flock`` does not
    work (:data:`NO_LOCKS`), the lock file ``<path>.lock`` (see the module's contract)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        return _released
    except BlockingIOError:
        raise
    except OSError as exc:
        if exc.errno not in NO_LOCKS:
            raise
    return _lock_file(Path(f"{path}.lock"), wait=wait)


def _lock_file(held: Path, *, wait: bool) -> Callable[[], None]:
    mine = f"{os.getpid()} {procs.hostname()} {uuid.uuid4().hex}\n".encode()
    give_up = time.monotonic() + 2 * STALE_SECONDS
    while True:
        try:
            fd = os.open(held, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if _stale(held, STALE_SECONDS if wait else None):
                with contextlib.suppress(OSError):
                    held.unlink()
                continue
            if not wait:
                raise BlockingIOError(errno.EWOULDBLOCK, "held by another process", str(held)) from None
            if time.monotonic() > give_up:  # not a lock file we can judge (a folder, unreadable): say so
                raise OSError(errno.ENOLCK, f"{held} stays in the way (this filesystem has no flock); "
                              "delete it if no logkit command is running") from None
            time.sleep(0.01)
            continue
        try:
            os.write(fd, mine)
        finally:
            os.close(fd)

        def release() -> None:
            with contextlib.suppress(OSError):
                if held.read_bytes() == mine:
                    held.unlink()

        return release


def _stale(held: Path, max_age: float | None) -> bool:
    """Whether the lock file ``held`` was left by a holder that is gone."""
    try:
        text = held.read_bytes().decode("utf-8", "replace").split()
        age = time.time() - held.stat().st_mtime
    except FileNotFoundError:
        return False  # let go meanwhile: try again
    except OSError:
        return False
    if len(text) >= 2 and text[1] == procs.hostname() and text[0].isdigit():
        return not procs.alive(int(text[0]))
    if not text:
        return age > 1.0  # its holder died between making it and writing to it
    return max_age is not None and age > max_age


def _open_locked(path: Path, fix: str) -> tuple[int, Callable[[], None]]:
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a symbolic link (through git, by hand): never written through
                raise StoreError(f"{path} is a symbolic link; logkit writes only its own files, not where a link leads",
                                 fix=f"replace the link with the file itself (or remove it: rm {path})") from exc
            raise StoreError(f"cannot open {path} for writing: {exc.strerror}", fix=fix) from exc
        try:
            release = lock(fd, path)
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"cannot lock {path}: {exc.strerror}", fix=fix) from exc
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd, release
        release()
        os.close(fd)  # replaced while we waited: lock the new file


@contextlib.contextmanager
def appending(path: Path, *, fix: str) -> Iterator[int]:
    """Hold ``path``'s write lock; yields its ``O_APPEND`` descriptor. ``fix`` goes into the error."""
    fd, release = _open_locked(path, fix)
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
        release()
        os.close(fd)  # closing releases the flock
