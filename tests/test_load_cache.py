"""The builder's read cache (``sessions/.cache/load.json``): same result as reading every line, never trusted.

Each test reads a real store (``kb_factory.realistic`` with planted text, plus lines that do not
validate) without the cache, then through a cold and a warm cache, and compares everything the
later stages use: events, grouping, problems, facts and frames.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import kb_factory
import pandas as pd
import pytest

from logkit.builder.frames import make_frames
from logkit.builder.load import Loaded, load
from logkit import readcache
from logkit.readcache import CACHE_DIR, read_file, write_file
from logkit.store import Store

S1 = "2026-11-14-glm5-sm120"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    store = kb_factory.realistic(tmp_path / "sessions", planted=True)
    path = store.root / S1 / "events.jsonl"
    lines = path.read_bytes().split(b"\n")
    # a line that does not validate, a repeated event id, a torn last line: problems, skipped lines
    lines.insert(3, b'{"v":1,"kind":"metric","session":"x","name":"n","value":"not a number"}')
    lines.insert(5, lines[6])
    path.write_bytes(b"\n".join(lines).rstrip(b"\n") + b"\n" + b'{"v":1,"kind":"no')
    return store.root


@pytest.fixture(params=["whole", "by-entry"])
def parse(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The cache file read as a small one is (parsed whole) and as a big store's is (entry by entry)."""
    if request.param == "by-entry":
        monkeypatch.setattr(readcache, "_EAGER_BYTES", 0)
    return str(request.param)


def _cache(root: Path) -> Path:
    return root / CACHE_DIR / "load.json"


def snapshot(loaded: Loaded) -> dict[str, Any]:
    """Everything the later stages read from a load, comparable with ``==``."""
    frames = make_frames(loaded)
    return {
        "problems": [str(p) for p in loaded.problems],
        "moved": loaded.moved,
        "sessions": {
            sid: (s.meta, s.events, s.attempts, s.outcomes, s.metrics, s.decisions, s.hypotheses, s.verdicts,
                  s.todos, s.notes, s.smokes, s.server_info, s.environments, [str(p) for p in s.problems])
            for sid, s in loaded.sessions.items()
        },
        "facts": {ref: f.fields() for ref, f in frames.facts.items()},
        # the order of a fact's dicts is what a page lists (versions): == on dicts would not see it
        "facts order": {ref: json.dumps(f.fields(), default=repr) for ref, f in frames.facts.items()},
        "attempts": frames.attempts,
        "metrics": frames.metrics,
    }


def same(a: dict[str, Any], b: dict[str, Any]) -> None:
    pd.testing.assert_frame_equal(a.pop("attempts"), b.pop("attempts"))
    pd.testing.assert_frame_equal(a.pop("metrics"), b.pop("metrics"))
    assert a == b


@pytest.mark.usefixtures("parse")
def test_cold_and_warm_cache_give_what_reading_every_line_gives(root: Path) -> None:
    plain = snapshot(load(root, cache=False))
    assert any("torn" in p for p in plain["problems"]) and len(plain["problems"]) >= 3
    cold = load(root)
    assert set(cold.cached.values()) == {"derived"} and _cache(root).exists()
    same(snapshot(cold), plain)
    warm = load(root)
    assert set(warm.cached.values()) == {"hit"}
    same(snapshot(warm), snapshot(load(root, cache=False)))
    # the environments repeated across attempts were validated once and are shared, equal to the file's
    attempts = [a for a in warm.sessions[S1].attempts.values() if a.environment is not None]
    assert len({id(a.environment) for a in attempts}) < len(attempts)
    data = read_file(_cache(root))
    assert data["sessions"][S1][-1]["shared"]


def test_a_changed_session_is_read_again_and_the_others_kept(root: Path) -> None:
    load(root)
    handle = Store(root).handle(S1)
    from logkit.events import Note

    handle.append(Note(session=S1, text="appended after the cache was written"))
    loaded = load(root)
    assert loaded.cached[S1] == "derived" and {v for k, v in loaded.cached.items() if k != S1} == {"hit"}
    assert loaded.sessions[S1].notes[-1].text == "appended after the cache was written"
    same(snapshot(loaded), snapshot(load(root, cache=False)))
    assert load(root).cached[S1] == "hit"


def test_a_touched_file_is_read_again(root: Path) -> None:
    load(root)
    path = root / S1 / "events.jsonl"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert load(root).cached[S1] == "derived"


@pytest.mark.parametrize("damage", [b"", b"{", b"[]", b'{"format": 1, "sessions": []}', b"\xff\xfe"])
def test_a_damaged_cache_file_is_rebuilt(root: Path, damage: bytes) -> None:
    plain = snapshot(load(root, cache=False))
    load(root)
    _cache(root).write_bytes(damage)
    loaded = load(root)
    assert set(loaded.cached.values()) == {"derived"}
    same(snapshot(loaded), plain)
    assert read_file(_cache(root))["reader"] == "load"


def _edit_entry(root: Path, sid: str, edit: Any) -> None:
    data = read_file(_cache(root))
    edit(data["sessions"][sid][-1])
    write_file(_cache(root), data)


@pytest.mark.parametrize("edit", [
    # a good line listed as a problem without one: a cache cannot hide a line
    lambda v: v["skip"].append(1),
    # a problem line not skipped: it does not validate, so the session is read again
    lambda v: v.__setitem__("skip", []),
    # an environment that is not the one on those lines: its bytes are not there
    lambda v: v["shared"][0].__setitem__(1, v["shared"][0][1].replace("NVIDIA", "AMD")),
    lambda v: v["shared"][0].__setitem__(2, [1, 2]),
    lambda v: v.__setitem__("shared", [["environment", '{"gpus": 7}', [2, 3]]]),
    lambda v: v.__setitem__("problems", "none"),
    # a fact row of the wrong shape is derived again from the events
    lambda v: v["facts"].__setitem__("A1", ["x"]),
    lambda v: v["facts"].__setitem__("A1", [1, None, "8", None, {}, None, {}, None, "no", ""]),
    # a row of the right length whose start time is no time: that session's facts come from its events
    lambda v: v["facts"].__setitem__("A1", v["facts"]["A1"][:11] + [5] + v["facts"]["A1"][12:]),
    lambda v: v["facts"].__setitem__("A1", v["facts"]["A1"][:11] + ["yesterday"] + v["facts"]["A1"][12:]),
    # metric facts, the time span and the few events' lines: each checked, never believed
    lambda v: v["metrics"].append(["x"]),
    lambda v: v["metrics"].append(["n", "1", None, None, None, None, None, "2026-01-01T00:00:00+00:00"]),
    lambda v: v.__setitem__("span", ["not a time", "x"]),
    lambda v: v.__setitem__("declared", [1]),
    lambda v: v["light"].append(max(v["light"]) + 1),
    lambda v: v["light"].pop(),
])
def test_a_damaged_entry_with_a_matching_key_is_not_trusted(root: Path, edit: Any) -> None:
    plain = snapshot(load(root, cache=False))
    load(root)
    _edit_entry(root, S1, edit)
    same(snapshot(load(root)), plain)


@pytest.mark.usefixtures("parse")
def test_one_damaged_line_of_the_cache_costs_only_its_session(root: Path) -> None:
    plain = snapshot(load(root, cache=False))
    load(root)
    lines = _cache(root).read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(json.dumps(S1).encode()))
    lines[at] = lines[at][:len(lines[at]) // 2]  # cut inside its entry
    _cache(root).write_bytes(b"\n".join(lines))
    loaded = load(root)
    assert loaded.cached[S1] == "derived" and list(loaded.cached.values()).count("hit") == len(loaded.cached) - 1
    same(snapshot(loaded), plain)
    again = load(root)  # rewritten whole: every session a hit
    assert set(again.cached.values()) == {"hit"}
    same(snapshot(again), snapshot(load(root, cache=False)))


def test_a_cache_copied_with_the_store_is_not_trusted(root: Path, tmp_path: Path) -> None:
    load(root)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)  # a checkout or a copy: other inodes and ctimes
    loaded = load(copy)
    assert set(loaded.cached.values()) == {"derived"}
    same(snapshot(loaded), snapshot(load(copy, cache=False)))


def test_a_cache_that_cannot_be_written_costs_only_speed(root: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes through read-only permissions")
    plain = snapshot(load(root, cache=False))
    folder = root / CACHE_DIR
    folder.mkdir()
    folder.chmod(0o555)
    try:
        loaded = load(root)
        assert set(loaded.cached.values()) == {"derived"} and not _cache(root).exists()
        same(snapshot(loaded), plain)
    finally:
        folder.chmod(0o755)


def test_a_cache_that_cannot_be_written_costs_only_speed_even_as_root(root: Path) -> None:
    plain = snapshot(load(root, cache=False))
    (root / CACHE_DIR).write_text("a file where the cache folder should be")
    loaded = load(root)
    assert set(loaded.cached.values()) == {"derived"}
    same(snapshot(loaded), plain)


def test_strict_refuses_from_the_cache_as_without_it(root: Path) -> None:
    from logkit.errors import BadInput

    load(root)
    with pytest.raises(BadInput) as warm:
        load(root, strict=True)
    with pytest.raises(BadInput) as plain:
        load(root, strict=True, cache=False)
    assert str(warm.value) == str(plain.value)


def test_an_empty_store_and_a_missing_one(tmp_path: Path) -> None:
    for root in (tmp_path / "missing", tmp_path):
        loaded = load(root)
        frames = make_frames(loaded)
        assert loaded.sessions == {} and frames.attempts.empty and frames.metrics.empty
        assert list(frames.attempts.columns)[:3] == ["ref", "session", "attempt"]
