"""`logkit classify`, `logkit import` on real corpus logs, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
PY = sys.executable


def lk(*args: str, sessions: Path | None = None) -> subprocess.CompletedProcess:
    pre = ["--sessions", str(sessions)] if sessions else []
    return subprocess.run([PY, "-m", "logkit", *pre, *args], capture_output=True, text=True, timeout=60)


def test_classify_json_shape() -> None:
    r = lk("classify", "--json", str(LOGS / "nccl-sglang-4289.log"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert {"status", "label", "evidence", "ready"} <= set(data)
    assert data["status"] == "nccl" and data["ready"] is False
    assert {"line": 13, "text": "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"} in data["evidence"]


def test_classify_ready_log_has_ready_line_as_evidence() -> None:
    data = json.loads(lk("classify", "--json", str(LOGS / "docs-notebook-024.log")).stdout)
    assert data["status"] == "ready" and data["ready"] is True
    assert any("fired up and ready to roll" in e["text"] for e in data["evidence"])


def test_classify_text_output() -> None:
    r = lk("classify", str(LOGS / "oom-sglang-4547.log"))
    assert r.stdout.startswith("oom: CUDA out of memory")


def test_classify_missing_file_names_it() -> None:
    r = lk("classify", "/nonexistent/x.log")
    assert r.returncode != 0 and "/nonexistent/x.log" in r.stderr and "fix:" in r.stderr


def test_import_adds_redacted_attempt_with_outcome(tmp_path: Path) -> None:
    sessions = tmp_path / "s"
    assert lk("session", "start", "old logs", sessions=sessions).returncode == 0
    src = tmp_path / "old.log"
    secret = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456"
    src.write_bytes((LOGS / "nan-sglang-1953.log").read_bytes() + f"HF_TOKEN={secret}\n".encode())
    r = lk("import", str(src), "--cmd", f"python -m sglang.launch_server --model-path Qwen/Q --tp 2 --api-key {secret}",
           "--json", sessions=sessions)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    att, out = data["attempt"], data["outcome"]
    assert att["provenance"]["source"] == "imported" and att["role"] == "launch"
    assert att["launch"]["args"]["tp_size"] == 2  # SGLang's name for --tp (the installed parser names it)
    assert out["status"] == "nan" and out["attempt"] == att["short_id"]
    copied = sessions / att["session"] / att["log"]["path"]
    assert copied.is_file() and "Detected errors during sampling" in copied.read_text()
    for p in sessions.rglob("*"):
        if p.is_file():
            assert secret not in p.read_text(errors="replace"), p
    assert secret in src.read_text()  # the original is never modified


@pytest.mark.parametrize("cmd", ["classify", "import", "bench"])
def test_help(cmd: str) -> None:
    assert lk(cmd, "--help").returncode == 0
