"""Readers that must agree with the matrix rule and with each other (issue 19's audit).

Each test here failed before its fix: a reader with its own copy of a rule said something the
evidence, or another reader, does not.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import kb_factory
from test_sweep import lab  # noqa: F401 - a fixture
from logkit.builder import generate
from logkit.events import Attempt, Metric, Outcome
from logkit.store import Store

SID = "2026-12-01-audit"
MODEL, ARCH, VERS = kb_factory.MODELS[0], "SM120", kb_factory.VERSIONS[2]


def _writer() -> kb_factory.Writer:
    return kb_factory.Writer(SID, datetime(2026, 12, 1, tzinfo=UTC))


def _generate(tmp_path: Path, w: kb_factory.Writer) -> Path:
    store = Store(tmp_path / "sessions")
    kb_factory._write(store, SID, "audit", w.t - timedelta(days=2), w)
    generate(tmp_path / "sessions", tmp_path / "docs")
    return tmp_path / "docs"


def test_a_hang_under_a_shortened_timeout_does_not_make_a_configuration_stale(tmp_path: Path) -> None:
    # The matrix holds such a hang against nothing (the user cut the launch short); the working
    # configuration's page read it as a failure of that fingerprint: "Stale".
    w = _writer()
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS, throughput=900)
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS,
             fail=("hang", "logkit-hang", "no output for 5s before ready", "Load weight begin."))
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS,
             fail=("import_error", "module-not-found", "Python module missing", "ModuleNotFoundError: x"))
    docs = _generate(tmp_path, w)
    page = next((docs / "configs").glob("*/index.md")).read_text()
    assert "Stale" not in page and "(stale)" not in page
    matrix = (docs / "backends" / "index.md").read_text()
    assert re.search(r"<code>triton</code>.*lk-works", matrix)


def test_a_hang_the_default_timeout_stopped_still_makes_it_stale(tmp_path: Path) -> None:
    w = _writer()
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS, throughput=900)
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS,
             fail=("hang", "logkit-hang", "no output for 1800s before ready", "Load weight begin."))
    page = next((_generate(tmp_path, w) / "configs").glob("*/index.md")).read_text()
    assert "(stale)" in page and "A3" in page


def _benchmarked_server(w: kb_factory.Writer, moe: str, value: float, outcome: str | None) -> str:
    """A launch benchmarked at concurrency 4 that ends ``outcome`` (None: still running, its recorder alive)."""
    w.n_attempt += 1
    aid = f"A{w.n_attempt}"
    started = w.tick()
    w.add(Attempt(session=SID, ts=started, started=started, short_id=aid, role="launch",
                  argv=kb_factory._launch_argv(MODEL, 8, moe, "flashinfer", []),
                  environment=kb_factory._env(ARCH, 8, VERS), recorder_pid=os.getpid(),
                  recorder_host=__import__("logkit.procs", fromlist=["hostname"]).hostname(),
                  launch=kb_factory.LaunchConfig(parser="sglang", sglang_version=VERS[0], unresolved=False,
                                                 fingerprint={"model_path": MODEL, "tp_size": 8,
                                                              "moe_runner_backend": moe},
                                                 non_default={"tp_size": 8}, port=30000)))
    w.n_attempt += 1
    bench = f"A{w.n_attempt}"
    at = w.tick()
    w.add(Attempt(session=SID, ts=at, started=at, short_id=bench, role="bench",
                  argv=["python", "-m", "sglang.bench_serving", "--max-concurrency", "4"]))
    w.add(Metric(session=SID, ts=w.tick(1), name="output_throughput", value=value, unit="tok/s", attempt=bench,
                 server_attempt=aid, labels={"max_concurrency": 4}))
    w.add(Outcome(session=SID, ts=w.tick(1), attempt=bench, status="exit_ok", exit_code=0))
    if outcome is not None:
        w.add(Outcome(session=SID, ts=w.tick(1), ended=w.t, attempt=aid, status=outcome, label=outcome))
    return aid


def test_the_home_pages_best_is_a_working_configuration_its_page_shows(tmp_path: Path) -> None:
    # The home page ranked every benchmarked server: a launch still being recorded, or one that died
    # of NaN after its benchmark, became "best", linked to a configuration no page has (a dead
    # anchor: MkDocs warns, `build --strict` fails while a `logkit run` records).
    w = _writer()
    _benchmarked_server(w, "flashinfer_cutlass", 500.0, "ready")
    _benchmarked_server(w, "triton", 900.0, "nan")
    _benchmarked_server(w, "cutlass", 800.0, None)
    docs = _generate(tmp_path, w)
    home = (docs / "index.md").read_text()
    best = [line for line in home.splitlines() if "concurrency 4" in line]
    assert len(best) == 1 and "500.0" in best[0] and "#A1)" in best[0], best
    anchors = set(re.findall(r"\{ #(cfg-[0-9a-f]+) \}", next((docs / "configs").glob("*/index.md")).read_text()))
    linked = set(re.findall(r"index\.md#(cfg-[0-9a-f]+)\)", home))
    assert linked and linked <= anchors


def _why_kb(tmp_path: Path) -> tuple[Path, Path]:
    """Two launches stopped by logkit's hang timeout (their logs just stop), written as `logkit run` writes them."""
    import hashlib

    from logkit.events import LaunchConfig, LogFile

    sessions = tmp_path / "sessions"
    w = _writer()
    logs, texts = [], []
    for n in (1, 2):
        aid = f"A{n}"
        text = ("[2026-12-01 00:00:00] server_args=ServerArgs(model_path='org/M', port=3100%d)\n" % n
                + "[2026-12-01 00:00:01] Load weight begin. avail mem=78.59 GB\n")
        logs.append(sessions / SID / "logs" / f"{aid}.log")
        started = w.tick()
        w.add(Attempt(session=SID, ts=started, started=started, short_id=aid, role="launch",
                      argv=["python", "-m", "sglang.launch_server", "--model-path", "org/M", "--port", f"3100{n}",
                            "--host", "0.0.0.0", "--tp", "2", "--moe-runner-backend", "triton"],
                      log=LogFile(path=f"logs/{aid}.log"),
                      launch=LaunchConfig(parser="sglang", sglang_version="0.5.23", unresolved=False,
                                          fingerprint={"model_path": "org/M", "tp_size": 2,
                                                       "moe_runner_backend": "triton"},
                                          non_default={"model_path": "org/M", "tp_size": 2, "port": 31000 + n,
                                                       "host": "0.0.0.0", "moe_runner_backend": "triton"},
                                          port=31000 + n)))
        data = text.encode()
        w.add(Outcome(session=SID, ts=w.tick(1), ended=w.t, attempt=aid, status="hang",
                      label="no output for 5s before ready", signature="logkit-hang",
                      log=LogFile(path=f"logs/{aid}.log", size=len(data), sha256=hashlib.sha256(data).hexdigest())))
        texts.append(data)
    kb_factory._write(Store(sessions), SID, "audit", w.t - timedelta(days=2), w)
    for path, data in zip(logs, texts, strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return sessions, logs[1]


def test_why_judges_a_log_logkits_hang_stop_ended_by_its_recorded_outcome(tmp_path: Path) -> None:
    # `logkit show A2` says hang [logkit-hang]; `logkit why` of A2's own log said "incomplete: not a
    # failure logkit can compare" (the log just stops: the hang was logkit's finding, not the log's)
    import json

    from conftest import run_logkit

    sessions, log = _why_kb(tmp_path)
    r = run_logkit("--sessions", str(sessions), "why", "--json", str(log))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert (data["status"], data["signature"]) == ("hang", "logkit-hang")
    assert data["itself"] == [f"{SID}/A2"]
    assert [m["attempt"] for m in data["same"]] == [f"{SID}/A1"]


def test_why_shows_an_attempts_configuration_as_its_owner_makes_it(tmp_path: Path) -> None:
    # `why` printed "config: ..., port=31001": its own rule (the flags as given), not the configuration
    # (logkit.launch.flags.configuration: no run-specific values) that compare and the site show
    import json

    from conftest import run_logkit
    from logkit.launch.flags import configuration

    sessions, log = _why_kb(tmp_path)
    r = run_logkit("--sessions", str(sessions), "why", "--json", str(log))
    (match,) = json.loads(r.stdout)["same"]
    assert match["config"] == {"model_path": "org/M", "moe_runner_backend": "triton", "tp_size": 2}
    launch = {"fingerprint": {"model_path": "org/M", "tp_size": 2, "moe_runner_backend": "triton"},
              "non_default": {"model_path": "org/M", "tp_size": 2, "port": 31001, "host": "0.0.0.0",
                              "moe_runner_backend": "triton"}, "parser": "sglang"}
    assert match["config"] == configuration(launch)


def test_a_conflicting_cells_page_does_not_call_it_refuted(tmp_path: Path) -> None:
    # The page of a conflicting cell (it failed, and it also worked) said "A negative result: this
    # backend value did not work on this architecture" and "(refuted on 0.5.23)"; the matrix,
    # the pre-launch check and the sweep's skip all read it as conflicting, not refuted.
    w = _writer()
    w.launch(MODEL, ARCH, 8, "flashinfer_cutedsl", "flashinfer", VERS,
             fail=("garbage", "garbage-output", "server ready but replies are garbage", "smoke reply: ',,,,'"))
    w.launch(MODEL, ARCH, 8, "flashinfer_cutedsl", "flashinfer", VERS, throughput=800)
    docs = _generate(tmp_path, w)
    page = next((docs / "backends").glob("moe-runner-backend-flashinfer-cutedsl-*/index.md")).read_text()
    assert ": conflicting" in page
    assert "did not work" not in page and "refuted on" not in page
    assert "Conflicting evidence" in page and "also worked" in page


def test_status_proposes_no_refutation_from_a_cell_the_evidence_makes_conflicting(tmp_path: Path) -> None:
    # H1 was tested by one launch, which answered garbage; the same backend value on the same GPU and
    # model worked in another launch (which tested nothing). The pre-launch check and the site say
    # "conflicting"; status proposed refuting H1 from its own attempts alone.
    from kb_factory import status_of
    from logkit.events import Hypothesis, LaunchConfig, Smoke
    from logkit.reasoning import refuted

    sid = "2026-12-01-conflict"
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    events: list = [Hypothesis(session=sid, short_id="H1", text="cutedsl works", ts=t0),
                    Hypothesis(session=sid, short_id="H2", text="trtllm works", ts=t0)]
    plan = [("A1", "flashinfer_cutedsl", ["H1"], "garbage", None), ("A2", "flashinfer_cutedsl", [], "ready", True),
            ("A3", "flashinfer_trtllm", ["H2"], "arch_mismatch", None)]
    for n, (aid, moe, tests, status, smoke) in enumerate(plan, 1):
        at = t0 + timedelta(minutes=n)
        events.append(Attempt(session=sid, ts=at, started=at, short_id=aid, role="launch", tests=tests,
                              argv=["python", "-m", "sglang.launch_server", "--model-path", "m", "--moe-runner-backend", moe],
                              environment=kb_factory._env(ARCH, 1, VERS),
                              launch=LaunchConfig(parser="sglang", sglang_version=VERS[0], unresolved=False,
                                                  fingerprint={"model_path": "m", "moe_runner_backend": moe},
                                                  non_default={"model_path": "m", "moe_runner_backend": moe})))
        if smoke is not None:
            events.append(Smoke(session=sid, ts=at, attempt=aid, prompt="2+2", reply="4", ok=smoke))
        events.append(Outcome(session=sid, ts=at, ended=at, attempt=aid, status=status, label=status))
    data = status_of(tmp_path, events)

    class Root:
        root = tmp_path

    assert refuted.conflicts({"moe_runner_backend": "flashinfer_cutedsl"}, ARCH, Root, model="m")  # type: ignore[arg-type]
    assert refuted.check({"moe_runner_backend": "flashinfer_trtllm"}, ARCH, Root, model="m")  # type: ignore[arg-type]
    assert [(p["hypothesis"], p["attempt"]) for p in data["proposals"]] == [("H2", "A3")]
    assert [(c["hypothesis"], c["attempt"], c["worked"]) for c in data["conflicting"]] == [
        ("H1", "A1", {"moe_runner_backend=flashinfer_cutedsl": f"{sid}/A2"})]


def test_a_sweeps_decision_draft_gives_its_figure_with_the_workload(tmp_path: Path) -> None:
    # "Launch with X: the highest output throughput (735.2 tok/s)": a figure without the bench
    # point it was measured at, on the decision record people cite
    from test_sweep_site import SW, make_sweep

    from logkit.sweep.decide import draft

    make_sweep(tmp_path / "sessions")
    text = draft(Store(tmp_path / "sessions"), SW)
    (decision,) = [line for line in text.splitlines() if line.startswith("decision = ")]
    assert re.search(r"\(\d[\d,.]* tok/s at max_concurrency=\d+\)", decision), decision
    compared = [line for line in text.splitlines() if line.startswith("why_not = ") and " vs " in line]
    assert compared and all("at max_concurrency=" in line for line in compared), compared


def test_a_sweep_compares_two_cells_only_at_one_bench_point() -> None:
    # a working cell not measured at the first one's best point was compared at its own best point:
    # two workloads, one "50% below #1"
    from logkit.events import Sweep, SweepCell, SweepCellResult, SweepPoint
    from logkit.sweep.state import SweepView, ranking

    cells = [SweepCell(id=c, key=f"moe_runner_backend={v}", values={"moe_runner_backend": v})
             for c, v in (("c1", "a"), ("c2", "b"))]
    sweep = Sweep(session="s", sweep="SW-00000000", title="t", spec_hash="0" * 64, argv=["x"],
                  axes={"moe_runner_backend": ["a", "b"]}, cells=cells)
    view = SweepView(sweep, "s", {
        "c1": SweepCellResult(session="s", sweep=sweep.sweep, cell="c1", key=cells[0].key, status="works",
                              points=[SweepPoint(attempt="A2", labels={"max_concurrency": 16}, output_throughput=700.0)]),
        "c2": SweepCellResult(session="s", sweep=sweep.sweep, cell="c2", key=cells[1].key, status="works",
                              points=[SweepPoint(attempt="A4", labels={"max_concurrency": 1}, output_throughput=80.0)]),
    })
    first, second = ranking(view)
    assert first.key.endswith("=a") and second.versus is None


def test_a_sweeps_page_shows_a_superseded_decision_as_superseded(tmp_path: Path) -> None:
    # `decision list` and the decision's own page say "superseded by DR-..."; the sweep's page
    # listed the record as it was written ("accepted")
    from test_sweep_site import SW, make_sweep

    from logkit.events import Decision

    sessions = tmp_path / "sessions"
    sid = make_sweep(sessions)
    handle = Store(sessions).handle(sid)
    handle.append(Decision(session=sid, decision_id="DR-AAAAA", title="cutlass for the sweep", status="accepted",
                           tags=["sweep", SW]))
    handle.append(Decision(session=sid, decision_id="DR-BBBBB", title="Duplicate of DR-0", status="deprecated",
                           supersedes="DR-AAAAA"))
    generate(sessions, tmp_path / "docs")
    page = (tmp_path / "docs" / "sweeps" / SW / "index.md").read_text()
    (line,) = [x for x in page.splitlines() if "DR-AAAAA" in x]
    assert "(superseded" in line and "(accepted)" not in line


def test_why_and_cite_say_a_superseded_decision_is_superseded(tmp_path: Path) -> None:
    # `decision list` said "superseded by DR-BBBBB"; `why` listed the record citing the attempt as
    # "(accepted)", and `cite` linked it without a word
    import json

    from conftest import run_logkit
    from logkit.events import Decision

    sessions, log = _why_kb(tmp_path)
    handle = Store(sessions).handle(SID)
    handle.append(Decision(session=SID, decision_id="DR-AAAAA", title="triton MoE", status="accepted", evidence=["A1"]))
    handle.append(Decision(session=SID, decision_id="DR-BBBBB", title="not triton", status="accepted",
                           supersedes="DR-AAAAA"))
    r = run_logkit("--sessions", str(sessions), "why", "--json", str(log))
    (match,) = json.loads(r.stdout)["same"]
    assert [(d["id"], d["status"]) for d in match["decisions"]] == [("DR-AAAAA", "superseded by DR-BBBBB")]
    listed = run_logkit("--sessions", str(sessions), "decision", "list")
    assert "superseded by DR-BBBBB" in listed.stdout
    cited = run_logkit("--sessions", str(sessions), "cite", "DR-AAAAA", "--site-url", "https://kb.example.com/")
    assert cited.returncode == 0 and "decisions/DR-AAAAA/" in cited.stdout
    assert "DR-AAAAA is superseded by DR-BBBBB" in cited.stderr
    assert "superseded" not in run_logkit("--sessions", str(sessions), "cite", "DR-BBBBB",
                                          "--site-url", "https://kb.example.com/").stderr


def _two_versions(tmp_path: Path) -> Path:
    """cutedsl answered garbage on SGLang 0.5.21, and worked on 0.5.23 (GLM-5 on SM120)."""
    w = _writer()
    w.launch(MODEL, ARCH, 8, "flashinfer_cutedsl", "flashinfer", kb_factory.VERSIONS[0],
             fail=kb_factory.FAILS[("flashinfer_cutedsl", ARCH)])
    w.launch(MODEL, ARCH, 8, "flashinfer_cutedsl", "flashinfer", kb_factory.VERSIONS[2], throughput=900)
    _generate(tmp_path, w)
    return tmp_path / "sessions"


def test_the_prelaunch_check_reads_the_cell_of_the_sglang_it_launches(tmp_path: Path) -> None:
    # the sweep skips a value refuted on another SGLang only on that SGLang; the site shows the cell of
    # the version tested last (works); `logkit run` and the agents' hook warned "refuted" for a launch
    # on SGLang 0.5.23, where it worked, because it failed on 0.5.21
    import sys

    from logkit.reasoning.prelaunch import check_argv
    from logkit.reasoning.refuted import check_launch

    sessions = _two_versions(tmp_path)
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", MODEL, "--moe-runner-backend",
            "flashinfer_cutedsl"]
    got = check_argv(argv, str(sessions), arch=ARCH)
    assert got is not None and got["sglang_version"] == "0.5.23"
    assert got["verdict"] == "works" and [c["sglang"] for c in got["cells"]] == ["0.5.23"]

    class Plan:
        launch = {"fingerprint": {"model_path": MODEL, "moe_runner_backend": "flashinfer_cutedsl"},
                  "sglang_version": "0.5.23"}

    os.environ["LOGKIT_GPU_ARCH"] = ARCH
    try:
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert check_launch(Plan(), None, str(sessions)) is True
        assert "garbage" not in err.getvalue()
        Plan.launch = {**Plan.launch, "sglang_version": "0.5.21"}
        with contextlib.redirect_stderr(err):
            check_launch(Plan(), None, str(sessions))
        assert "flashinfer_cutedsl MoE produced garbage on SM120" in err.getvalue()
    finally:
        del os.environ["LOGKIT_GPU_ARCH"]


def test_the_sweep_skips_a_value_refuted_for_its_own_model_only(tmp_path: Path) -> None:
    # deep_gemm ran out of memory for one model; a sweep of another model skipped it ("refuted on
    # SM120 by ..."), where the matrix, the site and `logkit run`'s check read that model's cell
    from logkit.sweep.engine import known_refuted
    from logkit.sweep.grid import Cell

    w = _writer()
    w.launch(MODEL, ARCH, 8, "deep_gemm", "flashinfer", VERS, fail=("oom", "torch-cuda-oom", "CUDA out of memory", "OOM"))
    _generate(tmp_path, w)
    store = Store(tmp_path / "sessions")

    def cell(model: str) -> Cell:
        return Cell(id="c1", key="moe_runner_backend=deep_gemm", values={"moe_runner_backend": "deep_gemm"}, argv=[],
                    fingerprint={"model_path": model, "tp_size": 8, "moe_runner_backend": "deep_gemm"})

    assert [h.attempt for h in known_refuted(cell(MODEL), ARCH, store, VERS[0])] == ["A1"]
    assert known_refuted(cell("other/model"), ARCH, store, VERS[0]) == []
    assert known_refuted(cell(MODEL), ARCH, store, "0.5.21") == []


def test_generate_from_a_script_takes_strings_as_paths(tmp_path: Path) -> None:
    # `generate("sessions", "docs")` from a plain script died of AttributeError: 'str' has no 'mkdir'
    w = _writer()
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS, throughput=900)
    kb_factory._write(Store(tmp_path / "sessions"), SID, "audit", w.t - timedelta(days=2), w)
    result = generate(str(tmp_path / "sessions"), str(tmp_path / "docs"))  # type: ignore[arg-type]
    assert result.pages > 0 and (tmp_path / "docs" / "index.md").is_file()


def test_a_negative_page_names_only_decisions_that_rejected_its_value(tmp_path: Path) -> None:
    # The page of attention_backend=flashinfer listed, under "Decisions that rejected it", the
    # decision's chosen option (it cites a launch in the cell) and options naming flashinfer_trtllm
    # MoE ("flashinfer" as a substring): the decision rejected neither attention flashinfer
    from logkit.events import Decision, DecisionOption

    w = _writer()
    bad = w.launch(MODEL, ARCH, 8, "flashinfer_trtllm", "flashinfer", VERS, fail=kb_factory.FAILS[("flashinfer_trtllm", ARCH)])
    good = w.launch(MODEL, ARCH, 8, "flashinfer_cutlass", "flashinfer", VERS, throughput=900)
    w.add(Decision(session=SID, ts=w.tick(), decision_id="DR-AAAAA", title="MoE for GLM-5", status="accepted",
                   options=[DecisionOption(name="flashinfer_cutlass MoE", chosen=True, attempts=[good]),
                            DecisionOption(name="flashinfer_trtllm MoE", why_not="SM100 only"),
                            DecisionOption(name="flashinfer attention", why_not="not needed: stays default")]))
    docs = _generate(tmp_path, w)
    attention = next((docs / "backends").glob("attention-backend-flashinfer-*/index.md")).read_text()
    rejected = attention.split("## Decisions that rejected it", 1)[-1].split("##", 1)[0]
    assert "flashinfer_cutlass" not in rejected and "flashinfer_trtllm" not in rejected
    assert "stays default" in rejected  # the option that names the value, as a word
    trtllm = next((docs / "backends").glob("moe-runner-backend-flashinfer-trtllm-*/index.md")).read_text()
    assert "SM100 only" in trtllm.split("## Decisions that rejected it", 1)[-1]
    assert bad == "A1"


def test_a_sweeps_ranking_says_where_two_cells_were_compared(tmp_path: Path) -> None:
    # the sweep's table and page said "50% below #1" / "slower than #1: 40.0 vs 80.0 tok/s" without
    # the bench point (concurrency) the two figures were taken at
    from test_sweep_site import SW, make_sweep

    from logkit.builder.pages_sweeps import _versus
    from logkit.sweep.state import load, ranking, versus_text

    make_sweep(tmp_path / "sessions")
    rows = [r for r in ranking(load(Store(tmp_path / "sessions"), SW)) if r.versus is not None]
    assert rows and all("at max_concurrency=1" in versus_text(r) and "at max_concurrency=1" in _versus(r) for r in rows)


def test_the_home_pages_failed_launches_count_every_failed_launch(tmp_path: Path) -> None:
    # "3 launches · 1 working launches · 1 failed launches": an import error is a failed launch
    # (statuses.toml's class), though it refutes no backend
    w = _writer()
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS, throughput=900)
    w.launch(MODEL, ARCH, 8, "triton", "flashinfer", VERS,
             fail=("import_error", "module-not-found", "Python module missing", "ModuleNotFoundError: x"))
    w.launch(MODEL, ARCH, 8, "flashinfer_trtllm", "flashinfer", VERS, fail=kb_factory.FAILS[("flashinfer_trtllm", ARCH)])
    home = (_generate(tmp_path, w) / "index.md").read_text()
    assert "**3** launches · **1** working launch · **2** failed launches" in home


@pytest.mark.slow  # a launch and a sweep on the stand-in server
@pytest.mark.sglang
def test_a_sweep_does_not_refute_a_value_the_evidence_makes_conflicting(lab: dict) -> None:  # noqa: F811
    # flashinfer_cutedsl worked in a launch by hand; a sweep's cell of it then answered garbage. The
    # matrix, the check and status read "conflicting"; the sweep closed its hypothesis "refuted".
    import json
    import subprocess
    import sys

    from test_sweep import events, free_port, left_behind, write_spec

    env = {**lab["env"], "FAKE_SGLANG_BACKENDS": "flashinfer_cutedsl=healthy"}
    port = free_port()
    lab.setdefault("ports", []).append(port)
    run = lambda *a, e=env: subprocess.run([sys.executable, "-m", "logkit", *a], env=e, capture_output=True,  # noqa: E731
                                           text=True, timeout=240, cwd=lab["dir"])
    assert run("session", "start", "by hand", "--id", "by-hand").returncode == 0
    done = run("run", "--smoke", "What is 3 + 5?", "--smoke-only", "--grace", "5", "--", sys.executable, "-m",
               "sglang.launch_server", "--model-path", "fake/model", "--host", "127.0.0.1", "--port", str(port),
               "--moe-runner-backend", "flashinfer_cutedsl")
    assert done.returncode == 0, done.stderr
    spec = write_spec(lab, ["flashinfer_cutedsl"], bench=False)
    swept = run("sweep", str(spec), e=lab["env"])  # the lab's stand-in: cutedsl answers garbage
    assert swept.returncode == 0, swept.stderr
    (sweep_sid,) = [s for s in events(lab) if s != "by-hand"]
    verdicts = [e for e in events(lab)[sweep_sid] if e["kind"] == "verdict"]
    assert [v["verdict"] for v in verdicts] == ["inconclusive"], verdicts
    assert "worked in by-hand/A1" in verdicts[0]["because"]
    status = json.loads(run("status", "--session", sweep_sid, "--json").stdout)
    assert status["proposals"] == []
    assert left_behind(lab) == []
