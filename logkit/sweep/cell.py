"""One sweep cell, run as ordinary ``logkit run`` attempts: launch, smoke, bench points, stop.

Contract:

* The launch is ``python -m logkit run --tests H<n> --hang-timeout T --smoke P... --yes -- ARGV`` in
  a process group of its own (a Ctrl-C reaches the sweep, which decides), stdin closed, output
  appended to the sweep's driver log; the kernel sends it SIGTERM if the sweep dies
  (``PR_SET_PDEATHSIG``), so a SIGKILLed sweep leaves no server behind.
* Its attempt is found by ``recorder_pid`` in ``events.jsonl``, read incrementally (:class:`Tail`).
  Ready = HTTP ``/ready`` (``/health`` on old versions) answered by the launch's own server; then
  its ``smoke`` events (and with ``accuracy`` its ``accuracy`` metric) are awaited. Not ready
  within ``ready_timeout``: ``hang``; a degenerate smoke reply or an accuracy below the threshold
  (``inaccurate``) stops the cell before the bench.
* Each bench point is another ``logkit run`` (``--repeat N [--warmup]``: the point's metrics are
  those of all its measured runs). Then SIGTERM to the server's ``logkit run`` (which stops the
  whole group, SIGKILL after ``grace``); members still alive afterwards are reported and killed.
* :func:`wait_port` waits, never fights, for a port still held by an earlier server.
* ``stop`` (set on Ctrl-C) ends the cell early: the server is stopped cleanly and
  :class:`Interrupted` is raised, so no result is written and a resume reruns it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .. import procs, statuses
from ..store import files
from .grid import Cell

__all__ = ["CellContext", "CellRun", "Interrupted", "Tail", "foreign_server", "run_cell", "wait_port"]

POLL_S = 0.1
SMOKE_WAIT_S = 180.0


class Interrupted(Exception):
    """The sweep was asked to stop (Ctrl-C) while a cell ran; the cell has no result."""


class Tail:
    """New complete lines of a session's ``events.jsonl``, as dicts (:func:`logkit.store.files.decode`: no validation)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.events: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        """Events appended since the last call."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        new = [e for e in map(files.decode, data[: end + 1].splitlines()) if e is not None]  # damaged lines skipped
        self.events.extend(new)
        return new

    def find(self, kind: str, **match: Any) -> list[dict[str, Any]]:
        """Events seen so far of ``kind`` whose fields equal ``match``."""
        return [e for e in self.events if e.get("kind") == kind and all(e.get(k) == v for k, v in match.items())]

    def last(self, kind: str, **match: Any) -> dict[str, Any] | None:
        """The latest of :meth:`find`'s events, None without one."""
        return next(reversed(self.find(kind, **match)), None)


@dataclass
class CellContext:
    """What every cell of one sweep shares."""

    sessions: str
    session: str
    sweep: str
    smoke: list[str]
    ready_timeout: float
    grace: float
    port_wait: float
    log: IO[bytes]
    stop: threading.Event
    phase: Callable[[str], None] = lambda _p: None  # hears the cell's phase ("launching", "bench c=16", ...)
    env: dict[str, str] | None = None
    # the accuracy gate's threshold (None: none); runs per bench point; an unmeasured first run
    accuracy: float | None = None
    repeat: int = 1
    warmup: bool = False


@dataclass
class CellRun:
    """What happened to one cell that launched."""

    status: str  # works | failed
    outcome: str | None
    reason: str | None
    launch: str | None
    # (labels, bench attempt id, its outcome dict, its metric events)
    points: list[tuple[dict[str, Any], str | None, dict[str, Any] | None, list[dict[str, Any]]]] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def _deathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(Exception):  # without it a SIGKILLed sweep leaves the run to its own devices
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _logkit(ctx: CellContext, args: list[str]) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "logkit", "--sessions", ctx.sessions, "run", "--session", ctx.session, "--yes", *args]
    ctx.log.write(("$ " + " ".join(cmd) + "\n").encode())
    ctx.log.flush()
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=ctx.log, stderr=ctx.log, env=ctx.env,
                            process_group=0, preexec_fn=_deathsig)


def port_free(host: str | None, port: int) -> bool:
    """Nothing accepts connections on host:port and it can be bound."""
    h = "127.0.0.1" if host in (None, "", "0.0.0.0", "::") else host
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.settimeout(0.5)
        with contextlib.suppress(OSError):
            if s.connect_ex((h, port)) == 0:
                return False
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((h, port))
        except OSError:
            return False
    return True


def wait_port(host: str | None, port: int, timeout: float, stop: threading.Event,
              say: Callable[[str], None] = lambda _t: None) -> bool:
    """Wait until host:port is free (True), or ``timeout`` passes (False)."""
    end, told = time.monotonic() + timeout, False
    while not port_free(host, port):
        if not told:
            say(f"port {port} still in use; waiting up to {timeout:g}s")
            told = True
        if stop.is_set():
            raise Interrupted()
        if time.monotonic() > end:
            return False
        time.sleep(0.25)
    return True


def foreign_server(attempt: dict[str, Any] | None, port: int) -> str | None:
    """Why the server on ``port`` is not this launch's (None: it is, or it cannot be told): none other is credited."""
    # foreign: a process outside the launch's group listens there and started before the launch (a
    # container's port proxy, started by the launch, is not foreign)
    pgid = (attempt or {}).get("pgid")
    began = procs.start_ticks(pgid) if pgid else None
    if began is None:
        return None
    members = set(procs.group_members(pgid))
    owners = procs.listening_pids(port)
    if owners is None or members & set(owners):
        return None
    older = [p for p in owners if (procs.start_ticks(p) or began) < began]
    if not older:
        return None
    return f"port {port} is served by pid {older[0]}, which is not this launch's (process group {pgid})"


def _attempt_of(tail: Tail, proc: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    tail.poll()
    return tail.last("attempt", recorder_pid=proc.pid)


def _finish(ctx: CellContext, proc: subprocess.Popen[bytes], tail: Tail, attempt: dict[str, Any] | None,
            *, stop_it: bool) -> tuple[dict[str, Any] | None, list[int]]:
    """Stop (if asked) and reap one ``logkit run``; its outcome and the survivors of its group."""
    if stop_it and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=ctx.grace + 15)
    except subprocess.TimeoutExpired:  # the recorder itself is stuck: end it, and the server with it
        proc.kill()
        proc.wait()
    survivors: list[int] = []
    if pgid := (attempt or {}).get("pgid"):
        end = time.monotonic() + 2.0
        while procs.group_members(pgid) and time.monotonic() < end:
            time.sleep(0.05)
        survivors = procs.group_members(pgid)
        if survivors:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
    tail.poll()
    short = (attempt or {}).get("short_id")
    return (tail.last("outcome", attempt=short) if short else None), survivors


def _interrupted(ctx: CellContext, proc: subprocess.Popen[bytes], tail: Tail, attempt: dict[str, Any] | None) -> Interrupted:
    """Stop the ``logkit run`` (the sweep was asked to stop); the exception to raise."""
    _finish(ctx, proc, tail, attempt, stop_it=True)
    return Interrupted()


def _await(ctx: CellContext, proc: subprocess.Popen[bytes], tail: Tail, attempt: dict[str, Any] | None,
           seconds: float, done: Callable[[], bool]) -> None:
    """Read the events until ``done()``, the launch ends or ``seconds`` pass; Interrupted on Ctrl-C."""
    end = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < end and not ctx.stop.is_set():
        tail.poll()
        if done():
            break
        time.sleep(POLL_S)
    if ctx.stop.is_set():
        raise _interrupted(ctx, proc, tail, attempt)


def _wait_attempt(ctx: CellContext, proc: subprocess.Popen[bytes], tail: Tail) -> dict[str, Any] | None:
    """The attempt line of ``proc`` (None if it ended without recording one)."""
    while (attempt := _attempt_of(tail, proc)) is None:
        if proc.poll() is not None:
            return _attempt_of(tail, proc)
        if ctx.stop.is_set():
            return None
        time.sleep(POLL_S / 2)
    return attempt


def run_bench(ctx: CellContext, argv: list[str], label: str, tail: Tail, hypothesis: str) -> tuple[
        str | None, dict[str, Any] | None, list[dict[str, Any]]]:
    """One bench point as a ``logkit run`` testing the hypothesis: its last attempt, outcome, every measured run's metrics."""
    again = (["--repeat", str(ctx.repeat)] if ctx.repeat != 1 else []) + (["--warmup"] if ctx.warmup else [])
    proc = _logkit(ctx, ["--tests", hypothesis, "--label", label, *again, "--", *argv])
    attempt = _wait_attempt(ctx, proc, tail)
    while proc.poll() is None:
        if ctx.stop.is_set():
            raise _interrupted(ctx, proc, tail, _attempt_of(tail, proc) or attempt)
        time.sleep(POLL_S)
    attempt = _attempt_of(tail, proc) or attempt  # the last run's
    outcome, _ = _finish(ctx, proc, tail, attempt, stop_it=False)
    short = (attempt or {}).get("short_id")
    runs = [a["short_id"] for a in tail.find("attempt", recorder_pid=proc.pid)]
    return short, outcome, [m for r in runs for m in tail.find("metric", attempt=r)]


def run_cell(ctx: CellContext, cell: Cell, hypothesis: str, points: list[tuple[dict[str, Any], list[str]]],
             label: str) -> CellRun:
    """Launch ``cell``, smoke it, run its bench points, stop it."""
    from ..capture.sglang.watcher import http_ready, probe_url

    clock: dict[str, float] = {}
    t0 = time.monotonic()
    ctx.phase("waiting for the port")
    if not wait_port(cell.host, cell.port or 30000, ctx.port_wait, ctx.stop, ctx.phase):
        from ..errors import BadInput

        raise BadInput(f"port {cell.port} is still in use after {ctx.port_wait:g}s (another server?)",
                       fix=f"stop what listens there (ss -ltnp 'sport = :{cell.port}'), then rerun the same sweep to resume")
    clock["port"] = time.monotonic() - t0
    tail = Tail(Path(ctx.sessions) / ctx.session / "events.jsonl")
    tail.poll()
    args = ["--tests", hypothesis, "--label", label, "--hang-timeout", f"{ctx.ready_timeout:g}",
            "--grace", f"{ctx.grace:g}", *(w for prompt in ctx.smoke for w in ("--smoke", prompt))]
    if ctx.accuracy is not None:
        args += ["--accuracy", f"{ctx.accuracy:g}"]
    ctx.phase("launching")
    t_launch = time.monotonic()
    proc = _logkit(ctx, [*args, "--", *cell.argv])
    attempt = _wait_attempt(ctx, proc, tail)
    short = (attempt or {}).get("short_id")
    base = probe_url(cell.host, cell.port)
    port = cell.port or 30000
    # From spawn (the attempt line), not from the parse before it: the runner's own hang check
    # (no output for ready_timeout) normally fires first; this catches a chatty launch never ready.
    deadline = time.monotonic() + ctx.ready_timeout + 5.0
    ready = False

    def failed(status: str | None, reason: str | None, *, stop_it: bool = True, fallback: str = "other_crash") -> CellRun:
        """Stop (or reap) the launch: the cell failed with ``status``/``reason``, else its outcome's."""
        found, survivors = _finish(ctx, proc, tail, attempt, stop_it=stop_it)
        clock["wrapped"] = time.monotonic() - t_launch
        outcome = found or {}
        return CellRun("failed", status or outcome.get("status") or fallback, reason or outcome.get("label"), short,
                       survivors=survivors, seconds=clock)

    while not ready:
        if ctx.stop.is_set():
            raise _interrupted(ctx, proc, tail, attempt)
        if proc.poll() is not None:
            break
        if time.monotonic() > deadline:
            return failed("hang", f"not ready in {ctx.ready_timeout:g}s")
        # ready only when the answer comes from this launch's own server (not another sweep's)
        ready = base is not None and http_ready(base, 1.0) and foreign_server(attempt, port) is None
        if not ready:
            time.sleep(POLL_S)
    clock["ready"] = time.monotonic() - t_launch
    if ready and ctx.smoke:
        ctx.phase("smoke")
        _await(ctx, proc, tail, attempt, SMOKE_WAIT_S * len(ctx.smoke),
               lambda: len(tail.find("smoke", attempt=short)) >= len(ctx.smoke))
        bad = [s for s in tail.find("smoke", attempt=short) if not s.get("ok")]
        if bad or len(tail.find("smoke", attempt=short)) < len(ctx.smoke):
            ctx.phase("stopping")
            why = bad[0].get("reason") if bad else "smoke prompts unanswered"
            return failed(None, f"smoke: {why}", fallback="garbage")
    if ready and ctx.accuracy is not None:
        ctx.phase("accuracy")
        _await(ctx, proc, tail, attempt, SMOKE_WAIT_S, lambda: bool(tail.find("metric", attempt=short, name="accuracy")))
        score = tail.last("metric", attempt=short, name="accuracy")
        if score is None or score["value"] < ctx.accuracy:
            ctx.phase("stopping")
            return failed(None, None if score else "accuracy questions unanswered", fallback="inaccurate")
    if not ready:  # the launch ended before it was ready: its outcome says why
        return failed(None, None, stop_it=False)
    run = CellRun("works", "ready", None, short, seconds=clock)
    t_bench = time.monotonic()
    for labels, argv in points:
        if proc.poll() is not None:
            break
        tag = " ".join(f"{k}={v}" for k, v in labels.items())
        ctx.phase(f"bench {tag}".strip())
        try:
            b_attempt, b_outcome, metrics = run_bench(ctx, argv, f"{label} bench {tag}".strip(), tail, hypothesis)
        except Interrupted:
            raise _interrupted(ctx, proc, tail, attempt) from None
        foreign = foreign_server(attempt, port) if proc.poll() is None else None
        if foreign is not None:  # measured someone else's server (or none): never credited to this launch
            # other_crash refutes nothing (statuses.toml): the backend is neither credited nor blamed
            run.status, run.outcome, run.reason = "failed", "other_crash", f"benchmark not credited: {foreign}"
            break
        run.points.append((labels, b_attempt, b_outcome, metrics))
    clock["bench"] = time.monotonic() - t_bench
    ctx.phase("stopping")
    t_stop = time.monotonic()
    alive = proc.poll() is None
    outcome, survivors = _finish(ctx, proc, tail, attempt, stop_it=True)
    clock["stop"] = time.monotonic() - t_stop
    clock["wrapped"] = time.monotonic() - t_launch
    run.survivors = survivors
    status = (outcome or {}).get("status")
    if run.status == "failed":
        return run
    if not alive or statuses.is_failure(status):
        run.status, run.outcome, run.reason = "failed", status or "other_crash", (outcome or {}).get("label")
    return run
