"""A verdict cites only attempts that tested its hypothesis, and changing one records what it replaced;
`hypothesis list`, `status` and the site agree on which verdict stands (issue 19). Real `python -m
logkit` processes on real session files; the site part is a real build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logkit.events import Verdict
from logkit.reasoning.hypotheses import current_verdict

SRC = ["--reconstructed", "test account"]

pytestmark = pytest.mark.usefixtures("sglang_args_cache")


def _ok(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _two_hypotheses(logkit) -> None:  # type: ignore[no-untyped-def]
    _ok(logkit("record", "session", "verdicts", "--id", "s1", *SRC, "--at", "2026-11-14T09:00:00Z"))
    _ok(logkit("hypothesis", "add", "flashinfer_cutlass MoE works on SM120"))
    _ok(logkit("hypothesis", "add", "triton MoE works on SM120"))
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend flashinfer_cutlass",
               "--status", "ready", "--tests", "H1", *SRC, "--at", "2026-11-14T09:01:00Z"))
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend triton",
               "--status", "arch_mismatch", "--tests", "H2", *SRC, "--at", "2026-11-14T09:02:00Z"))
    _ok(logkit("record", "attempt", "--cmd", "nvidia-smi", "--status", "exit_ok", *SRC, "--at", "2026-11-14T09:03:00Z"))


def test_a_verdict_refuses_evidence_that_never_tested_the_hypothesis(logkit, sessions: Path) -> None:
    _two_hypotheses(logkit)
    assert _ok(logkit("hypothesis", "confirm", "H1", "--evidence", "A1")) == "H1 confirmed by A1"
    # A2 tested H2, A3 tested nothing: citing either against H1 used to flip the verdict silently.
    bad = logkit("hypothesis", "refute", "H1", "--evidence", "A2")
    assert bad.returncode == 2
    assert "A2 did not test H1: it tested H2" in bad.stderr and "cite an attempt that tested it (A1)" in bad.stderr
    bad = logkit("hypothesis", "refute", "H1", "--evidence", "A1,A3")
    assert bad.returncode == 2 and "A3 did not test H1: it tested no hypothesis" in bad.stderr
    bad = logkit("hypothesis", "refute", "H1", "--evidence", "s1/A2")
    assert bad.returncode == 2 and "s1/A2 did not test H1" in bad.stderr
    rows = json.loads(_ok(logkit("hypothesis", "list", "--json")))
    assert (rows[0]["status"], rows[0]["evidence"], rows[0]["replaces"]) == ("confirmed", ["A1"], None)
    events = [json.loads(x) for x in (sessions / "s1" / "events.jsonl").read_text().splitlines()]
    assert [e["verdict"] for e in events if e["kind"] == "verdict"] == ["confirmed"]


def test_changing_a_verdict_records_what_it_replaced(logkit, sessions: Path) -> None:
    _two_hypotheses(logkit)
    _ok(logkit("hypothesis", "confirm", "H1", "--evidence", "A1", "--at", "2026-11-14T10:00:00Z"))
    out = _ok(logkit("hypothesis", "refute", "H1", "--because", "a later driver broke it", "--at", "2026-11-14T11:00:00Z"))
    assert out == "H1 refuted (replaces confirmed by A1 on 2026-11-14 10:00)"
    events = [json.loads(x) for x in (sessions / "s1" / "events.jsonl").read_text().splitlines()]
    first, second = [e for e in events if e["kind"] == "verdict"]
    assert "replaces" not in first and second["replaces"] == first["id"]
    data = json.loads(_ok(logkit("hypothesis", "confirm", "H1", "--evidence", "A1", "--json",
                                 "--at", "2026-11-14T12:00:00Z")))
    assert data["replaces"]["verdict"] == "refuted" and data["replaces"]["id"] == second["id"]
    line = _ok(logkit("hypothesis", "list")).splitlines()[0]
    assert line.startswith("H1   confirmed") and line.endswith("by A1 (was refuted)")


def test_current_verdict_is_the_latest_unreplaced_one() -> None:
    """One rule: a verdict another one replaces never stands, whatever its time; otherwise the latest."""
    from datetime import UTC, datetime

    def v(vid: str, hour: int, verdict: str, replaces: str | None = None) -> Verdict:
        return Verdict(id=vid, session="s", ts=datetime(2026, 1, 1, hour, tzinfo=UTC), hypothesis="H1",
                       verdict=verdict, replaces=replaces)

    a, b = v("a", 10, "confirmed"), v("b", 9, "refuted", replaces="a")  # recorded with an earlier --at
    assert current_verdict([a, b]) is b
    assert current_verdict([a, v("c", 11, "refuted")]).id == "c"  # an old session: no replaces, latest wins
    assert current_verdict([]) is None


@pytest.mark.slow  # a real site build
def test_status_list_and_site_agree_on_the_verdict_that_stands(logkit, sessions: Path, tmp_path: Path) -> None:
    _two_hypotheses(logkit)
    _ok(logkit("hypothesis", "refute", "H2", "--evidence", "A2", "--at", "2026-11-14T10:00:00Z"))
    # recorded later, stamped earlier: it still replaces the refutation
    _ok(logkit("hypothesis", "inconclusive", "H2", "--evidence", "A2", "--because", "driver", "--at", "2026-11-14T09:30:00Z"))
    rows = {r["id"]: r for r in json.loads(_ok(logkit("hypothesis", "list", "--json")))}
    assert rows["H2"]["status"] == "inconclusive" and rows["H2"]["replaces"]["verdict"] == "refuted"
    status = json.loads(_ok(logkit("status", "--json")))
    assert [h["id"] for h in status["hypotheses"]] == ["H1"]  # H2 is closed
    r = logkit("build", "--out", str(tmp_path / "out"), "--docs", str(tmp_path / "docs"), cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "docs" / "sessions" / "s1" / "index.md").read_text(encoding="utf-8")
    assert "**H2 inconclusive (replaces refuted)**" in page and "**H2 refuted**" in page
