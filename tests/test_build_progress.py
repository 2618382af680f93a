"""``logkit build`` shows its stages with counts on a terminal (rich; NO_COLOR honoured), nothing without one.

Real ``logkit build`` processes over the shipped sessions: on a pseudo-terminal (``os.openpty``) and
with plain pipes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, on_a_terminal

pytestmark = pytest.mark.slow  # real mkdocs builds

PY = sys.executable
STAGES = ("load", "frames", "charts", "pages", "sessions", "svg", "mkdocs")


def _args(tmp_path: Path) -> list[str]:
    return [PY, "-m", "logkit", "--sessions", str(REPO / "sessions"), "build", "--out", str(tmp_path / "out"),
            "--docs", str(tmp_path / "docs")]


def test_stages_with_counts_on_a_terminal_in_colour_unless_no_color(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm-256color"}
    code, out = on_a_terminal(_args(tmp_path / "a"), env, cwd=REPO)
    text = out.decode(errors="replace")
    assert code == 0, text
    for stage in STAGES:
        assert f"done {stage}" in text.replace("\x1b[0m", "").replace("\x1b[32m", ""), (stage, text[-2000:])
    assert "3 sessions" in text and "pages into" in text
    assert "\x1b[32m" in text  # green "done"
    code, out = on_a_terminal(_args(tmp_path / "b"), {**env, "NO_COLOR": "1"}, cwd=REPO)
    assert code == 0 and b"done mkdocs" in out
    assert b"\x1b[32m" not in out  # no colour (NO_COLOR leaves styles such as dim)


def test_quiet_without_a_terminal(tmp_path: Path) -> None:
    r = subprocess.run(_args(tmp_path), capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert "done" not in r.stderr and "\x1b[" not in r.stderr + r.stdout
    assert r.stdout.startswith("built ") and r.stdout.count("\n") == 1
