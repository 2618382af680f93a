"""The one layer for the session files (logkit/store/files.py): ids, the store's root, reading with upgrade()
applied by every reader, the run path's event constructor, whole-line appends and atomic rewrites."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from logkit.store import files
from logkit.capture.journal import Journal
from logkit.errors import StoreError
from logkit.events import EVENT_TYPES, Attempt, AttemptEnvironment, Outcome, parse_event
from logkit.reasoning import decisions, ledger, refuted
from logkit.store.reader import read_events
from logkit.store import Store

# -- the run path's constructor, checked against the models --------------------------------------


def test_event_fields_are_the_models_fields() -> None:
    assert set(files.FIELDS) == {"attempt", "environment", "outcome"}
    for kind, names in files.FIELDS.items():
        assert names == set(EVENT_TYPES[kind].model_fields), kind


def test_event_builds_what_the_models_accept_and_refuses_unknown_fields() -> None:
    attempt = files.event("attempt", "s", short_id="A1", argv=["true"], cwd="/", role="command",
                          started=files.utc(), tests=["H1"], environment={"host": "h", "packages": {"torch": None}},
                          pid=10, pgid=10, recorder_pid=11, recorder_host="h", launch=None, bench=None, label=None,
                          log={"path": "logs/A1.log"})
    assert "launch" not in attempt and attempt["environment"]["packages"] == {"torch": None}  # None kept there
    assert isinstance(parse_event(attempt), Attempt)
    outcome = files.event("outcome", "s", attempt="A1", status="exit_ok", label="exited 0", signature=None,
                          ended=files.utc(), duration_s=0.1, exit_code=0, signal=None, ready_at=None, evidence=[],
                          tail=[{"line": 1, "text": "hi"}], timeline=[], log={"path": "logs/A1.log", "size": 3},
                          survivors=[], capture_truncated=None)
    assert isinstance(parse_event(outcome), Outcome)
    env = files.event("environment", "s", attempt="A1", environment={"gpus": []})
    assert isinstance(parse_event(env), AttemptEnvironment)
    with pytest.raises(ValueError, match="no field"):
        files.event("outcome", "s", attempt="A1", status="exit_ok", exitcode=0)
    with pytest.raises(ValueError, match="not 'metric'"):
        files.event("metric", "s")


# -- ids and the store's root ---------------------------------------------------------------------


def test_ids_match_whole_strings() -> None:
    assert files.valid_session_id("2026-11-14-glm5")
    for bad in ("x\n", "../x", ".current", "", "a/b", "x" * 101, 7):
        assert not files.valid_session_id(bad), bad
    assert files.ATTEMPT_ID_RE.match("A7") and not files.ATTEMPT_ID_RE.match("A7\n")
    from logkit.events import DECISION_ID_RE  # the one decision-id pattern

    assert DECISION_ID_RE.match("DR-0001") and DECISION_ID_RE.match("DR-7K3FQ")
    assert not DECISION_ID_RE.match("DR-0001\n") and not DECISION_ID_RE.match("DR-7K3FI")
    assert files.REF_RE.match("2026-11-14-glm5/A4").group("session", "id") == ("2026-11-14-glm5", "A4")
    for bad in ("A1\n", "../etc/A1", "x/A1\n", "DR-0001"):
        assert not files.REF_RE.match(bad), bad


def test_session_start_refuses_an_id_ending_in_a_newline(logkit, sessions: Path) -> None:
    done = logkit("session", "start", "t", "--id", "x\n")
    assert done.returncode == 2 and "not a valid session id" in done.stderr and "Traceback" not in done.stderr
    assert list(sessions.iterdir()) == []


@pytest.mark.parametrize("command", [["status"], ["session", "list"], ["run", "--", "true"], ["session", "start", "t"]])
def test_a_sessions_root_that_is_a_file_is_a_clear_error(logkit, tmp_path: Path, command: list[str]) -> None:
    plain = tmp_path / "sessions.txt"
    plain.write_text("not a directory\n")
    done = logkit(*command, env={"LOGKIT_SESSIONS": str(plain)})
    assert done.returncode == 2, done.stderr
    assert f"{plain} (from $LOGKIT_SESSIONS) is not a directory" in done.stderr and "Traceback" not in done.stderr


# -- every reader applies upgrade() ---------------------------------------------------------------


def _v1_line(**fields: Any) -> str:
    return json.dumps({"v": 1, "id": os.urandom(16).hex(), "session": "old", "ts": "2026-11-14T00:00:00Z", **fields})


def test_every_reader_applies_the_upgrade_steps(sessions: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend the schema is at v2 and v1 named attempt.role "purpose", outcome.status "result" and
    # decision.decision_id "number": a reader that skips upgrade() finds no launch, no failure, no decision.
    renames = {"purpose": "role", "result": "status", "number": "decision_id"}
    monkeypatch.setattr(files, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(files.UPGRADES, 1, lambda d: {renames.get(k, k): v for k, v in d.items()})
    gpus = [{"index": 0, "name": "RTX PRO 6000", "compute_cap": "12.0"}]
    fp = {"moe_runner_backend": "flashinfer_trtllm", "tp_size": 8}
    (sessions / "old" / "logs").mkdir(parents=True)
    (sessions / "old" / "events.jsonl").write_text("\n".join([
        _v1_line(kind="session", title="old"),
        _v1_line(kind="attempt", short_id="A1", argv=["python", "-m", "sglang.launch_server"], purpose="launch",
                 environment={"gpus": gpus}, launch={"fingerprint": fp, "non_default": fp, "port": 30000}),
        _v1_line(kind="outcome", attempt="A1", result="arch_mismatch", label="SM100 only"),
        _v1_line(kind="decision", number="DR-0001", title="use cutlass"),
    ]) + "\n")
    store = Store(sessions)
    typed = store.handle("old").read()
    assert not typed.problems and [e.kind for e in typed.events] == ["session", "attempt", "outcome", "decision"]
    assert typed.events[1].role == "launch" and typed.events[2].status == "arch_mismatch"
    journal = Journal(sessions, "old")
    assert journal.current().launch["short_id"] == "A1"  # the run path's reader
    from logkit.capture.sglang import _server_for

    assert _server_for("127.0.0.1", 30000, str(journal.dir)) == "A1"  # the bench planner's reader
    (hit,) = refuted.check(fp, "SM120", store)  # the pre-launch check's byte reader
    assert (hit.session, hit.attempt, hit.status) == ("old", "A1", "arch_mismatch")
    moved = decisions.renumber(store, "old", "DR-0001")  # the renumbering rewrite: a longer permanent id
    assert moved.startswith("DR-") and moved != "DR-0001"
    assert [e.decision_id for e in store.handle("old").read().events if e.kind == "decision"] == [moved]


# -- whole lines, or none -------------------------------------------------------------------------


def test_a_failed_write_leaves_no_torn_line(tmp_path: Path) -> None:
    # RLIMIT_FSIZE stands in for a full disk here (the tmpfs tests in test_disk_full.py fill a real one).
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"v":1}\n')
    script = f"""
import resource, sys
from pathlib import Path
from logkit.store import files
from logkit.errors import StoreError
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    files.append(Path({str(path)!r}), b'{{"big":"' + b"x" * 10000 + b'"}}\\n')
except StoreError as exc:
    print(exc.message)
    sys.exit(3)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "cannot write to" in done.stdout, done.stdout + done.stderr
    assert path.read_bytes() == b'{"v":1}\n'  # the 4 KiB that did fit were cut back


# -- rewrite: new file, fsync, rename --------------------------------------------------------------


def _two_decisions(sessions: Path) -> Store:
    from logkit.events import Decision

    store = Store(sessions)
    handle = store.create("t", session_id="s", make_current=False)
    for n in (1, 2):
        handle.append(Decision(session="s", decision_id=f"DR-000{n}", title=f"d{n}"))
    ledger.append_ledger(store, "DR-0001\ts\td1\n")
    return store


def test_renumber_that_fails_midway_leaves_the_session_whole(sessions: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _two_decisions(sessions)
    before = store.handle("s").events_path.read_bytes()

    def full_disk(*_a: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)  # the new file is written; the rename fails
    with pytest.raises(StoreError, match="the file is unchanged"):
        decisions.renumber(store, "s", "DR-0001")
    assert store.handle("s").events_path.read_bytes() == before
    assert sorted(p.name for p in (sessions / "s").iterdir()) == ["events.jsonl", "logs"]  # no temporary left


def test_renumber_killed_before_the_rename_leaves_the_old_file(sessions: Path) -> None:
    store = _two_decisions(sessions)
    path = store.handle("s").events_path
    before = path.read_bytes()
    # SIGKILL the renumbering process right after it fsynced the new file, before it renames it.
    script = f"""
import os, signal
from logkit.reasoning import decisions
from logkit.store import Store
real = os.fsync
def fsync(fd):
    real(fd)
    if os.readlink(f"/proc/self/fd/{{fd}}").endswith(".tmp"):
        os.kill(os.getpid(), signal.SIGKILL)
os.fsync = fsync
decisions.renumber(Store({str(sessions)!r}), "s", "DR-0001")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert path.read_bytes() == before
    result = read_events(path)
    assert not result.problems and [e.decision_id for e in result.events if e.kind == "decision"] == ["DR-0001", "DR-0002"]
    moved = decisions.renumber(store, "s", "DR-0001")  # and a rerun completes
    assert [e.decision_id for e in read_events(path).events if e.kind == "decision"] == [moved, "DR-0002"]


def test_a_writer_waiting_during_a_rewrite_appends_to_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"n":1}\n')
    inside, release = threading.Event(), threading.Event()

    def transform(raw: bytes) -> bytes:
        inside.set()
        assert release.wait(10)
        return raw.replace(b'"n":1', b'"n":2')

    rewriter = threading.Thread(target=files.rewrite, args=(path, transform))
    rewriter.start()
    assert inside.wait(10)
    writer = threading.Thread(target=files.append, args=(path, b'{"n":3}\n'))
    writer.start()  # blocks on the old file's lock
    time.sleep(0.2)
    release.set()
    rewriter.join(10)
    writer.join(10)
    assert path.read_bytes() == b'{"n":2}\n{"n":3}\n'


# -- a damaged store never stops a launch, nor any command ----------------------------------------


@pytest.mark.slow
def test_damaged_lines_stop_no_command_and_never_the_launch(logkit, sessions: Path) -> None:
    assert logkit("session", "start", "damaged", "--id", "damaged").returncode == 0
    deep = '{"v":1,"id":"d1","session":"damaged","kind":"note","text":' + "[" * 200_000 + "]" * 200_000 + "}"
    huge_pid = _v1_line(session="damaged", kind="attempt", short_id="A1", argv=["x"], recorder_pid=2**62,
                        recorder_host=os.uname().nodename, pgid=2**62, log={"path": "logs/A1.log"})
    year_one = _v1_line(session="damaged", kind="note", text="t").replace("2026-11-14T00:00:00Z",
                                                                           "0001-01-01T00:00:00+05:00")
    launch = _v1_line(session="damaged", kind="attempt", short_id="A2", argv=["python", "-m", "sglang.launch_server"],
                      role="launch", launch={"fingerprint": "not a mapping"})
    with open(sessions / "damaged" / "events.jsonl", "a") as fh:
        fh.write("\n".join([deep, huge_pid, year_one, launch]) + "\n")
    ran = logkit("run", "--", "sh", "-c", "echo child-ran")
    assert ran.returncode == 0 and ran.stdout == "child-ran\n", ran.stderr
    assert "Traceback" not in ran.stderr
    for command in (["status"], ["status", "--json"], ["session", "list"], ["session", "show", "damaged"],
                    ["hypothesis", "list"], ["decision", "check"]):
        done = logkit(*command)
        assert "Traceback" not in done.stderr and done.returncode in (0, 1), (command, done.stderr)
    result = Store(sessions).handle("damaged").read()
    messages = {p.line: p.message for p in result.problems}
    assert "nested too deeply" in messages[2] and "timestamp out of range" in messages[4], messages
    outcomes = [e for e in result.events if e.kind == "outcome"]
    assert [(o.attempt, o.status) for o in outcomes][-1][1] == "exit_ok"


def test_the_attempt_line_never_names_a_log_that_does_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recorder killed right after its attempt line (before it opened the log) leaves an empty log
    file, so the abandoned outcome gives the log's size and digest (0 bytes) instead of none."""
    sessions = tmp_path / "sessions"
    Store(sessions).create("s", session_id="s", make_current=False)
    journal = Journal(sessions, "s")
    seen: list[bool] = []
    real = files.write_line

    def spy(fd: int, line: bytes, **kw: Any) -> None:
        if b'"kind":"attempt"' in line.replace(b" ", b""):
            seen.append((journal.dir / "logs" / "A1.log").is_file())
        real(fd, line, **kw)

    monkeypatch.setattr(files, "write_line", spy)
    attempt = journal.append_attempt(files.event("attempt", "s", argv=["true"], cwd=str(tmp_path), role="command",
                                                 started="2026-12-03T00:00:00+00:00", pid=1, pgid=1))
    assert seen == [True] and attempt["log"]["path"] == "logs/A1.log"
    from logkit.abandon import abandoned_outcome

    typed = next(e for e in Store(sessions).handle("s").read().events if isinstance(e, Attempt))
    out = abandoned_outcome("s", journal.dir, typed)
    assert out.log is not None and out.log.size == 0 and out.log.sha256 is not None
