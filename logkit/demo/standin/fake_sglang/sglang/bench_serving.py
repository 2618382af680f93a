"""``python -m sglang.bench_serving`` of the stand-in package, kept for the tests that run many
benchmarks and compare their figures (sweeps: fixed figures scaled by the server's ``fake_speed``,
in a fraction of a second, where SGLang's real client, tests/benchclient.py, takes ~10 s to import
and measures noise). The real client runs in tests/test_bench_client.py and test_sglang_live.py. Asks the server for /server_info like the real client, appends one
JSONL record with the real client's key names to --output-file (``open(path, "a")`` and one
``json.dumps(record) + "\\n"`` write, like SGLang; ``--output-details`` adds the per-request lists)
and prints a real result block (tests/fixtures/bench/sglang-33108-2026.txt)."""

import argparse
import json
import os
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--host", default="0.0.0.0")
ap.add_argument("--port", type=int, default=30000)
ap.add_argument("--output-file")
ap.add_argument("--dataset-name", default="sharegpt")
ap.add_argument("--num-prompts", type=int, default=1000)
ap.add_argument("--max-concurrency", type=int)
ap.add_argument("--random-input-len", type=int, default=1024)
ap.add_argument("--random-output-len", type=int, default=1024)
ap.add_argument("--output-details", action="store_true")
args, _ = ap.parse_known_args()
host = "127.0.0.1" if args.host == "0.0.0.0" else args.host
with urllib.request.urlopen(f"http://{host}:{args.port}/server_info", timeout=5) as r:
    info = json.loads(r.read())
block = open(os.path.join(HERE, "..", "..", "fixtures", "bench", "sglang-33108-2026.txt")).read()
print(block, flush=True)
# Scaled by the server's speed (fakeserver's fake_speed, set per backend) and the concurrency, when it
# reports one; otherwise the fixed figures of the real block above.
speed = info.get("fake_speed")
if args.output_file:
    rec = {"tag": None, "backend": "sglang", "dataset_name": args.dataset_name, "request_rate": float("inf"),
           "max_concurrency": args.max_concurrency, "sharegpt_output_len": None,
           "random_input_len": args.random_input_len, "random_output_len": args.random_output_len,
           "random_range_ratio": 0.0, "server_info": info, "duration": 289.93, "completed": 32,
           "total_input_tokens": 12778, "total_output_tokens": 18225, "request_throughput": 0.11,
           "input_throughput": 44.07, "output_throughput": 62.86, "total_throughput": 106.93,
           "mean_e2e_latency_ms": 33656.65, "median_e2e_latency_ms": 33559.75, "mean_ttft_ms": 756.09,
           "median_ttft_ms": 607.40, "p99_ttft_ms": 1200.5, "mean_tpot_ms": 15.1, "mean_itl_ms": 15.0,
           "p99_itl_ms": 40.2, "concurrency": 3.71, "accept_length": None, "max_output_tokens_per_s": 76.0,
           "max_concurrent_requests": 5}
    if speed is not None:
        conc = args.max_concurrency or 1
        rec["output_throughput"] = round(40.0 * speed * conc ** 0.8, 2)
        rec["mean_tpot_ms"] = round(1000.0 * conc / rec["output_throughput"], 2)
        rec["p99_tpot_ms"] = round(rec["mean_tpot_ms"] * 1.3, 2)
    if args.output_details:  # the real client's per-request lists (bench_serving.py l.1940-1951)
        n = args.num_prompts
        rec |= {"input_lens": [args.random_input_len] * n, "output_lens": [args.random_output_len] * n,
                "ttfts": [0.75] * n, "itls": [[0.015] * 8] * n, "errors": [""] * n,
                "generated_texts": [f"reply {i} " + "lorem ipsum " * (args.random_output_len // 2) for i in range(n)]}
    # Exactly as SGLang appends its record (sglang/benchmark/serving.py l.1961).
    with open(args.output_file, "a") as file:
        file.write(json.dumps(rec) + "\n")
