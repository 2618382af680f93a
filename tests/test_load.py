"""Load: 16 concurrent `logkit run` processes on one session; many events into frames.

Small here (one run per writer, 20,000 events); bench/report.py runs a full minute and a million."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios

pytestmark = pytest.mark.slow  # sixteen concurrent runs, many events


def test_sixteen_concurrent_runs_lose_and_tear_nothing(sessions: Path) -> None:
    sid = scenarios.new_session(sessions)
    figures = scenarios.concurrent_runs(sessions, sid, workers=16, runs=1, lines_per_run=200)
    assert figures["runs"] == 16 and figures["events"] == 1 + 16 * 3


def test_many_events_load_into_frames(tmp_path: Path) -> None:
    figures = scenarios.frames_run(tmp_path / "big", 20_000)
    assert figures["events"] >= 20_000
