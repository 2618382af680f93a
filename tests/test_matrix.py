"""One architecture parser, one configuration rule, one matrix cell (issue 19)."""

from __future__ import annotations

from pathlib import Path

import pytest

from logkit import gpu
from logkit.events import Attempt, Environment, Gpu, Hypothesis, Outcome, Smoke
from logkit.launch.flags import config_key, configuration, workload, workload_text
from logkit.reasoning import matrix
from logkit.store.derive import attempt_row

from kb_factory import status_of


@pytest.mark.parametrize("given", ["12.0", " 12.0", "(12, 0)", "12,0", "sm120", "SM_120", "sm_120a", 12.0, "12.0f"])
def test_every_spelling_of_sm120(given: object) -> None:
    assert gpu.arch_name(given) == "SM120"


@pytest.mark.parametrize("given,expected", [("9.0a", "SM90"), ("8.9a", "SM89"), ("10.0", "SM100"), ("sm_90a", "SM90"),
                                            ("", None), ("gpu", None), (None, None), ("12.0.1", None)])
def test_other_capabilities(given: object, expected: str | None) -> None:
    assert gpu.arch_name(given) == expected


@pytest.mark.parametrize("cap", ["12.0", " 12.0", "(12, 0)", "sm120", "8.9a"])
def test_the_site_and_the_prelaunch_check_read_one_architecture(cap: str) -> None:
    env = Environment(gpus=[Gpu(index=0, name="GPU", compute_cap=cap)])
    site = gpu.arch_of(env)  # builder/frames.py reads the model
    check = gpu.arch_of(env.model_dump(mode="json"))  # the pre-launch check reads the stored dict
    assert site == check == gpu.arch_name(cap) is not None


def test_a_speculative_launch_is_its_own_configuration() -> None:
    plain = {"parser": "sglang", "non_default": {"model_path": "/m", "tp_size": 8, "moe_runner_backend": "cutlass",
                                                  "port": 30000}}
    spec = {**plain, "non_default": {**plain["non_default"], "speculative_algorithm": "NEXTN"}}
    assert config_key(plain) != config_key(spec)
    assert configuration(spec)["speculative_algorithm"] == "NEXTN" and "port" not in configuration(spec)
    short = {"parser": "plain", "args": {"model": "/m", "tp": 8, "moe_runner_backend": "cutlass", "port": 1}}
    assert configuration(short) == configuration(plain)  # --tp is --tp-size; the port is no configuration


def test_workload() -> None:
    assert workload({"max_concurrency": 1}) == (1.0, None, None, None)
    assert workload_text(workload({"max_concurrency": "64", "dataset_name": "random", "random_input_len": 1024,
                                   "random_output_len": 512})) == "concurrency 64, random, in/out 1024/512"
    assert workload_text(workload({})) == "workload not recorded"


def _row(n: int, status: str, value: str, label: str | None = None, smoke_failed: bool = False,
         tests: tuple[str, ...] = ()) -> matrix.Row:
    return matrix.Row("s", f"A{n}", "launch", f"2026-01-01T00:00:{n:02d}", status, "m", "SM120",
                      backends={"moe_runner_backend": value}, label=label, smoke_failed=smoke_failed,
                      hang_timeout=matrix.hang_limit(label) if status == "hang" else None, tests=tests)


def test_a_cell_aggregates_every_attempt_not_the_latest() -> None:
    rows = [_row(1, "garbage", "flashinfer_cutedsl"), _row(2, "ready", "flashinfer_cutedsl", smoke_failed=True),
            _row(3, "ready", "flashinfer_cutedsl"), _row(4, "ready", "triton"),
            _row(5, "hang", "triton", label="no output for 5s before ready (--hang-timeout)"),
            _row(6, "arch_mismatch", "flashinfer_trtllm"), _row(7, "import_error", "deep_gemm")]
    cells = {c.value: c for c in matrix.cells(rows).values()}
    cutedsl = cells["flashinfer_cutedsl"]
    assert (cutedsl.state, cutedsl.counts, cutedsl.latest.attempt) == ("conflicting", {"garbage": 2, "works": 1}, "A3")
    assert [r.attempt for r in cutedsl.refuting] == ["A1", "A2"] and [r.attempt for r in cutedsl.working] == ["A3"]
    assert (cells["triton"].state, cells["triton"].counts) == ("works", {"works": 1})  # the shortened hang says nothing
    assert (cells["flashinfer_trtllm"].state, cells["flashinfer_trtllm"].refuted_class) == ("refuted", "crash")
    assert "deep_gemm" not in cells  # an import error is not attributable: untested
    long_hang = _row(8, "hang", "marlin", label="no output for 1200s before ready (--hang-timeout)")
    assert matrix.category(long_hang) == "crash"
    # the outcome labels logkit's SGLang watcher writes (no "(--hang-timeout)" in them)
    for label in ("no output for 3s before ready", "ready endpoint not answering 3s after the server started listening"):
        assert matrix.hang_limit(label) == 3.0 and matrix.category(_row(9, "hang", "marlin", label=label)) is None


def _events(*items: tuple[str, str, str | None, bool | None]) -> list:
    sid = "2026-01-01-s"
    out: list = [Hypothesis(session=sid, short_id="H1", text="cutedsl works")]
    for n, (short, status, label, smoke_ok) in enumerate(items, 1):
        out.append(Attempt(session=sid, short_id=short, argv=["python", "-m", "sglang.launch_server"], role="launch",
                           tests=["H1"]))
        if smoke_ok is not None:
            out.append(Smoke(session=sid, attempt=short, prompt="2+2", reply="4" if smoke_ok else "!!!!", ok=smoke_ok))
        out.append(Outcome(session=sid, attempt=short, status=status, label=label))
    return out


def test_status_proposes_refuting_only_from_refuting_evidence(tmp_path: Path) -> None:
    n = iter(range(100))

    def status(_sid: str, events: list) -> dict:
        return status_of(tmp_path / f"s{next(n)}", events)

    assert status("s", _events(("A1", "import_error", "No module named x", None)))["proposals"] == []
    shortened = _events(("A1", "hang", "no output for 5s before ready (--hang-timeout)", None))
    assert status("s", shortened)["proposals"] == []
    crashed = status("s", _events(("A1", "arch_mismatch", "no kernel image", None)))["proposals"]
    assert [(p["hypothesis"], p["attempt"]) for p in crashed] == [("H1", "A1")]
    # a later attempt testing H1 that came up ready and passed its smoke test withdraws the proposal
    later = _events(("A1", "arch_mismatch", "no kernel image", None), ("A2", "ready", None, True))
    assert status("s", later)["proposals"] == []
    garbage = _events(("A1", "arch_mismatch", "no kernel image", None), ("A2", "ready", None, False))
    assert [p["attempt"] for p in status("s", garbage)["proposals"]] == ["A1", "A2"]


def test_the_check_reads_rows_from_index_rows() -> None:
    events = [e.model_dump(mode="json", exclude_none=True) for e in _events(
        ("A1", "hang", "no output for 5s before ready (--hang-timeout)", None))]
    for e in events:
        if e["kind"] == "attempt":
            e["launch"] = {"parser": "sglang", "non_default": {"moe_runner_backend": "triton"},
                           "fingerprint": {"moe_runner_backend": "triton"}}
            e["environment"] = {"gpus": [{"index": 0, "name": "G", "compute_cap": "(12, 0)"}]}
    stored = [(n, e) for n, e in enumerate(events, 1) if e.get("short_id") == "A1" or e.get("attempt") == "A1"]
    row = matrix.row_of(attempt_row("s", "A1", stored))
    assert (row.arch, row.backends, row.hang_timeout, row.tests) == ("SM120", {"moe_runner_backend": "triton"}, 5.0,
                                                                     ("H1",))
    assert matrix.cells([row]) == {}
