"""What `logkit run` costs before its child, on a fresh session and on a 100,000-event one, for one or two
checkouts of logkit (before and after a change), against ``python -c pass``, in one run.

* ``run -- true``: the wall time of ``logkit run -- true`` (the whole command);
* ``second launch``: ``logkit run --yes -- python -m sglang.launch_server ...`` to the child's first
  statement (a stand-in ``sglang.launch_server``, first on the child's PYTHONPATH, writes
  ``time.monotonic()`` and exits; logkit parses the flags with the SGLang installed here), after a
  first launch in the same session (the planner's cache warm, a previous launch to diff against).
  ``--yes``: the pre-launch refuted check is not what the run path owns (``bench_refuted.py``).

Each checkout runs on its own copy of the two stores (made once, then warmed by one run of each
command: a run index or the SQLite index built). The variants alternate, ``--repeat`` rounds; the
figures are medians, and "added" is the median minus the median of ``python -c pass``
(`logkit run -- true` goal: <= 80 ms added; a second launch: <= 300 ms added, to the bare launch).

    .venv/bin/python bench/bench_runstart.py --before /tmp/base [--events 100000] [--repeat 11]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_bigsession import make_session  # noqa: E402
from bench_launch import _stub  # noqa: E402  (the stand-in launch_server that stamps its start)

FLAGS = ["--model-path", "zai-org/GLM-5-NVFP4", "--tp", "8", "--mem-fraction", "0.85", "--moe-runner-backend",
         "flashinfer_cutlass", "--kv-cache-dtype", "fp8_e4m3"]
def _wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return time.perf_counter() - start


def _to_exec(cmd: list[str], env: dict[str, str]) -> float:
    stamp = Path(env["BENCH_STAMP"])
    stamp.unlink(missing_ok=True)
    start = time.monotonic()
    _wall(cmd, env)
    return float(stamp.read_text()) - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="a checkout of logkit to compare with (git worktree add ...)")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    py = sys.executable
    checkouts = {"after": REPO, **({"before": args.before.resolve()} if args.before else {})}
    with tempfile.TemporaryDirectory(prefix="logkit-bench-runstart-") as tmp:
        work = Path(tmp)
        stub = _stub(work)
        made = {"fresh": work / "made-fresh", "big": work / "made-big"}
        make_session(made["big"], args.events)
        base_env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "BENCH_STAMP": str(work / "stamp")}
        base_env.pop("LOGKIT_GPU_ARCH", None)
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        env_of: dict[tuple[str, str], dict[str, str]] = {}
        for name, repo in checkouts.items():
            for store, source in made.items():
                root = work / name / store
                if store == "big":
                    shutil.copytree(source, root)
                env = {**base_env, "LOGKIT_SESSIONS": str(root), "PYTHONPATH": f"{stub}{os.pathsep}{repo}"}
                if store == "fresh":
                    subprocess.run([py, "-m", "logkit", "session", "start", "bench"], env=env, check=True,
                                   capture_output=True)
                env_of[name, store] = env
                # warm: byte code, the parser cache, a first launch, the checkout's index of the session
                _to_exec([py, "-m", "logkit", "run", "--yes", "--", py, "-m", "sglang.launch_server", *FLAGS], env)
                _wall([py, "-m", "logkit", "run", "--", "true"], env)
        times: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            times.setdefault("python -c pass", []).append(_wall([py, "-c", "pass"], base_env))
            times.setdefault("bare launch", []).append(_to_exec([py, "-m", "sglang.launch_server", *FLAGS],
                                                                {**base_env, "PYTHONPATH": str(stub)}))
            for (name, store), env in env_of.items():
                times.setdefault(f"{name:6s} {store:5s} run -- true", []).append(
                    _wall([py, "-m", "logkit", "run", "--", "true"], env))
                times.setdefault(f"{name:6s} {store:5s} second launch", []).append(
                    _to_exec([py, "-m", "logkit", "run", "--yes", "--", py, "-m", "sglang.launch_server", *FLAGS], env))
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(f"medians of {args.repeat} alternating rounds, ms; load average {os.getloadavg()[0]:.1f}; "
          f"big = {args.events} events")
    pc, bare = med.pop("python -c pass"), med.pop("bare launch")
    print(f"  python -c pass                      {pc:7.1f}")
    print(f"  bare launch (to exec)               {bare:7.1f}")
    for key, value in sorted(med.items()):
        ref, goal = (bare, 300) if key.endswith("launch") else (pc, 80)
        print(f"  {key:34s} {value:7.1f}  added {value - ref:6.1f} (goal <= {goal})  {value / pc:5.2f}x python -c pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
