#!/usr/bin/env python3
"""Rebuild the shipped knowledge base (``sessions/``) from the three seed accounts.

Every event is written by logkit's own CLI, run here as a subprocess (``python -m logkit``), so the
data is exactly what the commands write and this script doubles as an end-to-end test: each
command must succeed and print the id this script expects (``H3``, ``A7``, ``DR-0002``).

Nothing here is invented: every flag, figure and quote is the account's; where an account gives no
value (the GLM and CT200 model paths, MTP's step counts, the NCCL flags) the command does not carry
one and the label says so. The Qwen launches carry what that account names: the model
(``--model-path`` by its name), its 8 GPUs (``--tp 8``) and, for the MTP run,
``--speculative-algorithm NEXTN``: without them the MTP run and the working configuration it runs on
would be one configuration (issue 19). None of the accounts has a log, so no attempt has one, and every event says it was
reconstructed from its account (``--reconstructed``).

The accounts have no dates. The sessions are dated 2026-11-14, -15 and -16 (our choice), and every
command gets a fixed ``--at`` time, so the output is reproducible up to event ids and the host name.

    python scripts/build_seed_sessions.py                 # into ./sessions (refuses to overwrite)
    python scripts/build_seed_sessions.py --force         # replace the seed sessions in ./sessions
    python scripts/build_seed_sessions.py --out /tmp/kb   # anywhere else
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TODOS = "scripts/seed_todos"

GPU = ["--gpu", "NVIDIA RTX PRO 6000 Blackwell", "--compute-cap", "12.0"]
GPU8 = GPU + ["--count", "8"]

Q = "2026-11-14-qwen35-397b-nvfp4-sm120"
G = "2026-11-15-glm5-nvfp4-nan-at-decode"
C = "2026-11-16-ct200-dflash-ddtree-shadow-linear"

Q_SRC = "seed 000_39e3b334ccb40db0: written account of the Qwen3.5-397B-A17B-NVFP4 bring-up (msgs 5946-5978)"
G_SRC = "seed 001_9f08c5dc7942d9b5: written account of the GLM-5-NVFP4 NaN-at-decode campaign (msgs 211-307)"
C_SRC = "seed 004_d80e1e267c0932d4: written account of the CT200 DFlash/DDTree comparison (msgs 11219-11220)"

Step = tuple[list[str], str | None]  # (logkit arguments, the id it must print, or None)


def qwen() -> list[Step]:
    src = ["--reconstructed", Q_SRC]
    # every launch serves the account's model on its 8 GPUs (tensor parallel); the account names no
    # other path than the model's name
    launch = f"python -m sglang.launch_server --model-path {MODELS[Q]} --tp 8"
    # "speculative decoding via NEXTN" on the MTP heads (msgs 5976-5978); the account gives no
    # step, top-k or draft-token counts, so SGLang's defaults stand
    mtp = "--speculative-algorithm NEXTN"
    return [
        (["record", "session", "Qwen3.5-397B-A17B-NVFP4 on 8x RTX PRO 6000 Blackwell (SM120)", "--id", Q,
          "--goal", "find GEMM and MoE backends that are correct and fast on SM120, then MTP speculative decoding",
          "--tag", "qwen3.5", "--tag", "nvfp4", "--tag", "sm120", "--tag", "moe", "--tag", "mtp", *src], Q),
        (["hypothesis", "add", "NVFP4 quant has MTP (Multi-Token Prediction) heads", "--priority", "high", "--tag", "mtp", *src], "H1"),
        (["hypothesis", "add", "The auto backend selection produces correct output on SM120", "--priority", "high", *src], "H2"),
        (["hypothesis", "add", "GEMM backends for SM120: flashinfer_cutlass and flashinfer_cudnn dense FP4 GEMM both work; "
          "find the fastest option", "--priority", "high", "--tag", "gemm", *src], "H3"),
        (["hypothesis", "add", "flashinfer_trtllm MoE backend works on SM120", "--priority", "high", "--tag", "moe", *src], "H4"),
        (["hypothesis", "add", "flashinfer_cutedsl MoE backend produces correct output on SM120", "--priority", "high",
          "--tag", "moe", *src], "H5"),
        (["record", "attempt", "--cmd", launch, "--label", "default (auto) backends: the account gives no backend flags",
          "--status", "garbage", "--tests", "H2",
          "--result", "the default auto backend produced garbage output, which triggered the systematic backend investigation",
          *GPU8, *src], "A1"),
        (["record", "attempt", "--cmd", f"{launch} --moe-runner-backend flashinfer_trtllm", "--label", "MoE: flashinfer_trtllm",
          "--status", "arch_mismatch", "--tests", "H4",
          "--result", "TRT-LLM fused MoE kernels (trtllm_fp4_block_scale_moe) are compiled for SM100 only: the server crashed with a capability mismatch",
          "--evidence-text", 'the kernel trying to compile for "major version 10" while the GPUs reported "major version 12"',
          *GPU8, *src], "A2"),
        (["record", "attempt", "--cmd", f"{launch} --moe-runner-backend flashinfer_cutedsl", "--label", "MoE: flashinfer_cutedsl",
          "--status", "garbage", "--tests", "H5",
          "--result", "the CUTE DSL kernels loaded and ran but produced numerical garbage on SM120",
          "--evidence-text", 'a smoke test that checked for repeated exclamation marks ("!!!!")', *GPU8, *src], "A3"),
        (["record", "attempt", "--cmd", f"{launch} --fp4-gemm-backend flashinfer_cutlass", "--label", "dense FP4 GEMM: flashinfer_cutlass",
          "--status", "ready", "--tests", "H3", "--result", "correct output, ~71.9 tok/s", *GPU8, *src], "A4"),
        (["record", "metric", "output_throughput", "71.9", "--attempt", "A4", "--unit", "tok/s",
          "--label", "figure=~71.9 tok/s", "--label", "fp4_gemm_backend=flashinfer_cutlass", *src], None),
        (["record", "attempt", "--cmd", f"{launch} --fp4-gemm-backend flashinfer_cudnn", "--label", "dense FP4 GEMM: flashinfer_cudnn",
          "--status", "ready", "--tests", "H3", "--result", "correct output, ~71.6 tok/s", *GPU8, *src], "A5"),
        (["record", "metric", "output_throughput", "71.6", "--attempt", "A5", "--unit", "tok/s",
          "--label", "figure=~71.6 tok/s", "--label", "fp4_gemm_backend=flashinfer_cudnn", *src], None),
        (["hypothesis", "refute", "H2", "--evidence", "A1", "--because", "the default auto backend produced garbage output", *src], None),
        (["hypothesis", "refute", "H4", "--evidence", "A2", "--because",
          'kernels for SM100 only: compiled for "major version 10", the GPUs report "major version 12"', *src], None),
        (["hypothesis", "refute", "H5", "--evidence", "A3", "--because",
          "the kernels ran but produced numerical garbage (repeated exclamation marks)", *src], None),
        (["hypothesis", "confirm", "H3", "--evidence", "A4,A5", "--because",
          "both work, and neither is faster: cutlass and cudnn dense FP4 GEMM are essentially identical (~71.9 vs ~71.6 tok/s), "
          "both hit the same memory-bandwidth bottleneck", *src], None),
        (["todo", "import", f"{TODOS}/qwen35-msg5976.json", "--source", f"{TODOS}/qwen35-msg5976.json (seed 000, msg 5976)", *src], None),
        (["record", "attempt", "--cmd", f"{launch} --moe-runner-backend flashinfer_cutlass --fp4-gemm-backend flashinfer_cudnn",
          "--label", "the working configuration", "--status", "ready",
          "--result", "correct output on SM120; the account proceeds to test MTP on it", *GPU8, *src], "A6"),
        (["decide", "flashinfer_cutlass for MoE, flashinfer_cudnn for FP4 GEMM on SM120",
          "--context", "Qwen3.5-397B-A17B-NVFP4 on 8x RTX PRO 6000 Blackwell (SM120): the default auto backend produced garbage, "
          "so every MoE and dense FP4 GEMM backend was tested for correctness and speed",
          "--decision", "--moe-runner-backend flashinfer_cutlass --fp4-gemm-backend flashinfer_cudnn",
          "--option", "flashinfer_trtllm MoE: kernels for SM100 only, crashed with a capability mismatch on SM120 (H4, A2)",
          "--option", "flashinfer_cutedsl MoE: ran but produced garbage output on SM120 (H5, A3)",
          "--option", "auto: produced garbage output (H2, A1)",
          "--option", "flashinfer_cutlass FP4 GEMM: a tie, ~71.9 vs ~71.6 tok/s for flashinfer_cudnn; both are memory-bandwidth bound, either works (H3, A4)",
          "--chosen", "flashinfer_cutlass MoE", "--chosen", "flashinfer_cudnn FP4 GEMM",
          "--evidence", "A2,A3,A4,A5,A6", "--tag", "sm120", "--tag", "moe", "--tag", "gemm",
          "--consequences", "MTP speculative decoding runs on top of it (~172 tok/s at single-request concurrency); "
          "the MTP draft layer runs BF16, not FP4", "--id", "DR-0001", *src], "DR-0001"),
        (["record", "attempt", "--cmd", f"{launch} --moe-runner-backend flashinfer_cutlass --fp4-gemm-backend flashinfer_cudnn {mtp}",
          "--label", "MTP speculative decoding (NEXTN, as the account names it; no step or draft-token counts are given)",
          "--status", "ready", "--tests", "H1",
          "--result", "MTP speculative decoding deployed: ~172 tok/s at single-request concurrency", *GPU8, *src], "A7"),
        (["record", "metric", "output_throughput", "172", "--attempt", "A7", "--unit", "tok/s",
          "--label", "max_concurrency=1", "--label", "figure=~172 tok/s at single-request concurrency", *src], None),
        (["hypothesis", "confirm", "H1", "--evidence", "A7", "--because",
          "The MTP model is unquantized in the nvfp4 checkpoint, so the MTP draft layer runs BF16, not FP4 (msg 5978)", *src], None),
        (["note", "SM100 (B100/B200) and SM120 (RTX PRO 6000 Blackwell) share the Blackwell branding but have different "
          "compute capabilities and need different kernel builds.", "--ref", "A2", *src], None),
        (["note", "The account ends with the deployment of a production systemd service (it gives no unit file).", *src], None),
    ]


def glm() -> list[Step]:
    src = ["--reconstructed", G_SRC]
    launch = "python -m sglang.launch_server"
    working = ("--nsa-decode-backend trtllm --nsa-prefill-backend trtllm --moe-runner-backend flashinfer_cutlass "
               "--attention-backend flashinfer --fp8-gemm-backend cutlass")
    per_attempt = "one of six failed attempts; the account gives no per-attempt log"
    return [
        (["record", "session", "GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell: NaN at decode", "--id", G,
          "--goal", "a GLM-5-NVFP4 server that decodes without NaN on SM120, then its baseline throughput",
          "--tag", "glm-5", "--tag", "nvfp4", "--tag", "sm120", "--tag", "nan", "--tag", "pcie", *src], G),
        (["hypothesis", "add", "The attention kernel is incompatible with SM120 GPUs", "--priority", "high", *src], "H1"),
        (["hypothesis", "add", "The MoE routing or GEMM kernels (MoE runner backend) cause the NaN at decode", "--priority", "high", *src], "H2"),
        (["hypothesis", "add", "The all-reduce communication introduces the NaNs", "--priority", "high", *src], "H3"),
        (["hypothesis", "add", "The trtllm NSA backends fix the NaN at decode", "--priority", "high", *src], "H4"),
        (["record", "attempt", "--cmd", f"{launch} --attention-backend flashinfer", "--label", "Attempt 1: attention backend flashinfer (default)",
          "--status", "nan", "--tests", "H1", "--result", f"NaN at decode ({per_attempt})", *GPU8, *src], "A1"),
        (["record", "attempt", "--cmd", f"{launch} --attention-backend flashinfer",
          "--label", "Attempt 2: flashinfer with specific NSA settings (the account does not give them)",
          "--status", "nan", "--tests", "H1", "--result", f"NaN at decode ({per_attempt})", *GPU8, *src], "A2"),
        (["record", "attempt", "--cmd", f"{launch} --attention-backend flashinfer",
          "--label", "Attempt 3: flashinfer with specific NSA settings (the account does not give them)",
          "--status", "nan", "--tests", "H1", "--result", f"NaN at decode ({per_attempt})", *GPU8, *src], "A3"),
        (["record", "attempt", "--cmd", f"{launch} --moe-runner-backend flashinfer_trtllm", "--label", "Attempt 4: MoE runner backend flashinfer_trtllm",
          "--status", "nan", "--tests", "H2", "--result", f"NaN at decode ({per_attempt})", *GPU8, *src], "A4"),
        (["record", "attempt", "--cmd", f"{launch} --moe-runner-backend flashinfer_cutlass", "--label", "Attempt 5: MoE runner backend flashinfer_cutlass",
          "--status", "nan", "--tests", "H2", "--result", f"NaN at decode ({per_attempt})", *GPU8, *src], "A5"),
        (["record", "attempt", "--cmd", f"{launch} --disable-custom-all-reduce",
          "--label", "Attempt 6: --disable-custom-all-reduce and other NCCL environment variables (the account does not name them)",
          "--status", "nan", "--tests", "H3", "--result", f"NaN at decode ({per_attempt})", *GPU8, *src], "A6"),
        (["record", "attempt", "--cmd", f"{launch} {working}", "--label", "Attempt 7: trtllm NSA backends",
          "--status", "ready", "--tests", "H4",
          "--result", "the server started, accepted inference requests and returned coherent text: \"3 + 5 = 8\"",
          "--evidence-text", "3 + 5 = 8", *GPU8, *src], "A7"),
        (["hypothesis", "confirm", "H4", "--evidence", "A7", "--because",
          "first of seven attempts to produce meaningful output without crashing (\"3 + 5 = 8\")", *src], None),
        (["hypothesis", "inconclusive", "H1", "--evidence", "A1,A2,A3", "--because",
          "NaN at decode with each attention setting tried; the culprit was the NSA attention implementation (H4)", *src], None),
        (["hypothesis", "refute", "H2", "--evidence", "A4,A5", "--because",
          "the MoE backend was never the source of the NaN crash; the NSA attention backend was", *src], None),
        (["hypothesis", "refute", "H3", "--evidence", "A6", "--because",
          "still failing with --disable-custom-all-reduce; the trtllm NSA backends fixed the NaN", *src], None),
        (["record", "attempt", "--cmd", "python -m sglang.bench_serving",
          "--label", "baseline benchmark with sglang.bench_serving at 64 concurrent requests (its flags are not given)",
          "--status", "exit_ok", "--result", "~225 output tok/s, 516 total tok/s at 64 concurrent requests; ~11 tok/s single stream",
          *GPU8, *src], "A8"),
        (["record", "metric", "output_throughput", "225", "--attempt", "A8", "--unit", "tok/s",
          "--label", "max_concurrency=64", "--label", "figure=~225 out tok/s", *src], None),
        (["record", "metric", "total_throughput", "516", "--attempt", "A8", "--unit", "tok/s",
          "--label", "max_concurrency=64", "--label", "figure=516 total", *src], None),
        (["record", "metric", "output_throughput", "11", "--attempt", "A8", "--unit", "tok/s",
          "--label", "max_concurrency=1", "--label", "figure=~11 tok/s single stream", *src], None),
        (["hypothesis", "add", "CUDA graphs with --mem-fraction-static 0.92 improve throughput", "--priority", "high", *src], "H5"),
        (["record", "attempt", "--cmd", f"{launch} {working} --mem-fraction-static 0.92",
          "--label", "restart with --mem-fraction-static 0.92 and CUDA graphs enabled",
          "--status", "ready", "--tests", "H5",
          "--result", "CUDA graphs captured without OOM; throughput in the same range, 210–247 output tok/s", *GPU8, *src], "A9"),
        (["record", "metric", "output_throughput", "210", "--attempt", "A9", "--unit", "tok/s",
          "--label", "range=low", "--label", "figure=210–247 output tok/s", *src], None),
        (["record", "metric", "output_throughput", "247", "--attempt", "A9", "--unit", "tok/s",
          "--label", "range=high", "--label", "figure=210–247 output tok/s", *src], None),
        (["hypothesis", "refute", "H5", "--evidence", "A9", "--because",
          "CUDA graphs work (no OOM at 0.92) but throughput stayed at 210–247 output tok/s: the bottleneck is elsewhere, "
          "likely cross-GPU communication latency", *src], None),
        (["hypothesis", "add", "Expert parallelism (EP) is beneficial for this model on PCIe", "--priority", "high", "--tag", "ep", *src], "H6"),
        (["hypothesis", "refute", "H6", "--because",
          "the model's MoE parameters (453GB) far exceed the 96GB per GPU, so full replication is impossible, and the small "
          "hidden dimension (3584) gives EP8 no communication advantage over tensor parallelism", *src], None),
        (["todo", "import", f"{TODOS}/glm5-msg307.json", "--source", f"{TODOS}/glm5-msg307.json (seed 001, msg 307)", *src], None),
        (["decide", "Working configuration for GLM-5-NVFP4 on SM120: trtllm NSA backends",
          "--context", "GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell (SM120, PCIe, Proxmox VM) produced NaN at decode; six attempts "
          "over attention, MoE runner and all-reduce settings failed",
          "--decision", working,
          "--option", "trtllm NSA backends",
          "--option", "flashinfer attention settings alone: NaN at decode (H1, A1, A2, A3)",
          "--option", "another MoE runner backend: NaN at decode either way, the MoE backend was not the cause (H2, A4, A5)",
          "--option", "--disable-custom-all-reduce and NCCL environment variables: NaN at decode (H3, A6)",
          "--chosen", "trtllm NSA backends", "--evidence", "A7,A8,A9", "--tag", "sm120", "--tag", "nsa",
          "--consequences", "baseline ~225 output / 516 total tok/s at 64 concurrent requests, ~11 tok/s single stream; "
          "CUDA graphs at --mem-fraction-static 0.92: 210–247 output tok/s", "--id", "DR-0002", *src], "DR-0002"),
        (["decide", "No expert parallelism for GLM-5-NVFP4 on PCIe",
          "--context", "the user suggested expert parallelism (EP) to improve PCIe-bound performance",
          "--decision", "keep tensor parallelism; EP is not beneficial for this model on PCIe",
          "--option", "EP8: 453GB of MoE parameters cannot be replicated in 96GB per GPU, and the small hidden dimension (3584) "
          "makes EP8's communication volume similar to tensor parallelism (H6)",
          "--option", "tensor parallelism", "--chosen", "tensor parallelism", "--tag", "ep", "--tag", "pcie", "--id", "DR-0003", *src], "DR-0003"),
        (["note", "Model facts used for the EP analysis: 256 experts, top-8 routing, hidden size 3584, 78 layers, ~453GB of MoE parameters.",
          "--ref", "H6", *src], None),
        (["note", "The flashinfer autotuner only applies to the flashinfer_trtllm MoE path, not the flashinfer_cutlass "
          "path, which is why no autotuner log lines appeared with flashinfer_cutlass.", *src], None),
        (["note", "Proxmox VM: bandwidth tests later showed cross-GPU P2P transfers going through host memory at ~1 GB/s for small messages.",
          *src], None),
    ]


def ct200() -> list[Step]:
    src = ["--reconstructed", C_SRC]
    launch = "python -m sglang.launch_server"
    gpu1 = [*GPU, "--count", "1", "--first-index", "1", "--env", "CUDA_VISIBLE_DEVICES=1", "--package", "torch=2.11.0+cu130"]
    return [
        (["record", "session", "CT200: Qwen3.6 native DFlash vs DDTree shadow-linear on RTX PRO 6000 Blackwell (SM120)", "--id", C,
          "--goal", "a native DFlash/DDTree SGLang service on CT200, and whether DDTree shadow-linear costs throughput",
          "--tag", "dflash", "--tag", "ddtree", "--tag", "speculative", "--tag", "sm120", *src], C),
        (["hypothesis", "add", "FlashInfer attention JIT works on SM120 on CT200", "--priority", "high", *src], "H1"),
        (["hypothesis", "add", "DDTree shadow-linear smoke generation matches native DFlash with no overhead", "--priority", "high", *src], "H2"),
        (["record", "attempt", "--cmd", launch, "--label", "native SGLang with FlashInfer attention (the account gives no flags)",
          "--status", "jit_error", "--tests", "H1",
          "--result", "FlashInfer JIT failure: the capability detection returned (12, 0), which the JIT compiler interpreted as less than 75",
          "--evidence-text", "(12, 0)", *GPU, "--count", "1", *src], "A1"),
        (["hypothesis", "refute", "H1", "--evidence", "A1", "--because",
          "FlashInfer JIT failed on SM120; the fix was --attention-backend triton", *src], None),
        (["decide", "--attention-backend triton on CT200 (SM120)",
          "--context", "FlashInfer's JIT fails on the RTX PRO 6000 Blackwell (SM120): capability (12, 0) read as less than 75",
          "--decision", "--attention-backend triton",
          "--option", "flashinfer: JIT failure on SM120 (H1, A1)", "--option", "triton", "--chosen", "triton",
          "--evidence", "A1", "--tag", "sm120", "--id", "DR-0004", *src], "DR-0004"),
        (["record", "attempt", "--cmd", f"{launch} --attention-backend triton", "--label", "native DFlash (linear)",
          "--status", "ready", "--tests", "H2",
          "--result", "smoke generation on three prompts; the account gives 94–141 tok/s for native DFlash", *gpu1, *src], "A2"),
        (["record", "metric", "output_throughput", "140.6", "--attempt", "A2", "--unit", "tok/s", "--label", "prompt=fibonacci", *src], None),
        (["record", "metric", "output_throughput", "96.8", "--attempt", "A2", "--unit", "tok/s", "--label", "prompt=quicksort", *src], None),
        (["record", "metric", "output_throughput", "109.0", "--attempt", "A2", "--unit", "tok/s", "--label", "prompt=short-answer", *src], None),
        (["record", "attempt", "--cmd", f"{launch} --attention-backend triton",
          "--label", "DDTree shadow-linear (DDTree dispatch and logging, linear verification; its flags are not given)",
          "--status", "ready", "--tests", "H2",
          "--result", "same three prompts; the account gives 97–141 tok/s for DDTree shadow-linear", *gpu1, *src], "A3"),
        (["record", "metric", "output_throughput", "140.4", "--attempt", "A3", "--unit", "tok/s", "--label", "prompt=fibonacci", *src], None),
        (["record", "metric", "output_throughput", "94.6", "--attempt", "A3", "--unit", "tok/s", "--label", "prompt=quicksort", *src], None),
        (["record", "metric", "output_throughput", "106.5", "--attempt", "A3", "--unit", "tok/s", "--label", "prompt=short-answer", *src], None),
        (["hypothesis", "confirm", "H2", "--evidence", "A2,A3", "--because",
          "no measurable overhead: 140.6 vs 140.4 (fibonacci), 96.8 vs 94.6 (quicksort), 109.0 vs 106.5 (short-answer) tok/s", *src], None),
        (["todo", "import", f"{TODOS}/ct200-msg11220.json", "--source", f"{TODOS}/ct200-msg11220.json (seed 004, msg 11220)", *src], None),
        (["decide", "Overlay CT129's torch, triton and sgl_kernel onto CT200 instead of rebuilding SGLang",
          "--context", "CT129 failed (a GPU failure after a Triton crash); CT200 had no SGLang and torch +cu128, while CT129's "
          "SGLang was built against torch 2.11.0+cu130",
          "--decision", "overlay the packages from CT129's working environment onto CT200's venv, with LD_LIBRARY_PATH pointing to nvidia/cu13/lib",
          "--option", "overlay packages from CT129",
          "--option", "rebuild SGLang from source on CT200: hours of compilation and the MAX_JOBS memory exhaustion seen earlier",
          "--chosen", "overlay packages from CT129", "--evidence", "A2,A3",
          "--consequences", "a fragile environment with mixed CUDA runtimes (cu128/cu130); rebuilding CT200 means re-documenting the overlay",
          "--id", "DR-0005", *src], "DR-0005"),
        (["note", "The account's ranges (native DFlash 94–141 tok/s, DDTree shadow-linear 97–141 tok/s) do not match its per-prompt "
          "pairs read in the order DFlash vs DDTree (140.6/96.8/109.0 vs 140.4/94.6/106.5); the per-prompt figures are recorded as given.",
          "--ref", "A2", "--ref", "A3", *src], None),
        (["note", "The service runs a patched SGLang: spec_info.py, dflash_info.py, dflash_worker.py, ddtree_utils.py and "
          "server_args.py copied from a local snapshot, not an official release.", *src], None),
        (["note", "Next: full DDTree tree verify (--speculative-ddtree-allow-hybrid-unsafe) needs recurrent state forking for "
          "Qwen3.6's hybrid GDN/Mamba layers.", "--ref", "H2", *src], None),
    ]


SESSIONS: list[tuple[str, str, Any]] = [(Q, "2026-11-14T09:00:00Z", qwen), (G, "2026-11-15T09:00:00Z", glm), (C, "2026-11-16T09:00:00Z", ct200)]
#: The model each account is about, by the name the account uses (no account gives a model path).
MODELS = {Q: "Qwen3.5-397B-A17B-NVFP4", G: "GLM-5-NVFP4", C: "Qwen3.6"}
STEP = timedelta(minutes=7)


def run(out: Path, args: list[str], expect: str | None, env: dict[str, str]) -> str:
    """Run one logkit command against ``out``; fail loudly unless it prints ``expect``."""
    cmd = [sys.executable, "-m", "logkit", "--sessions", str(out), *args]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): logkit {' '.join(args[:3])} ...\n{done.stderr}")
    printed = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if expect is not None and printed != expect:
        raise SystemExit(f"logkit {' '.join(args[:3])} ... printed {printed!r}, expected {expect!r}")
    return done.stdout


def build(out: Path, *, verbose: bool = False) -> None:
    """Write the three seed sessions into ``out``."""
    # SGLang's parser spec is cached under $XDG_CACHE_HOME/logkit: built once, then milliseconds a launch.
    env = {**os.environ}
    env.pop("LOGKIT_SESSIONS", None)
    env.pop("LOGKIT_NOW", None)
    _build(out, env, verbose=verbose)


def _build(out: Path, env: dict[str, str], *, verbose: bool) -> None:
    for session_id, start, steps in SESSIONS:
        when = datetime.fromisoformat(start.replace("Z", "+00:00"))
        for number, (args, expect) in enumerate(steps()):
            at = (when + number * STEP).strftime("%Y-%m-%dT%H:%M:%SZ")
            full = [*args, "--at", at]
            if args[:2] != ["record", "session"]:
                full += ["--session", session_id]
            if args[:2] == ["record", "attempt"]:
                full += ["--model", MODELS[session_id]]
            printed = run(out, full, expect, env)
            if verbose:
                sys.stdout.write(printed)
    check = subprocess.run([sys.executable, "-m", "logkit", "--sessions", str(out), "decision", "check"],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    if check.returncode != 0:
        raise SystemExit(f"decision check failed:\n{check.stdout}{check.stderr}")
    (out / ".current").unlink(missing_ok=True)
    (out / ".store.lock").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "sessions", help="sessions directory (default ./sessions)")
    parser.add_argument("--force", action="store_true", help="replace the seed sessions already in --out")
    parser.add_argument("-v", "--verbose", action="store_true", help="print what each command prints")
    args = parser.parse_args(argv)
    out: Path = args.out
    ours = [out / sid for sid, _, _ in SESSIONS] + [out / "DECISIONS.tsv"]
    existing = [p for p in ours if p.exists()]
    if existing and not args.force:
        print(f"{out} already holds {', '.join(p.name for p in existing)}; rerun with --force to replace them", file=sys.stderr)
        return 1
    for path in existing:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    out.mkdir(parents=True, exist_ok=True)
    build(out, verbose=args.verbose)
    print(f"wrote {len(SESSIONS)} sessions to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
