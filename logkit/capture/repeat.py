"""``logkit run --repeat N [--warmup]``: one benchmark run N times against the same server.

Contract: :func:`run` refuses a command that is not an SGLang benchmark, then runs it with
:func:`logkit.capture.runner.run`: an optional ``warm-up`` attempt whose figures are not recorded, then
N measured attempts labelled ``run i/N`` (a ``repeat`` label on their metrics), stopping at the first
that fails. :func:`summary` gives each headline figure of the measured runs as the median with its
spread (:func:`logkit.stats.spread`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import BadInput
from . import runner

__all__ = ["HEADLINE", "check", "run", "summary"]

#: the figures the summary shows, when measured (SGLang's JSONL keys)
HEADLINE = ("output_throughput", "request_throughput", "mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms",
            "median_itl_ms", "p99_itl_ms")


def check(argv: list[str], repeat: int, warmup: bool) -> None:
    """Refuse --repeat/--warmup on anything but a benchmark, and a repeat below 1."""
    from .sglang.detect import detect

    if repeat < 1:
        raise BadInput(f"--repeat {repeat}: give 1 or more runs", fix="--repeat 5 (a bootstrap interval needs 5)")
    target = detect(argv)
    if target is None or target.kind != "bench":
        raise BadInput("--repeat and --warmup repeat an SGLang benchmark client run (python -m sglang.bench_serving "
                       "or sglang.benchmark.serving); this command is not one",
                       fix="logkit run --repeat 5 --warmup -- python -m sglang.benchmark.serving ...")


def run(argv: list[str], opts: runner.RunOptions, repeat: int, warmup: bool,
        report: Callable[[runner.RunResult], None], *, confirm: Any = None) -> list[runner.RunResult]:
    """The warm-up (if asked) and up to ``repeat`` measured runs; ``report`` is called after each."""
    check(argv, repeat, warmup)
    results: list[runner.RunResult] = []
    plan: list[tuple[str, dict[str, Any]]] = [("warm-up", {"measure": False})] if warmup else []
    plan += [(f"run {i}/{repeat}", {"repeat": f"{i}/{repeat}"}) for i in range(1, repeat + 1)]
    for label, extra in plan:
        one = runner.RunOptions(
            sessions=opts.sessions, session=opts.session, tests=opts.tests, role=opts.role,
            label=f"{opts.label}: {label}" if opts.label else label, grace=opts.grace,
            hang_timeout=opts.hang_timeout, preflight=opts.preflight, extra={**opts.extra, **extra})
        result = runner.run(argv, one, confirm=confirm)
        results.append(result)
        report(result)
        if result.exit_status != 0:
            break
        if opts.session is None and result.session:
            opts.session = result.session  # every run into the session the first went to
    return results


def summary(sessions_root: str, results: list[runner.RunResult]) -> list[str]:
    """``output_throughput 523.5 (min-max 498.1-540.2, ..., 5 runs) tok/s`` per headline figure of the measured runs."""
    from ..stats import spread
    from ..store import files

    if not results or not results[0].session:
        return []
    attempts = {r.attempt["short_id"] for r in results if r.attempt}
    path = Path(sessions_root) / str(results[0].session) / files.EVENTS_FILE
    values: dict[str, list[float]] = {}
    units: dict[str, str | None] = {}
    for ev in files.dicts(path, keep=lambda line: b'"metric"' in line):
        if ev.get("kind") == "metric" and ev.get("attempt") in attempts:
            values.setdefault(ev["name"], []).append(float(ev["value"]))
            units[ev["name"]] = ev.get("unit")
    return [f"{name} {spread(values[name]).text()}{' ' + units[name] if units[name] else ''}"
            for name in HEADLINE if name in values]
