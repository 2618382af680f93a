"""``logkit sweep``: run a grid of SGLang launch configurations, unattended and resumable."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import add_json, command, print_json

__all__ = ["register"]

EXIT_INTERRUPTED = 130
EXIT_BUDGET = 3


def register(sub: Any) -> None:
    """Add the sweep command."""
    p = command(
        sub, "sweep", cmd_sweep,
        help="run every configuration of a grid (launch, smoke, bench) and rank them; resumable",
        description="Run each cell of a sweep (SPEC.toml, or --axis FLAG=V1,V2 -- LAUNCH CMD) as ordinary "
        "attempts in one session: launch, smoke prompts, bench points, stop. Rerunning the same spec resumes: "
        "only cells without a result run. Exit status: 0 done, 3 time budget spent (cells left), 130 interrupted.")
    p.add_argument("spec", nargs="?", metavar="SPEC.toml", help="the sweep spec (see README: logkit sweep)")
    p.add_argument("--axis", action="append", default=[], metavar="FLAG=V1,V2",
                   help='one axis of the grid (repeatable); "FLAG=choices" takes every choice SGLang allows')
    p.add_argument("--smoke", action="append", default=[], metavar="PROMPT", help="a smoke prompt (repeatable)")
    p.add_argument("--bench", metavar="CMD", help='the bench command, e.g. "python -m sglang.bench_serving ..."')
    p.add_argument("--bench-axis", action="append", default=[], metavar="FLAG=V1,V2", help="a bench axis (repeatable)")
    p.add_argument("--limit", metavar="METRIC=MAX", help="a latency limit, e.g. p99_tpot_ms=50")
    p.add_argument("--accuracy", nargs="?", const="", metavar="THRESHOLD",
                   help="the accuracy gate after ready (logkit run --accuracy): a cell below THRESHOLD is inaccurate "
                   "and not ranked")
    p.add_argument("--repeat", type=int, metavar="N", help="runs per bench point (median, spread; slow only when apart)")
    p.add_argument("--warmup", action="store_true", help="one unmeasured bench run before each point's runs")
    p.add_argument("--budget", metavar="DURATION", help="time budget for this run: seconds, or 90m, 4h")
    p.add_argument("--ready-timeout", metavar="SECONDS", help="a launch not ready by then is a hang (default 900)")
    p.add_argument("--grace", metavar="SECONDS", help="SIGTERM to SIGKILL of a server (default 90)")
    p.add_argument("--title", help="the sweep's title (CLI form)")
    p.add_argument("--session", metavar="ID", help="record into this session (default: a new one per sweep)")
    p.add_argument("--new", action="store_true", help="start a new sweep even if this spec has one (default: resume)")
    p.add_argument("--retry-refuted", action="store_true",
                   help="run cells the knowledge base already refuted on this GPU architecture")
    p.add_argument("--arch", metavar="SM120", help="the GPU architecture (default: nvidia-smi, or $LOGKIT_GPU_ARCH)")
    p.add_argument("--show", metavar="SW-ID", help="print the ranking of a recorded sweep and exit")
    add_json(p)
    p.add_argument("cmd", nargs="*", metavar="-- CMD ...", help="the launch command (with --axis)")


def _spec(args: argparse.Namespace) -> Any:
    from ..errors import BadInput
    from ..sweep import spec as specmod

    words = ([args.spec] if args.spec else []) + list(args.cmd)
    if words[:1] == ["--"]:
        words = words[1:]
    if args.axis:
        spec = specmod.from_cli(args.axis, words, smoke=args.smoke, bench=args.bench, bench_axes=args.bench_axis,
                                title=args.title)
    elif args.spec and not args.cmd:
        spec = specmod.load(args.spec)
        spec.smoke += args.smoke
    else:
        raise BadInput("give a spec file or --axis with a launch command",
                       fix="logkit sweep SPEC.toml  or  logkit sweep --axis FLAG=A,B -- python -m sglang.launch_server ...")
    if args.limit:
        metric, eq, ceiling = args.limit.partition("=")
        try:
            spec.limit_metric, spec.limit_max = metric.strip(), float(ceiling)
        except ValueError:
            eq = ""
        if not eq or not metric.strip():
            raise BadInput(f"--limit {args.limit!r} is not METRIC=MAX", fix="--limit p99_tpot_ms=50")
    if args.accuracy is not None:
        from ..capture.sglang import accuracy

        spec.accuracy = accuracy.threshold(args.accuracy) if args.accuracy else accuracy.default_threshold()
    if args.repeat is not None:
        if args.repeat < 1:
            raise BadInput(f"--repeat {args.repeat}: give 1 or more runs", fix="--repeat 5")
        spec.repeat = args.repeat
    if args.warmup:
        spec.warmup = True
    for flag, attr in (("budget", "budget_s"), ("ready_timeout", "ready_timeout"), ("grace", "grace")):
        value = getattr(args, flag)
        if value is not None:
            setattr(spec, attr, specmod.parse_duration(value, where=f"--{flag.replace('_', '-')}", zero=flag == "budget"))
    return spec


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..store import Store
    from ..sweep import state

    if args.show:
        view = state.load(Store.from_env(args.sessions), args.show)
        if args.json:
            print_json(_as_json(view))
        else:
            print(state.table(view))
        return 0
    from ..sweep import engine

    spec = _spec(args)
    opts = engine.SweepOptions(sessions=args.sessions, session=args.session, new=args.new,
                               retry_refuted=args.retry_refuted, arch=args.arch)
    report = engine.run(spec, opts)
    if args.json:
        print_json({**_as_json(report.view), "ran": report.ran, "interrupted": report.interrupted,
                    "overhead_s": report.overhead_s})
    else:
        print(state.table(report.view))
        left = report.view.pending
        if left:
            print(f"\n{len(left)} cell(s) without a result; rerun the same command to resume.", file=sys.stderr)
        else:
            print(f"\npropose a decision: logkit decide --from-sweep {report.view.sweep.sweep}", file=sys.stderr)
    if report.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_BUDGET if report.budget_left else 0


def _as_json(view: Any) -> dict[str, Any]:
    from dataclasses import asdict

    from ..sweep import state

    return {"sweep": view.sweep.sweep, "session": view.session, "title": view.sweep.title,
            "pending": view.pending, "ranking": [asdict(r) for r in state.ranking(view)]}
