"""What ``logkit hook pre-launch`` adds to each shell command a coding agent runs, against
``python -c pass``, in one run.

The hook is started as Claude Code starts it (the ``logkit`` console script, the tool call as JSON
on stdin) over a knowledge base recorded with a real ``logkit run`` of the stand-in SGLang server
(tests/agents_kb.py: flashinfer_trtllm MoE crashed on a stand-in SM120 GPU), its index warm. Cases:

* ``not SGLang``: ``ls -la && git status`` (nearly every call an agent makes: exit 0, silent);
* ``refuted launch``: ``python -m sglang.launch_server ... --moe-runner-backend flashinfer_trtllm``
  (exit 2, the evidence on stderr);
* ``untested launch``: the same with ``triton`` (exit 0, the wrap suggestion on stdout).

The variants alternate, ``--repeat`` rounds (default 50); each figure is a median, and "added" is
the median minus the median of ``python -c pass`` (goal: the hook answers in <= 100 ms). The
modules each case imports are listed from ``-X importtime`` (the fast path must import neither
pydantic nor the ``mcp`` SDK).

    .venv/bin/python bench/bench_hook.py [--repeat 50]
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import agents_kb  # noqa: E402

HEAVY = ("pydantic", "mcp", "pandas", "jinja2", "sqlite3", "argparse")


def _call(command: str) -> bytes:
    return json.dumps({"session_id": "bench", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
                       "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command, "description": "bench"}, "tool_use_id": "toolu_bench"}).encode()


def _wall(cmd: list[str], env: dict[str, str], stdin: bytes, expect: int) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, input=stdin, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"{cmd} exited {done.returncode}, not {expect}: {done.stderr.decode()[-2000:]}")
    return took


def _imports(cmd: list[str], env: dict[str, str], stdin: bytes) -> list[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *cmd[1:]] if cmd[0] == sys.executable else cmd,
                          env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, input=stdin, capture_output=True)
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.decode().splitlines()
             if line.startswith("import time:")}
    return [h for h in HEAVY if h in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    console = str(Path(sys.executable).parent / "logkit")
    launch = "python -m sglang.launch_server --model-path fake/model --moe-runner-backend"
    cases = {
        "not SGLang": (_call("ls -la && git status"), 0),
        "refuted launch": (_call(f"{launch} flashinfer_trtllm"), 2),
        "untested launch": (_call(f"{launch} triton"), 0),
    }
    with tempfile.TemporaryDirectory(prefix="logkit-bench-hook-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from their .pyc
        env = agents_kb.build(Path(tmp), working=False)
        hook = [console, "hook", "pre-launch"]
        for stdin, code in cases.values():  # warm: the index brought up to date, pages cached
            _wall(hook, env, stdin, code)
        times: dict[str, list[float]] = {"python -c pass": [], **{name: [] for name in cases}}
        for _ in range(args.repeat):
            times["python -c pass"].append(_wall([sys.executable, "-c", "pass"], env, b"", 0))
            for name, (stdin, code) in cases.items():
                times[name].append(_wall(hook, env, stdin, code))
        imported = {name: _imports([sys.executable, "-m", "logkit", "hook", "pre-launch"], env, stdin)
                    for name, (stdin, _code) in cases.items()}
    base = statistics.median(times["python -c pass"])
    print(f"logkit hook pre-launch, median of {args.repeat} calls each, load {os.getloadavg()[0]:.1f}")
    print(f"{'case':<18} {'median':>9} {'added':>9} {'x bare':>7}  heavy modules imported")
    for name, values in times.items():
        med = statistics.median(values)
        heavy = ", ".join(imported.get(name, [])) or ("-" if name in imported else "")
        print(f"{name:<18} {med * 1000:>7.1f}ms {(med - base) * 1000:>+7.1f}ms {med / base:>6.2f}x  {heavy}")
    worst = max(statistics.median(v) for k, v in times.items() if k != "python -c pass")
    print(f"goal <= 100 ms per call: {'yes' if worst <= 0.100 else 'no'} (slowest case {worst * 1000:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
