"""`logkit run` end to end on SGLang commands: the real runner, real processes, real files.

No GPU here, so the live-server paths run against logkit/demo/standin/fakeserver.py (reached as
``python -m sglang.launch_server`` through the stand-in package logkit/demo/standin/fake_sglang, put on the
child's PYTHONPATH only; logkit still parses the flags with the real SGLang in an isolated
interpreter). The real ``python -m sglang.launch_server`` runs too, and fails here for real.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from benchclient import client_argv, client_env, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
FAKE = str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang")
SECRET = "sk-live-Zq8vK2mN4pR7tW1x"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    d = tmp_path / "sessions"
    subprocess.run([PY, "-m", "logkit", "--sessions", str(d), "session", "start", "live"], check=True, capture_output=True)
    return d


def logkit_run(sessions: Path, flags: list[str], cmd: list[str], *, mode: str | None = None, timeout: float = 90,
               wait: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess | subprocess.Popen:
    env = dict(os.environ if env is None else env)
    if mode:
        env["FAKE_SGLANG_MODE"] = mode
    argv = [PY, "-m", "logkit", "--sessions", str(sessions), "run", "--yes", "--grace", "5", *flags, "--", *cmd]
    if not wait:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def fake_launch(port: int, *extra: str) -> list[str]:
    return ["env", f"PYTHONPATH={FAKE}", PY, "-m", "sglang.launch_server", "--model-path", "fake/model",
            "--host", "127.0.0.1", "--port", str(port), *extra]


def events(sessions: Path) -> list[dict]:
    (f,) = sessions.glob("*/events.jsonl")
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def kind(evs: list[dict], k: str) -> list[dict]:
    return [e for e in evs if e["kind"] == k]


def no_secret_on_disk(sessions: Path) -> None:
    for p in sessions.rglob("*"):
        if p.is_file():
            assert SECRET not in p.read_text(errors="replace"), p


@pytest.mark.slow
def test_healthy_server_smoke_server_info_timeline_and_linked_bench(sessions: Path) -> None:
    port = free_port()
    server = logkit_run(sessions, ["--smoke", "What is 3 + 5?"], fake_launch(port, "--api-key", SECRET), wait=False)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("fake server never became ready")
        # SGLang's real benchmark client (tests/benchclient.py: stand-in torchvision, tiny tokenizer)
        tok = tiny_tokenizer(sessions.parent / "tokenizer")
        bench = logkit_run(sessions, [], client_argv(port, tok, num_prompts=8, concurrency=4), env=client_env())
        assert bench.returncode == 0, bench.stderr
        deadline = time.time() + 20
        while time.time() < deadline and not kind(events(sessions), "smoke"):
            time.sleep(0.3)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    evs = events(sessions)
    launch, bench_attempt = kind(evs, "attempt")
    assert launch["role"] == "launch" and launch["launch"]["parser"] == "sglang"
    assert launch["launch"]["non_default"]["api_key"] != SECRET
    outcomes = {o["attempt"]: o for o in kind(evs, "outcome")}
    out = outcomes[launch["short_id"]]
    assert out["status"] == "ready", out
    assert out["ready_at"]
    stages = [m["stage"] for m in out["timeline"]]
    for stage in ("weights_loaded", "kv_cache_allocated", "cuda_graphs_captured", "http_listening", "ready"):
        assert stage in stages
    kv = next(m for m in out["timeline"] if m["stage"] == "kv_cache_allocated")
    assert kv["detail"]["tokens"] == 442913.0
    (info,) = kind(evs, "server_info")
    assert info["version"] == "0.5.23" and info["fingerprint"]["attention_backend"] == "flashinfer"
    assert info["resolved"]["api_key"] != SECRET
    (smoke,) = kind(evs, "smoke")
    assert smoke["ok"] and "8" in smoke["reply"] and smoke["latency_s"] >= 0
    # The benchmark: --output-file added into the session, metrics linked to the launch it measured.
    assert bench_attempt["role"] == "bench"
    assert "--output-file" in bench_attempt["argv"]
    out_file = bench_attempt["argv"][bench_attempt["argv"].index("--output-file") + 1]
    assert str(sessions) in out_file and Path(out_file).is_file()
    metrics = {m["name"]: m for m in kind(evs, "metric")}
    assert metrics["output_throughput"]["value"] > 0 and metrics["completed"]["value"] == 8
    assert metrics["mean_ttft_ms"]["unit"] == "ms" and metrics["p95_itl_ms"]["unit"] == "ms"
    m = metrics["request_throughput"]
    assert m["server_attempt"] == launch["short_id"] and m["attempt"] == bench_attempt["short_id"]
    assert m["labels"]["max_concurrency"] == 4 and m["labels"]["dataset"] == "random-ids"
    assert outcomes[bench_attempt["short_id"]]["status"] == "exit_ok"
    no_secret_on_disk(sessions)


@pytest.mark.slow
def test_garbage_reply_marks_garbage(sessions: Path) -> None:
    r = logkit_run(sessions, ["--smoke", "What is 3 + 5?", "--smoke-only"], fake_launch(free_port()), mode="garbage")
    evs = events(sessions)
    (smoke,) = kind(evs, "smoke")
    assert not smoke["ok"] and "repeated" in smoke["reason"] and smoke["reply"].startswith("!!!!!!")
    (out,) = kind(evs, "outcome")
    assert out["status"] == "garbage", r.stderr


@pytest.mark.slow
def test_nan_after_ready_is_nan_with_ready_time(sessions: Path) -> None:
    logkit_run(sessions, [], fake_launch(free_port()), mode="nan")
    (out,) = kind(events(sessions), "outcome")
    assert out["status"] == "nan" and out["ready_at"] and out["signal"] == 9
    assert any("NaN in the logits" in e["text"] for e in out["evidence"])


@pytest.mark.slow
def test_hang_before_ready_is_stopped(sessions: Path) -> None:
    t0 = time.time()
    logkit_run(sessions, ["--hang-timeout", "2"], fake_launch(free_port()), mode="hang")
    assert time.time() - t0 < 60
    (out,) = kind(events(sessions), "outcome")
    assert out["status"] == "hang" and "no output" in out["label"]


@pytest.mark.slow
def test_ready_endpoint_never_answering_is_hang(sessions: Path) -> None:
    logkit_run(sessions, ["--hang-timeout", "2"], fake_launch(free_port()), mode="stuck")
    (out,) = kind(events(sessions), "outcome")
    assert out["status"] == "hang" and "ready endpoint" in out["label"], out["label"]
    assert "http_listening" in [m["stage"] for m in out["timeline"]]


@pytest.mark.slow
def test_log_level_warning_ready_from_http(sessions: Path) -> None:
    logkit_run(sessions, ["--smoke", "hi", "--smoke-only"], fake_launch(free_port(), "--log-level", "warning"),
               mode="warning")
    evs = events(sessions)
    (out,) = kind(evs, "outcome")
    assert out["status"] == "ready" and out["ready_at"]
    assert not any("fired up" in e["text"] for e in out["evidence"])
    assert out["timeline"][-1]["stage"] == "ready" and out["timeline"][-1]["detail"]["via"] == "HTTP /ready"
    assert kind(evs, "smoke")[0]["ok"]


@pytest.mark.slow
def test_real_launch_server_fails_here_and_is_classified(sessions: Path) -> None:
    r = logkit_run(sessions, [], [PY, "-m", "sglang.launch_server", "--model-path", "/nonexistent", "--port",
                                  str(free_port())])
    assert r.returncode != 0
    evs = events(sessions)
    (att,) = kind(evs, "attempt")
    assert att["launch"]["parser"] == "sglang" and att["launch"]["sglang_version"] == "0.5.23"
    (out,) = kind(evs, "outcome")
    assert out["status"] == "import_error", out
    assert any("ModuleNotFoundError" in e["text"] for e in out["evidence"])


def test_preflight_refuses_a_typo_before_launch(sessions: Path) -> None:
    r = logkit_run(sessions, [], [PY, "-m", "sglang.launch_server", "--model-path", "/m", "--attention-backend",
                                  "flashinfe"])
    assert r.returncode != 0
    assert "invalid choice: 'flashinfe'" in r.stderr and "'flashinfer'" in r.stderr and "--no-preflight" in r.stderr
    assert not kind(events(sessions), "attempt")
