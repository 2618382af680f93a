"""Small, dependency-free facts about live processes, read from ``/proc`` (Linux).

Used by the store (is the logkit that recorded an attempt still alive?) and by the capture
layer (which processes of a group survived?).
"""

from __future__ import annotations

import os

__all__ = ["PID_MAX", "alive", "cmdline", "group_members", "hostname"]

#: Linux's largest possible pid (PID_MAX_LIMIT, 2**22); a larger number names no process.
PID_MAX = 1 << 22


def hostname() -> str:
    """This machine's name, as recorded on attempts."""
    return os.uname().nodename


def alive(pid: int) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    if not isinstance(pid, int) or not 0 < pid <= PID_MAX:
        return False  # a hand-edited "recorder_pid": 2**62 names no process (and overflows os.kill)
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state = stat.rsplit(b")", 1)[-1].split()[0:1]
    return state != [b"Z"]


def cmdline(pid: int) -> str | None:
    """The command line of a process, or None when it cannot be read."""
    if not isinstance(pid, int) or not 0 < pid <= PID_MAX:
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() or None


def group_members(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is ``pgid``."""
    members: list[int] = []
    if not isinstance(pgid, int) or not 0 < pgid <= PID_MAX:
        return members
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # fields after the ")" that closes comm: state ppid pgrp ...
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) < 3 or fields[0] == b"Z":
            continue
        if int(fields[2]) == pgid:
            members.append(int(name))
    return sorted(members)
