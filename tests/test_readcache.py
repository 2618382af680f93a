"""The per-session read cache (logkit/readcache.py) and the refuted-configuration check reading it.

Real files: a store written through the store API, the cache file on disk, damaged and stale
caches, a copied store (a planted cache from git), a read-only store, and the check as a real
``logkit run`` process reading a cache it did not write.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logkit.events import Attempt, Environment, Gpu, LaunchConfig, Outcome
from logkit.readcache import CACHE_DIR, SessionCache, read_file, write_file
from logkit.reasoning import refuted
from logkit.store import Store

SM120 = Environment(gpus=[Gpu(index=0, name="NVIDIA RTX PRO 6000 Blackwell", compute_cap="12.0")])
LIVE = {"moe_runner_backend": "flashinfer_trtllm", "attention_backend": "flashinfer", "tp_size": 8}


def _launch(store: Store, sid: str, backend: str, status: str) -> None:
    handle = store.handle(sid)
    with handle.transaction() as txn:
        short = txn.next_short_id("A")
        fp = {"moe_runner_backend": backend, "attention_backend": "flashinfer", "tp_size": 8}
        txn.append(Attempt(session=sid, short_id=short, argv=["python", "-m", "sglang.launch_server"], role="launch",
                           environment=SM120, launch=LaunchConfig(fingerprint=fp, non_default=fp)))
        txn.append(Outcome(session=sid, attempt=short, status=status))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store(tmp_path / "sessions")
    for name in ("s-one", "s-two", "s-three"):
        st.create(name, session_id=name, make_current=False)
    _launch(st, "s-one", "flashinfer_trtllm", "arch_mismatch")
    _launch(st, "s-two", "triton", "ready")
    return st


def _cache(store: Store) -> Path:
    return store.root / CACHE_DIR / "refuted.json"


def _hits(store: Store) -> list[tuple[str, str]]:
    return [(r.session, r.attempt) for r in refuted.check(LIVE, "SM120", store)]


def test_the_check_writes_the_cache_then_reads_only_it(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _hits(store) == [("s-one", "A1")]
    data = read_file(_cache(store))
    assert sorted(data["sessions"]) == ["s-one", "s-three", "s-two"]
    assert (store.root / CACHE_DIR / ".gitignore").read_text().splitlines()[-1] == "*"
    # unchanged files: not one session file is read again
    derived = []
    monkeypatch.setattr(refuted, "_derive", lambda sid, raw: derived.append(sid) or [])
    assert _hits(store) == [("s-one", "A1")]
    assert derived == []


def test_a_new_failure_makes_that_session_stale(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _hits(store) == [("s-one", "A1")]
    _launch(store, "s-three", "flashinfer_trtllm", "arch_mismatch")
    seen = []
    real = refuted._derive
    monkeypatch.setattr(refuted, "_derive", lambda sid, raw: seen.append(sid) or real(sid, raw))
    assert _hits(store) == [("s-three", "A1")]  # one refuted cell, named by its latest refuting attempt
    assert seen == ["s-three"]  # only the changed session was read again


def test_a_touched_file_is_derived_again_and_its_digest_kept(store: Store) -> None:
    cache = SessionCache(store.root, "probe", 1)
    calls = []
    path = store.root / "s-one" / "events.jsonl"
    assert cache.get("s-one", path, lambda raw: calls.append(1) or len(raw)) == path.stat().st_size
    digest = cache.digest("s-one")
    assert cache.get("s-one", path, lambda raw: calls.append(1) or -1) == path.stat().st_size
    assert cache.last["s-one"] == "hit" and calls == [1]
    os.utime(path, ns=(1, 1))
    assert cache.get("s-one", path, lambda raw: calls.append(1) or -1) == -1
    assert cache.last["s-one"] == "derived" and calls == [1, 1] and cache.digest("s-one") == digest


@pytest.mark.parametrize("damage", [
    b"", b"{not json", b"[]", b'{"format": 1, "reader": "refuted", "version": 999, "sessions": {}}',
    b"[" * 100_000,
])
def test_a_damaged_cache_file_is_rebuilt(store: Store, damage: bytes) -> None:
    assert _hits(store) == [("s-one", "A1")]
    _cache(store).write_bytes(damage)
    assert _hits(store) == [("s-one", "A1")]
    assert sorted(read_file(_cache(store))["sessions"]) == ["s-one", "s-three", "s-two"]


def test_a_damaged_entry_with_a_matching_key_is_not_trusted(store: Store) -> None:
    assert _hits(store) == [("s-one", "A1")]
    data = read_file(_cache(store))
    data["sessions"]["s-one"][-1] = [{"attempt": 7}]  # the shape the reader refuses
    data["sessions"]["s-two"][-1] = "garbage"
    data["sessions"]["s-three"] = {"not": "a list"}
    write_file(_cache(store), data)
    assert _hits(store) == [("s-one", "A1")]
    assert read_file(_cache(store))["sessions"]["s-one"][-1][0]["attempt"] == "A1"


def test_a_planted_cache_in_a_copied_store_is_not_trusted(store: Store, tmp_path: Path) -> None:
    """A cache committed to git (or copied along) has another inode and ctime: it is re-derived."""
    assert _hits(store) == [("s-one", "A1")]
    data = read_file(_cache(store))
    forged = {"attempt": "A9", "status": "arch_mismatch", "arch": "SM120", "label": None,
              "suspects": {"attention_backend": "flashinfer"}}
    data["sessions"]["s-two"][-1] = [forged]
    write_file(_cache(store), data)
    copy = Store(tmp_path / "copy")
    shutil.copytree(store.root, copy.root)
    assert _hits(copy) == [("s-one", "A1")]


def test_a_cache_that_cannot_be_written_never_fails_the_check(store: Store) -> None:
    (store.root / CACHE_DIR).write_text("a file where the cache folder would go")  # as a read-only store would
    assert _hits(store) == [("s-one", "A1")]
    assert _hits(store) == [("s-one", "A1")]
    assert (store.root / CACHE_DIR).read_text().startswith("a file")


@pytest.mark.slow
def test_logkit_run_warns_from_the_cache_and_lists_no_cache_session(store: Store) -> None:
    assert _hits(store) == [("s-one", "A1")]
    env = {**os.environ, "LOGKIT_SESSIONS": str(store.root), "LOGKIT_GPU_ARCH": "SM120"}
    listed = subprocess.run([sys.executable, "-m", "logkit", "session", "list"], capture_output=True, text=True,
                            env=env, timeout=60)
    assert listed.returncode == 0 and ".cache" not in listed.stdout and "s-one" in listed.stdout
    before = _cache(store).read_bytes()
    from logkit.reasoning.refuted import warning
    text = warning(refuted.check(LIVE, "SM120", store)[0])
    assert "s-one A1" in text and _cache(store).read_bytes() == before  # nothing changed: not rewritten
