"""Benchmark result parsing: real printed blocks of several SGLang versions, and the JSONL record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from logkit.capture.sglang.bench import parse_file, parse_jsonl

BENCH = Path(__file__).parent / "fixtures" / "bench"
# the stand-in benchmark client prints this one (logkit demo needs it inside the package)
STANDIN_BENCH = Path(__file__).parents[1] / "logkit" / "demo" / "standin" / "fixtures" / "bench" / "sglang-33108-2026.txt"


def test_misspelt_concurrency_and_cut_block() -> None:
    r = parse_file(BENCH / "sglang-2805-v0.4.0.txt")
    assert r.labels == {"backend": "sglang", "request_rate": "inf", "max_concurrency": None}
    assert r.metrics["completed"] == 1648 and r.metrics["mean_ttft_ms"] == 44294.80
    assert "median_ttft_ms" not in r.metrics  # the post stops there


def test_2024_block_without_labels_and_with_tpot() -> None:
    r = parse_file(BENCH / "sglang-1639-2024.txt")
    assert r.labels == {}
    assert r.metrics["total_throughput"] == 24022.63
    assert r.metrics["p99_tpot_ms"] == 1647.41


def test_2026_block_peak_and_p90() -> None:
    r = parse_file(STANDIN_BENCH)
    assert r.labels["max_concurrency"] == 4
    assert r.metrics["max_output_tokens_per_s"] == 76.0
    assert r.metrics["max_concurrent_requests"] == 5
    assert r.metrics["p90_e2e_latency_ms"] == 56060.61
    assert r.metrics["concurrency"] == 3.71


def test_block_without_tpot() -> None:
    r = parse_file(BENCH / "achatbot-183-no-tpot.txt")
    assert r.labels["backend"] == "sglang-oai"
    assert not any("tpot" in k for k in r.metrics)
    assert r.metrics["p99_ttft_ms"] == 6884.07


def test_jsonl_record_keys_and_server_info_secrets(tmp_path: Path) -> None:
    rec = {"backend": "sglang", "dataset_name": "random-ids", "request_rate": float("inf"), "max_concurrency": 8,
           "random_input_len": 128, "random_output_len": 32, "server_info": {"api_key": "sk-live-abcdef123456",
           "admin_api_key": "adm-99999999", "attention_backend": "fa3", "version": "0.5.23"},
           "completed": 10, "output_throughput": 512.5, "mean_ttft_ms": 12.5, "accept_length": None}
    f = tmp_path / "b.jsonl"
    f.write_text(json.dumps({"completed": 1}) + "\n" + json.dumps(rec) + "\n")  # appended: last record wins
    r = parse_jsonl(f.read_text())
    assert r.metrics == {"completed": 10.0, "output_throughput": 512.5, "mean_ttft_ms": 12.5}
    assert r.labels["dataset"] == "random-ids" and r.labels["max_concurrency"] == 8
    assert r.server_info["api_key"] == "[REDACTED]" and r.server_info["admin_api_key"] == "[REDACTED]"
    assert r.server_info["attention_backend"] == "fa3"


def test_cli_bench_parse_json() -> None:
    out = subprocess.run([sys.executable, "-m", "logkit", "bench", "parse", "--json", str(STANDIN_BENCH)],
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert set(data) == {"metrics", "labels"}
    assert data["metrics"]["output_throughput"] == 62.86


def test_cli_bench_parse_bad_file(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("hello\n")
    out = subprocess.run([sys.executable, "-m", "logkit", "bench", "parse", str(f)], capture_output=True, text=True)
    assert out.returncode != 0 and str(f) in out.stderr and "fix:" in out.stderr


@pytest.mark.parametrize("name", sorted(p.name for p in BENCH.glob("*.txt")))
def test_every_real_block_parses(name: str) -> None:
    assert parse_file(BENCH / name).metrics
