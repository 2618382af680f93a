"""The one derived index (logkit.store.index): where it lives, what it trusts, what it ingests, how it
stays consistent with files being appended by real processes."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kb_factory
from logkit.store import files
from logkit.events import Note
from logkit.store import Store
from logkit.store.index import Index, index_path

REPO = Path(__file__).resolve().parent.parent


def rows(root: Path) -> dict[str, list[dict]]:
    with Index(root) as ix:
        ix.refresh()
        with ix.snapshot() as snap:
            return {"attempts": snap.attempts(), "metrics": snap.metrics(), "sessions": snap.sessions(),
                    "problems": [str(p) for p in snap.problems()], "hypotheses": snap.hypotheses(),
                    "verdicts": snap.verdicts(), "decisions": [d["decision_id"] for d in snap.decisions()]}


def from_scratch(root: Path) -> dict[str, list[dict]]:
    with Index(root, path=None) as ix:
        assert ix.path is None
        ix.refresh()
        with ix.snapshot() as snap:
            return {"attempts": snap.attempts(), "metrics": snap.metrics(), "sessions": snap.sessions(),
                    "problems": [str(p) for p in snap.problems()], "hypotheses": snap.hypotheses(),
                    "verdicts": snap.verdicts(), "decisions": [d["decision_id"] for d in snap.decisions()]}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    kb_factory.synthetic(root, 3, 30)
    return root


def test_rows_and_file_location(kb: Path) -> None:
    got = rows(kb)
    assert (kb / ".cache" / "index.sqlite").is_file()
    assert (kb / ".cache" / ".gitignore").read_text().strip().endswith("*")
    assert len(got["sessions"]) == 3 and got["problems"] == []
    attempts = sum(1 for p in kb.glob("*/events.jsonl") for line in p.read_text().splitlines()
                   if json.loads(line)["kind"] == "attempt")
    assert len(got["attempts"]) == attempts == sum(s["attempts"] for s in got["sessions"])
    launch = next(a for a in got["attempts"] if a["role"] == "launch")
    assert launch["arch"] and launch["model"] and launch["status"] and launch["category"]
    assert json.loads(launch["backends"])
    assert got == from_scratch(kb)  # the file and a fresh in-memory ingest agree


def test_appended_lines_are_ingested_alone_and_a_rewrite_whole(kb: Path) -> None:
    rows(kb)
    sid = sorted(p.name for p in kb.iterdir() if not p.name.startswith("."))[0]
    path = kb / sid / "events.jsonl"
    store = Store(kb)
    store.handle(sid).append(Note(session=sid, text="appended"))
    with path.open("ab") as fh:
        fh.write(b'{"v":1,"kind":"note","sess')  # a torn line: waits until it ends
    got = rows(kb)
    assert any(p.endswith("torn last line (logkit was killed while writing it); skipped") for p in got["problems"])
    with Index(kb) as ix, ix.snapshot() as snap:
        notes = [e["event"]["text"] for e in snap.events(sid, ["note"])]
    assert notes[-1] == "appended"
    with path.open("ab") as fh:
        fh.write(b'ion":"x"}\nnot json\n')
    got = rows(kb)
    assert got == from_scratch(kb)
    assert sum(":" in p and "not valid JSON" in p for p in got["problems"]) == 1
    # a rewrite in place (same inode, a changed prefix): ingested whole, nothing kept from before
    raw = path.read_bytes()
    with path.open("r+b") as fh:
        fh.write(raw.replace(b"appended", b"rewrote!", 1))
    got = rows(kb)
    assert got == from_scratch(kb)
    with Index(kb) as ix, ix.snapshot() as snap:
        assert [e["event"]["text"] for e in snap.events(sid, ["note"])][-1] == "rewrote!"
    # a shortened file (another inode: git checkout) and a vanished session
    path.write_bytes(b"\n".join(raw.split(b"\n")[:3]) + b"\n")
    (kb / sorted(p.name for p in kb.iterdir() if not p.name.startswith("."))[1] / "events.jsonl").unlink()
    assert rows(kb) == from_scratch(kb)


def test_network_fs_puts_it_in_the_local_cache(kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGKIT_NETWORK_FS", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    where = index_path(kb)
    assert where.parent == tmp_path / "xdg" / "logkit" / "index"
    with Index(kb) as ix:
        assert ix.path == where
        ix.refresh()
    assert where.is_file() and not (kb / ".cache").exists()


def test_a_read_only_store_still_answers(kb: Path) -> None:
    expected = from_scratch(kb)
    if os.geteuid() == 0:  # root writes anywhere: a .cache that cannot be a directory does as well
        (kb / ".cache").write_text("in the way")
    kb.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with Index(kb) as ix:
            assert ix.path is None  # no .cache/ possible: in memory
            ix.refresh()
            with ix.snapshot() as snap:
                assert snap.attempts() == expected["attempts"]
    finally:
        kb.chmod(0o755)


@pytest.mark.parametrize("damage", ["garbage", "foreign", "newer", "older", "derivation"])
def test_a_damaged_or_foreign_index_is_rebuilt(kb: Path, damage: str) -> None:
    expected = rows(kb)
    path = kb / ".cache" / "index.sqlite"
    if damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"not a database at all " * 100)
    else:
        conn = sqlite3.connect(path)
        if damage == "foreign":
            conn.execute("PRAGMA application_id = 7")
        elif damage == "newer":
            conn.execute("PRAGMA user_version = 99")
        elif damage == "older":  # rows derived under an older schema are rebuilt, not migrated in place
            conn.execute("PRAGMA user_version = 0")
        else:
            conn.execute("UPDATE meta SET value = 'old' WHERE key = 'derivation'")
        conn.execute("DELETE FROM attempts")  # what it holds must not be believed
        conn.commit()
        conn.close()
    with Index(kb) as ix:
        assert ix.path == path
    assert rows(kb) == expected


def test_deleting_the_cache_loses_nothing(kb: Path) -> None:
    expected = rows(kb)
    import shutil

    shutil.rmtree(kb / ".cache")
    assert rows(kb) == expected


def test_sixteen_runs_and_refresh_loops_lose_and_duplicate_nothing(sessions: Path) -> None:
    store = Store(sessions)
    sid = store.create("concurrency").id
    env = {**os.environ, "PYTHONPATH": f"{REPO}:{os.environ.get('PYTHONPATH', '')}"}
    loop = ("import sys, time; sys.path.insert(0, %r); from logkit.store.index import Index\n"
            "end = time.time() + 120\n"
            "while time.time() < end and open(sys.argv[2]).read() != 'stop':\n"
            "    with Index(sys.argv[1]) as ix:\n"
            "        ix.refresh()\n"
            "        with ix.snapshot() as s: s.attempts()\n"
            ) % str(REPO)
    stop = sessions.parent / "stop"
    stop.write_text("go")
    readers = [subprocess.Popen([sys.executable, "-c", loop, str(sessions), str(stop)], env=env) for _ in range(2)]
    runs = [subprocess.Popen([sys.executable, "-m", "logkit", "run", "--", "true"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(16)]
    try:
        for proc in runs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
    finally:
        stop.write_text("stop")
        for proc in readers:
            proc.wait(timeout=60)
    assert all(r.returncode == 0 for r in readers)
    raw = (sessions / sid / "events.jsonl").read_bytes()
    in_file = [json.loads(line) for line in raw.splitlines()]
    with Index(sessions) as ix:
        ix.refresh()
        with ix.snapshot() as snap:
            attempts = snap.attempts(session=sid)
            events = list(snap.events(sid))
            assert snap.problems() == []
    assert [a["short_id"] for a in attempts] == [e["short_id"] for e in in_file if e["kind"] == "attempt"]
    assert len(attempts) == 16 and all(a["status"] for a in attempts)
    assert [e["id"] for e in events] == [e["id"] for e in in_file]
    assert files.session_ids(sessions) == [sid]


def test_the_store_package_and_opening_the_index_need_no_pydantic(kb: Path) -> None:
    rows(kb)  # up to date: a refresh finds nothing to validate
    code = ("import sys; import logkit.store; from logkit.store.index import Index; "
            f"ix = Index({str(kb)!r}); ix.refresh(); s = ix.snapshot().__enter__(); s.attempts(); "
            "assert 'pydantic' not in sys.modules, 'pydantic imported'; from logkit.store import Store")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr


def test_an_attempt_row_is_the_same_from_the_models_and_from_the_stored_events(kb: Path) -> None:
    from logkit.store.derive import attempt_row
    from logkit.store.ingest import Ingest

    got = rows(kb)["attempts"]
    assert got
    with Index(kb) as ix:
        ingest = Ingest(ix.conn, kb)
        again = [attempt_row(a["session"], a["short_id"], ingest._attempt_events(a["session"], a["short_id"]))
                 for a in got]
    assert again == got


def test_what_the_run_path_asks(sessions: Path) -> None:
    """Next ids (never one a damaged or newer line claims), open attempts, the last launch with its
    probed environment: the questions logkit run asks before it spawns."""
    sid = Store(sessions).create("run path").id
    path = sessions / sid / "events.jsonl"
    attempt = files.event("attempt", sid, short_id="A1", argv=["python", "-m", "sglang.launch_server"], role="launch",
                          started=files.utc(), recorder_pid=1, recorder_host="elsewhere")
    env = files.event("environment", sid, attempt="A1", environment={"gpus": [{"index": 0, "name": "X", "compute_cap": "9.0"}]})
    lines = [attempt, env, {"v": 99, "kind": "attempt", "short_id": "A7"}]
    files.append(path, b"".join((json.dumps(e) + "\n").encode() for e in lines))
    files.append(path, b'{"v":1,"kind":"hypothesis","short_id":"H4","text":\n')  # damaged, names H4
    with Index(sessions) as ix:
        ix.refresh()
        with ix.snapshot() as snap:
            assert snap.next_short_id(sid, "A") == "A8"
            assert snap.next_short_id(sid, "H") == "H5"
            assert [a["short_id"] for a in snap.attempts(session=sid, open_only=True)] == ["A1"]
            launch = snap.last_launch(sid)
            assert launch is not None and launch["short_id"] == "A1"
            assert launch["environment"]["gpus"][0]["compute_cap"] == "9.0"
            assert snap.attempts(session=sid)[0]["arch"] == "SM90"
            assert len(snap.problems(session=sid)) == 2


def test_refreshing_one_session_leaves_the_others_as_they_were(kb: Path) -> None:
    rows(kb)
    first, second = sorted(p.name for p in kb.iterdir() if not p.name.startswith("."))[:2]
    for sid in (first, second):
        Store(kb).handle(sid).append(Note(session=sid, text=f"new in {sid}"))
    with Index(kb) as ix:
        assert ix.refresh([first]) == 1
        with ix.snapshot() as snap:
            assert [e["event"]["text"] for e in snap.events(first, ["note"])][-1] == f"new in {first}"
            assert f"new in {second}" not in [e["event"]["text"] for e in snap.events(second, ["note"])]
        assert ix.refresh() == 1


def test_the_filesystem_type_is_the_deepest_mount_above_the_path() -> None:
    from logkit.store.index import filesystem_type, on_network_fs

    mountinfo = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                 "40 22 0:50 / /scratch rw - lustre 10.0.0.1@tcp:/fs rw\n"
                 "41 22 0:51 / /home/my\\040docs rw - nfs4 srv:/docs rw\n")
    assert filesystem_type(Path("/scratch/me/sessions"), mountinfo) == "lustre"
    assert filesystem_type(Path("/home/my docs/s"), mountinfo) == "nfs4"
    assert filesystem_type(Path("/scratchy"), mountinfo) == "ext4"
    assert filesystem_type(Path("/x"), "rootfs / rootfs rw 0 0\nsrv:/a /x nfs rw 0 0\n") == "nfs"
    assert on_network_fs(Path("/")) in (True, False)


def test_a_missing_index_is_built_aside_and_appears_only_whole(kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build from nothing fills a private file and links it into place when complete: a crash
    half-way leaves no index (and no leftovers); the next refresh builds it, in WAL mode."""
    from logkit.store import ingest

    real, calls = ingest.Ingest.session, []

    def dies_on_the_second(self: ingest.Ingest, sid: str, path: Path) -> int:
        calls.append(sid)
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(self, sid, path)

    monkeypatch.setattr(ingest.Ingest, "session", dies_on_the_second)
    with Index(kb) as ix, pytest.raises(RuntimeError):
        ix.refresh()
    cache = kb / ".cache"
    assert not (cache / "index.sqlite").exists()
    assert not list(cache.glob("*.build*"))
    monkeypatch.setattr(ingest.Ingest, "session", real)
    got = rows(kb)
    assert got == from_scratch(kb)
    assert not list(cache.glob("*.build*"))
    conn = sqlite3.connect(cache / "index.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert "json" not in [c[1] for c in conn.execute("PRAGMA table_info(events)")]  # offsets, not copies
    conn.close()


def test_whole_events_are_read_again_from_their_lines(kb: Path) -> None:
    """The index keeps where each line is; a reader of whole events reads those lines (as written),
    and a file rewritten after the last refresh is named, never misread."""
    from logkit.errors import StoreError

    rows(kb)
    sid = sorted(p.name for p in kb.iterdir() if not p.name.startswith("."))[0]
    path = kb / sid / "events.jsonl"
    with Index(kb) as ix, ix.snapshot() as snap:
        got = [(e["line"], e["event"]) for e in snap.events(sid)]
        assert [d["decision_id"] for d in snap.decisions(session=sid)] == [
            e["decision_id"] for _line, e in got if e["kind"] == "decision"]
    assert got == [(n, json.loads(line)) for n, line in enumerate(path.read_text().splitlines(), start=1)]
    raw = path.read_bytes()
    path.write_bytes(raw.split(b"\n", 1)[1] + raw.split(b"\n", 1)[0] + b"\n")  # rewritten, no refresh
    with Index(kb) as ix, ix.snapshot() as snap, pytest.raises(StoreError, match="rewritten"):
        list(snap.events(sid))


def test_an_outcome_appended_later_rederives_its_attempt_from_the_file(sessions: Path) -> None:
    sid = Store(sessions).create("later outcome").id
    path = sessions / sid / "events.jsonl"
    attempt = files.event("attempt", sid, short_id="A1", argv=["python", "-m", "sglang.launch_server"], role="launch",
                          started=files.utc(), environment={"gpus": [{"index": 0, "name": "X", "compute_cap": "12.0"}]})
    files.append(path, (json.dumps(attempt) + "\n").encode())
    assert [a["status"] for a in rows(sessions)["attempts"]] == [None]
    outcome = files.event("outcome", sid, attempt="A1", status="oom", ended=files.utc())
    files.append(path, (json.dumps(outcome) + "\n").encode())
    got = rows(sessions)["attempts"]
    assert [(a["status"], a["category"], a["arch"]) for a in got] == [("oom", "oom", "SM120")]
    assert got == from_scratch(sessions)["attempts"]


def test_rows_as_tuples_of_chosen_columns(kb: Path) -> None:
    with Index(kb) as ix:
        ix.refresh()
        with ix.snapshot() as snap:
            dicts = snap.attempts()
            assert snap.attempts(tuples=True) == [tuple(d.values()) for d in dicts]
            assert snap.attempts(columns=("short_id", "status"), tuples=True) == [
                (d["short_id"], d["status"]) for d in dicts]
            assert snap.metrics(columns=("name",)) == [{"name": m["name"]} for m in snap.metrics()]
            with pytest.raises(ValueError, match="unknown columns"):
                snap.attempts(columns=("short_id; DROP TABLE attempts",))


def test_a_build_from_nothing_leaves_only_the_index(kb: Path) -> None:
    """One process fills a private file and links it into place: nothing else is left beside it."""
    import shutil

    expected = from_scratch(kb)
    shutil.rmtree(kb / ".cache", ignore_errors=True)
    with Index(kb) as ix:
        assert ix.refresh() == 3
    assert rows(kb) == expected
    assert sorted(p.name for p in (kb / ".cache").iterdir()) == [".gitignore", "index.sqlite", "index.sqlite.lock"]
