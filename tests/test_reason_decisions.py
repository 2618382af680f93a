"""Decision ids: permanent from the moment they are printed, across hosts, real git merges and old stores."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from logkit.reasoning.decisions import normalize_id, parse_option, permanent_id
from logkit.store import Store

REPO = Path(__file__).resolve().parents[1]
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


@pytest.mark.slow
def test_decide_draws_permanent_ids_and_validates(logkit, sessions: Path) -> None:
    _ok(logkit("record", "session", "one", "--id", "one", *SRC))
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend flashinfer_trtllm",
               "--status", "arch_mismatch", *SRC))
    _ok(logkit("hypothesis", "add", "trtllm works"))
    first = _ok(logkit("decide", "Use flashinfer_cutlass for MoE on SM120", "--context", "SM120 bring-up",
                       "--option", "flashinfer_trtllm: SM100-only kernels (H1, A1)", "--chosen", "flashinfer_cutlass",
                       "--evidence", "A1"))
    events = Store(sessions).handle("one").read().events
    decision = next(e for e in events if e.kind == "decision")
    # drawn from the record's own random id: DR- and its first five Crockford base32 digits
    assert re.fullmatch(r"DR-[0-9A-HJKMNP-TV-Z]{5}", first) and first == decision.decision_id
    assert first == permanent_id(decision.id)
    _ok(logkit("record", "session", "two", "--id", "two", *SRC))
    second = _ok(logkit("decide", "Revisit", "--supersedes", first.lower(), "--status", "proposed"))
    assert second != first
    revisit = next(e for e in Store(sessions).handle("two").read().events if e.kind == "decision")
    assert revisit.supersedes == first  # stored in canonical form
    bad = logkit("decide", "x", "--supersedes", "DR-0042")
    assert bad.returncode == 2 and "no decision DR-0042" in bad.stderr
    bad = logkit("decide", "x", "--evidence", "A3")
    assert bad.returncode == 2 and "no attempt A3 in session two" in bad.stderr
    bad = logkit("decide", "x", "--option", "a: b (H7)")
    assert bad.returncode == 2 and "no hypothesis H7" in bad.stderr
    bad = logkit("decide", "x", "--id", "DR-0007")
    assert bad.returncode == 2 and "--reconstructed" in bad.stderr  # only a reconstructed record keeps an old id
    bad = logkit("decide", "x", "--id", first, *SRC)
    assert bad.returncode == 2 and f"--id {first} is taken" in bad.stderr
    assert [(o.name, o.chosen, o.why_not) for o in decision.options] == [
        ("flashinfer_trtllm", False, "SM100-only kernels"), ("flashinfer_cutlass", True, None)]
    ledger = (sessions / "DECISIONS.tsv").read_text().splitlines()
    assert ledger[-2:] == [f"{first}\tone\tUse flashinfer_cutlass for MoE on SM120", f"{second}\ttwo\tRevisit"]
    assert (sessions / ".gitattributes").read_text() == "DECISIONS.tsv merge=union\n"
    assert _ok(logkit("decision", "check")) == "decision ids are unique and the ledger matches the sessions"
    listed = json.loads(_ok(logkit("decision", "list", "--json")))
    # a superseded record is listed as superseded, with what replaced it (it was recorded as accepted)
    assert [(r["id"], r["status"], r["recorded_status"], r["superseded_by"]) for r in listed] == [
        (first, "superseded", "accepted", [second]), (second, "proposed", "proposed", [])]
    assert f"[superseded by {second}]" in _ok(logkit("decision", "list"))


def test_known_ids_sees_a_decision_another_process_appended_after_the_index_was_read(logkit, sessions: Path) -> None:
    from logkit.reasoning.ledger import known_ids

    _ok(logkit("record", "session", "one", "--id", "one", *SRC))
    store = Store(sessions)
    assert known_ids(store) == set()  # the index is built and up to date here
    first = _ok(logkit("decide", "Use triton", "--context", "c"))  # another process appends a decision
    (sessions / "DECISIONS.tsv").unlink()  # so only the session's line can name it
    assert known_ids(store) == {first}  # the index is refreshed before it is queried
    second = _ok(logkit("decide", "Use cutlass", "--context", "c"))
    assert second != first and known_ids(store) == {first, second}


def test_permanent_id_lengthens_on_a_clash_and_never_looks_sequential() -> None:
    event_id = "0" * 8 + "f" * 24  # base32 0000007ZZZ...: lengthened until it is not all digits
    digits = permanent_id("d3adbeef" * 4)
    assert permanent_id("d3adbeef" * 4, {digits}) == digits + permanent_id("d3adbeef" * 4, {digits})[len(digits):]
    assert len(permanent_id("d3adbeef" * 4, {digits})) == len(digits) + 1
    assert permanent_id(event_id) == "DR-0000007Z"
    assert normalize_id("dr-7k3fq") == "DR-7K3FQ" and normalize_id("DR-1OIL") == "DR-1011" and normalize_id("A7") is None


@pytest.mark.slow
def test_two_hosts_decide_at_once_merge_and_every_citation_still_resolves(logkit, tmp_path: Path) -> None:
    """Two real git clones decide concurrently; citations printed before the merge resolve after it."""
    host_a, host_b = tmp_path / "a", tmp_path / "b"
    host_a.mkdir()
    _git(host_a, "init", "-q", "-b", "main")
    env_a = {"LOGKIT_SESSIONS": str(host_a / "sessions")}
    _ok(logkit("record", "session", "base", "--id", "base", *SRC, env=env_a))
    base = _ok(logkit("decide", "Baseline", env=env_a))
    (host_a / ".gitignore").write_text((REPO / ".gitignore").read_text())  # as in this repository
    _git(host_a, "add", ".gitignore", "sessions")
    _git(host_a, "commit", "-qm", "base")
    _git(tmp_path, "clone", "-q", str(host_a), str(host_b))
    env_b = {"LOGKIT_SESSIONS": str(host_b / "sessions")}
    # Both hosts record a decision at once, each citing it in a review the moment it is printed.
    _ok(logkit("record", "session", "on a", "--id", "from-a", *SRC, "--at", "2026-11-14T09:00:00Z", env=env_a))
    a_id = _ok(logkit("decide", "A's choice", "--supersedes", base, "--at", "2026-11-14T09:00:00Z", env=env_a))
    _ok(logkit("record", "session", "on b", "--id", "from-b", *SRC, "--at", "2026-11-14T10:00:00Z", env=env_b))
    b_id = _ok(logkit("decide", "B's choice", "--at", "2026-11-14T10:00:00Z", env=env_b))
    assert len({base, a_id, b_id}) == 3
    site = "https://kb.team.example/"
    cited_a = _ok(logkit("cite", a_id, "--site-url", site, env=env_a))
    cited_b = _ok(logkit("cite", b_id, "--site-url", site, env=env_b))
    assert cited_a == f"[{a_id}: A's choice]({site}decisions/{a_id}/)"
    for host, sid in ((host_a, "from-a"), (host_b, "from-b")):
        _git(host, "add", "sessions")
        _git(host, "commit", "-qm", sid)
    _git(host_a, "fetch", "-q", str(host_b), "main")
    merge = _git(host_a, "merge", "FETCH_HEAD", "-m", "merge b", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr  # the ledger merges by union: no conflict
    ledger = (host_a / "sessions" / "DECISIONS.tsv").read_text()
    assert f"{a_id}\tfrom-a\t" in ledger and f"{b_id}\tfrom-b\t" in ledger and "<<<<<<<" not in ledger
    assert _ok(logkit("decision", "check", env=env_a)) == "decision ids are unique and the ledger matches the sessions"
    # the citations made before the merge are exactly what cite prints after it
    assert _ok(logkit("cite", a_id, "--site-url", site, env=env_a)) == cited_a
    assert _ok(logkit("cite", b_id, "--site-url", site, env=env_a)) == cited_b
    rows = json.loads(_ok(logkit("decision", "list", "--json", env=env_a)))
    assert {(r["id"], r["session"], r["status"]) for r in rows} == {
        (base, "base", "superseded"), (a_id, "from-a", "accepted"), (b_id, "from-b", "accepted")}
    # and the built site has each page at the URL cited
    out = tmp_path / "out"
    built = logkit("build", "--docs", str(tmp_path / "docs"), "--out", str(out), "--strict", env=env_a, cwd=host_a)
    assert built.returncode == 0, built.stderr
    for did, title in ((a_id, "A&#39;s choice"), (b_id, "B&#39;s choice")):
        page = (out / "decisions" / did / "index.html").read_text()
        assert f"{did}: {title}" in page or f"{did}: {title.replace('&#39;', chr(39))}" in page


@pytest.mark.slow
def test_old_sequential_ids_from_two_hosts_still_read_and_resolve_after_renumber(logkit, tmp_path: Path) -> None:
    """A store from before permanent ids (both hosts handed out DR-0002) reads, checks, and keeps resolving."""
    root = tmp_path / "sessions"
    env = {"LOGKIT_SESSIONS": str(root)}
    for sid, at in (("from-a", "2026-11-14T09:00:00Z"), ("from-b", "2026-11-14T10:00:00Z")):
        _ok(logkit("record", "session", sid, "--id", sid, *SRC, "--at", at, env=env))
    # written the way older logkit wrote them: sequential ids, the ledger by hand
    for sid, title, at in (("from-a", "A's choice", "2026-11-14T09:00:00Z"), ("from-b", "B's choice", "2026-11-14T10:00:00Z")):
        event = {"v": 1, "id": uuid.uuid4().hex, "session": sid, "ts": at, "kind": "decision", "decision_id": "DR-0002",
                 "title": title, "status": "accepted"}
        with open(root / sid / "events.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(event) + "\n")
    (root / "DECISIONS.tsv").write_text("DR-0002\tfrom-a\tA's choice\nDR-0002\tfrom-b\tB's choice\n")
    assert not Store(root).handle("from-b").read().problems
    check = logkit("decision", "check", env=env)
    assert check.returncode == 1 and "DR-0002: used by 2 sessions' decisions" in check.stdout
    assert "logkit decision renumber from-b DR-0002" in check.stdout  # the later one gets a longer id
    # --strict refuses to publish a store with an id that names two records
    strict = logkit("build", "--docs", str(tmp_path / "d0"), "--out", str(tmp_path / "o0"), "--strict", env=env, cwd=tmp_path)
    assert strict.returncode == 2 and "DR-0002: used by 2 sessions" in strict.stderr
    moved = _ok(logkit("decision", "renumber", "from-b", "DR-0002", env=env))
    new_id = re.search(r"is now (DR-[0-9A-Z]+)", moved).group(1)
    assert _ok(logkit("decision", "check", env=env)) == "decision ids are unique and the ledger matches the sessions"
    assert f"DR-0002\tfrom-b\tB's choice\tmoved to {new_id}" in (root / "DECISIONS.tsv").read_text()
    # the old id still resolves to the record that kept it, and names where the other went
    kept = logkit("cite", "DR-0002", "--site-url", "https://kb.team.example/", env=env)
    assert kept.stdout.strip() == "[DR-0002: A's choice](https://kb.team.example/decisions/DR-0002/)"
    assert _ok(logkit("cite", new_id, "--site-url", "https://kb.team.example/", env=env)).startswith(f"[{new_id}: B's choice]")
    out = tmp_path / "out"
    _ok(logkit("build", "--docs", str(tmp_path / "docs"), "--out", str(out), "--strict", env=env, cwd=tmp_path))
    old_page = (out / "decisions" / "DR-0002" / "index.html").read_text()
    assert "This id also names" in old_page and f"../{new_id}/index.html" in old_page
    assert "B&#39;s choice" in (out / "decisions" / new_id / "index.html").read_text() or \
        "B's choice" in (out / "decisions" / new_id / "index.html").read_text()


@pytest.mark.slow
def test_an_id_that_moved_away_redirects_on_the_site(logkit, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    env = {"LOGKIT_SESSIONS": str(root)}
    _ok(logkit("record", "session", "s", "--id", "s", *SRC, env=env))
    _ok(logkit("decide", "Kept as reconstructed", "--id", "DR-0009", *SRC, env=env))
    new_id = re.search(r"is now (DR-[0-9A-Z]+)", _ok(logkit("decision", "renumber", "s", "DR-0009", env=env))).group(1)
    moved = logkit("cite", "DR-0009", "--site-url", "https://kb.team.example/", env=env)
    assert moved.returncode == 0 and moved.stdout.strip() == f"[{new_id}: Kept as reconstructed](https://kb.team.example/decisions/{new_id}/)"
    assert f"DR-0009 moved to {new_id}" in moved.stderr
    out = tmp_path / "out"
    _ok(logkit("build", "--docs", str(tmp_path / "docs"), "--out", str(out), "--strict", env=env, cwd=tmp_path))
    alias = (out / "decisions" / "DR-0009" / "index.html").read_text()
    assert f'<meta http-equiv="refresh" content="0; url=../{new_id}/index.html">' in alias


@pytest.mark.parametrize("text", ["no-colon-name", "name: reason"])
def test_parse_option_without_ids(text: str) -> None:
    option = parse_option(text)
    assert option.hypotheses == [] and option.attempts == []


def test_one_draft_recorded_twice_is_refused_and_check_names_a_shared_title(logkit, sessions: Path,
                                                                            tmp_path: Path) -> None:
    _ok(logkit("record", "session", "one", "--id", "one", *SRC))
    draft = tmp_path / "decision.toml"
    draft.write_text('session = "one"\ntitle = "Use flashinfer_cutlass for MoE on SM120"\n'
                     'decision = "pin it"\nchosen = ["flashinfer_cutlass"]\n')
    first = _ok(logkit("decide", "--from-file", str(draft)))
    again = logkit("decide", "--from-file", str(draft))
    assert again.returncode == 2
    assert f"{first} (one) already records this decision" in again.stderr and f"--supersedes {first}" in again.stderr
    assert len([e for e in Store(sessions).handle("one").read().events if e.kind == "decision"]) == 1
    assert _ok(logkit("decision", "check")) == "decision ids are unique and the ledger matches the sessions"
    # the same title with another body is recorded, and `decision check` names the pair
    second = _ok(logkit("decide", "Use flashinfer_cutlass for MoE on SM120", "--decision", "pin it everywhere"))
    checked = logkit("decision", "check")
    assert checked.returncode == 1
    assert f"{first}, {second}: 2 accepted decisions share the title" in checked.stdout
    assert f"--status deprecated --supersedes {second}" in checked.stdout
    # retiring the later one, as the fix says, leaves nothing to report
    _ok(logkit("decide", f"Duplicate of {first}", "--status", "deprecated", "--supersedes", second))
    assert _ok(logkit("decision", "check")) == "decision ids are unique and the ledger matches the sessions"


def test_supersession_has_one_owner_that_list_and_site_read() -> None:
    """`decision list` and the site's index both read reasoning.decisions.supersession (no copy)."""
    import inspect

    from logkit.builder import index
    from logkit.cli import reason

    for module in (index, reason):
        source = inspect.getsource(module)
        assert "supersession(" in source and ".supersedes !=" not in source, module.__name__


def test_a_fifo_named_decisions_tsv_is_a_clear_error_never_a_hang(logkit, sessions: Path) -> None:
    """The ledger read by `decision list/check` and appended by `decide` is opened only when it is a
    regular file: a FIFO in its place would block the command forever."""
    _ok(logkit("record", "session", "one", "--id", "one", *SRC))
    os.mkfifo(sessions / "DECISIONS.tsv")
    assert logkit("decision", "list").returncode == 0  # lists the sessions' records: the ledger is not read
    for args in (["decision", "check"], ["decide", "Use x", "--chosen", "x"]):
        done = logkit(*args)  # run_logkit's timeout turns a hang into a failure
        assert done.returncode == 2, (args, done.stderr)
        assert "DECISIONS.tsv is a FIFO, not a regular file" in done.stderr and "fix:" in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
