"""A small knowledge base made the way a user makes one, for the agent tests (MCP server, hooks).

Real ``logkit run`` of the stand-in SGLang server (logkit/demo/standin/fake_sglang on the child's PYTHONPATH;
SGLang's real parser reads the flags) on a stand-in nvidia-smi that reports one SM120 GPU:
``flashinfer_trtllm`` MoE crashes with the SM100-only TRT-LLM error (A1), ``triton`` MoE comes up
and answers its smoke prompt (A2, with an API key that must never be shown). Then, through the
CLI: H1 (tested by A1) refuted, and a decision choosing triton that cites both.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
FAKE = str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang")
SECRET = "sk-live-Zq8vK2mN4pR7tW1x"
SMI = """#!/bin/sh
case "$*" in
  *index,compute_cap*) echo "0, 12.0";;
  topo*) printf '\\tGPU0\\nGPU0\\t X \\n';;
  *) echo "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.82.07, 97887, 12.0";;
esac
"""
MODEL = "fake/model"
TRTLLM_ERROR = ("ValueError: TRTLLM MoE backend is only supported on Blackwell GPUs (SM100). "
                "Please use a different backend.")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_env(tmp: Path) -> dict[str, str]:
    """The environment of every process of the lab: the stand-in nvidia-smi first on PATH."""
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "nvidia-smi").write_text(SMI)
    (bindir / "nvidia-smi").chmod(0o755)
    # `python` on PATH is this interpreter: the recorded commands name no path of this machine
    env = {**os.environ, "PATH": os.pathsep.join([str(bindir), os.path.dirname(PY), os.environ["PATH"]]), "PYTHONPATH": os.pathsep.join([FAKE, str(ROOT)]),
           "FAKE_SGLANG_BACKENDS": "flashinfer_trtllm=sm100,triton=healthy", "LOGKIT_SESSIONS": str(tmp / "sessions")}
    env.pop("LOGKIT_GPU_ARCH", None)
    return env


def launch(backend: str, *extra: str) -> list[str]:
    return ["python", "-m", "sglang.launch_server", "--model-path", MODEL, "--host", "127.0.0.1", "--port", str(free_port()),
            "--moe-runner-backend", backend, *extra]


def logkit(env: dict[str, str], *args: str, timeout: float = 120) -> str:
    done = subprocess.run([PY, "-m", "logkit", *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout.strip()


def build(tmp: Path, *, working: bool = True) -> dict[str, str]:
    """Record the knowledge base under ``tmp/sessions``; returns the lab's env (and ids in it)."""
    env = lab_env(tmp)
    logkit(env, "session", "start", "GLM bring-up on SM120", "--id", "2026-12-01-glm")
    logkit(env, "hypothesis", "add", "flashinfer_trtllm MoE runs on SM120", "--priority", "high")
    crash = subprocess.run([PY, "-m", "logkit", "run", "--yes", "--tests", "H1", "--", *launch("flashinfer_trtllm")], env=env,
                           capture_output=True, text=True, timeout=120)
    assert crash.returncode != 0 and "A1" in crash.stderr, crash.stderr
    if working:
        logkit(env, "run", "--yes", "--smoke", "What is 3 + 5?", "--smoke-only", "--",
               *launch("triton", "--api-key", SECRET))
        logkit(env, "hypothesis", "refute", "H1", "--evidence", "A1", "--because", "no SM120 kernels")
        env["DECISION"] = logkit(env, "decide", "Use triton MoE on SM120", "--context", "GLM on one RTX PRO 6000",
                                 "--option", "flashinfer_trtllm: SM100-only kernels (H1, A1)", "--option", "triton: works",
                                 "--chosen", "triton", "--evidence", "A1,A2")
    return env
