#!/usr/bin/env python3
"""The sweep's own overhead per cell, against the launches and benchmarks it wraps.

Runs a real ``logkit sweep`` (in-process, the engine as the CLI calls it) over CELLS working cells
of the stand-in server (logkit/demo/standin/fake_sglang behind SGLang's real parser; each cell: launch, one smoke
prompt, BENCH bench points, stop) into a temporary store. For each cell it splits the wall time
into the ``logkit run`` processes the cell waits on (the launch's, from spawn to reap, which holds
the bench runs) and the rest: the sweep's overhead (port check, hypothesis, verdict, result event,
polling latency). Also prints the one-off grid build (SGLang's parser once for the whole grid).
Goal: under 1 s per cell besides the launch and the benchmark.
Run: ``.venv/bin/python bench/bench_sweep.py [--cells 4 --bench 1]``.
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logkit.sweep import engine, grid, progress, spec as specmod  # noqa: E402

VALUES = ["triton", "flashinfer_cutlass", "cutlass", "deep_gemm", "marlin", "aiter", "auto", "flashinfer_cutedsl"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=4)
    parser.add_argument("--bench", type=int, default=1, help="bench points per cell")
    args = parser.parse_args()
    values = VALUES[: args.cells]
    with tempfile.TemporaryDirectory() as tmp:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update({"PYTHONPATH": str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang"), "LOGKIT_GPU_ARCH": "SM120",
                           "FAKE_SGLANG_BACKENDS": ",".join(f"{v}=healthy:{1 + i / 4}" for i, v in enumerate(values))})
        spec = specmod.from_cli([f"moe-runner-backend={','.join(values)}"],
                                [sys.executable, "-m", "sglang.launch_server", "--model-path", "fake/model",
                                 "--host", "127.0.0.1", "--port", str(port)],
                                smoke=["What is 3 + 5?"], bench="python -m sglang.bench_serving --num-prompts 8",
                                bench_axes=[f"max-concurrency={','.join(str(2 ** i) for i in range(args.bench))}"])
        spec.grace = 5
        t0 = time.perf_counter()
        grid.build(spec)
        grid_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = engine.run(spec, engine.SweepOptions(sessions=str(Path(tmp) / "sessions")),
                            progress=progress.PlainProgress(args.cells, 0, io.StringIO()))
        wall = time.perf_counter() - t0
        works = sum(1 for r in report.view.results.values() if r.status == "works")
        cells = [r.duration_s or 0.0 for r in report.view.results.values()]
        over = report.overhead_s
        print(f"logkit sweep overhead ({args.cells} cells x {args.bench} bench point(s), {works} worked; "
              f"load average {os.getloadavg()[0]:.1f})")
        print(f"grid build (SGLang's parser, once per run):  {grid_s:6.2f} s")
        print(f"sweep wall time:                              {wall:6.2f} s")
        print(f"cell wall time, median:                       {statistics.median(cells):6.2f} s")
        print(f"wrapped logkit runs per cell, median:         {statistics.median(cells) - statistics.median(over):6.2f} s")
        print(f"sweep overhead per cell, median / max:        {statistics.median(over):6.3f} / {max(over):.3f} s  "
              f"(goal < 1 s)")
        print(f"ratio cell / wrapped runs, median:            "
              f"{statistics.median(c / max(1e-9, c - o) for c, o in zip(cells, over)):6.3f}")
    return 0 if max(over) < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
