"""An SGLang benchmark client: its flags (target and workload) and its results (JSONL or printed).

Contract: :func:`parse_bench` reads the flags with :func:`logkit.launch.flags.plain_parse` and fills
SGLang's bench defaults. :func:`parse_jsonl` takes the last JSON line of a ``--output-file``, redacts
its ``server_info`` secrets, and returns metrics named with SGLang's JSONL keys plus labels;
:func:`redact_record` redacts a record before it is stored (:mod:`.fifo`); :func:`parse_text` reads the
printed "Serving Benchmark Result" block of any version (whatever lines are there);
:func:`parse_file` tries JSONL first. Pure.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import BadInput
from ...launch.flags import plain_parse
from ..redact import redact_keys as redact_info  # server_info's secret keys (secrets.toml's) blanked

__all__ = ["BenchResult", "parse_bench", "parse_file", "parse_jsonl", "parse_text", "redact_info", "redact_record"]

#: Printed label -> JSONL key (labels compared lower-case, without the trailing colon).
TEXT_KEYS: dict[str, str] = {
    "successful requests": "completed",
    "benchmark duration (s)": "duration",
    "total input tokens": "total_input_tokens",
    "total input text tokens": "total_input_text_tokens",
    "total input vision tokens": "total_input_vision_tokens",
    "total generated tokens": "total_output_tokens",
    "total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "request throughput (req/s)": "request_throughput",
    "input token throughput (tok/s)": "input_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "peak concurrent requests": "max_concurrent_requests",
    "total token throughput (tok/s)": "total_throughput",
    "total throughput (tok/s)": "total_throughput",
    "concurrency": "concurrency",
    "accept length": "accept_length",
    "request goodput (req/s)": "request_goodput",
}
for _stat in ("mean", "median", "std", "p90", "p95", "p99", "max"):
    for _name, _key in (("e2e latency", "e2e_latency"), ("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl")):
        TEXT_KEYS[f"{_stat} {_name} (ms)"] = f"{_stat}_{_key}_ms"
LABEL_KEYS = {
    "backend": "backend",
    "traffic request rate": "request_rate",
    "max request concurrency": "max_concurrency",
    "max reqeuest concurrency": "max_concurrency",
}
JSON_LABELS = ("backend", "dataset_name", "request_rate", "max_concurrency", "random_input_len",
               "random_output_len", "random_range_ratio", "sharegpt_output_len", "tag")
NOT_METRICS = set(JSON_LABELS) | {"server_info", "goodput_slos_ms", "slo_attainment_by_metric", "cache_report",
                                  "input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"}
UNITS = {"duration": "s", "request_throughput": "req/s", "request_goodput": "req/s", "concurrency": None}
_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()/_.%-]*?):\s*(\S.*?)\s*$")


@dataclass
class BenchResult:
    metrics: dict[str, float] = field(default_factory=dict)
    labels: dict[str, Any] = field(default_factory=dict)
    server_info: dict[str, Any] | None = None
    source: str = "jsonl"

    def unit(self, name: str) -> str | None:
        if name in UNITS:
            return UNITS[name]
        if name.endswith("_ms"):
            return "ms"
        return "tok/s" if name.endswith("_throughput") or name == "max_output_tokens_per_s" else None


def parse_bench(flags: list[str]) -> Any:
    """The benchmark client's target and workload (a ``BenchConfig``; SGLang's bench defaults where not given)."""
    from ...events import BenchConfig

    a = plain_parse(flags)
    backend, host, port, base_url = a.get("backend", "sglang"), a.get("host", "0.0.0.0"), a.get("port"), a.get("base_url")
    if port is None and not base_url:
        port = 8000 if str(backend).startswith("vllm") else 23333 if str(backend).startswith("lmdeploy") else 30000
    random = str(a.get("dataset_name", "")).startswith("random")
    labels = {"backend": backend, "dataset": a.get("dataset_name", "sharegpt"), "num_prompts": a.get("num_prompts", 1000),
              "request_rate": a.get("request_rate", "inf"), "max_concurrency": a.get("max_concurrency"),
              "random_input_len": a.get("random_input_len", 1024) if random else None,
              "random_output_len": a.get("random_output_len", 1024) if random else None, "tag": a.get("tag")}
    return BenchConfig(host=str(host) if host is not None else None, port=int(port) if isinstance(port, int) else None,
                       base_url=base_url, output_file=a.get("output_file"),
                       labels={k: v for k, v in labels.items() if v is not None})


def redact_record(line: bytes, redactor: Any) -> bytes:
    """One JSONL record as it may be stored: ``server_info`` secrets and what ``redactor`` finds replaced."""
    try:
        rec = json.loads(line)
    except ValueError:
        return redactor.chunk(line)
    return json.dumps(redactor.scrub(redact_info(rec))).encode("utf-8")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    try:
        number = float(str(value).rstrip("%"))
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None  # a NaN or inf figure is no measurement


def parse_jsonl(text: str) -> BenchResult:
    """The last record of a bench ``--output-file``."""
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("{")]
    if not lines:
        raise ValueError("no JSON record")
    rec = json.loads(lines[-1])
    out = BenchResult(source="jsonl")
    for k in JSON_LABELS:
        v = rec.get(k)
        if v is not None:
            # JSON has no infinity: keep SGLang's printed spelling.
            out.labels["dataset" if k == "dataset_name" else k] = "inf" if isinstance(v, float) and math.isinf(v) else v
    for k, v in rec.items():
        if k in NOT_METRICS:
            continue
        num = _number(v)
        if num is not None:
            out.metrics[k] = num
    if rec.get("server_info") is not None:
        out.server_info = redact_info(rec["server_info"])
    return out


def parse_text(text: str) -> BenchResult:
    """The printed "Serving Benchmark Result" block (any version; partial blocks too)."""
    out = BenchResult(source="text")
    start = text.rfind("Serving Benchmark Result")
    body = text[start:] if start >= 0 else text
    for raw in body.splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        label, value = m.group(1).strip().lower(), m.group(2).strip()
        label = re.sub(r"\s+", " ", label)
        if label in LABEL_KEYS:
            key = LABEL_KEYS[label]
            num = _number(value)
            out.labels[key] = None if value == "not set" else (value if num is None else num)
            continue
        key = TEXT_KEYS.get(label)
        num = _number(value.split()[0]) if value else None
        if key and num is not None:
            out.metrics[key] = num
    if not out.metrics:
        raise ValueError("no Serving Benchmark Result figures")
    return out


def parse_file(path: str | Path) -> BenchResult:
    """A saved bench JSONL or printed output."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise BadInput(f"{p}: cannot read: {exc.strerror}", fix="check the path") from exc
    with contextlib.suppress(ValueError, json.JSONDecodeError):
        return parse_jsonl(text)
    try:
        return parse_text(text)
    except ValueError:
        raise BadInput(f"{p}: neither a bench JSONL record nor a 'Serving Benchmark Result' block",
                       fix="pass the --output-file of sglang.benchmark.serving or its printed output") from None
