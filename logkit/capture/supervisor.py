"""Supervising the wrapped command: pump its output, forward signals, stop its group, reap it.

Contract:

* :class:`Stopper` is the one place that signals the child's process group; its :class:`StopState` (a
  frozen record, replaced on each transition) goes ``RUNNING`` -> ``STOPPING`` (a stop signal sent with
  a reason; SIGKILL at ``deadline`` = then + ``grace``) -> ``KILLED`` (the third forwarded signal, the
  grace over, or stragglers). A second request resends its signal but keeps the first reason and
  deadline. Requests may come from any thread.
* :class:`Supervisor` runs on the main thread: it polls the child's outputs, a signal wake-up pipe and
  the child's pidfd; echoes and hands each read to the :class:`~logkit.capture.recorder.Recorder`;
  forwards SIGINT/SIGTERM/SIGHUP to the group (from :meth:`Supervisor.__enter__` on), passes
  :data:`PASSED` signals on and SIGWINCH to a pty; stops a silent command after ``hang_timeout``; and
  returns the child's returncode once it has ended and its outputs are drained (or :data:`DRAIN_S`
  later, when a descendant keeps them open). Leaving the ``with`` block stops the recorder, restores
  the signal handlers and closes every fd it was given.
"""

from __future__ import annotations

import contextlib
import enum
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from .. import procs
from ..statuses import signal_name
from .process import Child, copy_winsize, kill_group
from .recorder import Recorder

__all__ = ["BIG_READ", "DRAIN_S", "FORWARDED", "KILL_AT", "PASSED", "READ_SIZE", "StopPhase", "StopState", "Stopper", "Supervisor", "TICK_S"]

READ_SIZE = 1 << 20
#: A read this big means a fast stream: the allocator is told to keep such buffers (see _keep_buffers).
BIG_READ = 256 << 10
TICK_S = 0.5
DRAIN_S = 1.0
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Signals passed on to the group as they are, asking nothing to stop (a server's "dump your state",
#: "reopen your logs"): by default they would end logkit and leave the command without its reader.
PASSED = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT)
#: The forwarded signal that kills the group at once (the user insists).
KILL_AT = 3


def _keep_buffers() -> None:
    """Ask glibc to keep 1 MiB read buffers on the heap (no ``mmap`` and page faults per read); once."""
    with contextlib.suppress(Exception):  # not glibc (musl, macOS): the default allocator is fine
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 8 << 20)  # M_MMAP_THRESHOLD: allocations below 8 MiB come from the heap
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD: keep up to 64 MiB of freed heap


class StopPhase(enum.Enum):
    """Where logkit's stop of the child's group stands."""

    RUNNING = "running"
    STOPPING = "stopping"
    KILLED = "killed"


class StopState(NamedTuple):
    """A frozen snapshot of the stop (a transition makes a new one: :meth:`replace`)."""

    phase: StopPhase = StopPhase.RUNNING
    reason: str | None = None  # "SIGINT received", "no output for 5s (--hang-timeout)", ...
    deadline: float | None = None  # when the group gets SIGKILL (monotonic clock), once stopping
    signal: int | None = None  # the last signal logkit received and forwarded
    hang: bool = False  # the stop was --hang-timeout's

    def replace(self, **changes: Any) -> StopState:
        """A copy with ``changes``."""
        return self._replace(**changes)

    @property
    def stopped(self) -> bool:
        """Did logkit stop the child (any phase but RUNNING)?"""
        return self.phase is not StopPhase.RUNNING

    @property
    def escalated(self) -> bool:
        """Did the group get SIGKILL from logkit?"""
        return self.phase is StopPhase.KILLED


class Stopper:
    """The stop state of one process group, and the only code that signals the group."""

    def __init__(self, pgid: int, grace: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.pgid = pgid
        self.grace = grace
        self.clock = clock
        self.state = StopState()
        self._lock = threading.Lock()
        self._received = 0

    def request(self, reason: str, sig: int = signal.SIGTERM, *, hang: bool = False) -> None:
        """Ask the group to stop with ``sig``; the first request sets the reason and the deadline."""
        with self._lock:
            if self.state.phase is StopPhase.RUNNING:
                self.state = self.state.replace(phase=StopPhase.STOPPING, reason=reason,
                                                deadline=self.clock() + self.grace, hang=hang)
        kill_group(self.pgid, sig)

    def received(self, sig: int) -> None:
        """logkit got ``sig``: forward it; the :data:`KILL_AT`-th one kills the group at once."""
        self._received += 1
        with self._lock:
            self.state = self.state.replace(signal=sig)
        if self._received >= KILL_AT:
            self.kill()
        else:
            self.request(f"{signal_name(sig)} received", sig)

    def kill(self) -> None:
        """SIGKILL the group (stopping it first if nobody asked yet)."""
        with self._lock:
            self.state = self.state.replace(phase=StopPhase.KILLED)
        kill_group(self.pgid, signal.SIGKILL)

    def check_deadline(self) -> None:
        """SIGKILL the group once a stop's grace period is over."""
        state = self.state
        if state.phase is StopPhase.STOPPING and state.deadline is not None and self.clock() > state.deadline:
            self.kill()

    def reap(self, poll_s: float = 0.1, kill_wait_s: float = 2.0) -> None:
        """If logkit stopped the child: stragglers get the rest of the grace, then SIGKILL (and ``kill_wait_s``)."""
        state = self.state
        if not state.stopped:
            return
        while procs.group_members(self.pgid) and self.clock() < (state.deadline or 0):
            time.sleep(poll_s)
        if procs.group_members(self.pgid):
            self.kill()
            end = self.clock() + kill_wait_s
            while procs.group_members(self.pgid) and self.clock() < end:
                time.sleep(0.05)


class Supervisor:
    """Pumps one child's output into a recorder until it ends, forwarding signals to its group."""

    def __init__(self, child: Child, recorder: Recorder, grace: float, *, hang_timeout: float | None = None,
                 on_tick: Callable[[float], None] | None = None) -> None:
        self.child = child
        self.recorder = recorder
        self.stopper = Stopper(child.pgid, grace)
        self.hang_timeout = hang_timeout
        self.on_tick = on_tick
        self._signals: list[int] = []
        self._handled = 0
        self._old_handlers: dict[int, Any] = {}
        self._old_wakeup = -1
        self._wake_r = self._wake_w = -1

    def __enter__(self) -> Supervisor:
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._old_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        for sig in (*FORWARDED, *PASSED):
            self._old_handlers[sig] = signal.signal(sig, lambda s, _f: self._signals.append(s))
        if self.child.pty:  # a resized terminal resizes the child's pty: progress bars redraw to fit
            self._old_handlers[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, lambda _s, _f: self._resize())
        return self

    def __exit__(self, *exc: object) -> None:
        self.recorder.stop()
        signal.set_wakeup_fd(self._old_wakeup)
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        child = self.child
        for fd in (*child.outputs, self._wake_r, self._wake_w, *([child.pidfd] if child.pidfd is not None else [])):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _resize(self) -> None:
        # The pty is not the child's controlling terminal (it runs in a session of its own without
        # one), so the kernel sends no SIGWINCH on the resize: send it to the group ourselves.
        with contextlib.suppress(OSError, StopIteration):  # the pty or the group is gone: the child has ended
            copy_winsize(next(iter(self.child.outputs)))
            os.killpg(self.child.pgid, signal.SIGWINCH)

    def service(self) -> None:
        """Forward the signals received since the last call; SIGKILL when the grace is over."""
        while self._handled < len(self._signals):
            sig = self._signals[self._handled]
            self._handled += 1
            if sig in PASSED:
                kill_group(self.child.pgid, sig)
            else:
                self.stopper.received(sig)
        self.stopper.check_deadline()

    def pump(self) -> int:
        """Run until the child has ended and its output is drained; its Popen returncode."""
        child, rec = self.child, self.recorder
        poller = select.poll()
        open_fds = dict(child.outputs)
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        if child.pidfd is not None:
            poller.register(child.pidfd, select.POLLIN)
        returncode: int | None = None
        exited_at: float | None = None
        last_output = last_tick = time.monotonic()
        check_exit = child.pidfd is None
        tuned = False
        rec.start()
        while True:
            now = time.monotonic()
            if exited_at is not None and (not open_fds or now - exited_at > DRAIN_S):
                break  # done; or a descendant keeps the output open (it is a survivor)
            for fd, _ev in poller.poll(TICK_S * 1000):
                if fd in open_fds:
                    try:
                        data = os.read(fd, READ_SIZE)
                    except OSError:  # EIO: the pty's last writer is gone
                        data = b""
                    if not data:
                        poller.unregister(fd)
                        del open_fds[fd]
                        continue
                    last_output = time.monotonic()
                    if not tuned and len(data) >= BIG_READ:
                        tuned = True
                        _keep_buffers()
                    rec.echo(open_fds[fd], data)
                    rec.submit(fd, data, self.service, rec.scan(fd, data))
                elif fd == self._wake_r:
                    with contextlib.suppress(OSError):
                        os.read(self._wake_r, 512)
                elif fd == child.pidfd:
                    poller.unregister(fd)
                    check_exit = True
            self.service()
            if returncode is None and (check_exit or not open_fds):
                returncode = child.proc.poll()
                if returncode is not None:
                    exited_at = time.monotonic()
            now = time.monotonic()
            if now - last_tick >= TICK_S:
                last_tick = now
                rec.tick(now)
                if self.on_tick is not None:
                    self.on_tick(now)
                if (self.hang_timeout and not self.stopper.state.stopped
                        and now - last_output > self.hang_timeout):
                    self.stopper.request(f"no output for {self.hang_timeout:g}s (--hang-timeout)", hang=True)
        if returncode is None:
            returncode = child.proc.wait()
        self.stopper.reap()
        return returncode
