"""Small, dependency-free facts about live processes, read from ``/proc`` (Linux).

Used by the store (is the logkit that recorded an attempt still alive?) and by the capture
layer (which processes of a group survived?).
"""

from __future__ import annotations

import os

__all__ = ["ENV_HOST", "PID_MAX", "alive", "cmdline", "group_members", "hostname", "listen_inodes", "listening_pids", "start_ticks"]

#: Linux's largest possible pid (PID_MAX_LIMIT, 2**22); a larger number names no process.
PID_MAX = 1 << 22


#: Overrides :func:`hostname` (tests play two machines on one).
ENV_HOST = "LOGKIT_HOST"


def hostname() -> str:
    """This machine's name, as recorded on attempts and in session ids (``$LOGKIT_HOST`` if set)."""
    return os.environ.get(ENV_HOST) or os.uname().nodename


def _stat(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the ``)`` that closes comm (state ppid pgrp ...), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    if not isinstance(pid, int) or not 0 < pid <= PID_MAX:
        return False  # a hand-edited "recorder_pid": 2**62 names no process (and overflows os.kill)
    fields = _stat(pid)
    if fields is None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return fields[0:1] != [b"Z"]


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
        fields = _stat(name) if name.isdigit() else None
        if fields is not None and len(fields) >= 3 and fields[0] != b"Z" and int(fields[2]) == pgid:
            members.append(int(name))
    return sorted(members)


def listen_inodes(port: int) -> set[int]:
    """The socket inodes listening on TCP ``port`` (any address, IPv4 or IPv6), from ``/proc/net``."""
    found: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii", errors="replace") as fh:
                next(fh, None)
                for row in fh:
                    fields = row.split()
                    # local_address is HEXIP:HEXPORT; state 0A is LISTEN; field 9 the inode
                    if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        found.add(int(fields[9]))
        except (OSError, ValueError):
            continue
    return found


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, ``/proc/<pid>/stat``), or None."""
    try:
        return int((_stat(pid) or [])[19])  # field 22 of the line; 20th after the ")" that closes comm
    except (ValueError, IndexError):
        return None


def listening_pids(port: int) -> list[int] | None:
    """The visible processes listening on TCP ``port``; None when nothing visible listens there."""
    inodes = listen_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    owners: list[int] = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink(f"/proc/{pid}/fd/{name}") in wanted:
                    owners.append(pid)
                    break
            except OSError:
                continue
    return owners or None
