"""What `logkit run` adds before an SGLang launch starts, against the same command bare, in one run.

* launch: ``logkit run -- python -m sglang.launch_server --model-path ... --tp 2 ...`` against the
  same command without logkit, measured to the child's exec: a stand-in ``sglang.launch_server``
  (first on the child's PYTHONPATH; logkit still parses the flags with the real SGLang installed in
  this interpreter) writes ``time.monotonic()`` as its first act and exits. The first launch runs
  with an empty parser cache (``$XDG_CACHE_HOME``), the second and later ones with the cache it
  left. Goal: logkit adds < 0.5 s on a second launch.
* refusal: the time until ``logkit run`` refuses a typo'd backend (``flashinfer_cutlas``), cache warm.
* true: ``logkit run -- true`` against ``true`` (wall time of the whole command).

Medians of ``--repeat`` runs, logkit and bare alternating.

    .venv/bin/python bench/bench_launch.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAGS = ["--model-path", "zai-org/GLM-5-NVFP4", "--tp", "8", "--mem-fraction", "0.85", "--moe-runner-backend",
         "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn", "--kv-cache-dtype", "fp8_e4m3"]
STUB = "import os, time\nopen(os.environ['BENCH_STAMP'], 'w').write(repr(time.monotonic()))\n"


def _stub(root: Path) -> Path:
    pkg = root / "stub" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(STUB)
    return root / "stub"


def _to_exec(cmd: list[str], env: dict[str, str], stamp: Path) -> float:
    """Seconds from starting ``cmd`` to the stand-in's first statement."""
    stamp.unlink(missing_ok=True)
    start = time.monotonic()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return float(stamp.read_text()) - start


def _wall(cmd: list[str], env: dict[str, str] | None = None, ok: bool = True) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if ok and done.returncode != 0:
        raise SystemExit(f"{cmd} exited {done.returncode}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="runs of each second-launch and true variant")
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="logkit-bench-launch-") as tmp:
        root = Path(tmp)
        stamp = root / "stamp"
        env = {**os.environ, "PYTHONPATH": str(_stub(root)), "BENCH_STAMP": str(stamp),
               "XDG_CACHE_HOME": str(root / "cache"), "LOGKIT_SESSIONS": str(root / "sessions")}
        env.pop("LOGKIT_GPU_ARCH", None)
        subprocess.run([py, "-m", "logkit", "session", "start", "bench"], env=env, check=True, capture_output=True)
        bare = [py, "-m", "sglang.launch_server", *FLAGS]
        wrapped = [py, "-m", "logkit", "run", "--yes", "--", *bare]
        checked = [py, "-m", "logkit", "run", "--", *bare]  # with the refuted-configuration check
        first_bare = _to_exec(bare, env, stamp)
        first = _to_exec(wrapped, env, stamp)
        seconds, checks, bares = [], [], []
        for _ in range(args.repeat):
            bares.append(_to_exec(bare, env, stamp))
            seconds.append(_to_exec(wrapped, env, stamp))
            checks.append(_to_exec(checked, env, stamp))
        typo = [py, "-m", "logkit", "run", "--yes", "--", py, "-m", "sglang.launch_server", "--model-path", "m",
                "--moe-runner-backend", "flashinfer_cutlas"]
        refusals = [_wall(typo, env, ok=False) for _ in range(max(3, args.repeat // 2))]
        trues, lk_trues = [], []
        for _ in range(args.repeat):
            trues.append(_wall(["true"]))
            lk_trues.append(_wall([py, "-m", "logkit", "run", "--", "true"], env))
    med = statistics.median
    load = os.getloadavg()[0]
    print(f"logkit run before an SGLang launch (to the child's exec), medians of {args.repeat}; load average {load:.1f}")
    print(f"bare command:                 {med(bares) * 1000:8.0f} ms  (first run {first_bare * 1000:.0f} ms)")
    print(f"first launch (empty cache):   {first * 1000:8.0f} ms  adds {(first - first_bare) * 1000:6.0f} ms")
    print(f"second launch (--yes):        {med(seconds) * 1000:8.0f} ms  adds {(med(seconds) - med(bares)) * 1000:6.0f} ms"
          "  (goal < 500 ms)")
    print(f"second launch (refuted check):{med(checks) * 1000:8.0f} ms  adds {(med(checks) - med(bares)) * 1000:6.0f} ms")
    print(f"refuse a typo'd backend:      {med(refusals) * 1000:8.0f} ms  (whole command, cache warm)")
    print(f"logkit run -- true:           {med(lk_trues) * 1000:8.0f} ms  adds {(med(lk_trues) - med(trues)) * 1000:6.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
