"""SGLang awareness for ``logkit run``: the planner the runner loads as ``logkit.capture.sglang:plan``.

Contract: :func:`plan` recognises an SGLang launch or benchmark (:mod:`.detect`). A launch's flags are
parsed by SGLang's own parser (:mod:`logkit.launch`: the cached spec at once, the full parse beside the
launch); one SGLang would reject is refused unless ``--no-preflight``; it is diffed against
``options["previous_launch"]``. A benchmark without ``--output-file`` gets one in the session (a FIFO
whose records are redacted: :mod:`.fifo`) and is linked to the launch it measures. Any other command
gets a latent launch watcher: a launch once its output shows an SGLang server's own lines.
"""

from __future__ import annotations

import os
import re
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from ...store import files
from ..hooks import Plan, WatchResult

__all__ = ["plan", "python_for"]

_LOCAL = {"0.0.0.0", "127.0.0.1", "localhost", "::", "[::]", "::1", "", None}


def python_for(target: Any, argv: list[str], env: dict[str, str]) -> str | None:
    """The interpreter an SGLang command found in ``argv`` (a :class:`~.detect.Target`) runs under."""
    if target.python:
        import shutil

        word = target.python[0]
        return word if "/" in word else shutil.which(word, path=env.get("PATH"))
    from ..environment import interpreter_of

    return interpreter_of(argv, env)


def _server_for(host: str | None, port: int | None, session_dir: str | None) -> str | None:
    """The newest launch attempt of the session listening on host:port."""
    if port is None or not session_dir:
        return None
    # every attempt (a command's output can make it a launch) and the launch_config events that say so
    found = files.dicts(Path(session_dir) / files.EVENTS_FILE, keep=lambda line: b'"attempt"' in line
                        and b'"kind":' in line and (b'"launch_config"' in line or b'"kind":"attempt"' in line
                                                    or b'"kind": "attempt"' in line))
    attempts = {ev.get("short_id"): ev for ev in found if ev.get("kind") == "attempt"}
    for ev in found:  # a command whose output showed an SGLang server became a launch (its printed flags)
        if ev.get("kind") == "launch_config" and ev.get("role") == "launch" and ev.get("attempt") in attempts:
            a = attempts[ev["attempt"]]
            attempts[ev["attempt"]] = {**a, "role": "launch", "launch": ev.get("launch") or a.get("launch")}
    for ev in reversed([ev for ev in attempts.values() if ev.get("role") == "launch"]):
        launch = ev.get("launch")  # not a dict: a damaged line, not a launch to link to
        if isinstance(launch, dict) and launch.get("port") == port and (
                launch.get("host") in _LOCAL and host in _LOCAL or launch.get("host") == host):
            return ev.get("short_id")
    return None


def plan(argv: list[str], env: dict[str, str], options: dict[str, Any]) -> Plan | None:
    """The plan for an SGLang launch or benchmark, or None."""
    from .detect import detect

    target = detect(argv)
    if target is None:
        # Not an SGLang command by its argv: what it prints decides (a docker run, a script, make serve).
        return Plan(role="command", watcher=_Latent())
    return (_plan_bench if target.kind == "bench" else _plan_launch)(argv, env, target, options)


def _plan_launch(argv: list[str], env: dict[str, str], target: Any, options: dict[str, Any]) -> Plan:
    from ...launch import config as launch_config
    from ...launch.flags import diff, diff_note

    if target.container:
        # The server's SGLang is the image's, not this host's: no preflight; the flags as given
        # (named by the SGLang here), then the flags the server prints (parser="printed").
        cfg = launch_config.given_only(target.args)
        if cfg.get("port") is None:
            cfg["port"] = 30000  # SGLang's default (a published port may map it elsewhere)
        return Plan(role="launch", launch=cfg, watcher=_Deferred(cfg, None, printed=True),
                    notes=["launch in a container: flags not checked against its SGLang; the flags it prints are recorded"])
    python = python_for(target, argv, env)
    parsed = launch_config.for_run(target.args, python)
    cfg = parsed.config
    notes = list(parsed.notes)
    if parsed.error and options.get("preflight", True):
        return Plan(role="launch", launch=cfg, refuse=f"SGLang would reject these flags: {parsed.error}", notes=notes)
    if parsed.error:
        notes.append(f"preflight skipped: {parsed.error}")
    if cfg.get("port") is None:
        cfg["port"] = 30000  # SGLang's default
    previous = options.get("previous_launch")
    if previous is not None:
        from ..environment import allowed_env
        from ..redact import Redactor

        # The new side as it will be recorded (allow-listed, redacted), so both sides compare alike.
        merged = {**env, **target.env}
        redactor = Redactor.for_run(merged, argv)
        recorded = allowed_env(merged, redactor)
        changes = diff(cfg, previous, recorded, parsed.packages)
        if changes is not None:
            cfg["diff"] = changes
            notes.append(diff_note(changes, redactor))
    if python is not None and not parsed.error:
        launch_config.start_background(parsed, target.args, python)
    return Plan(role="launch", launch=cfg, watcher=_Deferred(cfg, parsed.background), notes=notes)


class _Deferred:
    """The launch's watcher, built once the child has started (its imports cost hundreds of ms)."""

    def __init__(self, launch: dict[str, Any] | None, background: Any, printed: bool = False) -> None:
        self._args = (launch, background)
        self._printed = printed

    @cached_property
    def _real(self) -> Any:
        from .watcher import LaunchWatcher

        return LaunchWatcher(*self._args, printed=self._printed)

    def __getattr__(self, name: str) -> Any:  # started, feed, tick, finished: the real watcher's
        return getattr(self._real, name)


class _Latent:
    """A command's watcher until its output shows an SGLang server (or ``--role launch``): light imports only."""

    def __init__(self) -> None:
        self.ctx: Any = None
        self.clf: Any = None
        self.real: Any = None

    def started(self, ctx: Any) -> None:
        self.ctx = ctx
        if ctx.record.get("role") == "launch":
            self._hand_over()

    def _hand_over(self) -> None:
        from .outcomes import Classifier
        from .watcher import LaunchWatcher

        self.real = LaunchWatcher(None, None, latent=True, classifier=self.clf or Classifier())
        self.real.started(self.ctx)

    def feed(self, chunk: bytes, first_line: int) -> None:
        if self.real is not None:
            self.real.feed(chunk, first_line)
            return
        if self.clf is None:
            from .outcomes import Classifier

            self.clf = Classifier()
        self.clf.feed(chunk, first_line)
        if self.clf.server_line is not None:
            self._hand_over()
            self.real.feed(chunk, first_line, classified=True)

    def tick(self, now: float) -> None:
        if self.real is not None:
            self.real.tick(now)

    def finished(self, exit_info: Any) -> Any:
        if self.real is not None:
            return self.real.finished(exit_info)
        if self.clf is None:
            return WatchResult()  # it printed nothing: the exit alone says how it ended
        d = self.clf.decide(exit_code=exit_info.exit_code, signal=exit_info.signal,
                            stopped_by_logkit=exit_info.stopped_by_logkit, launch=False)
        if d.signature is None and not d.ready:
            return WatchResult()  # nothing in its output explains it: the runner's exit answer (the same table)
        return WatchResult(status=d.status, label=d.label, signature=d.signature, evidence=d.evidence)


def _plan_bench(argv: list[str], env: dict[str, str], target: Any, options: dict[str, Any]) -> Plan:
    from .bench import parse_bench
    from .watcher import BenchWatcher

    bench = parse_bench(target.args)
    new_argv, output, owned, sink, fallback = None, bench.output_file, False, None, None
    notes: list[str] = []
    if output is None and target.args_at is not None and options.get("session_dir"):
        logs = Path(options["session_dir"]) / "logs"
        output = str(logs / f"bench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl")
        sink, fallback = _bench_sink(Path(output), argv, env)
        if fallback:
            notes.append(fallback)
        handed = str(sink.fifo) if sink is not None else output
        new_argv = argv[: target.args_at] + ["--output-file", handed] + argv[target.args_at :]
        bench = bench.model_copy(update={"output_file": output})
        owned = True
    host, port = bench.host, bench.port
    if bench.base_url:
        m = re.match(r"^\w+://([^/:]+)(?::(\d+))?", bench.base_url)
        if m:
            host, port = m.group(1), int(m.group(2)) if m.group(2) else port
    server = _server_for(host, port, options.get("session_dir"))
    if server:
        notes.insert(0, f"benchmark of {server} ({host}:{port})")
    watcher = BenchWatcher(bench, output, server, owned, sink=sink, fallback=fallback,
                           measure=options.get("measure", True), repeat=options.get("repeat"))
    return Plan(role="bench", argv=new_argv, bench=bench, watcher=watcher, notes=notes)


def _bench_sink(output: Path, argv: list[str], env: dict[str, str]) -> tuple[Any, str | None]:
    """A started FIFO sink for ``output`` (:mod:`.fifo`), or None and why it fell back to a plain file."""
    from ..redact import Redactor
    from .bench import redact_record
    from .fifo import FifoSink

    redactor = Redactor.for_run(env, argv)
    try:
        return FifoSink.create(output, lambda line: redact_record(line, redactor)), None
    except OSError as exc:
        return None, (f"bench output: no FIFO possible ({exc.strerror or exc}); the client writes {output} and logkit "
                      "scrubs it when the client exits, so its server_info secrets are on disk until then")
