"""Garbage detection of smoke replies, and startup timelines read from real SGLang logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from logkit.capture.sglang.smoke import degenerate
from logkit.capture.sglang.timeline import Timeline

LOGS = Path(__file__).parent / "fixtures" / "logs"


@pytest.mark.parametrize(
    ("reply", "logprobs", "why"),
    [
        ("!!!!!!!!!!!!!!!!", None, "repeated"),
        ("", None, "empty"),
        ("   ", None, "empty"),
        (None, None, "empty"),
        ("the the the the the the the the", None, "loop"),
        ("Paris is nice. Paris is nice. Paris is nice. Paris is nice.", None, "loop"),
        ("8\ufffd\ufffd", None, "replacement"),
        ("3 + 5 = 8.", [-0.1, float("nan")], "NaN"),
    ],
)
def test_degenerate_replies(reply: str | None, logprobs: list[float] | None, why: str) -> None:
    reason = degenerate(reply, logprobs)
    assert reason is not None and why in reason


@pytest.mark.parametrize("reply", ["3 + 5 = 8.", "The capital of France is Paris.", "Yes!!! It works.", "ok"])
def test_sensible_replies_pass(reply: str) -> None:
    assert degenerate(reply, [-0.2, -1.5]) is None


def test_timeline_of_a_2024_log() -> None:
    tl = Timeline()
    tl.feed((LOGS / "docs-notebook-024.log").read_bytes(), 1)
    by = {m.stage: m for m in tl.milestones}
    assert by["weights_loading"].detail["avail_mem_gb"] == 78.59 and by["weights_loading"].rank == "TP0"
    assert by["weights_loaded"].detail["avail_mem_gb"] == 63.50
    assert by["memory_pool"].detail["avail_mem_gb"] == 8.37
    assert "cuda_graph_capture" in by and by["ready"].line == 26
    ms = tl.with_seconds(None)
    assert [m.seconds for m in ms if m.stage == "ready"] == [12.0]  # Load weight begin 09:18:01 -> ready 09:18:13


def test_timeline_per_rank() -> None:
    tl = Timeline()
    tl.feed((LOGS / "nan-sglang-1953.log").read_bytes(), 1)
    pools = [m for m in tl.milestones if m.stage == "memory_pool"]
    assert {m.rank for m in pools} == {"TP0", "TP1"}
    assert {m.rank: m.detail["avail_mem_gb"] for m in pools} == {"TP1": 4.58, "TP0": 4.14}
    assert any(m.stage == "http_listening" and m.detail["url"] == "http://127.0.0.1:30000" for m in tl.milestones)
