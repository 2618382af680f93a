"""One owner per fact (docs/knowledge-model.md): which directories are sessions, secret key names and
the decision-id pattern each come from one place, and every consumer agrees with it. Each test would
catch a new copy that drifts."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from conftest import run_logkit

from logkit.store import files
from logkit.store import Store

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "logkit"


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def _odd_store(root: Path) -> None:
    """Sessions, and things that look like them but are not."""
    for sid in ("2026-01-01-a", "2026-01-02-b"):
        assert run_logkit("--sessions", str(root), "session", "start", sid, "--id", sid).returncode == 0
    (root / ".cache" / "x").mkdir(parents=True)  # a dot-dir, even with an events file
    (root / ".cache" / "events.jsonl").write_text("{}\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "events.jsonl").write_text("{}\n")
    (root / "no-events").mkdir()  # a directory without an events file
    (root / "dir-events" / "events.jsonl").mkdir(parents=True)  # events.jsonl that is no file
    (root / "bad name").mkdir()  # no session id
    (root / "bad name" / "events.jsonl").write_text("{}\n")
    (root / "stray.jsonl").write_text("{}\n")


def test_every_reader_lists_the_same_sessions(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    _odd_store(root)
    want = ["2026-01-01-a", "2026-01-02-b"]
    dirs = files.session_dirs(root)
    assert [d.id for d in dirs] == want and all(Path(d.events).is_file() and d.stat.st_size for d in dirs)
    assert files.session_ids(root) == Store(root).session_ids() == want
    listed = run_logkit("--sessions", str(root), "session", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["id"] for r in json.loads(listed.stdout)) == want
    assert files.session_dirs(tmp_path / "missing") == []


def test_no_module_lists_session_directories_itself() -> None:
    """`logkit.store.files.session_dirs` is the only listing: no other glob or scandir of the store's root."""
    found = [f"{name}: {m.group(0)}" for name, text in _sources().items() if name != "logkit/store/files.py"
             for m in re.finditer(r"glob\(f?[\"']\*/(?:events\.jsonl|\{EVENTS_FILE\})|os\.scandir\(|sessions_with_stat", text)]
    assert found == [], "use logkit.store.files.session_dirs:\n" + "\n".join(found)


def test_secret_key_names_live_in_secrets_toml_only() -> None:
    from logkit.capture.redact import is_secret_key
    from logkit.capture.sglang.bench import redact_info

    sglang = tomllib.loads((PACKAGE / "data" / "sglang.toml").read_text(encoding="utf-8"))
    assert not {k for k in sglang if "redact" in k or "secret" in k}, "secret names belong in secrets.toml"
    # the keys SGLang's /server_info holds secrets under: secrets.toml's flags and names cover them all
    secret = ["api_key", "admin_api_key", "hf_token", "token", "password", "secret", "ssl_keyfile_password"]
    info = {"tp_size": 2, "model_path": "org/M", "nested": [{k: "s3cr3t-value" for k in secret}],
            **{k: "s3cr3t-value" for k in secret}}
    redacted = redact_info(info)
    assert "s3cr3t-value" not in json.dumps(redacted)
    assert redacted["tp_size"] == 2 and redacted["model_path"] == "org/M"
    # the one answer: every key server_info redacts is what the event scrubber calls secret, and back
    for key in [*secret, "tp_size", "model_path", "tokenizer_path"]:
        assert (redacted.get(key) == "[REDACTED]") == is_secret_key(key), key


def test_one_decision_id_pattern() -> None:
    """`logkit.events.DECISION_ID_RE` is the pattern; no module writes its own ``DR-[...]`` regex."""
    from logkit.events import DECISION_ID, DECISION_ID_BODY, DECISION_ID_RE
    from logkit.reasoning.decisions import normalize_id, permanent_id

    assert DECISION_ID == f"^{DECISION_ID_BODY}$" and DECISION_ID_RE.pattern == DECISION_ID_BODY + "\\Z"
    for good in ("DR-0001", "DR-7K3FQ", permanent_id("0" * 8 + "f" * 24), permanent_id("f" * 32)):
        assert DECISION_ID_RE.match(good) and normalize_id(good) == good
    copies = [f"{name}: {m.group(0)}" for name, text in _sources().items() if name != "logkit/events.py"
              for m in re.finditer(r"DR-\[[^\]]*\]", text)]
    assert copies == [], "import logkit.events.DECISION_ID_RE / DECISION_ID_BODY:\n" + "\n".join(copies)


def _orphan_session(root: Path, *, damaged_outcome: bool) -> tuple[Path, str]:
    """A session whose A1's recorder is gone; with ``damaged_outcome`` its recorder did write an
    outcome, one the models refuse (a field they do not know)."""
    from logkit.events import Attempt, Outcome

    handle = Store(root).create("orphans", make_current=False)
    log = handle.log_path("A1.log")
    log.write_bytes(b"loading\nserving --api-key sk-live-0123456789abcdef0123\n")
    handle.append(Attempt(session=handle.id, short_id="A1", argv=["sleep", "9"], recorder_pid=2**22 + 7,
                          log={"path": handle.relative(log)}))
    if damaged_outcome:
        data = Outcome(session=handle.id, attempt="A1", status="ready").model_dump(mode="json", exclude_none=True)
        with open(handle.events_path, "ab") as fh:
            fh.write(files.json_line({**data, "from_a_newer_branch": 1}))
    return handle.events_path, handle.id


def _reconcile_by(how: str, root: Path, sid: str) -> None:
    from logkit.capture.journal import Journal

    if how == "store":
        Store(root).handle(sid).reconcile()
    else:
        Journal(root, sid).reconcile()


@pytest.mark.parametrize("how", ["store", "journal"])
def test_one_reconcile_rule(tmp_path: Path, how: str) -> None:
    """`logkit.store.reconcile.reconcile` is the rule the store and the run's journal both follow:
    an attempt its recorder ended (an outcome line, even one the models refuse) is not abandoned;
    one with no outcome is, once, with the secret in its log tail redacted by the journal."""
    path, sid = _orphan_session(tmp_path / "a", damaged_outcome=True)
    before = path.read_bytes()
    _reconcile_by(how, tmp_path / "a", sid)
    assert path.read_bytes() == before  # the store used to write a second, abandoned, outcome here

    path, sid = _orphan_session(tmp_path / "b", damaged_outcome=False)
    _reconcile_by(how, tmp_path / "b", sid)
    _reconcile_by(how, tmp_path / "b", sid)
    outcomes = [d for d in files.dicts(path) if d.get("kind") == "outcome"]
    assert [(o["attempt"], o["status"]) for o in outcomes] == [("A1", "abandoned")]
    assert [t["text"] for t in outcomes[0]["tail"]][0] == "loading"
    if how == "journal":
        assert "sk-live-0123456789abcdef0123" not in path.read_text()


def test_no_module_writes_abandoned_outcomes_itself() -> None:
    """Only the owner calls `abandoned_outcome`."""
    found = [name for name, text in _sources().items()
             if "abandoned_outcome(" in text and name not in ("logkit/abandon.py", "logkit/store/reconcile.py")]
    assert found == [], "call logkit.store.reconcile.reconcile"


def test_status_and_hypotheses_agree_on_what_is_open(tmp_path: Path) -> None:
    """`logkit.reasoning.hypotheses.current_verdict` says which verdict stands, hence which hypotheses
    are open, for `hypothesis list` (states) and `logkit status` alike. H1: refuted then confirmed
    (the second replaces the first); H2: no verdict; H3: two verdicts that each name the other as
    replaced (a hand-merged file): none stands, so H3 is open to both (status once read "a verdict on
    a later line" and called it closed)."""
    from logkit.events import Verdict
    from logkit.reasoning import hypotheses
    from logkit.reasoning.status import session_status

    root = tmp_path / "sessions"
    handle = Store(root).create("verdicts", make_current=False)
    for text in ("a", "b", "c"):
        hypotheses.add(handle, text)
    hypotheses.close(handle, "H1", "refuted", because="first look")
    hypotheses.close(handle, "H1", "confirmed", because="second look")
    a, b = "a" * 32, "b" * 32
    handle.append(Verdict(session=handle.id, id=a, hypothesis="H3", verdict="refuted", because="x", replaces=b))
    handle.append(Verdict(session=handle.id, id=b, hypothesis="H3", verdict="confirmed", because="y", replaces=a))

    states = {s.hypothesis.short_id: s.status for s in hypotheses.states(handle.read().events)}
    assert states == {"H1": "confirmed", "H2": "open", "H3": "open"}
    data, problems = session_status(root, handle.id)
    assert problems == []
    assert [h["id"] for h in data["hypotheses"]] == [h for h, s in states.items() if s == "open"]
    assert data["closed_hypotheses"] == sum(s != "open" for s in states.values())
    listed = run_logkit("--sessions", str(root), "hypothesis", "list", "--session", handle.id, "--json")
    assert listed.returncode == 0, listed.stderr
    assert {h["id"]: h["status"] for h in json.loads(listed.stdout)} == states


def test_knowledge_toml_has_one_loader() -> None:
    """`logkit.store.derive.knowledge` loads knowledge.toml; the builder reads its tables through it."""
    from logkit.builder.load import tables
    from logkit.store.derive import knowledge

    assert tables() is knowledge()
    loaders = [name for name, text in _sources().items() if name != "logkit/store/derive.py"
               and re.search(r"joinpath\(\s*[\"'](?:data/)?knowledge\.toml", text)]
    assert loaders == [], "read knowledge.toml through logkit.store.derive.knowledge"
