"""The shipped knowledge base is exactly what scripts/build_seed_sessions.py makes logkit's CLI write.

The script drives ``python -m logkit`` as subprocesses (one per recorded fact) into a fresh
directory; the result must equal the committed ``sessions/`` once event ids and the recording host
are normalised. Then a few facts the accounts give are checked on the events themselves.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from logkit.store import Store

pytestmark = pytest.mark.slow  # ~100 logkit processes and 14 SGLang flag parses: 20-60 s, more on a loaded machine

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "sessions"
VOLATILE = ("id", "host", "logkit_version")


def _normalised(root: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in sorted(root.glob("*/events.jsonl")):
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            for key in VOLATILE:
                data.pop(key, None)
            rows.append(data)
        out[path.parent.name] = rows
    return out


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("seed") / "sessions"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "build_seed_sessions.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    return out


def test_shipped_sessions_are_what_the_script_writes(rebuilt: Path) -> None:
    fresh, shipped = _normalised(rebuilt), _normalised(SHIPPED)
    assert sorted(fresh) == sorted(shipped)
    for sid in fresh:
        assert fresh[sid] == shipped[sid], f"{sid} differs: rerun python scripts/build_seed_sessions.py --force"
    assert (rebuilt / "DECISIONS.tsv").read_text() == (SHIPPED / "DECISIONS.tsv").read_text()


def test_every_event_is_reconstructed_and_no_attempt_has_a_log() -> None:
    for sid, result in Store(SHIPPED).read_all().items():
        assert not result.problems, result.problems
        for event in result.events:
            assert event.provenance is not None and event.provenance.source == "reconstructed", (sid, event.kind)
            assert "seed 00" in (event.provenance.detail or "")
            if event.kind in ("attempt", "outcome"):
                assert event.log is None


def _events(sid: str) -> list:
    return Store(SHIPPED).handle(sid).read().events


def test_qwen_decision_tie_and_refuted_backends() -> None:
    events = _events("2026-11-14-qwen35-397b-nvfp4-sm120")
    decision = next(e for e in events if e.kind == "decision")
    assert decision.decision_id == "DR-0001"
    assert decision.title == "flashinfer_cutlass for MoE, flashinfer_cudnn for FP4 GEMM on SM120"
    chosen = sorted(o.name for o in decision.options if o.chosen)
    assert chosen == ["flashinfer_cudnn FP4 GEMM", "flashinfer_cutlass MoE"]
    trtllm = next(o for o in decision.options if o.name.startswith("flashinfer_trtllm"))
    assert "SM100 only" in trtllm.why_not and trtllm.attempts == ["A2"] and trtllm.hypotheses == ["H4"]
    figures = sorted(e.value for e in events if e.kind == "metric")
    assert figures == [71.6, 71.9, 172.0]
    outcomes = {e.attempt: e for e in events if e.kind == "outcome"}
    assert outcomes["A2"].status == "arch_mismatch" and "major version 10" in outcomes["A2"].evidence[0].text
    assert outcomes["A3"].status == "garbage"
    a2 = next(e for e in events if e.kind == "attempt" and e.short_id == "A2")
    assert [g.compute_cap for g in a2.environment.gpus] == ["12.0"] * 8
    todo = next(e for e in events if e.kind == "todo")
    assert [i.hypothesis for i in todo.items] == ["H1", "H3", "H4", "H5"]


def test_glm_working_configuration_and_baseline() -> None:
    events = _events("2026-11-15-glm5-nvfp4-nan-at-decode")
    a7 = next(e for e in events if e.kind == "attempt" and e.short_id == "A7")
    argv = " ".join(a7.argv)
    for flag in ("--nsa-decode-backend trtllm", "--nsa-prefill-backend trtllm", "--moe-runner-backend flashinfer_cutlass",
                 "--attention-backend flashinfer", "--fp8-gemm-backend cutlass"):
        assert flag in argv
    metrics = {(e.name, e.value, e.labels.get("max_concurrency")) for e in events if e.kind == "metric"}
    assert {("output_throughput", 225.0, 64), ("total_throughput", 516.0, 64), ("output_throughput", 11.0, 1)} <= metrics
    assert {("output_throughput", 210.0, None), ("output_throughput", 247.0, None)} <= metrics
    titles = [e.title for e in events if e.kind == "decision"]
    assert titles[1] == "No expert parallelism for GLM-5-NVFP4 on PCIe"
    assert any("~1 GB/s" in e.text for e in events if e.kind == "note")


def test_ct200_per_prompt_figures() -> None:
    events = _events("2026-11-16-ct200-dflash-ddtree-shadow-linear")
    per = {(e.server_attempt, e.labels["prompt"]): e.value for e in events if e.kind == "metric"}
    assert per == {("A2", "fibonacci"): 140.6, ("A2", "quicksort"): 96.8, ("A2", "short-answer"): 109.0,
                   ("A3", "fibonacci"): 140.4, ("A3", "quicksort"): 94.6, ("A3", "short-answer"): 106.5}
    a2 = next(e for e in events if e.kind == "attempt" and e.short_id == "A2")
    assert "--attention-backend" in a2.argv and a2.environment.env == {"CUDA_VISIBLE_DEVICES": "1"}
    assert a2.environment.packages["torch"] == "2.11.0+cu130"


def test_qwen_mtp_run_is_its_own_configuration_with_its_flags() -> None:
    """Issue 19: the 172 tok/s MTP run (A7) and the working configuration it runs on (A6) are two
    configurations, and A7's launch command carries the speculative algorithm, model path and tp."""
    from logkit.launch.flags import config_key, configuration

    events = _events("2026-11-14-qwen35-397b-nvfp4-sm120")
    launches = {e.short_id: e for e in events if e.kind == "attempt" and e.role == "launch"}
    a6, a7 = (launches[s].launch.model_dump(mode="json") for s in ("A6", "A7"))
    assert config_key(a6) != config_key(a7)
    conf = configuration(a7)
    assert conf["speculative_algorithm"] == "NEXTN" and conf["model_path"] == "Qwen3.5-397B-A17B-NVFP4"
    assert conf["tp_size"] == 8 and "speculative_algorithm" not in configuration(a6)
    argv = " ".join(launches["A7"].argv)
    for flag in ("--speculative-algorithm NEXTN", "--model-path Qwen3.5-397B-A17B-NVFP4", "--tp 8"):
        assert flag in argv
    assert all("--model-path" in " ".join(a.argv) and "--tp 8" in " ".join(a.argv) for a in launches.values())
