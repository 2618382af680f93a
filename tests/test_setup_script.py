"""scripts/setup.sh as a real process in a scratch copy: it says what it installs, and it never
calls apt-get without root (a stand-in pip, id and apt-get record what they were asked to do)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import REPO


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def _scratch(tmp_path: Path, uid: int) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "setup.sh", root / "scripts" / "setup.sh")
    (root / ".venv" / "bin").mkdir(parents=True)
    calls = tmp_path / "calls.log"
    _stub(root / ".venv" / "bin" / "python", f'echo "pip $*" >> {calls}')  # stands in for the venv's pip
    tools = tmp_path / "bin"
    tools.mkdir()
    _stub(tools / "id", f'[ "$1" = "-u" ] && echo {uid} || echo "uid={uid}"')
    _stub(tools / "apt-get", f'echo "apt-get $*" >> {calls}')
    # only the basic tools, so no chromium, chromedriver or sudo is found
    for tool in ("bash", "sh", "printf", "dirname", "cat", "env"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, tools / tool)
    env = {"PATH": str(tools), "HOME": str(tmp_path), "PYTHON": str(root / ".venv" / "bin" / "python")}
    return root, calls, env


def test_setup_says_what_it_installs_and_needs_root_for_apt(tmp_path: Path) -> None:
    root, calls, env = _scratch(tmp_path, uid=1000)
    done = subprocess.run(["bash", str(root / "scripts" / "setup.sh"), "--test"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said = done.stderr
    assert "setup: installing logkit (editable)" in said and "setup: installing SGLang 0.5.23 lean" in said
    assert "setup: installing SGLang's benchmark client's packages" in said
    assert said.count("done in") == 3 and "needs root" in said and "sudo apt-get install -y chromium chromium-driver" in said
    log = calls.read_text()
    assert "pip --disable-pip-version-check -q install -e .[test,mcp]" in log and "apt-get" not in log
    assert "install --no-deps --upgrade --target .venv/sglang-bench-client -r requirements/sglang-bench-client.txt" in log


def test_setup_as_root_installs_chromium_with_apt(tmp_path: Path) -> None:
    root, calls, env = _scratch(tmp_path, uid=0)
    done = subprocess.run(["bash", str(root / "scripts" / "setup.sh"), "--test"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "installing Debian's chromium and chromium-driver with apt-get" in done.stderr
    assert "apt-get install -y -qq chromium chromium-driver" in calls.read_text()
