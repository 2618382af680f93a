"""A build beside a running ``logkit run``: the build reads one snapshot of the index, so an attempt
appended while it runs is either wholly in the site or wholly absent (before the index, a build
failed with ``KeyError: '<session>/A41'`` in most tries: its facts and the events a session page
read later came from different moments of the file)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import kb_factory
import scenarios
from logkit.builder import generate

pytestmark = pytest.mark.slow  # real `logkit run` processes beside repeated builds


def test_repeated_builds_beside_a_running_logkit_run_never_fail(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    kb_factory.realistic(sessions)
    for i in range(10):  # more sessions than a build keeps in memory
        scenarios.new_session(sessions, f"a{i}")
    sid = scenarios.new_session(sessions, "busy")  # the current session: `logkit run` records there
    stop = threading.Event()
    runs: list[int] = []

    def loop() -> None:
        while not stop.is_set():
            child = "import sys\nfor i in range(20): print('line', i)\n"
            done = subprocess.run([*scenarios.LOGKIT, "run", "--label", f"r{len(runs)}", "--", sys.executable, "-c",
                                   child], capture_output=True, env=scenarios.env_for(sessions), timeout=120)
            runs.append(done.returncode)

    writers = [threading.Thread(target=loop) for _ in range(3)]
    for writer in writers:
        writer.start()
    try:
        deadline = time.monotonic() + 60
        builds = 0
        while builds < 10 and time.monotonic() < deadline:
            warnings: list[str] = []
            result = generate(sessions, tmp_path / "docs", warn=warnings.append)
            assert result.pages > 0
            assert not [w for w in warnings if "torn" not in w], warnings  # a torn last line is named, nothing else
            builds += 1
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert builds >= 3 and len(runs) >= 2 and set(runs) == {0}, (builds, runs)
    # what the last build saw is on its session page; the next build shows every run
    generate(sessions, tmp_path / "docs")
    page = (tmp_path / "docs" / "sessions" / sid / "index.md").read_text()
    assert f"A{len(runs)} " in page
