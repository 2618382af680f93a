"""``logkit demo [DIR]``: a whole bring-up without a GPU, in a fresh directory, in about a minute.

Contract: every step is the real ``logkit`` command a user would type, run as its own process in
``DIR`` (``LOGKIT_SESSIONS=DIR/sessions``): a session, two hypotheses, a sweep of the MoE runner
backend over stand-in servers that crash (an SM100-only kernel), print garbage, run out of memory
and work (two of them, one twice as fast), each working one smoke-tested and benchmarked at two
concurrencies; the decision proposed from the sweep and recorded; the site built into
``DIR/site/out``. What each step shows is printed as it happens.

The stand-ins (``logkit/demo/standin/``, the tests' too) are named as such: ``fakeserver.py``
(SGLang's endpoints and SGLang 0.5.23's log lines, no model), run as ``python -m
sglang.launch_server`` through the ``fake_sglang`` package on the child's PYTHONPATH, whose
benchmark client writes the real client's JSONL keys; ``standin/nvidia-smi``, first on the demo's
PATH, prints what the real one prints on an SM120 host. The launch flags are parsed by the real
SGLang where it is installed, else by logkit's plain parser.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import BadInput

__all__ = ["STANDIN", "run_demo"]

#: the stand-ins the tests use too
STANDIN = Path(__file__).resolve().parent / "standin"
#: per MoE backend: how the stand-in server behaves (``FAKE_SGLANG_BACKENDS``, see fakeserver.py)
BACKENDS = {
    "flashinfer_trtllm": "sm100",       # crashes: TRT-LLM MoE kernels are built for SM100 only
    "flashinfer_cutedsl": "garbage",    # serves, replies "!!!!"
    "deep_gemm": "oom",                 # CUDA out of memory while allocating the KV cache
    "flashinfer_cutlass": "healthy:2.0",
    "triton": "healthy:1.0",
}


def run_demo(target: Path, say: Callable[[str], None] = print) -> int:
    """Run the demo in ``target`` (must be absent or empty); 0 when every step worked."""
    target = target.resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BadInput(f"{target} exists and is not empty", fix="give a new directory: logkit demo DIR")
    target.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LOGKIT_SESSIONS": str(target / "sessions"), "LOGKIT_GPU_ARCH": "SM120",
           "PATH": os.pathsep.join([str(STANDIN / "bin"), os.environ.get("PATH", "")]),
           "FAKE_SGLANG_BACKENDS": ",".join(f"{k}={v}" for k, v in BACKENDS.items()),
           "PYTHONPATH": os.pathsep.join(p for p in (str(STANDIN / "fake_sglang"), os.environ.get("PYTHONPATH", "")) if p)}
    started = time.monotonic()

    def step(title: str, *args: str) -> subprocess.CompletedProcess[str]:
        say(f"\n$ logkit {' '.join(args)}\n# {title}")
        r = subprocess.run([sys.executable, "-m", "logkit", *args], env=env, cwd=target, capture_output=True,
                           text=True, timeout=600)
        for line in (r.stdout + r.stderr).strip().splitlines()[-14:]:
            say(f"  {line}")
        if r.returncode != 0:
            raise BadInput(f"demo step failed (exit {r.returncode}): logkit {' '.join(args)}",
                           fix=f"see the output above; the demo's files are in {target}")
        return r

    say(f"logkit demo in {target}: a bring-up of fake/model on a stand-in SGLang (no GPU, no weights)")
    made = step("a session holds everything below", "session", "start", "Demo: MoE backend for fake/model on SM120")
    session = next(w for w in made.stdout.split() if w[:4].isdigit() and w.count("-") >= 3)  # "started session ID (...)"
    step("what we expect, to be confirmed or refuted by attempts", "hypothesis", "add",
         "flashinfer_trtllm MoE runs on SM120")
    step("and a second one", "hypothesis", "add", "flashinfer_cutlass MoE is the fastest working backend on SM120")
    with socket.socket() as s:  # a free port for the stand-in servers
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    r = step("each MoE backend: launch, smoke prompt, benchmark at concurrency 1 and 16, stop; failures "
             "classified (crash, garbage, oom)",
             "sweep", "--session", session, "--title", "MoE runner backend on SM120", "--axis",
             "moe-runner-backend=" + ",".join(BACKENDS), "--smoke", "What is 3 + 5?",
             "--bench", "python -m sglang.bench_serving --dataset-name random --num-prompts 8",
             "--bench-axis", "max-concurrency=1,16", "--limit", "p99_tpot_ms=40", "--ready-timeout", "6",
             "--grace", "5", "--", sys.executable, "-m", "sglang.launch_server", "--model-path", "fake/model",
             "--host", "127.0.0.1", "--port", str(port))
    sweep_id = next((w.strip(":,.()") for w in (r.stdout + r.stderr).split() if w.startswith("SW-")), None)
    if sweep_id is None:
        raise BadInput("the sweep printed no SW- id", fix=f"see the output above; the demo's files are in {target}")
    step("the session: hypotheses, attempts and what they say", "status")
    draft = target / "decision.toml"
    step("a decision record proposed from the sweep's ranking", "decide", "--from-sweep", sweep_id,
         "--write", str(draft))
    step("recorded as it was proposed (edit the draft first, in real life)", "decide", "--from-file", str(draft))
    step("the knowledge base: decision record, working configuration, refuted backends, sweep, charts",
         "build", "--out", str(target / "site" / "out"), "--docs", str(target / "site" / "docs"))
    took = time.monotonic() - started
    say(f"\ndone in {took:.0f}s. Open {target / 'site' / 'out' / 'index.html'} (works offline), or look around:\n"
        f"  cd {target} && export LOGKIT_SESSIONS=$PWD/sessions\n"
        f"  logkit status; logkit show A1; logkit compare A1 A4; logkit why sessions/*/logs/A1.log\n"
        f"  logkit export --what matrix\n"
        f"The server and its benchmark client were stand-ins ({STANDIN}): no GPU was used.")
    return 0
