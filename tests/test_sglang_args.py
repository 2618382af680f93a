"""Launch flags parsed by the real SGLang 0.5.23 ServerArgs (lean install), wrappers, fingerprint, diff
(logkit.launch: the one launch module)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from logkit.capture.sglang import plan
from logkit.capture.sglang.detect import detect
from logkit.launch.config import for_run as parse_launch
from logkit.launch.flags import diff as diff_launch
from logkit.launch.flags import plain_parse

try:
    import sglang.srt.server_args  # noqa: F401

    HAVE_SGLANG = True
except Exception:  # pragma: no cover - the lean install is part of `setup.sh --test`
    HAVE_SGLANG = False
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="lean SGLang not installed (bash scripts/setup.sh --test)")
PY = sys.executable


@pytest.mark.slow
@needs_sglang
def test_real_parser_resolves_aliases_prefixes_and_defaults() -> None:
    r = parse_launch(["--model-path", "/m", "--tp", "2", "--mem-fraction", "0.8", "--attention-backend", "fa3",
                      "--moe-runner-backend", "flashinfer_trtllm", "--kv-cache-dtype", "fp8_e4m3"], PY)
    cfg = r.config
    assert r.error is None and cfg["parser"] == "sglang" and not cfg["unresolved"]
    assert cfg["sglang_version"] == "0.5.23"
    assert cfg["args"]["tp_size"] == 2 and cfg["args"]["mem_fraction_static"] == 0.8  # alias and prefix, SGLang's way
    assert cfg["non_default"]["attention_backend"] == "fa3"
    assert "dp_size" in cfg["args"] and "dp_size" not in cfg["non_default"]  # defaults are the parser's
    fp = cfg["fingerprint"]
    assert fp["moe_runner_backend"] == "flashinfer_trtllm" and fp["kv_cache_dtype"] == "fp8_e4m3"
    # only what was chosen: resolved defaults stay in args, never in the fingerprint
    assert fp == {"attention_backend": "fa3", "kv_cache_dtype": "fp8_e4m3", "mem_fraction_static": 0.8,
                  "model_path": "/m", "moe_runner_backend": "flashinfer_trtllm", "tp_size": 2}
    assert cfg["args"]["fp8_gemm_runner_backend"] == "auto"
    assert cfg["port"] == 30000


@needs_sglang
@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--attention-backend", "flashinfe"], "invalid choice: 'flashinfe' (choose from"),
        (["--cuda-graph-max-bs", "8"], "ambiguous option: --cuda-graph-max-bs could match"),
    ],
)
def test_real_parser_refuses_with_sglang_message(flags: list[str], needle: str) -> None:
    r = parse_launch(["--model-path", "/m", *flags], PY)
    assert r.error and needle in r.error
    assert r.config["parser"] == "plain"


@needs_sglang
def test_plan_refuses_before_launch_and_no_preflight_skips() -> None:
    argv = [PY, "-m", "sglang.launch_server", "--model-path", "/m", "--attention-backend", "trtllm"]
    p = plan(argv, {}, {})
    assert p is not None and p.refuse and "'trtllm_mha'" in p.refuse  # the valid choices are listed
    p = plan(argv, {}, {"preflight": False})
    assert p is not None and p.refuse is None and p.watcher is not None


def test_plain_parser_when_sglang_missing(tmp_path) -> None:
    bare = shutil.which("python3", path="/usr/bin:/bin")
    assert bare is not None
    probe = subprocess.run([bare, "-I", "-c", "import sglang"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the system python has sglang")
    r = parse_launch(["--model-path", "/m", "--tp-size", "4", "--enable-dp-attention"], bare)
    assert r.error is None and r.config["parser"] == "plain" and r.config["unresolved"]
    assert r.config["args"] == {"model_path": "/m", "tp_size": 4, "enable_dp_attention": True}
    assert r.config["fingerprint"] == {"model_path": "/m", "tp_size": 4, "enable_dp_attention": True}


def test_plain_parse_forms() -> None:
    assert plain_parse(["--port=8000", "--host", "0.0.0.0", "--cuda-graph-bs", "1", "2", "4", "--x"]) == {
        "port": 8000, "host": "0.0.0.0", "cuda_graph_bs": [1, 2, 4], "x": True}


@pytest.mark.parametrize(
    ("argv", "kind", "args"),
    [
        (["python", "-m", "sglang.launch_server", "--tp", "2"], "launch", ["--tp", "2"]),
        (["sglang", "serve", "--model-path", "m"], "launch", ["--model-path", "m"]),
        (["env", "-u", "X", "CUDA_VISIBLE_DEVICES=0,1", "python3", "-m", "sglang.launch_server", "--tp", "2"], "launch", ["--tp", "2"]),
        (["CUDA_VISIBLE_DEVICES=0", "python3", "-u", "-m", "sglang.bench_serving", "--port", "1"], "bench", ["--port", "1"]),
        (["python", "-m", "sglang.benchmark.serving", "--backend", "sglang-oai"], "bench", ["--backend", "sglang-oai"]),
        (["bash", "-c", "cd /w && HF_HUB_OFFLINE=1 python -m sglang.launch_server --model-path m"], "launch", ["--model-path", "m"]),
        (["sh", "-c", "source venv/bin/activate; sglang serve --port 9"], "launch", ["--port", "9"]),
        (["uv", "run", "--with", "x", "python", "-m", "sglang.launch_server", "--port", "9"], "launch", ["--port", "9"]),
        (["torchrun", "--nproc-per-node", "2", "-m", "sglang.launch_server", "--tp", "2"], "launch", ["--tp", "2"]),
        (["nohup", "numactl", "--interleave=all", "python", "-m", "sglang.launch_server"], "launch", []),
    ],
)
def test_detect_through_wrappers(argv: list[str], kind: str, args: list[str]) -> None:
    t = detect(argv)
    assert t is not None and t.kind == kind and t.args == args


@pytest.mark.parametrize("argv", [["echo", "sglang"], ["python", "-m", "sglang.check_env"], ["bash", "-c", "ls"], []])
def test_detect_ignores_other_commands(argv: list[str]) -> None:
    assert detect(argv) is None


@needs_sglang
def test_diff_against_previous_launch() -> None:
    old = parse_launch(["--model-path", "/m", "--dsa-decode-backend", "flashinfer_sparse_mla", "--tp", "8"], PY).config
    argv = [PY, "-m", "sglang.launch_server", "--model-path", "/m", "--dsa-decode-backend", "trtllm", "--tp", "8",
            "--disable-radix-cache"]
    assert old["parser"] == "sglang"
    prev = {"short_id": "A7", "launch": old,
            "environment": {"env": {"NCCL_P2P_DISABLE": "1", "PATH": "/usr/bin"},
                            "packages": {"sglang": "0.5.22", "torch": "2.13.0+cpu"}}}
    p = plan(argv, {"SGLANG_ENABLE_JIT_DEEPGEMM": "0", "HOME": "/root", "PATH": "/bin"}, {"previous_launch": prev})
    assert p is not None and p.launch is not None and p.refuse is None
    d = p.launch["diff"]
    assert d is not None and d["against"] == "A7"
    assert d["changed"] == {"dsa_decode_backend": ["flashinfer_sparse_mla", "trtllm"]}
    assert d["added"] == {"disable_radix_cache": True}
    # PATH is recorded, not compared: never "env PATH ... -> None"
    assert d["env_changed"] == {"NCCL_P2P_DISABLE": ["1", None], "SGLANG_ENABLE_JIT_DEEPGEMM": [None, "0"]}
    assert d["packages_changed"] == {"sglang": ["0.5.22", "0.5.23"]}  # read in the command's interpreter
    assert any("dsa_decode_backend flashinfer_sparse_mla -> trtllm" in n for n in p.notes)
    assert diff_launch(old, None) is None
