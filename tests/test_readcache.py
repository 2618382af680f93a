"""The per-session read cache (logkit/readcache.py, the builder's until it reads the index) and the
refuted-configuration check, which reads the index (logkit/store/index.py) instead.

Real files: a store written through the store API, a new failure appended, a store whose
``.cache`` cannot be written (the index is then in memory), the builder's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from logkit.events import Attempt, Environment, Gpu, LaunchConfig, Outcome
from logkit.readcache import CACHE_DIR, SessionCache
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


def _hits(store: Store) -> list[tuple[str, str]]:
    return [(r.session, r.attempt) for r in refuted.check(LIVE, "SM120", store)]


def test_a_new_failure_is_seen_by_the_next_check(store: Store) -> None:
    assert _hits(store) == [("s-one", "A1")]
    _launch(store, "s-three", "flashinfer_trtllm", "arch_mismatch")
    assert _hits(store) == [("s-three", "A1")]  # one refuted cell, named by its latest refuting attempt


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


def test_a_cache_that_cannot_be_written_never_fails_the_check(store: Store) -> None:
    (store.root / CACHE_DIR).write_text("a file where the cache folder would go")  # as a read-only store would
    assert _hits(store) == [("s-one", "A1")]
    assert _hits(store) == [("s-one", "A1")]
    assert (store.root / CACHE_DIR).read_text().startswith("a file")


def test_the_builder_reads_and_makes_frames_without_cyclic_gc(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Full collections rescan every event object read so far: load 19.4 s with them, 7.9 s without (100k events)."""
    import gc

    from logkit.builder import frames as frames_mod
    from logkit.builder import load as load_mod
    from logkit.builder.load import load

    seen: list[bool] = []
    real_read = load_mod._read_cached
    monkeypatch.setattr(load_mod, "_read_cached", lambda *a: seen.append(gc.isenabled()) or real_read(*a))
    real_make = frames_mod._make_frames
    monkeypatch.setattr(frames_mod, "_make_frames", lambda loaded: seen.append(gc.isenabled()) or real_make(loaded))
    assert gc.isenabled()
    loaded = load(store.root)
    frames = frames_mod.make_frames(loaded)
    assert seen == [False, False] and gc.isenabled()  # paused inside, restored after
    assert len(frames.attempts) == 2
    gc.disable()
    try:
        load(store.root)
        assert not gc.isenabled()  # nested: a caller's own pause is kept
    finally:
        gc.enable()
