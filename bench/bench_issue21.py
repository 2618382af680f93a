"""Issue 21's figures: SGLang's real benchmark client here, run-to-run noise, the accuracy gate.

* client: one ``python -m sglang.benchmark.serving`` run (the real client, tests/benchclient.py:
  stand-in torchvision, packages from .venv/sglang-bench-client, a tiny tokenizer, ``random-ids``,
  8 prompts at concurrency 2) against the stand-in client of logkit/demo/standin/fake_sglang, wall time each,
  against the same stand-in server; and ``python -c pass`` as the floor.
* parse: ``import sglang.srt.server_args`` (what logkit runs to parse every launch) with the
  client's packages on PYTHONPATH against without: why they live in a folder of their own.
* noise: ``--repeat`` real client runs against one server: output throughput as median, min-max
  and the bootstrap interval of the median (logkit.stats), and whether two halves of the runs would
  be called "tied" by logkit.reasoning.matrix.compare (they should: it is one server).
* stats: the cost of logkit.stats.spread at 5 and 30 runs.
* accuracy: logkit's 40 accuracy questions against the stand-in server (wall time of the check).

    .venv/bin/python bench/bench_issue21.py [--repeat 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from benchclient import client_argv, client_env, stand_in_server, tiny_tokenizer  # noqa: E402
from logkit.demo import STANDIN  # noqa: E402


def _timed(argv: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv[:4])}...\n{done.stderr[-2000:]}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=6)
    args = ap.parse_args()
    from logkit.capture.sglang import accuracy
    from logkit.reasoning.matrix import compare
    from logkit.stats import spread

    with stand_in_server() as port:
        tmp = Path(tempfile.mkdtemp())
        tok = tiny_tokenizer(tmp / "tok")
        env = client_env()
        stand_in = {**os.environ, "PYTHONPATH": str(STANDIN / "fake_sglang")}
        floor, real, fake, tput = [], [], [], []
        for i in range(args.repeat):
            floor.append(_timed([sys.executable, "-c", "pass"], os.environ.copy()))
            out = tmp / f"r{i}.jsonl"
            real.append(_timed(client_argv(port, tok, "--output-file", str(out)), env))
            tput.append(json.loads(out.read_text())["output_throughput"])
            fake.append(_timed([sys.executable, "-m", "sglang.bench_serving", "--port", str(port),
                                "--output-file", str(tmp / f"f{i}.jsonl")], stand_in))
        med = statistics.median
        print(f"client: real {med(real):.2f} s, stand-in {med(fake):.2f} s ({med(real) / med(fake):.1f}x), "
              f"python -c pass {med(floor):.3f} s; medians of {args.repeat}")
        parse = "import sglang.srt.server_args"
        with_pkgs = [_timed([sys.executable, "-c", parse], env) for _ in range(3)]
        without = [_timed([sys.executable, "-c", parse], os.environ.copy()) for _ in range(3)]
        print(f"parse: import sglang.srt.server_args {med(without):.2f} s; with the client's packages importable "
              f"{med(with_pkgs):.2f} s ({med(with_pkgs) / med(without):.1f}x); medians of 3")
        s = spread(tput)
        half = len(tput) // 2
        print(f"noise: output_throughput {s.text()} tok/s; spread (max-min)/median {(s.high - s.low) / s.median:.0%}; "
              f"first half vs second half: {compare(tput[:half], tput[half:]).text()}")
        for n in (5, 30):
            values = [100.0 + (i * 7919 % 13) for i in range(n)]
            t = time.perf_counter()
            for _ in range(5):
                spread(values)
            print(f"stats: spread of {n} runs (2000 bootstrap resamples) {(time.perf_counter() - t) / 5 * 1000:.1f} ms")
        t = time.perf_counter()
        r = accuracy.check(f"http://127.0.0.1:{port}")
        print(f"accuracy: {r.total} questions in {time.perf_counter() - t:.2f} s, {r.label()}")


if __name__ == "__main__":
    main()
