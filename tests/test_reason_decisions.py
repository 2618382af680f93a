"""Decision ids: unique across the store, and two hosts' collisions surfaced by a real git merge."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from logkit.reasoning.decisions import parse_option
from logkit.store import Store

SRC = ["--reconstructed", "test account"]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}



pytestmark = pytest.mark.usefixtures("sglang_args_cache")

def _ok(result) -> str:
    assert result.returncode == 0, result.stderr + result.stdout
    return result.stdout.strip()


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, timeout=60)
    if check:
        assert done.returncode == 0, done.stderr + done.stdout
    return done


def test_parse_option_reads_name_reason_and_cited_ids() -> None:
    option = parse_option("flashinfer_trtllm: SM100-only kernels (H2, A4, 2026-11-14-glm5/A4)")
    assert (option.name, option.why_not, option.chosen) == ("flashinfer_trtllm", "SM100-only kernels", False)
    assert option.hypotheses == ["H2"] and option.attempts == ["A4", "2026-11-14-glm5/A4"]
    plain = parse_option("triton: the fallback (it is slower)")
    assert plain.why_not == "the fallback (it is slower)" and plain.attempts == []  # not ids: kept as words
    assert parse_option("flashinfer_cutlass", {"flashinfer_cutlass"}).chosen


def test_decide_allocates_across_sessions_and_validates(logkit, sessions: Path) -> None:
    _ok(logkit("record", "session", "one", "--id", "one", *SRC))
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend flashinfer_trtllm",
               "--status", "arch_mismatch", *SRC))
    _ok(logkit("hypothesis", "add", "trtllm works"))
    first = _ok(logkit("decide", "Use flashinfer_cutlass for MoE on SM120", "--context", "SM120 bring-up",
                       "--option", "flashinfer_trtllm: SM100-only kernels (H1, A1)", "--chosen", "flashinfer_cutlass",
                       "--evidence", "A1"))
    assert first == "DR-0001"
    _ok(logkit("record", "session", "two", "--id", "two", *SRC))
    assert _ok(logkit("decide", "Revisit", "--supersedes", "DR-0001", "--status", "proposed")) == "DR-0002"
    bad = logkit("decide", "x", "--supersedes", "DR-0042")
    assert bad.returncode == 2 and "no decision DR-0042" in bad.stderr
    bad = logkit("decide", "x", "--evidence", "A3")
    assert bad.returncode == 2 and "no attempt A3 in session two" in bad.stderr
    bad = logkit("decide", "x", "--option", "a: b (H7)")
    assert bad.returncode == 2 and "no hypothesis H7" in bad.stderr
    events = Store(sessions).handle("one").read().events
    decision = next(e for e in events if e.kind == "decision")
    assert [(o.name, o.chosen, o.why_not) for o in decision.options] == [
        ("flashinfer_trtllm", False, "SM100-only kernels"), ("flashinfer_cutlass", True, None)]
    ledger = (sessions / "DECISIONS.tsv").read_text().splitlines()
    assert ledger[-2:] == ["DR-0001\tone\tUse flashinfer_cutlass for MoE on SM120", "DR-0002\ttwo\tRevisit"]
    assert _ok(logkit("decision", "check")) == "decision ids are unique and the ledger matches the sessions"


def test_two_hosts_collide_in_a_git_merge_and_renumber_fixes_it(logkit, tmp_path: Path) -> None:
    host_a, host_b = tmp_path / "a", tmp_path / "b"
    host_a.mkdir()
    _git(host_a, "init", "-q", "-b", "main")
    env_a = {"LOGKIT_SESSIONS": str(host_a / "sessions")}
    _ok(logkit("record", "session", "base", "--id", "base", *SRC, env=env_a))
    _ok(logkit("decide", "Baseline", env=env_a))
    _git(host_a, "add", "sessions/base/events.jsonl", "sessions/DECISIONS.tsv")
    _git(host_a, "commit", "-qm", "base")
    _git(tmp_path, "clone", "-q", str(host_a), str(host_b))
    env_b = {"LOGKIT_SESSIONS": str(host_b / "sessions")}
    # Both hosts record a decision at once: each hands out DR-0002.
    _ok(logkit("record", "session", "on a", "--id", "from-a", *SRC, "--at", "2026-11-14T09:00:00Z", env=env_a))
    assert _ok(logkit("decide", "A's choice", "--at", "2026-11-14T09:00:00Z", env=env_a)) == "DR-0002"
    _ok(logkit("record", "session", "on b", "--id", "from-b", *SRC, "--at", "2026-11-14T10:00:00Z", env=env_b))
    assert _ok(logkit("decide", "B's choice", "--at", "2026-11-14T10:00:00Z", env=env_b)) == "DR-0002"
    for host, sid in ((host_a, "from-a"), (host_b, "from-b")):
        _git(host, "add", f"sessions/{sid}/events.jsonl", "sessions/DECISIONS.tsv")
        _git(host, "commit", "-qm", sid)
    _git(host_a, "fetch", "-q", str(host_b), "main")
    merge = _git(host_a, "merge", "FETCH_HEAD", "-m", "merge b", check=False)
    assert merge.returncode != 0 and "CONFLICT" in merge.stdout and "DECISIONS.tsv" in merge.stdout
    check = logkit("decision", "check", env=env_a)
    assert check.returncode == 1 and "unresolved git merge conflict marker" in check.stdout
    refused = logkit("decide", "while unmerged", "--session", "from-a", env=env_a)
    assert refused.returncode == 2 and "DECISIONS.tsv:" in refused.stderr and "unresolved git merge conflict" in refused.stderr
    # Resolve the way the ledger's header says: keep both sides' lines.
    ledger = host_a / "sessions" / "DECISIONS.tsv"
    kept = [line for line in ledger.read_text().splitlines() if not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
    ledger.write_text("\n".join(kept) + "\n")
    _git(host_a, "add", "sessions/DECISIONS.tsv")
    _git(host_a, "commit", "-qm", "merge b")
    check = logkit("decision", "check", env=env_a)
    assert check.returncode == 1
    assert "DR-0002: used by 2 decisions" in check.stdout
    assert "logkit decision renumber from-b DR-0002" in check.stdout  # the later one moves
    assert _ok(logkit("decision", "renumber", "from-b", "DR-0002", env=env_a)).startswith("from-b: DR-0002 is now DR-0003")
    assert _ok(logkit("decision", "check", env=env_a)).startswith("decision ids are unique")
    rows = json.loads(_ok(logkit("decision", "list", "--json", env=env_a)))
    assert [(r["id"], r["session"]) for r in rows] == [("DR-0001", "base"), ("DR-0002", "from-a"), ("DR-0003", "from-b")]
    result = Store(host_a / "sessions").handle("from-b").read()
    assert not result.problems and [e.kind for e in result.events] == ["session", "decision"]


@pytest.mark.parametrize("text", ["no-colon-name", "name: reason"])
def test_parse_option_without_ids(text: str) -> None:
    option = parse_option(text)
    assert option.hypotheses == [] and option.attempts == []
