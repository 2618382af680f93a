"""The supervisor's stop state on real process groups: forwarded signals, the grace period, the
third signal, --hang-timeout and a child that ends on its own (logkit/capture/supervisor.py)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from logkit.capture.process import spawn
from logkit.capture.recorder import Recorder
from logkit.capture.redact import Redactor
from logkit.capture.supervisor import StopPhase, StopState, Stopper, Supervisor

# Ignores SIGINT and SIGTERM: only SIGKILL ends it.
STUBBORN = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True); time.sleep(60)\n")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _child(code: str):
    child = spawn([sys.executable, "-c", code], cwd="/", env={"PATH": "/usr/bin:/bin"}, use_pty=False)
    out = next(fd for fd, dest in child.outputs.items() if dest == 1)
    import os

    assert os.read(out, 100).startswith(b"up")  # its handlers are installed
    return child


def _ended(child, timeout: float = 5.0) -> int | None:
    try:
        return child.proc.wait(timeout=timeout)
    except Exception:
        return None


@pytest.fixture
def stubborn():
    child = _child(STUBBORN)
    yield child
    child.proc.kill()
    child.proc.wait()


def test_sigint_is_forwarded_then_sigkill_after_the_grace(stubborn) -> None:
    clock = Clock()
    stopper = Stopper(stubborn.pgid, grace=30.0, clock=clock)
    assert stopper.state == StopState() and not stopper.state.stopped
    stopper.received(signal.SIGINT)
    state = stopper.state
    assert (state.phase, state.reason, state.deadline, state.signal, state.hang) == (
        StopPhase.STOPPING, "SIGINT received", 1030.0, signal.SIGINT, False)
    assert _ended(stubborn, 0.5) is None  # it ignores SIGINT
    clock.now = 1029.0
    stopper.check_deadline()
    assert stopper.state.phase is StopPhase.STOPPING and _ended(stubborn, 0.3) is None
    clock.now = 1030.5
    stopper.check_deadline()
    assert stopper.state.phase is StopPhase.KILLED and stopper.state.escalated
    assert stopper.state.reason == "SIGINT received"  # the first reason stays
    assert _ended(stubborn) == -signal.SIGKILL


def test_a_second_signal_keeps_the_first_reason_and_the_third_kills_at_once(stubborn) -> None:
    clock = Clock()
    stopper = Stopper(stubborn.pgid, grace=30.0, clock=clock)
    stopper.received(signal.SIGINT)
    clock.now += 5
    stopper.received(signal.SIGTERM)
    state = stopper.state
    assert (state.phase, state.reason, state.deadline, state.signal) == (
        StopPhase.STOPPING, "SIGINT received", 1030.0, signal.SIGTERM)
    assert _ended(stubborn, 0.3) is None
    stopper.received(signal.SIGHUP)
    assert stopper.state.phase is StopPhase.KILLED and stopper.state.signal == signal.SIGHUP
    assert _ended(stubborn) == -signal.SIGKILL


def test_a_watcher_thread_may_request_the_stop() -> None:
    child = _child("import time; print('up', flush=True); time.sleep(60)")
    stopper = Stopper(child.pgid, grace=5.0)
    t = threading.Thread(target=stopper.request, args=("server hung: /ready silent for 3s",))
    t.start()
    t.join()
    assert stopper.state.phase is StopPhase.STOPPING and stopper.state.reason.startswith("server hung")
    assert _ended(child) == -signal.SIGTERM
    stopper.reap()  # the group is gone: nothing to wait for, nothing to kill
    assert stopper.state.phase is StopPhase.STOPPING


def test_the_state_is_frozen() -> None:
    state = StopState()
    with pytest.raises(AttributeError):
        state.reason = "x"  # type: ignore[misc]
    assert state.replace(reason="x").reason == "x" and state.reason is None


def _supervise(code: str, tmp_path: Path, **kw) -> tuple[Supervisor, int, bytes]:
    import os

    child = spawn([sys.executable, "-c", code], cwd="/", env={"PATH": "/usr/bin:/bin"}, use_pty=False)
    log = tmp_path / "log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    rec = Recorder(fd, Redactor.for_run({}, []), None)
    sup = Supervisor(child, rec, grace=kw.pop("grace", 5.0), **kw)
    rec.echo_ok = {1: False, 2: False}  # keep the test's output clean
    try:
        with sup:
            returncode = sup.pump()
    finally:
        os.close(fd)
    return sup, returncode, log.read_bytes()


def test_a_child_that_ends_on_its_own_is_never_stopped(tmp_path: Path) -> None:
    sup, rc, log = _supervise("print('hello'); raise SystemExit(3)", tmp_path, hang_timeout=30.0)
    assert rc == 3 and log == b"hello\n"
    assert sup.stopper.state == StopState()  # RUNNING, no reason, no deadline


@pytest.mark.slow
def test_hang_timeout_stops_a_silent_child(tmp_path: Path) -> None:
    started = time.monotonic()
    sup, rc, log = _supervise("print('one line', flush=True); import time; time.sleep(60)", tmp_path,
                              hang_timeout=1.0)
    state = sup.stopper.state
    assert rc == -signal.SIGTERM and log == b"one line\n"
    assert state.phase is StopPhase.STOPPING and state.hang and "--hang-timeout" in state.reason
    assert time.monotonic() - started < 20


@pytest.mark.slow
def test_a_stubborn_silent_child_is_sigkilled_after_the_grace(tmp_path: Path) -> None:
    sup, rc, _log = _supervise(STUBBORN, tmp_path, hang_timeout=1.0, grace=1.0)
    assert rc == -signal.SIGKILL and sup.stopper.state.phase is StopPhase.KILLED and sup.stopper.state.hang


def test_a_fast_stream_keeps_its_read_buffers_and_records_every_byte(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The first big read asks the allocator to keep 1 MiB buffers (once; a fresh mmap per read
    faulted in every page), and the log is still every byte, in order, with its digest."""
    import hashlib

    from logkit.capture import supervisor

    calls: list[int] = []
    real = supervisor._keep_buffers
    monkeypatch.setattr(supervisor, "_keep_buffers", lambda: (calls.append(1), real())[-1])
    block = b"".join(b"line %06d of a fast stream\n" % i for i in range(40000))
    script = ('import os\nblock = b"".join(b"line %06d of a fast stream\\n" % i for i in range(40000))\n'
              "for _ in range(40): os.write(1, block)\n")
    child = spawn([sys.executable, "-c", script], cwd=str(tmp_path), env=dict(os.environ), use_pty=False)
    log = tmp_path / "x.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    rec = Recorder(fd, Redactor(), None)
    rec.echo_ok = {1: False, 2: False}  # keep the test's output quiet
    with Supervisor(child, rec, 5.0) as sup:
        assert sup.pump() == 0
    os.close(fd)
    data = log.read_bytes()
    assert data == block * 40 and rec.lines == 40 * 40000
    assert rec.sha.hexdigest() == hashlib.sha256(data).hexdigest()
    assert calls == [1]


def test_a_slow_trickle_never_tunes_the_allocator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from logkit.capture import supervisor

    calls: list[int] = []
    monkeypatch.setattr(supervisor, "_keep_buffers", lambda: calls.append(1))
    child = spawn([sys.executable, "-c", "print('hello')"], cwd=str(tmp_path), env=dict(os.environ), use_pty=False)
    rec = Recorder(None, Redactor(), None)
    rec.echo_ok = {1: False, 2: False}
    with Supervisor(child, rec, 5.0) as sup:
        assert sup.pump() == 0
    assert calls == [] and rec.lines == 1


def test_newlines_are_counted_the_same_by_numpy_and_by_bytes_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Big chunks are counted by numpy (4x faster than ``bytes.count``), small ones and a machine
    without numpy by ``bytes.count``: the same number on random bytes, newlines at both ends."""
    import random

    from logkit.capture import recorder

    rng = random.Random(11)
    chunks = [b"", b"\n", b"x" * recorder.NUMPY_COUNT_MIN, b"\n" + b"a\n" * (recorder.NUMPY_COUNT_MIN // 2) + b"\n"]
    chunks += [rng.randbytes(recorder.NUMPY_COUNT_MIN + rng.randrange(4096)) for _ in range(5)]
    chunks += [rng.randbytes(rng.randrange(recorder.NUMPY_COUNT_MIN)) for _ in range(5)]
    for chunk in chunks:
        assert recorder.newlines(chunk) == chunk.count(b"\n")
    import numpy

    assert recorder._numpy is numpy  # the big chunks took the numpy path
    monkeypatch.setattr(recorder, "_numpy", False)  # as where numpy does not import
    for chunk in chunks:
        assert recorder.newlines(chunk) == chunk.count(b"\n")


def test_a_failed_log_write_drops_the_log_keeps_counting_and_closes_it_at_the_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log descriptor that cannot be written (here: opened read-only) is dropped, with a warning
    and a problem for the outcome; the lines are still counted for the tail, and ``close_log`` (what
    the runner calls at the end) closes the dropped descriptor too instead of leaking it."""
    log = tmp_path / "x.log"
    log.write_bytes(b"")
    fd = os.open(log, os.O_RDONLY)
    rec = Recorder(fd, Redactor(), None)
    rec.consume(1, b"one\ntwo\n")
    assert rec.log_fd is None and rec.lines == 2
    assert rec.problems and rec.problems[0].startswith("log write failed after 0 bytes")
    assert "the log stopped at 0 bytes" in capsys.readouterr().err
    rec.consume(1, b"three\n")
    assert rec.lines == 3 and len(rec.problems) == 1
    os.fstat(fd)  # still open: its owner closes it
    rec.close_log(sync=True)
    with pytest.raises(OSError):
        os.fstat(fd)  # closed: nothing else opened a descriptor meanwhile
    rec.close_log()  # twice is harmless
