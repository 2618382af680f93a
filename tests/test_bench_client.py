"""SGLang's real benchmark client against the stand-in server, and every key of its JSONL record.

``python -m sglang.benchmark.serving`` of the lean SGLang 0.5.23 install runs for real
(tests/benchclient.py: the stand-in torchvision on its PYTHONPATH, a tiny tokenizer made here,
``--dataset-name random-ids``: no download), against logkit/demo/standin/fakeserver.py streaming server-sent
events. Its record is read by :func:`logkit.capture.sglang.bench.parse_file`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchclient import FAKE_TORCHVISION, client_argv, client_env, stand_in_server, tiny_tokenizer
from logkit.capture.sglang import bench

pytestmark = [pytest.mark.sglang, pytest.mark.slow]  # the real client: seconds of imports per run


@pytest.fixture
def server() -> Iterator[int]:
    with stand_in_server() as port:
        yield port


def test_real_client_openai_completions_record_every_key_parsed(server: int, tmp_path: Path) -> None:
    out = tmp_path / "bench.jsonl"
    argv = client_argv(server, tiny_tokenizer(tmp_path / "tok"), "--output-file", str(out), backend="sglang-oai")
    done = subprocess.run(argv, env=client_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Serving Benchmark Result" in done.stdout
    (line,) = out.read_text().splitlines()
    record = json.loads(line)
    result = bench.parse_file(out)
    # Every key of the real record is read: a figure, a label, the server's info, or a known non-figure.
    numbers = {k for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert numbers - set(bench.JSON_LABELS) <= set(result.metrics)
    unread = set(record) - set(result.metrics) - set(bench.JSON_LABELS) - bench.NOT_METRICS
    assert unread <= {k for k, v in record.items() if v is None}, unread  # accept_length: no speculative decoding
    # the keys the old stand-in client lacked, measured for real
    for key in ("p90_ttft_ms", "p95_e2e_latency_ms", "std_itl_ms", "std_tpot_ms", "median_tpot_ms", "median_itl_ms",
                "total_input_text_tokens", "total_output_tokens_retokenized", "total_input_vision_tokens"):
        assert key in result.metrics, key
    assert result.metrics["completed"] == 8 and result.metrics["output_throughput"] > 0
    # the streamed completion_tokens count is what the client summed, and the tiny tokenizer agrees
    assert result.metrics["total_output_tokens"] == result.metrics["total_output_tokens_retokenized"] > 0
    assert result.labels["backend"] == "sglang-oai" and result.labels["dataset"] == "random-ids"
    assert result.server_info and result.server_info["version"] == "0.5.23"
    assert result.unit("std_itl_ms") == "ms" and result.unit("output_throughput") == "tok/s"
    # the printed block says the same (the fallback when no record was written)
    printed = bench.parse_text(done.stdout)
    assert printed.metrics["completed"] == 8
    assert printed.metrics["p95_ttft_ms"] == pytest.approx(result.metrics["p95_ttft_ms"], abs=0.01)


def test_stand_in_torchvision_imports_everything_and_refuses_every_call() -> None:
    code = (
        "import torchvision.transforms as T\n"
        "from torchvision.transforms.v2 import functional as F\n"
        "from torchvision.io import decode_image\n"
        "from torchvision.transforms import InterpolationMode\n"
        "mode = InterpolationMode.BICUBIC\n"
        "class Mine(T.Compose): pass\n"
        "assert not isinstance(1, T.Compose)\n"
        "try:\n"
        "    T.Compose([T.Resize(4)])\n"
        "except RuntimeError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": FAKE_TORCHVISION, "PATH": "/usr/bin"},
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("StandInError torchvision.transforms.Resize was called")
    assert "tests/fake_torchvision" in done.stdout and "--dataset-name random-ids" in done.stdout
