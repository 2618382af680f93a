"""`logkit run` throughput on hostile output, against `tee` measured in the same run.

Each pattern is written by a child as fast as it can (SIZE bytes) through `logkit run` (the log is
redacted on the way to disk) and through `child | tee FILE > /dev/null`; the table gives both in
MB/s and their ratio. Goal (issue 13): no pattern below 100 MB/s through `logkit run`.

* binary: random bytes (a 3-byte trigger turns up about once per 200 KB);
* user@host: ssh-style lines, each with an `@` (once a trigger: every chunk took the slow path);
* sglang: SGLang decode/prefill lines (`#new-token: 512`, `token usage`: near-triggers);
* progress: a `\\r` progress bar that never ends its line;
* long-line: lines of 4 MB (cut into 64 KiB pieces by the recorder);
* urls: a URL on every line (`://` is the URL-credentials trigger: every line is searched);
* trigger-every-line: `api_key=None` on every line: the worst case, every line goes through the
  redaction regex (the cost of the Python `re` search, whatever the prefilter engine).

    .venv/bin/python bench/bench_hostile.py                       # 100 MB per pattern
    .venv/bin/python bench/bench_hostile.py --size 20M
    .venv/bin/python bench/bench_hostile.py --engines              # redaction alone

``--engines`` times :meth:`Redactor.chunk` alone, in this process, on chunks of each pattern of up to
64 KiB of complete lines (what the recorder gives it),
for every prefilter engine installed (what ``logkit[fast]`` buys), next to a bare ``bytes.count``
of newlines over the same chunks as the baseline.
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

from bench_run import _size, _time  # one size parser and one timer for the bench scripts (bench/ is on sys.path)

GEN = r"""
import os, random, sys
size, kind = int(sys.argv[1]), sys.argv[2]
rnd = random.Random(7)
if kind == "binary":
    block = rnd.randbytes(1 << 20)
elif kind == "user@host":
    block = b"".join(b"[ssh] user%d@host%d.example.com: session opened, elapsed 0.%03ds\n" % (i, i % 97, i % 1000)
                     for i in range(16000))
elif kind == "sglang":
    block = (b"[2026-11-14 10:21:07 TP0] Decode batch, #running-req: 32, #token: 41234, token usage: 0.21, "
             b"cuda graph: True, gen throughput (token/s): 1843.21, #queue-req: 0\n"
             b"[2026-11-14 10:21:07 TP3] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, "
             b"token usage: 0.21, #running-req: 31, #queue-req: 0\n") * 4000
elif kind == "progress":
    block = b"".join(b"\rLoading safetensors checkpoint shards: %3d%% Completed | %d/50 [00:31<00:43,  1.49s/it]"
                     % (i % 100, i % 50) for i in range(12000))
elif kind == "long-line":
    block = (b"0123456789abcdef " * 250_000)[: 4 << 20] + b"\n"
elif kind == "urls":
    block = b"".join(b"GET https://hub.example.com/models/m%d/resolve/main/f%d.safetensors 200 %d\n" % (i, i, i)
                     for i in range(12000))
elif kind == "trigger-every-line":
    block = b"".join(b"[%d] server_args: api_key=None, tp_size=8, port=30000\n" % i for i in range(20000))
else:
    raise SystemExit(f"unknown pattern {kind}")
n = 0
while n < size:
    n += os.write(1, block)
"""

PATTERNS = ("binary", "user@host", "sglang", "progress", "long-line", "urls", "trigger-every-line")


def _engines(size: int, patterns: list[str]) -> int:
    """Redaction alone per engine: MB/s of Redactor.chunk on each pattern's 64 KiB chunks."""
    import subprocess as sp

    from logkit.capture import redact

    engines = ["stdlib"]  # one engine since issue 19
    print(f"Redactor.chunk alone, {size / 1e6:.0f} MB per pattern in chunks of up to 64 KiB of lines, load average "
          f"{os.getloadavg()[0]:.1f}; MB/s (baseline: bytes.count of newlines)")
    print(f"{'pattern':<20} {'baseline':>9} " + " ".join(f"{e:>10}" for e in engines))
    for kind in patterns:
        data = sp.run([sys.executable, "-c", GEN, str(size), kind], capture_output=True, check=True).stdout[:size]
        # cut after the last newline of each 64 KiB, as the recorder hands the redactor complete
        # lines (a line without one, binary or a progress bar, is cut at 64 KiB)
        chunks, i = [], 0
        while i < len(data):
            end = data.rfind(b"\n", i, i + 65536) + 1
            end = end if end > i else min(i + 65536, len(data))
            chunks.append(data[i:end])
            i = end
        start = time.perf_counter()
        for c in chunks:
            c.count(b"\n")
        base = len(data) / (time.perf_counter() - start) / 1e6
        row = []
        for engine in engines:
            r = redact.Redactor()
            r.chunk(b"api_key=x\n")  # compile outside the timing (once per run in logkit run)
            start = time.perf_counter()
            for c in chunks:
                r.chunk(c)
            row.append(len(data) / (time.perf_counter() - start) / 1e6)
        print(f"{kind:<20} {base:>9.0f} " + " ".join(f"{v:>10.0f}" for v in row))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="100M", help="bytes the child writes per pattern (100M, 1G, ...)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each variant (the median is shown)")
    parser.add_argument("--pattern", action="append", choices=PATTERNS, help="only these patterns (repeatable)")
    parser.add_argument("--engines", action="store_true", help="time the redaction alone (Redactor.chunk)")
    args = parser.parse_args()
    size = _size(args.size)
    if args.engines:
        return _engines(size, args.pattern or list(PATTERNS))
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="logkit-hostile-") as tmp:
        root = Path(tmp)
        sessions = root / "sessions"
        env = {**os.environ, "LOGKIT_SESSIONS": str(sessions)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([py, "-m", "logkit", "session", "start", "hostile"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        gen = root / "gen.py"
        gen.write_text(GEN)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
        print(f"logkit run on hostile output: {size / 1e6:.0f} MB per pattern, median of {args.repeat}, "
              f"load average {os.getloadavg()[0]:.1f}")
        print(f"{'pattern':<20} {'tee MB/s':>9} {'logkit MB/s':>12} {'ratio':>6}  goal >= 100 MB/s")
        worst = float("inf")
        for kind in args.pattern or PATTERNS:
            child = [py, str(gen), str(size), kind]
            tee_cmd = ["bash", "-c", " ".join(f"'{w}'" for w in child) + f" | tee {root / 'tee.log'} > /dev/null"]
            base, lk = [], []
            for _ in range(args.repeat):
                base.append(_time(tee_cmd, **quiet))
                lk.append(_time([py, "-m", "logkit", "run", "--", *child], **quiet))
                for log in sessions.glob("*/logs/*.log"):
                    log.unlink()
            b, t = statistics.median(base), statistics.median(lk)
            mbs = size / t / 1e6
            worst = min(worst, mbs)
            print(f"{kind:<20} {size / b / 1e6:>9.0f} {mbs:>12.0f} {t / b:>5.2f}x  {'ok' if mbs >= 100 else 'BELOW'}")
        print(f"slowest pattern: {worst:.0f} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
