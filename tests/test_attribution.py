"""What a failure refutes (issue 9), as the built site shows it: one rule, from launch.toml.

A failure refutes only the values the user chose, and only when its class says something about a
backend; "slow" only compares launches that differ in that one value with the others equal, and
shows both figures; a captured launch's resolved defaults sit behind a "full configuration" fold.
Real sessions written by ``logkit record``/``logkit run``, the real ``mkdocs build``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PY = sys.executable
SRC = ["--reconstructed", "a test account"]
GPU = ["--gpu", "NVIDIA RTX PRO 6000 Blackwell", "--compute-cap", "12.0", "--count", "8"]
LAUNCH = "python -m sglang.launch_server --model-path org/M"

pytestmark = pytest.mark.slow  # a dozen logkit processes and a real MkDocs build


def _lk(sessions: Path, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env={**os.environ, "LOGKIT_NOW": "2026-11-20T10:00:00Z"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _attempt(sessions: Path, flags: str, status: str) -> str:
    return _lk(sessions, "record", "attempt", "--cmd", f"{LAUNCH} {flags}", "--status", status, *GPU, *SRC)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("attribution")
    sessions = root / "sessions"
    _lk(sessions, "record", "session", "attribution", "--id", "s1", *SRC)
    # failures that say nothing about a backend: refute nothing
    _attempt(sessions, "--moe-runner-backend flashinfer_trtllm", "import_error")
    _attempt(sessions, "--attention-backend fa3", "arg_error")
    # a failure that does: refutes the value given
    _attempt(sessions, "--moe-runner-backend flashinfer_cutedsl", "garbage")
    # FP4 GEMM cutlass vs cudnn tie (71.9 vs 71.6); a speculative run at 172 differs in two values
    for flags, value in (("--fp4-gemm-backend flashinfer_cutlass", 71.9), ("--fp4-gemm-backend flashinfer_cudnn", 71.6),
                         ("--fp4-gemm-backend flashinfer_cudnn --speculative-algorithm EAGLE", 172.0),
                         ("--moe-runner-backend triton", 30.0), ("--moe-runner-backend flashinfer_cutlass", 100.0)):
        aid = _attempt(sessions, flags, "ready")
        _lk(sessions, "record", "metric", "output_throughput", str(value), "--attempt", aid, "--unit", "tok/s", *SRC)
    # a captured launch: SGLang resolves every default, only the given flags are chosen
    stub = root / "stub" / "sglang"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    (stub / "launch_server.py").write_text("print('The server is fired up and ready to roll!')\n")
    _lk(sessions, "run", "--yes", "--", "env", f"PYTHONPATH={stub.parent}", PY, "-m", "sglang.launch_server",
        "--model-path", "org/Captured", "--moe-runner-backend", "triton")
    _lk(sessions, "build", "--out", str(root / "out"), "--docs", str(root / "docs"))
    return root


def _rows(site: Path, model: str) -> list[str]:
    page = (site / "out" / "backends" / "index.html").read_text()
    table = page.split(f">{model}<")[1].split("<h2")[0]
    return re.findall(r"<tr>.*?</tr>", table, re.S)


def _row(rows: list[str], axis: str, value: str) -> str | None:
    # the value in code, its axis beside it (the matrix names each value's axis)
    return next((r for r in rows if f'lk-axis">{axis}<' in r and f"<code>{value}</code>" in r), None)


def test_only_failures_that_speak_about_a_backend_refute_it(site: Path) -> None:
    rows = _rows(site, "org/M")
    assert _row(rows, "moe_runner_backend", "flashinfer_trtllm") is None  # import error: says nothing
    assert _row(rows, "attention_backend", "fa3") is None  # a bad flag: says nothing
    assert "garbage" in (_row(rows, "moe_runner_backend", "flashinfer_cutedsl") or "")


def test_slow_only_against_one_value_changed_and_with_both_figures(site: Path) -> None:
    rows = _rows(site, "org/M")
    cutlass = _row(rows, "fp4_gemm_runner_backend", "flashinfer_cutlass") or ""
    assert "lk-works" in cutlass and "lk-slow" not in cutlass  # 71.9 vs 71.6: a tie, not "slow" vs the 172 MTP run
    assert "tied: 71.9 vs 71.6 tok/s, intervals overlap, on 1 run each" in re.sub(r"<[^>]+>", "", cutlass)
    triton = _row(rows, "moe_runner_backend", "triton") or ""
    text = re.sub(r"<[^>]+>", "", triton)  # long words sit in no-wrap spans
    assert "lk-slow" in triton and "30.0 vs 100.0 tok/s: 70% lower" in text and "on 1 run each" in text
    assert "against moe_runner_backend=flashinfer_cutlass" in text
    neg = re.search(r'href="([^"]+)"><span class="lk-cell lk-slow">', triton)
    assert neg is not None
    page = (site / "out" / "backends" / neg.group(1)).read_text()
    page = re.sub(r"<[^>]+>", "", page)
    assert "30.0 vs 100.0" in page and "every other chosen value equal" in page


def test_a_captured_launch_shows_what_was_chosen_and_folds_the_defaults(site: Path) -> None:
    rows = _rows(site, "org/Captured")
    assert [r for r in rows if "<code>" in r] and all("moe_runner_backend" in r for r in rows if "<code>" in r)
    (config,) = [p for p in (site / "out" / "configs").glob("org-captured*/index.html")]
    html = config.read_text()
    heading = re.search(r"<h2[^>]*>(.*?)</h2>", html, re.S)
    assert heading is not None and "triton" in heading.group(1) and "mooncake" not in heading.group(1)
    assert "Full configuration" in html and "<details" in html
    fold = html.split("Full configuration")[1]
    assert "fp8_gemm_runner_backend" in fold and "mooncake" in fold  # SGLang's defaults: shown, folded, not chosen
