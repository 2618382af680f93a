"""`logkit status` is a query over the index: the warnings of a typed read of the session (a damaged
line named file:line), the attempts and hypotheses it records, and lines appended since are seen."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from kb_factory import realistic
from logkit.events import Attempt, Hypothesis, Outcome
from logkit.reasoning.status import session_status
from logkit.store import Store


def _damage(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    data = json.loads(next(line for line in lines if b'"kind":"outcome"' in line))
    with open(path, "ab") as fh:
        fh.write(b"{not json\n")
        fh.write(json.dumps({**data, "id": os.urandom(16).hex()}).encode() + b"\n")  # a second outcome
        fh.write(json.dumps({**data, "id": os.urandom(16).hex(), "attempt": "A404"}).encode() + b"\n")
        fh.write(lines[0])  # the first line again: its event id repeats (a bad merge)


def _typed(store: Store, sid: str, last: int) -> tuple[list[tuple], list[str]]:
    result = store.handle(sid).read()
    outcomes = {e.attempt: e for e in result.events if isinstance(e, Outcome)}
    rows = [(a.short_id, shlex.join(a.argv), outcomes[a.short_id].status if a.short_id in outcomes else "running")
            for a in result.events if isinstance(a, Attempt)]
    return rows[-last:], [str(p) for p in result.problems]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return realistic(tmp_path / "sessions")


@pytest.mark.parametrize("last", [1, 5, 500])
def test_status_answers_as_a_typed_read(store: Store, last: int) -> None:
    for sid in store.session_ids():
        _damage(store.handle(sid).events_path)
        data, problems = session_status(store.root, sid, last=last)
        rows, expected = _typed(store, sid, last)
        assert [(a["id"], a["command"], a["status"]) for a in data["attempts"]] == rows
        assert problems == expected and any(":1: " in p or "repeats line 1" in p for p in problems)
        assert all(p.startswith(f"{store.handle(sid).events_path}:") for p in problems)


def test_appended_lines_are_seen(store: Store) -> None:
    sid = store.session_ids()[0]
    handle = store.handle(sid)
    session_status(store.root, sid)
    template = next(e for e in handle.read().events if isinstance(e, Attempt) and e.role == "launch")
    for step in range(3):
        with handle.transaction() as txn:
            hyp = txn.next_short_id("H")
            txn.append(Hypothesis(session=sid, short_id=hyp, text=f"step {step}"))
            short = txn.next_short_id("A")
            txn.append(template.model_copy(update={"id": os.urandom(16).hex(), "short_id": short, "tests": [hyp],
                                                   "pid": None, "recorder_pid": None}))
            txn.append(Outcome(session=sid, attempt=short, status="oom", label="out of memory"))
        data, _problems = session_status(store.root, sid)
        assert data["attempts"][-1]["id"] == short and data["attempts"][-1]["status"] == "oom"
        opened = {h["id"]: h for h in data["hypotheses"]}
        assert opened[hyp]["tests"] == [short] and opened[hyp]["outcomes"] == {short: "oom"}
        assert {(p["hypothesis"], p["attempt"]) for p in data["proposals"]} >= {(hyp, short)}


def test_status_command(store: Store, logkit) -> None:
    sid = store.session_ids()[0]
    shown = logkit("status", "--session", sid, "--json", env={"LOGKIT_SESSIONS": str(store.root)})
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["session"] == sid
