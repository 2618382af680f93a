"""What ``logkit sweep`` shows: a live rich panel on a terminal (NO_COLOR honoured), plain lines
otherwise. The grid is refused by SGLang's real parser (preflight), so nothing launches."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import on_a_terminal

PY = sys.executable
COLOR = re.compile(rb"\x1b\[[0-9;]*(?:3[0-7]|38;[0-9;]+|9[0-7])m")
ARGS = ["sweep", "--axis", "attention-backend=trtlm_mha,flashinfr", "--", PY, "-m", "sglang.launch_server",
        "--model-path", "m", "--port", "39999"]

pytestmark = pytest.mark.sglang


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "LOGKIT_SESSIONS": str(tmp_path / "sessions"), "LOGKIT_GPU_ARCH": "SM120",
           "TERM": "xterm-256color", **extra}
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


def test_plain_lines_without_a_terminal(tmp_path: Path) -> None:
    r = subprocess.run([PY, "-m", "logkit", *ARGS], env=_env(tmp_path), capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert re.search(r"^\[1/2\] attention_backend=trtlm_mha: preflight: .*invalid choice", err, re.M)
    assert re.search(r"^\[2/2\] attention_backend=flashinfr: preflight", err, re.M)
    assert b"\x1b[" not in r.stderr + r.stdout
    assert "attention_backend=trtlm_mha" in r.stdout.decode()  # the ranking table


def test_a_terminal_gets_rich_colours_unless_no_color(tmp_path: Path) -> None:
    code, out = on_a_terminal([PY, "-m", "logkit", *ARGS], _env(tmp_path))
    assert code == 0, out.decode(errors="replace")
    assert b"[1/2]" in out and b"attention_backend=trtlm_mha" in out
    assert COLOR.search(out), "rich coloured the results on a terminal"
    code, out = on_a_terminal([PY, "-m", "logkit", *ARGS], _env(tmp_path / "nc", NO_COLOR="1"))
    assert code == 0 and b"[2/2]" in out
    assert not COLOR.search(out), "NO_COLOR is honoured"
