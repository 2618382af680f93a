"""logkit under faults, as real processes: SIGKILL at each point of a run, a full disk, hostile
output at full speed, a deaf server with grandchildren. Scenarios live in tests/scenarios.py
(bench/report.py runs them full size)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import scenarios

pytestmark = pytest.mark.slow  # fault injection: SIGKILL at each point, floods, deaf servers


@pytest.fixture
def session(sessions: Path) -> str:
    return scenarios.new_session(sessions)


@pytest.mark.parametrize("point", scenarios.KILL_POINTS)
def test_sigkill_at_each_point_loses_nothing(sessions: Path, session: str, tmp_path: Path, point: str) -> None:
    figures = scenarios.kill_run(sessions, session, point, rng=random.Random(point), work=tmp_path)
    assert figures["point"] == point


def test_sigkill_inside_the_outcome_write_leaves_a_torn_line_that_hurts_nothing(
        sessions: Path, session: str, tmp_path: Path) -> None:
    scenarios.kill_run(sessions, session, "outcome", rng=random.Random(3), work=tmp_path, torn=True, count=50)
    # The torn line is reported by file:line; the lines after it are whole and a new run still records.
    done = scenarios.logkit(sessions, "run", "--", "true")
    assert done.returncode == 0, done.stderr
    from logkit.store import Store

    result = Store(sessions).handle(session).read()
    assert len(result.problems) == 1 and "events.jsonl:" in str(result.problems[0])
    assert [e.status for e in result.events if e.kind == "outcome"] == ["abandoned", "exit_ok"]


def test_disk_full_keeps_the_child_and_its_terminal_output(sessions: Path, session: str) -> None:
    figures = scenarios.disk_full_run(sessions, session, limit=128 * 1024, lines_=20_000)
    assert figures["stored"] < figures["printed"]


def test_hostile_flood_is_stored_byte_exact_and_tail_stays_readable(sessions: Path, session: str,
                                                                    tmp_path: Path) -> None:
    figures = scenarios.flood_run(sessions, session, tmp_path, seconds=0.3)
    assert figures["bytes"] > 1_000_000


def test_deaf_server_with_double_forked_grandchild_leaves_nothing(sessions: Path, session: str) -> None:
    figures = scenarios.stubborn_run(sessions, session, grace=1.0)
    assert figures["processes"] == 4
