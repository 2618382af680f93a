"""`logkit status` from a fold of the session kept in a read cache: the same answer and the same
warnings as a typed read of the whole session, and a session appended to is read from its new lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kb_factory import realistic
from logkit import files
from logkit.events import Attempt, Hypothesis, Outcome
from logkit.readcache import CACHE_DIR, read_file, write_file
from logkit.reasoning import status as status_mod
from logkit.store import Store


def _typed(store: Store, sid: str, last: int = 5) -> tuple[dict, list[str]]:
    result = store.handle(sid).read()
    return status_mod.status(sid, result.events, last=last), [str(p) for p in result.problems]


def _damage(path: Path, repeat: bool = True) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    outcome = next(line for line in lines if b'"kind":"outcome"' in line)
    data = json.loads(outcome)
    with open(path, "ab") as fh:
        fh.write(b"{not json\n")
        fh.write(json.dumps({**data, "id": os.urandom(16).hex()}).encode() + b"\n")  # a second outcome
        fh.write(json.dumps({**data, "id": os.urandom(16).hex(), "attempt": "A404"}).encode() + b"\n")
        fh.write(b'{"v":1,"id":"x","session":"s","ts":"2026-01-01T00:00:00Z","kind":"nope"}\n')
        if repeat:
            fh.write(lines[0])  # the first line again: its event id repeats (a bad merge)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return realistic(tmp_path / "sessions")


@pytest.mark.parametrize("last", [1, 5, 100])
def test_the_fold_answers_as_the_typed_read(store: Store, last: int) -> None:
    for sid in store.session_ids():
        _damage(store.handle(sid).events_path)
        assert status_mod.session_status(store.root, sid, last=last) == _typed(store, sid, last)


def test_appends_are_read_alone_and_agree(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = store.session_ids()[0]
    handle = store.handle(sid)
    status_mod.session_status(store.root, sid)
    sizes: list[int] = []
    real = status_mod.Fold.take
    monkeypatch.setattr(status_mod.Fold, "take", lambda self, path, raw, first=1: sizes.append(len(raw))
                        or real(self, path, raw, first))
    template = next(e for e in handle.read().events if isinstance(e, Attempt) and e.role == "launch")
    for step in range(4):
        with handle.transaction() as txn:
            hyp = txn.next_short_id("H")
            txn.append(Hypothesis(session=sid, short_id=hyp, text=f"step {step}"))
            short = txn.next_short_id("A")
            txn.append(template.model_copy(update={"id": os.urandom(16).hex(), "short_id": short, "tests": [hyp],
                                                   "pid": None, "recorder_pid": None}))
            if step % 2:
                txn.append(Outcome(session=sid, attempt=short, status="oom", label="out of memory"))
        if step == 2:
            _damage(handle.events_path, repeat=False)  # a repeat of an earlier line's id: the next test
        assert status_mod.session_status(store.root, sid) == _typed(store, sid), step
    size = handle.events_path.stat().st_size
    assert sizes and max(sizes) < size // 4  # only the new lines were read


def test_an_appended_repeat_of_an_earlier_id_is_named_once_the_fold_is_made_in_full(store: Store) -> None:
    """Event ids are checked within one pass, not kept in the fold: a line appended with the id of a
    line already folded passes the extension unnoticed (the documented limit) and is named when the
    fold is made in full, as a rewrite of the file (a merge, an edit) makes it."""
    sid = store.session_ids()[0]
    path = store.handle(sid).events_path
    status_mod.session_status(store.root, sid)
    first = path.read_bytes().splitlines(keepends=True)[0]
    with open(path, "ab") as fh:
        fh.write(first)
    _status, problems = status_mod.session_status(store.root, sid)
    assert not any("repeats line 1" in p for p in problems)
    path.write_bytes(path.read_bytes())  # rewritten in place: size and mtime as before would not do
    os.utime(path, ns=(1, 1))
    assert status_mod.session_status(store.root, sid) == _typed(store, sid)
    assert any("repeats line 1" in p for p in status_mod.session_status(store.root, sid)[1])


def test_a_damaged_cache_is_made_again(store: Store) -> None:
    sid = store.session_ids()[0]
    expected = status_mod.session_status(store.root, sid)
    path = store.root / CACHE_DIR / "status.json"
    data = read_file(path)
    data["sessions"][sid][-1]["hyps"] = {"H1": {"text": 5}}
    write_file(path, data)
    assert status_mod.session_status(store.root, sid) == expected
    path.write_text("{")
    assert status_mod.session_status(store.root, sid) == expected


def test_status_command_reads_no_session_in_full_when_warm(store: Store, logkit, monkeypatch) -> None:
    sid = store.session_ids()[0]
    env = {"LOGKIT_SESSIONS": str(store.root)}
    first = logkit("status", "--session", sid, "--json", env=env)
    assert first.returncode == 0, first.stderr
    again = logkit("status", "--session", sid, "--json", env=env)
    assert again.stdout == first.stdout
    assert json.loads(again.stdout) == _typed(store, sid)[0]
    assert files.events_path(store.root, sid).exists()


def test_session_list_counts_as_a_typed_read(store: Store, logkit) -> None:
    _damage(store.handle(store.session_ids()[1]).events_path)
    done = logkit("session", "list", "--json", env={"LOGKIT_SESSIONS": str(store.root)})
    assert done.returncode == 0, done.stderr
    for row in json.loads(done.stdout):
        result = store.handle(row["id"]).read()
        meta = next(e for e in result.events if e.kind == "session")
        assert (row["title"], row["started"], row["attempts"], row["events"], row["problems"]) == (
            meta.title, meta.ts.isoformat(), sum(1 for e in result.events if e.kind == "attempt"),
            len(result.events), len(result.problems))


def test_session_show_streams_what_a_typed_read_shows(store: Store, logkit) -> None:
    from logkit.session_view import render_text
    from logkit.store import dump_event

    sid = store.session_ids()[0]
    _damage(store.handle(sid).events_path)
    result = store.handle(sid).read()
    env = {"LOGKIT_SESSIONS": str(store.root)}
    text = logkit("session", "show", sid, env=env)
    assert text.returncode == 0, text.stderr
    assert text.stdout == render_text(sid, result.events) + "\n"
    assert text.stderr.splitlines() == [f"logkit: warning: {p}" for p in result.problems]
    data = logkit("session", "show", sid, "--json", env=env)
    assert data.stdout == json.dumps([dump_event(e) for e in result.events], indent=2, ensure_ascii=False) + "\n"
