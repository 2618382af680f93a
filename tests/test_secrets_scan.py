"""Tokens planted in the environment, flags, URLs, the child's output and the reasoning commands reach no
file under sessions/ nor the built site; planted HTML/Markdown shows as text and no page loads a network
host."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios

pytestmark = pytest.mark.slow  # every planted secret through real processes


def test_planted_secrets_and_injections_reach_no_file(sessions: Path, tmp_path: Path) -> None:
    figures = scenarios.secrets_and_site_scan(sessions, tmp_path)
    assert figures["pages"] > 3 and figures["files_scanned"] > figures["pages"]
