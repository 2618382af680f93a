"""Under a terminal, the child gets a pty: colours survive into the raw log."""

from __future__ import annotations

import os
import pty
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from logkit.store import Store

CHILD = "import sys; print('tty', sys.stdout.isatty(), sys.stderr.isatty()); print('\\x1b[31mred\\x1b[0m', flush=True)"


def _read(master: int, until: Callable[[bytes], bool] = lambda _seen: False, *, timeout: float = 20) -> bytes:
    """What logkit writes to its terminal, until EOF, ``until(seen)`` or the timeout."""
    seen = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end and not until(seen):
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    return seen


def test_pty_run_keeps_ansi_colours(sessions: Path, logkit) -> None:
    assert logkit("session", "start", "pty").returncode == 0
    pid, master = pty.fork()
    if pid == 0:  # the child: logkit with a terminal as stdout
        os.execv(sys.executable, [sys.executable, "-m", "logkit", "run", "--", sys.executable, "-c", CHILD])
    seen = _read(master)
    _, status = os.waitpid(pid, 0)
    os.close(master)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert b"\x1b[31mred" in seen
    (sid,) = Store(sessions).session_ids()
    log = (sessions / sid / "logs" / "A1.log").read_bytes()
    assert log == b"tty True True\n\x1b[31mred\x1b[0m\n"  # the child's own bytes: no \r\n


RESIZE_CHILD = (
    "import os, signal, sys, time\n"
    "signal.signal(signal.SIGWINCH, lambda *a: print('size', *os.get_terminal_size(), flush=True))\n"
    "print('ready', *os.get_terminal_size(), flush=True)\n"
    "end = time.monotonic() + 10\n"
    "while time.monotonic() < end: time.sleep(0.05)\n"
)


def test_a_resized_terminal_resizes_the_child(sessions: Path, logkit) -> None:
    import fcntl
    import struct
    import termios

    assert logkit("session", "start", "resize").returncode == 0
    pid, master = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-m", "logkit", "run", "--", sys.executable, "-c", RESIZE_CHILD])
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    # the whole line: resizing while it is still on its way made the two lines interleave
    seen = _read(master, lambda seen: re.search(rb"ready \d+ \d+\r?\n", seen) is not None)
    # the user drags the window: logkit's terminal gets a new size (and logkit a SIGWINCH)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
    seen += _read(master, lambda more: b"size 132 50" in seen + more)
    os.kill(pid, 2)
    os.waitpid(pid, 0)
    os.close(master)
    assert b"ready 100 30" in seen, seen
    assert b"size 132 50" in seen, seen
