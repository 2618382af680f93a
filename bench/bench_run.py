"""How much `logkit run` costs, against a baseline measured in the same run.

* throughput: `logkit run -- <child writing SIZE bytes of log lines>` against the same child piped
  into `tee FILE > /dev/null` (goal: <= 1.10x the wall time). The lines are SGLang-like (decode and
  prefill batches, weight loading, a server_args line), so the redaction prefilter sees real text.
* start-up: `logkit run -- true` against `true` (goal: <= 80 ms added).

The variants run back to back ``--repeat`` times; a ratio is the median of each run's ratio to the
tee run just before it (a pair sees the same load). The throughput runs go next to ``--load``
CPU-bound processes of the script's own (default: one per core, as on a GPU host whose tokenizer,
scheduler and detokenizer processes keep every core busy); ``--load 0`` measures a quiet machine.
The CPU time each variant used (user + system, the child's included) is printed too. A third
variant runs only logkit's stream path (supervisor and recorder in a bare Python process: no CLI,
session files, probes or outcome), which is closer to what a byte costs: on a loaded machine
logkit's start-up alone takes about a second.

    .venv/bin/python bench/bench_run.py               # 1 GB, one busy process per core
    .venv/bin/python bench/bench_run.py --size 100M   # quicker
    .venv/bin/python bench/bench_run.py --load 0      # a quiet machine
"""

from __future__ import annotations

import argparse
import os
import resource
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


def _timed(cmd: list[str], **kw: object) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = _time(cmd, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


BUSY = "while True: pass"

# The stream path alone: logkit's supervisor and recorder on the child, in a bare Python process
# (no CLI, session files, probes or outcome): closer to what a byte costs.
STREAM = r"""
import os, sys
from logkit.capture.process import spawn
from logkit.capture.recorder import Recorder
from logkit.capture.redact import Redactor
from logkit.capture.supervisor import Supervisor
log, argv = sys.argv[1], sys.argv[2:]
child = spawn(argv, cwd=os.getcwd(), env=dict(os.environ), use_pty=False)
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
rec = Recorder(fd, Redactor.for_run(dict(os.environ), argv), None)
with Supervisor(child, rec, 30.0) as sup:
    sup.pump()
rec.sha.hexdigest()
"""


def _busy(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` CPU-bound processes (killed by the caller)."""
    return [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1G", help="bytes the child writes (1G, 200M, ...)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each throughput variant")
    parser.add_argument("--startup-repeat", type=int, default=15, help="runs of each start-up variant")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1,
                        help="CPU-bound processes running next to the throughput runs (default: one per core)")
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
        stream = root / "stream.py"
        stream.write_text(STREAM)
        variants = {
            "child | tee FILE": tee_cmd,
            "logkit run": [py, "-m", "logkit", "run", "--", *child],
            "stream path only": [py, str(stream), str(root / "stream.log"), *child],
        }
        walls: dict[str, list[float]] = {k: [] for k in variants}
        cpus: dict[str, list[float]] = {k: [] for k in variants}
        busy = _busy(args.load)
        try:
            for _ in range(args.repeat):
                for name, cmd in variants.items():  # back to back: a pair sees the same load
                    wall, cpu = _timed(cmd, **quiet)
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                for log in (*sessions.glob("*/logs/*.log"), root / "tee.log", root / "stream.log"):
                    log.unlink(missing_ok=True)  # keep the disk from filling
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
        print(f"throughput ({size / 1e6:.0f} MB of log lines, median of {args.repeat}, next to {args.load} busy "
              f"process(es) on {os.cpu_count()} cores; ratio: median of each run's ratio to the tee run before it):")
        base, base_cpu = walls["child | tee FILE"], cpus["child | tee FILE"]
        for name in variants:
            w, c = statistics.median(walls[name]), statistics.median(cpus[name])
            ratio = statistics.median(x / b for x, b in zip(walls[name], base))
            cpu_ratio = statistics.median(x / b for x, b in zip(cpus[name], base_cpu))
            goal = "" if name.startswith("child") else f"   {ratio:5.2f}x (goal <= 1.10x), CPU {cpu_ratio:5.2f}x"
            print(f"  {name:18s} {w:7.2f} s {size / w / 1e6:6.0f} MB/s   CPU {c:6.2f} s{goal}")

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
