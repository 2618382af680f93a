"""Raw logs stored compressed once their attempt has ended: every reader reads them, nothing secret leaks.

Real ``logkit run`` processes with ``LOGKIT_COMPRESS_LOGS_OVER=0`` (compress every log; the default,
``[logs] compress_over_bytes`` of logkit/data/storage.toml, keeps small logs plain). The child prints
a token it was given in its environment: the log is redacted as it is written, so the compressed
file holds the redaction, never the token, and ``show``, ``why``, ``classify`` and the site read it.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

from logkit.builder import generate

PY = sys.executable
TOKEN = "hf_" + "Zq8vK2mN4pR7tW1xYb3LcD5e"


def logkit(sessions: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_an_ended_attempts_log_is_compressed_and_read_everywhere(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    assert logkit(sessions, "session", "start", "compressed").returncode == 0
    env = {**os.environ, "LOGKIT_COMPRESS_LOGS_OVER": "0", "HF_TOKEN": TOKEN}
    child = ("import os, sys; print('token', os.environ['HF_TOKEN']); "
             "print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr); sys.exit(1)")
    r = logkit(sessions, "run", "--", PY, "-c", child, env=env)
    assert r.returncode == 1
    (sid,) = [p.name for p in sessions.iterdir() if p.is_dir()]
    logs = sessions / sid / "logs"
    assert not (logs / "A1.log").exists()
    packed = logs / "A1.log.gz"
    assert "logkit: log stored compressed: " in r.stderr and "logs/A1.log.gz" in r.stderr
    text = gzip.decompress(packed.read_bytes()).decode()
    assert "CUDA out of memory" in text and TOKEN not in text and "token " in text
    assert TOKEN.encode() not in packed.read_bytes()
    for path in sessions.rglob("*"):  # nothing secret anywhere, compressed or not
        if path.is_file():
            raw = path.read_bytes()
            assert TOKEN.encode() not in (gzip.decompress(raw) if path.suffix == ".gz" else raw), path
    shown = logkit(sessions, "show", "A1")
    assert shown.returncode == 0 and "(compressed; logkit reads it as text)" in shown.stdout
    assert "CUDA out of memory" in shown.stdout.split("last ")[-1]
    for asked in (logs / "A1.log", packed):  # the path the summary printed, and the file on disk
        why = logkit(sessions, "why", str(asked))
        assert why.returncode == 0 and why.stdout.startswith("oom") and f"{sid}/A1's own" in why.stdout, why.stdout
        assert logkit(sessions, "classify", str(asked)).returncode == 0
    docs = tmp_path / "docs"
    generate(sessions, docs, warn=lambda _m: None)
    assert (docs / "logs" / sid / "logs" / "A1.log").read_text() == text  # published as text, link unchanged
    page = next((docs / "sessions").glob(f"{sid}/index.md")).read_text()
    assert f"logs/{sid}/logs/A1.log" in page


def test_a_small_log_stays_plain_by_default(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    assert logkit(sessions, "session", "start", "plain").returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "LOGKIT_COMPRESS_LOGS_OVER"}
    r = logkit(sessions, "run", "--", PY, "-c", "print('hello')", env=env)
    assert r.returncode == 0 and "compressed" not in r.stderr
    (log,) = sessions.glob("*/logs/A1*")
    assert log.name == "A1.log" and log.read_text() == "hello\n"
