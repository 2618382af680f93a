"""The outcome classifier on the corpus of real SGLang logs, and its decision rules."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from logkit.capture.sglang.outcomes import Classifier, classify_file, classify_text, load_signatures
from logkit.events import OUTCOME_STATUSES

LOGS = Path(__file__).parent / "fixtures" / "logs"
MANIFEST = tomllib.loads((LOGS / "manifest.toml").read_text())["log"]


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_corpus_log_gets_expected_class(entry: dict) -> None:
    got = classify_file(LOGS / entry["file"])
    assert got.status == entry["expected"], got.label
    if entry["expected"] != "ready":
        assert got.evidence, "a failure must come with the lines that show it"


def test_corpus_is_real_and_complete() -> None:
    assert len(MANIFEST) >= 30
    files = {p.name for p in LOGS.glob("*.log")}
    assert files == {e["file"] for e in MANIFEST}
    for e in MANIFEST:
        assert e["source"].startswith(("https://", "local:")), e
        assert e["expected"] in OUTCOME_STATUSES


def test_signature_table_rows_are_valid() -> None:
    sigs = load_signatures()
    assert len({s.id for s in sigs}) == len(sigs)
    assert {s.status for s in sigs} <= set(OUTCOME_STATUSES)
    assert all(s.label and s.source for s in sigs)


def test_streaming_in_pieces_equals_whole_file() -> None:
    raw = (LOGS / "nan-sglang-1953.log").read_bytes() + (LOGS / "docs-notebook-026.log").read_bytes()
    whole = classify_text(raw)
    clf = Classifier()
    lines = [ln + b"\n" for ln in raw.split(b"\n")[:-1]]  # \n only: progress bars keep their \r
    for i in range(0, len(lines), 3):
        clf.feed(b"".join(lines[i : i + 3]), i + 1)
    piecewise = clf.decide(finished=False)
    assert (piecewise.status, [e.line for e in piecewise.evidence]) == (whole.status, [e.line for e in whole.evidence])
    assert piecewise.status == "nan" and piecewise.ready  # NaN after the ready line: nan, ready recorded


def test_uvicorn_running_is_not_readiness() -> None:
    text = (LOGS / "nan-sglang-1953.log").read_text()
    head = text.split("[2024-11-08 04:43:59]")[0]
    assert "Uvicorn running" in head
    assert not classify_text(head).ready


def test_healthy_log_words_are_not_failures() -> None:
    line = "[2025-01-01 00:00:00] Ignore import error when loading sglang.srt.models.mllama4: No module named 'x'\n"
    assert classify_text(line).status == "abandoned"


@pytest.mark.parametrize(
    ("kw", "status"),
    [
        ({"exit_code": 0}, "exit_ok"),
        ({"exit_code": None, "signal": 9}, "killed"),
        ({"exit_code": None, "signal": 15}, "interrupted"),
        ({"exit_code": 1}, "other_crash"),
        ({"exit_code": None, "signal": 15, "stopped_by_logkit": True}, "interrupted"),
        ({"exit_code": None, "signal": 15, "stopped_by_logkit": True, "http_ready": True}, "ready"),
        ({"exit_code": None, "signal": 15, "stopped_by_logkit": True, "hang": "no output for 5s"}, "hang"),
    ],
)
def test_decide_without_signatures(kw: dict, status: str) -> None:
    assert Classifier().decide(**kw).status == status


def test_cause_beats_final_kill() -> None:
    raw = (LOGS / "warmup-sglang-16855.log").read_bytes()
    clf = Classifier()
    clf.feed(raw, 1)
    assert clf.decide(exit_code=None, signal=9).status == "other_crash"
    oom = Classifier()
    oom.feed((LOGS / "oom-sglang-4547.log").read_bytes() + b"Killed\n", 1)
    assert oom.decide(exit_code=137).status == "oom"
