"""`logkit serve` as a real process: serves on 127.0.0.1 and regenerates pages when a session changes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import kb_factory
from logkit.events import Note
from logkit.store import Store

pytestmark = pytest.mark.slow  # mkdocs serve as a real process


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode("utf-8")
    except OSError:
        return None


def _wait(predicate, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def test_serve_live_reload(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    kb_factory.realistic(sessions)
    port = _port()
    env = {**os.environ, "LOGKIT_SESSIONS": str(sessions)}
    proc = subprocess.Popen([sys.executable, "-m", "logkit", "serve", "--addr", f"127.0.0.1:{port}"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        page = f"http://127.0.0.1:{port}/sessions/2026-11-20-qwen35-b200/index.html"
        assert _wait(lambda: (_get(page) or "").find("Qwen3.5 NVFP4 on 4x B200") >= 0), "the site was not served"
        Store(sessions).handle("2026-11-20-qwen35-b200").append(
            Note(session="2026-11-20-qwen35-b200", text="live reload picked this up"))
        assert _wait(lambda: "live reload picked this up" in (_get(page) or "")), "the change was not rebuilt"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    printed = proc.stdout.read().decode() if proc.stdout else ""
    assert f"logkit: serving {sessions} at http://127.0.0.1:{port}/" in printed, printed[-2000:]
