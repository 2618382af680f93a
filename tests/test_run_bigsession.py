"""`logkit run` on a big session: what it reads before the child starts is bounded (the run index).

Real files, written as ``logkit run`` writes them (``files.event``), and the runner called in this
process so the bytes it reads can be counted (``/proc/self/io``'s ``rchar``) up to the spawn.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from logkit import files, procs
from logkit.capture import runner
from logkit.capture.journal import Journal
from logkit.capture.runindex import FULL_LIMIT, TAIL_BYTES, RunIndex
from logkit.store import Store

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


def _big(root: Path, size: int) -> Path:
    """A session of about ``size`` bytes: H1, then attempts with outcomes; A2 is a launch."""
    handle = Store(root).create("big", session_id=SID)
    hypothesis = {"v": files.SCHEMA_VERSION, "id": os.urandom(16).hex(), "session": SID, "ts": files.utc(),
                  "kind": "hypothesis", "short_id": "H1", "text": "it works", "priority": "high"}
    with open(handle.events_path, "ab") as fh:
        fh.write(_line(hypothesis))
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
    return _big(sessions, FULL_LIMIT + (4 << 20))


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


def test_a_big_session_without_an_index_is_read_from_its_end_only(sessions: Path, big: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    size = big.stat().st_size
    last = max(files.short_numbers(big.read_bytes(), "A"))
    read, result = _run_counting(sessions, monkeypatch)
    assert result.exit_status == 0
    assert read < TAIL_BYTES + (256 << 10) < size // 8, (read, size)
    # after the spawn the whole file was indexed: the id is the next one, and the index was saved
    assert result.attempt["short_id"] == f"A{last + 1}"
    assert (sessions / ".cache" / "run" / f"{SID}.json").exists()
    # the next run reads only what was appended since
    read2, result2 = _run_counting(sessions, monkeypatch)
    assert read2 < 64 << 10, read2
    assert result2.attempt["short_id"] == f"A{last + 2}"


def test_the_index_agrees_with_a_full_read(sessions: Path, big: Path) -> None:
    with open(big, "ab") as fh:  # an open attempt, a launch with its probed environment, a hypothesis
        fh.write(_line(_attempt(90001, role="launch", launch={"parser": "sglang"})))
        fh.write(_line(files.event("environment", SID, attempt="A90001", environment={"host": "h"})))
        fh.write(_line(files.event("attempt", SID, short_id="A90002", argv=["x"], cwd="/", role="command",
                                   started=files.utc())))
    index = RunIndex.load(big, sessions, SID, partial=False)
    lines = files.dicts(big)
    assert index.max_a == max(files.short_numbers(big.read_bytes(), "A"))
    assert sorted(index.open) == sorted(a["short_id"] for a in files.open_attempts(lines))
    assert index.hyps == [e["short_id"] for e in lines if e["kind"] == "hypothesis"]
    launch = index.last_launch()
    assert launch["short_id"] == "A90001" and launch["environment"] == {"host": "h"}


def test_an_index_is_never_trusted_blindly(sessions: Path, big: Path) -> None:
    index = RunIndex.load(big, sessions, SID, partial=False)
    assert index.save()
    path = index.path
    good = json.loads(path.read_text())
    # damaged, foreign or wrongly shaped: ignored and rebuilt
    for bad in ("{", "[]", json.dumps({**good, "format": 99}), json.dumps({**good, "max_a": -1}),
                json.dumps({**good, "open": {"../x": [0, 1]}}), json.dumps({**good, "launch": [0, 10**12, "A2"]})):
        path.write_text(bad)
        again = RunIndex.load(big, sessions, SID, partial=False)
        assert again.how == "full" and again.max_a == index.max_a, bad
    # well shaped but pointing at the wrong line: the line is checked, then the index is rebuilt
    path.write_text(json.dumps({**good, "launch": [0, 40, "A2"]}))
    forged = RunIndex.load(big, sessions, SID, partial=False)
    assert forged.how == "fresh"
    assert forged.last_launch() is None and forged.ino == -1
    forged.update()
    assert forged.how == "full" and forged.last_launch()["short_id"] == "A2"
    # the file replaced (new inode, same size): rebuilt
    index.save()
    copy = big.with_name("copy")
    copy.write_bytes(big.read_bytes())
    os.replace(copy, big)
    assert RunIndex.load(big, sessions, SID, partial=False).how == "full"


def test_an_edit_before_the_indexed_end_rebuilds(sessions: Path, big: Path) -> None:
    RunIndex.load(big, sessions, SID, partial=False).save()
    raw = bytearray(big.read_bytes())
    raw[-10] = ord("Z")  # within the hashed tail
    with open(big, "r+b") as fh:  # in place: same inode
        fh.write(bytes(raw))
        fh.write(_line(_outcome(1)))
    assert RunIndex.load(big, sessions, SID, partial=False).how == "full"


def test_an_abandoned_attempt_anywhere_in_a_big_session_is_reconciled(sessions: Path, big: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _run_counting(sessions, monkeypatch)  # builds the index
    # an attempt recorded here by a logkit that is gone, then 2 MB of other lines after it
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    with open(big, "ab") as fh:
        fh.write(_line(_attempt(80000, pid=dead, host=procs.hostname())))
        for n in range(80001, 81500):
            fh.write(_line(_attempt(n)) + _line(_outcome(n)))
    read, result = _run_counting(sessions, monkeypatch)
    assert result.exit_status == 0
    assert read < 4 << 20
    tail = big.read_bytes()[-200_000:]
    assert b'"attempt":"A80000","status":"abandoned"' in tail
    assert result.attempt["short_id"] == "A81500"
    assert "A80000" not in Journal(sessions, SID).index.open
