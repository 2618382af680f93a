"""``logkit run -- CMD ...``: record one command as an attempt of the current session."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from ._common import command

__all__ = ["register"]


def _seconds(text: str, *, positive: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        least = "more than 0" if positive else "0 or more"
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number of seconds, {least}")
    return value


def register(sub: Any) -> None:
    """Add the run command."""
    p = command(
        sub, "run", cmd_run, help="run a command and record it as an attempt",
        description="Run CMD (after --) with its output shown live and recorded, redacted, as an attempt "
        "of the current session. logkit's exit status is the command's (128+N for signal N).")
    p.add_argument("--session", metavar="ID", help="record into this session (default: the current one)")
    p.add_argument("--tests", action="append", default=[], metavar="H3", help="a hypothesis this attempt tests (repeatable)")
    p.add_argument("--role", choices=("launch", "bench", "smoke", "command"), help="override the detected role")
    p.add_argument("--label", help="a short label for the attempt")
    p.add_argument("--grace", type=_seconds, default=30.0, metavar="SECONDS",
                   help="seconds between forwarding SIGINT/SIGTERM/SIGHUP to the command's process group and "
                   "SIGKILLing it (default 30; SGLang drains requests for up to ~75 s on SIGTERM, raise it to "
                   "let it finish)")
    p.add_argument("--hang-timeout", type=lambda text: _seconds(text, positive=True), metavar="SECONDS",
                   help="stop the command when it looks hung (SGLang: not ready in time; other commands: no output for SECONDS)")
    p.add_argument("--smoke", action="append", default=[], metavar="PROMPT", help="a prompt to send once a server is ready (repeatable)")
    p.add_argument("--smoke-only", action="store_true", help="stop the server after the smoke prompts (and --accuracy)")
    p.add_argument("--no-preflight", dest="preflight", action="store_false", help="launch even if the pre-launch checks object")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask before launching a configuration already refuted")
    p.add_argument("--accuracy", nargs="?", const="", metavar="THRESHOLD",
                   help="a launch: once ready, ask logkit's accuracy set (exact-match questions, few-shot) and record the "
                   "score; below THRESHOLD (a share, default from logkit/data/accuracy.toml) the attempt is 'inaccurate'")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="a benchmark: run it N times against the same server, each recorded, and show each headline "
                   "figure as median with min-max (and a bootstrap interval of the median from 5 runs)")
    p.add_argument("--warmup", action="store_true",
                   help="a benchmark: one warm-up run first, recorded as an attempt but its figures not recorded")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the attempt and outcome as JSON at the end: to FILE, or to stderr without one "
                   "(stdout belongs to the command)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command to run")


class _SafeStderr:
    """logkit's stderr while it runs a command: a line that cannot be written goes to /dev/null, with the rest."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    # stderr a pipe whose reader is gone, a terminal that closed: that costs nothing, least of all the
    # command's exit status (a BrokenPipeError ended `logkit run` with status 0)
    def write(self, text: str) -> int:
        written = self._guarded(self._stream.write, text)
        return len(text) if written is None else written

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError):
                fd = os.open(os.devnull, os.O_WRONLY)
                os.dup2(fd, self._stream.fileno())  # the buffered rest, and Python's flush at exit, land there
                os.close(fd)
            return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def cmd_run(args: argparse.Namespace) -> int:
    if not isinstance(sys.stderr, _SafeStderr):
        sys.stderr = _SafeStderr(sys.stderr)  # type: ignore[assignment]
    from ..capture import runner

    argv = list(args.cmd)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if args.json and args.json != "-":
        _check_json_target(args.json)
    extra = {}
    if args.accuracy is not None:
        from ..capture.sglang import accuracy

        extra["accuracy"] = accuracy.threshold(args.accuracy) if args.accuracy else accuracy.default_threshold()
    opts = runner.RunOptions(
        sessions=args.sessions, session=args.session, tests=args.tests, role=args.role, label=args.label,
        grace=args.grace, hang_timeout=args.hang_timeout, smoke=args.smoke, smoke_only=args.smoke_only,
        preflight=args.preflight, extra=extra,
    )
    confirm = None
    if not args.yes:  # the pre-launch check against refuted configurations (logkit/reasoning/refuted.py)
        from ..reasoning.prelaunch import launch_confirmer

        confirm = launch_confirmer(args.sessions)
    root = args.sessions or os.environ.get("LOGKIT_SESSIONS") or "sessions"

    def report(result: Any) -> None:
        if result.unrecorded is not None:
            # said again at the end: the warning at the top has scrolled away by the end of a launch
            why = result.unrecorded.splitlines()[0].rstrip(".")  # its fix is the one below
            print(f"logkit: NOT RECORDED: {why}. The command ran (exit status {result.exit_status}) "
                  f"but nothing of it is in {root}\n  fix: make {root} writable (or pass --sessions DIR), then run it again",
                  file=sys.stderr)
        if result.outcome is not None:
            o = result.outcome
            log = os.path.relpath(os.path.join(root, str(result.session), o["log"]["path"]))  # openable from here
            print(f"logkit: {o['attempt']} {o['status']}: {o.get('label', '')} in {o['duration_s']:.1f}s; "
                  f"log {log}", file=sys.stderr)
            # the attempt has ended and its outcome is written: a big log is stored compressed (after
            # the summary, which never waits for it; every reader of logkit reads either form)
            from ..logfiles import compress_ended

            try:
                if compress_ended(Path(root) / str(result.session), o["log"]["path"]) is not None:
                    print(f"logkit: log stored compressed: {log}.gz (logkit show, why and the site read it as text)",
                          file=sys.stderr)
            except Exception as exc:  # noqa: BLE001 - the record stands with the plain log
                print(f"logkit: warning: the log stays uncompressed: {exc}", file=sys.stderr)

    try:
        if args.repeat != 1 or args.warmup:
            from ..capture import repeat

            results = repeat.run(argv, opts, args.repeat, args.warmup, report, confirm=confirm)
            for line in repeat.summary(root, results):
                print(f"logkit: {line}", file=sys.stderr)
            result = results[-1]
        else:
            result = runner.run(argv, opts, confirm=confirm)
            report(result)
    except KeyboardInterrupt:  # Ctrl-C while planning or confirming: nothing was launched
        print("logkit: interrupted before launch; nothing ran", file=sys.stderr)
        return 130
    if args.json:
        text = json.dumps({"session": result.session, "exit_status": result.exit_status,
                           "attempt": result.attempt, "outcome": result.outcome}, ensure_ascii=False)
        if args.json == "-":
            print(text, file=sys.stderr)
        else:
            try:
                with open(args.json, "w", encoding="utf-8") as fh:
                    fh.write(text + "\n")
            except OSError as exc:  # the command ran: its status stands, and the JSON is not lost
                print(f"logkit: warning: cannot write --json {args.json} ({exc.strerror}); here it is instead:\n{text}",
                      file=sys.stderr)
    return result.exit_status


def _check_json_target(path: str) -> None:
    """Refuse, before anything runs, a --json FILE that cannot be written."""
    from ..errors import BadInput

    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise BadInput(f"--json {path}: cannot write there ({'a directory' if os.path.isdir(path) else 'no writable directory ' + parent})",
                       fix="give a file in a writable directory, or --json alone for stderr")
