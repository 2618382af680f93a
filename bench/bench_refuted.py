#!/usr/bin/env python3
"""How long the pre-launch refuted-configuration check takes on a big knowledge base.

Writes a store of SESSIONS x ATTEMPTS reconstructed launches (the flashinfer_trtllm fifth of them failed) with the
store API, then times :func:`logkit.reasoning.refuted.check` against a baseline measured in the
same process: reading every ``events.jsonl`` as bytes. The first check builds the one index
(``sessions/.cache/index.sqlite``, :mod:`logkit.store.index`); the next ones only query it while the
files are unchanged (issue 19's goal: <= 50 ms at 2,000 sessions / 100,000 attempts). Run: ``.venv/bin/python bench/bench_refuted.py [--sessions 2000 --attempts 50]``.

``--against CHECKOUT`` also loads ``logkit/reasoning/refuted.py`` of another checkout (say main before
a change) into this process and times both checks interleaved, in CPU time (steadier than the wall
clock on a shared machine), printing after/before.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

from logkit.events import Attempt, Environment, Gpu, LaunchConfig, Outcome
from logkit.reasoning import refuted
from logkit.store import Store

BACKENDS = ["flashinfer_cutlass", "flashinfer_trtllm", "flashinfer_cutedsl", "triton", "cutlass"]


def make(root: Path, sessions: int, attempts: int) -> Store:
    store = Store(root)
    env = Environment(gpus=[Gpu(index=i, name="NVIDIA RTX PRO 6000 Blackwell", compute_cap="12.0") for i in range(8)])
    for s in range(sessions):
        handle = store.create(f"bench {s}", session_id=f"bench-{s:03d}", make_current=False)
        with handle.transaction() as txn:
            for a in range(1, attempts + 1):
                backend = BACKENDS[(s + a) % len(BACKENDS)]
                fp = {"moe_runner_backend": backend, "attention_backend": "flashinfer", "tp_size": 8, "model_path": f"m{s}"}
                txn.append(Attempt(session=handle.id, short_id=f"A{a}", argv=["python", "-m", "sglang.launch_server"],
                                   role="launch", environment=env, launch=LaunchConfig(fingerprint=fp, non_default=fp)))
                status = "arch_mismatch" if backend == "flashinfer_trtllm" else "ready"
                txn.append(Outcome(session=handle.id, attempt=f"A{a}", status=status))
    return store


def best_of(fn, repeat: int = 3, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def load_other(checkout: Path):
    """``refuted.py`` of another checkout, as a module of this logkit package (its imports resolve here)."""
    spec = importlib.util.spec_from_file_location("logkit.reasoning._refuted_other",
                                                  checkout / "logkit" / "reasoning" / "refuted.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=250, help="attempts per session")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="also time this checkout's refuted.py")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = make(Path(tmp) / "sessions", args.sessions, args.attempts)
        files = sorted(store.root.glob("*/events.jsonl"))
        size = sum(p.stat().st_size for p in files) / 1e6
        baseline = best_of(lambda: [p.read_bytes() for p in files])
        live = {"moe_runner_backend": "flashinfer_trtllm", "attention_backend": "flashinfer", "tp_size": 8}
        start = time.perf_counter()
        cold_hits = refuted.check(live, "SM120", store)  # derives every session, writes the read cache
        cold = time.perf_counter() - start
        hits: list = []
        warm = best_of(lambda: hits.extend(refuted.check(live, "SM120", store)))
        assert len(hits) == 3 * len(cold_hits)
        total = args.sessions * args.attempts
        print(f"{total} attempts in {len(files)} sessions ({size:.0f} MB of events.jsonl); "
              f"{len(cold_hits)} matches")
        print(f"read every file (baseline): {baseline * 1000:8.1f} ms")
        print(f"check, no cache (cold):     {cold * 1000:8.1f} ms")
        print(f"check, cached (warm):       {warm * 1000:8.1f} ms   (goal <= 100 ms)")
        print(f"load average: {os.getloadavg()[1]:.1f} on {os.cpu_count()} cores")
        if args.against:
            other = load_other(args.against)
            assert len(other.check(live, "SM120", store)) == len(hits) // 3
            cpu = {"this": [], "other": []}
            for _ in range(25):
                cpu["this"].append(best_of(lambda: refuted.check(live, "SM120", store), 1, time.process_time))
                cpu["other"].append(best_of(lambda: other.check(live, "SM120", store), 1, time.process_time))
            this, before = min(cpu["this"]), min(cpu["other"])
            print(f"CPU time, best of 25 interleaved: this {this * 1000:.1f} ms, {args.against} {before * 1000:.1f} ms, "
                  f"this/other {this / before:.2f}")
    return 0 if warm <= 0.1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
