"""The accuracy gate: logkit's shipped question set, scored by exact match against a ready server;
below the threshold the launch is ``inaccurate`` (a refuting failure) with the score and the wrong
answers recorded. Live against logkit/demo/standin/fakeserver.py with a share of the answers wrong."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from logkit.capture.sglang import accuracy
from logkit.errors import BadInput

pytestmark = pytest.mark.slow  # live launches with the accuracy gate: seconds each

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
FAKE = str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang")


def test_the_set_is_fixed_exact_and_few_shot() -> None:
    qs = accuracy.questions()
    assert len(qs) == 40 and len({q.text for q in qs}) == 40
    assert qs == accuracy.questions() and qs[0].text.startswith("What is ")  # generated with a fixed seed
    for q in qs[:24]:
        a, op, b = q.text[len("What is "):-1].split()
        assert int(q.answer) == {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
    p = accuracy.prompt("What is 2 + 2?")
    assert p.count("Question: ") == 4 and p.endswith("Question: What is 2 + 2?\nAnswer:")
    assert accuracy.matches(" Paris.\nQuestion: ...", "Paris") and accuracy.matches("paris", "Paris")
    assert not accuracy.matches("Paris is the capital", "Paris") and not accuracy.matches(None, "8")
    assert accuracy.threshold("0.75") == 0.75 and accuracy.default_threshold() == 0.9
    with pytest.raises(BadInput, match="a share of the questions, 0 to 1"):
        accuracy.threshold("90")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(tmp_path: Path, wrong: str, *flags: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    sessions = tmp_path / "sessions"
    subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), "session", "start", "acc"], check=True,
                   capture_output=True)
    env = {**os.environ, "FAKE_SGLANG_WRONG": wrong}
    done = subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), "run", "--yes", "--grace", "5", *flags,
                           "--smoke-only", "--", "env", f"PYTHONPATH={FAKE}", PY, "-m", "sglang.launch_server",
                           "--model-path", "fake/model", "--host", "127.0.0.1", "--port", str(_port())],
                          env=env, capture_output=True, text=True, timeout=120)
    (f,) = sessions.glob("*/events.jsonl")
    return done, [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def test_a_server_answering_a_third_wrong_is_inaccurate_with_its_wrong_answers(tmp_path: Path) -> None:
    done, evs = _launch(tmp_path, "0.35", "--accuracy")
    (outcome,) = [e for e in evs if e["kind"] == "outcome"]
    (metric,) = [e for e in evs if e["kind"] == "metric"]
    assert metric["name"] == "accuracy" and 0.4 < metric["value"] < 0.9, metric
    assert metric["attempt"] == outcome["attempt"] and metric["labels"]["threshold"] == 0.9
    wrong = metric["labels"]["wrong"]
    assert outcome["status"] == "inaccurate", (outcome, done.stderr[-2000:])
    assert outcome["label"] == f"accuracy {metric['value']:.2f} below 0.90: {wrong} of 40 answers wrong"
    assert outcome["signature"] == "logkit-accuracy"
    (note,) = [e for e in evs if e["kind"] == "note" and e["text"].startswith("accuracy ")]
    assert "expected" in note["text"] and ", got '0'" in note["text"]
    # `logkit why` on its log (which shows a healthy server) reads the recorded finding
    (log,) = (tmp_path / "sessions").glob("*/logs/*.log")
    why = subprocess.run([PY, "-m", "logkit", "--sessions", str(tmp_path / "sessions"), "why", str(log)],
                         capture_output=True, text=True, timeout=60)
    assert why.stdout.startswith(f"inaccurate: {outcome['label']}  [signature logkit-accuracy]"), why.stdout + why.stderr
    assert "'s own (not counted as seen before)" in why.stdout


def test_a_server_answering_right_passes_the_gate(tmp_path: Path) -> None:
    done, evs = _launch(tmp_path, "0", "--accuracy", "0.95")
    (outcome,) = [e for e in evs if e["kind"] == "outcome"]
    (metric,) = [e for e in evs if e["kind"] == "metric"]
    assert metric["value"] == 1.0 and metric["labels"]["threshold"] == 0.95
    assert outcome["status"] != "inaccurate" and not [e for e in evs if e["kind"] == "note"
                                                      and e["text"].startswith("accuracy ")]


def test_inaccurate_refutes_in_the_matrix_and_the_pre_launch_check(tmp_path: Path) -> None:
    from conftest import run_logkit
    from logkit.reasoning import matrix, refuted
    from logkit.store import Store

    root = tmp_path / "sessions"
    env = {"LOGKIT_SESSIONS": str(root)}
    src = ["--reconstructed", "test account"]
    sm120 = ["--gpu", "NVIDIA RTX PRO 6000 Blackwell", "--compute-cap", "12.0", "--count", "1"]
    assert run_logkit("record", "session", "nvfp4", "--id", "2026-12-06-fp4", *src, env=env).returncode == 0
    done = run_logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend flashinfer_cutlass",
                      "--status", "inaccurate", *sm120, *src, env=env)
    assert done.returncode == 0, done.stderr
    (hit,) = refuted.check({"moe_runner_backend": "flashinfer_cutlass"}, "SM120", Store(root))
    assert refuted.warning(hit).startswith("flashinfer_cutlass MoE answered wrong on SM120") and hit.status == "inaccurate"
    assert matrix.category(matrix.Row("s", "A1", "launch", "", "inaccurate")) == "inaccurate"
