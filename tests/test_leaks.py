"""Issue 13's leak probes, each through real logkit processes and a real site build: nothing planted
reaches a file under sessions/, the site, or a captured terminal stream; no terminal escape from user
text reaches the terminal raw."""

from __future__ import annotations

from pathlib import Path

import pytest

import leak_probes

pytestmark = pytest.mark.slow  # every secret probe through real logkit processes


def test_secrets_within_the_patterns_take_no_side_door(sessions: Path, tmp_path: Path, sglang_args_cache: None) -> None:
    # a --api-key in `record attempt --cmd` (config diff), a key in a decide title (DECISIONS.tsv), in a
    # session title (session id, directory, URLs), and logkit's own stderr diff of a new --api-key
    result = leak_probes.within_patterns(sessions, tmp_path)
    assert result["leaked"] == [], result["leaked"]
    assert "redacted" in result["session"]


def test_secret_shapes_outside_the_first_table_are_redacted(sessions: Path, tmp_path: Path) -> None:
    result = leak_probes.outside_patterns(sessions, tmp_path)
    assert result["leaked"] == [], result["leaked"]


def test_a_log_path_outside_the_session_is_never_read(sessions: Path, tmp_path: Path) -> None:
    result = leak_probes.escaped_log_path(sessions, tmp_path)
    assert result["leaked"] == [], result["leaked"]


def test_terminal_escapes_in_user_text_are_shown_not_obeyed(sessions: Path, tmp_path: Path) -> None:
    result = leak_probes.terminal_escapes(sessions, tmp_path)
    assert result["leaked"] == [], result["leaked"]


def test_lines_paused_mid_way_store_no_secret(sessions: Path, tmp_path: Path) -> None:
    result = leak_probes.paused_lines(sessions, tmp_path, tries=4)
    assert result["leaked"] == [], result["leaked"]


def test_a_token_across_the_64k_cut_is_redacted(sessions: Path, tmp_path: Path) -> None:
    result = leak_probes.straddled_cut(sessions, tmp_path, tries=15)
    assert result["leaked"] == [], result["leaked"]
