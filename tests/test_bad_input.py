"""Hand-edited and truncated events.jsonl: every bad line is named by file:line, the rest still builds."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios

pytestmark = pytest.mark.slow  # real MkDocs build


def test_hand_edited_session_gets_clear_messages_and_the_site_still_builds(sessions: Path, tmp_path: Path) -> None:
    figures = scenarios.hand_edited_build(sessions, tmp_path)
    assert figures["bad_lines"] == 8
