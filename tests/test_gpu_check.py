"""bench/gpu_check.sh (issue 25): the real script, run here, where there is no GPU; and the parts of
its steps that need none (the table, each step's verdict from the real classifier, the throughput
measurement), on real `logkit run` processes. The GPU's own failures are not imitated here: a
step's verdict is tested on texts from the classifier's corpus (tests/fixtures/logs), never on
invented GPU output, and the live texts come only from a run on a GPU machine (docs/gpu-check.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the real gpu_check.sh and logkit run processes

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "gpu_check.sh"
CORPUS = REPO / "tests" / "fixtures" / "logs"


def _check_module():
    spec = importlib.util.spec_from_file_location("gpu_check_steps", REPO / "bench" / "gpu_steps" / "check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


check = _check_module()


def _corpus_log(expected: tuple[str, ...]) -> Path:
    """The first corpus log (not the hold-out) whose class is one of ``expected``."""
    manifest = tomllib.loads((CORPUS / "manifest.toml").read_text(encoding="utf-8"))
    return next(CORPUS / e["file"] for e in manifest["log"] if e["expected"] in expected)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU machine: the steps would run for real")
def test_script_without_a_gpu_skips_every_step_and_says_so(tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    env = {**os.environ, "GPU_CHECK_DIR": str(work), "OUT": str(out), "LOGKIT_GPU_ARCH": "SM90",
           "LOGKIT_SESSIONS": str(tmp_path / "elsewhere")}
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    # $LOGKIT_GPU_ARCH is no GPU: the real nvidia-smi decides, and there is none here
    assert "GPU architecture (logkit.gpu.local_arch): none" in done.stderr
    steps = [f.name for f in check.FAILURES] + ["environment", "throughput"]
    for step in steps:
        assert f"gpu_check: {step}: skipped: no GPU" in done.stderr
    table = done.stdout
    assert table.startswith("## gpu_check on a machine without a GPU")
    for f in check.FAILURES:
        row = next(line for line in table.splitlines() if line.startswith(f"| {f.name} |"))
        assert row.endswith("| skipped: no GPU |") and " or ".join(f.expected) in row
    assert "| environment | skipped: no GPU |" in table and "throughput: skipped: no GPU" in table
    # a fresh sessions directory in the work directory, holding the one session and nothing else
    assert not (tmp_path / "elsewhere").exists()
    sessions = [p.name for p in (work / "sessions").iterdir() if p.is_dir()]
    assert len(sessions) == 1
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in events] == ["session"] and events[0]["session"] == sessions[0]
    assert (out / "table.md").read_text() == (work / "table.md").read_text() == table.rstrip("\n") + "\n"
    with tarfile.open(out / "gpu-check.tar.gz") as tar:
        assert f"gpu-check/sessions/{sessions[0]}/events.jsonl" in tar.getnames()


def test_script_with_a_stand_in_gpu_runs_every_step_and_reports_each_miss(tmp_path: Path) -> None:
    """The GPU branch's plumbing: a stand-in nvidia-smi (the only double: there is no GPU here) lists
    an SM90 card, and the steps run under an interpreter without PyTorch or CuPy (`python -S`), so
    each one really runs under `logkit run` and really fails, fast: every step is a miss, said so."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text('#!/bin/sh\ncase "$*" in *name*) echo "0, Stand-in GPU, 1.0, 1024, 9.0";; *compute_cap*) echo "0, 9.0";; '
                   '"topo -m") printf "\\tGPU0\\nGPU0\\t X\\n";; esac\n')
    bare = bin_dir / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    for f in (smi, bare):
        f.chmod(0o755)
    work = tmp_path / "work"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "GPU_CHECK_DIR": str(work),
           "GPU_CHECK_PYTHON": str(bare)}
    env.pop("OUT", None)
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "GPU architecture (logkit.gpu.local_arch): SM90" in done.stderr
    assert "gpu_check: missed: oom, illegal_memory, arch, nan, throughput, environment" in done.stderr
    rows = {line.split(" | ")[0][2:]: line for line in done.stdout.splitlines() if line.startswith("| ")}
    for step in ("oom", "illegal_memory", "nan"):
        # logkit run classifies what a plain command printed (issue 20): the same class as classify
        assert "| import_error: Python module missing | import_error | module-not-found |" in rows[step]
        assert rows[step].endswith("| MISS |")
    assert rows["arch"].endswith("| MISS |") or "not run: nvcc" in rows["arch"]
    assert "| environment | FAILED: no environment event, or env_truth.py printed no JSON |" in done.stdout
    assert "throughput: FAILED: throughput-without-1 exited 1" in done.stdout
    sessions = [d for d in (work / "sessions").iterdir() if d.is_dir() and not d.name.startswith(".")]
    labels = [json.loads(line).get("label") for line in (sessions[0] / "events.jsonl").read_text().splitlines()
              if '"kind":"attempt"' in line]
    assert labels == [f.name for f in check.FAILURES if f.name != "arch" or "not run" not in rows["arch"]] + ["environment"]


def test_script_refuses_an_unknown_argument_and_a_directory_it_did_not_make(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT), "--prepar"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "logkit: error: unknown argument '--prepar'" in done.stderr and "fix: " in done.stderr
    (tmp_path / "keep.txt").write_text("mine")
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "GPU_CHECK_DIR": str(tmp_path)})
    assert done.returncode == 2 and "was not made by bench/gpu_check.sh" in done.stderr and "fix: " in done.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_each_step_is_judged_by_the_classifier_on_the_log_logkit_run_recorded(tmp_path: Path) -> None:
    """Each failure step's row, from a real `logkit run` that prints a corpus log of the step's class;
    the `nan` step is fed an out-of-memory log and must be a MISS."""
    run = check.Check(sys.executable, tmp_path)
    run.start("verdicts")
    fed = {f.name: _corpus_log(f.expected) for f in check.FAILURES}
    fed["nan"] = _corpus_log(("oom",))
    for step, log in fed.items():
        assert run.record(step, ["sh", "-c", f"cat '{log}'; exit 1"]) == 1
    rows = {r["step"]: r for r in run.failure_rows()}
    for f in check.FAILURES:
        row = rows[f.name]
        want = ("oom",) if f.name == "nan" else f.expected
        assert row["classified"] in want, (f.name, fed[f.name], row)
        assert row["verdict"] == ("MISS" if f.name == "nan" else "match")
        # what `logkit run` recorded for this plain command: the classifier's class, by construction
        assert row["recorded"].split(":")[0] == row["classified"], row
        assert row["evidence"].startswith("L") and row["log"].startswith(run.session + "/logs/")
    text = check.table("t", list(rows.values()), None, "skipped: no GPU", None, "skipped: no GPU")
    assert "| nan |" in text and text.count("| match |") == len(check.FAILURES) - 1 and "| MISS |" in text


def test_skipped_and_unbuilt_steps(tmp_path: Path) -> None:
    run = check.Check(sys.executable, tmp_path)
    run.start("skips")
    run.failures(None)
    assert set(run.skipped) == {f.name for f in check.FAILURES}
    run.skipped["arch"] = "not run: nvcc not found (PATH, /usr/local/cuda/bin)"
    del run.skipped["nan"]  # neither skipped nor recorded: logkit run could not record it
    verdicts = {r["step"]: r["verdict"] for r in run.failure_rows()}
    assert verdicts == {"oom": check.NO_GPU, "illegal_memory": check.NO_GPU, "arch": run.skipped["arch"],
                        "nan": f"not recorded: see {tmp_path / 'nan.err'}"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc here (the GPU machine has one)")
def test_the_arch_step_builds_its_kernel_for_sm120_only(tmp_path: Path) -> None:
    run = check.Check(sys.executable, tmp_path)
    assert run._build_sm120() is None, (tmp_path / "nvcc.err").read_text()
    assert run.command(next(f for f in check.FAILURES if f.name == "arch")) == [str(tmp_path / "sm120_only")] and os.access(tmp_path / "sm120_only", os.X_OK)


def test_environment_rows_hold_each_fact_against_the_commands_own_report() -> None:
    """The comparison, on the recorded environment of a shipped session (an SM120 host): every fact
    that agrees says so, a driver that differs is a NO, and a fact the command could not read is
    'not read', never a pass."""
    line = next(json.loads(l) for l in (REPO / "sessions" / "2026-11-14-qwen35-397b-nvfp4-sm120" / "events.jsonl")
                .read_text().splitlines() if '"kind":"attempt"' in l)
    env = line["environment"]
    gpu = env["gpus"][0]
    truth = {"nvml_name": gpu["name"], "torch_name": gpu["name"], "nvml_capability": "12.0",
             "torch_capability": "12.0", "nvml_driver": "0.0-not-" + str(gpu.get("driver")),
             "torch_cuda": env.get("torch_cuda"), "interpreter": env.get("interpreter")}
    rows = {r["fact"]: r for r in check.environment_rows(env, truth)}
    assert rows["GPU name (NVML)"]["ok"] is True and rows["compute capability (PyTorch)"]["ok"] is True
    assert rows["driver (NVML)"]["ok"] is False
    assert rows["memory MiB (nvidia-smi)"]["ok"] is None  # not read
    assert rows["pre-launch check's arch"]["logkit"] == "SM120" and rows["pre-launch check's arch"]["ok"] is True


def test_throughput_with_and_without_logkit_run_on_cpu(tmp_path: Path) -> None:
    """The measurement's path, on the CPU (PyTorch's CPU build): the loop alone and under a real
    `logkit run`, one round of a few products. Its ratio here means nothing (a shared CPU)."""
    run = check.Check(sys.executable, tmp_path)
    run.start("throughput")
    speed = run.throughput(None, rounds=1, iterations=20, size=32, device="cpu")
    assert "error" not in speed, speed
    assert speed["loop_ratio"] > 0 and speed["wall_ratio"] > 0
    assert [r["iterations"] for r in speed["runs"]["with"] + speed["runs"]["without"]] == [20, 20]
    recorded = run.recorded()
    attempt, outcome, _ = recorded["throughput-with-1"]
    assert outcome.status == "exit_ok" and list(recorded) == ["throughput-with-1"]
    log = (run.sessions / run.session / attempt.log.path).read_text()
    assert "step 20/20" in log and log.splitlines()[-1].startswith('{"iterations": 20')
    assert "with/without `logkit run`" in check.table("t", [], None, "", speed, None)
