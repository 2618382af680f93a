"""Bad input gets a clear error (exit 2, what and the fix, no traceback) and loses nothing: the second
adversarial pass's probes (issue 13), each as the real command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from logkit.capture.sglang.bench import _number
from logkit.store import Store

SRC = ["--reconstructed", "test account"]


def _refused(done, *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in done.stderr, (needle, done.stderr)


@pytest.fixture
def session(logkit, sessions: Path) -> str:
    assert logkit("record", "session", "errs", "--id", "errs", *SRC).returncode == 0
    assert logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --tp 8", "--status", "exit_ok",
                  *SRC).returncode == 0
    return "errs"


def _append(sessions: Path, sid: str, *events: dict) -> None:
    with open(sessions / sid / "events.jsonl", "a") as fh:
        for n, event in enumerate(events):
            fh.write(json.dumps({"v": 1, "id": f"hand{n}{os.urandom(4).hex()}", "session": sid,
                                 "ts": "2026-11-14T00:00:00Z", **event}) + "\n")


def test_a_second_outcome_and_references_to_nothing_are_named(logkit, sessions: Path, session: str) -> None:
    _append(sessions, session,
            {"kind": "outcome", "attempt": "A1", "status": "oom"},
            {"kind": "metric", "name": "output_throughput", "value": 1.0, "attempt": "A404"},
            {"kind": "metric", "name": "output_throughput", "value": 2.0, "server_attempt": "A404"},
            {"kind": "decision", "decision_id": "DR-0009", "title": "t", "evidence": ["A404", "../../etc/A1",
                                                                                       "errs/A9", "elsewhere/A1"]})
    result = Store(sessions).read_all()[session]
    messages = " | ".join(str(p) for p in result.problems)
    assert "a second outcome of A1 (line 3 has its outcome)" in messages, messages
    assert "metric of A404, which no earlier line records" in messages
    assert "metric of server A404" in messages
    for ref in ("A404", "../../etc/A1", "errs/A9"):
        assert f"decision cites {ref}," in messages, (ref, messages)
    assert "elsewhere/A1" not in messages  # a session not here may be on another host: shown as given
    assert [e.status for e in result.events if e.kind == "outcome"] == ["exit_ok"]  # the first one stands
    assert [e.decision_id for e in result.events if e.kind == "decision"] == ["DR-0009"]  # kept, named


@pytest.mark.slow
def test_todo_import_of_deeply_nested_json(logkit, session: str, tmp_path: Path) -> None:
    todo = tmp_path / "todo.json"
    todo.write_text("[" * 200_000 + "]" * 200_000)
    _refused(logkit("todo", "import", str(todo)), f"{todo}: JSON nested too deeply", "fix:")


@pytest.mark.slow
@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_at_the_ends_of_the_date_range(logkit, session: str, at: str) -> None:
    _refused(logkit("hypothesis", "add", "h", "--at", at), "outside the range of UTC times", "fix:")
    _refused(logkit("note", "n", env={"LOGKIT_NOW": at}), "$LOGKIT_NOW", "outside the range")


@pytest.mark.parametrize("flags,needle", [
    (["--grace", "nan"], "finite number of seconds"),
    (["--grace", "-1"], "0 or more"),
    (["--grace", "inf"], "finite number of seconds"),
    (["--hang-timeout", "-5"], "more than 0"),
    (["--hang-timeout", "0"], "more than 0"),
    (["--hang-timeout", "soon"], "not a number of seconds"),
])
@pytest.mark.slow
def test_run_refuses_bad_durations_before_running(logkit, session: str, tmp_path: Path, flags: list[str],
                                                  needle: str) -> None:
    marker = tmp_path / "ran"
    _refused(logkit("run", *flags, "--", "touch", str(marker)), needle)
    assert not marker.exists()


@pytest.mark.slow
def test_run_json_to_a_path_that_cannot_be_written(logkit, session: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _refused(logkit("run", "--json", str(tmp_path / "no" / "such" / "dir" / "x.json"), "--", "touch", str(marker)),
             "--json", "cannot write there", "fix:")
    assert not marker.exists(), "a --json that cannot be written must be refused before the command runs"
    # The directory vanishes while the command runs: its exit status stands, the JSON goes to stderr.
    gone = tmp_path / "gone"
    gone.mkdir()
    done = logkit("run", "--json", str(gone / "x.json"), "--", "rm", "-r", str(gone))
    assert done.returncode == 0, done.stderr
    assert "cannot write --json" in done.stderr and '"exit_status": 0' in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_build_out_or_docs_a_file(logkit, session: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("x")
    _refused(logkit("build", "--out", str(plain), "--docs", str(tmp_path / "docs")), f"--out {plain} is a file")
    _refused(logkit("build", "--docs", str(plain), "--out", str(tmp_path / "out")), f"--docs {plain} is a file")


@pytest.mark.slow
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_metric_must_be_finite(logkit, sessions: Path, session: str, value: str) -> None:
    _refused(logkit("record", "metric", "--attempt", "A1", *SRC, "--", "output_throughput", value), "finite number")
    _append(sessions, session, {"kind": "metric", "name": "output_throughput", "value": float(value), "attempt": "A1"})
    result = Store(sessions).handle(session).read()
    assert not [e for e in result.events if e.kind == "metric"]  # a hand-edited NaN is named and skipped
    assert any(p.field == "metric.value" for p in result.problems), [str(p) for p in result.problems]
    assert _number(float(value)) is None and _number(value) is None  # a benchmark's NaN/inf figure is dropped
