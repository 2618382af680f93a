#!/usr/bin/env python3
"""How long the builder's first two stages (load, frames) take on a big store, with and without its read cache.

Generates a sessions directory of about EVENTS events (``tests/kb_factory.synthetic``: attempts
with their environment, outcomes, smokes, benchmarks and their metrics, hypotheses, decisions;
about 4.6 events per attempt), then times, in this process and alternating:

* baseline: read every ``events.jsonl`` and ``json.loads`` every line (no validation, no objects
  beyond plain dicts): what any reader of these files pays at least;
* no cache: ``load(root, cache=False)`` + ``make_frames`` (every line validated and checked);
* cold: the same through the read cache with no cache file (derives and writes
  ``sessions/.cache/load.json``);
* warm: through the cache again, every file unchanged (each session's few events validated again;
  its many, per attempt, are read when a page shows them, which this bench does not time).

Prints absolute seconds, each as a ratio to the baseline of the same round (the machine is shared
and noisy), and the load average. Goal (issue 12): 1,000,000 events in <= 10 s, load + frames.
Also checks that the frames with and without the cache are identical.

    .venv/bin/python bench/bench_load.py [--events 1000000] [--sessions 2000] [--rounds 2] [--work DIR] [--keep]

With ``--keep`` the generated store stays in ``--work`` and a later run with the same sizes reuses it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import kb_factory  # noqa: E402

from logkit.builder.frames import make_frames  # noqa: E402
from logkit.builder.load import gc_paused, load  # noqa: E402

EVENTS_PER_ATTEMPT = 4.62  # what kb_factory.synthetic writes on average


def baseline(root: Path) -> int:
    """Read every session file and ``json.loads`` every line; the number of lines."""
    n = 0
    loads = json.loads
    for path in sorted(root.glob("*/events.jsonl")):
        for line in path.read_bytes().split(b"\n"):
            if line:
                loads(line)
                n += 1
    return n


def timed(fn: Callable[[], Any]) -> tuple[tuple[float, float], Any]:
    """((wall seconds, CPU seconds), value) of ``fn()``."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return (time.perf_counter() - start, time.process_time() - cpu), value


def load_and_frames(root: Path, cache: bool) -> tuple[tuple[float, float], Any]:
    """(Wall, CPU) seconds and frames of load + make_frames, run as ``logkit.builder.generate`` runs them: under
    one pause of the cyclic collector, the result then frozen out of its sight (a collection
    right after the pause would rescan every event, and the builder never makes one there)."""
    gc.collect()
    with gc_paused():
        start, cpu = time.perf_counter(), time.process_time()
        frames = make_frames(load(root, cache=cache))
        seconds = (time.perf_counter() - start, time.process_time() - cpu)
        gc.freeze()
    return seconds, frames


def release() -> None:
    """After the caller dropped its frames: let the collector see what is left."""
    gc.unfreeze()
    gc.collect()


def generate(root: Path, events: int, sessions: int) -> None:
    marker = root / ".bench-size"
    want = f"{events} {sessions}"
    if marker.exists() and marker.read_text() == want:
        print(f"reusing {root}")
        return
    shutil.rmtree(root, ignore_errors=True)
    start = time.perf_counter()
    kb_factory.synthetic(root, sessions, int(events / EVENTS_PER_ATTEMPT))
    marker.write_text(want)
    print(f"generated {root} in {time.perf_counter() - start:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (baseline, warm); the best of each counts")
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "out-load")
    parser.add_argument("--keep", action="store_true", help="keep the generated store for the next run")
    args = parser.parse_args()
    root = args.work.resolve() / "sessions"
    generate(root, args.events, args.sessions)
    size = sum(p.stat().st_size for p in root.glob("*/events.jsonl")) / 1e6
    t_base, n = timed(lambda: baseline(root))
    print(f"store: {n} events in {args.sessions} sessions, {size:.0f} MB of events.jsonl", flush=True)
    t_none, plain = load_and_frames(root, cache=False)
    print(f"no cache: {t_none[0]:.1f} s", flush=True)
    shutil.rmtree(root / ".cache", ignore_errors=True)
    t_cold, cold = load_and_frames(root, cache=True)
    print(f"cold cache: {t_cold[0]:.1f} s", flush=True)
    import pandas as pd

    pd.testing.assert_frame_equal(plain.attempts, cold.attempts)
    pd.testing.assert_frame_equal(plain.metrics, cold.metrics)
    del plain, cold
    release()
    bases, warms = [t_base], []
    for round_ in range(args.rounds):
        if round_:
            bases.append(timed(lambda: baseline(root))[0])
        t_warm, warm = load_and_frames(root, cache=True)
        warms.append(t_warm)
        print(f"round {round_ + 1}: baseline {bases[-1][0]:.1f} s, warm cache {t_warm[0]:.1f} s", flush=True)
        del warm
        release()
    base = (min(b[0] for b in bases), min(b[1] for b in bases))
    best = (min(w[0] for w in warms), min(w[1] for w in warms))
    print(f"load average: {os.getloadavg()[1]:.1f} (5 min) on {os.cpu_count()} cores")
    print("                                      wall     ratio   CPU      ratio  (best of each; ratios to the baseline)")
    for name, (wall, cpu) in (("baseline, json.loads of every line:", base), ("load + frames, no cache:", t_none),
                              ("load + frames, cold cache:", t_cold), ("load + frames, warm cache:", best)):
        print(f"{name:36} {wall:6.1f} s  {wall / base[0]:5.2f}x  {cpu:6.1f} s  {cpu / base[1]:5.2f}x")
    print(f"goal: warm <= 10 s at 1,000,000 events ({10 * n / 1e6:.1f} s at {n} events)")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0 if best[0] <= 10 * n / 1e6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
