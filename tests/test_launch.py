"""The one launch module (logkit.launch): one fingerprint rule for captured, imported and reconstructed
attempts; SGLang's parser spec cached per interpreter and SGLang version (a damaged cache rebuilt);
preflight from the cache naming the nearest valid choice; the full parse landing in the attempt's
events. Real processes, the real lean SGLang 0.5.23 parser, real files."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from logkit.launch import config as launch_config
from logkit.launch import flags as fl
from logkit.launch import sglang as sg

try:
    import sglang.srt.server_args  # noqa: F401

    HAVE_SGLANG = True
except Exception:  # pragma: no cover - the lean install is part of `setup.sh --test`
    HAVE_SGLANG = False
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="lean SGLang not installed (bash scripts/setup.sh --test)")
PY = sys.executable
FLAGS = ["--model-path", "org/model", "--tp", "2", "--mem-fraction", "0.8", "--moe-runner-backend",
         "flashinfer_cutlass", "--attention-backend", "triton", "--kv-cache-dtype", "fp8_e4m3", "--port", "31111"]
CHOSEN = {"attention_backend": "triton", "kv_cache_dtype": "fp8_e4m3", "mem_fraction_static": 0.8,
          "model_path": "org/model", "moe_runner_backend": "flashinfer_cutlass", "tp_size": 2}


#: With $WAIT_FOR set (an events.jsonl), the stand-in keeps "serving" until SGLang's full parse,
#: running beside it, has landed there (as a real server would still be running); else it exits.
WAITER = """import os, time
print('stub launch_server exits')
path = os.environ.get('WAIT_FOR')
deadline = time.time() + 600
while path and time.time() < deadline and 'launch_config' not in open(path).read():
    time.sleep(0.2)
"""


@pytest.fixture
def stub(tmp_path: Path) -> Path:
    """A stand-in ``sglang.launch_server`` that prints one line and exits (the child only)."""
    pkg = tmp_path / "stub" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(WAITER)
    return tmp_path / "stub"


def _logkit(sessions: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), *args], capture_output=True, text=True,
                          timeout=180, env={**os.environ, **(env or {})})


def _events(sessions: Path) -> list[dict]:
    (f,) = sessions.glob("*/events.jsonl")
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


@pytest.mark.slow
@needs_sglang
def test_captured_imported_and_reconstructed_attempts_share_one_fingerprint(tmp_path: Path, stub: Path) -> None:
    sessions = tmp_path / "sessions"
    assert _logkit(sessions, "session", "start", "one rule").returncode == 0
    run = ["env", f"PYTHONPATH={stub}", PY, "-m", "sglang.launch_server", *FLAGS]
    # the first launch builds the parser cache (a cache of this test's own), the second parses from
    # it with SGLang's full parse beside it
    cold = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert _logkit(sessions, "run", "--yes", "--", *run, env=cold).returncode == 0
    (events,) = sessions.glob("*/events.jsonl")
    done = _logkit(sessions, "run", "--yes", "--", *run, env={**cold, "WAIT_FOR": str(events)})
    assert done.returncode == 0, done.stderr
    log = tmp_path / "server.log"
    log.write_text("[2026-12-01 10:00:00] The server is fired up and ready to roll!\n")
    cmd = shlex.join(["python", "-m", "sglang.launch_server", *FLAGS])
    assert _logkit(sessions, "import", str(log), "--cmd", cmd).returncode == 0
    done = _logkit(sessions, "record", "attempt", "--cmd", cmd, "--status", "ready", "--reconstructed", "a test account")
    assert done.returncode == 0, done.stderr
    evs = _events(sessions)
    attempts = [e for e in evs if e["kind"] == "attempt"]
    assert len(attempts) == 4
    prints = [a["launch"]["fingerprint"] for a in attempts]
    assert prints == [CHOSEN] * 4, prints  # typed alike (2 is an int, 0.8 a float), named alike (--tp is tp_size)
    captured, again, imported, reconstructed = attempts
    assert [a.get("provenance", {}).get("source", "captured") for a in attempts] == [
        "captured", "captured", "imported", "reconstructed"]
    # captured: the full configuration (SGLang's resolved defaults) is kept beside the fingerprint
    assert captured["launch"]["args"]["fp8_gemm_runner_backend"] == "auto" and captured["launch"]["parser"] == "sglang"
    assert again["launch"]["args"] == captured["launch"]["args"]  # the cache answers what the full parse did
    # imported and reconstructed claim only what was given
    for rec in (imported, reconstructed):
        assert rec["launch"]["unresolved"] and "fp8_gemm_runner_backend" not in rec["launch"]["args"]
    # the second launch's diff: nothing changed, no "env PATH ... -> None"
    assert again["launch"]["diff"]["env_changed"] == {} and again["launch"]["diff"]["changed"] == {}
    # its full parse ran beside the launch and landed as an event of that attempt, agreeing with the cache
    fulls = [e for e in evs if e["kind"] == "launch_config"]
    assert len(fulls) == 1, fulls
    (full,) = fulls
    assert full["attempt"] == again["short_id"] and full.get("error") is None
    assert full["launch"]["args"]["tp_size"] == 2 and full["launch"]["fingerprint"] == CHOSEN


@pytest.mark.slow
@needs_sglang
def test_preflight_from_the_cache_names_the_nearest_choice(tmp_path: Path, stub: Path) -> None:
    sessions = tmp_path / "sessions"
    assert _logkit(sessions, "session", "start", "typo").returncode == 0
    cache = tmp_path / "xdg"
    env = {"XDG_CACHE_HOME": str(cache)}
    ok = ["env", f"PYTHONPATH={stub}", PY, "-m", "sglang.launch_server", "--model-path", "m"]
    assert _logkit(sessions, "run", "--yes", "--", *ok, env=env).returncode == 0
    (spec_file,) = (cache / "logkit" / "sglang-parser").glob("*.json")
    assert json.loads(spec_file.read_text())["python"] == PY
    typo = [*ok, "--moe-runner-backend", "flashinfer_cutlas"]
    done = _logkit(sessions, "run", "--yes", "--", *typo, env=env)
    assert done.returncode != 0
    assert "invalid choice: 'flashinfer_cutlas'" in done.stderr and "did you mean flashinfer_cutlass?" in done.stderr
    assert "stub launch_server exits" not in done.stdout  # refused before anything started
    # a damaged cache is rebuilt, never trusted
    entry = json.loads(spec_file.read_text())
    spec_file.write_text(json.dumps({**entry, "spec": {"prog": 1}}))
    done = _logkit(sessions, "run", "--yes", "--", *typo, env=env)
    assert "did you mean flashinfer_cutlass?" in done.stderr
    assert json.loads(spec_file.read_text())["spec"]["prog"] == "launch_server.py"


@pytest.mark.slow
@needs_sglang
def test_cache_is_keyed_by_interpreter_and_sglang_version(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    probed = sg.probe(PY)
    assert probed is not None and probed["version"] == "0.5.23"
    assert any(p.endswith("server_args.py") for p in probed["stamps"])
    assert any(".dist-info" in p for p in probed["stamps"])
    assert sg.cached_spec(PY, None, env) is None
    result = sg.full_parse(["--model-path", "m"], PY, spec=True)
    assert result is not None and result["ok"]
    sg.store_spec(PY, probed, result["spec"], env)
    hit = sg.cached_spec(PY, None, env)
    assert hit is not None and hit[1]["version"] == "0.5.23"
    spec = hit[0]
    assert sg.cached_spec(PY, {**probed, "version": "0.5.24"}, env) is None  # another SGLang
    assert sg.cached_spec(sys.executable + "3", None, env) is None  # another interpreter
    # a package upgraded or reinstalled (its .dist-info replaced): the entry no longer holds
    entry = json.loads(sg._path(PY, env).read_text())
    entry["probe"]["stamps"][next(iter(entry["probe"]["stamps"]))] += 1
    sg._path(PY, env).write_text(json.dumps(entry))
    assert sg.cached_spec(PY, None, env) is None
    given, error = sg.quick_parse(["--model-path", "m", "--tp", "4", "--mem-fraction", "0.5"], spec)
    assert error is None and given == {"model_path": "m", "tp_size": 4, "mem_fraction_static": 0.5}
    given, error = sg.quick_parse(["--model-path", "m", "--cuda-graph-max-bs", "8"], spec)
    assert given is None and error and "ambiguous option: --cuda-graph-max-bs" in error
    given, error = sg.quick_parse(["--model-path", "m", "--attention-backnd", "fa3"], spec)
    assert error and sg.suggest(error, spec) == "did you mean --attention-backend?"


def test_fingerprint_rule_is_data() -> None:
    assert fl.is_backend("moe_runner_backend") and not fl.is_backend("hicache_storage_backend_extra_config")
    assert fl.fingerprint({"tp_size": 2, "port": 1, "moe_runner_backend": "x", "quantization": None}) == {
        "moe_runner_backend": "x", "tp_size": 2}
    stored = {"fingerprint": {"attention_backend": "auto", "moe_runner_backend": "triton"},
              "non_default": {"moe_runner_backend": "triton"}, "args": {"attention_backend": None, "sampling_backend": None}}
    # auto chooses nothing; /server_info says what it became
    assert fl.backend_axes(stored) == {"moe_runner_backend": "triton"}
    assert fl.backend_axes(stored, {"attention_backend": "fa3", "sampling_backend": "flashinfer"}) == {
        "attention_backend": "fa3", "moe_runner_backend": "triton", "sampling_backend": "flashinfer"}
    # an old record with every resolved backend in its fingerprint: only the non-default ones were chosen
    old = {"fingerprint": {"dsa_topk_backend": "sgl-kernel", "moe_runner_backend": "triton"},
           "non_default": {"moe_runner_backend": "triton"},
           "args": {"dsa_topk_backend": "sgl-kernel", "moe_runner_backend": "triton"}}
    assert fl.backend_axes(old) == {"moe_runner_backend": "triton"}


def test_plain_config_types_values_like_the_parser() -> None:
    cfg = launch_config.plain_config(["--tp-size", "2", "--mem-fraction-static=0.8", "--cuda-graph-bs", "1", "2", "--x"])
    assert cfg["fingerprint"] == {"mem_fraction_static": 0.8, "tp_size": 2}
    assert cfg["args"]["cuda_graph_bs"] == [1, 2] and cfg["args"]["x"] is True and cfg["unresolved"]


SPY = """
import sys
from logkit.capture import runner
real = runner.spawn

def spawn(*args, **kwargs):
    heavy = sorted(m for m in ("pydantic", "logkit.events", "urllib.request") if m in sys.modules)
    print("AT SPAWN:", ",".join(heavy) or "-", file=sys.stderr)
    return real(*args, **kwargs)

runner.spawn = spawn
from logkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@needs_sglang
@pytest.mark.parametrize("yes", [True, False])
def test_a_warm_sglang_launch_imports_no_pydantic_before_the_child_starts(tmp_path: Path, stub: Path, yes: bool) -> None:
    sessions = tmp_path / "sessions"
    assert _logkit(sessions, "session", "start", "fast").returncode == 0
    launch = ["env", f"PYTHONPATH={stub}", PY, "-m", "sglang.launch_server", *FLAGS]
    assert _logkit(sessions, "run", "--yes", "--", *launch).returncode == 0  # the parser cache is warm now
    done = subprocess.run([PY, "-c", SPY, "--sessions", str(sessions), "run", *(["--yes"] if yes else []), "--", *launch],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "AT SPAWN: -" in done.stderr, done.stderr  # the event models and urllib load after the exec


def test_a_diff_between_launches_compares_configurations_not_run_specific_values() -> None:
    """`logkit run`'s "vs A1" and `status`'s "changed:" read the raw flags: a new port or seed, or `tp` for
    `tp_size`, showed as a change while `compare` and the fingerprint (configuration()) saw the same configuration."""
    from logkit.launch.flags import diff, diff_note

    def launch(moe: str, **flags: object) -> dict:
        return {"parser": "sglang", "non_default": {**flags, "moe_runner_backend": moe},
                "fingerprint": {"moe_runner_backend": moe}}

    previous = {"short_id": "A1", "launch": launch("triton", tp=8, port=30000, random_seed=1)}
    same = diff(launch("triton", tp_size=8, port=30001, random_seed=7), previous)
    assert same is not None and not (same["changed"] or same["added"] or same["removed"]), same
    assert diff_note(same) == "vs A1: same flags"
    other = diff(launch("flashinfer_trtllm", tp_size=8, port=30001), previous)
    assert other is not None and other["changed"] == {"moe_runner_backend": ["triton", "flashinfer_trtllm"]}, other
    assert not other["added"] and not other["removed"], other
