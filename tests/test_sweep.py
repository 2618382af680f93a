"""``logkit sweep`` end to end: real logkit processes, SGLang's real parser, a stand-in server per backend.

The launch is ``python -m sglang.launch_server`` through logkit/demo/standin/fake_sglang on the child's
PYTHONPATH (logkit parses the flags with the real, lean SGLang in an isolated interpreter), and
``FAKE_SGLANG_BACKENDS`` makes logkit/demo/standin/fakeserver.py behave per ``--moe-runner-backend`` value: one
crashes with the SM100-only TRT-LLM text, one answers "!!!!!!", one runs out of memory, one hangs,
two work at different speeds. A stand-in nvidia-smi reports an SM120 GPU.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logkit.errors import BadInput
from logkit.sweep import spec as specmod

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
FAKE = str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang")
BACKENDS = ("flashinfer_trtllm=sm100,flashinfer_cutedsl=garbage,deep_gemm=oom,marlin=hang,"
            "flashinfer_cutlass=healthy:2.0,triton=healthy:1.0,aiter=inaccurate,cutlass=healthy:1.02")
SMI = """#!/bin/sh
case "$*" in
  *index,compute_cap*) echo "0, 12.0";;
  topo*) printf '\\tGPU0\\nGPU0\\t X \\n';;
  *) echo "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.82.07, 97887, 12.0";;
esac
"""

pytestmark = pytest.mark.sglang


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path: Path) -> dict:
    """A sessions dir, a stand-in nvidia-smi on PATH, and the per-backend fake server."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text(SMI)
    (bindir / "nvidia-smi").chmod(0o755)
    # the stand-in SGLang first, then this checkout's logkit (never another one installed in the venv)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": os.pathsep.join([FAKE, str(ROOT)]),
           "FAKE_SGLANG_BACKENDS": BACKENDS, "LOGKIT_SESSIONS": str(tmp_path / "sessions")}
    env.pop("LOGKIT_GPU_ARCH", None)
    return {"env": env, "dir": tmp_path, "sessions": tmp_path / "sessions"}


def write_spec(lab: dict, backends: list[str], *, bench: bool = True, name: str = "spec.toml") -> Path:
    port = free_port()
    lab.setdefault("ports", []).append(port)
    text = f'''title = "fake MoE backends"
command = "{PY} -m sglang.launch_server --model-path fake/model --host 127.0.0.1 --port {port}"
smoke = ["What is 3 + 5?"]
ready_timeout = 4
grace = 5

[axes]
moe-runner-backend = {json.dumps(backends)}
'''
    if bench:
        text += '''
[bench]
command = "python -m sglang.bench_serving --dataset-name random --num-prompts 8"
axes = { max-concurrency = [1, 16] }

[limit]
metric = "p99_tpot_ms"
max = 20
'''
    path = lab["dir"] / name
    path.write_text(text)
    return path


def sweep(lab: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "logkit", "sweep", *args], env=lab["env"], capture_output=True, text=True,
                          timeout=timeout, cwd=lab["dir"])


def events(lab: dict) -> dict[str, list[dict]]:
    out = {}
    for f in lab["sessions"].glob("*/events.jsonl"):
        out[f.parent.name] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def left_behind(lab: dict) -> list[str]:
    """Live processes that belong to this test's sweep (its logkit runs, its fake servers)."""
    mine = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        ours = str(lab["dir"]) in cmd or any(f"--port {p}" in cmd for p in lab.get("ports", []))
        if state != "Z" and ours:
            mine.append(cmd)
    return mine


def results(evs: list[dict]) -> dict[str, dict]:
    return {e["key"]: e for e in evs if e["kind"] == "sweep_cell"}


def test_spec_errors_name_the_file_line_and_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('title = "x"\ncommand = "python -m sglang.launch_server"\nready_timout = 5\n[axes]\na = [1]\n')
    with pytest.raises(BadInput, match=r"bad.toml:3: unknown key 'ready_timout'"):
        specmod.load(bad)
    bad.write_text('command = "python -m sglang.launch_server"\n\n[axes]\nmoe-runner-backend = "all"\n')
    with pytest.raises(BadInput, match=r"bad.toml:4: \[axes\]: moe-runner-backend = 'all'.*choices"):
        specmod.load(bad)
    bad.write_text('command = "python -m x"\n[axes\n')
    with pytest.raises(BadInput, match="not valid TOML"):
        specmod.load(bad)
    bad.write_text('command = "python -m sglang.launch_server"\nbudget = "soon"\n[axes]\na = [1]\n')
    with pytest.raises(BadInput, match=r"bad.toml:2: budget = 'soon' is not a duration"):
        specmod.load(bad)
    spec = specmod.from_cli(["moe-runner-backend=auto,triton"], ["python", "-m", "sglang.launch_server"],
                            bench="python -m sglang.bench_serving", bench_axes=["max-concurrency=1,16"])
    assert spec.axes == {"moe-runner-backend": ["auto", "triton"]} and spec.bench_axes == {"max-concurrency": [1, 16]}
    assert specmod.parse_duration("90m") == 5400 and specmod.parse_duration(30) == 30
    with pytest.raises(BadInput, match="FLAG=V1,V2"):
        specmod.from_cli(["moe-runner-backend"], ["python"])


def test_choices_come_from_sglangs_parser_and_preflight_refuses_without_launching(lab: dict) -> None:
    from logkit.sweep.grid import build

    spec = specmod.from_cli(["fp4-gemm-backend=choices", "attention-backend=triton,trtlm_mha"],
                            [PY, "-m", "sglang.launch_server", "--model-path", "m"])
    grid = build(spec, lab["env"])
    # SGLang 0.5.23's own choices for --fp4-gemm-backend (reference: server_args exec_.py:282)
    assert grid.axes["fp4_gemm_runner_backend"] == ["auto", "flashinfer_cudnn", "flashinfer_cutedsl",
                                                    "flashinfer_cutlass", "flashinfer_trtllm", "marlin"]
    assert len(grid.cells) == 12 and grid.parser == "sglang"
    typo = [c for c in grid.cells if "trtlm_mha" in c.key]
    assert len(typo) == 6 and all("invalid choice: 'trtlm_mha'" in (c.preflight or "") for c in typo)
    assert all(c.preflight is None for c in grid.cells if c not in typo)
    assert grid.cells[0].key == "fp4_gemm_runner_backend=auto, attention_backend=triton"
    assert grid.cells[0].argv[-4:] == ["--fp4-gemm-backend", "auto", "--attention-backend", "triton"]

    # Through the CLI: the refused cells are refuted in a second, nothing is launched for them.
    r = sweep(lab, "--axis", "attention-backend=trtlm_mha", "--", PY, "-m", "sglang.launch_server",
              "--model-path", "m", "--port", str(free_port()))
    assert r.returncode == 0, r.stderr
    (evs,) = events(lab).values()
    assert not [e for e in evs if e["kind"] == "attempt"]
    (cell,) = results(evs).values()
    assert cell["status"] == "preflight" and "invalid choice: 'trtlm_mha'" in cell["reason"]
    verdict = next(e for e in evs if e["kind"] == "verdict")
    assert verdict["verdict"] == "refuted" and verdict["hypothesis"] == cell["hypothesis"]


@pytest.mark.slow
def test_sweep_runs_the_grid_ranks_it_and_skips_refuted_cells_next_time(lab: dict) -> None:
    order = ["flashinfer_trtllm", "flashinfer_cutedsl", "deep_gemm", "marlin", "flashinfer_cutlass", "triton"]
    spec = write_spec(lab, order)
    r = sweep(lab, str(spec))
    assert r.returncode == 0, r.stderr
    assert left_behind(lab) == []
    (session, evs), = events(lab).items()
    got = results(evs)
    key = "moe_runner_backend={}".format
    assert list(got) == [key(b) for b in order]  # exactly the grid, in order, once each
    assert {k: (v["status"], v["outcome"]) for k, v in got.items()} == {
        key("flashinfer_trtllm"): ("failed", "arch_mismatch"),
        key("flashinfer_cutedsl"): ("failed", "garbage"),
        key("deep_gemm"): ("failed", "oom"),
        key("marlin"): ("failed", "hang"),
        key("flashinfer_cutlass"): ("works", "ready"),
        key("triton"): ("works", "ready"),
    }
    assert got[key("flashinfer_trtllm")]["reason"] == "TRT-LLM kernels built for SM100 only"
    # the garbage cell stopped before its benchmark: one attempt, the launch
    assert len(got[key("flashinfer_cutedsl")]["attempts"]) == 1
    fast, slow = got[key("flashinfer_cutlass")], got[key("triton")]
    assert len(fast["attempts"]) == 3 and [p["labels"] for p in fast["points"]] == [{"max_concurrency": 1},
                                                                                     {"max_concurrency": 16}]
    assert fast["points"][1]["output_throughput"] == pytest.approx(2 * slow["points"][1]["output_throughput"], rel=1e-3)
    assert fast["points"][0]["within_limit"] is True and slow["points"][1]["within_limit"] is False
    # every attempt is an ordinary attempt of the session, with an outcome; bench metrics name the launch
    attempts = {e["short_id"]: e for e in evs if e["kind"] == "attempt"}
    outcomes = {e["attempt"]: e["status"] for e in evs if e["kind"] == "outcome"}
    assert set(attempts) == set(outcomes)
    launch = fast["attempts"][0]
    assert attempts[launch]["role"] == "launch" and attempts[launch]["tests"] == [fast["hypothesis"]]
    assert {m["server_attempt"] for m in evs if m["kind"] == "metric" and m["attempt"] in fast["attempts"]} == {launch}
    # a hypothesis per cell, closed by its attempts
    hyps = {e["short_id"]: e["text"] for e in evs if e["kind"] == "hypothesis"}
    verdicts = {e["hypothesis"]: e for e in evs if e["kind"] == "verdict"}
    assert hyps[fast["hypothesis"]] == "moe_runner_backend=flashinfer_cutlass works on SM120"
    assert verdicts[fast["hypothesis"]]["verdict"] == "confirmed"
    assert verdicts[fast["hypothesis"]]["evidence"] == fast["attempts"]
    # marlin hung under the sweep's 4 s ready_timeout, far below the default: it refutes nothing (the
    # matrix cell's rule), so its hypothesis stays open-ended, inconclusive; a crash refutes
    assert verdicts[got[key("marlin")]["hypothesis"]]["verdict"] == "inconclusive"
    assert verdicts[got[key("flashinfer_trtllm")]["hypothesis"]]["verdict"] == "refuted"
    # the ranking: works first, fastest first; why the others failed
    table = r.stdout
    assert table.index("flashinfer_cutlass") < table.index("moe_runner_backend=triton") < table.index("marlin")
    assert "arch_mismatch" in table and "garbage" in table and "oom" in table and "hang" in table and "OVER" in table

    # The same spec again: the sweep exists and every cell has a result, so nothing runs.
    t0 = time.monotonic()
    again = sweep(lab, str(spec))
    assert again.returncode == 0 and time.monotonic() - t0 < 30
    assert len([e for e in events(lab)[session] if e["kind"] == "attempt"]) == len(attempts)

    # A new sweep of the same grid: the refuted cells are skipped (shown), only the working ones run.
    new = sweep(lab, str(spec), "--new")
    assert new.returncode == 0, new.stderr
    (other,) = [s for s in events(lab) if s != session]
    got2 = results(events(lab)[other])
    skipped = {k: v["refuted_by"] for k, v in got2.items() if v["status"] == "skipped"}
    # marlin hung under the sweep's 4 s ready_timeout (its --hang-timeout), far below the default:
    # the user cut it short, so its cell is untested and it runs again (issue 19)
    assert set(skipped) == {key(b) for b in order[:3]}
    assert skipped[key("flashinfer_trtllm")].startswith(session + "/A")
    assert {k for k, v in got2.items() if v["status"] == "works"} == {key("flashinfer_cutlass"), key("triton")}
    assert (got2[key("marlin")]["status"], got2[key("marlin")]["outcome"]) == ("failed", "hang")
    assert "skipped: refuted on SM120 by" in new.stdout
    assert left_behind(lab) == []


def _wait_for(predicate, timeout: float = 240.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_a_killed_or_interrupted_sweep_resumes_without_rerunning_finished_cells(lab: dict, how: str) -> None:
    # with its bench points, the second cell is still busy (benchmarking) when the signal comes
    spec = write_spec(lab, ["flashinfer_trtllm", "flashinfer_cutlass"])
    proc = subprocess.Popen([PY, "-m", "logkit", "sweep", str(spec)], env=lab["env"], cwd=lab["dir"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def second_cell_serving() -> bool:
        evs = [e for s in events(lab).values() for e in s]
        return any(e["kind"] == "smoke" for e in evs) and len(results(evs)) == 1

    try:
        _wait_for(second_cell_serving)
        proc.send_signal(getattr(signal, how))
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    if how == "SIGINT":
        assert proc.returncode == 130, (out, err)
        assert "rerun the same sweep to resume" in err
    # No server, no logkit run left: a SIGKILLed sweep's runs get SIGTERM from the kernel (PDEATHSIG).
    _wait_for(lambda: left_behind(lab) == [], timeout=60)
    (session, evs), = events(lab).items()
    assert list(results(evs)) == ["moe_runner_backend=flashinfer_trtllm"]
    interrupted = [e for e in evs if e["kind"] == "outcome" and e["status"] in ("interrupted", "ready")]
    assert interrupted, "the stopped cell's launch has an outcome"

    r = sweep(lab, str(spec))
    assert r.returncode == 0, r.stderr
    evs = events(lab)[session]
    got = results(evs)
    assert list(got) == ["moe_runner_backend=flashinfer_trtllm", "moe_runner_backend=flashinfer_cutlass"]
    assert got["moe_runner_backend=flashinfer_cutlass"]["status"] == "works"
    launches = [e for e in evs if e["kind"] == "attempt" and e["role"] == "launch"]
    labels = [e["label"].split(": ", 1)[1] for e in launches]
    # the finished cell ran once; the cell that was stopped ran again
    assert labels.count("moe_runner_backend=flashinfer_trtllm") == 1
    assert labels.count("moe_runner_backend=flashinfer_cutlass") == 2
    assert left_behind(lab) == []


def test_cell_fingerprints_use_sglangs_names_for_aliases_given_in_the_command(lab: dict) -> None:
    """`--tp 2` and `--fp4-gemm-backend X` in the base command are tp_size and fp4_gemm_runner_backend
    in each cell's fingerprint, as in a captured launch's, so the refuted check compares like with like."""
    from logkit.launch.config import for_run
    from logkit.sweep.grid import build

    base = ["--model-path", "m", "--tp", "2", "--fp4-gemm-backend", "flashinfer_cutlass"]
    spec = specmod.from_cli(["attention-backend=triton"], [PY, "-m", "sglang.launch_server", *base])
    (cell,) = build(spec, lab["env"]).cells
    assert cell.fingerprint["tp_size"] == 2
    assert cell.fingerprint["fp4_gemm_runner_backend"] == "flashinfer_cutlass"
    assert cell.fingerprint["attention_backend"] == "triton" and "tp" not in cell.fingerprint
    captured = for_run([*base, "--attention-backend", "triton"], PY).config["fingerprint"]
    assert cell.fingerprint == captured


@pytest.mark.slow
def test_a_cold_parser_read_is_announced_once(lab: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first sweep with an interpreter reads SGLang's parser (seconds): ``say`` hears it once."""
    from logkit.sweep.grid import build

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cold-cache"))
    spec = specmod.from_cli(["attention-backend=triton"], [PY, "-m", "sglang.launch_server", "--model-path", "m"])
    heard: list[str] = []
    assert build(spec, lab["env"], say=heard.append).parser == "sglang"
    assert len(heard) == 1 and "reading SGLang's flag parser" in heard[0] and PY in heard[0]
    build(spec, lab["env"], say=heard.append)
    assert len(heard) == 1  # warm: nothing to say


def test_a_port_that_names_no_port_is_refused_by_preflight_not_a_crash(lab: dict) -> None:
    """`--port ²` (a digit to str.isdigit, not to int) made the grid raise ValueError; the cell now
    keeps the default port and carries SGLang's refusal, so it is refuted without a launch."""
    from logkit.sweep.grid import build

    for bad in ("²", "1e309", "99999999999"):
        spec = specmod.from_cli(["attention-backend=triton"], [PY, "-m", "sglang.launch_server", "--model-path", "m",
                                                             "--port", bad])
        (cell,) = build(spec, lab["env"]).cells
        # SGLang's int() takes 99999999999 (the server then fails to bind); the others it refuses
        assert cell.port == 30000 and (cell.preflight is None) == (bad == "99999999999"), bad


@pytest.mark.slow
def test_sweep_repeats_each_point_gates_accuracy_and_ranks_with_intervals(lab: dict) -> None:
    port = free_port()
    lab.setdefault("ports", []).append(port)
    spec = lab["dir"] / "repeat.toml"
    spec.write_text(f'''title = "repeated"
command = "{PY} -m sglang.launch_server --model-path fake/model --host 127.0.0.1 --port {port}"
accuracy = 0.9
ready_timeout = 30
grace = 5

[axes]
moe-runner-backend = ["flashinfer_cutlass", "aiter", "triton", "cutlass"]

[bench]
command = "python -m sglang.bench_serving --dataset-name random --num-prompts 8"
axes = {{ max-concurrency = [4] }}
repeat = 3
warmup = true
''')
    r = sweep(lab, str(spec))
    assert r.returncode == 0, r.stderr
    (session, evs), = events(lab).items()
    got = results(evs)
    key = "moe_runner_backend={}".format
    # the inaccurate cell is refuted before its benchmark and not ranked
    aiter = got[key("aiter")]
    assert (aiter["status"], aiter["outcome"]) == ("failed", "inaccurate") and len(aiter["attempts"]) == 1
    assert aiter["reason"].startswith("accuracy 0.") and "below 0.90" in aiter["reason"]
    # a working cell: a warm-up and three measured runs per point, the median kept with every run
    fast = got[key("flashinfer_cutlass")]
    (point,) = fast["points"]
    assert len(point["runs"]) == 3 and point["output_throughput"] == sorted(point["runs"])[1]
    bench_attempts = [e for e in evs if e["kind"] == "attempt" and e.get("role") == "bench"
                      and e["short_id"] in fast["attempts"]]
    labels = [a["label"] for a in evs if a["kind"] == "attempt" and a.get("role") == "bench"][:4]
    assert [lbl.rsplit(": ", 1)[-1] for lbl in labels] == ["warm-up", "run 1/3", "run 2/3", "run 3/3"]
    assert len(bench_attempts) >= 1
    # the ranking: triton is slower than #1 with intervals apart; cutlass (2% faster than triton) is tied
    # with triton but far from #1; the table says so with its run counts
    assert "vs #1" in r.stdout and "50% below #1 at max_concurrency=4 (3 runs each)" in r.stdout, r.stdout
    sweep_id = next(e for e in evs if e["kind"] == "sweep")["sweep"]
    from logkit.store import Store
    from logkit.sweep import decide, state

    rows = {row.key: row for row in state.ranking(state.load(Store(lab["sessions"]), sweep_id))}
    assert rows[key("flashinfer_cutlass")].rank == 1 and rows[key("aiter")].rank is None
    assert rows[key("triton")].versus.verdict == "slower" and rows[key("triton")].versus.mine.n == 3
    draft = decide.draft(Store(lab["sessions"]), sweep_id)
    assert "median of 3 runs" in draft
    assert "slower: " in draft and "% lower, intervals " in draft and "on 3 runs each" in draft


def test_spec_takes_accuracy_repeat_and_warmup_and_refuses_bad_ones(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    base = 'command = "python -m sglang.launch_server"\n[axes]\na = [1]\n'
    spec.write_text('accuracy = true\n' + base + '[bench]\ncommand = "python -m sglang.bench_serving"\nrepeat = 5\nwarmup = true\n')
    got = specmod.load(spec)
    assert (got.accuracy, got.repeat, got.warmup) == (0.9, 5, True)
    plain = tmp_path / "p.toml"
    plain.write_text(base)
    assert specmod.load(plain).spec_hash() != got.spec_hash()  # they change what runs
    spec.write_text(base + '[bench]\ncommand = "x"\nrepeat = 0\n')
    with pytest.raises(BadInput, match=r"s.toml:6: bench.repeat must be a whole number of runs"):
        specmod.load(spec)
    spec.write_text('accuracy = 90\n' + base)
    with pytest.raises(BadInput, match=r"s.toml:1: accuracy must be a share of the questions"):
        specmod.load(spec)
