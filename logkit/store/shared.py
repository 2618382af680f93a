"""What a sessions root shares with others: the team's git repository, other processes, other hosts.

* :data:`REPO_FILES` / :func:`ensure_repo_files`: ``sessions/.gitignore`` (what belongs to one clone:
  the current-session pointer, locks, the index) and ``sessions/.gitattributes`` (the decision
  ledger merges by union), written when a session is created (docs/team-repository.md).
* :func:`host_tag`: the suffix that keeps the session ids two hosts make for one title apart.
* :func:`running_lock`: ``<root>/.locks/<name>.lock``, held by a running process (a sweep of one
  spec); a second one is refused naming the first one's pid; the lock dies with its holder.
* :func:`read_toml`: a user's TOML file (a sweep spec, a decision draft), with ``file:line`` errors.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import procs
from ..errors import BadInput, StoreError
from .files import check_regular
from .lockfile import lock

__all__ = ["LOCKS_DIR", "REPO_FILES", "ensure_repo_files", "host_tag", "read_toml", "running_lock"]

#: Locks held while a process runs (``logkit sweep``'s): ``<root>/.locks/``.
LOCKS_DIR = ".locks"
#: The files logkit keeps beside the sessions so that a team's repository of them merges cleanly
#: (:func:`ensure_repo_files`; docs/team-repository.md): what is per clone stays out of git, and
#: the decision ledger merges with git's union driver.
REPO_FILES = {
    ".gitignore": (
        "# written by logkit: what belongs to one clone, never committed (docs/team-repository.md)\n"
        "/.current\n/.current.*\n/.store.lock\n/.locks/\n/.cache/\n*.lock\n*.tmp\n*/logs/.*.reserve\n"
    ),
    ".gitattributes": "DECISIONS.tsv merge=union\n",
}


def host_tag(host: str | None = None) -> str:
    """Four hex digits of this host's name (:func:`logkit.procs.hostname`): the suffix of new session ids."""
    return hashlib.sha256((host or procs.hostname()).encode("utf-8", "surrogateescape")).hexdigest()[:4]


def ensure_repo_files(root_dir: Path) -> None:
    """Write each of :data:`REPO_FILES` that ``root_dir`` lacks (a file the team changed is kept)."""
    for name, text in REPO_FILES.items():
        path = root_dir / name
        if path.exists():
            continue
        try:
            with open(path, "x", encoding="utf-8") as fh:
                fh.write(text)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc.strerror}",
                             fix=f"check that {root_dir} is writable and has space") from exc


@contextlib.contextmanager
def running_lock(root_dir: Path, name: str, what: str) -> Iterator[None]:
    """Hold ``<root>/.locks/<name>.lock`` while running ``what``; a second holder is refused, naming the pid."""
    path = root_dir / LOCKS_DIR / f"{name}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot create the lock {path}: {exc.strerror}",
                         fix=f"check that {root_dir} is a writable directory") from exc
    release = None
    try:
        try:
            release = lock(fd, path, wait=False)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
            pid = holder[0] if holder else "?"
            raise BadInput(f"{what} is already running (pid {pid}, lock {path})",
                           fix=f"wait for it to end (or stop it: kill {pid}); run it again afterwards to resume") from None
        except OSError as exc:
            raise StoreError(f"cannot lock {path}: {exc.strerror}", fix=f"check that {root_dir} is a writable directory") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {procs.hostname()}\n".encode(), 0)
        yield
    finally:
        if release is not None:
            release()
        os.close(fd)


def read_toml(path: Path, *, fix: str) -> tuple[str, dict[str, Any]]:
    """A user's TOML file's text and data, or :class:`BadInput` naming the file (and line) and ``fix``."""
    import tomllib

    try:
        check_regular(path)
        raw = path.read_bytes()
    except StoreError as exc:
        raise BadInput(exc.message, fix=fix) from None
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}", fix=fix) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise BadInput(f"{path}:{line}: not valid UTF-8 (byte {raw[exc.start]:#04x})",
                       fix="save the file as UTF-8 (iconv -t UTF-8)") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: not valid TOML: {exc}", fix=f"fix the line named (https://toml.io); {fix}") from None
