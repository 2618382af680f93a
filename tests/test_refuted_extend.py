"""A session grown by appends is seen by the next refuted check, which finds exactly what a fresh
reading of the whole session (no read cache) finds (random campaigns, real files); a big session
without a cache is not read before a launch but warmed for the next one."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from logkit import files
from logkit.readcache import CACHE_DIR, read_file
from logkit.reasoning import refuted
from logkit.store import Store

SID = "campaign"
MOE = ["flashinfer_trtllm", "flashinfer_cutlass", "triton"]
ATTN = ["flashinfer", "fa3"]
STATUSES = ["ready", "arch_mismatch", "oom", "garbage", "exit_ok", "import_error", "ready"]


class _Sessions:
    def __init__(self, root: Path) -> None:
        self.root = root


def _line(event: dict) -> bytes:
    return (json.dumps(event, separators=(",", ":")) + "\n").encode()


def _launch(rng: random.Random, n: int, probed: bool) -> bytes:
    fp = {"moe_runner_backend": rng.choice(MOE), "attention_backend": rng.choice(ATTN), "tp_size": 8}
    env = {"gpus": [{"index": 0, "name": "RTX PRO 6000", "compute_cap": "12.0"}]}
    attempt = files.event("attempt", SID, short_id=f"A{n}", argv=["python", "-m", "sglang.launch_server"], cwd="/",
                          role=rng.choice(["launch", "launch", "launch", "bench"]), started=files.utc(),
                          environment={} if probed else env, launch={"fingerprint": fp, "non_default": fp})
    out = _line(attempt)
    if probed:
        out += _line(files.event("environment", SID, attempt=f"A{n}", environment=env))
    return out + _line(files.event("outcome", SID, attempt=f"A{n}", status=rng.choice(STATUSES), label=f"end {n}"))


def _fresh(path: Path) -> list[refuted.RefutedRun]:
    """The refuted runs of a copy of the session file alone, in a store with no read cache."""
    root = path.parent.parent.parent / f"fresh-{path.stat().st_size}"
    (root / SID).mkdir(parents=True)
    shutil.copyfile(path, root / SID / "events.jsonl")
    try:
        return refuted.refuted_runs(_Sessions(root))  # type: ignore[arg-type]
    finally:
        shutil.rmtree(root)


def _full(path: Path) -> list[tuple]:
    return [(r.attempt, r.status, r.arch, sorted(r.suspects.items()), r.label) for r in _fresh(path)]


@pytest.mark.parametrize("seed", range(6))
def test_appends_are_seen_by_the_next_check_and_agree_with_a_fresh_read(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "sessions"
    path = Store(root).create("c", session_id=SID, make_current=False).events_path
    store = _Sessions(root)
    n = 0
    counts: set[int] = set()
    for step in range(25):
        with open(path, "ab") as fh:
            for _ in range(rng.randint(0, 3)):
                n += 1
                fh.write(_launch(rng, n, probed=rng.random() < 0.5))
            if rng.random() < 0.3:  # lines that say nothing about a backend
                fh.write(_line({"v": 1, "id": f"n{step}", "session": SID, "ts": files.utc(), "kind": "note",
                                "text": "a note"}))
        got = [(r.attempt, r.status, r.arch, sorted(r.suspects.items()), r.label)
               for r in refuted.refuted_runs(store)]  # type: ignore[arg-type]
        assert got == _full(path), step
        counts.add(len(got))
    assert len(counts) > 1  # rows came (and went): the comparison is not vacuous


def test_an_outcome_of_an_attempt_recorded_before_the_new_lines_reads_it_all(tmp_path: Path) -> None:
    rng = random.Random(1)
    root = tmp_path / "sessions"
    path = Store(root).create("c", session_id=SID, make_current=False).events_path
    raw = _launch(rng, 1, probed=False)
    attempt, outcome = raw.split(b"\n")[0] + b"\n", raw.split(b"\n")[1] + b"\n"
    with open(path, "ab") as fh:
        fh.write(attempt)
    refuted.refuted_runs(_Sessions(root))  # type: ignore[arg-type]
    with open(path, "ab") as fh:
        fh.write(json.dumps({**json.loads(outcome), "status": "arch_mismatch"}).encode() + b"\n")
    got = [(r.attempt, r.status) for r in refuted.refuted_runs(_Sessions(root))]  # type: ignore[arg-type]
    assert got == [(r.attempt, r.status) for r in _fresh(path)] and got


def test_before_a_launch_a_big_session_without_a_cache_is_not_read_but_warmed(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    from types import SimpleNamespace

    rng = random.Random(3)
    root = tmp_path / "sessions"
    path = Store(root).create("c", session_id=SID, make_current=False).events_path
    lines = [json.loads(line) for line in _launch(rng, 1, probed=False).splitlines()]
    lines[0]["role"] = "launch"
    lines[0]["launch"] = {"fingerprint": {"moe_runner_backend": "only_here", "tp_size": 8}}
    lines[-1]["status"] = "arch_mismatch"
    with open(path, "ab") as fh:
        fh.write(b"".join(_line(e) for e in lines))
        for n in range(2, 200):
            fh.write(_launch(rng, n, probed=False))
    expected = [r for r in _fresh(path) if r.suspects == {"moe_runner_backend": "only_here"}]
    assert expected
    warmed: list[Path] = []
    monkeypatch.setattr(refuted, "COLD_LIMIT", path.stat().st_size // 2)
    monkeypatch.setattr(refuted, "_warm_in_background", warmed.append)
    monkeypatch.setenv(refuted.ENV_ARCH, "SM120")
    derived: list[int] = []
    real = refuted._derive
    monkeypatch.setattr(refuted, "_derive", lambda sid, raw: derived.append(len(raw)) or real(sid, raw))
    run = expected[0]
    plan = SimpleNamespace(launch={"fingerprint": {**run.suspects, "tp_size": 8}})
    err = io.StringIO()
    assert refuted.check_launch(plan, None, str(root), stderr=err) is True
    assert derived == [] and warmed == [root]
    assert f"did not read {SID}" in err.getvalue()
    # what the background process does; the next check reads the cache and warns
    refuted.refuted_runs(_Sessions(root))  # type: ignore[arg-type]
    err = io.StringIO()
    assert refuted.check_launch(plan, None, str(root), stderr=err) is True
    assert "did not read" not in err.getvalue() and f"in {SID} " in err.getvalue()


def test_the_background_warmer_fills_the_cache(tmp_path: Path) -> None:
    rng = random.Random(4)
    root = tmp_path / "sessions"
    path = Store(root).create("c", session_id=SID, make_current=False).events_path
    with open(path, "ab") as fh:
        for n in range(1, 20):
            fh.write(_launch(rng, n, probed=False))
    import subprocess
    import sys
    import time

    # the warmer waits for the logkit that started it: here a stand-in that ends at once
    stand_in = subprocess.Popen([sys.executable, "-c", f"from logkit.reasoning import refuted; "
                                 f"refuted._warm_in_background(__import__('pathlib').Path({str(root)!r}))"])
    stand_in.wait()
    cache = root / CACHE_DIR / "refuted.json"
    deadline = time.time() + 60
    while not cache.exists() and time.time() < deadline:
        time.sleep(0.1)
    assert SID in read_file(cache)["sessions"]
