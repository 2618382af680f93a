"""Hypotheses, verdicts, todo snapshots, notes, status and reconstructed records through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logkit.store import Store

AT = ["--at", "2026-11-14T09:00:00Z"]
SRC = ["--reconstructed", "test account"]
GPU = ["--gpu", "NVIDIA RTX PRO 6000 Blackwell", "--compute-cap", "12.0", "--count", "2"]



pytestmark = pytest.mark.usefixtures("sglang_args_cache")

def _ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _session(logkit) -> str:
    return _ok(logkit("record", "session", "Qwen3.5 on SM120", "--id", "s1", *SRC, *AT))


@pytest.mark.slow
def test_hypothesis_lifecycle_and_clear_errors(logkit, sessions: Path) -> None:
    _session(logkit)
    assert _ok(logkit("hypothesis", "add", "flashinfer_trtllm MoE runs on SM120", "--priority", "high", "--tag", "moe")) == "H1"
    assert _ok(logkit("hypothesis", "add", "auto backend is fine")) == "H2"
    bad = logkit("hypothesis", "refute", "H9", "--evidence", "A1")
    assert bad.returncode == 2 and "no hypothesis H9 in session s1" in bad.stderr and "H1, H2" in bad.stderr
    bad = logkit("hypothesis", "refute", "H1", "--evidence", "A7")
    assert bad.returncode == 2 and "no attempt A7" in bad.stderr and "logkit status" in bad.stderr
    bad = logkit("hypothesis", "refute", "H1")
    assert bad.returncode == 2 and "needs --evidence or --because" in bad.stderr
    a1 = _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend flashinfer_trtllm",
                    "--status", "arch_mismatch", "--tests", "H1", "--result", "SM100-only kernels", *GPU, *SRC))
    assert a1 == "A1"
    assert _ok(logkit("hypothesis", "refute", "H1", "--evidence", "A1", "--because", "SM100 only")) == "H1 refuted by A1"
    rows = json.loads(_ok(logkit("hypothesis", "list", "--json")))
    assert [(r["id"], r["status"], r["evidence"]) for r in rows] == [("H1", "refuted", ["A1"]), ("H2", "open", [])]
    # A later verdict overrides an earlier one.
    _ok(logkit("hypothesis", "inconclusive", "H1", "--evidence", "A1", "--because", "maybe a driver issue"))
    assert "inconclusive" in _ok(logkit("hypothesis", "list")).splitlines()[0]


@pytest.mark.slow
def test_status_proposes_the_refutation_and_shows_changed_flags(logkit, sessions: Path) -> None:
    _session(logkit)
    _ok(logkit("hypothesis", "add", "flashinfer_trtllm MoE runs on SM120"))
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend flashinfer_cutlass",
               "--status", "ready", *SRC))
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --moe-runner-backend flashinfer_trtllm",
               "--status", "arch_mismatch", "--tests", "H1", "--result", "kernels for SM100 only", *SRC))
    text = _ok(logkit("status"))
    assert "H1" in text and "tested by: A2" in text
    assert "moe_runner_backend=flashinfer_cutlass -> flashinfer_trtllm" in text
    assert "logkit hypothesis refute H1 --evidence A2 --because 'A2 ended arch_mismatch: kernels for SM100 only'" in text
    data = json.loads(_ok(logkit("status", "--json")))
    command = data["proposals"][0]["command"]
    # Accepting the proposal is running the one command it shows.
    import shlex

    assert _ok(logkit(*shlex.split(command)[1:])) == "H1 refuted by A2"
    after = json.loads(_ok(logkit("status", "--json")))
    assert after["proposals"] == [] and after["hypotheses"] == []


@pytest.mark.slow
def test_status_lists_pending_evidence_and_a_running_server(logkit, sessions: Path) -> None:
    import subprocess
    import sys

    from logkit.events import Attempt, LaunchConfig
    from logkit.store import Store

    _session(logkit)
    _ok(logkit("hypothesis", "add", "CUDA graphs help"))
    # A real process stands in for a live `logkit run` recorder (its command line names logkit), so
    # the open attempt is not reconciled as abandoned.
    recorder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "logkit"])
    try:
        handle = Store(sessions).handle("s1")
        handle.append(Attempt(session="s1", short_id="A1", argv=["python", "-m", "sglang.launch_server"], role="launch",
                              tests=["H1"], pid=recorder.pid, recorder_pid=recorder.pid,
                              launch=LaunchConfig(port=30000)))
        data = json.loads(_ok(logkit("status", "--json")))
        assert data["hypotheses"][0]["pending"] == ["A1"]
        assert [(r["id"], r["pid"], r["port"]) for r in data["running"]] == [("A1", recorder.pid, 30000)]
        assert "still running:" in _ok(logkit("status"))
    finally:
        recorder.kill()
        recorder.wait()


@pytest.mark.slow
def test_todo_import_maps_items_visibly(logkit, sessions: Path, tmp_path: Path) -> None:
    _session(logkit)
    _ok(logkit("hypothesis", "add", "flashinfer_trtllm MoE backend works on SM120"))
    _ok(logkit("hypothesis", "add", "NVFP4 quant has MTP heads"))
    todo = tmp_path / "todo.json"
    todo.write_text(json.dumps({"todos": [
        {"content": "Test flashinfer_trtllm MoE backend (SM100 only - doesn't work on SM120)", "status": "completed", "priority": "high"},
        {"content": "H2: look again at the checkpoint", "status": "pending"},
        {"content": "Write the systemd unit", "status": "pending"},
    ]}))
    out = _ok(logkit("todo", "import", str(todo)))
    assert "-> H1 (4 shared words" in out and "-> H2 (explicit H2: prefix)" in out and "no match" in out
    shown = _ok(logkit("status")).splitlines()  # the latest snapshot, as the JSON and the MCP tool give it
    at = shown.index("todo (1 of 3 done):")
    assert shown[at + 1:at + 4] == [
        "  [x] Test flashinfer_trtllm MoE backend (SM100 only - doesn't work on SM120)  (H1)",
        "  [ ] H2: look again at the checkpoint  (H2)", "  [ ] Write the systemd unit"]
    todo.write_text(json.dumps([{"content": "Write the systemd unit", "status": "completed"}]))  # a bare list
    _ok(logkit("todo", "import", str(todo)))
    from logkit.events import Todo
    from logkit.reasoning.todo import diff

    snaps = sorted((e for e in Store(sessions).handle("s1").read().events if isinstance(e, Todo)), key=lambda e: e.ts)
    assert [i.hypothesis for i in snaps[0].items] == ["H1", "H2", None]
    changed = diff(snaps[0], snaps[1])
    assert changed["changed"] == [{"content": "Write the systemd unit", "from": "pending", "to": "completed"}]
    assert len(changed["removed"]) == 2 and changed["added"] == []


def test_todo_import_bad_input_names_file_and_line(logkit, sessions: Path, tmp_path: Path) -> None:
    _session(logkit)
    bad = tmp_path / "trunc.json"
    bad.write_text('{"todos":[\n{"content":"Test flashinfer_cutedsl MoE backend (produces garbage on ...')
    result = logkit("todo", "import", str(bad))
    assert result.returncode == 2 and f"{bad}:2:" in result.stderr and "truncated" in result.stderr
    bad.write_text('{"todos":[{"status":"completed"}]}')
    result = logkit("todo", "import", str(bad))
    assert result.returncode == 2 and 'todo item 1 has no "content"' in result.stderr
    assert [e.kind for e in Store(sessions).handle("s1").read().events] == ["session"]  # nothing half-written


@pytest.mark.slow
def test_record_needs_an_account_and_marks_provenance(logkit, sessions: Path) -> None:
    _session(logkit)
    missing = logkit("record", "attempt", "--cmd", "python -m sglang.launch_server")
    assert missing.returncode == 2 and "--reconstructed" in missing.stderr
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --attention-backend triton", "--status", "ready",
               "--env", "CUDA_VISIBLE_DEVICES=1", "--package", "torch=2.11.0+cu130", *GPU, *SRC, *AT))
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.bench_serving", "--status", "exit_ok", *SRC))
    _ok(logkit("record", "metric", "output_throughput", "140.6", "--attempt", "A2", "--unit", "tok/s",
               "--label", "prompt=fibonacci", "--label", "max_concurrency=1", *SRC))
    bad = logkit("record", "metric", "output_throughput", "1", "--attempt", "A9", *SRC)
    assert bad.returncode == 2 and "no attempt A9" in bad.stderr
    bad = logkit("record", "attempt", "--cmd", "x", "--status", "exploded", *SRC)
    assert bad.returncode == 2 and "unknown outcome status 'exploded'" in bad.stderr
    events = Store(sessions).handle("s1").read().events
    attempt = next(e for e in events if e.kind == "attempt")
    assert attempt.role == "launch" and attempt.launch.args["attention_backend"] == "triton"
    assert attempt.provenance.source == "reconstructed" and attempt.provenance.detail == "test account"
    assert attempt.environment.env == {"CUDA_VISIBLE_DEVICES": "1"} and len(attempt.environment.gpus) == 2
    assert str(attempt.ts) == "2026-11-14 09:00:00+00:00"
    metric = next(e for e in events if e.kind == "metric")
    assert (metric.attempt, metric.server_attempt, metric.labels) == ("A2", "A1", {"prompt": "fibonacci", "max_concurrency": 1})


@pytest.mark.slow
def test_note_and_fixed_clock(logkit, sessions: Path) -> None:
    _session(logkit)
    _ok(logkit("record", "attempt", "--cmd", "python -m sglang.launch_server --tp 8", "--status", "ready", *SRC))
    result = logkit("note", "Proxmox P2P ~1 GB/s", "--ref", "A1", env={"LOGKIT_NOW": "2026-11-15T10:00:00Z"})
    _ok(result)
    note = Store(sessions).handle("s1").read().events[-1]
    assert note.text == "Proxmox P2P ~1 GB/s" and note.refs == ["A1"] and note.ts.isoformat() == "2026-11-15T10:00:00+00:00"
    bad = logkit("note", "x", "--at", "yesterday")
    assert bad.returncode == 2 and "not an ISO 8601 time" in bad.stderr
    for ref, said in (("A77", "no attempt A77"), ("H9", "no hypothesis H9"), ("DR-0042", "no decision DR-0042"),
                      ("banana", "not an attempt, hypothesis or decision id")):
        bad = logkit("note", "x", "--ref", ref)
        assert bad.returncode == 2 and said in bad.stderr, (ref, bad.stderr)
    assert [e.kind for e in Store(sessions).handle("s1").read().events].count("note") == 1  # none of them recorded


def test_a_reconstructed_attempt_has_the_role_logkit_run_gives_its_command(logkit, sessions: Path) -> None:
    """`record attempt` named roles by its own substring rule: a docker-wrapped launch was a plain command
    and SGLang's `sglang.benchmark.serving` client no benchmark, as `logkit run` (capture.sglang.detect) has them."""
    _session(logkit)
    cases = {"docker run --gpus all lmsysorg/sglang python3 -m sglang.launch_server --model-path m --tp 8": "launch",
             "python -m sglang.benchmark.serving --backend sglang --num-prompts 10": "bench",
             "sglang serve --model-path m": "launch",
             "python train.py --sglang.launch_server-like": "command"}
    for cmd, role in cases.items():
        assert _ok(logkit("record", "attempt", "--cmd", cmd, "--status", "exit_ok", *SRC, *AT))
    attempts = [e for e in Store(sessions).handle("s1").read(strict=True).events if e.kind == "attempt"]
    assert [a.role for a in attempts] == list(cases.values())
