#!/usr/bin/env python3
"""How fast the readers answer on a big store: the pre-launch refuted check, ``logkit status`` and
``why`` (issue 19: they query the one index), for this checkout and, with ``--before DIR``, another
logkit tree (e.g. ``git archive fde36e4``), as ratios to a ``json.loads`` baseline of the same store
in the same run.

Generates the store with ``bench/bigstore.py`` (``tests/kb_factory.synthetic``; default 200
sessions, ~100,000 events). Each tree runs in its own process (its ``logkit`` on ``PYTHONPATH``):
the first call (its caches or index made from nothing) and the best of three warm calls of

* check: ``refuted.check({"moe_runner_backend": "flashinfer_trtllm"}, "SM120", store)``;
* status: ``status.session_status(root, <last session>)``;
* why: ``seen.seen_before(Store(root), <an out-of-memory error>)``.

Goals (issue 19) at 2,000 sessions / 1,000,000 events: check <= 50 ms, status <= 0.3 s (warm).

    .venv/bin/python bench/bench_readers.py [--events 100000] [--sessions 200] [--before DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bigstore import REPO, baseline, generate, timed  # noqa: E402  (the same store, the same baseline)

CHILD = r"""
import json, sys, time
from pathlib import Path
root = Path(sys.argv[1])
try:  # the tree timed may be from before storage became one package
    from logkit.store import files
except ImportError:
    from logkit import files
from logkit.store import Store
from logkit.reasoning import refuted
from logkit.reasoning.status import session_status
from logkit.capture.sglang.outcomes import classify_text
try:  # why moved beside the other reasoning
    from logkit.reasoning.why import seen_before
except ImportError:
    from logkit.capture.sglang.seen import seen_before

class Root:
    pass
Root.root = root
sid = files.session_ids(root)[-1]
verdict = classify_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
calls = {
    "check": lambda: refuted.check({"moe_runner_backend": "flashinfer_trtllm"}, "SM120", Root),
    "status": lambda: session_status(root, sid),
    "why": lambda: seen_before(Store(root), verdict),
}
out = {}
for name, call in calls.items():
    start = time.perf_counter(); found = call(); first = time.perf_counter() - start
    warm = []
    for _ in range(3):
        start = time.perf_counter(); again = call(); warm.append(time.perf_counter() - start)
    if isinstance(found, tuple):  # status: (dict, problems)
        size = len(found[0]["attempts"])
    elif isinstance(found, list):  # check: refuted runs
        size = len(found)
    else:  # why: the attempts that failed the same way, or in the same class
        size = len(found.same) + len(found.same_class)
    out[name] = {"first": first, "warm": min(warm), "answer": size}
print(json.dumps(out))
"""


def measure(tree: Path, root: Path) -> dict[str, dict[str, float]]:
    shutil.rmtree(root / ".cache", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(root)], env=env, capture_output=True, text=True,
                          cwd=tree, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--before", type=Path, help="another logkit tree to time beside this one")
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "out-readers")
    parser.add_argument("--keep", action="store_true", help="keep the generated store for the next run")
    args = parser.parse_args()
    root = args.work.resolve() / "sessions"
    generate(root, args.events, args.sessions)
    (base, _cpu), lines = timed(lambda: baseline(root))
    print(f"store: {lines} events in {args.sessions} sessions; baseline json.loads of every line {base:.3f} s")
    trees = {"after": REPO, **({"before": args.before.resolve()} if args.before else {})}
    results = {name: measure(tree, root) for name, tree in trees.items()}
    print(f"{'':8} {'reader':7} {'first s':>8} {'/base':>7} {'warm s':>8} {'/base':>7} answer")
    for name, found in results.items():
        for reader, r in found.items():
            print(f"{name:8} {reader:7} {r['first']:8.3f} {r['first'] / base:7.3f} {r['warm']:8.4f} "
                  f"{r['warm'] / base:7.4f} {r['answer']}")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
