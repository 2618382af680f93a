"""How much `logkit run` costs, against a baseline measured in the same run.

* throughput: `logkit run -- <child writing SIZE bytes of log lines>` against the same child piped
  into `tee FILE > /dev/null` (goal: <= 1.10x the wall time). The lines are SGLang-like (decode and
  prefill batches, weight loading, a server_args line), so the redaction prefilter sees real text.
* start-up: `logkit run -- true` against `true` (goal: <= 80 ms added).

Each pair is run alternately ``--repeat`` times and the medians are compared.

    .venv/bin/python bench/bench_run.py               # 1 GB
    .venv/bin/python bench/bench_run.py --size 200M   # quicker
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

LINES = [
    b"[2026-11-14 10:21:07 TP0] Decode batch, #running-req: 32, #token: 41234, token usage: 0.21, cuda graph: True, gen throughput (token/s): 1843.21, #queue-req: 0\n",
    b"[2026-11-14 10:21:07 TP3] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.21, #running-req: 31, #queue-req: 0\n",
    b"[2026-11-14 10:20:01 TP1] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=60.12 GB, mem usage=15.03 GB.\n",
    b"[2026-11-14 10:20:31] INFO:     127.0.0.1:51234 - \"POST /generate HTTP/1.1\" 200 OK\n",
    b"Loading safetensors checkpoint shards:  42% Completed | 21/50 [00:31<00:43,  1.49s/it]\n",
]

GEN = r"""
import os, sys
size = int(sys.argv[1])
lines = [bytes.fromhex(h) for h in sys.argv[2:]]
block = b"".join(lines) * (1048576 // len(b"".join(lines)))
n = 0
while n < size:
    n += os.write(1, block)
"""


def _size(text: str) -> int:
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def _time(cmd: list[str], **kw: object) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1G", help="bytes the child writes (1G, 200M, ...)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each throughput variant")
    parser.add_argument("--startup-repeat", type=int, default=15, help="runs of each start-up variant")
    args = parser.parse_args()
    size = _size(args.size)
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="logkit-bench-") as tmp:
        root = Path(tmp)
        sessions = root / "sessions"
        env = {**os.environ, "LOGKIT_SESSIONS": str(sessions)}
        # Measure an installed logkit: with byte-code caching (pip compiles on install).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([py, "-m", "logkit", "session", "start", "bench"], check=True, env=env, stdout=subprocess.DEVNULL)
        gen = root / "gen.py"
        gen.write_text(GEN)
        child = [py, str(gen), str(size), *[line.hex() for line in LINES]]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
        tee_cmd = ["bash", "-c", " ".join(f"'{w}'" for w in child) + f" | tee {root / 'tee.log'} > /dev/null"]
        base, lk = [], []
        for _ in range(args.repeat):
            base.append(_time(tee_cmd, **quiet))
            lk.append(_time([py, "-m", "logkit", "run", "--", *child], **quiet))
            for log in (sessions.glob("*/logs/*.log")):
                log.unlink()  # keep the disk from filling
        b, r = statistics.median(base), statistics.median(lk)
        print(f"throughput ({size / 1e6:.0f} MB of log lines, median of {args.repeat}):")
        print(f"  child | tee FILE   {b:7.2f} s   {size / b / 1e6:7.0f} MB/s")
        print(f"  logkit run         {r:7.2f} s   {size / r / 1e6:7.0f} MB/s")
        print(f"  ratio              {r / b:7.2f}x   (goal <= 1.10x)")

        _time([py, "-m", "logkit", "run", "--", "true"], **quiet)  # warm the byte-code cache
        t_true, t_lk, t_py = [], [], []
        for _ in range(args.startup_repeat):
            t_true.append(_time(["true"], **quiet))
            t_lk.append(_time([py, "-m", "logkit", "run", "--", "true"], **quiet))
            t_py.append(_time([py, "-c", "pass"], **quiet))
        a, c, p = (statistics.median(x) * 1000 for x in (t_true, t_lk, t_py))
        print(f"start-up (median of {args.startup_repeat}):")
        print(f"  true                  {a:7.1f} ms")
        print(f"  logkit run -- true    {c:7.1f} ms")
        print(f"  added                 {c - a:7.1f} ms   (goal <= 80 ms; a bare `python -c pass` is {p:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
