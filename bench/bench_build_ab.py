"""Two trees' `logkit build` against one bare `mkdocs build`, alternating, from nothing each time.

Each round runs, as real processes one after the other: ``logkit build`` with the BEFORE tree's
code, ``logkit build`` with this tree's, then a bare ``mkdocs build`` of the Markdown this tree
wrote (``bench_build.BARE``). Every build starts from nothing (no index, no docs, no chart cache).
The least wall and CPU seconds and the least peak memory (PSS of the process tree, as
``bench_build.run_measured`` samples it) of each count; ratios are to the bare build's. On a shared
machine, alternating and taking the least is what keeps the neighbours' load out of a comparison.

    PYTHONPATH=. .venv/bin/python bench/bench_build_ab.py --before /path/to/old/checkout [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_build as bb  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the code to compare against")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--attempts", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=bb.REPO / "bench" / "out" / "ab")
    args = parser.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    bb.kb_factory.synthetic(work / "sessions", args.sessions, args.attempts)
    config = bb.REPO / "mkdocs.yml"
    trees = {"before": args.before.resolve(), "after": bb.REPO}
    got: dict[str, list[tuple[float, float, float]]] = {"before": [], "after": [], "bare": []}
    for round_ in range(args.rounds):
        for side in ("before", "after", "bare"):
            tree = trees.get(side, bb.REPO)
            env_path = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = str(tree)  # the child imports this tree's logkit
            try:
                if side == "bare":
                    shutil.rmtree(work / "out-bare", ignore_errors=True)
                    cmd = [sys.executable, "-c", bb.BARE, str(config), str(work / "docs-after"), str(work / "out-bare")]
                else:
                    for path in (work / f"docs-{side}", work / f"out-{side}", work / ".cache", work / "sessions" / ".cache"):
                        shutil.rmtree(path, ignore_errors=True)
                    cmd = [sys.executable, "-m", "logkit", "--sessions", str(work / "sessions"), "build",
                           "--docs", str(work / f"docs-{side}"), "--out", str(work / f"out-{side}"), "--config", str(config)]
                load = os.getloadavg()[0]
                wall, _rss, peak, _out, cpu = bb.run_measured(cmd, work)
            finally:
                if env_path is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = env_path
            got[side].append((wall, cpu, peak))
            print(f"round {round_ + 1} {side:6s} wall {wall:5.1f} s, CPU {cpu:5.1f} s, peak {peak:4.0f} MB "
                  f"(1-minute load before it {load:.1f})", flush=True)
    least = {side: tuple(min(r[k] for r in rows) for k in range(3)) for side, rows in got.items()}
    bare = least["bare"]
    print(f"bare mkdocs build: wall {bare[0]:.1f} s, CPU {bare[1]:.1f} s, peak {bare[2]:.0f} MB (least of {args.rounds})")
    for side in ("before", "after"):
        wall, cpu, peak = least[side]
        print(f"{side:6s} logkit build: wall {wall:.1f} s ({wall / bare[0]:.2f}x bare, goal <= 1.2), CPU {cpu:.1f} s "
              f"({cpu / bare[1]:.2f}x), peak {peak:.0f} MB (bare + {peak - bare[2]:.0f} MB, goal <= 150)")
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.1f} (this machine has {os.cpu_count()} cores)")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
