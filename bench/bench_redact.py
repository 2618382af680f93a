"""What the one redaction engine (the standard library) costs, before and after, in one run.

* ``Redactor.chunk`` alone, in MB/s, on 64 KiB chunks of complete lines of (a) the real SGLang
  logs of ``tests/fixtures/logs/`` repeated to SIZE (a ``server_args`` line every few KB: far
  denser in triggers than a real launch, which prints it once), (b) SGLang decode/prefill lines
  (a long launch's traffic: no trigger), (c) a secret-dense log (a real secret on every line).
* ``logkit run`` over a chatty command (a Python child writing SIZE of (a) or (b)) against the
  same command bare (its output to a file), as a ratio of wall times.

``--base`` names another checkout (a ``git worktree`` of main) measured in the same run with its
own ``PYTHONPATH``; its engine is whatever it picks there (Hyperscan when installed).

    .venv/bin/python bench/bench_redact.py --size 50M --base /tmp/lean-base
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECODE = (b"[2026-11-14 10:21:07 TP0] Decode batch, #running-req: 32, #token: 41234, token usage: 0.21, "
          b"cuda graph: True, gen throughput (token/s): 1843.21, #queue-req: 0\n")
DENSE = b"".join(b"[%d] server_args: api_key=None, tp_size=8, hf_token='hf_abcdefghijklmnopqrstuvwx%d'\n" % (i, i)
                 for i in range(2000))

INPROC = r"""
import sys, time
from logkit.capture.redact import Redactor
block, size = open(sys.argv[1], "rb").read(), int(sys.argv[2])
big = block * max(1, size // len(block))
chunks, i = [], 0
while i < len(big):
    j = big.rfind(b"\n", i, i + 65536) + 1 or i + 65536
    chunks.append(big[i:j]); i = j
r = Redactor()
start = time.perf_counter()
for c in chunks:
    r.chunk(c)
print(len(big) / (time.perf_counter() - start) / 1e6)
"""

CHILD = "import os,sys\nb=open(sys.argv[1],'rb').read()\nn=0\nwhile n<int(sys.argv[2]):\n n+=os.write(1,b)\n"


def _size(text: str) -> int:
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def _wall(cmd: list[str], env: dict[str, str], out: Path) -> float:
    start = time.perf_counter()
    with out.open("wb") as fh:
        subprocess.run(cmd, check=True, env=env, stdout=fh, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="50M")
    parser.add_argument("--base", help="another checkout measured in the same run (main)")
    args = parser.parse_args()
    size = _size(args.size)
    trees = {"after": ROOT, **({"before": Path(args.base)} if args.base else {})}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        logs = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in sorted((ROOT / "tests/fixtures/logs").glob("*.log")))
        inputs = {"fixture SGLang logs": logs, "decode lines": DECODE * 1000, "secret-dense": DENSE}
        for name, data in inputs.items():
            (t / name.replace(" ", "_")).write_bytes(data)
        print(f"Redactor.chunk alone, MB/s ({size / 1e6:.0f} MB, 64 KiB chunks, load {os.getloadavg()[0]:.1f})")
        print(f"{'log':<22}" + "".join(f"{k:>10}" for k in trees) + ("     after/before" if args.base else ""))
        for name in inputs:
            row = {}
            for tree, path in trees.items():
                env = {**os.environ, "PYTHONPATH": str(path)}
                out = subprocess.run([sys.executable, "-c", INPROC, str(t / name.replace(" ", "_")), str(size)],
                                     env=env, check=True, capture_output=True, text=True).stdout
                row[tree] = float(out)
            ratio = f"{row['after'] / row['before']:13.2f}x" if args.base else ""
            print(f"{name:<22}" + "".join(f"{v:10.1f}" for v in row.values()) + ratio)
        print(f"\n`logkit run -- python child` against the child bare, wall time ({size / 1e6:.0f} MB of output)")
        for name in ("fixture SGLang logs", "decode lines"):
            child = [sys.executable, "-c", CHILD, str(t / name.replace(" ", "_")), str(size)]
            for tree, path in trees.items():
                env = {**os.environ, "PYTHONPATH": str(path), "LOGKIT_SESSIONS": str(t / f"s-{tree}")}
                subprocess.run([sys.executable, "-m", "logkit", "session", "start", "bench"], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                bare = _wall(child, env, t / "bare.out")
                run = _wall([sys.executable, "-m", "logkit", "run", "--", *child], env, t / "run.out")
                print(f"{name:<22} {tree:<7} bare {bare:6.2f} s  logkit run {run:6.2f} s  ratio {run / bare:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
