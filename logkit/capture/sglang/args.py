"""A benchmark client's flags: its target and workload (``logkit run -- python -m sglang.bench_serving ...``).

Contract: :func:`parse_bench` reads the flags with the plain parser of :mod:`logkit.launch.flags`
(the one typing rule) and fills SGLang's bench defaults where a flag is not given. Launch flags
are read by :mod:`logkit.launch`, the one launch module.
"""

from __future__ import annotations

from typing import Any

from ...launch.flags import plain_parse

__all__ = ["parse_bench"]


def parse_bench(flags: list[str]) -> Any:
    """The benchmark client's target and workload (a ``BenchConfig``; SGLang's bench defaults where not given)."""
    from ...events import BenchConfig

    a = plain_parse(flags)
    backend = a.get("backend", "sglang")
    host = a.get("host", "0.0.0.0")
    port = a.get("port")
    base_url = a.get("base_url")
    if port is None and not base_url:
        port = 8000 if str(backend).startswith("vllm") else 23333 if str(backend).startswith("lmdeploy") else 30000
    labels = {
        "backend": backend,
        "dataset": a.get("dataset_name", "sharegpt"),
        "num_prompts": a.get("num_prompts", 1000),
        "request_rate": a.get("request_rate", "inf"),
        "max_concurrency": a.get("max_concurrency"),
        "random_input_len": a.get("random_input_len", 1024) if str(a.get("dataset_name", "")).startswith("random") else None,
        "random_output_len": a.get("random_output_len", 1024) if str(a.get("dataset_name", "")).startswith("random") else None,
        "tag": a.get("tag"),
    }
    return BenchConfig(host=str(host) if host is not None else None, port=int(port) if isinstance(port, int) else None,
                       base_url=base_url, output_file=a.get("output_file"),
                       labels={k: v for k, v in labels.items() if v is not None})
