"""`logkit run` on a big session: what it knows before the spawn comes from the one index plus the
lines it has not ingested (logkit.capture.sessionview), and ids are never handed out twice.

Real files, written as ``logkit run`` writes them (``files.event``), and the runner called in this
process so the bytes it reads can be counted (``/proc/self/io``'s ``rchar``) up to the spawn.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from logkit import procs

from logkit.store import files
from logkit.capture import runner, sessionview
from logkit.capture.journal import Journal
from logkit.capture.sessionview import SCAN_LIMIT, SessionView
from logkit.store import Store
from logkit.store.index import Index, index_path

pytestmark = pytest.mark.slow  # big sessions

SID = "big"


def _line(event: dict[str, Any]) -> bytes:
    return (json.dumps(event, separators=(",", ":")) + "\n").encode()


def _attempt(n: int, *, role: str = "command", pid: int = 1, host: str | None = None,
             **extra: Any) -> dict[str, Any]:
    return files.event("attempt", SID, short_id=f"A{n}", argv=["python", "-c", "pass", "x" * 600], cwd="/tmp",
                       role=role, started=files.utc(), pid=pid, pgid=pid, recorder_pid=pid,
                       recorder_host=host or "elsewhere", log={"path": f"logs/A{n}.log"}, **extra)


def _outcome(n: int) -> dict[str, Any]:
    return files.event("outcome", SID, attempt=f"A{n}", status="exit_ok", ended=files.utc(), exit_code=0,
                       duration_s=1.0, tail=[{"line": 1, "text": "y" * 300}])


def _hypothesis(n: int) -> dict[str, Any]:
    return {"v": files.SCHEMA_VERSION, "id": os.urandom(16).hex(), "session": SID, "ts": files.utc(),
            "kind": "hypothesis", "short_id": f"H{n}", "text": "it works", "priority": "high"}


def _big(root: Path, size: int) -> Path:
    """A session of about ``size`` bytes: H1, then attempts with outcomes; A2 is a launch."""
    handle = Store(root).create("big", session_id=SID)
    with open(handle.events_path, "ab") as fh:
        fh.write(_line(_hypothesis(1)))
        n, written = 0, handle.events_path.stat().st_size
        while written < size:
            n += 1
            extra = {"role": "launch", "launch": {"parser": "sglang", "fingerprint": {"tp_size": 8}}} if n == 2 else {}
            data = _line(_attempt(n, **extra)) + _line(_outcome(n))
            fh.write(data)
            written += len(data)
    return handle.events_path


def _rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


@pytest.fixture
def big(sessions: Path) -> Path:
    return _big(sessions, SCAN_LIMIT * 3)


def _indexed(sessions: Path) -> None:
    with Index(sessions) as index:
        index.refresh()


def _run_counting(sessions: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str] | None = None,
                  **opts: Any) -> tuple[int, runner.RunResult]:
    """Run ``argv`` through the runner; the bytes this process read before the spawn."""
    seen: dict[str, int] = {}
    real = runner.spawn

    def spawn(*args: Any, **kw: Any) -> Any:
        seen["read"] = _rchar() - start
        return real(*args, **kw)

    monkeypatch.setattr(runner, "spawn", spawn)
    start = _rchar()
    result = runner.run(argv or ["true"], runner.RunOptions(sessions=str(sessions), session=SID, **opts),
                        use_pty=False)
    return seen["read"], result


def _full(big: Path) -> dict[str, Any]:
    """What a full read says: the reference every view must agree with."""
    lines = files.dicts(big)
    launches = [e for e in lines if e["kind"] == "attempt" and e.get("role") == "launch"]
    launch = dict(launches[-1]) if launches else None
    for e in lines:
        if launch and e["kind"] == "environment" and e.get("attempt") == launch["short_id"]:
            launch["environment"] = e["environment"]
    raw = big.read_bytes()
    return {"max_a": max(files.short_numbers(raw, "A")), "max_h": max(files.short_numbers(raw, "H")),
            "open": sorted(a["short_id"] for a in files.open_attempts(lines)),
            "hyps": [e["short_id"] for e in lines if e["kind"] == "hypothesis"], "launch": launch}


def _said(view: SessionView) -> dict[str, Any]:
    return {"max_a": view.max_a, "max_h": view.max_h, "open": sorted(view.open), "hyps": view.hyps,
            "launch": view.launch}


def test_a_run_indexes_a_big_session_after_the_spawn_and_the_next_reads_only_what_is_new(
        sessions: Path, big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    last = max(files.short_numbers(big.read_bytes(), "A"))
    _read, result = _run_counting(sessions, monkeypatch)  # no index yet: the file is scanned
    assert result.exit_status == 0 and result.attempt["short_id"] == f"A{last + 1}"
    with Index(sessions) as index, index.snapshot() as snap:  # refreshed once the child ran
        assert snap.next_short_id(SID, "A") == f"A{last + 2}"
    read, result = _run_counting(sessions, monkeypatch)
    assert result.attempt["short_id"] == f"A{last + 2}"
    assert read < big.stat().st_size // 4, read  # the index's pages and a few appended lines, not the file
    view = SessionView.load(sessions, SID, big)
    assert view.source == "index" and view.behind < 64 << 10


def test_the_view_from_the_index_agrees_with_a_full_read(sessions: Path, big: Path) -> None:
    with open(big, "ab") as fh:  # indexed: a launch, an open attempt
        fh.write(_line(_attempt(90001, role="launch", launch={"parser": "sglang"})))
        fh.write(_line(_attempt(90002)))
    _indexed(sessions)
    with open(big, "ab") as fh:  # not indexed: the launch's probed environment, a hypothesis, an outcome
        fh.write(_line(files.event("environment", SID, attempt="A90001", environment={"host": "h"})))
        fh.write(_line(_hypothesis(2)))
        fh.write(_line(_outcome(90002)))
        fh.write(_line(files.event("attempt", SID, short_id="A90003", argv=["x"], cwd="/", role="command",
                                   started=files.utc())))
    view = SessionView.load(sessions, SID, big)
    assert view.source == "index" and 0 < view.behind < 8192
    assert _said(view) == _full(big)
    assert view.launch["short_id"] == "A90001" and view.launch["environment"] == {"host": "h"}
    scanned = SessionView(big, sessions, SID)
    scanned.catch_up()
    assert _said(scanned) == _full(big)


def test_an_index_that_does_not_match_the_file_is_not_used(sessions: Path, big: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _indexed(sessions)
    # an edit before the indexed end, in place (same inode): the hashed tail differs
    raw = bytearray(big.read_bytes())
    raw[-10] = ord("Z")
    with open(big, "r+b") as fh:
        fh.write(bytes(raw))
        fh.write(_line(_attempt(95000)))
    view = SessionView.load(sessions, SID, big)
    assert view.source == "scan" and _said(view) == _full(big)
    # the file replaced (new inode): the same
    copy = big.with_name("copy")
    copy.write_bytes(big.read_bytes())
    os.replace(copy, big)
    assert SessionView.load(sessions, SID, big).source == "scan"
    # an index that is no database: rebuilt empty, so the file is scanned; the run records on
    index_path(sessions).write_bytes(b"not a database" * 100)
    _read, result = _run_counting(sessions, monkeypatch)
    assert result.exit_status == 0 and result.attempt["short_id"] == "A95001"


def test_a_failing_index_never_stops_the_run(sessions: Path, big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _indexed(sessions)

    def broken(*_args: Any, **_kw: Any) -> Any:
        raise RuntimeError("index exploded")

    monkeypatch.setattr("logkit.store.index.Index.snapshot", broken)
    monkeypatch.setattr("logkit.store.index.Index.refresh", broken)
    last = max(files.short_numbers(big.read_bytes(), "A"))
    _read, result = _run_counting(sessions, monkeypatch)
    assert result.exit_status == 0 and result.attempt["short_id"] == f"A{last + 1}"
    assert SessionView.load(sessions, SID, big).source == "scan"


@pytest.mark.parametrize("indexed", [True, False], ids=["in-the-index", "after-the-index"])
def test_an_id_claimed_by_a_newer_or_damaged_line_is_never_reused(sessions: Path, big: Path, indexed: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with open(big, "ab") as fh:
        newer = {**_attempt(70001), "v": 2}
        fh.write(_line(newer))  # a newer logkit's attempt: not validated, but its id is taken
        fh.write(b'{"v":1,"kind":"attempt","short_id":"A70002","argv":[\n')  # damaged, still naming its id
    if indexed:
        _indexed(sessions)
    (sessions / SID / "logs").mkdir(exist_ok=True)
    kept = sessions / SID / "logs" / "A70003.log"
    kept.write_text("a log whose attempt line was never written\n")  # a recorder killed in between
    _read, result = _run_counting(sessions, monkeypatch)
    assert result.attempt["short_id"] == "A70004"
    assert kept.read_text() == "a log whose attempt line was never written\n"  # never wiped
    assert (sessions / SID / "logs" / "A70004.log").exists()


def test_an_abandoned_attempt_before_and_after_the_indexed_end_is_reconciled(sessions: Path, big: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    with open(big, "ab") as fh:
        fh.write(_line(_attempt(80000, pid=dead, host=procs.hostname())))
        for n in range(80001, 80100):
            fh.write(_line(_attempt(n)) + _line(_outcome(n)))
    _indexed(sessions)
    with open(big, "ab") as fh:
        fh.write(_line(_attempt(80100, pid=dead, host=procs.hostname())))
    _read, result = _run_counting(sessions, monkeypatch)
    assert result.exit_status == 0 and result.attempt["short_id"] == "A80101"
    tail = big.read_bytes()[-200_000:]
    assert b'"attempt":"A80000","status":"abandoned"' in tail
    assert b'"attempt":"A80100","status":"abandoned"' in tail
    assert not {"A80000", "A80100"} & set(Journal(sessions, SID).view.open)


def test_a_small_session_never_opens_the_index(sessions: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Store(sessions).create("small", session_id=SID)
    monkeypatch.setattr(sessionview.SessionView, "_from_index", lambda self: pytest.fail("index opened"))
    _read, result = _run_counting(sessions, monkeypatch)
    assert result.attempt["short_id"] == "A1"
    assert not index_path(sessions).exists()


@pytest.mark.slow
def test_a_100k_event_session_starts_a_run_in_bounded_time(sessions: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = _big(sessions, 50 << 20)  # ~50 MB: about 100,000 events
    _indexed(sessions)
    with open(big, "ab") as fh:  # what a few runs since appended
        for n in range(200000, 200010):
            fh.write(_line(_attempt(n)) + _line(_outcome(n)))
    start = time.perf_counter()
    view = SessionView.load(sessions, SID, big)
    took = time.perf_counter() - start
    assert view.source == "index" and view.max_a == 200009
    assert took < 0.5, took  # ~10 ms here; a full scan is seconds


def test_a_file_rewritten_under_the_lock_is_read_again(sessions: Path, big: Path) -> None:
    _indexed(sessions)
    journal = Journal(sessions, SID)
    before = journal.view.max_a
    raw = big.read_bytes()
    files.rewrite(big, lambda body: body + _line(_attempt(before + 5)))  # a new inode (decision renumbering)
    attempt = journal.append_attempt(files.event("attempt", SID, argv=["true"], cwd="/", role="command",
                                                 started=files.utc(), pid=1, pgid=1))
    assert attempt["short_id"] == f"A{before + 6}" and big.read_bytes().startswith(raw)
