"""A session grown by appends is seen by the next refuted check (through the index, brought up to date
from the appended lines), which finds exactly what a fresh index of the whole session finds (random
campaigns, real files)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from logkit.store import files
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


def _runs(store: _Sessions) -> list[refuted.RefutedRun]:
    """What the check says of a launch choosing each backend value on SM120."""
    return [r for axis, values in (("moe_runner_backend", MOE), ("attention_backend", ATTN)) for v in values
            for r in refuted.check({axis: v}, "SM120", store)]  # type: ignore[arg-type]


def _fresh(path: Path) -> list[refuted.RefutedRun]:
    """The refuted runs of a copy of the session file alone, in a store with no index yet."""
    root = path.parent.parent.parent / f"fresh-{path.stat().st_size}"
    (root / SID).mkdir(parents=True)
    shutil.copyfile(path, root / SID / "events.jsonl")
    try:
        return _runs(_Sessions(root))
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
               for r in _runs(store)]
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
    _runs(_Sessions(root))
    with open(path, "ab") as fh:
        fh.write(json.dumps({**json.loads(outcome), "status": "arch_mismatch"}).encode() + b"\n")
    got = [(r.attempt, r.status) for r in _runs(_Sessions(root))]
    assert got == [(r.attempt, r.status) for r in _fresh(path)] and got
