"""The pre-launch warning: a launch repeating a configuration already refuted on the same GPU arch."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from logkit.capture.hooks import Plan
from logkit.events import Environment, Gpu, LaunchConfig
from logkit.reasoning import refuted
from logkit.reasoning.prelaunch import launch_confirmer
from logkit.store import Store

SRC = ["--reconstructed", "test account"]
SM120 = ["--gpu", "NVIDIA RTX PRO 6000 Blackwell", "--compute-cap", "12.0", "--count", "8"]
REPO = Path(__file__).resolve().parent.parent



pytestmark = pytest.mark.usefixtures("sglang_args_cache")

def _ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, sglang_args_cache: None) -> Store:
    """A store with one SM120 session: cutlass works (A1), trtllm crashes (A2), cutedsl garbage (A3)."""
    from conftest import run_logkit

    root = tmp_path_factory.mktemp("kb") / "sessions"
    env = {"LOGKIT_SESSIONS": str(root)}
    _ok(run_logkit("record", "session", "GLM-5", "--id", "2026-11-14-glm5", *SRC, env=env))
    launch = "python -m sglang.launch_server --tp 8 --moe-runner-backend"
    for value, status in (("flashinfer_cutlass", "ready"), ("flashinfer_trtllm", "arch_mismatch"),
                          ("flashinfer_cutedsl", "garbage")):
        _ok(run_logkit("record", "attempt", "--cmd", f"{launch} {value}", "--status", status, *SM120, *SRC, env=env))
    (root / ".current").unlink()
    return Store(root)


@pytest.mark.slow
def test_refuted_runs_blame_the_changed_flag(kb: Store) -> None:
    runs = [r for v in ("flashinfer_cutlass", "flashinfer_trtllm", "flashinfer_cutedsl")
            for r in refuted.check({"moe_runner_backend": v}, "SM120", kb)]
    assert [(r.attempt, r.status, r.arch, r.suspects) for r in runs] == [
        ("A2", "arch_mismatch", "SM120", {"moe_runner_backend": "flashinfer_trtllm"}),
        ("A3", "garbage", "SM120", {"moe_runner_backend": "flashinfer_cutedsl"}),
    ]


def test_check_matches_same_flags_on_same_arch_only(kb: Store) -> None:
    live = {"moe_runner_backend": "flashinfer_trtllm", "attention_backend": None, "tp_size": 8}
    hits = refuted.check(live, "SM120", kb)
    assert [refuted.warning(h) for h in hits] == [
        "flashinfer_trtllm MoE crashed on SM120 in 2026-11-14-glm5 A2 (arch_mismatch)."]
    assert refuted.check(live, "10.0", kb) == []  # SM100: those kernels are fine there
    assert refuted.check(live, None, kb) == []  # unknown arch here: no claim
    assert refuted.check({"moe_runner_backend": "flashinfer_cutlass"}, "SM120", kb) == []


@pytest.mark.parametrize("given,expected", [("12.0", "SM120"), ("(12, 0)", "SM120"), ("sm120", "SM120"),
                                            ("10.0", "SM100"), ("9.0", "SM90"), ("", None), ("gpu", None)])
def test_arch_names(given: str, expected: str | None) -> None:
    assert refuted.arch_name(given) == expected


def test_local_arch_asks_nvidia_smi_for_the_visible_gpus(tmp_path: Path) -> None:
    # No GPU on this machine: a stand-in nvidia-smi prints what the real one prints for
    # --query-gpu=index,compute_cap --format=csv,noheader on a mixed host.
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '0, 12.0\\n1, 9.0\\n'\n")
    smi.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    assert refuted.local_arch(env) == "SM120"
    assert refuted.local_arch({**env, "CUDA_VISIBLE_DEVICES": "1"}) == "SM90"
    assert refuted.local_arch({**env, refuted.ENV_ARCH: "10.0"}) == "SM100"
    assert refuted.local_arch({"PATH": str(tmp_path / "empty")}) is None


def _runs(kb: Store) -> list[refuted.RefutedRun]:
    return refuted.check({"moe_runner_backend": "flashinfer_trtllm"}, "SM120", kb)


def test_ask_never_prompts_off_a_terminal_and_yes_skips(kb: Store) -> None:
    err = io.StringIO()
    assert refuted.ask(_runs(kb), stdin=io.StringIO("n\n"), stderr=err) is True
    assert "not a terminal, running anyway" in err.getvalue() and "Run anyway?" not in err.getvalue()
    err = io.StringIO()
    assert refuted.ask(_runs(kb), yes=True, stdin=io.StringIO(""), stderr=err) is True
    assert "crashed on SM120" in err.getvalue()
    assert refuted.ask([], stdin=io.StringIO(""), stderr=io.StringIO()) is True


@pytest.mark.parametrize("answer,launch", [("y\n", True), ("n\n", False), ("\n", False)])
def test_ask_on_a_real_terminal(kb: Store, answer: str, launch: bool) -> None:
    master, slave = os.openpty()
    try:
        os.write(master, answer.encode())
        with open(slave, "r", closefd=False) as tty:
            err = io.StringIO()
            assert refuted.ask(_runs(kb), stdin=tty, stderr=err) is launch
        assert err.getvalue().rstrip().endswith("Run anyway? [y/N]")
    finally:
        os.close(master)
        os.close(slave)


def test_launch_confirmer_reads_plan_and_environment(kb: Store, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(refuted.ENV_ARCH, raising=False)
    plan = Plan(role="launch", launch=LaunchConfig(fingerprint={"moe_runner_backend": "flashinfer_trtllm", "tp_size": 8}))
    env = Environment(gpus=[Gpu(index=0, name="NVIDIA RTX PRO 6000 Blackwell", compute_cap="12.0")])
    confirm = launch_confirmer(str(kb.root))
    assert confirm(plan, env) is True  # pytest's stdin is not a terminal: warn and go on
    assert "flashinfer_trtllm MoE crashed on SM120 in 2026-11-14-glm5 A2 (arch_mismatch)" in capsys.readouterr().err
    assert confirm(Plan(role="command"), env) is True
    blackwell_dc = Environment(gpus=[Gpu(index=0, name="NVIDIA B200", compute_cap="10.0")])
    assert confirm(plan, blackwell_dc) is True and "crashed" not in capsys.readouterr().err


@pytest.mark.slow
def test_logkit_run_warns_before_launching_a_refuted_config(kb: Store, logkit, sessions: Path, tmp_path: Path) -> None:
    """End to end through `logkit run`: a fake `sglang.launch_server` module (no GPU here) is launched."""
    import shutil

    shutil.copytree(kb.root / "2026-11-14-glm5", sessions / "2026-11-14-glm5")
    pkg = tmp_path / "fake" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text("print('fake server: exiting')\n")
    # the fake SGLang, then this checkout's logkit (not one installed in the venv)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "fake"), str(REPO)]), refuted.ENV_ARCH: "SM120"}
    _ok(logkit("session", "use", "2026-11-14-glm5"))
    result = logkit("run", "--", "python", "-m", "sglang.launch_server", "--model-path", "/models/x",
                    "--moe-runner-backend", "flashinfer_trtllm", env=env, cwd=tmp_path)
    assert "flashinfer_trtllm MoE crashed on SM120 in 2026-11-14-glm5 A2 (arch_mismatch)." in result.stderr
    assert "not a terminal, running anyway" in result.stderr
    quiet = logkit("run", "--yes", "--", "python", "-m", "sglang.launch_server", "--model-path", "/models/x",
                   "--moe-runner-backend", "flashinfer_trtllm", env=env, cwd=tmp_path)
    assert "crashed on SM120" not in quiet.stderr


def test_shipped_knowledge_base_warns_for_trtllm_moe_but_not_the_working_glm_config() -> None:
    shipped = Store(REPO / "sessions")
    working = {"nsa_decode_backend": "trtllm", "nsa_prefill_backend": "trtllm", "moe_runner_backend": "flashinfer_cutlass",
               "attention_backend": "flashinfer", "fp8_gemm_runner_backend": "cutlass", "tp_size": 8}
    # GLM-5's attempts 1-3 (--attention-backend flashinfer) failed, but the same flag worked in A7.
    assert refuted.check(working, "SM120", shipped) == []
    trtllm = {**working, "moe_runner_backend": "flashinfer_trtllm"}
    assert [refuted.warning(r) for r in refuted.check(trtllm, "SM120", shipped)] == [
        "flashinfer_trtllm MoE crashed on SM120 in 2026-11-14-qwen35-397b-nvfp4-sm120 A2 (arch_mismatch).",
        "flashinfer_trtllm MoE produced NaN on SM120 in 2026-11-15-glm5-nvfp4-nan-at-decode A4 (nan).",
    ]
    assert refuted.check(trtllm, "SM100", shipped) == []
