"""How long ``logkit run`` keeps the terminal after a child that fails fast (issue 23).

The child writes the wall-clock time of its exit to a file just before it exits; the bench reads
``logkit run``'s stderr as it comes and notes when the summary line (``logkit: <session>/A<n>: ...``)
arrives. The figure is summary time - child exit time, per run, as the median of ``--repeat`` runs;
two commands: a plain one (``python -c 'sys.exit(3)'``) and an SGLang launch of the stand-in server
that runs out of memory at once (``python -m sglang.launch_server`` through
logkit/demo/standin/fake_sglang, its flags parsed by SGLang's own ServerArgs).

    .venv/bin/python bench/bench_fastfail.py [--repeat 5] [--code DIR]

``--code DIR``: run the logkit package found in DIR (a checkout of another commit, made with
``git worktree add DIR COMMIT``) instead of this one, for a before/after in the same run.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
FAKE = REPO / "logkit" / "demo" / "standin" / "fake_sglang"
SUMMARY = re.compile(r"logkit: (\S+/)?A\d+ \S+: ")  # the closing summary line of logkit run
STAMP_EXIT = "import os, sys, time; open(os.environ['BENCH_STAMP'], 'w').write(repr(time.time())); "


def one(sessions: Path, kind: str, code: Path | None, stamp: Path, seed: int) -> float:
    """Seconds from the child's exit to the summary line. ``seed``: a fresh --random-seed per launch,
    so SGLang's full parse of the flags is never one logkit has seen before (as for a new launch)."""
    env = {**os.environ, "BENCH_STAMP": str(stamp)}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    if kind == "plain":
        cmd = [PY, "-c", STAMP_EXIT + "print('RuntimeError: boom', file=sys.stderr); sys.exit(3)"]
    else:
        # The stand-in server's oom mode exits at once. It is found through PYTHONPATH, which the child
        # inherits from logkit; logkit's own SGLang parse runs in an isolated interpreter (-I) on the
        # real lean SGLang, as for a real launch. A sitecustomize beside it stamps the server's exit.
        stamper = sessions.parent / "stamper"  # shared by the runs
        stamper.mkdir(exist_ok=True)
        (stamper / "sitecustomize.py").write_text(
            "import atexit, os, sys, time\n"
            "def _stamp():\n"
            "    if sys.argv[:1] and sys.argv[0].endswith('fakeserver.py'):\n"
            "        open(os.environ['BENCH_STAMP'], 'w').write(repr(time.time()))\n"
            "atexit.register(_stamp)\n")
        env["FAKE_SGLANG_MODE"] = "oom"
        env["LOGKIT_GPU_ARCH"] = "SM120"
        env["PYTHONPATH"] = os.pathsep.join(x for x in (str(code) if code else "", str(FAKE), str(stamper)) if x)
        cmd = [PY, "-m", "sglang.launch_server", "--model-path", "fake/model", "--port", "31999",
               "--random-seed", str(seed)]
    # cwd outside the repository: `python -m` puts the cwd first on sys.path, before --code's tree
    p = subprocess.Popen([PY, "-m", "logkit", "--sessions", str(sessions), "run", "--yes", "--", *cmd], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=sessions.parent)
    summary_at = None
    assert p.stderr is not None
    for line in p.stderr:
        if summary_at is None and SUMMARY.match(line):
            summary_at = time.time()
    p.wait()
    if summary_at is None:
        raise SystemExit(f"no summary line from logkit run ({kind})")
    return summary_at - float(stamp.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--code", type=Path, help="a checkout whose logkit package to time instead")
    args = ap.parse_args()
    def fresh(root: Path, n: int) -> Path:
        """A new sessions directory with a session started."""
        sessions = root / f"sessions-{n}"
        subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), "session", "start", "bench fast fail"],
                       check=True, capture_output=True, cwd=root,
                       env={**os.environ, **({"PYTHONPATH": str(args.code)} if args.code else {})})
        return sessions

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        load = os.getloadavg()[0]
        for kind in ("plain", "launch"):
            sessions = fresh(root, 0 if kind == "plain" else 1)  # one session, its attempts A1, A2, ...
            base = int(time.time() * 1000) % 10**9  # seeds no earlier run used
            times = [one(sessions, kind, args.code, root / "stamp", base + n) for n in range(args.repeat)]
            print(f"{kind:>6}: summary {statistics.median(times):.2f} s after the child's exit (median of "
                  f"{len(times)}; min {min(times):.2f}, max {max(times):.2f}; load {load:.1f})")


if __name__ == "__main__":
    main()
