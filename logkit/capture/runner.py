"""``logkit run -- CMD ...``: one attempt, recorded from spawn to outcome.

Contract:

* Order: plan (:data:`PLANNERS`, imported lazily) -> confirm (``confirm(plan, environment)``: probes
  waited for up to :data:`CONFIRM_WAIT_S`, for a launch only) -> spawn -> ``attempt`` line (pid, pgid,
  recorder pid/host) -> stream -> ``environment`` line -> ``outcome`` line (fsynced, after the log).
  The pgid is on disk before any output is read: a logkit SIGKILLed later leaves an attempt the next
  command marks ``abandoned`` with the group's survivors.
* Output goes to logkit's stdout/stderr as it arrives, unchanged; the log gets complete lines, redacted.
* Signals are forwarded to the child's group, SIGKILL after ``grace`` (:mod:`.supervisor`); survivors
  of the group are recorded on the outcome (and, when logkit stopped the group, killed).
* A failure inside logkit never stops the child or its output: it is reported on stderr and in
  ``outcome.capture_truncated``.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import procs, statuses

from ..store import files
from ..errors import BadInput, NotFound
from . import environment as envmod
from ._slotted import Slotted
from .hooks import ExitInfo, Plan, WatchContext
from .journal import Journal
from .process import exit_status, spawn
from .recorder import Recorder
from .redact import Redactor
from .supervisor import StopState, Supervisor

__all__ = ["PLANNERS", "RunOptions", "RunResult", "run"]

#: (planner "module:function", regex over the joined argv that must match before it is imported); the
#: SGLang planner sees every command: what a command prints can make it a launch.
PLANNERS: list[tuple[str, str]] = [("logkit.capture.sglang:plan", r"")]

#: How long the end of an attempt waits for probes still running (one not done is recorded "still running")
PROBE_WAIT_S = 0.1
#: ...except the GPU probe: the architecture makes a failed launch count in the matrix (about a second)
GPU_PROBE_WAIT_S = 5.0
CONFIRM_WAIT_S = 2.0


class RunOptions(Slotted):
    """What the command line asked for."""

    __slots__ = ("sessions", "session", "tests", "role", "label", "grace", "hang_timeout", "smoke", "smoke_only",
                 "preflight", "extra")

    sessions: str | None
    session: str | None
    tests: list[str]
    role: str | None
    label: str | None
    grace: float
    hang_timeout: float | None
    smoke: list[str]
    smoke_only: bool
    preflight: bool
    extra: dict[str, Any]

    _defaults = {"sessions": None, "session": None, "tests": [], "role": None, "label": None, "grace": 30.0,
                 "hang_timeout": None, "smoke": [], "smoke_only": False, "preflight": True, "extra": {}}


class RunResult(Slotted):
    """What happened, for the CLI's summary."""

    __slots__ = ("exit_status", "session", "attempt", "outcome", "unrecorded")

    exit_status: int
    session: str | None
    attempt: dict[str, Any] | None
    outcome: dict[str, Any] | None
    unrecorded: str | None  # why the command ran unrecorded (said again in the closing summary)

    _defaults = {"session": None, "attempt": None, "outcome": None, "unrecorded": None}


def _find_plan(argv: list[str], env: dict[str, str], options: dict[str, Any], journal: Journal) -> Plan:
    joined = " ".join(argv)
    for spec, pattern in PLANNERS:
        if not re.search(pattern, joined):
            continue
        module, _, name = spec.partition(":")
        try:
            planner = getattr(importlib.import_module(module), name)
        except ImportError:
            continue  # that planner is not installed (yet)
        if "previous_launch" not in options and "sglang" in joined:
            # A dict (the stored line, its environment event merged in): no pydantic before the child starts.
            # Only an argv naming SGLang can be a launch by its argv (a launch its output reveals has no diff).
            options["previous_launch"] = journal.current().launch
        plan = planner(argv, env, options)
        if plan is not None:
            return plan
    return Plan(role="command")


def _dump_model(value: Any) -> Any:
    if isinstance(value, dict):  # planners may hand plain dicts (logkit.launch builds them without pydantic)
        return {k: v for k, v in value.items() if v is not None}
    return value.model_dump(mode="json", exclude_none=True) if value is not None else None


def _generic_status(info: ExitInfo) -> tuple[str, str]:
    status, label = statuses.from_exit(info.exit_code, info.signal, stopped_by_logkit=info.stopped_by_logkit,
                                       reason=info.stop_reason)
    if info.stopped_by_logkit and info.escalated:
        label += "; SIGKILLed after the grace period"
    return status, label


def _check_tests(journal: Journal, tests: list[str]) -> None:
    """Refuse ``--tests H9`` when the session has no H9 (a typo would record a wrong link)."""
    known = list(journal.current().hyps)
    for hyp in tests:
        if "/" not in hyp and hyp not in known:
            raise NotFound(f"--tests {hyp}: session {journal.id} has no hypothesis {hyp}",
                           fix=("known: " + ", ".join(known[-12:]) if known else "add one first: logkit hypothesis add TEXT"))


def run(argv: list[str], opts: RunOptions, *, confirm: Callable[[Plan, Any], bool] | None = None,
        use_pty: bool | None = None) -> RunResult:
    """Run and record one command; returns the child's exit status (128+N for a signal)."""
    if not argv:
        raise BadInput("nothing to run", fix="logkit run -- python -m sglang.launch_server ...")
    journal = Journal.open(opts.sessions, opts.session)
    if opts.tests:
        _check_tests(journal, opts.tests)
    env = dict(os.environ)
    cwd = os.getcwd()
    redactor = Redactor.for_run(env, argv)
    probes = envmod.Probes(argv, cwd, env, redactor)
    base_env = envmod.quick(env, redactor)
    options: dict[str, Any] = {"hang_timeout": opts.hang_timeout, "smoke": list(opts.smoke), "grace": opts.grace,
                               "smoke_only": opts.smoke_only, "preflight": opts.preflight,
                               "session_dir": str(journal.dir), **opts.extra}
    plan = _find_plan(argv, env, options, journal)
    for note in plan.notes:
        print(f"logkit: {note}", file=sys.stderr)
    if plan.refuse:
        raise BadInput(f"not launched: {plan.refuse}", fix="fix the command, or pass --no-preflight to launch anyway")
    if confirm is not None:
        snapshot = None
        if plan.role == "launch":
            # A launch is worth up to CONFIRM_WAIT_S for the GPU probe (the refuted check is per arch);
            # other commands get None and pay nothing. A dict: no pydantic before the child starts.
            snapshot = probes.result(base_env, wait=CONFIRM_WAIT_S)
        if not confirm(plan, snapshot):
            print("logkit: not launched", file=sys.stderr)
            return RunResult(exit_status=1, session=journal.id)
    run_argv = plan.argv or argv
    if use_pty is None:
        use_pty = os.isatty(1)
    started_wall, started = files.utc(), time.monotonic()
    try:
        child = spawn(run_argv, cwd=cwd, env=env, use_pty=use_pty)
    except OSError as exc:
        # as a shell would: 127 for a command that is not there, 126 for one that cannot run
        code = 127 if exc.errno == errno.ENOENT else 126
        print(f"logkit: error: cannot run {run_argv[0]!r}: {exc.strerror} (exit {code}; nothing was recorded)\n"
              "  fix: check the command name and PATH", file=sys.stderr)
        return RunResult(exit_status=code, session=journal.id)
    attempt = files.event("attempt", journal.id, argv=redactor.argv(run_argv), cwd=cwd, role=opts.role or plan.role,
                          started=started_wall, tests=list(opts.tests), environment=base_env, pid=child.pid,
                          pgid=child.pgid, recorder_pid=os.getpid(), recorder_host=procs.hostname(),
                          launch=_dump_model(plan.launch), bench=_dump_model(plan.bench), label=opts.label)
    problems: list[str] = []
    log_fd: int | None = None
    try:
        attempt = journal.append_attempt(redactor.scrub(attempt))
        journal.logs_dir.mkdir(exist_ok=True)
        # the journal made this file, empty, for this attempt alone: appended to, never truncated
        log_fd = os.open(journal.dir / attempt["log"]["path"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except Exception as exc:
        problems.append(f"could not record the attempt: {exc}")
        print(f"logkit: warning: {problems[-1]}; the command runs unrecorded", file=sys.stderr)
        attempt.setdefault("short_id", None)
    with contextlib.suppress(Exception):  # the index only speeds up the next run
        journal.refresh_index(launch=plan.role == "launch")  # the child runs: off its critical path
    recording = _Recording(journal, child, attempt, plan, opts, options, redactor, probes, base_env, problems, started)
    try:
        return recording.supervise(log_fd)
    finally:
        journal.close()


class _Recording(Slotted):
    """One attempt from spawn to outcome: supervise the child, then write what happened."""

    __slots__ = ("journal", "child", "attempt", "plan", "opts", "options", "redactor", "probes", "base_env",
                 "problems", "started", "env_written")

    _defaults = {"env_written": False}

    @property
    def recorded(self) -> bool:
        return self.attempt.get("short_id") is not None

    def emit(self, event: Any) -> None:
        try:
            self.journal.append(self.redactor.scrub(event.model_dump(mode="json", exclude_none=True)))
        except Exception as exc:
            self.problems.append(f"event write failed: {exc}")

    def _tick(self, _now: float) -> None:
        if self.recorded and not self.env_written and self.probes.done():
            _write_environment(self.journal, self.attempt, self.probes, self.base_env, self.problems)
            self.env_written = True  # once, written or not (a failure is one of the problems)

    def supervise(self, log_fd: int | None) -> RunResult:
        """Stream until the child ends, then record the outcome; the child's exit status."""
        plan, opts, child = self.plan, self.opts, self.child
        rec = Recorder(log_fd, self.redactor, None)
        sup = Supervisor(child, rec, opts.grace, on_tick=self._tick,
                         hang_timeout=opts.hang_timeout if plan.watcher is None or plan.role == "command" else None)
        with sup:  # signals are caught from here on: a Ctrl-C now is forwarded, never a traceback
            watcher = plan.watcher if self.recorded else None
            if watcher is not None:
                try:
                    watcher.started(WatchContext(attempt=self.attempt, emit=self.emit,
                                                 request_stop=sup.stopper.request, options=self.options))
                    rec.watcher = watcher
                except Exception as exc:
                    self.problems.append(f"watcher failed to start: {type(exc).__name__}: {exc}")
            returncode = sup.pump()
        return self._finish(rec, sup.stopper.state, returncode)

    def _finish(self, rec: Recorder, stop: StopState, returncode: int) -> RunResult:
        journal, attempt, redactor, child, problems = self.journal, self.attempt, self.redactor, self.child, self.problems
        rec.flush_stale(time.monotonic(), everything=True)
        duration = time.monotonic() - self.started
        status_code, code, sig = exit_status(returncode)
        survivors = [{"pid": p, "cmdline": redactor.text(procs.cmdline(p) or "")[:500]}
                     for p in procs.group_members(child.pgid)]
        if survivors:
            print(f"logkit: warning: {len(survivors)} process(es) of the command's group still running: "
                  + ", ".join(str(s["pid"]) for s in survivors) + f" (kill -9 -{child.pgid})", file=sys.stderr)
        if not self.recorded:
            return RunResult(exit_status=status_code, session=journal.id,
                             unrecorded="; ".join(problems) or "the attempt could not be recorded")
        rec.close_log(sync=True)
        info = ExitInfo(exit_code=code, signal=sig, stopped_by_logkit=stop.stopped and stop.reason is not None,
                        lines=rec.lines, stop_reason=stop.reason, escalated=stop.escalated)
        status, label = _generic_status(info)
        if stop.hang:
            status = "hang"
        verdict = None
        if rec.watcher is not None:
            try:
                verdict = rec.watcher.finished(info)
            except Exception as exc:
                problems.append(f"watcher failed: {type(exc).__name__}: {exc}")
        if not self.env_written:
            self.probes.join("gpus", GPU_PROBE_WAIT_S)
            _write_environment(journal, attempt, self.probes, self.base_env, problems, wait=PROBE_WAIT_S)
        problems.extend(rec.problems)
        outcome = files.event("outcome", journal.id, attempt=attempt["short_id"],
                              status=(verdict and verdict.status) or status, label=(verdict and verdict.label) or label,
                              signature=verdict and verdict.signature, ended=files.utc(), duration_s=round(duration, 3),
                              exit_code=code, signal=sig,
                              ready_at=verdict.ready_at.isoformat() if verdict and verdict.ready_at else None,
                              evidence=[_dump_model(e) for e in verdict.evidence] if verdict else [],
                              tail=rec.tail_lines(),
                              timeline=[_dump_model(m) for m in verdict.timeline] if verdict else [],
                              log={"path": attempt["log"]["path"], "size": rec.size, "sha256": rec.sha.hexdigest()},
                              survivors=survivors, capture_truncated="; ".join(problems) or None)
        outcome = redactor.scrub(outcome)
        try:
            outcome = journal.append_outcome(outcome)
        except Exception as exc:
            print(f"logkit: error: could not write the outcome of {attempt['short_id']}: {exc}", file=sys.stderr)
        return RunResult(exit_status=status_code, session=journal.id, attempt=attempt, outcome=outcome)


def _write_environment(journal: Journal, attempt: dict[str, Any], probes: envmod.Probes, base: dict[str, Any],
                       problems: list[str], wait: float = 0.0) -> None:
    try:
        env = probes.result(base, wait=wait)
        journal.append(files.event("environment", journal.id, attempt=attempt["short_id"], environment=env))
    except Exception as exc:
        problems.append(f"environment event failed: {exc}")
