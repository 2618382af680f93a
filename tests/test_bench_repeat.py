"""``logkit run --repeat N [--warmup]``: N recorded runs of a benchmark against one server, the
warm-up's figures not recorded, each headline figure shown as median with its spread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchclient import client_argv, client_env, stand_in_server, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
STAND_IN = str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang")


@pytest.fixture
def server() -> Iterator[int]:
    with stand_in_server() as port:
        yield port


def _logkit(sessions: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if not sessions.exists():
        subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), "session", "start", "bench"], check=True,
                       capture_output=True)
    return subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), *args], capture_output=True, text=True,
                          env=env or dict(os.environ), timeout=300)


def _events(sessions: Path) -> list[dict]:
    (f,) = sessions.glob("*/events.jsonl")
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


@pytest.mark.sglang
@pytest.mark.slow  # three runs of SGLang's real client (~10 s each, mostly its imports)
def test_real_client_repeated_after_a_warm_up(server: int, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    argv = client_argv(server, tiny_tokenizer(tmp_path / "tok"))
    done = _logkit(sessions, "run", "--repeat", "2", "--warmup", "--", *argv, env=client_env())
    assert done.returncode == 0, done.stderr[-3000:]
    evs = _events(sessions)
    attempts = [e for e in evs if e["kind"] == "attempt"]
    assert [a["label"] for a in attempts] == ["warm-up", "run 1/2", "run 2/2"]
    outcomes = {e["attempt"]: e for e in evs if e["kind"] == "outcome"}
    assert all(o["status"] == "exit_ok" for o in outcomes.values())
    assert outcomes[attempts[0]["short_id"]]["label"].startswith("warm-up: its ")
    metrics = [e for e in evs if e["kind"] == "metric"]
    assert {m["attempt"] for m in metrics} == {attempts[1]["short_id"], attempts[2]["short_id"]}  # not the warm-up
    runs = sorted(m["value"] for m in metrics if m["name"] == "output_throughput")
    assert len(runs) == 2 and {m["labels"]["repeat"] for m in metrics} == {"1/2", "2/2"}
    # the summary: median and min-max of the two runs (no bootstrap interval below 5)
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("logkit: output_throughput "))
    assert f"min-max {runs[0]:,.1f}-{runs[1]:,.1f}, 2 runs) tok/s" in line and "interval" not in line


def test_five_runs_give_a_bootstrap_interval_of_the_median(server: int, tmp_path: Path) -> None:
    # the stand-in client (logkit/demo/standin/fake_sglang: a fraction of a second a run) for the five runs
    sessions = tmp_path / "sessions"
    argv = ["env", f"PYTHONPATH={STAND_IN}", PY, "-m", "sglang.bench_serving", "--port", str(server),
            "--dataset-name", "random-ids", "--max-concurrency", "2"]
    done = _logkit(sessions, "run", "--repeat", "5", "--", *argv)
    assert done.returncode == 0, done.stderr[-3000:]
    attempts = [e for e in _events(sessions) if e["kind"] == "attempt"]
    assert [a["label"] for a in attempts] == [f"run {i}/5" for i in range(1, 6)]
    assert "logkit: output_throughput 62.9 (min-max 62.9-62.9, 95% interval of the median 62.9-62.9, 5 runs) tok/s" \
        in done.stderr


def test_repeat_refuses_what_is_not_a_benchmark(tmp_path: Path) -> None:
    done = _logkit(tmp_path / "sessions", "run", "--repeat", "3", "--", PY, "-c", "print(1)")
    assert done.returncode != 0 and "logkit: error: --repeat and --warmup repeat an SGLang benchmark" in done.stderr
    assert "fix: logkit run --repeat 5 --warmup -- python -m sglang.benchmark.serving" in done.stderr
    assert not any(e["kind"] == "attempt" for e in _events(tmp_path / "sessions"))
    done = _logkit(tmp_path / "sessions", "run", "--repeat", "0", "--", PY, "-m", "sglang.bench_serving")
    assert done.returncode != 0 and "--repeat 0: give 1 or more runs" in done.stderr
