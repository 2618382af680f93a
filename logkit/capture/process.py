"""Spawning the wrapped command: pty or pipes, its own process group, signals, exit status.

Contract:

* :func:`spawn` starts the child in a new session and process group (pgid == pid): a signal to the
  group reaches every descendant that did not leave it (SGLang's schedulers and detokenizer stay).
* ``use_pty``: stdout and stderr are a fresh pseudo-terminal (output post-processing off, logkit's
  window size); otherwise two pipes (enlarged to 1 MiB). stdin is always inherited.
* :func:`exit_status` maps a wait status to the shell's convention (128+N for signal N).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import subprocess
import termios
from collections.abc import Mapping

from ._slotted import Slotted

__all__ = ["Child", "copy_winsize", "exit_status", "kill_group", "spawn"]

PIPE_SIZE = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class Child(Slotted):
    """A running child: its pid, process group and the output fds to read (fd -> logkit fd)."""

    __slots__ = ("proc", "pid", "pgid", "outputs", "pty", "pidfd")

    proc: subprocess.Popen[bytes]
    pid: int
    pgid: int
    outputs: dict[int, int]
    pty: bool
    pidfd: int | None

    _defaults = {"outputs": {}, "pty": False, "pidfd": None}


def copy_winsize(master: int) -> None:
    """Give the child's pty the size of logkit's own terminal (the kernel then sends it SIGWINCH)."""
    for fd in (1, 2, 0):
        try:
            size = fcntl.ioctl(fd, termios.TIOCGWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
        except OSError:
            continue
        fcntl.ioctl(master, termios.TIOCSWINSZ, size)
        return


def spawn(argv: list[str], *, cwd: str, env: Mapping[str, str], use_pty: bool) -> Child:
    """Start ``argv`` in a new session; raises FileNotFoundError/PermissionError like Popen."""
    if use_pty:
        master, slave = os.openpty()
        with contextlib.suppress(OSError, termios.error):
            attrs = termios.tcgetattr(slave)
            attrs[1] &= ~termios.OPOST  # no \n -> \r\n: the log gets the child's bytes
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
            copy_winsize(master)
        outputs, ends = {master: 1}, (slave, slave)
    else:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        for fd in (out_r, err_r):
            with contextlib.suppress(OSError):  # a lower pipe-max-size: the default 64 KiB works, just more reads
                fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_SIZE)
        outputs, ends = {out_r: 1, err_r: 2}, (out_w, err_w)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=ends[0], stderr=ends[1], start_new_session=True)
    except BaseException:
        for fd in outputs:
            os.close(fd)
        raise
    finally:
        for fd in set(ends):
            os.close(fd)
    pidfd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(proc.pid)
    return Child(proc=proc, pid=proc.pid, pgid=proc.pid, outputs=outputs, pty=use_pty, pidfd=pidfd)


def kill_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a process group; False when the group is gone."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def exit_status(returncode: int) -> tuple[int, int | None, int | None]:
    """(logkit's exit status, the child's exit code, the signal that killed it) from Popen.returncode."""
    if returncode < 0:
        sig = -returncode
        return 128 + sig, None, sig
    return returncode, returncode, None
