"""The classifier's rules, on texts as the libraries print them (their source's message strings,
never a hold-out log): evidence beats position, root cause beats consequence, degenerate output is
garbage wherever it is printed (and progress bars, rules and dumps are not), unknown stays honest,
and reading is streamed in bounded memory (real `python -m logkit` processes, peak RSS measured)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from logkit.capture.sglang.outcomes import Classifier, classify_text, error_template
from logkit.capture.sglang.smoke import GarbageScanner, degenerate, degenerate_line

PY = sys.executable
TB = "Traceback (most recent call last):\n  File \"/x/y.py\", line 3, in <module>\n    f()\n"


def lk(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "logkit", *args], capture_output=True, text=True, input=input, timeout=timeout)


# --- evidence beats position ------------------------------------------------------------------

def test_log_cut_short_is_classified_by_its_evidence_not_abandoned() -> None:
    text = ("[2026-01-01 00:00:01 TP0] Load weight begin. avail mem=70.00 GB\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace")
    d = classify_text(text)
    assert d.status == "illegal_memory" and d.signature == "cuda-illegal-memory"
    assert [e.line for e in d.evidence] == [2]


def test_torch_capability_warning_at_the_end_of_a_cut_log_is_arch_mismatch() -> None:
    text = ("/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:287: UserWarning: \n"
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition with CUDA capability sm_120 is not compatible "
            "with the current PyTorch installation.\n")
    assert classify_text(text).status == "arch_mismatch"


def test_a_log_without_any_failure_evidence_is_abandoned() -> None:
    assert classify_text("[2026-01-01 00:00:01 TP0] Load weight begin. avail mem=70.00 GB\n").status == "incomplete"


def test_serving_excerpt_is_ready_and_a_later_failure_keeps_ready() -> None:
    serving = ('[2026-01-01 00:00:02 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, '
               'cuda graph: True, gen throughput (token/s): 99.0, #queue-req: 0\n'
               '[2026-01-01 00:00:02] INFO:     127.0.0.1:5555 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    d = classify_text(serving)
    assert (d.status, d.ready) == ("ready", True) and d.ready_line == 1
    d = classify_text(serving + "[2026-01-01 00:00:03 TP0] Detected errors during sampling! NaN in the logits.\n")
    assert (d.status, d.ready) == ("nan", True)


# --- root cause beats consequence -------------------------------------------------------------

def test_oom_killer_lines_name_the_kill() -> None:
    text = ("Loading safetensors checkpoint shards:  40% 2/5 [00:09<00:13,  4.5s/it]Killed\n"
            "[12345.678] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0\n"
            "[12345.679] Out of memory: Killed process 4242 (python) total-vm:90000000kB, anon-rss:60000000kB\n")
    d = classify_text(text)
    assert d.status == "killed" and d.signature == "linux-oom-killer" and "OOM killer" in (d.label or "")


def test_shell_kill_after_a_cause_is_the_consequence() -> None:
    text = (TB + "KeyError: 'model.layers.3.mlp.weight_scale'\n"
            "./run.sh: line 12:  4242 Killed                  python -m sglang.launch_server --model-path m\n")
    d = classify_text(text)
    assert d.status == "other_crash" and d.label == "KeyError: 'model.layers.3.mlp.weight_scale'"


@pytest.mark.parametrize("prefix", ["", "(SGLangEngine pid=7, ip=10.0.0.1) ", "sglang-1  | "])
def test_ninja_called_process_error_is_jit_wherever_it_is_raised(prefix: str) -> None:
    lines = ["[2026-01-01 00:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
             "subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/root/.cache/flashinfer/0.6/90/cached_ops']'"
             " returned non-zero exit status 1.",
             "Exception: Capture cuda graph failed: Ninja build failed.",
             "Possible solutions: 1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)"]
    d = classify_text("".join(prefix + ln + "\n" for ln in lines))
    assert d.status == "jit_error", d.label


def test_string_form_toolchain_command_is_jit() -> None:
    text = "subprocess.CalledProcessError: Command 'nvcc -c a.cu -o a.o' returned non-zero exit status 2.\n"
    assert classify_text(text).status == "jit_error"


# --- unknown stays honest ---------------------------------------------------------------------

def test_unexplained_failure_is_other_crash_labelled_with_its_exception_line() -> None:
    text = ("[2026-01-01 00:00:05 TP0] Scheduler hit an exception: " + TB
            + "    raise ValueError(msg)\nValueError: Unsupported rope_scaling type 'yarn2' for layer 17\n\n"
            "[2026-01-01 00:00:06] Received sigquit from a child process. It usually means the child failed.\n")
    d = classify_text(text)
    assert d.status == "other_crash"
    assert d.label == "ValueError: Unsupported rope_scaling type 'yarn2' for layer 17"
    assert any(e.text.startswith("ValueError:") for e in d.evidence)


def test_error_template_masks_numbers_paths_addresses_and_ids() -> None:
    a = error_template("KeyError: 'model.layers.55.mlp.gate_up_proj.input_scale'")
    b = error_template("[2026-01-01 TP3] KeyError: 'model.layers.13.mlp.gate_up_proj.input_scale'")
    assert a == b == "KeyError: 'model.layers.<n>.mlp.gate_up_proj.input_scale'"
    c = error_template("OSError: /home/u/.cache/x/lib.so at 0x7f3a2b1c: handle 3f9a8b7c6d5e4f30")
    assert c == "OSError: <path> at <addr>: handle <id>"


# --- degenerate output is garbage wherever it is printed --------------------------------------

@pytest.mark.parametrize("line", [
    "Generated text: '!!!!!!!!!!!!!!!!!!!!!!!!'",
    "Output: 1111111111111",
    '{"text": "HelloHowToToToToToToToToToToToToToToToTo"}',
    "prevent prevent prevent prevent prevent prevent prevent prevent",
    "答案：给给给给给给给给给给给给",
    "reply: \ufffd\ufffd\ufffd\ufffd",
])
def test_degenerate_printed_lines_are_garbage(line: str) -> None:
    d = classify_text(f"[bench] request 3\n{line}\n")
    assert d.status == "garbage" and d.evidence[0].line == 2, d


def test_garbage_with_a_clean_exit_is_garbage() -> None:
    clf = Classifier()
    clf.feed(b"Prompt: What is 2+2?\nOutput: !!!!!!!!!!!!!!!!!!!!!!!!\n", 1)
    assert clf.decide(exit_code=0).status == "garbage"


@pytest.mark.parametrize("line", [
    "==================== Serving Benchmark Result ====================",
    "------------------------------------------------------------------",
    "Capturing batches (bs=8 avail_mem=10.3 GB): 100%|██████████| 8/8 [00:02<00:00,  3.1it/s]",
    "Loading safetensors checkpoint shards: 100% ########## 4/4",
    "    return self._call_impl(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "00000000: 0000 0000 ffff ffff 0000 0000 ffff ffff  ................",
    "ptr=0x7f0000000000 size=0xffffffffffff",
    "max_total_num_tokens=99999999, context_len=1000000, ratio=0.3333333333",
    "Authorization: Bearer xxxxxxxxxxxxxxxxxxxxxxxx",
    "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ waiting",
])
def test_rules_bars_dumps_and_masks_are_not_garbage(line: str) -> None:
    assert degenerate_line(line) is None
    assert classify_text(line + "\n").status == "incomplete"


def test_a_tensor_full_of_nan_is_nan_not_garbage() -> None:
    line = "tensor([nan, nan, nan, nan, nan, nan, nan, nan], device='cuda:0')"
    assert degenerate_line(line) is None
    assert classify_text(line + "\n").status == "nan"
    # a few NaN among numbers (a masked value, a padded row) are not a NaN run
    assert classify_text("tensor([0.1, nan, 0.3, nan, 0.5], device='cuda:0')\n").status == "incomplete"


@pytest.mark.parametrize("line", [
    # tokens sampled with no grammar: word salad, writing systems mixed inside words, mojibake,
    # one special token looping
    "Assistant: ... embarked Sol existed trainer Tunisia replacing Wash Bac knowing franchise Premier "
    "sun lacked Tight circulating survived polishing policy redund Blocks visibly gorgeous freeway",
    "'content': 'มนุษย์\")).orthand Cumberland app mult撒以及有大量的imest Jwt一时的动力にくstatic 考核异常家都知道供'",
    "reply: ÑÑ‚Ð°Ð½ Ð¿Ñ€Ð¾Ð´Ð°Ð¶Ðµ Ð·Ð°ÐºÐ°Ð·",
    "text: <|reserved_special_token_7|><|reserved_special_token_7|><|reserved_special_token_7|>"
    "<|reserved_special_token_7|><|reserved_special_token_7|><|reserved_special_token_7|>",
])
def test_sampled_nonsense_is_garbage(line: str) -> None:
    assert degenerate_line(line) is not None
    assert classify_text(f"[bench] request 3\n{line}\n").status == "garbage"


@pytest.mark.parametrize("line", [
    # prose, lists and other languages are not salad
    "The server could not load the model because the weights are larger than the memory of the GPU "
    "and the user did not set a tensor parallel size that splits them across all of the devices",
    "Installing collected packages: mpmath, sympy, networkx, jinja, fsspec, filelock, typing, triton, torch, "
    "markupsafe, numpy, pillow, requests, urllib, idna, certifi, charset, packaging, pyyaml, regex, tqdm",
    "Successfully built torch triton sympy networkx jinja fsspec filelock mpmath markupsafe numpy pillow "
    "requests urllib idna certifi charset packaging pyyaml regex safetensors tokenizers tqdm",
    "模型加载完成，使用GPU运行 Qwen3 推理服务，端口 30000",
    "Bitte verwenden Sie die Größe für München, Straße und Übergrößen",
    "<s> Hello <pad> world </s>",
    "translations: hello = привет = 你好 = مرحبا = שלום = สวัสดี = γειά σου",
])
def test_prose_lists_and_languages_are_not_salad(line: str) -> None:
    assert degenerate_line(line) is None, line


@pytest.mark.parametrize("line", [  # the generated serving log of bench/bench_classify.py met these
    "[2026-12-06 10:15:23 DP1 TP3] Decode batch, #running-req: 171, #token: 999999, token usage: 0.18",
    "[2026-12-06 10:15:23 TP0] Prefill batch, #new-seq: 1, #queue-req: 222222",
])
def test_a_batch_lines_counters_are_not_garbage(line: str) -> None:
    assert degenerate_line(line) is None
    assert classify_text(line + "\n").status == "ready"  # a batch scheduled: serving


_BAR = st.builds(lambda pct, n, fill, w: f"{pct:3d}%|{fill * n}{' ' * (w - n)}| {n}/{w} [00:0{n % 10}<00:00]",
                 st.integers(0, 100), st.integers(0, 40), st.sampled_from(["█", "#", "=", "▏", "━"]), st.just(40))
_RULE = st.builds(lambda ch, n, title: f"{ch * n} {title} {ch * n}", st.sampled_from(list("=-_*#~.+")),
                  st.integers(6, 60), st.text(alphabet="abcdefghij ABC", max_size=20))
_HEX = st.builds(lambda off, data: f"{off:08x}: " + " ".join(f"{b:02x}" for b in data),
                 st.integers(0, 2**32 - 1), st.binary(min_size=8, max_size=32))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_BAR, _RULE, _HEX))
def test_property_bars_rules_and_hex_dumps_are_never_garbage(line: str) -> None:
    assert degenerate_line(line) is None
    assert GarbageScanner().scan(line.encode() + b"\n") == []


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list("!?@$%&123456789ABGKQZabgkqz给の")), st.integers(6, 200),
       st.sampled_from(["", "Output: ", "text='", "> "]))
def test_property_a_repeated_character_is_garbage(ch: str, n: int, prefix: str) -> None:
    # a whole unquoted number of one digit 6-11 times is a number (test_a_whole_number_of_a_few_repeated_digits...)
    assume(not (ch.isdigit() and n < 12 and prefix != "text='"))
    line = prefix + ch * n
    assert degenerate_line(line) is not None
    assert [why for _, _, why in GarbageScanner().scan(line.encode() + b"\n")]
    assert degenerate(ch * n) is not None  # the same detector judges a --smoke reply


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEF-", min_size=2, max_size=5).filter(
           lambda u: len(set(u)) > 1 and any(c not in "-xX" for c in u)),
       st.integers(8, 40))
def test_property_a_repeated_unit_is_garbage(unit: str, n: int) -> None:
    assert degenerate_line("Answer: " + unit * n) is not None


# --- streaming in bounded memory (real processes) ---------------------------------------------

_MEASURE = """
import os, subprocess, sys
with open(os.devnull, "wb") as null:
    proc = subprocess.Popen(sys.argv[1:], stdout=null)
    _, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, flush=True)
"""


def _peak_rss_mb(argv: list[str], timeout: float) -> tuple[int, float, str]:
    """Run argv; return (exit status, peak RSS of that process in MiB, stderr). A small Python
    process starts it and reaps it with wait4: a child forked straight from pytest would count
    pytest's own pages (ru_maxrss survives fork until exec)."""
    r = subprocess.run([PY, "-c", _MEASURE, *argv], capture_output=True, text=True, timeout=timeout)
    code, kib = r.stdout.split()[-2:]
    return int(code), int(kib) / 1024, r.stderr


def _big_log(path: Path, mib: int) -> None:
    healthy = (b"[2026-01-01 00:00:02 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, "
               b"gen throughput (token/s): 99.0, #queue-req: 0\n") * 8000
    with path.open("wb") as fh:
        fh.write(b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
        for _ in range(mib // 2):
            fh.write(healthy[: 1 << 20])
        fh.write(b"x" * ((mib // 2) << 20))  # half of it one line with no newline at all
        fh.write(b"\n")


@pytest.mark.slow
def test_classify_of_a_big_log_streams_in_bounded_memory(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    _big_log(big, 256)
    code, peak, err = _peak_rss_mb([PY, "-m", "logkit", "classify", "--json", str(big)], timeout=600)
    assert code == 0, err
    assert peak < 200, f"peak RSS {peak:.0f} MiB for a 256 MiB log"


@pytest.mark.slow
def test_import_of_a_big_log_streams_in_bounded_memory(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    _big_log(big, 256)
    sessions = tmp_path / "s"
    assert lk("--sessions", str(sessions), "session", "start", "big").returncode == 0
    # SGLang's flag spec is built once per SGLang in a child interpreter and cached: build it first,
    # so the figure is the import's own streaming, not that one-off child (wait4 counts descendants)
    small = tmp_path / "small.log"
    small.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert lk("--sessions", str(sessions), "import", str(small),
              "--cmd", "python -m sglang.launch_server --model-path m").returncode == 0
    code, peak, err = _peak_rss_mb([PY, "-m", "logkit", "--sessions", str(sessions), "import", str(big),
                                    "--cmd", "python -m sglang.launch_server --model-path m"], timeout=600)
    assert code == 0, err
    assert peak < 220, f"peak RSS {peak:.0f} MiB for a 256 MiB log"
    copies = list(sessions.glob("*/logs/A2-imported.log"))
    assert len(copies) == 1 and copies[0].stat().st_size == big.stat().st_size
    assert not list(sessions.glob("*/logs/.import-*")), "no temporary copy left behind"


def test_classify_refuses_a_device_that_never_ends_and_reads_a_pipe() -> None:
    r = lk("classify", "/dev/zero", timeout=30)
    assert r.returncode != 0 and "/dev/zero" in r.stderr and "fix:" in r.stderr
    r = lk("classify", "--json", "/dev/stdin", input="x\nOutput: !!!!!!!!!!!!!!!!\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "garbage"


# --- texts as the libraries' format strings print them (rows written from those sources) -------
# Each case fills the source's format string with plausible values; `signature` is the row that
# must decide (not merely a row of the right class).
SOURCE_TEXTS = [
    pytest.param(  # TensorRT-LLM plugins' NCCLCHECK: printf("Failed, NCCL error %s:%d '%s'\n", __FILE__, __LINE__, ...)
        "[TensorRT-LLM][INFO] Loaded engine size: 12959 MiB\n"
        "Failed, NCCL error /src/tensorrt_llm/cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp:295 "
        "'unhandled cuda error'\n", "nccl", "trtllm-ncclcheck", id="trtllm-ncclcheck"),
    pytest.param(  # the runtime's TLLM_NCCL_CHECK: the same text inside TLLM_CHECK_WITH_INFO's assertion
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error "
        "/src/tensorrt_llm/cpp/tensorrt_llm/runtime/ncclCommunicator.cpp:61 'unknown result code'\n",
        "nccl", "trtllm-ncclcheck", id="trtllm-nccl-check-runtime"),
    pytest.param(  # NCCL's CUCHECK on a driver call: WARN("Cuda failure %d '%s'", err, errStr)
        "node1:4242:4300 [1] transport/p2p.cc:275 NCCL WARN Cuda failure 1 'invalid argument'\n"
        "node1:4242:4300 [1] NCCL INFO transport/p2p.cc:327 -> 1\n", "nccl", "nccl-warn-cuda-failure",
        id="nccl-warn-cuda-failure-driver"),
    pytest.param(  # systemd: unit_check_oom, then service_enter_dead's "Failed with result '%s'." (oom-kill)
        "Jun 28 08:09:41 host systemd[1]: sglang.service: Main process exited, code=killed, status=9/KILL\n"
        "Jun 28 08:09:41 host systemd[1]: sglang.service: Failed with result 'oom-kill'.\n",
        "killed", "systemd-oom-kill", id="systemd-failed-with-result-oom-kill"),
    pytest.param(  # systemd-oomd's kill, reported by the unit (unit_check_oomd_kill)
        "Jun 28 08:09:41 host systemd[1]: run-u42.service: systemd-oomd killed 3 process(es) in this unit.\n",
        "killed", "systemd-oom-kill", id="systemd-oomd-killed"),
    pytest.param(  # bash job control, as bash 5.2 prints it for a job killed by SIGKILL (jobs.c pretty_print_job)
        "[1] 24102\n[2026-01-01 00:00:01 TP0] Load weight begin. avail mem=70.00 GB\n"
        "[1]+  Killed                  python -m sglang.launch_server --model-path m\n",
        "killed", "shell-job-control-killed", id="bash-job-control-killed"),
    pytest.param(  # bash -c (a container's command) reporting its killed foreground job, as bash 5.2 prints it
        "[2026-01-01 00:00:01 TP0] Load weight begin. avail mem=70.00 GB\n"
        "bash:  6880 Killed                  python3 -m sglang.launch_server --model-path m\n",
        "killed", "shell-job-killed", id="bash-c-killed"),
    pytest.param(  # TensorRT-LLM compileEngine.cpp: CHECK_TLLM_XQA_JIT_ERROR over nvrtcWrapper's "NVRTC Internal Error"
        "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
        "  what():  [TensorRT-LLM][ERROR] TllmXqaJit runtime error in "
        "tllmXqaJitCreateAndCompileProgram(&program, &context): NVRTC Internal Error "
        "(/src/cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQAImplJIT/compileEngine.cpp:75)\n",
        "jit_error", "trtllm-xqa-jit-nvrtc", id="trtllm-xqa-jit-nvrtc"),
    pytest.param(  # triton errors.py CompilationError.__repr__ ("{}({!r})"), as a task's or worker's exception shows it
        "future: <Task finished name='Task-5' coro=<Manager.loop() done> exception=CompilationError('at 38:4:\\n"
        "def _rotary_kernel(\\n    Q, Cos, Sin,')>\n", "jit_error", "triton-compile", id="triton-compilation-error-repr"),
    pytest.param(  # its subclasses: CompileTimeAssertionFailure (tl.static_assert), UnsupportedLanguageConstruct
        "triton.compiler.errors.CompileTimeAssertionFailure: at 10:4:\n    tl.static_assert(BLOCK % 16 == 0)\n"
        "    ^\n", "jit_error", "triton-compile", id="triton-compile-time-assertion"),
    pytest.param(
        "UnsupportedLanguageConstruct: at 3:4:\n    for i in range(n):\n    ^\nunsupported AST node type: Continue\n",
        "jit_error", "triton-compile", id="triton-unsupported-language-construct"),
    pytest.param(  # vLLM's bitsandbytes check, raised from a worker (its traceback prefixed)
        "(VllmWorker rank=0 pid=7) ERROR 01-01 00:00:01 [multiproc_executor.py:470] ImportError: Please install "
        "bitsandbytes>=0.45.3 via `pip install bitsandbytes>=0.45.3` to use bitsandbytes quantizer.\n"
        "ERROR 01-01 00:00:02 [core.py:700] EngineCore failed to start.\n", "import_error", "import-error-raised",
        id="vllm-bitsandbytes-import-error"),
    pytest.param(  # TensorRT-LLM's CudaAllocatorAsync (tllmBuffers.h) through check() (cudaUtils.h), as the
        # executor's Python side re-raises it on an MPI rank
        "[12/06/2026-10:00:00] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0: [TensorRT-LLM][ERROR] "
        "CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory "
        "(/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)\n"
        "1       0x7f0000000000 void tensorrt_llm::common::check<cudaError>(cudaError, char const*, char const*, int)"
        " + 149\n", "oom", "trtllm-cuda-runtime-oom", id="trtllm-cudamallocasync-oom-rank"),
    pytest.param(  # the same, as TllmException's what() after terminate (no Python in between)
        "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
        "  what():  [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): "
        "out of memory (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)\n",
        "oom", "trtllm-cuda-runtime-oom", id="trtllm-cudamallocasync-oom-terminate"),
    pytest.param(  # flashinfer's check_cuda_arch on an SM120 card its JIT does not recognise
        "(EngineCore pid=8146)     raise RuntimeError(\"FlashInfer requires GPUs with sm75 or higher\")\n"
        "(EngineCore pid=8146) RuntimeError: FlashInfer requires GPUs with sm75 or higher\n",
        "arch_mismatch", "flashinfer-requires-sm75", id="flashinfer-requires-sm75"),
    pytest.param(  # ncclGetErrorString's text through another framework (TensorFlow / Horovod)
        "tensorflow.python.framework.errors_impl.UnknownError:  ncclCommInitRank failed: unhandled system error "
        "(run with NCCL_DEBUG=INFO for details)\n", "nccl", "nccl-error", id="nccl-error-string-tensorflow"),
    pytest.param(  # SGLang's ServerArgs refusing a flag combination (a raise in server_args.py itself)
        "Traceback (most recent call last):\n"
        "  File \"/usr/lib/python3.12/site-packages/sglang/srt/server_args.py\", line 5100, in check_server_args\n"
        "    raise ValueError(\nValueError: --enable-dp-attention requires --dp-size > 1\n",
        "arg_error", "config-validation-raise", id="sglang-server-args-value-error"),
    pytest.param(  # vLLM's parser before --model became a warning
        "ValueError: With `vllm serve`, you should provide the model as a positional argument or in a config file "
        "instead of via the `--model` option.\n", "arg_error", "vllm-serve-model-flag", id="vllm-serve-model-flag"),
    pytest.param(  # SGLang 0.5.23's KV allocator running out while serving (mem_cache/allocation.py:613): after ready
        "[2026-01-05 06:12:30] The server is fired up and ready to roll!\n"
        "[2026-01-05 06:12:40] Decode batch, #running-req: 512, #token: 81920, token usage: 1.00\n"
        "[2026-01-05 06:12:41] Decode out of memory. Try to lower your batch size.\nTry to allocate 512 tokens.\n",
        "oom", "sglang-not-enough-memory", id="sglang-decode-out-of-memory-after-ready"),
    pytest.param(  # Triton's launcher build (runtime/build.py) running the C compiler, the message cut mid-command
        "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpfbsy3e1f/main.c', '-O3', "
        "'-I/usr/local/cuda/include', '-I/opt/conda\n", "jit_error", "jit-toolchain-failed", id="triton-gcc-cut"),
    pytest.param(  # an extension built against another libtorch: its missing symbol is torch's own
        "ImportError: /opt/conda/lib/python3.10/site-packages/tensorrt_llm/bindings.cpython-310-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c106detail14torchCheckFailEPKcS2_jRKSs\n", "missing_kernel", "kernel-undefined-symbol",
        id="extension-torch-abi-mismatch"),
    pytest.param(  # ProcessGroupGloo's full-mesh connect at distributed init
        "[rank10]:[E130 18:11:34.707542570 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n", "nccl", "gloo-connection",
        id="gloo-connect-full-mesh"),
    pytest.param(  # SGLang's assert_pkg_version at launch
        "Exception: flashinfer_python with minimum required version 0.2.5 is not installed. Please uninstall the old "
        "version and reinstall the latest version by following the instructions at https://docs.flashinfer.ai\n",
        "import_error", "sglang-package-version", id="sglang-package-not-installed"),
    pytest.param(
        "Exception: sgl-kernel is installed with version 0.0.5, which is less than the minimum required version 0.1.0. "
        "Please reinstall the latest version with `pip install sgl-kernel --force-reinstall`\n",
        "import_error", "sglang-package-version", id="sglang-package-too-old"),
    pytest.param(  # Megatron-LM's check_for_nan_in_grad (an RL trainer beside SGLang rollouts)
        "AssertionError: Rank 3: found NaN in local grad norm in backward pass before data-parallel communication "
        "collective. Device: 3, node: n1\n", "nan", "megatron-grad-nan", id="megatron-grad-norm-nan"),
    pytest.param(  # torch_memory_saver's CU_CHECK (SGLang --enable-memory-saver) on cuMemCreate
        "[torch_memory_saver.cpp] CUresult error: 2 (out of memory) file=csrc/utils.h func=cu_mem_create line=194\n"
        "Rank 0 scheduler is dead.\n", "oom", "torch-cuda-oom", id="torch-memory-saver-oom"),
    pytest.param(  # a CUDA driver call's check macro, through a Python binding
        "RuntimeError: CUDA driver error: out of memory\n", "oom", "torch-cuda-oom", id="cuda-driver-error-oom"),
    pytest.param(  # Slurm's cgroup plugin after the step's memory.events counted a kill
        "slurmstepd: error: Detected 1 oom_kill event in StepId=1054.0. Some of the step tasks have been OOM Killed.\n"
        "srun: error: node1: task 0: Out Of Memory\n", "killed", "linux-oom-killer", id="slurm-oom-kill-event"),
    pytest.param(  # SGLang's compiled kernels package not installed
        "  File \"/opt/sglang/python/sglang/srt/layers/activation.py\", line 20, in <module>\n"
        "    from sgl_kernel import silu_and_mul\nModuleNotFoundError: No module named 'sgl_kernel'\n",
        "missing_kernel", "kernel-extension-missing", id="sgl-kernel-missing"),
    pytest.param(  # DeepEP's EP_DEVICE_ASSERT after the server was ready: the crash, not ready
        "The server is fired up and ready to roll!\n"
        "Assertion failed: /sgl-workspace/DeepEP/csrc/kernels/internode.cu:483, condition: "
        "ibgda_get_state()->num_rc_per_pe >= num_channels\n", "illegal_memory", "device-assertion",
        id="deepep-device-assert-after-ready"),
    pytest.param(  # CUDA's device-side assert() as the kernel prints it
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [3,0,0], thread: [64,0,0] "
        "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.\n",
        "illegal_memory", "device-assertion", id="cuda-device-side-assert-line"),
    pytest.param(  # TensorRT's builder logger through TensorRT-LLM's logger (closed libnvinfer's category name)
        "[08/11/2024-06:10:36] [TRT] [E] [globWriter.cpp::makeResizableGpuMemory::435] Error Code 2: OutOfMemory "
        "(Requested size was 16654532608 bytes.)\n[08/11/2024-06:10:36] [TRT-LLM] [E] Engine building failed\n",
        "oom", "trtllm-cuda-runtime-oom", id="tensorrt-error-code-out-of-memory"),
    pytest.param(  # pydantic-core's message for a validator that raised, under vLLM's config validation
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, max_model_len 262144 is larger than the model allows [type=value_error, input_value=...]\n",
        "arg_error", "pydantic-value-error", id="pydantic-config-value-error"),
    pytest.param(  # argparse's usage block, the error line after it cut off
        "usage: launch_server.py [-h] [--model-path MODEL_PATH]\n                        [--tp-size TP_SIZE]\n",
        "arg_error", "argparse-usage", id="argparse-usage-without-error-line"),
    pytest.param(  # transformers Trainer.log's per-step dict
        "{'loss': nan, 'grad_norm': nan, 'learning_rate': 1.9e-05, 'epoch': 0.12}\n",
        "nan", "named-value-nan", id="trainer-loss-nan"),
    pytest.param(  # TensorRT-LLM py_executor_creator.py _maybe_explain_if_oom: RuntimeError(explanation) from e
        "RuntimeError: Executor creation failed due to insufficient GPU memory.\n\n"
        "The following component could not be created: KV cache\nTotal GPU memory (GiB): 79.10\n",
        "oom", "trtllm-cuda-runtime-oom", id="trtllm-executor-creation-oom"),
    pytest.param(  # ProcessGroupNCCL::getNCCLWatchdogTimeoutErrorMsg, logged on the rank told to dump
        "[rank1]:[E101 00:00:01.000000000 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
        "Received a dump signal due to a collective timeout from rank 0 and we will try our best to dump the "
        "debug info. Last enqueued NCCL work: 7, last completed NCCL work: 6.This is most likely caused by "
        "incorrect usages of collectives\n", "hang", "collective-timeout", id="torch-nccl-dump-signal"),
    pytest.param(  # Open MPI / PRRTE help topic proc-aborted-strsignal, strsignal(SIGKILL)
        "Primary job  terminated normally, but 1 process returned\n"
        "mpirun noticed that process rank 3 with PID 4242 on node gpu01 exited on signal 9 (Killed).\n",
        "killed", "launcher-shard-signal-9", id="mpirun-rank-signal-9"),
    pytest.param(  # vllm/_custom_ops.py 'import vllm._C' on an install without the compiled extension
        TB + '  File "/venv/lib/python3.12/site-packages/vllm/_custom_ops.py", line 9, in <module>\n'
        "    import vllm._C\nModuleNotFoundError: No module named 'vllm._C'\n",
        "missing_kernel", "kernel-extension-missing", id="vllm-c-extension-missing"),
    pytest.param(  # triton's JITFunction.run -> compile() (compiler.py), the exception line cut off
        TB + '  File "/venv/lib/python3.12/site-packages/triton/runtime/jit.py", line 569, in run\n'
        "    kernel = self.compile(src, target=target, options=options.__dict__)\n"
        '  File "/venv/lib/python3.12/site-packages/triton/compiler/compiler.py", line 278, in compile\n'
        "    module = src.make_ir(options, codegen_fns, module_map, context)\n",
        "jit_error", "jit-build-frame", id="triton-compile-frame"),
    # --- rows of the round that read holdout8's misses (each text is its source's format string) ---
    pytest.param(  # NCCL src/misc/socket.cc: WARN("Net : Connection closed by remote peer %s", ...)
        "node1:4242:4300 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer node2<47861>\n",
        "nccl", "nccl-net-failure", id="nccl-socket-closed"),
    pytest.param(  # NCCL src/include/checks.h NCCLCHECK: INFO(NCCL_ALL, "%s:%d -> %d", __FILE__, __LINE__, res)
        "node1:4242:4300 [1] NCCL INFO init.cc:1501 -> 2\nnode1:4242:4300 [1] NCCL INFO group.cc:64 -> 2 [Async thread]\n",
        "nccl", "nccl-return-code-trace", id="nccl-return-code-trace"),
    pytest.param(  # torch ProcessGroupNCCL.cpp, the heartbeat monitor
        "[rank0]:[F101 00:00:00.000000000 ProcessGroupNCCL.cpp:1224] [PG 0 Rank 0] ProcessGroupNCCL's watchdog got stuck "
        "for 480 seconds without making progress in monitoring enqueued collectives.\n",
        "hang", "watchdog-heartbeat-stuck", id="torch-heartbeat-monitor"),
    pytest.param(  # MPICH Hydra's banner, a rank SIGKILLed
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   RANK 1 PID 4242 RUNNING AT gpu01\n"
        "=   KILLED BY SIGNAL: 9 (Killed)\n",
        "killed", "mpich-bad-termination-kill", id="mpich-killed-by-signal-9"),
    pytest.param(  # MPICH Hydra's banner, a rank that exited 1
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 4242 RUNNING AT gpu01\n=   EXIT CODE: 1\n",
        "other_crash", "mpich-bad-termination", id="mpich-exit-code-1"),
    pytest.param(  # gdb corelow.c: "Program terminated with signal %s, %s."
        "Core was generated by `python -m sglang.launch_server'.\nProgram terminated with signal SIGSEGV, Segmentation fault.\n",
        "other_crash", "process-segfault", id="gdb-core-sigsegv"),
    pytest.param(  # Go os.ProcessState.String() for a SIGKILLed child
        'level=ERROR source=sched.go:455 msg="error loading llama server" error="llama runner process has terminated: '
        'signal: killed"\n',
        "killed", "go-exec-signal-killed", id="go-signal-killed"),
    pytest.param(  # sglang/test/test_utils.py popen_launch_server
        TB + "Exception: Server process exited with code -9. Check server logs for errors.\n",
        "killed", "scheduler-sigkill", id="sglang-popen-launch-server-9"),
    pytest.param(  # vLLM V0 worker_base.py execute_method's logger.exception
        "ERROR 01-01 00:00:00 [worker_base.py:620] Error executing method 'determine_num_available_blocks'. "
        "This might cause deadlock in distributed execution.\n",
        "other_crash", "sglang-scheduler-exception", id="vllm-worker-base-error-executing"),
    pytest.param(  # tensorboardX x2num.check_nan
        "2020-01-01 00:00:00 | WARNING | root | NaN or Inf found in input tensor.\n",
        "nan", "tensorboard-nan-scalar", id="tensorboardx-nan"),
    pytest.param(  # fairseq's json progress bar: stats as strings
        '{"epoch": 3, "train_loss": "nan", "train_nll_loss": "nan", "train_gnorm": "nan"}\n',
        "nan", "named-value-nan", id="fairseq-json-nan"),
    pytest.param(  # SwissArmyTransformer BaseStrategy.forward
        TB + "ValueError: nan in logits, set nan_default_token to proceed in BaseStrategy.forward.\n",
        "nan", "nan-in-model-output", id="sat-nan-in-logits"),
    pytest.param(  # torch._assert_async on the device, SGLang's maybe_detect_nan message
        "/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: block: [0,0,0], "
        "thread: [0,0,0] Assertion `NaN detected! draft_forward` failed.\n",
        "nan", "async-assert-nan", id="assert-async-nan"),
    pytest.param(  # cudaErrorPeerAccessUnsupported through torch
        TB + "RuntimeError: CUDA error: peer access is not supported between these two devices\n",
        "nccl", "cuda-peer-access", id="cuda-peer-access-217"),
    pytest.param(  # DeepEP csrc/kernels/intranode.cu
        "DeepEP timeout for dispatch senders, rank 3, responsible_channel = 5\n",
        "hang", "deepep-timeout", id="deepep-dispatch-timeout"),
    pytest.param(  # TorchInductor triton_heuristics.py _precompile_config
        "E0101 00:00:00.000000 1 torch/_inductor/runtime/triton_heuristics.py:533] Triton compilation failed: "
        "triton_poi_fused_add_0\n",
        "jit_error", "inductor-triton-compile-failed", id="inductor-triton-compile"),
    pytest.param(  # SGLang's watchdog: pyspy_dump_schedulers before 'Watchdog timeout'
        "[2026-01-01 00:00:00 TP0] Pyspy dump for PID 4242:\nProcess 4242: sglang::scheduler_TP0\n",
        "hang", "sglang-watchdog-dump", id="sglang-watchdog-pyspy"),
    pytest.param(  # Rust's default panic hook
        "thread 'main' panicked at router/src/main.rs:10:5:\ncalled `Option::unwrap()` on a `None` value\n",
        "other_crash", "rust-panic", id="rust-panic"),
    pytest.param(  # flashinfer/jit/core.py check_cuda_arch, the message cut
        TB + '  File "/venv/lib/python3.12/site-packages/flashinfer/jit/core.py", line 108, in check_cuda_arch\n'
        '    raise RuntimeError("FlashInfer requires GPUs\n',
        "arch_mismatch", "arch-check-frame", id="flashinfer-check-cuda-arch-frame"),
    pytest.param(  # sglang model_runner.py
        TB + "RuntimeError: SGLang only supports sm75 and above.\n",
        "arch_mismatch", "sglang-sm75-floor", id="sglang-sm75-floor"),
    pytest.param(  # a compiled extension module's undefined symbol (not torch's namespace)
        TB + "ImportError: /venv/lib/python3.10/site-packages/tensorrt_llm/bindings.cpython-310-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN12tensorrt_llm8executor4TestEv\n",
        "missing_kernel", "kernel-undefined-symbol", id="extension-module-undefined-symbol"),
    pytest.param(  # triton's runtime/build.py _build on Windows (triton-windows, bundled tcc)
        TB + '  File "C:\\venv\\Lib\\site-packages\\triton\\runtime\\build.py", line 136, in _build\n'
        "    subprocess.check_call(cc_cmd)\n",
        "jit_error", "jit-build-frame", id="triton-windows-build-frame"),
    pytest.param(  # faulthandler's dump inside triton's code generator (no comma before 'in')
        "Fatal Python error: Segmentation fault\n\nStack (most recent call first):\n"
        '  File "/venv/lib/python3.11/site-packages/triton/compiler/code_generator.py", line 1234 in ast_to_ttir\n',
        "jit_error", "jit-build-frame", id="faulthandler-triton-frame"),
    pytest.param(  # triton's make_cubin when ptxas exits non-zero
        TB + "RuntimeError: `ptxas` failed with error code 4294967295: \n",
        "jit_error", "ptxas-error", id="triton-ptxas-failed"),
    pytest.param(  # click's UsageError.show after NoSuchOption (click 8: message, then "  Did you mean ...?")
        "Usage: ilab model serve [OPTIONS]\nTry 'ilab model serve --help' for help.\n\n"
        "Error: No such option: --model  Did you mean --model-path?\n",
        "arg_error", "click-usage-error", id="click-no-such-option"),
    pytest.param(  # click < 8's NoSuchOption ('no such option: {}')
        "Error: no such option: --gpus\n", "arg_error", "click-usage-error", id="click7-no-such-option"),
    pytest.param(  # BadParameter.format_message ('Invalid value for {param_hint}: {message}') from an int type
        "Usage: serve [OPTIONS]\nError: Invalid value for '--port': 'abc' is not a valid integer.\n",
        "arg_error", "click-usage-error", id="click-invalid-value"),
    pytest.param(  # MissingParameter.format_message ('Missing {param_type} {param_hint}.')
        "Error: Missing option '--model-path'.\n", "arg_error", "click-usage-error", id="click-missing-option"),
    pytest.param(  # Command.parse_args ('Got unexpected extra argument ({args})')
        "Error: Got unexpected extra argument (serve)\n", "arg_error", "click-usage-error", id="click-extra-argument"),
    pytest.param(  # OpenVINO GenAI's pop_int_and_cast, thrown by OPENVINO_THROW ('Exception from {file}:{line}:' first)
        "Exception from src/cpp/src/utils.cpp:302:\n"
        "Failed to extract MIN_RESPONSE_LEN. Type mismatch: expected types: int or int64_t\n",
        "arg_error", "openvino-genai-config-type", id="openvino-genai-int-property-type"),
    pytest.param(  # Triton's OutOfResources from CompiledKernel._init_handles, under SGLang's scheduler crash notice
        "[2026-01-01 00:00:05 TP0] Scheduler hit an exception: " + TB +
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536. "
        "Reducing block sizes or `num_stages` may help.\n",
        "jit_error", "triton-out-of-resources", id="triton-out-of-resources"),
    pytest.param(  # Triton's semantic.cast: assert builder.options.allow_fp8e4nv, "fp8e4nv data type is not supported ..."
        TB + "AssertionError: fp8e4nv data type is not supported on CUDA arch < 89\n",
        "arch_mismatch", "dtype-needs-capability", id="triton-cast-fp8e4nv-arch"),
    pytest.param(  # ggml's CUDA_CHECK before 2024: fprintf(stderr, "\\nCUDA error %d at %s:%d: %s\\n", ...)
        "ggml_init_cublas: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3060, compute capability 8.6\n\n"
        "CUDA error 2 at /src/llama.cpp/ggml-cuda.cu:6301: out of memory\ncurrent device: 0\n",
        "oom", "torch-cuda-oom", id="ggml-cuda-check-out-of-memory"),
    pytest.param(  # Ray's RayTaskError.as_instanceof_cause: the class named f"RayTaskError({cause_cls.__name__})"
        TB + "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=4242, ip=10.0.0.2)\n",
        "oom", "ray-task-oom", id="ray-task-error-out-of-memory"),
    pytest.param(  # the heartbeat monitor's exit: getNCCLWatchdogTimeoutExitMsg("ProcessGroupNCCL watchdog hang")
        "[rank0]:[F1229 20:37:13.091528310 ProcessGroupNCCL.cpp:1306] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        "Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang.\n",
        "hang", "watchdog-heartbeat-stuck", id="heartbeat-monitor-exit-watchdog-hang"),
    pytest.param(  # vLLM V0's MQLLMEngineClient.run_heartbeat_loop: TimeoutError("No heartbeat received from MQLLMEngine")
        "ERROR 10-01 09:52:48 client.py:244] TimeoutError('No heartbeat received from MQLLMEngine')\n"
        "ERROR 10-01 09:52:48 client.py:244] NoneType: None\n",
        "hang", "vllm-engine-heartbeat-timeout", id="vllm-mq-heartbeat-timeout"),
    pytest.param(  # vLLM's launcher: logger.fatal("MQLLMEngine is already dead, terminating server process")
        "INFO:     ::1:39238 - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
        "CRITICAL 12-01 13:05:02 launcher.py:99] MQLLMEngine is already dead, terminating server process\n",
        "other_crash", "vllm-engine-dead-terminating", id="vllm-mq-engine-dead-after-serving"),
    pytest.param(  # the same handler for a RuntimeError with the engine errored: "AsyncLLMEngine has failed, ..."
        "CRITICAL 11-04 23:40:27 launcher.py:72] AsyncLLMEngine has failed, terminating server process\n",
        "other_crash", "vllm-engine-dead-terminating", id="vllm-async-engine-failed"),
    pytest.param(  # vLLM V1's dump_engine_exception, logged when execute_model raised (the exception not shown)
        "(EngineCore_DP0 pid=42) ERROR 01-01 00:00:01 [dump_input.py:79] Dumping scheduler output for model "
        "execution: SchedulerOutput(scheduled_new_reqs=[], total_num_scheduled_tokens=1)\n"
        "(EngineCore_DP0 pid=42) ERROR 01-01 00:00:01 [dump_input.py:81] Dumping scheduler stats: "
        "SchedulerStats(num_running_reqs=1, num_waiting_reqs=0)\n",
        "other_crash", "vllm-engine-input-dump", id="vllm-dump-engine-exception"),
    pytest.param(  # c10's get_backtrace frames of a c10::Error, the exception's own line cut off
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f0c1a2b3c46 in "
        "/venv/lib/python3.10/site-packages/torch/lib/libc10.so)\n"
        "frame #1: <unknown function> + 0x1234 (0x7f0c1a2b4e74 in /venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)\n",
        "other_crash", "c10-backtrace-frame", id="c10-backtrace-frames"),
    pytest.param(  # the same frames as a GitHub comment renders them ('#N' made a link)
        "frame [#45](https://github.com/o/r/pull/45): PyEval_EvalCode + 0x9f (0x55ba1909539f in python3)\n",
        "other_crash", "c10-backtrace-frame", id="c10-backtrace-frame-as-a-github-link"),
    pytest.param(  # torch.cuda.nccl's throw_nccl_error ("NCCL Error " << status << ": " << ncclGetErrorString), uncaught in C++
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)\nAborted (core dumped)\n",
        "nccl", "nccl-error", id="torch-cuda-nccl-throw-nccl-error"),
    pytest.param(  # the same with an NCCL 2.4-era ncclGetErrorString text (no parenthesis)
        "terminate called after throwing an instance of 'std::runtime_error'\n  what():  NCCL Error 1: unhandled cuda error\n",
        "nccl", "nccl-error", id="torch-cuda-nccl-throw-nccl-error-old-nccl"),
    pytest.param(  # vLLM's ModelConfig.verify_with_parallel_config
        TB + "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (6).\n",
        "arg_error", "parallel-size-not-divisible", id="vllm-heads-not-divisible-by-tp"),
    pytest.param(  # the pipeline-parallel check of older vLLM releases
        "ValueError: Total number of hidden layers (30) must be divisible by pipeline parallel size (4).\n",
        "arg_error", "parallel-size-not-divisible", id="vllm-layers-not-divisible-by-pp"),
    pytest.param(  # Triton's OutOfResources uncaught, the traceback's last line cut before the figures
        TB + "triton.runtime.errors.OutOfResources: out of resource: shared memory\n",
        "jit_error", "triton-out-of-resources", id="triton-out-of-resources-named-by-its-class"),
    pytest.param(  # slurmstepd's _handle_signal_container at a job step's time limit
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
        "slurmstepd: error: *** STEP 4242.0 ON node01 CANCELLED AT 2026-01-01T00:00:01 DUE TO TIME LIMIT ***\n",
        "killed", "slurm-step-cancelled", id="slurmstepd-step-time-limit"),
    pytest.param(  # the same for a batch job cancelled by scancel (no reason)
        "slurmstepd: error: *** JOB 4242 ON node01 CANCELLED AT 2026-01-01T00:00:01 ***\n",
        "killed", "slurm-step-cancelled", id="slurmstepd-job-scancel"),
    pytest.param(  # ... after a node failure
        "slurmstepd: error: *** JOB 4242 ON node01 CANCELLED AT 2026-01-01T00:00:01 DUE TO NODE FAILURE, "
        "SEE SLURMCTLD LOG FOR DETAILS ***\n", "killed", "slurm-step-cancelled", id="slurmstepd-job-node-failure"),
    pytest.param(  # srun's own _handle_timeout
        "srun: error: *** STEP 4242.0 CANCELLED AT 2026-01-01T00:00:01 DUE TO TIME LIMIT ***\n",
        "killed", "slurm-step-cancelled", id="srun-step-time-limit"),
    pytest.param(  # Ray's raylet HandleClientConnectionError, as ActorDiedError prints the worker's exit detail
        TB + "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. "
        "(1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. "
        "(3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.\n",
        "killed", "ray-worker-connection-lost", id="ray-worker-connection-eof"),
    pytest.param(  # CANN ACL: OpCompileService::SetCompileStrategy, then OpCompileProcessor::Init, as torch_npu prints the error log
        "RuntimeError: SetPrecisionMode:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:155 NPU function error: "
        "at_npu::native::AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001\n"
        "[ERROR] 2026-01-01-00:00:01 (PID:42, Device:0, RankID:-1) ERR00100 PTA call acl api failed\n"
        "        [Init][Compiler]Init compiler failed[FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]\n"
        "        [Set][Options]OpCompileProcessor init failed![FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]\n",
        "jit_error", "cann-op-compiler-init", id="cann-acl-op-compiler-init-failed"),
    pytest.param(  # TransformerEngine's fp8_autocast: assert fp8_available, reason_for_no_fp8 (check_fp8_support's reason)
        "  File \"/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/fp8.py\", line 70, in fp8_autocast\n"
        "    assert fp8_available, reason_for_no_fp8\n"
        "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.\n",
        "arch_mismatch", "te-low-precision-needs-capability", id="te-fp8-needs-sm89"),
    pytest.param(  # TransformerEngine's _compute_mxfp8_support and the ROCm fork's check_fp8_support
        "AssertionError: Device compute capability 10.0 or higher required for MXFP8 execution.\n",
        "arch_mismatch", "te-low-precision-needs-capability", id="te-mxfp8-needs-sm100"),
    pytest.param(
        "AssertionError: Device compute capability gfx942 or higher required for FP8 execution.\n",
        "arch_mismatch", "te-low-precision-needs-capability", id="te-rocm-fp8-needs-gfx942"),
    pytest.param(  # the same checks' library-version reasons are not the GPU's architecture
        "AssertionError: CublasLt version 12.1.3.x or higher required for FP8 execution on Ada.\n",
        "other_crash", "python-exception", id="te-fp8-cublaslt-version-is-not-arch"),
    pytest.param(  # NVSHMEM's ibrc transport: NVSHMEMI_NZ_ERROR_JMP(status, ..., "ibv_modify_qp failed \n"), "ep_connect failed \n"
        "/opt/nvshmem/src/modules/transport/ibrc/ibrc.cpp:412: non-zero status: 110 ibv_modify_qp failed \n\n"
        "/opt/nvshmem/src/modules/transport/ibrc/ibrc.cpp:1428: non-zero status: 7 ep_connect failed \n",
        "nccl", "nvshmem-transport-error", id="nvshmem-ibrc-modify-qp-failed"),
    pytest.param(  # NVSHMEM 2.x's path, and a newer release's errno string (NVSHMEMT_ERRNO_NZ_ERROR_JMP)
        "/dvs/p4/build/nvshmem/src/comm/transports/ibrc/ibrc.cpp:1203: non-zero status: 12 (Cannot allocate memory) "
        "ibv_reg_mr failed \n",
        "nccl", "nvshmem-transport-error", id="nvshmem-2x-ibrc-reg-mr-failed"),
    pytest.param(  # MAE's / DeiT's training loop: print("Loss is {}, stopping training".format(loss_value)); sys.exit(1)
        "Epoch: [3]  [ 200/1251]  eta: 0:10:02  lr: 0.000150  loss: 0.6712 (0.6803)  time: 0.4012  data: 0.0003  max mem: 20112\n"
        "Loss is nan, stopping training\n",
        "nan", "loss-not-finite-stop", id="mae-loss-is-nan-stopping"),
    pytest.param(
        "Loss is inf, stopping training\n",
        "nan", "loss-not-finite-stop", id="deit-loss-is-inf-stopping"),
    pytest.param(  # torch/__init__.py: from torch._C import * with torch's own libraries from different builds
        "  File \"/opt/conda/lib/python3.10/site-packages/torch/__init__.py\", line 237, in <module>\n"
        "    from torch._C import *  # noqa: F403\n"
        "ImportError: /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi\n",
        "import_error", "torch-own-library-undefined-symbol", id="torch-own-libtorch-undefined-symbol"),
    pytest.param(
        "ImportError: /usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so: undefined symbol: "
        "_ZN2at4_ops10sum_IntList4callERKNS_6TensorEN3c1016OptionalArrayRefIlEEbSt8optionalINS5_10ScalarTypeEE\n",
        "import_error", "torch-own-library-undefined-symbol", id="torch-own-c-extension-undefined-symbol"),
    pytest.param(  # an extension built against another torch stays the kernel row's
        "ImportError: /opt/conda/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi\n",
        "missing_kernel", "kernel-undefined-symbol", id="extension-undefined-torch-symbol-stays-kernel"),
    pytest.param(  # NVRTC's compile log (DeepGEMM's JIT), then DeepGEMM's DG_CUDA_DRIVER_CHECK on loading the failed output
        "deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh(57): error: identifier \"foo\" is undefined\n"
        "1 error detected in the compilation of \"kernel.cu\".\n"
        "RuntimeError: CUDA driver error (csrc/jit/handle.hpp:141): 200 (CUDA_ERROR_INVALID_IMAGE, device kernel image is invalid)\n",
        "jit_error", "nvcc-errors", id="nvrtc-compile-error-then-invalid-image"),
    pytest.param(  # the invalid image alone (or before any compile error) stays the architecture's
        "RuntimeError: CUDA driver error (csrc/jit/handle.hpp:141): 200 (CUDA_ERROR_INVALID_IMAGE, device kernel image is invalid)\n",
        "arch_mismatch", "cuda-invalid-kernel-image", id="invalid-image-without-compile-error"),
    pytest.param(  # pip's legacy build: the spinner's 'error', then InstallationSubprocessError's '%s did not run successfully.'
        "Building wheels for collected packages: some-cuda-ext\n"
        "  Building wheel for some-cuda-ext (setup.py) ... error\n"
        "  error: subprocess-exited-with-error\n\n"
        "  \u00d7 python setup.py bdist_wheel did not run successfully.\n"
        "  \u2502 exit code: 1\n",
        "jit_error", "pip-wheel-build-failed", id="pip-legacy-wheel-build-error"),
    pytest.param(  # the PEP 517 path and the install command's summary
        "  Building wheel for some-cuda-ext (pyproject.toml) ... error\n"
        "  ERROR: Failed building wheel for some-cuda-ext\n"
        "Failed to build some-cuda-ext\n"
        "ERROR: Could not build wheels for some-cuda-ext, which is required to install pyproject.toml-based projects\n",
        "jit_error", "pip-wheel-build-failed", id="pip-pep517-wheel-build-error"),
    pytest.param(  # a missing module inside the build is the more specific cause
        "  Building wheel for some-cuda-ext (setup.py) ... error\n"
        "      ModuleNotFoundError: No module named 'torch'\n"
        "  ERROR: Failed building wheel for some-cuda-ext\n",
        "import_error", "module-not-found", id="pip-wheel-build-missing-module"),
    pytest.param(  # TllmException::getTrace: fmtstr("%-3d %*p %s + %zd", i, 18, address, demangled name, offset), message cut off
        "1       0x7f3a1c2b4e5d tensorrt_llm::runtime::TllmRuntime::TllmRuntime(tensorrt_llm::runtime::RawEngine const&, "
        "nvinfer1::ILogger*, float, bool) + 1261\n"
        "2       0x7f3a1c1f0a11 tensorrt_llm::batch_manager::TrtGptModelInflightBatching::TrtGptModelInflightBatching("
        "std::shared_ptr<nvinfer1::ILogger>, tensorrt_llm::runtime::ModelConfig const&) + 657\n",
        "other_crash", "trtllm-exception-backtrace", id="tllm-exception-backtrace-frames"),
    pytest.param(  # the same trace as Triton's backend prints it, its newlines escaped
        "E0101 00:00:01.000 1 model_lifecycle.cc:630] failed to load 'tensorrt_llm': ... + 489\\n4       0x7fe8d8597369 "
        "tensorrt_llm::executor::Executor::Impl::createModel(tensorrt_llm::runtime::RawEngine const&) + 185\\n5       "
        "0x7fe8d85979fd tensorrt_llm::executor::Executor::Impl::loadModel(bool) + 1229\\n",
        "other_crash", "trtllm-exception-backtrace", id="tllm-exception-backtrace-escaped"),
    pytest.param(  # vLLM V1 WorkerProc.worker_busy_loop: logger.exception("WorkerProc hit an exception."), its traceback cut
        "(VllmWorker rank=0 pid=4242) ERROR 01-01 00:00:01 [multiproc_executor.py:470]     return self.model_runner.execute_model(\n"
        "(VllmWorker rank=0 pid=4242) ERROR 01-01 00:00:01 [multiproc_executor.py:470]            ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n",
        "other_crash", "vllm-worker-proc-exception", id="vllm-worker-proc-traceback-lines"),
    pytest.param(  # the same with the module's path and the exception shown: the exception's row wins
        "(Worker_TP0 pid=42) ERROR 11-06 11:21:05 [v1/executor/multiproc_executor.py:699] WorkerProc hit an exception.\n"
        "(Worker_TP0 pid=42) ERROR 11-06 11:21:05 [v1/executor/multiproc_executor.py:699] "
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
        "oom", "torch-cuda-oom", id="vllm-worker-proc-exception-names-oom"),
    pytest.param(  # glibc getopt_long: '%s: unrecognized option '%s%s'' before the server's usage text
        "tritonserver: unrecognized option '--model-repo=/models'\nUsage: tritonserver [options]\n  --help\n",
        "arg_error", "getopt-bad-option", id="getopt-unrecognized-long-option"),
    pytest.param(  # ... '%s: invalid option -- '%c'' and '%s: option '%s%s' requires an argument'
        "nginx: invalid option -- 'z'\n", "arg_error", "getopt-bad-option", id="getopt-invalid-short-option"),
    pytest.param(
        "tritonserver: option '--model-repository' requires an argument\n", "arg_error", "getopt-bad-option",
        id="getopt-option-requires-argument"),
    pytest.param(  # boost::program_options required_option::what(), the option's name substituted
        "the option '--model_path' is required but missing\nAllowed options:\n  -h [ --help ]  Shows a help message\n",
        "arg_error", "boost-program-options", id="boost-po-required-option"),
    pytest.param(  # unknown_option ('unrecognised option '%canonical_option%'') and invalid_option_value
        "terminate called after throwing an instance of 'boost::wrapexcept<boost::program_options::unknown_option>'\n"
        "  what():  unrecognised option '--grpc-port'\n", "arg_error", "boost-program-options", id="boost-po-unknown-option"),
    pytest.param(
        "the argument ('eighty') for option '--http_port' is invalid\n", "arg_error", "boost-program-options",
        id="boost-po-invalid-value"),
    pytest.param(  # vLLM v0 LLMEngine._init_cache: logger.info('# GPU blocks: %d, # CPU blocks: %d'), the raise cut off
        "INFO 01-01 00:00:01 llm_engine.py:275] # GPU blocks: 0, # CPU blocks: 2048\n"
        "Traceback (most recent call last):\n", "oom", "vllm-zero-gpu-blocks", id="vllm-v0-zero-gpu-blocks"),
    pytest.param(  # the raise shown: the message's own row
        "INFO 01-01 00:00:01 gpu_executor.py:83] # GPU blocks: 0, # CPU blocks: 2048\n" + TB +
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n",
        "oom", "vllm-no-kv-cache-memory", id="vllm-v0-zero-gpu-blocks-then-raise"),
    pytest.param(  # vLLM's csrc/cumem_allocator.cpp CUDA_CHECK on cuMemCreate
        "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n", "oom", "cumem-allocator-oom",
        id="vllm-cumem-allocator-oom"),
    pytest.param(  # torch/_ops.py _OpNamespace.__getattr__ for an op the extension did not register
        "  File \"/usr/lib/python3/site-packages/vllm/_custom_ops.py\", line 42, in gelu_quick\n"
        "    torch.ops._C.gelu_quick(out, x)\n"
        "  File \"/usr/lib/python3/site-packages/torch/_ops.py\", line 1170, in __getattr__\n"
        "    raise AttributeError(\n"
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'gelu_quick'\n",
        "missing_kernel", "torch-ops-namespace-missing-op", id="torch-ops-namespace-missing-op"),
    pytest.param(  # subprocess's FileNotFoundError when flashinfer's run_ninja finds no ninja on PATH
        TB + "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'\n", "jit_error", "jit-build-tool-not-found",
        id="jit-ninja-not-installed"),
    pytest.param(  # ... nvcc called by its absolute path
        TB + "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'\n", "jit_error",
        "jit-build-tool-not-found", id="jit-nvcc-not-installed"),
    pytest.param(  # torch cpp_extension.verify_ninja_availability
        TB + "RuntimeError: Ninja is required to load C++ extensions\n", "jit_error", "jit-build-tool-not-found",
        id="torch-ninja-required"),
    pytest.param(  # ROCm clr with AMD_LOG_LEVEL: hip_fatbin.cpp's missing code object, hip_platform.cpp's init
        ":1:hip_fatbin.cpp :276 : 42 us: [pid:42 tid:0x7f] Cannot find CO in the bundle /opt/rocm/lib/libMIOpen.so for ISA: "
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-\n"
        ":3:hip_platform.cpp :715 : 43 us: [pid:42 tid:0x7f] init: Returned hipErrorNoBinaryForGpu : continue parsing remaining modules\n",
        "arch_mismatch", "cuda-no-kernel-image", id="hip-no-binary-for-gpu-init"),
    pytest.param(  # ... and the launch that fails
        "\"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\"\nAborted (core dumped)\n",
        "arch_mismatch", "cuda-no-kernel-image", id="hip-no-binary-for-gpu-launch"),
    pytest.param(  # TransformerEngine check_mxfp8_support on sm120, asserted by fp8_autocast
        TB + "AssertionError: MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet.\n",
        "arch_mismatch", "te-low-precision-needs-capability", id="te-mxfp8-not-on-sm120"),
    pytest.param(  # Megatron training_log's per-iteration line
        " iteration     5426/  250000 | consumed samples:        43408 | elapsed time per iteration (ms): 4247.9 | "
        "learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | grad norm: nan | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |\n", "nan", "named-value-nan",
        id="megatron-grad-norm-nan"),
    pytest.param(  # slurmstepd before 15.08: the node last, in lower case
        "slurmstepd: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***\n",
        "killed", "slurm-step-cancelled", id="slurmstepd-old-time-limit"),
    pytest.param(  # llama.cpp quantize: fprintf(stderr, "%s: invalid nthread '%s' (%s)\n", __func__, argv[i], e.what())
        "main: invalid nthread 'Q8_0' (stoi)\n", "arg_error", "cxx-stoi-invalid-argument", id="llama-quantize-invalid-nthread"),
    pytest.param(  # SGLang fp8.py's capability assert, as the traceback shows its source line
        TB + '  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/fp8.py", line 788, in __init__\n'
        "    assert is_sm100_supported() or is_sm90_supported()\nAssertionError\n",
        "arch_mismatch", "sglang-capability-assert", id="sglang-fp8-moe-capability-assert"),
    pytest.param(  # ComfyUI-QwenVL load_model's raise, printed by the node as 'ERROR: {e}'
        "ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX 4090). Your GPU's capability "
        "is 8.6. Please select a non-FP8 model.\n", "arch_mismatch", "dtype-needs-capability", id="comfyui-qwenvl-fp8-capability"),
    pytest.param(  # onnxruntime BFCArena::AllocateRawInternal through the CUDA EP, as the session logs it
        "2026-01-01 00:00:01.000 [E:onnxruntime:, sequential_executor.cc:494 ExecuteKernel] Non-zero status code returned "
        "while running Attention node. Name:'Attention_0' Status Message: /onnxruntime_src/onnxruntime/core/framework/"
        "bfc_arena.cc:368 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
        "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 15728896\n",
        "oom", "onnxruntime-bfc-arena-oom", id="onnxruntime-bfc-arena-oom"),
    pytest.param(  # distutils spawn's DistutilsExecError, printed by setup() as 'error: ...' (CUDA extension build)
        "/usr/local/cuda/bin/nvcc -c roi_align_kernel.cu -o build/roi_align_kernel.o\n"
        "error: command '/usr/local/cuda/bin/nvcc' failed with exit status 1\n", "jit_error", "setuptools-compiler-failed",
        id="distutils-nvcc-failed"),
    pytest.param(  # pypa/distutils' newer wording
        "error: command '/usr/bin/gcc' failed with exit code 1\n", "jit_error", "setuptools-compiler-failed",
        id="distutils-gcc-failed-exit-code"),
    pytest.param(  # the NVIDIA driver's Xid 31 report (dmesg -T)
        "[Fri Jun  5 01:02:42 2026] NVRM: Xid (PCI:0000:10:00): 31, pid=4242, name=python3, channel 0x00000009, "
        "intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_11 faulted @ 0x7f0b_27600000. Fault is of type "
        "FAULT_PDE ACCESS_TYPE_VIRT_READ\n", "illegal_memory", "nvrm-xid-mmu-fault", id="nvrm-xid-31-mmu-fault"),
    pytest.param(  # checkTimeout's c10::Error backtrace, rethrown from ncclCommWatchdog, its message cut off
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f00 in /torch/lib/libc10.so)\n"
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        "std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f01 in /torch/lib/libtorch_cuda.so)\n"
        "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f02 in /torch/lib/libtorch_cuda.so)\n",
        "hang", "c10d-checktimeout-frame", id="c10d-checktimeout-backtrace"),
    pytest.param(  # an NCCL error raised by the watchdog (not its timeout) stays nccl
        "RuntimeError: NCCL error: unhandled system error, NCCL version 2.21.5\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f00 in /torch/lib/libc10.so)\n"
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkForNCCLErrors() + 0x1d2 (0x7f01 in /torch/lib/libtorch_cuda.so)\n",
        "nccl", "nccl-error", id="c10d-nccl-error-backtrace-stays-nccl"),
]


def test_vllm_custom_ops_import_warning_for_a_missing_library_is_not_an_import_error() -> None:
    """The same warning when the extension's CUDA runtime library is missing: vLLM goes on, nothing failed yet."""
    d = classify_text("WARNING 01-01 00:00:01 _custom_ops.py:15] Failed to import from vllm._C with ImportError("
                      "'libcudart.so.12: cannot open shared object file: No such file or directory')\n")
    assert d.status == "incomplete", d.label
    d = classify_text(TB + "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n")
    assert (d.status, d.signature) == ("import_error", "shared-lib-missing")


def test_sglang_custom_allreduce_fallback_warning_is_not_nccl() -> None:
    """SGLang falls back to NCCL when the custom all-reduce cannot map peer memory: a warning, the launch goes on."""
    d = classify_text("[2026-01-01 00:00:00 TP0] Setup Custom allreduce failed with CUDART error: peer access is not "
                      "supported between these two devices. To silence this warning, specify --disable-custom-all-reduce "
                      "explicitly.\n")
    assert d.status == "incomplete", d.label


@pytest.mark.parametrize("line", [
    # one sentence looping until the length limit, inside a JSON string (literal \n escapes)
    '{"content":"' + "I am doing well, thank-you. How are you?\\n" * 8 + '"}',
    # a 19-word sentence looping inside a printed reply
    "Generated text: ' " + "I am looking for someone who is not afraid to be themselves and is not afraid to be spontaneous. " * 7,
    # a line of another writing system looping inside a repr
    "[Response(text='" + "जब हमने हृदय की आंखों से ही दिल होंठ बनाया\\n" * 7 + "')]",
    # DeepSeek's special tokens (full-width bars, U+2581 word marks)
    "<｜begin▁of▁sentence｜>" * 12,
    # a special token looping with a repr's literal \n between (vLLM's 'Generated text: ...' print)
    "Prompt: 'hi', Generated text: 'Hello.<|im_end|>\\n" + "<|im_start|>\\n" * 10 + "'",
    # a short sentence holding a number, looping inside a printed reply with literal \n escapes
    'Output [Text 0 Beam 0]: "' + "\\n7 day old weather report\\n" * 9 + '"',
    # every word emitted twice (a stream's pieces doubled)
    "  I'm checking checking how how the the request request handles handles JSON JSON parsing parsing today",
])
def test_looping_sentences_and_special_tokens_are_garbage(line: str) -> None:
    d = classify_text(f"[bench] request 3\n{line}\n")
    assert d.status == "garbage" and d.evidence[0].line == 2, d


def test_a_sentence_said_a_few_times_is_not_a_loop() -> None:
    line = "Note: restart the server. " * 3 + "Then run the benchmark again and compare the figures with the baseline."
    assert degenerate_line(line) is None


@pytest.mark.parametrize("line", [
    # a word doubled by mistake, a table repeating one value, a few doubled words in a long sentence, a
    # special token said a few times with escapes between
    "I think that that the server is is fine, but the the benchmark shows a regression after the update here",
    "| GPU | N/A N/A | N/A N/A | Default Default | N/A N/A | 0 0 | Off Off |",
    "Prompt: 'hi', Generated text: 'Hello.<|im_end|>\\n<|im_start|>\\n<|im_start|>\\nuser'",
    "--model-path /models/llama-2-7b --tokenizer-path /models/llama-2-7b --served-model-name llama2 llama2",
])
def test_doubled_words_and_escapes_near_garbage_are_not(line: str) -> None:
    assert degenerate_line(line) is None, line


def test_vllm_custom_ops_import_warning_alone_is_not_a_missing_kernel() -> None:
    """_custom_ops' own warning for the same import is not fatal (vLLM goes on): only the exception line counts."""
    d = classify_text("WARNING 01-01 00:00:01 _custom_ops.py:15] Failed to import from vllm._C with "
                      "ModuleNotFoundError(\"No module named 'vllm._C'\")\n")
    assert d.status != "missing_kernel" and d.signature != "kernel-extension-missing"


def test_a_failure_inside_server_args_that_it_did_not_raise_is_not_an_arg_error() -> None:
    # the GPU query in ServerArgs fails (no GPU): the raise is torch's, not a check of the flags
    d = classify_text(
        "Traceback (most recent call last):\n"
        "  File \"/x/sglang/srt/server_args.py\", line 800, in _handle_gpu_memory_settings\n"
        "    gpu_mem = get_device_memory_capacity(self.device)\n"
        "  File \"/x/torch/cuda/__init__.py\", line 300, in _lazy_init\n"
        "    torch._C._cuda_init()\nRuntimeError: No CUDA GPUs are available\n")
    assert d.status != "arg_error", d


def test_help_output_that_exits_0_is_not_an_arg_error() -> None:
    clf = Classifier()
    clf.feed(b"usage: launch_server.py [-h] [--model-path MODEL_PATH]\n\noptions:\n  -h, --help  show this help\n", 1)
    assert clf.decide(exit_code=0).status == "exit_ok"
    assert clf.decide(exit_code=2).status == "arg_error"


def test_a_raised_import_error_gives_way_to_a_specific_failure() -> None:
    text = ("ImportError: flash_attn is not installed, falling back to the torch backend\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    assert classify_text(text).status == "oom"


def test_a_job_control_kill_after_a_cause_is_the_consequence() -> None:
    text = (TB + "KeyError: 'model.layers.3.mlp.weight_scale'\n"
            "[1]+  Killed                  python -m sglang.launch_server --model-path m\n")
    assert classify_text(text).status == "other_crash"


@pytest.mark.parametrize(("text", "status", "signature"), SOURCE_TEXTS)
def test_source_format_strings_are_classified_by_their_row(text: str, status: str, signature: str) -> None:
    d = classify_text(text)
    assert (d.status, d.signature) == (status, signature), d.label


def test_a_benchmark_summary_with_answered_requests_shows_a_serving_server() -> None:
    summary = ("============ Serving Benchmark Result ============\nBackend:                                 sglang\n"
               "Successful requests:                     {n}\nBenchmark duration (s):                  170.41\n")
    assert classify_text(summary.format(n=1648)).status == "ready"
    assert classify_text(summary.format(n=0)).status == "incomplete"


def test_prose_naming_an_error_is_not_an_exception_line() -> None:
    assert classify_text("When I run the server I get a vLLM Import Error\n").status == "incomplete"
    assert classify_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nMemoryError\n").status != "incomplete"


@pytest.mark.parametrize("text", [
    "Loading checkpoint shards:  88%|███▊  | 7/8 [00:12<00:01,  1.84s/it][1]    14875 killed     python main.py\n",
    "zsh: killed     python -m sglang.launch_server --model-path m\n",
])
def test_zsh_kill_reports_are_killed(text: str) -> None:
    assert classify_text(text).status == "killed"


def test_a_scheduler_crash_after_serving_is_a_crash_not_ready() -> None:
    d = classify_text(
        "[2025-05-26 07:48:17 DP0 TP0] Prefill batch. #new-seq: 1, #new-token: 208, #cached-token: 0, token usage: 0.86\n"
        "[2025-05-26 07:48:18 DP1 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process\n')
    assert d.status == "other_crash" and d.ready, d


def test_click_texts_inside_other_exceptions_are_not_usage_errors() -> None:
    d = classify_text(TB + "ValueError: Invalid value for dtype: float8\n")
    assert d.status == "other_crash" and d.signature != "click-usage-error", d


def test_the_heartbeat_monitors_exit_for_a_collective_exception_is_not_a_hang_by_itself() -> None:
    """exitReason 'collective timeout or exception': an exception is not a hang (the lines before it say which)."""
    d = classify_text("[rank3]:[F710 18:08:32.707469047 ProcessGroupNCCL.cpp:1725] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
                      "Terminating the process after attempting to dump debug info, due to collective timeout or exception.\n")
    assert d.signature != "watchdog-heartbeat-stuck", d


def test_an_engine_dump_gives_way_to_the_exception_it_precedes_and_ends_a_serving_engine() -> None:
    dump = ("(EngineCore pid=7) ERROR 01-01 00:00:02 [dump_input.py:79] Dumping scheduler output for model execution: "
            "SchedulerOutput(scheduled_new_reqs=[])\n")
    serving = ("(APIServer pid=6) INFO 01-01 00:00:01 [loggers.py:123] Engine 000: Avg prompt throughput: 12.0 tokens/s, "
               "Avg generation throughput: 40.0 tokens/s, Running: 1 reqs\n")
    d = classify_text(serving + dump)
    assert (d.status, d.ready) == ("other_crash", True), d
    d = classify_text(dump + "(EngineCore pid=7) torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n")
    assert d.status == "illegal_memory", d


def test_a_cpp_backtrace_after_a_specific_failure_keeps_the_failures_class() -> None:
    text = ("[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027 "
            "(most recent call first):\n"
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a1c2b3446 in /venv/torch/lib/libc10.so)\n")
    assert classify_text(text).status == "nccl"


@pytest.mark.parametrize("text", [
    # SGLang's benchmark/gsm8k/bench_sglang.py against a running server (its four result lines)
    "100%|██████████| 200/200 [00:12<00:00, 16.62it/s]\nAccuracy: 0.950\nInvalid: 0.000\nLatency: 10.511 s\n"
    "Output throughput: 2034.512 token/s\n",
    # sglang.bench_one_batch's latency_test_run_once (prefill, the first decode steps, the median, the total)
    "Prefill. latency: 0.03551 s, throughput:   3604.40 token/s\n"
    "Decode 0. Batch size: 1, latency: 0.00716 s, throughput:    139.66 token/s\n"
    "Decode.  median latency: 0.00705 s, median throughput:    141.84 token/s\n"
    "Total. latency:  0.176 s, throughput:    771.22 token/s\n",
    # its correctness_test: the generated text of each prompt, printed once decoding finished
    "========== Prompt 0 ==========\n<s> The capital of France is Paris.\nThe capital of the United States is Washington, D.C.\n",
])
def test_a_benchmark_of_the_model_that_ran_shows_it_serving(text: str) -> None:
    d = classify_text(text)
    assert (d.status, d.ready) == ("ready", True), d


def test_a_benchmark_that_generated_nothing_or_garbage_is_not_ready() -> None:
    # no reply held a parseable answer (bench_sglang.py's 'Invalid: {invalid:.3f}'): garbage, whether or
    # not tokens came back; a benchmark with some valid answers stays the serving evidence it was
    for throughput in ("0.000", "8420.568"):
        d = classify_text(f"Accuracy: 0.000\nInvalid: 1.000\nLatency: 1.204 s\nOutput throughput: {throughput} token/s\n")
        assert (d.status, d.signature) == ("garbage", "accuracy-bench-all-invalid"), d
    assert classify_text("Accuracy: 0.310\nInvalid: 0.100\nLatency: 1.204 s\nOutput throughput: 812.000 token/s\n").status == "ready"
    assert classify_text("========== Prompt 0 ==========\n" + "!" * 40 + "\n").status == "garbage"


@pytest.mark.parametrize("text", [
    # Triton Inference Server's endpoints start once its model repository loaded (src/main.cc, grpc_server.cc,
    # http_server.cc)
    "I0304 23:44:28.443120 1 grpc_server.cc:102] Ready for RPC 'ServerReady', 0\n",
    "I1115 13:49:37.267016 120 grpc_server.cc:2451] Started GRPCInferenceService at 0.0.0.0:8001\n",
    "I1115 13:49:37.267416 120 http_server.cc:3558] Started HTTPService at 0.0.0.0:8000\n",
    # TGI's /generate_stream answering: the first token's event (router/src/server.rs, StreamResponse)
    'data: {"index":1,"token":{"id":89554,"text":" Deep","logprob":-0.97,"special":false},"generated_text":null}\n',    # llama.cpp's server after its model loaded (tools/server/server.cpp)
    "main: server is listening on http://127.0.0.1:8080 - starting the main loop\n",
])
def test_other_servers_serving_lines_show_a_ready_server(text: str) -> None:
    d = classify_text(text)
    assert (d.status, d.ready) == ("ready", True), d


@pytest.mark.parametrize("text", [
    # not serving: Triton's model table (a model READY, another may be UNAVAILABLE and the server exits),
    # an HTTP client's stream of another shape, Triton refusing to start
    "| tensorrt_llm     | 1       | READY  |\n",
    'data: {"id":"cmpl-1","object":"text_completion","index":1}\n',
    "I1115 13:49:37.267016 120 server.cc:307] Waiting for in-flight requests to complete.\n",    # llama.cpp's server still loading
    "srv    load_model: loading model '/models/qwen2.5-7b-q4_k_m.gguf'\n",
])
def test_near_serving_lines_of_other_servers_are_not_ready(text: str) -> None:
    assert classify_text(text).status == "incomplete"


def test_hccls_notify_wait_timeout_is_a_hang() -> None:
    """CANN's HCCL error EI0002 (a collective's peer never sent its notify): the NPU's collective timeout."""
    for text in (
        "EI0002: [PID: 42] 2025-03-26-12:00:00.000.000 The wait execution of the Notify register times out. Reason: "
        "The Notify register has not received the Notify record from remote rank: [4].\n",
        "        Possible Cause: 1. An exception occurs during the execution on some NPUs in the cluster. As a result, "
        "collective communication operation failed.2. The execution speed on some NPU in the cluster is too slow to "
        "complete a communication operation within the timeout interval. (default 1800s, You can set the interval by "
        "using HCCL_EXEC_TIMEOUT.)3. The number of training samples of each NPU is inconsistent.\n",
    ):
        d = classify_text(text)
        assert (d.status, d.signature) == ("hang", "hccl-notify-wait-timeout"), d
    # the variable set, or named in a how-to: no timeout happened
    assert classify_text("export HCCL_EXEC_TIMEOUT=3600\n").status == "incomplete"
    assert classify_text("Set HCCL_EXEC_TIMEOUT to a larger value for long prefill runs.\n").status == "incomplete"


def test_vllm_stalled_statistics() -> None:
    """vLLM's statistics with requests running and nothing generated over two intervals are a stall, each
    interval's line its evidence; one such interval alone is not (a request that arrived before the tick),
    nor is a line hedged in prose; the row reads them as printed, in any case."""
    line = ("DEBUG 05-11 18:07:{s:02d} [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
            "throughput: 0.0 tokens/s, Running: {r} reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%\n")
    d = classify_text(line.format(s=24, r=1) + line.format(s=34, r=12) + line.format(s=44, r=12))
    assert (d.status, d.signature, [e.line for e in d.evidence]) == ("hang", "vllm-stalled-statistics", [1, 2])
    assert classify_text(line.format(s=24, r=1)).status == "incomplete"
    assert classify_text((line.format(s=24, r=3) + line.format(s=34, r=3)).upper()).status == "hang"


def test_a_stalled_vllm_engine_is_not_serving_evidence() -> None:
    """vLLM's stats line with requests running and neither throughput moving in the interval
    (v1/metrics/loggers.py LoggingStatLogger.log) is a stalled engine; the idle form (Running: 0)
    after serving, and any line with tokens, stay evidence of serving."""
    line = ("(APIServer pid=7) INFO 08-21 14:30:43 [loggers.py:123] Engine 000: Avg prompt throughput: {p} tokens/s, "
            "Avg generation throughput: {g} tokens/s, Running: {r} reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%\n")
    assert classify_text(line.format(p="0.0", g="0.0", r=255)).status == "incomplete"
    for p, g, r in (("0.0", "0.0", 0), ("0.0", "41.7", 3), ("812.4", "0.0", 12)):
        assert classify_text(line.format(p=p, g=g, r=r)).status == "ready", (p, g, r)


def test_a_slurm_allocation_refused_is_not_a_kill() -> None:
    """srun refusing the allocation (nothing ran) is not slurmstepd cancelling a step."""
    text = "srun: error: Unable to allocate resources: Requested time limit is invalid (missing or exceeds some limit)\n"
    assert classify_text(text).status != "killed"


def test_a_crash_the_log_shows_beats_rays_list_of_guesses() -> None:
    """Ray's lost-worker detail names three possible causes; a crash or NCCL error in the log is the cause."""
    ray = ("Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. "
           "End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to "
           "high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or "
           "other unexpected errors.\n")
    assert classify_text("Fatal Python error: Segmentation fault\n" + ray).status == "other_crash"
    assert classify_text("  what():  NCCL Error 5: invalid usage\n" + ray).status == "nccl"


def test_a_missing_tbe_module_beats_the_op_compiler_that_needed_it() -> None:
    text = ("ModuleNotFoundError: No module named 'tbe'\n"
            "        [Init][Compiler]Init compiler failed[FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]\n")
    assert classify_text(text).status == "import_error"


def test_a_verl_validation_run_shows_its_rollout_engine_serving() -> None:
    """veRL's trainer prints its validation metrics once the rollout engine answered the validation set
    (ray_trainer.py fit: pprint(f"Initial validation metrics: {val_metrics}")), as Ray prefixes a worker's lines."""
    line = ("(TaskRunner pid=42) (\"Initial validation metrics: {'val-aux/openai/gsm8k/reward/mean@1': \"\n"
            "(TaskRunner pid=42)  \"0.80, 'val-core/openai/gsm8k/acc/mean@1': 0.80}\")\n")
    assert classify_text(line).status == "ready"
    assert classify_text("Initial validation metrics: {'val/test_score/openai/gsm8k': 0.71}\n").status == "ready"
    assert classify_text("Running initial validation metrics soon\n").status == "incomplete"


@pytest.mark.parametrize("text", [
    # argparse's own texts stay argparse's rows; getopt's words inside prose or a shell's own usage are not a parse error
    "python: can't open file 'x.py': [Errno 2] No such file or directory\n",
    "WARNING: option 'foo' is deprecated\n",
    # a healthy vLLM v0 count, and one with few blocks
    "INFO 01-01 00:00:01 llm_engine.py:275] # GPU blocks: 2048, # CPU blocks: 512\n",
    "INFO 01-01 00:00:01 llm_engine.py:275] # GPU blocks: 7, # CPU blocks: 512\n",
    # a missing file that is not a build tool, and a model file named like one
    "FileNotFoundError: [Errno 2] No such file or directory: '/models/ninja-7b/config.json'\n",
    # Megatron's healthy iteration, which counts NaN iterations
    " iteration       10/  250000 | lm loss: 1.023E+01 | loss scale: 1.0 | grad norm: 3.141 | number of nan iterations:   0 |\n",
    # a tool's non-numeric complaint, a setup command that is not a compiler, another Xid, prose about compute capability
    "main: invalid model file 'x.gguf'\n",
    "error: command 'git' failed with exit status 128\n",
    "[Fri Jun  5 01:02:42 2026] NVRM: Xid (PCI:0000:10:00): 79, pid=4242, GPU has fallen off the bus.\n",
    "    assert torch.cuda.is_available()\n",
])
def test_texts_near_holdout12s_rows_are_not_theirs(text: str) -> None:
    d = classify_text(text)
    assert d.signature not in {"getopt-bad-option", "boost-program-options", "vllm-zero-gpu-blocks", "cumem-allocator-oom",
                               "torch-ops-namespace-missing-op", "jit-build-tool-not-found", "named-value-nan",
                               "cxx-stoi-invalid-argument", "setuptools-compiler-failed", "nvrm-xid-mmu-fault",
                               "sglang-capability-assert"}, d


def test_te_cublas_reason_is_not_an_architecture_row() -> None:
    d = classify_text(TB + "AssertionError: CublasLt version 12.1.3.x or higher required for FP8 execution on Ada.\n")
    assert d.signature != "te-low-precision-needs-capability", d


# --- srcengines ---
# The serving engines' own failure texts (vLLM, TGI, TensorRT-LLM and TensorRT), as each prints them,
# classified by the rows of signatures.toml's "serving engines source sweep" block.

_VLLM_CORE = "(EngineCore_DP0 pid=4242) ERROR 12-01 10:00:00 [core.py:708] "
_TGI = "2024-06-01T10:00:00.000000Z ERROR text_generation_launcher: "

SRCENGINES_TEXTS = [
    pytest.param(  # vLLM V1 Worker.init_device
        TB + "ValueError: Free memory on device cuda:0 (6.92/8.0 GiB) on startup is less than desired GPU memory "
        "utilization (0.9, 7.2 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n",
        "oom", "vllm-startup-free-memory", id="vllm-startup-free-memory"),
    pytest.param(  # vLLM ModelConfig.get_and_verify_max_len, raised as a ValueError (before the pydantic configs)
        TB + "ValueError: User-specified max_model_len (131072) is greater than the derived max_model_len "
        "(max_position_embeddings=32768 or model_max_length=None in model's config.json). This may lead to incorrect "
        "model outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\n",
        "arg_error", "vllm-config-refused", id="vllm-max-model-len"),
    pytest.param(  # the same check inside pydantic's ValidationError (newer vLLM)
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, User-specified max_model_len (65536) is greater than the derived max_model_len "
        "(max_position_embeddings=32768.0 or model_max_length=None in model's config.json). [type=value_error]\n",
        "arg_error", "vllm-config-refused", id="vllm-max-model-len-pydantic"),
    pytest.param(  # SchedulerConfig._verify_args
        TB + "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (4096). This effectively limits "
        "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
        "max_num_batched_tokens or decrease max_model_len.\n", "arg_error", "vllm-config-refused", id="vllm-batched-tokens"),
    pytest.param(  # CacheConfig._verify_args
        TB + "ValueError: GPU memory utilization must be less than 1.0. Got 1.5.\n",
        "arg_error", "vllm-config-refused", id="vllm-gpu-memory-utilization"),
    pytest.param(  # ModelConfig._verify_quantization
        TB + "ValueError: Quantization method specified in the model config (gptq) does not match the quantization "
        "method specified in the `quantization` argument (gptq_marlin).\n", "arg_error", "vllm-config-refused",
        id="vllm-quantization-mismatch"),
    pytest.param(
        TB + "ValueError: Unknown quantization method: awqq. Must be one of ['aqlm', 'awq', 'fp8'].\n",
        "arg_error", "vllm-config-refused", id="vllm-unknown-quantization"),
    pytest.param(  # the attention selector (VLLM_ATTENTION_BACKEND)
        TB + "ValueError: Invalid attention backend: 'FLASH_ATTN_V3'. Valid backends are: ['FLASH_ATTN', 'XFORMERS']\n",
        "arg_error", "vllm-config-refused", id="vllm-invalid-attention-backend"),
    pytest.param(  # CudaPlatform.get_attn_backend_cls, a chosen backend refused for another reason
        _VLLM_CORE + "ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. "
        "Reason: ['kv_cache_dtype not supported']\n", "arg_error", "vllm-config-refused", id="vllm-backend-kv-dtype"),
    pytest.param(
        _VLLM_CORE + "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=512, "
        "dtype=torch.bfloat16, kv_cache_dtype=nvfp4). Reasons: {FLASH_ATTN: [kv_cache_dtype not supported], "
        "TRITON_ATTN: [kv_cache_dtype not supported]}.\n", "arg_error", "vllm-config-refused", id="vllm-no-valid-backend"),
    pytest.param(  # ... and for the GPU's compute capability
        _VLLM_CORE + "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. "
        "Reason: ['compute capability not supported']\n", "arch_mismatch", "vllm-attention-backend-capability",
        id="vllm-backend-capability"),
    pytest.param(  # the multiprocessing executor's GPU count check
        TB + "RuntimeError: please set tensor_parallel_size (4) to less than max local gpu count (2)\n",
        "arg_error", "vllm-config-refused", id="vllm-tp-over-gpu-count"),
    pytest.param(  # EngineDeadError after the engine served: not ready
        "INFO 01-01 00:00:02 [loggers.py:123] Engine 000: Avg prompt throughput: 120.5 tokens/s, Avg generation "
        "throughput: 30.1 tokens/s, Running: 1 reqs, Waiting: 0 reqs\n"
        "(APIServer pid=1) ERROR 06-11 00:48:03 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.\n",
        "other_crash", "vllm-engine-core-dead", id="vllm-engine-dead-after-serving"),
    pytest.param(  # text-generation-launcher's main returning LauncherError::ArgumentValidation
        "Error: ArgumentValidation(\"`max_input_tokens`(4096) must be < `max_total_tokens`(4096)\")\n",
        "arg_error", "tgi-launcher-argument-validation", id="tgi-argument-validation"),
    pytest.param(
        "Error: NotEnoughCUDADevices(\"`sharded` is true but only found 1 CUDA devices\")\n",
        "arg_error", "tgi-launcher-argument-validation", id="tgi-not-enough-cuda-devices"),
    pytest.param(  # the launcher after the router said Connected: a crash, not ready
        "2024-09-23T12:10:56.485234Z  INFO text_generation_router::server: router/src/server.rs:2477: Connected\n"
        + _TGI + "Shard 0 crashed\n" + _TGI + "Webserver Crashed\nError: ShardFailed\n",
        "other_crash", "tgi-launcher-failed", id="tgi-shard-crashed-after-connected"),
    pytest.param(  # TGI's attention kernels missing: the warning, then the refusal
        "2024-06-01T10:00:00.000000Z  WARN text_generation_launcher: Could not import Flash Attention enabled models: "
        "Flash Attention V2 is not installed.\n" + _TGI + "Shard complete standard error output:\n\n" + TB
        + "NotImplementedError: Sharded Llama requires Flash Attention enabled models.\n" + _TGI + "Shard 0 failed to start\n"
        "Error: ShardCannotStart\n", "missing_kernel", "tgi-flash-attention-missing", id="tgi-flash-attention-v2-missing"),
    pytest.param(
        TB + "ImportError: GPU with CUDA capability 6 1 is not supported\n",
        "arch_mismatch", "tgi-gpu-capability-unsupported", id="tgi-gpu-capability"),
    pytest.param(  # TensorRT's allocator through its logger
        "[11/07/2025-17:42:27] [TRT] [E] [resizingAllocator.cpp::allocate::78] Error Code 1: Cuda Runtime (out of memory)\n",
        "oom", "tensorrt-cuda-oom", id="tensorrt-cuda-runtime-oom"),
    pytest.param(
        "[07/14/2023-11:41:43] [TRT] [E] 6: The engine plan file is generated on an incompatible device, expecting "
        "compute 8.6 got compute 8.9, please rebuild.\n[07/14/2023-11:41:43] [TRT] [E] 4: [runtime.cpp::"
        "deserializeCudaEngine::50] Error Code 4: Internal Error (Engine deserialization failed.)\n",
        "arch_mismatch", "tensorrt-plan-incompatible-device", id="tensorrt-plan-other-gpu"),
    pytest.param(  # TensorRT-LLM's Python logger under MPI, then the proxy's RuntimeError
        "[12/07/2026-05:38:58] [TRT-LLM] [MPI_Rank 0] [E] Executor worker initialization error: boom\n"
        "RuntimeError: Executor worker returned error\n", "other_crash", "trtllm-python-logger-error",
        id="trtllm-logger-error"),
    pytest.param(
        "[ERROR] [attentionPlugin.cpp:2183:createPlugin] Failed to create AttentionPlugin:\n"
        "        Failed to NVRTC compile XQA kernel for SM89, dtype=1, kv_dtype=1, head_dim=128,\n",
        "jit_error", "nvrtc-compile-failed", id="nvrtc-xqa-compile"),
    pytest.param(
        "-----\nmpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n  Process name: [[56869,1],2]\n  Exit code:    1\n",
        "other_crash", "openmpi-job-aborted", id="openmpi-nonzero-exit"),
    pytest.param(  # TensorRT-LLM's MoE op: TORCH_CHECK(sm == 100, ...)
        TB + "RuntimeError: Only SM100 is supported by FP4 block scale MOE\n", "arch_mismatch", "trtllm-sm-check",
        id="trtllm-fp4-moe-sm100"),
    pytest.param(  # the attention op's TLLM_CHECK_WITH_INFO, thrown as a TllmException
        "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
        "  what():  [TensorRT-LLM][ERROR] Assertion failed: FP8 FMHA cannot be enabled except on Ada or Hopper Arch. "
        "(/src/tensorrt_llm/cpp/tensorrt_llm/common/attentionOp.cpp:2109)\n", "arch_mismatch", "trtllm-sm-check",
        id="trtllm-fp8-fmha-arch"),
    pytest.param(
        "[TensorRT-LLM][ERROR] Assertion failed: Unsupported data type, pre SM 80 GPUs do not support bfloat16\n",
        "arch_mismatch", "trtllm-sm-check", id="trtllm-bf16-pre-sm80"),
    pytest.param(  # the PyTorch backend's KVCacheManager
        TB + "AssertionError: Impossible to fit in any sequence in kvCache\n", "oom", "trtllm-kv-cache-too-small",
        id="trtllm-kv-cache-too-small"),
    pytest.param(  # TGI's v3 backend after warmup, printed by the router's main
        "Error: Backend(NotEnoughMemory(32000))\n", "oom", "tgi-router-not-enough-memory", id="tgi-not-enough-memory"),
    pytest.param(
        _TGI + "text-generation-server not found in PATH\n" + _TGI + "Please install it with `make install-server`\n"
        "Error: ShardCannotStart\n", "import_error", "tgi-component-not-installed", id="tgi-server-not-installed"),
    pytest.param(  # vLLM's GPTQ create_weights and the Marlin shape check
        TB + "ValueError: The input size is not aligned with the quantized weight shape. This can be caused by too large "
        "tensor parallel size.\n", "arg_error", "quantized-shape-vs-tp", id="gptq-input-size-vs-tp"),
    pytest.param(
        TB + "ValueError: Weight input_size_per_partition = 14784 is not divisible by min_thread_k = 128. Consider "
        "reducing tensor_parallel_size or running with --quantization gptq.\n", "arg_error", "quantized-shape-vs-tp",
        id="marlin-min-thread-k-vs-tp"),
    pytest.param(  # a chosen attention backend whose kernels do not import
        _VLLM_CORE + "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. "
        "Reason: ['ImportError']\n", "missing_kernel", "vllm-attention-backend-import", id="vllm-backend-import-error"),
    pytest.param(  # vLLM V1's SIGUSR1 handler, then its own kill_process_tree: the Killed is the consequence
        "CRITICAL 04-14 03:35:21 [core_client.py:359] Got fatal signal from worker processes, shutting down. See stack "
        "trace above for root cause issue.\nKilled\n", "other_crash", "vllm-fatal-signal-from-workers",
        id="vllm-fatal-signal-then-killed"),
    pytest.param(  # TensorRT's deserializer, relayed by TensorRT-LLM's C++ logger
        "[TensorRT-LLM][ERROR] 6: The engine plan file is not compatible with this version of TensorRT, expecting library "
        "version 9.2.0.5 got 9.3.0.1, please rebuild.\n[TensorRT-LLM][ERROR] 2: [engine.cpp::deserializeEngine::1148] "
        "Error Code 2: Internal Error (Assertion engine->deserialize(start, size, allocator, runtime) failed. )\n",
        "missing_kernel", "tensorrt-plan-version-mismatch", id="tensorrt-plan-other-version"),
    pytest.param(  # TensorRT's builder
        "[04/05/2024-23:43:46] [TRT] [E] 10: [optimizer.cpp::computeCosts::2033] Error Code 10: Internal Error (Could not "
        "find any implementation for node Conv_119 + Add_182.)\n", "jit_error", "tensorrt-no-implementation",
        id="tensorrt-builder-no-implementation"),
    pytest.param(  # vLLM's custom all-reduce CUDACHECK
        "(VllmWorker rank=1 pid=4242) Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'invalid argument'\n",
        "nccl", "custom-allreduce-cuda-failure", id="vllm-custom-allreduce-cudacheck"),
    pytest.param(  # TensorRT-LLM's runner: an engine built for TP=2 started on one rank
        TB + "AssertionError: Engine world size (2) != Runtime world size (1)\n", "arg_error", "trtllm-world-size-mismatch",
        id="trtllm-engine-world-size"),
    pytest.param(  # transformers' resolve_trust_remote_code (older wording), as SGLang or TGI print it
        TB + "ValueError: Loading THUDM/chatglm-6b requires you to execute the configuration file in that repo on your local "
        "machine. Make sure you have read the code there to avoid malicious use, then set the option "
        "`trust_remote_code=True` to remove this error.\n", "arg_error", "trust-remote-code-required",
        id="transformers-trust-remote-code-old"),
    pytest.param(  # ... newer wording
        TB + "ValueError: The repository nomic-ai/nomic-bert-2048 contains custom code which must be executed to correctly "
        "load the model. You can inspect the repository content at https://hf.co/nomic-ai/nomic-bert-2048 .\n Please pass "
        "the argument `trust_remote_code=True` to allow custom code to be run.\n", "arg_error", "trust-remote-code-required",
        id="transformers-trust-remote-code-new"),
    pytest.param(  # vLLM's get_config re-raise
        TB + "RuntimeError: Failed to load the model config. If the model is a custom model not yet available in the "
        "HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using the "
        "`--trust-remote-code` flag in the CLI.\n", "arg_error", "trust-remote-code-required", id="vllm-trust-remote-code"),
    pytest.param(  # vLLM's V1 oracle with VLLM_USE_V1=1 set
        TB + "NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache-dtype.\n", "arg_error",
        "vllm-config-refused", id="vllm-v1-unsupported-flag"),
    pytest.param(
        TB + "NotImplementedError: VLLM_USE_V1=1 is not supported with Compute Capability < 8.0.\n", "arch_mismatch",
        "vllm-v1-needs-capability", id="vllm-v1-compute-capability"),
    pytest.param(  # Triton's build step at vLLM's engine start, in an image without gcc
        '  File "/venv/lib/python3.12/site-packages/triton/runtime/build.py", line 32, in _build\n    raise RuntimeError(\n'
        "RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set "
        "triton.knobs.build.impl.\n", "jit_error", "triton-no-c-compiler", id="triton-no-c-compiler"),
]


@pytest.mark.parametrize(("text", "status", "signature"), SRCENGINES_TEXTS)
def test_serving_engines_source_texts_are_classified_by_their_row(text: str, status: str, signature: str) -> None:
    d = classify_text(text)
    assert (d.status, d.signature) == (status, signature), d.label


@pytest.mark.parametrize("text", [
    # vLLM's V1 fallback warning and its FlashAttention notice: the launch goes on
    "WARNING 12-01 10:00:00 [arg_utils.py:1500] Compute Capability < 8.0 is not supported by the V1 Engine. Falling back to V0.\n",
    "INFO 12-01 10:00:00 [cuda.py:240] Cannot use FlashAttention-2 backend for Volta and Turing GPUs.\n",
    # healthy vLLM lines naming the same settings
    "INFO 12-01 10:00:00 [scheduler.py:220] Chunked prefill is enabled with max_num_batched_tokens=2048.\n",
    "INFO 12-01 10:00:00 [cuda.py:300] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN'].\n",
    "INFO 12-01 10:00:00 [gpu_worker.py:276] Available KV cache memory: 11.75 GiB\n",
    # the client's exit notice a script prints when it ends normally
    "ERROR 02-09 16:53:28 [core_client.py:610] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.\n",
    # TGI's launcher and router in health
    "2024-06-01T10:00:00.000000Z  INFO text_generation_launcher: Shard ready in 12.3s rank=0\n",
    "2024-06-01T10:00:00.000000Z  INFO text_generation_launcher: Starting Webserver\n",
    # TensorRT-LLM's info and warnings, TensorRT's warnings
    "[12/07/2026-05:38:58] [TRT-LLM] [I] Using LLM with PyTorch backend\n",
    "[12/07/2026-05:38:58] [TRT-LLM] [MPI_Rank 1] [W] Logger level already set from environment.\n",
    "[07/14/2023-11:41:43] [TRT] [W] Using an engine plan file across different models of devices is not recommended\n",
    # Open MPI in health, NVRTC named in a healthy line
    "[node1:4242] mca_base_component_repository_open: unable to open mca_btl_openib\n",
    "INFO: using NVRTC 12.4 for runtime compilation\n",
    # TensorRT-LLM's converters fall back instead of failing; a checkpoint's bare shape error names no flag
    "[TRT-LLM] [W] Pre SM 80 GPUs do not support bfloat16, fallback to float16\n",
    "INFO 12-01 10:00:00 [x.py:1] FP8 is supported by the Marlin kernel on this GPU\n",
    # vLLM's debug line listing the backends it skipped while choosing one
    "DEBUG 12-01 10:00:00 [cuda.py:420] Some attention backends are not valid for cuda with AttentionSelectorConfig("
    "head_size=64). Reasons: {FLASHMLA: [compute capability not supported], FLASHINFER: [ImportError]}.\n",
    # the custom all-reduce in health, and the same CUDACHECK text from another file
    "INFO 12-01 10:00:00 [custom_all_reduce.py:1] Registering 4355 cuda graph addresses\n",
    "(VllmWorker rank=0 pid=1) WARNING 12-01 10:00:00 [custom_all_reduce.py:137] Custom allreduce is disabled because "
    "your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify "
    "disable_custom_all_reduce=True explicitly.\n",
    # datasets' warning about remote code, and vLLM's config dump naming the flag
    "/venv/lib/python3.10/site-packages/datasets/load.py:1461: FutureWarning: The repository for hellaswag contains custom "
    "code which must be executed to correctly load the dataset. You can inspect the repository content at "
    "https://hf.co/datasets/hellaswag\nYou can avoid this message in future by passing the argument `trust_remote_code=True`.\n",
    "INFO 12-01 10:00:00 [llm_engine.py:1] Initializing an LLM engine with config: model='m', trust_remote_code=True, dtype=auto\n",
])
def test_texts_near_the_serving_engines_rows_are_not_theirs(text: str) -> None:
    d = classify_text(text)
    assert d.signature not in {"vllm-startup-free-memory", "vllm-config-refused", "vllm-attention-backend-capability",
                               "vllm-engine-core-dead", "tgi-launcher-argument-validation", "tgi-launcher-failed",
                               "tgi-flash-attention-missing", "tgi-gpu-capability-unsupported", "tensorrt-cuda-oom",
                               "tensorrt-plan-incompatible-device", "trtllm-python-logger-error", "nvrtc-compile-failed",
                               "openmpi-job-aborted", "trtllm-sm-check", "trtllm-kv-cache-too-small",
                               "tgi-router-not-enough-memory", "tgi-component-not-installed", "quantized-shape-vs-tp",
                               "vllm-attention-backend-import", "vllm-fatal-signal-from-workers",
                               "tensorrt-plan-version-mismatch", "tensorrt-no-implementation",
                               "custom-allreduce-cuda-failure", "trtllm-world-size-mismatch",
                               "trust-remote-code-required", "vllm-v1-needs-capability", "triton-no-c-compiler"}, d
    assert d.status in {"incomplete", "ready"}, d


def test_tgi_router_connected_is_serving_evidence_and_a_config_error_beats_a_pydantic_row() -> None:
    connected = "2024-09-23T12:10:56.485234Z  INFO text_generation_router::server: router/src/server.rs:2477: Connected\n"
    assert classify_text(connected).status == "ready"
    assert classify_text("2024-01-22 14:32:19,679 INFO worker.py:1724 -- Connected to Ray cluster.\n").status == "incomplete"
    # the same max_model_len refusal, as a weak pydantic line and as the specific row: the specific row wins
    d = classify_text("1 validation error for ModelConfig\n  Value error, max_num_batched_tokens (8) must be greater than "
                      "or equal to max_num_seqs (256). [type=value_error]\n")
    assert (d.status, d.signature) == ("arg_error", "vllm-config-refused")


# --- srcsglang ---
# SGLang 0.5.23's own failure texts (python/sglang/srt, kernels), printed as SGLang prints them: the
# scheduler's crash notice with its traceback, or the launcher's traceback through ServerArgs'
# resolution pipeline (sglang/srt/arg_groups/*_hook.py from 0.5.23 on).
_SITE = "/usr/local/lib/python3.12/dist-packages/sglang"


def _sched(frame: str, line: int, func: str, stmt: str, exc: str) -> str:
    """A scheduler crash as run_scheduler_process logs it, then the launcher's SIGQUIT notice."""
    return ("[2026-12-07 06:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{_SITE}/srt/managers/scheduler.py", line 6350, in run_scheduler_process\n'
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)\n"
            f'  File "{_SITE}/{frame}", line {line}, in {func}\n    {stmt}\n{exc}\n\n'
            "[2026-12-07 06:00:06] Received sigquit from a child process. It usually means the child failed.\n")


def _args(frame: str, line: int, func: str, stmt: str, exc: str) -> str:
    """ServerArgs' resolution refusing the flags in the launcher (no scheduler ran)."""
    return ("Traceback (most recent call last):\n"
            f'  File "{_SITE}/launch_server.py", line 30, in <module>\n    server_args = prepare_server_args(sys.argv[1:])\n'
            f'  File "{_SITE}/srt/server_args.py", line 600, in prepare_server_args\n    server_args.resolve_once()\n'
            f'  File "{_SITE}/srt/arg_groups/pipeline.py", line 212, in run_resolution_pipeline\n    hook(server_args)\n'
            f'  File "{_SITE}/srt/arg_groups/{frame}", line {line}, in {func}\n    {stmt}\n{exc}\n')


SGLANG_0523_TEXTS = [
    # ServerArgs' checks, moved into the arg_groups hooks in 0.5.23 (a raise, an assert, a model override)
    pytest.param(_args("hicache_hook.py", 117, "handle_hicache_ratio_default",
                       'raise ValueError("--hicache-host-memory-fraction must be in (0, 1].")',
                       "ValueError: --hicache-host-memory-fraction must be in (0, 1]."),
                 "arg_error", "config-validation-raise", id="arg-groups-hook-value-error"),
    pytest.param(_args("parallel_hook.py", 621, "handle_elastic_ep", "assert cfg.elastic_ep_scale_timeout > 0, (",
                       "AssertionError: --elastic-ep-scale-timeout must be greater than zero."),
                 "arg_error", "config-validation-raise", id="arg-groups-hook-assert"),
    pytest.param(_args("model_overrides/qwen4_exp.py", 39, "apply", "raise ValueError(",
                       "ValueError: Qwen4-Exp does not support --enable-unified-memory yet"),
                 "arg_error", "config-validation-raise", id="arg-groups-model-override"),
    # a flag the GPU's generation cannot run: the architecture, not the flags, refutes the backend
    pytest.param(_args("attention_hook.py", 203, "handle_attention_backend_compatibility", "raise ValueError(",
                       "ValueError: TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), or SM120 "
                       "GPUs. Please use a different prefill backend."),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="arg-groups-trtllm-mha-requires-hopper"),
    pytest.param(_args("kv_cache_hook.py", 106, "handle_kv_cache_dtype", "raise ValueError(",
                       "ValueError: --kv-cache-dtype mxfp8 requires an SM100+ (Blackwell) GPU for the block-scaled "
                       "operands used by the FA4 MXFP8 attention path."),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="arg-groups-mxfp8-kv-requires-sm100"),
    pytest.param(_sched("srt/layers/attention/dsa_backend.py", 374, "_validate_triton_sparse_mla_backend",
                        "raise RuntimeError(",
                        "RuntimeError: triton_sparse_mla requires SM90 (Hopper) or newer; got sm_major=8."),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="dsa-triton-sparse-mla-requires-sm90"),
    pytest.param(_sched("srt/layers/attention/attention_registry.py", 150, "create_flashattention_v3_backend",
                        "assert (major == 8 and not runner.use_mla_backend) or major == 9, (",
                        "AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use "
                        "`--attention-backend flashinfer`."),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="fa3-requires-sm80-sm90-older-releases"),
    pytest.param(_sched("srt/layers/quantization/fp8_kernel.py", 1200, "fp8_blockwise_scaled_mm",
                        "return torch.ops.sgl_kernel.fp8_blockwise_scaled_mm.default(",
                        "NotImplementedError: No implemented fp8_blockwise_scaled_mm for current compute capability: 120"),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="sgl-kernel-no-impl-for-capability"),
    pytest.param(_sched("srt/layers/quantization/mxfp4.py", 655, "__init__", 'raise RuntimeError("MXFP4 Marlin requires SM90+.")',
                        "RuntimeError: MXFP4 Marlin requires SM90+."),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="mxfp4-marlin-requires-sm90"),
    pytest.param(_sched("kernels/ops/attention/flash_attn/cute/flash_fwd_sm90.py", 86, "__init__",
                        'assert arch // 10 == 9, "Only SM 9.x is supported"', "AssertionError: Only SM 9.x is supported"),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="fa4-cute-only-sm9x"),
    pytest.param(_sched("srt/layers/quantization/compressed_tensors/schemes/compressed_tensors_w4a4_nvfp4_moe.py", 40,
                        "__init__", "raise ValueError(",
                        "ValueError: Current platform does not support NVFP4 quantization. Please use Blackwell and above."),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="nvfp4-moe-please-use-blackwell"),
    pytest.param(_sched("srt/layers/quantization/quark/quark.py", 790, "_check_scheme_supported", "raise RuntimeError(",
                        "RuntimeError: Quantization scheme is not supported for the current GPU. Min capability: 90. "
                        "Current capability: 86."),
                 "arch_mismatch", "sglang-requires-gpu-arch", id="quark-min-capability"),
    # the memory pools sized after the weights loaded
    pytest.param(_sched("srt/mem_cache/kv_cache_configurator.py", 3050, "profile_max_num_token", "raise ValueError(",
                        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.85. "
                        "Raise --mem-fraction-static above 0.912 (minimum viable = 1 - available/pre = 0.9114). If using "
                        "speculative decoding, draft weights are now counted."),
                 "oom", "sglang-kv-pool-no-memory", id="kv-cache-no-memory-after-weights"),
    pytest.param(_sched("srt/mem_cache/kv_cache_configurator.py", 3153, "resolve_max_num_reqs", "raise RuntimeError(",
                        "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                        "max_mamba_cache_size=0, mamba_ratio=5, resulting max_num_reqs=0. Try: (1) reduce "
                        "--max-running-requests, (2) increase --mem-fraction-static, or (3) use GPUs with more memory."),
                 "oom", "sglang-kv-pool-no-memory", id="mamba-state-cache-too-small"),
    pytest.param(_sched("srt/model_executor/pool_configurator.py", 1025, "_swa_pool_sizes", "raise RuntimeError(",
                        "RuntimeError: SWA pool cap (524288 tokens, 30.00 GiB) leaves no room for the full KV pool within "
                        "the available 28.50 GiB. Reduce --max-running-requests, lower SGLANG_SWA_EVICTION_INTERVAL, or "
                        "increase --mem-fraction-static."),
                 "oom", "sglang-kv-pool-no-memory", id="swa-pool-cap-no-room"),
    pytest.param(_sched("srt/managers/tp_worker.py", 425, "init_memory_pool",
                        'assert max_req_len > 0, "Memory pool size is too small"',
                        "AssertionError: Memory pool size is too small"),
                 "oom", "sglang-kv-pool-no-memory", id="tp-worker-memory-pool-too-small"),
    # the port check, whose logger.exception comes before the traceback
    pytest.param("[2026-12-07 06:00:01] Port is already in use. dist_init_port=30005 port_base=30010 detokenizer_port=30011 "
                 "nccl_port=30012 scheduler_input_port=30013\nTraceback (most recent call last):\n"
                 f'  File "{_SITE}/srt/utils/network.py", line 102, in wait_port_available\n    raise ValueError(\n'
                 "ValueError: dist_init_port at 30005 is not available in 30 seconds. dist_init_port is used by a process "
                 "already. process.name()='python3'\n", "other_crash", "sglang-port-in-use", id="port-args-port-in-use"),
    # a dependency check raised as RuntimeError / ValueError rather than ImportError
    pytest.param(_sched("srt/mem_cache/storage/flexkv/flexkv_connector.py", 57, "__init__", "raise RuntimeError(",
                        "RuntimeError: FlexKV is not installed. Please install the FlexKV package to use --enable-flexkv."),
                 "import_error", "dependency-not-installed", id="flexkv-not-installed"),
    pytest.param(_sched("srt/model_executor/runner_backend_utils/breakable_cuda_graph/cuda_utils.py", 35, "_driver",
                        "raise RuntimeError(",
                        "RuntimeError: cuda.bindings is not available. Install it with: pip install cuda-python"),
                 "import_error", "dependency-not-installed", id="cuda-python-install-it-with"),
    pytest.param(_sched("srt/distributed/device_communicators/mooncake_transfer_engine.py", 261, "batch_transfer_sync",
                        "raise RuntimeError(",
                        "RuntimeError: Mooncake's batch transfer requires mooncake-transfer-engine >= 0.3.4.post2. Please "
                        "upgrade Mooncake by 'pip install mooncake-transfer-engine --upgrade'"),
                 "import_error", "dependency-not-installed", id="mooncake-too-old"),
    pytest.param(_sched("srt/distributed/device_communicators/pynccl_allocator.py", 266, "get_nccl_mem_pool",
                        "assert after_2_8_0, (",
                        "AssertionError: --enable-symm-mem requires torch>=2.8 "
                        "(torch._C._cuda_beginAllocateCurrentThreadToPool was added there)."),
                 "import_error", "dependency-not-installed", id="symm-mem-requires-torch-2-8"),
    # the in-tree JIT kernels' ninja build
    pytest.param(_sched("kernels/jit/utils/compile/ninja.py", 169, "build_module", "raise RuntimeError(",
                        "RuntimeError: Failed to build JIT module sgl_jit_fused_moe_sm90 in "
                        "/root/.cache/sglang/jit/build/3f9a8b7c\nstdout:\n[1/2] c++ -MMD -MF fused_moe.o.d\nstderr:\n"),
                 "jit_error", "sglang-jit-module-build-failed", id="jit-module-build-failed"),
    # NaN in the logits: the sampler's one warning (the server goes on), and the NaN probe's device assertion
    pytest.param("[2026-12-07 06:00:02] The server is fired up and ready to roll!\n"
                 "[2026-12-07 06:10:00 TP0] NaN detected in sampler: next_token_logits; values were sanitized before "
                 "sampling. This usually indicates numerical overflow (e.g. fp16 activations) or an upstream bug producing "
                 "NaN. Logged once; further occurrences are silent.\n", "nan", "sglang-nan-logits-sanitized",
                 id="nan-logits-sanitized-warning"),
    pytest.param(f"{_SITE}/srt/utils/async_probe.py:114: _assert_no_nan_kernel: block: [3,0,0], thread: [0,0,0] "
                 "Assertion `NaN detected! sampler: next_token_logits` failed.\n"
                 + _sched("srt/layers/sampler.py", 145, "forward", "sanitize_nan_logits(logits, \"sampler: next_token_logits\")",
                          "torch.AcceleratorError: CUDA error: device-side assert triggered"),
                 "nan", "async-assert-nan", id="nan-probe-triton-device-assert"),
    # 0.5.23's other graph runners, and the other processes' crash notices
    pytest.param(_sched("srt/model_executor/runner/prefill_cuda_graph_runner.py", 521, "capture", "raise Exception(",
                        "Exception: Capture prefill CUDA graph failed: shape mismatch in the captured batch\n"
                        "Fail when using backend: breakable for prefill runner."),
                 "other_crash", "sglang-capture-failed", id="capture-prefill-cuda-graph-failed"),
    pytest.param("[2026-12-07 06:00:02] The server is fired up and ready to roll!\n"
                 "[2026-12-07 06:01:00] DetokenizerManager hit an exception: Traceback (most recent call last):\n"
                 f'  File "{_SITE}/srt/managers/detokenizer_manager.py", line 540, in event_loop\n'
                 "    output = self._request_dispatcher(recv_obj)\nKeyError: 7\n",
                 "other_crash", "sglang-scheduler-exception", id="detokenizer-hit-an-exception-after-ready"),
    pytest.param("[2026-12-07 06:01:00] SIGQUIT received. signum=3, frame=<frame at 0x7f3a2b1c, file "
                 "'/usr/lib/python3.12/threading.py', line 355, code wait>. It usually means one child failed.\n",
                 "other_crash", "sglang-child-failed", id="running-phase-sigquit"),
]


@pytest.mark.parametrize(("text", "status", "signature"), SGLANG_0523_TEXTS)
def test_sglang_0523_source_texts_get_their_row(text: str, status: str, signature: str) -> None:
    d = classify_text(text)
    assert (d.status, d.signature) == (status, signature), d.label


@pytest.mark.parametrize(("text", "status"), [
    # an SM number qualifying a flag's requirement: the flags, not the GPU, are refused
    (_args("attention_hook.py", 341, "handle_linear_attn_backend", "raise ValueError(",
           "ValueError: --linear-attn-decode-backend flashinfer on SM100+ requires --mamba-ssm-dtype bfloat16, got float32"),
     "arg_error"),
    (_args("kv_cache_hook.py", 226, "handle_nvfp4_kv", "raise ValueError(",
           "ValueError: SM100 native NVFP4 speculative decoding requires --speculative-draft-attention-backend=trtllm_mha "
           "so the draft worker consumes its physical NVFP4 KV layout; got flashinfer."), "arg_error"),
    # a shape limit of a kernel on its own architecture
    (_sched("kernels/ops/attention/flash_attn/cute/interface.py", 1508, "_flash_attn_fwd", "assert max_seqlen_k % page_size == 0, (",
            "AssertionError: SM100 hd256 2CTA paged KV requires max_seqlen_k divisible by page_size (128), got max_seqlen_k=100"),
     "other_crash"),
    # a failure inside a resolution hook that the hook did not raise (the GPU query under it failed)
    (_args("memory_hook.py", 120, "handle_gpu_memory_settings", "gpu_mem = get_device_memory_capacity(cfg.device)",
           f'  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py", line 372, in _lazy_init\n'
           "    torch._C._cuda_init()\nRuntimeError: No CUDA GPUs are available"), "other_crash"),
    # a count, not a package version
    (_sched("srt/speculative/dflash_utils.py", 376, "select_layers", "raise ValueError(",
            "ValueError: DFlash layer selection requires num_target_layers >= 4. Got num_target_layers=2."), "other_crash"),
    # the same words in an info line (rank0_log) while the launch goes on, and in a port warning
    ("[2026-12-07 06:00:03 TP0] NVIDIA KDA prefill needs SM100; falling back to Triton extend.\n", "incomplete"),
    ("[2026-12-07 06:00:01] The port 30005 is in use, but we could not find the process that uses it.\n", "incomplete"),
    ("[2026-12-07 06:00:01 TP0] flashinfer is not installed, please install it for faster sampling; using torch\n",
     "incomplete"),
    # the graph runner's advice to lower --mem-fraction-static is not the pool sizing's refusal
    (_sched("srt/model_executor/runner/decode_cuda_graph_runner.py", 603, "__init__", "raise Exception(",
            "Exception: Capture cuda graph failed: operation failed due to a previous error during capture\n"
            "Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)"), "other_crash"),
])
def test_texts_near_the_sglang_0523_rows_are_not_theirs(text: str, status: str) -> None:
    d = classify_text(text)
    assert d.status == status, (d.signature, d.label)
    assert d.signature not in {"sglang-requires-gpu-arch", "sglang-kv-pool-no-memory", "sglang-port-in-use",
                               "dependency-not-installed"}, d.label


def test_a_raised_import_error_keeps_its_own_row_beside_the_dependency_row() -> None:
    d = classify_text(TB + "ImportError: Please install bitsandbytes>=0.46.1 via `pip install bitsandbytes>=0.46.1` to use "
                      "bitsandbytes quantizer.\n")
    assert (d.status, d.signature) == ("import_error", "import-error-raised"), d.label


# --- the generic layer (sglang.toml [generic]): failure evidence no specific row names -------------

@pytest.fixture
def generic_only(monkeypatch: pytest.MonkeyPatch):
    """The classifier with every specific row disabled, as ``bench/bench_generic.py`` measures it."""
    from logkit.capture.sglang import table

    rows = tuple(s for s in table.load_signatures() if s.generic)
    monkeypatch.setattr(table, "load_signatures", lambda: rows)
    table.compiled.cache_clear()
    table.extras.cache_clear()
    yield
    monkeypatch.undo()
    table.compiled.cache_clear()
    table.extras.cache_clear()


GENERIC_TEXTS = [
    # (text as a library or tool prints it, class, generic row)
    ("ERROR 12-07 10:00:01 [engine.py:120] Engine start failed: could not allocate 2.00 GiB on device 0\n",
     "oom", "generic-oom"),
    ("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n",
     "oom", "generic-oom"),
    ("mytool: error: invalid choice: 'fast' (choose from 'a', 'b')\n", "arg_error", "generic-arg-error"),
    ("error: unexpected argument '--max-tokens' found\n\nUsage: launcher [OPTIONS]\n", "arg_error", "generic-arg-error"),
    ("Error: No such option: --ep (Possible options: --help, --tp)\n", "arg_error", "generic-arg-error"),
    ("Error: Shard 0 failed: timed out waiting for the shard to connect\n", "hang", "generic-hang"),
    ("[rank0]:[E1207 10:00:00.000000000 ProcessGroupNCCL.cpp:600] [Rank 0] collective stuck for 600 seconds\n",
     "hang", "generic-hang"),
    ("[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with peer 1\n", "nccl", "generic-nccl"),
    ("FATAL: this build has kernels for sm_80 sm_90 only, the device is sm_120\n", "arch_mismatch", "generic-arch"),
    ("RuntimeError: Unsupported architecture for this attention kernel\n", "arch_mismatch", "generic-arch"),
    ("2026-12-07 10:00:00 | ERROR | worker | worker 3 exited: signal 9, killed\n", "killed", "generic-killed"),
    ("slurmstepd: error: *** JOB 42 ON node1 CANCELLED AT 2026-12-07T10:00:00 DUE TO TIME LIMIT ***\n",
     "killed", "generic-killed"),
    ("ImportError: cannot import name 'fused_op' from 'mylib'\n", "import_error", "generic-import"),
    ("ModuleNotFoundError: No module named 'myext._C'\n", "missing_kernel", "generic-missing-kernel"),
    ("FATAL: undefined symbol: _ZN3c104cuda9SetDeviceEi in libmyext.so\n", "missing_kernel", "generic-missing-kernel"),
    ("[error] loss is nan at step 120, stopping\n", "nan", "generic-nan"),
    ("RuntimeError: an illegal memory access was encountered\n", "illegal_memory", "generic-illegal-memory"),
    ("error: command '/usr/bin/gcc' failed with exit code 1\n", "jit_error", "generic-jit"),
    ("ptxas /tmp/k.ptx, line 9; error   : Feature '.bf16' requires .target sm_80 or higher\n", "jit_error", "generic-jit"),
    ("Error: connection refused by the router at 10.0.0.1:9000\n", "other_crash", "generic-failure-line"),
    ("worker 0 finished with exit code 3\n", "other_crash", "generic-failure-line"),
    # more failure-line shapes: glog after a rank prefix, MPI's upper-case exit report, a GPU runtime's
    # error code, a JSON error object, onnxruntime's severity
    ("[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated.\n",
     "hang", "generic-hang"),
    ("=   EXIT CODE: 9\n", "killed", "generic-killed"),
    ("CUDA error 2 at /src/ggml/ggml-cuda.cu:7196: out of memory\n", "oom", "generic-oom"),
    ("[torch_memory_saver.cpp] CUresult error: 2 (out of memory) file=csrc/utils.h line=187\n", "oom", "generic-oom"),
    ('{"error":{"message":"CUDA out of memory. Tried to allocate 20.00 MiB.","code":500}}\n', "oom", "generic-oom"),
    ("2023-03-07 19:26:21.706 [E:onnxruntime:, sequential_executor.cc:494 ExecuteKernel] Failed to allocate memory "
     "for requested buffer of size 4096\n", "oom", "generic-oom"),
    # a family's own lines: evidence on any line, failure-shaped or not
    ("{'loss': 0.2096, 'grad_norm': nan, 'learning_rate': 0.00026, 'epoch': 5.38}\n", "nan", "generic-nan-line"),
    ("10/30 22:19:57 - mmengine - INFO - Epoch(train) [1][240/735]  lr: 1.98e-04  loss: 2.5128  grad_norm: nan\n",
     "nan", "generic-nan-line"),
    ("2020-10-01 10:25:50 | WARNING | root | NaN or Inf found in input tensor.\n", "nan", "generic-nan-line"),
    ("[2025-12-03 15:29:24 TP0] Detected errors during sampling! NaN in the logits.\n", "nan", "generic-nan-line"),
    ("tensor([nan, nan, nan, nan, nan, nan], device='cuda:0', dtype=torch.float16)\n", "nan", "generic-nan-line"),
    ("INFO 01-20 03:02:37 [shm_broadcast.py:501] No available shared memory broadcast block found in 60 seconds. "
     "This typically happens when some processes are hanging.\n", "hang", "generic-hang-line"),
    ("[2025-10-29 11:25:58 TP3] Watchdog timeout (self.watchdog_timeout=300)\n", "hang", "generic-hang-line"),
    ("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, Timeout(ms)=600000)\n",
     "hang", "generic-hang-line"),
    ("[Sun Mar 24 23:54:53 2024] Out of memory: Killed process 6154 (python) total-vm:18109076kB, anon-rss:14095848kB\n",
     "killed", "generic-killed-line"),
    ("[597411.196310] python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0\n",
     "killed", "generic-killed-line"),
    ("systemd[1]: user.slice: A process of this unit has been killed by the OOM killer.\n", "killed", "generic-killed-line"),
    ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n",
     "arch_mismatch", "generic-arch-line"),
    ("ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15',)\")\n",
     "arch_mismatch", "generic-arch-line"),
    ("usage: api_server.py [-h] [--host HOST] [--port PORT]\n", "arg_error", "generic-arg-error-line"),
    ("tritonserver: unrecognized option '--t_exit_on_error=True'\nUsage: tritonserver [options]\n", "arg_error",
     "generic-arg-error-line"),
    ("the option '--model_path' is required but missing\n", "arg_error", "generic-arg-error-line"),
    ("../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [5,0,0], thread: [107,0,0] "
     "Assertion `srcIndex < srcSelectDimSize` failed.\n", "illegal_memory", "generic-illegal-memory-line"),
    ("Capture cuda graph failed with CUDA_ERROR_ILLEGAL_ADDRESS at layer 3\n", "illegal_memory", "generic-illegal-memory-line"),
    ("mpirun noticed that process rank 1 with PID 42 on node n1 exited on signal 9 (Killed).\n", "killed",
     "generic-killed-line"),
    ("Exception: Server process exited with code -9. Check server logs for errors.\n", "killed", "generic-killed"),
    ("tensorflow.python.framework.errors_impl.UnknownError:  ncclCommInitRank failed: unhandled system error\n",
     "nccl", "generic-nccl"),
    ("DeepEP dispatch NVL receiver timeout, channel: 0, RDMA: 0, nvl: 7\n", "hang", "generic-hang-line"),
    ("[11:41:59.064379] Loss is nan, stopping training\n", "nan", "generic-nan-line"),
    ("WARNING 06-13 11:42:20 _custom_ops.py:11] Failed to import from vllm._C with ImportError('/x/vllm/_C.abi3.so: "
     "undefined symbol: _ZN5torch7LibraryC1E')\n", "missing_kernel", "generic-missing-kernel-line"),
    ("`trtllm-serve` with max_batch_size=2: an illegal memory access was encountered [in moe router]\n",
     "illegal_memory", "generic-illegal-memory-line"),
    ("E0305 20:23:38.890000 755 site-packages/torch/_inductor/runtime/triton_heuristics.py:533] Triton compilation "
     "failed: triton_poi_fused_0\n", "jit_error", "generic-jit"),
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: 65536\n",
     "jit_error", "generic-jit"),
    ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=508648, ip=10.1.200.6)\n", "oom", "generic-oom"),
    # dev21: gloo's transport timeout, CANN's HCCL task timeout, a report of NaN values, Triton's backend
    # loader refusing an extension, the linker refusing a build's object or library
    ("[rank3]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
     "1800000ms for recv operation to complete\n", "hang", "generic-hang"),
    ("(RayWorkerWrapper pid=7) still waiting: Timed out waiting 600000ms\n", "hang", "generic-hang-line"),
    ("EI9999: 2024-10-21-10:42:00.204.495  The error from device(chipId:2, dieId:0), serial number is 9, hccl fftsplus "
     "task timeout occurred during task execution, stream_id:5, sq_id:5, task_id:38827, stuck notify num:1\n",
     "hang", "generic-hang-line"),
    ("the logprob of most prompts is nan after step 40\n", "nan", "generic-nan-line"),
    ("output_fp16.json are all nan values, output_fp32.json is fine\n", "nan", "generic-nan-line"),
    ("the rollout's log_prob turned out to be NaN for some samples\n", "nan", "generic-nan-line"),
    ("训练到第3000步时loss为nan\n", "nan", "generic-nan-line"),
    ("When I fine-tune it as a video generator there is always NaN loss, and training stops\n", "nan", "generic-nan-line"),
    ("[OGA 0.11.2] NaN logits at the 3rd decode step with the NPU provider\n", "nan", "generic-nan-line"),
    ("E1115 13:49:37 model_lifecycle.cc:620] failed to load 'tensorrt_llm': unable to load shared library: "
     "/opt/tritonserver/backends/tensorrtllm/libtriton_tensorrtllm.so: undefined symbol: _ZNK12tensorrt_llm7runtime\n",
     "missing_kernel", "generic-missing-kernel-line"),
    ("`I1115 model loading: version 2 is at UNAVAILABLE state: Not found: unable to load shared library: "
     "/x/libtriton_python.so: undefined symbol: _ZN3c10\n", "missing_kernel", "generic-missing-kernel-line"),
    ("  /usr/bin/ld: cannot find build/temp.linux-x86_64-3.10/csrc/adam/fused_adam_frontend.o: No such file or directory\n",
     "jit_error", "generic-jit-line"),
    ("/usr/bin/ld: cannot find -lcuda\n", "jit_error", "generic-jit-line"),
    ("when i run python train.py there is a problem:ninja：build stopped：subcommand failed.\n", "jit_error", "generic-jit-line"),
    ("On a standalone install `import sgl_kernel` fails with `undefined symbol: _ZN3c1013MessageLoggerC1E`.\n",
     "missing_kernel", "generic-missing-kernel-line"),
    # a stall as a user or a wrapper reports it, and a watchdog's timeout named as an error
    ("After about two million requests the server hangs and never answers again.\n", "hang", "generic-hang-report-line"),
    ("When I import tensorrt_llm it got stuck at MpiComm.local_init()\n", "hang", "generic-hang-report-line"),
    ("Both TP ranks are stuck inside cuGraphLaunch\n", "hang", "generic-hang-report-line"),
    ("I deploy the model with TP=4 and encounter a Watchdog timeout error\n", "hang", "generic-hang-line"),
    # dev22: a stall reported with how long it lasts; an ImportError quoted without its symbol
    ("the decode worker seems to hang indefinitely on all requests.\n", "hang", "generic-hang-report-line"),
    ("# LLAMA checkpoint ImportError: undefined symbol\n", "missing_kernel", "generic-missing-kernel"),
    # dev22 batch 4: a kernel's unlabelled architecture check (vLLM's statistics with requests running and nothing
    # done are a row of their own: test_vllm_stalled_statistics)
    ("Request failed during generation: Server error: Expected is_sm90 || is_sm8x || is_sm75 to be true, but got "
     "false.\n", "arch_mismatch", "generic-arch-line"),
    # dev23: a stall reported with where or how long it lasts, or how it looks from outside; a kill and a crash
    # reported in prose; ROCm's libraries' error lines are failure lines
    ("Here is the log, it seems that `vllm serve` stuck without raising any error information\n", "hang",
     "generic-hang-report-line"),
    ("Waiting forever to load a 0.6B model in Ollama 0.12.7 on a Win11Pro laptop\n", "hang", "generic-hang-report-line"),
    ("But then, randomly, llama.cpp stops generating. The model is still loaded in the ram and vram\n", "hang",
     "generic-hang-report-line"),
    # the bare verb too ("stop(?:s|ped)?"): every form the row matches holds one of its needles
    ("After an hour the server will stop responding.\n", "hang", "generic-hang-report-line"),
    ("Then the workers stop generating tokens.\n", "hang", "generic-hang-report-line"),
    ("Generate.py fails on `Loading checkpoint shards: 52%` with message `killed`.\n", "killed", "generic-killed-line"),
    ("After a few minutes the process gets killed without any message\n", "killed", "generic-killed-line"),
    ("the server then aborts with an internal assertion failure before becoming healthy.\n", "other_crash",
     "generic-crash-report-line"),
    ("Works but randomly crashes during inference with error\n", "other_crash", "generic-crash-report-line"),
    ("rocBLAS error: Could not initialize Tensile host: No devices found\n", "other_crash", "generic-failure-line"),
    # dev23 batch 2: the shell's report of a fatal signal; degenerate replies and a stall as a report says them;
    # Ollama's scheduler refusing a model for memory
    ("./serve.sh: line 3: 12345 Segmentation fault      python -m vllm.entrypoints.openai.api_server\n",
     "other_crash", "shell-fatal-signal"),
    ("Bus error (core dumped)\n", "other_crash", "shell-fatal-signal"),
    ("Illegal instruction (core dumped)\n", "other_crash", "shell-sigill"),
    ("The service runs normally at first, but after a while the model starts returning garbled / nonsensical text\n",
     "garbage", "generic-garbage-report-line"),
    ("vllm producing gibberish with stabilityai/StableBeluga-7B\n", "garbage", "generic-garbage-report-line"),
    ("the replies are all exclamation marks after the upgrade\n", "garbage", "generic-garbage-report-line"),
    ("seems to load fine but I get no response from ollama. GPU is at 100% usage\n", "hang", "generic-hang-report-line"),
    ("Error: model requires more system memory (5.5 GiB) than is available (3.2 GiB)\n", "oom", "generic-oom"),
    # dev23 batch 3: a container OOM-killed, systemd's and Ray's kill reports; a missing header, a compiler's diagnostic
    ("vllm-0   0/1   OOMKilled   3 (2m ago)   15m\n", "killed", "generic-killed-line"),
    ("Dec 21 11:09:13 host systemd[1]: ollama.service: Main process exited, code=killed, status=9/KILL\n", "killed",
     "generic-killed-line"),
    ("Task was killed due to the node running low on memory.\n", "killed", "generic-killed-line"),
    ("[  123.456789] Out of memory: Kill process 1234 (python) score 900 or sacrifice child\n", "killed",
     "generic-killed-line"),
    ("Your session crashed after using all available RAM.\n", "killed", "generic-killed-line"),
    ("csrc/ops.cu:3:10: fatal error: cuda_runtime.h: No such file or directory\n", "jit_error", "generic-jit"),
    ("/tmp/x/kernel.cu(42): error: identifier \"__hmul2\" is undefined\n", "jit_error", "generic-jit"),
    # dev24: TensorFlow's/XLA's FATAL line and TF_CHECK_OK's message, AITER's HIP_CALL (a HIP error names its class)
    ("2023-04-17 19:35:38.550666: F    5184 tensorflow/compiler/xla/xla_client/xrt_computation_client.cc:1362] "
     "Non-OK-status: session.Run() status: UNIMPLEMENTED: method \"RunStep\" not implemented\n", "other_crash",
     "generic-failure-line"),
    ("[AITER] /tmp/aiter/jit/build/blob/kernel.cpp:141 fail to call hipModuleLaunchKernel(kernel_func, 1, 1) ---> "
     "[HIP error](invalid resource handle)\n", "other_crash", "generic-failure-line"),
    ("[AITER] kernel.cpp:88 fail to call hipMalloc(&ptr, n) ---> [HIP error](out of memory)\n", "oom", "generic-oom"),
    # glog's CHECK failure without its prefix (its message read by the families), absl's failure signal handler
    ("Check failed: error == cudaSuccess (2 vs. 0)  out of memory\n", "oom", "generic-oom"),
    ("Check failed: status.ok() Failed to load the plugin\n", "other_crash", "generic-failure-line"),
    ("*** SIGSEGV received at time=1700000000 on cpu 3 ***\n", "other_crash", "generic-failure-line"),
    ("*** SIGABRT (@0x2b) received by PID 11743 (TID 12350) on cpu 17; stack trace: ***\n", "other_crash",
     "generic-failure-line"),
    # dev24: Ray's memory monitor's kills, Ray's get() timing out, a stall and memory running out as reports say them,
    # a segmentation fault in a title, Triton without a backend's library
    ("(raylet) [2024-08-25 19:21:02,241 E 1 1] (raylet) node_manager.cc:3064: 3 Workers (tasks / actors) killed due "
     "to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: ab, IP: 10.0.0.1)\n", "killed",
     "generic-killed-line"),
    ("# GetTimeoutError when calling ray.get on the rollout workers\n", "hang", "generic-hang-line"),
    ("The job always hang before the first step\n", "hang", "generic-hang-report-line"),
    # a hedge tempers its own sentence only
    ("If I request JSON, only a few tokens come before the request hangs. Subsequent requests then all hang too\n",
     "hang", "generic-hang-report-line"),
    ("I see a hang during NCCL initialization on 16 nodes\n", "hang", "generic-hang-report-line"),
    ("Encountered a deadlock while running the training script on one host\n", "hang", "generic-hang-report-line"),
    ("then throws a torch.cuda.OutOfMemoryError after loading the weights\n", "oom", "generic-oom-line"),
    ("# vLLM freezes on OOM\nWhen the model crashes due to OOM, it no longer accepts new requests\n", "oom",
     "generic-oom-line"),
    ("# Segmentation fault when using the dev container\n", "other_crash", "generic-crash-report-line"),
    ("Child process was terminated by signal 11 (Segmentation fault)\n", "other_crash", "generic-crash-report-line"),
    ("vllm-0   0/1   CrashLoopBackOff   6 (2m ago)   15m\n", "other_crash", "generic-crash-report-line"),
    ("the container exits with code 1 right after loading the weights\n", "other_crash", "generic-failure-line"),
    ("  Warning  BackOff  2m (x50 over 12m)  kubelet  Back-off restarting failed container vllm in pod vllm-0_default\n",
     "other_crash", "generic-crash-report-line"),
    ("E0120 08:28:09.425599 2049 model_lifecycle.cc:654] \"failed to load 'tensorrt_llm' version 1: Invalid argument: "
     "unable to find backend library for backend 'tensorrtllm', try specifying runtime on the model configuration.\"\n",
     "missing_kernel", "generic-missing-kernel"),
]


@pytest.mark.parametrize(("text", "status", "signature"), GENERIC_TEXTS)
def test_generic_layer_classes_failure_lines_no_row_names(generic_only: None, text: str, status: str,
                                                          signature: str) -> None:
    d = classify_text(text)
    if signature == "generic-failure-line":  # the bare failure line ties with the exception row: it labels
        assert (d.status, d.label) == (status, text.splitlines()[0]), d.label
    else:
        assert (d.status, d.signature) == (status, signature), d.label
    assert d.evidence and d.evidence[0].text.strip()


@pytest.mark.parametrize(("text", "status"), [
    # prose is not a failure line: a word inside a sentence is none of the shapes
    ("I get an error when I start the server with --timeout 30 and it runs out of memory\n", "incomplete"),
    ("When I run the command I get a vLLM Import Error\n", "incomplete"),
    ("INFO 12-07 10:00:00 [engine.py:10] Set timeout to 300 s; memory pool 12 GiB\n", "incomplete"),
    ("WARNING 12-07 10:00:00 [sampler.py:69] For the best performance, please install FlashInfer.\n", "incomplete"),
    ("  --log-level {debug,info,warning,error,critical}\n", "incomplete"),
    ("worker 0 finished with exit code 0\nProcess exited with status 0\n", "incomplete"),
    ("[2026-12-07 10:00:00 TP0] Load weight end. mem usage=15.0 GB, error_rate=0\n", "incomplete"),
    # a hint is not the failure: the failure line stays other_crash
    ("RuntimeError: Rank 0 scheduler died during start (exit code: -3). If exit code is -9 (SIGKILL), a common "
     "cause is the OS OOM killer.\n", "other_crash"),
    # a logger's file name is not a family word; CUDA's "invalid argument" is no command-line argument
    ("ERROR 12-07 10:00:00 [memory_pool.py:10] request 7 failed\n", "other_crash"),
    ("RuntimeError: CUDA error: invalid argument\n", "other_crash"),
    # the own lines' near texts: a finite metric, a NaN counter, a setting, a config print, a fallback,
    # a help line, a warning calling itself one
    ("{'loss': 0.2096, 'grad_norm': 1.25, 'learning_rate': 0.00026, 'epoch': 5.38}\n", "incomplete"),
    ("iteration 5426 | grad norm: 0.93 | number of nan iterations:   0 | loss: 2.31\n", "incomplete"),
    ("INFO 12-07 10:00:00 [sampler.py:1] NaN checks enabled for the logits\n", "incomplete"),
    ("INFO 12-07 10:00:00 [engine.py:1] watchdog timeout set to 300 s\n", "incomplete"),
    ("server_args=ServerArgs(watchdog_timeout=300, dist_timeout=None)\n", "incomplete"),
    ("INFO: no progress bar (stdout is not a tty)\n", "incomplete"),
    ("[597411.196429] oom_score_adj=0 for pid 42\n", "incomplete"),
    ("The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n", "incomplete"),
    ("Run with --help for usage: server.py --model-path PATH\n", "incomplete"),
    ("[TP1] Setup Custom allreduce failed with CUDART error: peer access is not supported between these two devices. "
     "To silence this warning, specify --disable-custom-all-reduce explicitly.\n", "incomplete"),
    ("HTTP 200 {\"error\": null, \"result\": \"ok\"}\n", "incomplete"),
    ("INFO 12-07 10:00:00 [comm.py:1] receiver timeout set to 30 s; collective timeout: 600\n", "incomplete"),
    ("INFO 12-07 10:00:00 [proc.py:1] worker exited on signal 15 (SIGTERM) as asked\n", "incomplete"),
    ("INFO 12-07 10:00:00 [train.py:1] loss is 2.31, grad norm is 0.9\n", "incomplete"),
    # bitsandbytes prints a bare "lib.so: undefined symbol" and runs on; glog's I/W levels; a module path
    ("/env/bitsandbytes/libbitsandbytes_cpu.so: undefined symbol: cadam32bit_grad_fp32\n", "incomplete"),
    ("W0305 20:23:38.890000 755 site-packages/torch/_inductor/utils.py:533] Triton compilation is slow\n", "incomplete"),
    ("INFO loading plugin my_pkg.errors.Handler: registered\n", "incomplete"),
    # dev21's lines' near texts: a timeout setting, a CANN setting, a NaN check or guard, a lookup of a
    # shared library that succeeded, a linker searching its paths
    ("INFO 12-07 10:00:00 [gloo.py:1] gloo: timed out waiting is disabled; timeout 1800000 ms\n", "incomplete"),
    ("INFO 12-07 10:00:00 [env.py:1] HCCL_EXEC_TIMEOUT=1836, task timeout 30min\n", "incomplete"),
    ("INFO 12-07 10:00:00 [sampler.py:1] checking whether the logits are nan-free: they are finite\n", "incomplete"),
    ("INFO 12-07 10:00:00 [sampler.py:1] the output is not nan; returns nan=False\n", "incomplete"),
    ("INFO 12-07 10:00:00 [check.py:1] if the loss is nan, the step is skipped\n", "incomplete"),
    ("INFO 12-07 10:00:00 [stats.py:1] nan loss: 0, nan logits: 0 in the last 100 steps\n", "incomplete"),
    ("INFO 12-07 10:00:00 [sampler.py:1] nan_logits=skip (NaN logits checks on)\n", "incomplete"),
    ("I1115 13:49:37 shared_library.cc:112] OpenLibraryHandle: /opt/tritonserver/backends/python/libtriton_python.so\n",
     "incomplete"),
    ("attempt to open /usr/lib/libcuda.so succeeded; ld: searching for -lcuda in /usr/lib\n", "incomplete"),
    # a loader's text in a hint, or without the symbol it misses
    ("If the import fails with undefined symbol: _ZN3c10, reinstall torch first.\n", "incomplete"),
    ("import sgl_kernel fails with a timeout; the undefined symbol list is empty\n", "incomplete"),
    ("ninja: no work to do.\nbuild stopped by the user: interrupted\n", "incomplete"),
    # a stall denied, hedged or only feared; a word holding the letters
    ("With the fix the server no longer hangs after two million requests.\n", "incomplete"),
    ("The launch does not get stuck at prefill any more; it never hangs.\n", "incomplete"),
    ("If the process hangs, set --watchdog-timeout to a larger value.\n", "incomplete"),
    ("INFO 12-07 10:00:00 [i18n.py:1] loaded locales: Hungarian, Swedish\n", "incomplete"),
    ("INFO 12-07 10:00:00 [engine.py:1] watchdog timeout errors are counted per rank\n", "incomplete"),
    # dev22's lines' near texts: a stall denied or hedged, a loader's text that names no missing symbol
    ("With the fix the client does not hang indefinitely any more.\n", "incomplete"),
    ("If a rank could hang forever, set --dist-timeout.\n", "incomplete"),
    # an architecture check that passed; an idle engine's statistics (served, ready: the serving pattern)
    ("DEBUG check: expected is_sm90 to be true, and it is\n", "incomplete"),
    ("INFO 05-11 18:07:24 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
     "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%\n", "ready"),
    ("INFO 12-07 10:00:00 [loader.py:1] undefined symbol check passed for 12 libraries\n", "incomplete"),
    # torch's hint after every CUDA error names no assertion: the failure line stays other_crash
    ("(Worker_TP1 pid=7) ERROR 05-08 19:06:38 [multiproc_executor.py:962] Compile with `TORCH_USE_CUDA_DSA` to "
     "enable device-side assertions.\n", "other_crash"),
    # dev23's lines' near texts: a stall, a kill and a crash denied, hedged or past; where a stopped process was;
    # a rocBLAS line that is no error
    ("After stopping the process it seems that it stuck on a subprocess in process-2\n", "incomplete"),
    ("With 0.5.1 the server no longer gets stuck at prefill, and it is not stuck in a loop.\n", "incomplete"),
    ("If the model is waiting forever, check OLLAMA_DEBUG=1.\n", "incomplete"),
    ("The server never stops responding now; it did not stop generating either.\n", "incomplete"),
    ("the worker was not killed; if it gets killed, raise the memory limit\n", "incomplete"),
    ("INFO 12-07 10:00:00 [proc.py:1] killed: 0 workers, kill_timeout=30\n", "incomplete"),
    ("It no longer crashes with 0.6.2, and it never segfaulted before either.\n", "incomplete"),
    ("If llama-server crashes during warmup, lower --ctx-size.\n", "incomplete"),
    ("INFO 12-07 10:00:00 [crash_handler.py:1] crash reports go to /var/crash\n", "incomplete"),
    ("rocBLAS warning: no tuned kernel for this size; using a generic one\n", "incomplete"),
    # dev23 batch 2's near texts: a signal named in prose or a handler, CUDA's illegal instruction (a kernel fault),
    # degenerate output denied, hedged or only a setting, a reply that came, a memory requirement met
    ("INFO 12-07 10:00:00 [faulthandler.py:1] a Segmentation fault handler is installed\n", "incomplete"),
    ("RuntimeError: CUDA error: an illegal instruction was encountered\n", "illegal_memory"),
    ("With the fix the model no longer produces gibberish.\n", "incomplete"),
    ("If the output is garbled, check the chat template.\n", "incomplete"),
    ("INFO 12-07 10:00:00 [sampler.py:1] garbage collection freed 12 MiB\n", "incomplete"),
    ("I got no response time figures from the benchmark, only throughput\n", "incomplete"),
    ("INFO 12-07 10:00:00 [sched.go:1] model requires 5.5 GiB; 20.0 GiB available\n", "incomplete"),
    # dev23 batch 3's near texts: a pod's healthy status, a service stopped on purpose, a header found, a warning
    ("vllm-0   1/1   Running   0   15m   (last restart reason: Completed)\n", "incomplete"),
    ("The session did not crash; 40% of the available RAM is used\n", "incomplete"),
    ("Dec 21 11:09:13 host systemd[1]: ollama.service: Main process exited, code=exited, status=0/SUCCESS\n", "incomplete"),
    ("-- Found CUDA: /usr/local/cuda (found version 12.4); cuda_runtime.h found\n", "incomplete"),
    ("/tmp/x/kernel.cu(42): warning #177-D: variable \"x\" was declared but never referenced\n", "incomplete"),
    # an SM number in parentheses after a GPU's name describes the hardware: the crash stays a crash
    ("Two Tesla T4 (SM75) with TurboMind: it hits Segmentation fault(core dumped) after a few seconds\n", "other_crash"),
    ("RuntimeError: FlashMLA requires SM90 (Hopper); this GPU is sm_80\n", "arch_mismatch"),
    # dev24's near texts: TensorFlow's lines below FATAL, AITER loading a module, Ray's memory monitor described,
    # GetTimeoutError caught or imported, a stall or a deadlock denied, hedged or fixed, an OOM exception caught,
    # one not raised any more, a segmentation fault no longer hit, Triton loading a backend library
    ("2023-04-17 19:35:38.550666: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is "
     "optimized to use available CPU instructions\n", "incomplete"),
    ("2023-04-17 19:35:38.550666: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not "
     "find TensorRT\n", "incomplete"),
    ("[aiter] import [module_fmha_v3_fwd] under /home/aiter/aiter/jit/module_fmha_v3_fwd.so\n", "incomplete"),
    ("*** SIGTERM received at time=1700000000 on cpu 3 ***\n", "incomplete"),
    ("The worker was not terminated by signal 11; it exited with code 0\n", "incomplete"),
    ("zsh: abort-on-error is set in .zshrc\n", "incomplete"),
    ("vllm-0   1/1   Running   0   15m   (no CrashLoopBackOff since the fix)\n", "incomplete"),
    ("the benchmark exits with code 0 after 1000 requests\n", "incomplete"),
    ("INFO 12-07 10:00:00 [check.py:1] health check failed: 0 of 12; all checks passed\n", "incomplete"),
    ("Ray kills workers due to memory pressure when usage exceeds the threshold\n", "incomplete"),
    ("except ray.exceptions.GetTimeoutError:\n", "incomplete"),
    ("we import GetTimeoutError to retry the ray.get calls\n", "incomplete"),
    ("With NCCL_P2P_DISABLE=1 it does not hang anymore and all ranks finish\n", "incomplete"),
    ("We no longer see a hang after the upgrade\n", "incomplete"),
    ("If you hit a deadlock, set NCCL_DEBUG=INFO\n", "incomplete"),
    ("The hang is fixed in 0.8.1\n", "incomplete"),
    ("If it is stuck at prefill, lower --chunked-prefill-size. It is not stuck otherwise.\n", "incomplete"),
    ("If the server hangs, e.g. under load. See the FAQ.\n", "incomplete"),
    ("The trainer catches torch.cuda.OutOfMemoryError and retries with a smaller batch\n", "incomplete"),
    ("With the fix it no longer throws a torch.cuda.OutOfMemoryError on load\n", "incomplete"),
    ("The server no longer crashes due to OOM since 0.6\n", "incomplete"),
    ("The worker was killed due to OOM by the kernel, not by Ray\n", "killed"),
    ("It no longer hits a segmentation fault with 0.6\n", "incomplete"),
    ("I0120 08:28:09.425338 2049 backend_model.cc:303] \"loading backend library for backend 'python' from "
     "/opt/tritonserver/backends/python/libtriton_python.so\"\n", "incomplete"),
])
def test_texts_near_the_generic_layer_are_not_its_classes(generic_only: None, text: str, status: str) -> None:
    assert classify_text(text).status == status


def test_a_failure_line_after_the_server_served_keeps_it_ready() -> None:
    """The generic rows are weak: one request's error after the server served is no failed launch."""
    serving = ('[2026-01-01 00:00:02 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, '
               'cuda graph: True, gen throughput (token/s): 99.0, #queue-req: 0\n')
    d = classify_text(serving + "ERROR 12-07 10:00:00 [serving.py:1] request 7: timed out after 30 s\n")
    assert (d.status, d.ready) == ("ready", True)


def test_a_specific_row_outranks_the_generic_layer_and_the_bare_failure_line_is_the_label() -> None:
    d = classify_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
                      "capacity of 79.19 GiB of which 2.00 MiB is free.\n")
    assert (d.status, d.signature) == ("oom", "torch-cuda-oom")
    d = classify_text("2026-12-07 10:00:00 | ERROR | router | connection refused by 10.0.0.1:9000\n")
    assert (d.status, d.signature) == ("other_crash", "generic-failure-line")
    assert d.label == "2026-12-07 10:00:00 | ERROR | router | connection refused by 10.0.0.1:9000"


@pytest.mark.parametrize(("text", "status"), [
    # dev22: Ctrl-C ends a run as interrupted, not crashed; a stall before it still explains the run
    ("[rank0]: KeyboardInterrupt\nERROR 08-17 23:28:45 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 12 "
     "died, exit code: -15\n", "interrupted"),
    ("INFO 12-09 11:25:53 [shm_broadcast.py:466] No available shared memory broadcast block found in 60 seconds. "
     "This typically happens when some processes are hanging or doing some time-consuming work.\n"
     "^CTraceback (most recent call last):\nKeyboardInterrupt\n", "hang"),
    # NCCL's error as CJK-locale reports quote it, with the full-width colon
    ("# [Bug]: about NCCL error：unhandled system error\n", "nccl"),
    # one of torch's own symbols missing, quoted without its library: an extension built against another torch
    ("# undefined symbol: _ZN3c1021throwNullDataPtrErrorEv\n", "missing_kernel"),
    # an ImportError naming an undefined symbol is the loader's, not a dependency check; a dependency check stays
    ("Traceback (most recent call last):\nImportError: undefined symbol\n", "missing_kernel"),
    ("Traceback (most recent call last):\nImportError: Please install bitsandbytes>=0.42.0\n", "import_error"),
    # a notebook's traceback whose header was folded away ('8 frames'): IPython's arrow on a frame's line
    ("8 frames\n   1160 \n-> 1161             return fn(*args, **kwargs)\n   1162 \n", "other_crash"),
])
def test_dev22_rows(text: str, status: str) -> None:
    assert classify_text(text).status == status, classify_text(text).label


@pytest.mark.parametrize("text", [
    # near texts of dev22's rows: Ctrl-C named in a hint or a handler, an NCCL setting with a full-width colon,
    # a bare undefined symbol that is not one of torch's (bitsandbytes prints it and runs on)
    "INFO 12-07 10:00:00 [server.py:1] press Ctrl-C to stop (KeyboardInterrupt is handled)\n",
    "    except KeyboardInterrupt:\n        pass\n",
    "INFO NCCL error checks：enabled\n",
    "/env/bitsandbytes/libbitsandbytes_cpu.so: undefined symbol: cadam32bit_grad_fp32\n",
    "INFO 12-07 10:00:00 [loader.py:1] resolved symbol _ZN3c1021throwNullDataPtrErrorEv, no undefined symbol: ok\n",
    # an arrow that is no IPython frame: an HTML comment's end, an arrow before a word
    "<!-- Describe the bug -->\n--> see the logs below\n",
])
def test_texts_near_dev22_rows_are_not_their_classes(text: str) -> None:
    assert classify_text(text).status not in ("interrupted", "nccl", "missing_kernel", "other_crash"), \
        classify_text(text).label


@pytest.mark.parametrize(("text", "status", "signature"), [
    # dev23: ggml's allocator and llama.cpp's loader out of device memory (llama.cpp, Ollama's runner)
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 3257.82 MiB on device 0: cudaMalloc failed: out of memory\n"
     "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n", "oom", "ggml-alloc-oom"),
    ("# llama_model_load: error loading model: unable to allocate backend buffer\n", "oom", "ggml-alloc-oom"),
    ("ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 292926534144\n", "oom", "ggml-alloc-oom"),
    # ggml's assertion, both spellings
    ("D:\\a\\llama-cpp-python\\vendor\\llama.cpp\\ggml\\src\\ggml.c:6399: GGML_ASSERT(c->ne[0] >= n_dims / 2) failed\n",
     "other_crash", "ggml-assert"),
    ("GGML_ASSERT: /__w/WasmEdge/plugins/wasi_nn/thirdparty/ggml/llama.cpp:621: data\nAborted (core dumped)\n",
     "other_crash", "ggml-assert"),
    # rocBLAS without kernels for the GPU's gfx target
    ("rocBLAS error: Cannot read /usr/local/lib/ollama/rocm/rocblas/library/TensileLibrary.dat: Illegal seek for GPU "
     "arch : gfx1103\n List of available TensileLibrary Files : \n", "arch_mismatch", "rocblas-no-kernels-for-arch"),
    # a Go program's crash report (Ollama's runner)
    ("Feb 26 10:05:54 host ollama[1499630]: created by runtime.gcBgMarkStartWorkers in goroutine 1\n", "other_crash",
     "go-runtime-crash"),
    ("panic: unable to load model: /root/.ollama/models/blobs/sha256-89\n\ngoroutine 24 [running]:\n", "other_crash",
     "go-runtime-crash"),
    # LMDeploy's compiled TurboMind extension missing
    ("ModuleNotFoundError: No module named '_turbomind'\n", "missing_kernel", "kernel-extension-missing"),
    # any compiled CUDA extension by its module's name; HIP's invalid device function (a kernel not built for the gfx)
    ("ModuleNotFoundError: No module named 'flash_attn_2_cuda'\n", "missing_kernel", "kernel-extension-missing"),
    ("ImportError: No module named 'selective_scan_cuda'\n", "missing_kernel", "kernel-extension-missing"),
    ("RuntimeError: HIP error: invalid device function\n", "arch_mismatch", "cuda-invalid-kernel-image"),
    # llama.cpp's loader giving up, with no reason a row or family reads
    ("llama_model_load: error loading model: tensor 'blk.0.attn_q.weight' has wrong shape\n"
     "llama_model_load_from_file_impl: failed to load model\nmain: exiting due to model loading error\n",
     "other_crash", "llama-model-load-failed"),
    # ... and with one: the reason wins
    ("llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'qwen35'\n"
     "llama_model_load_from_file_impl: failed to load model\nggml_cuda_init: CUDA error: no kernel image is available "
     "for execution on the device\n", "arch_mismatch", "cuda-no-kernel-image"),
    # TGI's router losing its shard is the consequence: the shard's allocator failure before it is the cause
    ("RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::1073741824 (1024)MB\n"
     "2024-08-30T02:09:47.968553Z ERROR batch{batch_size=16}:decode:clear_cache{batch_id=Some(72)}: text_generation_"
     "client: router/client/src/lib.rs:33: Server error: error trying to connect: Connection refused (os error 111)\n",
     "oom", "generic-oom"),
    ("2024-08-30T02:09:47.968553Z ERROR batch{batch_size=16}:decode: text_generation_client: router/client/src/lib.rs:33:"
     " Server error: error trying to connect: Connection refused (os error 111)\n", "other_crash", "tgi-shard-unreachable"),
])
def test_dev23_rows(text: str, status: str, signature: str) -> None:
    d = classify_text(text)
    assert (d.status, d.signature) == (status, signature), d.label


@pytest.mark.parametrize("text", [
    # near texts of dev23's rows: ggml allocating fine, pinned memory it falls back from, a GGML_ASSERT in source or
    # prose, rocBLAS reading its library, a Go function named panic, NCCL's INFO line for its optional net plugin
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 3257.82 MiB on device 0: ok\n",
    "ggml_cuda_host_malloc: failed to allocate 512.00 MiB of pinned memory: out of memory\n",
    "#define GGML_ASSERT(x) if (!(x)) GGML_ABORT(\"GGML_ASSERT(%s) failed\", #x)\n",
    "rocBLAS info: reading /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat for GPU arch : gfx1100\n",
    "INFO 12-07 10:00:00 [safety.py:1] no panic: everything is fine\n",
    "omega:53277:53277 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such "
    "file or directory No plugin found (libnccl-net.so), using internal implementation\n",
    "INFO lmdeploy: _turbomind loaded from /opt/lmdeploy/lib/_turbomind.so\n",
    "llama_model_load: loaded meta data; no error loading model\n",
])
def test_texts_near_dev23_rows_are_not_their_classes(text: str) -> None:
    d = classify_text(text)
    assert d.status == "incomplete", d.label


def test_another_hip_error_is_no_architecture_refusal() -> None:
    assert classify_text("RuntimeError: HIP error: invalid device ordinal\n").status == "other_crash"


@pytest.mark.parametrize("text", [
    "ModuleNotFoundError: No module named 'slora._kernels'\n",
    "ModuleNotFoundError: No module named 'transformers'\n",
    "ModuleNotFoundError: No module named 'cuda_python_helpers'\n",
])
def test_a_module_that_is_no_compiled_kernel_stays_import_error(text: str) -> None:
    assert classify_text(text).status == "import_error"


def test_dev23_serving_lines_and_a_stall_after_them() -> None:
    """dev23: vLLM's request logger and Gin's 200 for a generation route (Ollama) show a serving server; a report
    that the run stalled outlasts them (fatal), a failure line after them does not."""
    vllm = ("INFO 12-01 16:04:14 logger.py:37] Received request chatcmpl-64bca667923f4: prompt: '<|im_start|>system', "
            "params: SamplingParams(n=1)\n")
    gin = '[GIN] 2024/10/08 - 20:16:00 | 200 |  704.668383ms |      172.21.0.1 | POST     "/api/embed"\n'
    for line in (vllm, gin):
        assert classify_text(line).status == "ready"
        assert classify_text(line + "ERROR 12-07 10:00:00 [serving.py:1] request 7 failed\n").status == "ready"
        assert classify_text("# the server hangs after 10 minutes\n" + line).status == "hang"
    # Gin's 200 for a route that is no generation, a 500 for one, a request logger's line with no request
    assert classify_text('[GIN] 2025/04/01 - 08:18:11 | 200 |     296.336µs |       127.0.0.1 | GET      "/api/tags"\n'
                         ).status == "incomplete"
    assert classify_text('[GIN] 2025/01/19 - 17:47:08 | 500 |  5.257673085s |      172.22.0.3 | POST     "/api/chat"\n'
                         ).status == "incomplete"
    assert classify_text("INFO 12-01 16:04:14 logger.py:37] Received request logging is disabled\n").status == "incomplete"
    # LMDeploy's api_server hint and llama.cpp's request log (today's and 2024's JSON) are serving; a 404 is not
    for line in ("HINT:    Please open http://0.0.0.0:23333 in a browser for detailed api usage!!!\n",
                 "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200\n",
                 'INFO generate{parameters=GenerateParameters { best_of: None } total_time="357ms"}: '
                 "text_generation_router::server: router/src/server.rs:309: Success\n",
                 '{"level":"INFO","function":"log_server_request","remote_port":58738,"status":200,"method":"POST",'
                 '"path":"/completion","params":{}}\n'):
        assert classify_text(line).status == "ready", line
    assert classify_text("srv  log_server_r: request: GET /favicon.ico 127.0.0.1 404\n").status == "incomplete"


def test_vllm_spec_decoding_metrics_with_accepted_tokens_are_serving() -> None:
    """dev22: vLLM's SpecDecoding metrics line (vllm/v1/spec_decode/metrics.py) with tokens accepted is a busy,
    serving engine; an interval with none accepted is not evidence of serving."""
    line = ("(APIServer pid=4) INFO 07-15 10:56:39 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
            "3.33, Accepted throughput: 7.70 tokens/s, Drafted throughput: 9.90 tokens/s, Accepted: {n} tokens, "
            "Drafted: 99 tokens, Per-position acceptance rate: 0.9, 0.8\n")
    assert classify_text(line.format(n=77)).status == "ready"
    assert classify_text(line.format(n=0)).status == "incomplete"
    assert classify_text("# SpecDecoding metrics: Mean acceptance length is not logged, Accepted: tokens\n").status \
        == "incomplete"


@pytest.mark.parametrize(("text", "status", "signature"), [
    # dev24: PyTorch's DataLoader worker dead of a fatal signal is a crash; of SIGKILL, a kill
    ("RuntimeError: DataLoader worker (pid 25902) is killed by signal: Segmentation fault\n", "other_crash",
     "torch-dataloader-worker-fatal-signal"),
    ("RuntimeError: DataLoader worker (pid(s) 6303) is killed by signal: Aborted. \n", "other_crash",
     "torch-dataloader-worker-fatal-signal"),
    # UCX's error handler reporting a fatal signal
    ("[c608-061:2760180:0:2760180] Caught signal 11 (Segmentation fault: address not mapped to object at address "
     "0x400581d86000)\n==== backtrace (tid:2760180) ====\n", "other_crash", "ucx-caught-fatal-signal"),
    # zsh's report of a fatal signal, outside and inside job control
    ("zsh: segmentation fault  python train.py\n", "other_crash", "shell-fatal-signal"),
    ("[1]    14875 bus error  python main.py\n", "other_crash", "shell-fatal-signal"),
])
def test_dev24_rows(text: str, status: str, signature: str) -> None:
    d = classify_text(text)
    assert (d.status, d.signature) == (status, signature), d.label


@pytest.mark.parametrize(("text", "status"), [
    # near texts of dev24's rows: a worker killed by SIGKILL, a signal UCX caught that is no fault
    ("RuntimeError: DataLoader worker (pid 50440) is killed by signal: Killed.\n", "killed"),
    ("[host:1:0:1] Caught signal 15 (Terminated)\n", "incomplete"),
    ("zsh: killed     python train.py\n", "killed"),
    ("INFO: UCX installs a handler that prints 'Caught signal' with a backtrace\n", "incomplete"),
])
def test_texts_near_dev24_rows_are_not_their_classes(text: str, status: str) -> None:
    d = classify_text(text)
    assert d.status == status, d.label


def test_dev24_comfyui_serving_lines() -> None:
    """ComfyUI's prompt worker ('Prompt executed in N seconds') serves; its site listening ('To see the GUI go to:
    http://...') is a start-up finished; its own 'got prompt' or 'Starting server' lines are neither."""
    for line in ("2026-05-17T20:12:07.516476 - Prompt executed in 58.46 seconds\n",
                 "To see the GUI go to: http://127.0.0.1:8188\n",
                 "2026-05-17T20:10:00.000000 - To see the GUI go to: http://0.0.0.0:8188\n"):
        assert classify_text(line).status == "ready", line
    for line in ("got prompt\n", "Starting server\n", "# To see the GUI, open the address it prints\n"):
        assert classify_text(line).status == "incomplete", line
    # a failure after ComfyUI served a prompt does not undo the launch's readiness; a stall report does
    served = "Prompt executed in 1.20 seconds\n"
    assert classify_text(served + "ERROR 12-07 10:00:00 [x.py:1] request 7 failed\n").status == "ready"
    assert classify_text("# ComfyUI hangs after the second prompt\n" + served).status == "hang"


@pytest.mark.parametrize(("text", "status", "signature"), [
    # dev25: bitsandbytes' loader without its compiled library (cextension.py), above the dlopen text it quotes
    ("Could not load bitsandbytes native library: /opt/bnb/libbitsandbytes_cpu.so: cannot open shared object file: "
     "No such file or directory\n", "missing_kernel", "bitsandbytes-native-library-missing"),
    ("RuntimeError: CUDA Setup failed despite GPU being available. Please run the following command to get more "
     "information:\n", "missing_kernel", "bitsandbytes-native-library-missing"),
    ("CUDA Setup failed despite CUDA being available. Please run the following command\n", "missing_kernel",
     "bitsandbytes-native-library-missing"),
    # its older CUDA set-up (cuda_setup/main.py): weak, when nothing else explains a run that did not end well
    ("CUDA SETUP: Required library version not found: libbitsandbytes_cuda118.so. Maybe you need to compile it from "
     "source?\nCUDA SETUP: Defaulting to libbitsandbytes_cpu.so...\n", "missing_kernel",
     "bitsandbytes-cuda-setup-failed"),
    ("CUDA SETUP: CUDA detection failed! Possible reasons:\n1. CUDA driver not installed\n", "missing_kernel",
     "bitsandbytes-cuda-setup-failed"),
    # CUDA's message for a GPU with no kernel image, capitalised as a title or a sentence starts it
    ("# No kernel image is available for execution on the device\n", "arch_mismatch", "cuda-no-kernel-image"),
    # a report that the out-of-memory error was met
    ("However, I encountered an \"out of memory\" error when I set the memory fraction higher\n", "oom",
     "generic-oom-line"),
    ("We keep running into a GPU out of memory error during the second epoch\n", "oom", "generic-oom-line"),
    # TensorFlow's/XLA's status for a failed allocation, also where a paste wrapped the line after its first word
    ("2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/python/local_client.cc:672] "
     "Execution of replica 0 failed: Resource exhausted: Out \nof memory while trying to allocate 5520758552 bytes.\n",
     "oom", "tf-xla-resource-exhausted-oom"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 64 bytes.\n",
     "oom", "tf-xla-resource-exhausted-oom"),
    # rich's boxed traceback frames, the panel's title lost
    ("│ /app/modules/txt2img.py:66 in txt2img                                          │\n"
     "│ > 66 │   │   processed = processing.process_images(p)                        │\n", "other_crash",
     "rich-traceback-frame"),
    # TensorRT-LLM's engine build without an engine (build.py's assert, builder.py's error), and a report of it
    ("AssertionError: Failed to build engine for rank 0\n", "other_crash", "trtllm-engine-build-failed"),
    ("[TRT-LLM] [E] Engine building failed, please check the error log.\n", "other_crash",
     "trtllm-engine-build-failed"),
    ("convert model successfully\n\nfailed to build engines\n", "other_crash", "trtllm-engine-build-failed"),
])
def test_dev25_rows(text: str, status: str, signature: str) -> None:
    d = classify_text(text)
    assert (d.status, d.signature) == (status, signature), d.label


@pytest.mark.parametrize(("text", "status"), [
    # near texts of dev25's rows: bitsandbytes' warning that it falls back and runs on; a CUDA binary found
    ("Could not find the bitsandbytes CUDA binary at PosixPath('/opt/bnb/libbitsandbytes_cuda121.so')\n",
     "incomplete"),
    ("CUDA SETUP: Loading binary /opt/bnb/libbitsandbytes_cuda118.so...\n", "incomplete"),
    # a serving run's readiness outweighs the weak set-up notice
    ("CUDA SETUP: Required library version not found: libbitsandbytes_cuda118.so.\n"
     "INFO:     Application startup complete.\n", "ready"),
    # an out-of-memory error not met: negated, hedged, asked about
    ("I never encountered an out of memory error with this model\n", "incomplete"),
    ("If you encounter an out of memory error, lower the batch size\n", "incomplete"),
    ("How much memory avoids an out of memory error here?\n", "incomplete"),
    # gRPC's RESOURCE_EXHAUSTED for a message size is a crash, not memory; TensorFlow's benign E line at import
    ("grpc._channel._InactiveRpcError: status = StatusCode.RESOURCE_EXHAUSTED details = \"Received message larger "
     "than max (5000 vs. 4194304)\"\n", "other_crash"),
    ("2024-01-01 10:00:00.123456: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] Unable to register "
     "cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered\n",
     "incomplete"),
    # a rich table's cells (no 'file:line in function' header), a frame header outside a panel
    ("│ model      │ llama-3 in fp16     │\n", "incomplete"),
    ("modules/txt2img.py:66 in txt2img\n", "incomplete"),
    # a served launch's later boxed traceback is weak: readiness stands
    ("INFO:     Application startup complete.\n│ /app/api.py:12 in handler              │\n", "ready"),
    # an engine build that failed but whose own error is shown keeps that error's class; a served launch stands
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\nAssertionError: Failed to build "
     "engine for rank 0\n", "oom"),
    ("failed to build engines on the first try\nINFO:     Application startup complete.\n", "ready"),
    # "kernel image" without CUDA's sentence
    ("# No kernel image support for sm_120 yet? (question)\n", "incomplete"),
])
def test_texts_near_dev25_rows_are_not_their_classes(text: str, status: str) -> None:
    d = classify_text(text)
    assert d.status == status, d.label


_DEV27_ROWS = [
    # dev27: Ray's memory monitor killing a worker (raylet node_manager.cc): the driver's OutOfMemoryError, the
    # raylet's summary, the kill message's advice; above the generic out-of-memory report of a title
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\nMemory on the node "
     "(IP: 10.0.0.5, ID: 4f2a) where the task was running was 30.10GB / 31.50GB (0.955), which exceeds the memory "
     "usage threshold of 0.95.\n", "killed", "ray-memory-monitor-kill"),
    ("(raylet) node_manager.cc:3040: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
     "crashed due to other reasons at node (ID: 4f2a, IP: 10.0.0.5) over the last time period.\n", "killed",
     "ray-memory-monitor-kill"),
    ("(raylet) Refer to the documentation on how to address the out of memory issue: "
     "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory "
     "on this node or reducing task parallelism by requesting more CPUs per task.\n", "killed",
     "ray-memory-monitor-kill"),
    ("# Nightly job failed with OutOfMemoryError\nray.exceptions.OutOfMemoryError: Task was killed due to the node "
     "running low on memory.\n", "killed", "ray-memory-monitor-kill"),
    # Docker's daemon refusing a GPU request (daemon/errors.go incompatibleDeviceRequest)
    ('docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].\n',
     "other_crash", "docker-gpu-driver-unavailable"),
    ('Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]\n',
     "other_crash", "docker-gpu-driver-unavailable"),
    # Triton's loader refusing the kernel its compiler just produced (driver.c gpuAssert): a JIT failure
    ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Triton Error [CUDA]: device "
     "kernel image is invalid\n", "jit_error", "triton-jit-kernel-load-failed"),
    ("RuntimeError: Triton Error [CUDA]: the provided PTX was compiled with an unsupported toolchain.\n", "jit_error",
     "triton-jit-kernel-load-failed"),
    # inductor's compile-failure report cut before its first line (triton_heuristics.py log.exception)
    ("E0101 00:00:00.000000 1 torch/_inductor/runtime/triton_heuristics.py:533] [0/0] metadata: {'signature': "
     "{'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32'}, 'device': 0}\n", "jit_error",
     "inductor-triton-compile-failed-metadata"),
    # transformers' HfArgumentParser refusing unknown arguments (hf_argparser.py)
    ("ValueError: Some specified arguments are not used by the HfArgumentParser: ['--local_rank=1']\n", "arg_error",
     "hf-argparser-unused-arguments"),
    # xFormers without its compiled library (_cpp_lib.py): weak, when nothing else explains the run
    ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.1.0+cu121 "
     "with CUDA 1201 (you have 2.1.0+cpu)\n", "missing_kernel", "xformers-cpp-extensions-unavailable"),
    ("WARNING[XFORMERS]: Need to compile C++ extensions to use all xFormers features.\n", "missing_kernel",
     "xformers-cpp-extensions-unavailable"),
    # XLA's and JAX's checks of the CUDA libraries found at run time (cuda_dnn.cc, jax_plugins/cuda)
    ("E0101 00:00:00.000000 1 cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.9.2 but source was compiled with: "
     "8.9.4.  CuDNN library needs to have matching major version and equal or higher minor version.\n",
     "import_error", "cudnn-runtime-older-than-build"),
    ("CUDA backend failed to initialize: Found cuDNN version 8500, but JAX was built against version 8600, which is "
     "newer.\n", "import_error", "cudnn-runtime-older-than-build"),
    ("RuntimeError: Unable to use CUDA because of the following issues with CUDA components:\nOutdated cuDNN "
     "installation found.\nVersion JAX was built against: 90300\n", "import_error", "cudnn-runtime-older-than-build"),
    # NCCL's communicator aborted by the watchdog's collective timeout (ProcessGroupNCCL.cpp): the timeout is the cause
    ("RuntimeError: NCCL communicator was aborted on rank 3.  Original reason for failure was: [Rank 3] Watchdog "
     "caught collective operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
     "1800512 milliseconds before timing out.\n", "hang", "nccl-abort-after-collective-timeout"),
    # ComfyUI's node exception line (execution.py), read by the families
    ("got prompt\n!!! Exception during processing !!! No module named 'sageattention'\n", "import_error",
     "generic-import"),
    ("!!! Exception during processing !!! Request timed out after 600 seconds\n", "hang", "generic-hang"),
    # a process or container reported ending with status 137 (SIGKILL)
    ("the container exit with code 137 even when it only runs a sleep\n", "killed", "generic-killed-line"),
    ("The worker container exited with code 137 during the second epoch\n", "killed", "generic-killed"),
    ("# Training task exit with status code 137\n", "killed", "generic-killed-line"),
    # NaN reached or caused, told in prose or a title
    ("the loss goes to NaN after 20k steps\n", "nan", "generic-nan-line"),
    ("# FP16 causes NaN in the attention scores\n", "nan", "generic-nan-line"),
    # degenerate replies met, or a title naming them
    ("I keep getting gibberish output from the 4-bit model\n", "garbage", "generic-garbage-report-line"),
    ("# Garbage output when offloading all layers\n", "garbage", "generic-garbage-report-line"),
    # a compiled extension module not found, named without the exception's type
    ("# No module named 'selective_scan_cuda'\n", "missing_kernel", "generic-missing-kernel-line"),
    # TorchServe's inference endpoint bound, SD.Next's API answering: readiness
    ("2024-01-01T00:00:00,000 [INFO ] main org.pytorch.serve.ModelServer - Inference API bind to: "
     "http://127.0.0.1:8080\nModel server started.\n", "ready", None),
    ("12:00:00-000000 INFO     API user=None code=200 http/1.1 POST /sdapi/v1/txt2img 127.0.0.1 3.1234\n", "ready",
     None),
]


_DEV27_NEAR = [
    # near texts of dev27's rows: Ray's advice without its OOM-prevention page; a docker command alone
    ("Refer to the documentation on how to address the out of memory issue in your own code.\n", "incomplete"),
    ("docker run --rm --gpus all nvidia/cuda:12.4.0-base-ubuntu22.04 nvidia-smi\n", "incomplete"),
    # Triton's other CUDA errors keep their class; the CUDA text without Triton stays an architecture refusal
    ("RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered\n", "illegal_memory"),
    ("RuntimeError: CUDA error: device kernel image is invalid\n", "arch_mismatch"),
    # other metadata, other parser lines
    ("INFO model metadata: {'name': 'llama', 'layers': 32}\n", "incomplete"),
    ("HfArgumentParser parsed 12 arguments into 3 dataclasses\n", "incomplete"),
    # xFormers loaded; its warning before a served start-up is no failure
    ("xFormers 0.0.23\nmemory_efficient_attention.cutlassF:               available\n", "incomplete"),
    ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
     "INFO:     Application startup complete.\n", "ready"),
    # a cuDNN version merely reported; XLA's benign factory line
    ("I0101 00:00:00.000000 1 cuda_dnn.cc:529] Loaded cuDNN version 8906\n", "incomplete"),
    # NCCL's abort for an NCCL error stays nccl
    ("RuntimeError: NCCL communicator was aborted on rank 0.  Original reason for failure was: NCCL error: unhandled "
     "system error, NCCL version 2.18.1\n", "nccl"),
    # a status other than 137, a negated or hedged one
    ("the export step ended with status code 1370 in the report\n", "incomplete"),
    ("The container does not exit with code 137 anymore\n", "incomplete"),
    ("If the pod ends with code 137, raise its memory limit\n", "incomplete"),
    # NaN not reached: negated, set on purpose, hedged
    ("With bf16 the loss does not go to nan anymore\n", "incomplete"),
    ("We set the padding logits to nan on purpose\n", "incomplete"),
    ("If fp16 causes NaN, switch to bf16\n", "incomplete"),
    # no garbage: negated, the garbage collector
    ("There is no garbage output when offloading all layers\n", "incomplete"),
    ("I am getting garbage collection logs every second\n", "incomplete"),
    # a plain package missing in a title is no compiled kernel (an import error: [generic.title])
    ("# No module named 'flash_attn'\n", "import_error"),
    # TorchServe stopping; SD.Next's API refusing a request
    ("2024-01-01T00:00:00,000 [INFO ] main org.pytorch.serve.ModelServer - Torchserve stopped.\n", "incomplete"),
    ("12:00:00-000000 INFO     API user=None code=500 http/1.1 POST /sdapi/v1/txt2img 127.0.0.1 3.1234\n",
     "incomplete"),
]


_DEV26_ROWS = [
    # dev26: vLLM V0's worker loop (multiproc_worker_utils.py): fatal, so a server that came up and then printed it crashed
    ("(VllmWorkerProcess pid=4121) ERROR 05-01 10:00:00 multiproc_worker_utils.py:240] Exception in worker "
     "VllmWorkerProcess while processing method determine_num_available_blocks.\n", "other_crash",
     "vllm-v0-worker-exception"),
    ("INFO:     Application startup complete.\n(VllmWorkerProcess pid=77) ERROR 05-01 10:00:09 "
     "[multiproc_worker_utils.py:238] Exception in worker VllmWorkerProcess while processing method "
     "start_worker_execution_loop.\n", "other_crash", "vllm-v0-worker-exception"),
    # the NVIDIA driver's Xid 8 (a channel's watchdog timeout, GPU stopped processing), in dmesg and as listed from it
    ("[ 8812.004411] NVRM: Xid (PCI:0000:3b:00): 8, pid=4242, name=python3, Channel 00000010\n", "hang",
     "nvrm-xid-8-channel-timeout"),
    ("09:14:02  Xid 8  python3  channel 0x00000010\n", "hang", "nvrm-xid-8-channel-timeout"),
    # TurboMind's and FasterTransformer's CUDA check on a failed allocation
    ("RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231 \n",
     "oom", "turbomind-cuda-runtime-oom"),
    ("terminate called after throwing an instance of 'std::runtime_error'\n  what():  [FT][ERROR] CUDA runtime error: "
     "out of memory /ft/src/fastertransformer/utils/allocator.h:181\n", "oom", "turbomind-cuda-runtime-oom"),
    # a serving engine's compiled kernel module Windows cannot load
    ("ImportError: DLL load failed while importing _turbomind: The specified module could not be found.\n",
     "missing_kernel", "compiled-extension-dll-load-failed"),
    ("ImportError: DLL load failed while importing flash_attn_2_cuda: The specified procedure could not be found.\n",
     "missing_kernel", "compiled-extension-dll-load-failed"),
    # c10's terminate handler (an uncaught C++ exception, then abort)
    ("Unhandled exception caught in c10/util/AbortHandler.h\n00007FFE12AE1DE4 torch_python.dll!"
     "THPGenerator_initDefaultGenerator [<unknown file> @ <unknown line number>]\n", "other_crash",
     "c10-terminate-handler"),
    # Ollama's runner exited: fatal, even after the server listened; the cause it quotes wins when a row reads it
    ('time=2025-01-01T00:00:00.000Z level=ERROR source=sched.go:455 msg="error loading llama server" error="llama '
     'runner process has terminated: exit status 2"\n', "other_crash", "ollama-runner-terminated"),
    ('time=2025-01-01T00:00:00.000Z level=INFO source=routes.go:1200 msg="Listening on 127.0.0.1:11434 (version '
     '0.5.7)"\nError: llama runner process no longer running: -1 \n', "other_crash", "ollama-runner-terminated"),
    ("Error: llama runner process has terminated: CUDA error: out of memory\n", "oom", "torch-cuda-oom"),
    # argparse's usage line for a subcommand's parser (prog of several words)
    ("usage: mytool serve api [-h] [--port PORT] [--tp TP]\n                        model_path\n", "arg_error",
     "generic-arg-error-line"),
    # out-of-memory errors met, in the abbreviation and the plural; memory named as the cause
    ("I'm getting random OOM errors when the batch grows past 64\n", "oom", "generic-oom-line"),
    ("We keep hitting OOM errors on rank 3 after an hour\n", "oom", "generic-oom-line"),
    ("The root cause is OOM in the prefill step.\n", "oom", "generic-oom-line"),
    ("The crash was caused by out of memory on rank 3.\n", "oom", "generic-oom-line"),
    # a run that stopped at a step and went no further
    ('The server just stopped at "Capture cuda graph begin" without further progress.\n', "hang",
     "generic-hang-report-line"),
]


_DEV26_NEAR = [
    # near texts of dev26's rows: vLLM's healthy worker line; another "Exception in worker" sentence
    ("INFO 05-01 10:00:00 multiproc_worker_utils.py:138] Worker ready; awaiting tasks\n", "incomplete"),
    ("Exception in worker thread pool shutdown was ignored\n", "incomplete"),
    # other Xid numbers (8 only as a whole number)
    ("Xid 13 and Xid 43 are application errors, Xid 79 is a bus fault\n", "incomplete"),
    ("[ 8812.004411] NVRM: Xid (PCI:0000:3b:00): 80, pid=4242, name=python3\n", "incomplete"),
    # TurboMind's check for another CUDA error is no OOM
    ("RuntimeError: [TM][ERROR] CUDA runtime error: invalid argument /lmdeploy/src/turbomind/kernels/gemm.cu:88 \n",
     "other_crash"),
    # a DLL load failure of a module that is no engine kernel stays the import row's (torch's own _C included)
    ("ImportError: DLL load failed while importing _ctypes: The specified module could not be found.\n",
     "import_error"),
    ("ImportError: DLL load failed while importing _C: The specified module could not be found.\n", "import_error"),
    # the handler named in prose; Ollama's runner started
    ("The terminate handler lives in c10/util/AbortHandler.h\n", "incomplete"),
    ('time=2025-01-01T00:00:00.000Z level=INFO source=server.go:626 msg="llama runner started in 3.21 seconds"\n',
     "incomplete"),
    # no usage line without argparse's [-h]; a usage hint in prose
    ("usage: lmdeploy serve api_server\n", "incomplete"),
    ("# usage: run `lmdeploy serve api_server --help` to see the options\n", "incomplete"),
    # OOM errors not met (negated, hedged), a cause asked about, the OOM killer
    ("I never get OOM errors with the smaller batch\n", "incomplete"),
    ("If you hit OOM errors, lower --mem-fraction-static\n", "incomplete"),
    ("Maybe the root cause is OOM?\n", "incomplete"),
    ("The pod restarted; the cause was OOM-killer on the node\n", "incomplete"),
    # a progress bar missing, a stop denied
    ("The download stopped at 50% and went on without any progress bar\n", "incomplete"),
    ("It does not stop at the barrier without progress anymore\n", "incomplete"),
    # a demangled signature's repeated parameter types are no token loop
    ("#4  fused_kernel(float const*, int, int, long, long, long, long, long, long, unsigned int, float) from "
     "libk.so\n", "incomplete"),
]


_DEV29_ROWS = [
    # dev29: AutoGPTQ's compiled kernels not importable (qlinear_cuda.py logger.warning): weak, when nothing else explains
    ("WARNING - CUDA extension not installed.\n", "missing_kernel", "autogptq-cuda-extension-not-installed"),
    # AutoAWQ's fused modules asserting their kernels imported (awq/modules/fused/norm.py), and its import-time warning
    ("AssertionError: AWQ kernels could not be loaded. Please install them from "
     "https://github.com/casper-hansen/AutoAWQ_kernels\n", "missing_kernel", "autoawq-kernels-not-loaded"),
    ("/env/lib/python3.10/site-packages/awq/modules/linear/gemm.py:14: UserWarning: AutoAWQ could not load GEMM kernels "
     "extension. Details: No module named 'awq_ext'\n", "missing_kernel", "autoawq-kernels-extension-warning"),
    # a quantization package's '<name>_ext' kernel module missing (exllamav2/ext.py), above the plain module-not-found
    ("ModuleNotFoundError: No module named 'exllamav2_ext'\n", "missing_kernel", "quant-kernel-ext-module-missing"),
    # llama.cpp's argument parser refusing an unknown flag (common/arg.cpp)
    ("error: invalid argument: --flash-attn-type\n", "arg_error", "llama-cpp-invalid-argument"),
    # Hydra's job report (hydra/core/utils.py): alone other_crash, under the exception that follows
    ("Error executing job with overrides: ['trainer.n_gpus_per_node=8']\n", "other_crash", "hydra-job-error"),
    ("Error executing job with overrides: ['trainer.n_gpus_per_node=8']\nTraceback (most recent call last):\n  File "
     "\"main_ppo.py\", line 30, in main\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
     "oom", "torch-cuda-oom"),
    # the body of Ray's memory-monitor kill message (node_manager.cc CreateOomKillMessageDetails)
    ("Memory on the node (IP: 10.0.0.7, ID: 3fa2b1c4) where the task (task ID: ffff0001, name=train, pid=42, memory "
     "used=120.5GB) was running was 250.1GB / 256.0GB (0.977), which exceeds the memory usage threshold of 0.95.\n",
     "killed", "ray-memory-monitor-kill-details"),
    # a title naming a crash as a noun
    ("# Server crash when loading a second model\n", "other_crash", "generic-crash-report-line"),
    # an extension's build reported failed; a '<name>_ext' kernel module named in a title
    ("it fails to build the CUDA extension on Windows\n", "jit_error", "generic-jit-line"),
    ("# No module named 'exllama_ext'\n", "missing_kernel", "generic-missing-kernel-line"),
    # a value reported as NaN
    ("the eval loss is reported as NaN after the first epoch\n", "nan", "generic-nan-line"),
    # a wait that ended with nothing, steps that stopped advancing, logs that freeze
    ("I waited for two hours with no output at all\n", "hang", "generic-hang-report-line"),
    ("the number of steps no longer advances after epoch 2\n", "hang", "generic-hang-report-line"),
    ("the logs freeze after epoch 3 and the GPU stays busy\n", "hang", "generic-hang-report-line"),
    # the out-of-memory error given by the program
    ("the 13B model gave out of memory error on load\n", "oom", "generic-oom-line"),
    # FastChat's uvicorn lines relayed through its stderr logger at ERROR; Werkzeug's development server: readiness
    ("2024-01-01 10:00:00 | ERROR | stderr | INFO:     Started server process [1]\n2024-01-01 10:00:00 | ERROR | "
     "stderr | INFO:     Waiting for application startup.\n2024-01-01 10:00:00 | ERROR | stderr | INFO:     Application "
     "startup complete.\n2024-01-01 10:00:00 | ERROR | stderr | INFO:     Uvicorn running on http://localhost:21002 "
     "(Press CTRL+C to quit)\n", "ready", None),
    (" * Serving Flask app 'app'\n * Debug mode: off\n * Running on http://127.0.0.1:5000\nPress CTRL+C to quit\n",
     "ready", None),
]


_DEV29_NEAR = [
    # near texts of dev29's rows: a name spelled with a run of one letter is no degenerate output
    ("Don't install the jllllll's exllama release, build it yourself\n", "incomplete"),
    # the extensions built or loaded; CUDA's own 'invalid argument' is no refused flag
    ("Building CUDA extension autogptq_cuda_64: installed\n", "incomplete"),
    ("AWQ kernels loaded from awq_ext\n", "incomplete"),
    ("AutoAWQ could not load the model from the hub\n", "incomplete"),
    ("CUDA error: invalid argument\n", "other_crash"),
    # Hydra launching jobs; a node's memory merely reported
    ("[2024-01-01 10:00:00,000][HYDRA] Launching 2 jobs locally\n[2024-01-01 10:00:00,000][HYDRA] \t#0 : lr=0.1\n",
     "incomplete"),
    ("Memory on the node is fine: 20GB / 256GB used\n", "incomplete"),
    # a fix's or a handler's title is no crash
    ("# Fix crash when loading a second model\n", "incomplete"),
    ("# Add a crash handler for the worker\n", "incomplete"),
    # negated reports
    ("The extension no longer fails to build the CUDA kernels\n", "incomplete"),
    ("the loss is not reported as NaN anymore\n", "incomplete"),
    ("it does not give out of memory error anymore\n", "incomplete"),
    # a wait that ended well, layers frozen on purpose, a bar that no longer shows a value
    ("I waited for an hour and it finished fine\n", "incomplete"),
    ("Layers to freeze: 0-11\n", "incomplete"),
    ("the progress bar no longer shows the loss\n", "incomplete"),
    # FastChat's relayed start-up lines before uvicorn serves; its relayed exception keeps its class
    ("2024-01-01 10:00:00 | ERROR | stderr | INFO:     Started server process [1]\n2024-01-01 10:00:00 | ERROR | "
     "stderr | INFO:     Waiting for application startup.\n", "incomplete"),
    ("2024-01-01 10:00:00 | ERROR | stderr | RuntimeError: CUDA error: out of memory\n", "oom"),
    # Flask's app named before its server runs
    (" * Serving Flask app 'app'\n * Debug mode: on\n", "incomplete"),
]


_DEV28_ROWS = [
    # dev28: the ROCm runtime's status strings for a queue killed by a memory violation (ROCR hsa.cpp, CLR rocdevice.cpp)
    (":0:rocdevice.cpp            :2984: 2787 us: Callback: Queue 0x7f00 aborting with error : "
     "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address. "
     "code: 0x29\n", "illegal_memory", "rocr-hsa-memory-violation"),
    ("Device::callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_FAULT: Agent attempted to access an "
     "inaccessible address. code: 0x2b\nAborted (core dumped)\n", "illegal_memory", "rocr-hsa-memory-violation"),
    # AITER's JIT builder failing a module (aiter/jit/core.py), its arrows no degenerate reply
    ("[aiter] start build [module_rmsnorm] under /opt/aiter/jit/build/module_rmsnorm\n"
     "[aiter] failed build jit [module_rmsnorm]↓↓↓↓↓↓↓↓↓↓\n-->[History]: Traceback (most recent call last):\n",
     "jit_error", "aiter-jit-build-failed"),
    # SageAttention without its compiled kernel for the GPU (sageattention/core.py), over ComfyUI's prompt line
    ("AssertionError: SM89 kernel is not available. Make sure you GPUs with compute capability 8.9.\n"
     "Prompt executed in 3.20 seconds\n", "missing_kernel", "sageattention-kernel-not-available"),
    # lm-evaluation-harness's table with no exact match under the lenient filter (lm_eval/utils.py make_table)
    ("|Tasks|Version|     Filter     |n-shot|  Metric   |   |Value|   |Stderr|\n"
     "|gsm8k|      3|flexible-extract|     5|exact_match|↑  |0.0000|±  |0.0000|\n", "garbage", "lm-eval-zero-exact-match"),
    # SGLang's request log of a finished request (--log-requests): serving
    ("[2026-01-01 00:00:00] Finish: obj=GenerateReqInput(rid='a1', text='Hi', sampling_params={}), "
     "out={'meta_info': {'id': 'a1', 'finish_reason': {'type': 'length', 'length': 8}}}\n", "ready", None),
    # generic layer: a timeout error met; a stall told in Chinese
    ("Every few hours we hit a timeout error in the all-reduce and the job stops\n", "hang", "generic-hang-line"),
    ("# 多机部署时推理服务卡住\n", "hang", "generic-hang-report-line"),
    # no cubin for the GPU's SM; no compiled library for its SM
    ("The wheel has no sm_75 cubin, so the first launch fails on a T4\n", "arch_mismatch", "generic-arch-line"),
    ("pip installed fine but I cannot find the .so file for sm86 in the package\n", "missing_kernel",
     "generic-missing-kernel-line"),
    # an import reported failing
    ("After upgrading, users cannot import the runtime package at all\n", "import_error", "generic-import-line"),
    ("# The worker does not start due to a circular import\n", "import_error", "generic-import-line"),
    # OOM met, OOM as a verb, OOM named as the cause
    ("After about 2000 requests the server encounters an OOM and exits\n", "oom", "generic-oom-line"),
    ("With a 32k context the decode node will OOM within minutes\n", "oom", "generic-oom-line"),
    ("We traced it: the real cause is a host-side pinned OOM during weight loading\n", "oom", "generic-oom-line"),
    # an illegal memory access named in a title
    ("# [Bug] EAGLE draft extend illegal memory access with page size 64\n", "illegal_memory",
     "generic-illegal-memory-line"),
    # degenerate tokens produced; replies all wrong
    ("With the int4 checkpoint the model emits corrupted tokens at every line break\n", "garbage",
     "generic-garbage-report-line"),
    ("It serves, but the answers are completely wrong for every prompt\n", "garbage", "generic-garbage-report-line"),
    # a crash named in a title, foretold, an error caused, a failure at a stage
    ("# Qwen3 MoE serving crash on H20\n", "other_crash", "generic-crash-report-line"),
    ("Sending an empty prompt will crash the scheduler\n", "other_crash", "generic-crash-report-line"),
    ("Passing --enable-foo together with --disable-bar will cause an error\n", "other_crash",
     "generic-crash-report-line"),
    ("The decode instance fails during warmup with a transfer error\n", "other_crash", "generic-crash-report-line"),
]


_DEV28_NEAR = [
    # near texts of dev28's rows: HSA's success, AITER's successful build, SageAttention's kernel found
    ("HSA_STATUS_SUCCESS: The function has been executed successfully.\n", "incomplete"),
    ("[aiter] finish build [module_rmsnorm], cost 12.5s\n", "incomplete"),
    ("SageAttention: SM89 kernel available, using sageattn_qk_int8_pv_fp8_cuda\n", "incomplete"),
    # lm_eval scores above zero, and a zero under the strict filter only (a format mismatch)
    ("|gsm8k|      3|flexible-extract|     5|exact_match|↑  |0.7521|±  |0.0119|\n", "incomplete"),
    ("|     |       |strict-match    |     5|exact_match|↑  |0.0000|±  |0.0000|\n", "incomplete"),
    # SGLang's request received (not finished), another object's finish
    ("[2026-01-01 00:00:00] Receive: obj=GenerateReqInput(rid='a1', text='Hi')\n", "incomplete"),
    ("Finish: obj=TrainingJob(id=3)\n", "incomplete"),
    # a timeout configured, a stall denied
    ("We set a timeout error threshold of 30 s in the config\n", "incomplete"),
    ("重启之后没有卡住了\n", "incomplete"),
    # a GPU's SM named with its cubin present; a file found
    ("The wheel ships the sm_90a cubin for H100\n", "incomplete"),
    ("pip could find the .so file for sm90 in the package\n", "incomplete"),
    # vLLM's warning about its compiled ops (it runs on without them) is no import report; an import that works
    ("Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared object file')\n",
     "incomplete"),
    ("We can import the runtime package now that the path is fixed\n", "incomplete"),
    # OOM denied, the OOM killer's, OOM not the cause
    ("The server did not encounter an OOM this time\n", "incomplete"),
    ("the worker got OOM-killed by the kernel\n", "incomplete"),
    ("The cause is not an OOM but a bad NIC\n", "incomplete"),
    # an illegal memory access ruled out
    ("With the fix there is no illegal memory access anymore\n", "incomplete"),
    # tokens without degeneracy; answers not wrong
    ("The model generated 128 tokens in 0.8 s\n", "incomplete"),
    ("The answers are not completely wrong, just verbose\n", "incomplete"),
    # a crash denied or hedged; a heading without one; a warm-up that passed
    ("Sending an empty prompt will not crash the scheduler anymore\n", "incomplete"),
    ("## Reproduction\n", "incomplete"),
    ("The decode instance passed warmup in 3 s\n", "incomplete"),
]


_DEV30_ROWS = [
    # PyTorch's CUDA error help naming a kernel fault (c10/cuda/CUDAMiscFunctions.cpp get_cuda_error_help), read when
    # the message line above it is cut, and its ROCm form
    ("torch.AcceleratorError: CUDA error: device-side assert tri\n"
     "Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more "
     "information.\n", "illegal_memory", "pytorch-cuda-error-help-kernel-fault"),
    ("RuntimeError: CUDA error: misaligned addr\nSearch for `cudaErrorMisalignedAddress' in "
     "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n",
     "illegal_memory", "pytorch-cuda-error-help-kernel-fault"),
    ("RuntimeError: HIP error: an illegal memory access was encountered\nSearch for `hipErrorIllegalAddress' in "
     "https://rocm.docs.amd.com/projects/HIP/en/latest/index.html for more information.\n",
     "illegal_memory", "cuda-illegal-memory"),
    ("Search for `hipErrorIllegalInstruction' in https://rocm.docs.amd.com/projects/HIP/en/latest/index.html for more "
     "information.\n", "illegal_memory", "pytorch-cuda-error-help-kernel-fault"),
    # TensorRT's builder short of workspace for a plugin (pluginV2Builder.cpp::makeRunner), over the TRT-LLM logger row
    ("[11/10/2023-21:47:10] [TRT] [E] 4: Internal error: plugin node LLaMAForCausalLM/layers/0/attention/"
     "PLUGIN_V2_GPTAttention_0 requires 56405524864 bytes of scratch space, but only 47590277120 is available. Try "
     "increasing the workspace size with IBuilderConfig::setMemoryPoolLimit().\n", "oom", "tensorrt-scratch-space-short"),
    ("Internal error: plugin node (Unnamed Layer* 0) [PluginV2Ext]requires 20677888 bytes of scratch space, but only "
     "20624360 is available. ...\n", "oom", "tensorrt-scratch-space-short"),
    # generic layer: a hang named at a stage (a title, a report)
    ("# [Bug]: Hang During CUDA Graph Capture on ROCM in 0.19\n", "hang", "generic-hang-report-line"),
    ("With TP 8 we see a hang at startup on every second launch\n", "hang", "generic-hang-report-line"),
    # no kernel image met; a build without the GPU's SM
    ("On the 5090 it throws no kernel image runtime error at the first prompt\n", "arch_mismatch", "generic-arch-line"),
    ("The current code does not compile kernels for sm_120, so Blackwell cards fail\n", "arch_mismatch",
     "generic-arch-line"),
    # a model repeating itself without end
    ("# [Bug] glm-5 with sglang llm repeat and repeat\n", "garbage", "generic-garbage-report-line"),
    ("After 200 tokens the model keeps repeating the same sentence\n", "garbage", "generic-garbage-report-line"),
]


_DEV30_NEAR = [
    # near texts of dev30's rows: PyTorch's help naming errors that are no kernel fault (their own rows read the
    # message), TensorRT's scratch space that fits
    ("Search for `cudaErrorInvalidValue' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
     "for more information.\n", "incomplete"),
    ("[TRT] [I] plugin node GPTAttention_0 requires 1048576 bytes of scratch space\n", "incomplete"),
    # a hang fixed, denied or avoided at a stage; a verb that is no hang
    ("## Fix hang during CUDA graph capture on ROCm\n", "incomplete"),
    ("There is no hang during startup with the new image\n", "incomplete"),
    ("The flag is there to avoid a hang at shutdown\n", "incomplete"),
    ("Hang the config file on the wall during training\n", "incomplete"),
    # a kernel image found; a build that includes the SM
    ("The wheel ships the kernel image for sm_120 now\n", "incomplete"),
    ("Version 2.1 does compile kernels for sm_120 and sm_100\n", "incomplete"),
    # repetition denied; a repetition penalty
    ("With the new template the model does not keep repeating itself\n", "incomplete"),
    ("We set repetition_penalty=1.05 so the output repeats less\n", "incomplete"),
]


_DEV32_ROWS = [
    # HIP's device-side assert (amd_device_functions.h __assert_fail), the ROCm spelling of CUDA's
    ("/opt/pytorch/aten/src/ATen/native/hip/ScatterGatherKernel.hip:365: operator(): Device-side assertion "
     "`idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"' failed.\n", "illegal_memory",
     "hip-device-side-assertion"),
    # ONNX Runtime's provider DLL failing to load on Windows (env.cc LoadDynamicLibrary through ProviderLibrary::Get)
    ("onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error "
     "126 \"\" when trying to load \"C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll\"\n",
     "import_error", "onnxruntime-loadlibrary-failed"),
    # arcface_torch's progress line with a NaN or infinite loss (utils_callbacks.py CallBackLogging)
    ("Training: 2024-01-02 10:00:00,000-Speed 3100.12 samples/sec   Loss nan   LearningRate 0.100000   Epoch: 3   "
     "Global Step: 9000   Fp16 Grad Scale: 0   Required: 30 hours\n", "nan", "arcface-torch-loss-nan"),
    ("Speed 812 samples/sec   Loss inf   Epoch: 0   Global Step: 100   Required: 5 hours\n", "nan",
     "arcface-torch-loss-nan"),
    # CPython's import error retyped with typographic quotes
    ("运行时报错：ModuleNotFoundError: No module named ‘flash_attn’\n", "import_error",
     "module-not-found-typographic-quotes"),
    ("I get No module named “torchvision.transforms.functional_tensor” when starting\n", "import_error",
     "module-not-found-typographic-quotes"),
    # old pip's failed setup.py subprocess (pip 10-18 call_subprocess), weak
    ("Command \"/usr/bin/python3 -u -c \"import setuptools, tokenize;__file__='/tmp/pip-req-build-x1/setup.py'\" install "
     "--record /tmp/pip-record-y2/install-record.txt\" failed with error code 1 in /tmp/pip-req-build-x1/\n", "jit_error",
     "pip-legacy-setup-subprocess-failed"),
    ("pip._internal.exceptions.InstallationError: Command \"/opt/conda/bin/python -u -c 'import setuptools, tok\n",
     "jit_error", "pip-legacy-setup-subprocess-failed"),
    # generic layer: getting stuck, stuck on a start-up stage; replies reported unreadable; a title naming a kill
    ("Since the upgrade to 2.1 the job keeps getting stuck after the first epoch\n", "hang", "generic-hang-report-line"),
    ("Training stuck on initializing distributed with 2 nodes\n", "hang", "generic-hang-report-line"),
    ("After quantization the responses became completely incoherent\n", "garbage", "generic-garbage-report-line"),
    ("The output of the fine-tuned model is almost unreadable\n", "garbage", "generic-garbage-report-line"),
    ("# Training process killed\n", "killed", "generic-killed-line"),
    ("I think your GPU is too old for the prebuilt wheels, build from source\n", "arch_mismatch", "generic-arch-line"),
]


_DEV32_NEAR = [
    # near texts of dev32's rows: a host assert, a DLL loaded, a finite loss, straight quotes (module-not-found reads
    # them), pip's command that succeeded
    ("python3: src/main.c:12: main: Assertion `n > 0' failed.\n", "other_crash"),  # a host assert: glibc-assert-abort
    ("LoadLibrary succeeded for onnxruntime_providers_cuda.dll\n", "incomplete"),
    ("Speed 3100.12 samples/sec   Loss 12.4311   LearningRate 0.100000   Epoch: 3   Global Step: 9000\n", "incomplete"),
    ("Command \"python setup.py egg_info\" had error code 1 in /tmp/pip-build/pkg/\n", "incomplete"),
    # stuck denied or avoided; stuck on a frame someone looked at; readable replies; a kill in the body, not a title
    ("With NCCL_P2P_DISABLE=1 it is not getting stuck anymore\n", "incomplete"),
    ("The timeout is there to avoid getting stuck\n", "incomplete"),
    ("py-spy shows the main thread stuck on futex_wait\n", "incomplete"),
    ("The output is no longer unreadable after the fix\n", "incomplete"),
    ("# Training process killed message in the docs is unclear\n", "incomplete"),
    ("The GPU is not too old, a T4 works with this wheel\n", "incomplete"),
]


_DEV33_ROWS = [
    # Ascend CANN's HCCL EI0006: a collective's socket to a peer rank timed out (the peer never came): hang; with the
    # 'Transport init error' TraceBack HCCL prints under it, still hang (hccl-transport-init-error is below it)
    ("[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not "
     "send the data in time. Please check the reason for the rank being stuck\n", "hang", "hccl-get-socket-timeout"),
    ("EI0006: Getting socket times out. Reason: 1. The remote does not initiate a connect request. some NPUs in the "
     "cluster are abnormal.\n        TraceBack (most recent call last):\n        Transport init error. Reason: "
     "[Create][DestLink]Create Dest error! createLink para:rank[0]-localUserrank[0]-localIpAddr[172.17.0.2]\n", "hang",
     "hccl-get-socket-timeout"),
    ("[rank0] WARMUP FAIL @ iter 0: aclnnNotifyDispatch failed,\n        EI0006 Communication_Error_Get_Socket: Getting "
     "socket times out.\n", "hang", "hccl-get-socket-timeout"),
    # ... HCCL EI0009: its transport between ranks did not come up: nccl
    ("EI0009: Device 0 transport init error. Reason: The network port is down.\n", "nccl", "hccl-transport-init-error"),
    ("[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. Reason: [Create][DestLink]Create "
     "Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[172.16.0.114], dst_rank[0]\n", "nccl",
     "hccl-transport-init-error"),
    ("Failed to initialize AdxlEngine, status: 503900, Communication_Error_Initialize_Transport: Device 1 transport init "
     "error. Reason: The network port is down\n", "nccl", "hccl-transport-init-error"),
    # llama.cpp's loader refusing an architecture it does not know, as llama.cpp, Ollama and LM Studio relay it
    ("llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'gemma4'\n",
     "other_crash", "llama-cpp-unknown-model-architecture"),
    ("Error: 500 Internal Server Error: llama-server process has terminated: exit status 1: error loading model: unknown "
     "model architecture: 'mllama'\n", "other_crash", "llama-cpp-unknown-model-architecture"),
    ("  \"cause\": \"llama.cpp error: 'error loading model architecture: unknown model architecture: 'deepseek2''\",\n",
     "other_crash", "llama-cpp-unknown-model-architecture"),
    # serving lines: llama.cpp's server taking a request into a slot (both log formats), TGI's and TEI's span of an
    # answered request (before its message), uvicorn's start-up after docker compose's container prefix
    ("slot launch_slot_: id  0 | task 312 | processing task, is_child = 0\n", "ready", None),
    ("slot launch_slot_: id  3 | task 0 | processing task\n", "ready", None),
    ("{\"timestamp\":1732735392,\"level\":\"INFO\",\"function\":\"launch_slot_with_data\",\"line\":928,\"message\":\"slot is "
     "processing task\",\"slot_id\":0,\"task_id\":0}\n", "ready", None),
    ("INFO generate{parameters=GenerateParameters { best_of: Some(1), temperature: Some(0.2), max_new_tokens: 48 } "
     "total_time=\"667.179861ms\" validation_time=\"11.640733ms\" queue_time=\"129.535µs\" inference_time=\"655.410281ms\n",
     "ready", None),
    ("2024-06-01T10:00:00.000000Z  INFO embed{total_time=\"12.3ms\" tokenization_time=\"1.1ms\" queue_time=\"512µs\" "
     "inference_time=\"10.2ms\"}: text_embeddings_router::http::server: router/src/http/server.rs:706: Success\n", "ready", None),
    ("llm-tgi-server               | INFO:     Uvicorn running on http://0.0.0.0:9000 (Press CTRL+C to quit)\n", "ready", None),
    ("vllm-1  | INFO:     Application startup complete.\n", "ready", None),
    ("\x1b[36mapi_1  | \x1b[0mINFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n", "ready", None),
    # generic layer: systemd's main-process failure report and Triton's model table's UNAVAILABLE state are failure lines
    # (the families read them); a request left processing for good; a reply repeated to the length limit; memory running
    # out reported in Chinese; Ollama's refusals of an old GPU, and a report retelling one
    ("Feb 20 12:27:39 suma systemd[1]: ollama.service: Main process exited, code=exited, status=2/INVALIDARGUMENT\n",
     "other_crash", "generic-failure-line"),
    ("systemd[1]: vllm.service: Main process exited, code=dumped, status=11/SEGV\n", "other_crash", "generic-failure-line"),
    ("| llama     | 1       | UNAVAILABLE: Internal: unable to create TensorRT engine |\n", "other_crash",
     "generic-failure-line"),
    ("| densenet_onnx      | 1       | UNAVAILABLE: Internal: failed to allocate memory for the model instance |\n",
     "oom", "generic-oom"),
    ("the request stays in processing indefinitely, with no output whatsoever\n", "hang", "generic-hang-report-line"),
    ("Since 0.5 the model remains loading forever on two GPUs\n", "hang", "generic-hang-report-line"),
    ("# Repeated answer: When I use vllm with opt-13b, the generated text is not end until the max length\n", "garbage",
     "generic-garbage-report-line"),
    ("with greedy decoding I meet the repeated answer for every prompt\n", "garbage", "generic-garbage-report-line"),
    ("在三卡2080ti 22G环境上运行如下示例代码，报OOM，似乎cache_max_entry_count=0.2没有生效\n", "oom", "generic-oom-zh-line"),
    ("启动72B模型时显存不足，服务起不来\n", "oom", "generic-oom-zh-line"),
    ("跑长文本推理一段时间后出现OOM\n", "oom", "generic-oom-zh-line"),
    ("time=2024-08-01T10:00:00.000Z level=INFO source=gpu.go:267 msg=\"[0] CUDA GPU is too old. Compute Capability "
     "detected: 3.0\"\n", "arch_mismatch", "generic-arch-line"),
    ("time=2024-05-01T11:05:13.123+03:00 level=WARN source=amd_linux.go:296 msg=\"amdgpu too old gfx803\" gpu=0\n",
     "arch_mismatch", "generic-arch-line"),
    ("which should fix the error about gpu being too old on the RX 580\n", "arch_mismatch", "generic-arch-line"),
]


_DEV33_NEAR = [
    # near texts of dev33's rows: HCCL's timeout setting, a transport that came up, the loader's architecture key, a slot
    # with no task, TGI's line that prints the reply (the reply decides, not the span), uvicorn still starting behind
    # compose's prefix, systemd's clean exit and stop, a model READY in Triton's table
    ("Getting socket timeout from HCCL_CONNECT_TIMEOUT=7200\n", "incomplete"),
    ("HCCL transport init done for rank 3, links created\n", "incomplete"),
    ("llama_model_loader: - kv   0:                       general.architecture str              = llama\n", "incomplete"),
    ("srv  launch_slot_: no slot available, defer task, id_task = 5\n", "incomplete"),
    ("2024-06-24T08:36:33.109595Z DEBUG chat_completions{total_time=\"3.579822792s\" validation_time=\"37.872µs\" "
     "queue_time=\"47.079µs\" inference_time=\"3.579738091s\"}: text_generation_router::server: router/src/server.rs:321: "
     "Output: Paris is the capital of France.\n", "incomplete"),
    ("tgi-service  | INFO:     Waiting for application startup.\n", "incomplete"),
    ("systemd[1]: ollama.service: Main process exited, code=exited, status=0/SUCCESS\n", "incomplete"),
    ("systemd[1]: vllm.service: Main process exited, code=killed, status=15/TERM\n", "incomplete"),
    ("| llama     | 1       | READY  |\n", "incomplete"),
    # a stall denied; a repeated answer denied or fixed; OOM no longer reported, asked; a GPU refused no longer; a class
    # name of vLLM's NCCL wrapper in a traceback's code line is no NCCL error
    ("after the fix the request no longer stays in processing indefinitely\n", "incomplete"),
    ("# Repeated answer is fixed in 0.4.1\n", "incomplete"),
    ("there is no repeated answer once repetition_penalty is set\n", "incomplete"),
    ("把cache_max_entry_count调小之后不会报OOM了\n", "incomplete"),
    ("这是显存不足吗？\n", "incomplete"),
    ("msg=\"amdgpu is supported\" gpu=0 gpu_type=gfx1100\n", "incomplete"),
    ("ERROR 04-14 13:46:59 [multiproc_executor.py:857]     self.pynccl_comm = PyNcclCommunicator(\n", "other_crash"),
]


_DEV34_ROWS = [
    # torch's ncclUniqueId exchange through the c10d store failing (ProcessGroupNCCL.cpp broadcastUniqueNCCLID)
    ("torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
     "c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n", "nccl",
     "torch-nccl-uniqueid-store-failed"),
    ("[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from "
     "[0] via c10d key-value store by key '1:1', but store->get('1:1') got error: wait timeout after 600000ms\n",
     "nccl", "torch-nccl-uniqueid-store-failed"),
    # DeepEP's host-side timeouts (csrc/deep_ep.cpp)
    ("RuntimeError: DeepEP error: CPU recv timeout\n", "hang", "deepep-cpu-timeout"),
    ("[2025-06-01 10:00:00 TP3] Scheduler hit an exception: RuntimeError: DeepEP error: timeout (dispatch CPU)\n",
     "hang", "deepep-cpu-timeout"),
    # sgl-kernel's FA3 wrapper (python/sgl_kernel/flash_attn.py)
    ("ImportError: Can not import FA3 in sgl_kernel. Please check your installation.\n", "missing_kernel",
     "sgl-kernel-fa3-import-failed"),
    ("[2025-10-25 10:00:00] Ignore import error when loading sglang.srt.multimodal.processors.qwen_vl: Can not import "
     "FA3 in sgl_kernel. Please check your installation.\n", "missing_kernel", "sgl-kernel-fa3-import-failed"),
    # CPython's TypeError for missing arguments, quoted without its type (Python/ceval.c), weak
    ("the script stops with: load_model() missing 1 required positional argument: 'tp_rank'\n", "other_crash",
     "python-missing-required-argument"),
    ("__init__() missing 2 required keyword-only arguments: 'tp_group' and 'rank'\n", "other_crash",
     "python-missing-required-argument"),
    # FA3's Hopper kernels refused on a GPU without Hopper's resources (hopper/cuda_check.h CHECK_CUDA)
    ("CUDA error (/workspace/flash-attention/hopper/flash_fwd_launch_template.h:188): invalid argument\n",
     "arch_mismatch", "fa3-hopper-launch-invalid-argument"),
    ("CUDA error (/__w/vllm-flash-attn/csrc/hopper/flash_bwd_launch_template.h:301): invalid argument\n",
     "arch_mismatch", "fa3-hopper-launch-invalid-argument"),
    # SGLang's LMCache radix cache in MP mode without its config file
    ("ValueError: MP mode requires --lmcache-config-file (the YAML supplies mp_host / mp_port).\n", "arg_error",
     "sglang-lmcache-mp-needs-config-file"),
    # generic layer: an exception saying a flag is required; titles and Chinese naming OOM; OOM as a result; replies of
    # NULs; an SM not supported, kernels not working on a generation; a compile or build reported failing
    ("ValueError: --enable-dp-attention requires --tp-size to be a multiple of --dp-size\n", "arg_error",
     "generic-arg-error"),
    ("# [Bug] Llama 4 Scout out of memory on 8x H100\n", "oom", "generic-oom-title"),
    ("# OOM errors with long context on A100\n", "oom", "generic-oom-title"),
    ("部署 Qwen3-32B 时爆显存\n", "oom", "generic-oom-zh-line"),
    ("用 sglang 启动后显存不足，服务退出\n", "oom", "generic-oom-zh-line"),
    ("the KV cache keeps growing until it results in an OOM error\n", "oom", "generic-oom-line"),
    ("raising the batch size leads to out of memory on the second step\n", "oom", "generic-oom-line"),
    ("the model just returns a bunch of Unicode NULLs for every prompt\n", "garbage", "generic-garbage-report-line"),
    ("after the upgrade it outputs only null bytes\n", "garbage", "generic-garbage-report-line"),
    ("sgl-kernel does not support for sm_120 yet\n", "arch_mismatch", "generic-arch-line"),
    ("the prebuilt kernels are not working on Blackwell\n", "arch_mismatch", "generic-arch-line"),
    ("# sgl-kernel fails to compile on CUDA 12.9\n", "jit_error", "generic-jit-line"),
    ("running make build the compile of flash_ops failed\n", "jit_error", "generic-jit-line"),
    ("`pip install -e .` will fail on this machine\n", "jit_error", "generic-jit-line"),
    ("3. triton compiler error with the decode attention kernel\n", "jit_error", "generic-jit-line"),
]


_DEV34_NEAR = [
    # near texts of dev34's rows: NCCL set up, DeepEP's timeouts as settings, FA3 imported, a call with its arguments,
    # another CUDA error in FA3, LMCache with its file, a flag mentioned in INFO
    ("NCCL INFO comm 0x5581 rank 1 nranks 8 cudaDev 1 busId 1b000 - Init COMPLETE\n", "incomplete"),
    ("DeepEP normal mode: NUM_CPU_TIMEOUT_SECS = 100\n", "incomplete"),
    ("FA3 imported from sgl_kernel, using the fa3 attention backend\n", "incomplete"),
    ("load_model() takes the tp_rank argument since 0.5.4\n", "incomplete"),
    ("Using --lmcache-config-file /etc/lmcache.yaml (MP mode)\n", "incomplete"),
    ("INFO: speculative decoding requires --speculative-draft-model-path to be set for EAGLE\n", "incomplete"),
    # titles about OOM handling, a build's OOM (the OOM killer's), OOM avoided; nulls in JSON; an SM supported; kernels
    # working; a build that succeeded
    ("# Fix OOM when loading long-context models\n", "incomplete"),
    ("# Add OOM detection to the scheduler\n", "incomplete"),
    ("# Out-of-memory when building the wheel from source\n", "incomplete"),
    ("this setting does not lead to OOM anymore\n", "incomplete"),
    ("显存占用 40GB，运行正常\n", "incomplete"),
    ("the API returns nulls for the optional fields\n", "incomplete"),
    ("sgl-kernel now supports sm_120 and sm_121\n", "incomplete"),
    ("the kernels are working on Blackwell since 0.3.10\n", "incomplete"),
    ("The build does not fail to compile anymore\n", "incomplete"),
    ("make build finished in 42 minutes\n", "incomplete"),
]


_DEV35_ROWS = [
    # ONNX Runtime's Python binding failing to create a GPU provider (onnxruntime_pybind_state.cc
    # CreateExecutionProviderInstance): the provider's library did not load; weak, the session runs on the CPU
    ("2023-07-31 14:22:06.483132863 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:640 "
     "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please reference "
     "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements to ensure all "
     "dependencies are met.\n", "import_error", "onnxruntime-execution-provider-not-created"),
    ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:1055 onnxruntime::python::CreateExecutionProviderInstance] "
     "Failed to create TensorrtExecutionProvider. Please reference "
     "https://onnxruntime.ai/docs/execution-providers/TensorRT-ExecutionProvider.html#requirements to ensure all "
     "dependencies are met.\n", "import_error", "onnxruntime-execution-provider-not-created"),
    ("Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest MSVC runtime. Please "
     "install all dependencies as mentioned in the GPU requirements page\n", "import_error",
     "onnxruntime-execution-provider-not-created"),
    ("RuntimeError: CUDA_PATH is set but CUDA wasn't able to be loaded. Please install the correct version of CUDA and "
     "cuDNN as mentioned in the GPU requirements page\n", "import_error", "onnxruntime-execution-provider-not-created"),
    # bitsandbytes' older set-up raising when no compiled library exists (cuda_setup/main.py run_cuda_setup)
    ("CUDA SETUP: Something unexpected happened. Please compile from source:\ngit clone "
     "https://github.com/TimDettmers/bitsandbytes.git\ncd bitsandbytes\nCUDA_VERSION=117 make cuda11x\npython "
     "setup.py install\nCUDA SETUP: Setup Failed!\n", "missing_kernel", "bitsandbytes-cuda-setup-exception"),
    ("Exception importing 8bit adam: CUDA SETUP: Setup Failed!\n", "missing_kernel",
     "bitsandbytes-cuda-setup-exception"),
    # ... and its fallback warning with 0.37-0.38's CPU library name ('libsbitsandbytes_cpu.so', evaluate_cuda_setup)
    ("CUDA SETUP: Required library version not found: libsbitsandbytes_cpu.so. Maybe you need to compile it from "
     "source?\nCUDA SETUP: Defaulting to libbitsandbytes_cpu.so...\n", "missing_kernel",
     "bitsandbytes-cuda-setup-failed"),
    # PyTorch's SDPA dispatch finding no enabled kernel (sdp_utils.cpp select_sdp_backend; attention.cu in 2.5+)
    ("    out = F.scaled_dot_product_attention(\nRuntimeError: No available kernel.  Aborting execution.\n",
     "missing_kernel", "torch-sdpa-no-available-kernel"),
    ("RuntimeError: No viable backend for scaled_dot_product_attention was found.\n", "missing_kernel",
     "torch-sdpa-no-available-kernel"),
    # a run reported stalling or frozen at a training stage (the hang report's own lines)
    ("# Multi-GPU Training frozen after finishing first epoch\n", "hang", "generic-hang-report-line"),
    ("When I run the pretraining script it stalls at the end of the first epoch.\n", "hang",
     "generic-hang-report-line"),
    ("the job stalled after 3 iterations, GPU util at 100%\n", "hang", "generic-hang-report-line"),
    ("the training process was frozen during evaluation, nothing in the logs\n", "hang", "generic-hang-report-line"),
    # a title naming memory running out in its CamelCase spelling (TensorRT's 'Error Code 2: OutOfMemory')
    ("# OutOfMemory during engine generation process\n", "oom", "generic-oom-title"),
]


_DEV35_NEAR = [
    # near texts of dev35's rows: ONNX Runtime's providers listed or created, bitsandbytes loading its binary, SDPA's
    # reasons as warnings, layers frozen, a stall setting, an install line, OutOfMemory handled
    ("['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']\n", "incomplete"),
    ("Failed to create the output directory, using /tmp instead\n", "incomplete"),
    ("CUDA_PATH is set to /usr/local/cuda-12.4\n", "incomplete"),
    ("CUDA SETUP: Loading binary /usr/lib/python3/site-packages/bitsandbytes/libbitsandbytes_cuda117.so...\n",
     "incomplete"),
    ("UserWarning: Flash attention kernel not used because: (Triggered internally at sdp_utils.cpp:545.)\n",
     "incomplete"),
    ("the backbone is frozen during the first 5 epochs, then unfrozen\n", "incomplete"),
    ("embedding layers frozen at epoch 0 by design\n", "incomplete"),
    ("the stall detector checks the ranks at the end of each epoch\n", "incomplete"),
    ("Successfully installed bitsandbytes-0.41.1 onnxruntime-gpu-1.16.0\n", "incomplete"),
    ("# Handle OutOfMemory during engine generation gracefully\n", "incomplete"),
    ("it did not stall at the end of the epoch this time\n", "incomplete"),
]


_DEV36_ROWS = [
    # Vulkan's out-of-device-memory result (TVM's VULKAN_CHECK_ERROR, Vulkan-Hpp's OutOfDeviceMemoryError)
    ("Check failed: (__e == VK_SUCCESS) is false: Vulkan Error, code=-2: VK_ERROR_OUT_OF_DEVICE_MEMORY\n", "oom",
     "vulkan-out-of-device-memory"),
    ("terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'\n"
     "  what():  vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n", "oom", "vulkan-out-of-device-memory"),
    # Triton <= 20.x's gRPC endpoint started (grpc_server.cc GRPCServer::Start): the server is up
    ("I1204 08:17:45.082233 1 grpc_server.cc:1939] Started GRPCService at 0.0.0.0:8001\n"
     "I1204 08:17:45.082251 1 http_server.cc:1411] Starting HTTPService at 0.0.0.0:8000\n", "ready", None),
    # degenerate replies reported: garbled characters, a reply repeating the prompt, in Chinese garbled or repeated output
    ("When conducting conversations after startup, garbled characters are used in both Chinese and English\n", "garbage",
     "generic-garbage-report-line"),
    ("The answer repeated instruction when I user turbomind chat with Llama2\n", "garbage", "generic-garbage-report-line"),
    ("# LMDeploy部署启动的模型，输出效果乱码\n", "garbage", "generic-garbage-report-line"),
    ("调用接口之后回答出现乱码\n", "garbage", "generic-garbage-report-line"),
    ("1. 重复输出\n", "garbage", "generic-garbage-report-line"),
    ("不过会出现重复回答的问题，出现频率有点高。\n", "garbage", "generic-garbage-report-line"),
    # a crash told in prose, also after the server served (the crash-report family reads past readiness)
    ("Crash llama-server, I am Using @Build No Latest\n", "other_crash", "generic-crash-report-line"),
    ("main: server is listening on http://127.0.0.1:8080 - starting the main loop\n"
     "slot launch_slot_: id  0 | task 0 | processing task, is_child = 0\n"
     "then the server randomly crashes after a few requests\n", "other_crash", "generic-crash-report-line"),
    # LocalAI's greedy loader failing a backend, its backend's gRPC service never up, every backend failed (initializers.go)
    ("1:04PM INF [llama-cpp] Fails: grpc service not ready\n", "other_crash", "localai-backend-load-failed"),
    ('1:03PM ERR failed starting/connecting to the gRPC service error="rpc error: code = Unavailable desc = connection '
     'error"\n', "other_crash", "localai-backend-load-failed"),
    ("10:29AM DBG [/build/backend/python/vllm/run.sh] Fails: could not load model: rpc error: code = Unknown desc = "
     "Exception calling application: CUDA not found\n", "other_crash", "localai-backend-load-failed"),
    # sgl-router's startup wait past its timeout (router.rs wait_for_healthy_workers), and its pending notice reported as lasting
    ('[Router (Rust)] 2025-03-08 02:38:09 - ERROR - Timeout 300s waiting for workers ["http://0.0.0.0:31000"] to become '
     "healthy. Please set --router-worker-startup-timeout-secs (sglang_router.launch_server) or --worker-startup-timeout-secs "
     "(sglang_worker.router) to a larger value\n", "hang", "router-worker-startup-timeout"),
    ("the router keeps printing 'health check is pending with error: connection refused' and gives up after 300 seconds\n",
     "hang", "generic-hang-report-line"),
    # a shared library reported absent or missing (the dynamic loader's refusal told in prose)
    ("But now llama-server shutting down because of absence of libcudart.so.12.\n", "import_error", "generic-import-line"),
    ("the official image is missing libcuda.so.1, so the runner exits\n", "import_error", "generic-import-line"),
    # gpt4all's C API refusing a model file's format (llmodel_c.cpp llmodel_model_create2)
    ("9:38PM DBG GRPC(phi-2.Q8_0.gguf-127.0.0.1:46517): stderr load_model: error 'Model format not supported (no matching "
     "implementation found)'\n", "other_crash", "gpt4all-model-format-not-supported"),
    ("ValueError: Unable to instantiate model: Model format not supported (no matching implementation found)\n",
     "other_crash", "gpt4all-model-format-not-supported"),
]


_DEV36_NEAR = [
    # near texts of dev36's rows: Vulkan's other results, a device memory figure; Triton's endpoints not started; garbling
    # denied or asked about, a reply repeated on purpose, Chinese denials; crashes denied, a crash handler; the ready line
    # quoted in a report (not a server's own line)
    ("Check failed: (__e == VK_SUCCESS) is false: Vulkan Error, code=-4: VK_ERROR_DEVICE_LOST\n", "other_crash"),
    ("ggml_vulkan: 0 = NVIDIA GeForce RTX 3060 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32 | device memory 12288 MB\n",
     "incomplete"),
    ("I1204 08:17:45.082251 1 http_server.cc:1411] Starting HTTPService at 0.0.0.0:8000 failed\n", "incomplete"),
    ("there are no garbled characters in the output anymore\n", "incomplete"),
    ("the client repeats the prompt in the request log\n", "incomplete"),
    ("输出没有乱码，结果正常\n", "incomplete"),
    ("是不是会出现重复输出？\n", "incomplete"),
    ("关掉之后不会出现重复回答\n", "incomplete"),
    ("the server does not crash anymore with --no-mmap\n", "incomplete"),
    ("Crash handler installed for the llama-server process\n", "incomplete"),
    ("all 8 workers say 'The server is fired up and ready to roll!', but the router never becomes ready\n",
     "incomplete"),
    ("[2025-03-07 09:25:40] The server is fired up and ready to roll!\n", "ready"),
    # LocalAI: a backend failing, then another loading the model for the request (a served request, not a failure)
    ("6:36PM INF [llama-cpp] Fails: could not load model: rpc error: code = Canceled desc =\n"
     "6:36PM INF [llama-ggml] Attempting to load\n6:36PM INF [llama-ggml] Loads OK\n", "ready"),
    ("Tests passed: 12, Fails: 0\n", "incomplete"),
    # sgl-router still waiting (its pending notice alone), a timeout setting printed
    ("[Router (Rust)] 2025-03-08 02:33:09 - INFO - Worker http://0.0.0.0:31000 health check is pending with error: error "
     "sending request for url (http://0.0.0.0:31000/health)\n", "incomplete"),
    ("router config: worker_startup_timeout_secs=600, waiting for workers to become healthy\n", "incomplete"),
    # a library present, its absence denied
    ("found libcudart.so.12 in /usr/local/cuda/lib64\n", "incomplete"),
    ("the crash is not because of absence of libcudart.so.12\n", "incomplete"),
    ("gpt4all: model format supported: GGUF v3 (found implementation llamamodel-mainline-cuda)\n", "incomplete"),
]


_DEV31_ROWS = [
    # NVSHMEM's start-up failing to connect its peers (src/host/init/init.cu, src/host/transport/transport.cpp), the
    # layer above the transports' own errors
    ("/sgl-workspace/nvshmem/src/host/transport/transport.cpp:400: non-zero status: 7 \nconnect EPS failed \n",
     "nccl", "nvshmem-init-connect-failed"),
    ("/sgl-workspace/nvshmem/src/host/init/init.cu:1007: non-zero status: 7 nvshmem setup connections failed \n",
     "nccl", "nvshmem-init-connect-failed"),
    ("NVSHMEM API called before NVSHMEM initialization has completed\n", "nccl", "nvshmem-init-connect-failed"),
    # c10d's store socket waiting past its timeout (torch/csrc/distributed/c10d/socket.cpp), above the scheduler's crash
    ("[rank1]:[W623 15:37:01.824135523 socket.cpp:485] [c10d] waitForInput: socket SocketImpl(fd=100, "
     "addr=[node-0]:43590, remote=[node-0]:20000) timed out after 1800000ms\n"
     "[2025-06-23 15:37:01 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
     '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2546, in run_scheduler_process\n',
     "hang", "c10d-store-socket-wait-timeout"),
    ("[W410 21:36:52.177160212 socket.cpp:485] [c10d] waitForInput: socket timed out after 300000ms\n", "hang",
     "c10d-store-socket-wait-timeout"),
    # a Go program's child ended by SIGILL (os/exec_posix.go ProcessState.String), not the GPU's illegal instruction
    ("Error: llama runner process has terminated: signal: illegal instruction (core dumped)\n", "other_crash",
     "go-exec-signal-sigill"),
    ("the logs say `llama runner stopped with error: signal: illegal instruction (core dumped)`\n", "other_crash",
     "go-exec-signal-sigill"),
    # Triton's loader not finding a backend's file for a model (core src/backend_model.cc)
    ("failed to load 'tensorrt_llm' version 2: Invalid argument: unable to find 'tensorrtllm/model.py' for model "
     "'tensorrt_llm', in /opt/tritonserver/backends/tensorrtllm\n", "missing_kernel", "generic-missing-kernel-line"),
    ("E0101 model_lifecycle.cc:626] failed to load 'vllm_model' version 1: Invalid argument: unable to find "
     "'libtriton_vllm.so' for model 'vllm_model', in /opt/tritonserver/backends/vllm\n", "missing_kernel",
     "generic-missing-kernel-line"),
    # a title naming memory running out at a launch's stage
    ("# LLama 70B build engine OOM\n", "oom", "generic-oom-line"),
    ("# [Bug] model loading OOM on 2x A100\n", "oom", "generic-oom-line"),
    # ggml's assertion abort named in a report without its expression, below the printed line's own row
    ("# Bug: GGML_ASSERT failed at first prompt\n", "other_crash", "ggml-assert-reported"),
    ("src/llama.cpp:3504: GGML_ASSERT(cell.has_seq_id(seq_id)) failed\n", "other_crash", "ggml-assert"),
]


_DEV31_NEAR = [
    # near texts of dev31's rows: NVSHMEM connecting, c10d polling without a timeout, Go's other signals and the GPU's
    # illegal instruction, a model found, OOM fixed or avoided
    ("NVSHMEM INFO nvshmem setup connections done\n", "incomplete"),
    ("[W socket.cpp:460] [c10d] waitForInput: poll for socket SocketImpl(fd=5) failed with res=1, err=4.\n",
     "incomplete"),
    ("runner stopped: signal: killed\n", "killed"),
    ("RuntimeError: CUDA error: an illegal instruction was encountered\n", "illegal_memory"),
    ("I0120 08:28:09.425626 model_lifecycle.cc:838] successfully loaded 'tensorrt_llm' version 1 from "
     "/models/tensorrt_llm/1/model.py\n", "incomplete"),
    ("# Fix OOM during engine build\n", "incomplete"),
    ("# Engine build no longer OOM with --max-batch-size 8\n", "incomplete"),
    ("# The loading step is OOM-killer safe now\n", "incomplete"),
    ("the GGML_ASSERT fails to trigger in debug builds\n", "incomplete"),
]


_DEV37_ROWS = [
    # LLVM's report_fatal_error ('LLVM ERROR: ' + reason, then exit): a kernel's code generation failed (Triton's backend)
    ("LLVM ERROR: Failed to compute parent layout for slice layout.\n", "jit_error", "llvm-fatal-error"),
    ("LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32\n", "jit_error", "llvm-fatal-error"),
    ("(EngineCore_DP0 pid=812) LLVM ERROR: Failed to compute parent layout for slice layout.\n"
     "ERROR 05-31 09:09:48 [client.py:305] RuntimeError('Engine process (pid 65262) died.')\n", "jit_error",
     "llvm-fatal-error"),
    # Ray Serve's controller: a replica's (or proxy's) health check past health_check_timeout_s
    ("(ServeController pid=1758) WARNING 2025-06-25 04:39:50,123 controller 1758 -- Didn't receive health check response "
     "for replica Replica(id='rut1591v', deployment='vLLM:Qwen--Qwen3-32B', app='RayServeApp') after 10.0s, marking it "
     "unhealthy.\n", "hang", "ray-serve-health-check-timeout"),
    ("INFO 2023-08-01 10:00:00,000 controller 412 deployment_state.py:1234 - Didn't receive health check response for "
     "replica default#LLMDeployment#xkcd after 30s, marking it unhealthy.\n", "hang", "ray-serve-health-check-timeout"),
    ("WARNING 2024-05-02 11:22:33,444 controller 77 -- Didn't receive health check response for proxy 9f3a2b after "
     "10.0s, marking it unhealthy.\n", "hang", "ray-serve-health-check-timeout"),
    # vLLM V1's FlashAttention backend asserting the FA version is supported on this GPU (the traceback's source line)
    ("  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/flash_attn.py\", line 156, in __init__\n"
     "    assert is_fa_version_supported(self.fa_version)\nAssertionError\n", "arch_mismatch",
     "vllm-fa-version-unsupported-assert"),
    ("ERROR 02-17 20:51:49 core.py:210]     assert is_fa_version_supported(self.fa_version)\n"
     "ERROR 02-17 20:51:49 core.py:210]            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
     "ERROR 02-17 20:51:49 core.py:210] AssertionError\n", "arch_mismatch", "vllm-fa-version-unsupported-assert"),
    # Kubernetes' terminated-container status with exit code 137 (kubectl get -o yaml, KServe's lastFailureInfo)
    ("    state:\n      terminated:\n        containerID: containerd://3e30114e2a7f\n        exitCode: 137\n"
     "        finishedAt: \"2025-05-14T10:02:11Z\"\n", "killed", "generic-killed-line"),
    ("      lastFailureInfo:\n        exitCode: 137\n        message: |\n"
     "          I0730 13:42:15.149528 1 tensorflow.cc:1889] Triton TRITONBACKEND API version: 1.0\n", "killed",
     "generic-killed-line"),
    ("    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    137\n", "killed", "generic-killed"),
    # an import error named in words (a title, a failure line)
    ("# v0.6.1 fails to launch with sgl_kernel import error\n", "import_error", "generic-import-title"),
    ("RuntimeError: import errors were found in 2 modules\n", "import_error", "generic-import"),
]

_DEV37_NEAR = [
    # near texts of dev37's rows: LLVM's out-of-memory handler, a fix's title, a build line; Ray Serve's other health
    # lines and advice quoting the message; the FA check in code; other exit codes; import errors fixed or gone, and
    # vLLM's one-word ImportError warning
    ("LLVM ERROR: out of memory\nAllocation failed\n", "oom"),
    ("# Fix LLVM ERROR when compiling fp8 kernels\n", "other_crash"),
    ("-- Found LLVM 17.0.6 for the Triton build\n", "incomplete"),
    ("(ServeController pid=1758) INFO 2025-06-25 04:41:12,001 controller 1758 -- Replica(id='abcd1234', "
     "deployment='vLLM:Qwen--Qwen3-32B', app='RayServeApp') started successfully on node 'n1' after 95.1s.\n",
     "incomplete"),
    ("Set health_check_timeout_s higher if you see \"Didn't receive health check response\" in the controller log\n",
     "incomplete"),
    ("    if not is_fa_version_supported(fa_version):\n", "incomplete"),
    ("        exitCode: 1\n        finishedAt: \"2025-05-14T10:02:11Z\"\n", "incomplete"),
    ("      Exit Code:    0\n      Reason:       Completed\n", "incomplete"),
    ("        exitCode: 1370\n", "incomplete"),
    ("# Fix import error in the launcher\n", "incomplete"),
    ("The import error is gone after reinstalling sglang\n", "incomplete"),
    ("WARNING 01-01 12:00:00 [_custom_ops.py:14] Failed to import from vllm._C with ImportError('libcudart.so.11.0: "
     "cannot open shared object file: No such file or directory')\n", "incomplete"),
]

_DEV38_ROWS = [
    # Rust's std backtrace printer: full-mode frames ('{i:4}: {addr:18} - {symbol}') and the source-location lines under
    # them ('at <path>.rs:line:col'), as a panic or an anyhow error prints them without the panic line
    ("stack backtrace:\n   0:     0x7f3b2c1e4a10 - std::backtrace_rs::backtrace::libunwind::trace::h5f1c4d2e9b7a6c3d\n"
     "                               at /rustc/90c541806f23a127002de5b4038be731ba1458ca/library/std/src/../../backtrace/src/"
     "backtrace/libunwind.rs:93:5\n", "other_crash", "rust-backtrace-frame"),
    ("   3: core::result::unwrap_failed\n             at /rustc/a28077b28a02b92985b3a3faecf92813155f1ea1/library/core/src/"
     "result.rs:1652:5\n", "other_crash", "rust-backtrace-frame"),
    ("mistralrs-1  |   12:     0x55d1c0a4b3f2 - mistralrs_core::pipeline::inputs_processor::h1a2b3c4d5e6f7a8b\n",
     "other_crash", "rust-backtrace-frame"),
    ("  10: dtparse::Parser::parse\n             at /home/user/.cargo/git/checkouts/dtparse-4231ce982140a2f6/065eba8/src/"
     "lib.rs:1043\n", "other_crash", "rust-backtrace-frame"),
    # macOS's strsignal ('<description>: <number>') in the shell's job report
    ("/Users/me/run.sh: line 3:  4242 Segmentation fault: 11  python -m mlx_lm.server --model mlx-community/Mistral-7B\n",
     "other_crash", "macos-fatal-signal"),
    ("loading model...\nAbort trap: 6\n", "other_crash", "macos-fatal-signal"),
    ("[1]    4242 Bus error: 10     ./llama-server -m model.gguf\n", "other_crash", "macos-fatal-signal"),
    ("Illegal instruction: 4\n", "other_crash", "macos-fatal-signal"),
    ("[1]    4242 Killed: 9     python server.py --port 8000\n", "killed", "macos-killed"),
    # HotSpot's native memory failures
    ("OpenJDK 64-Bit Server VM warning: INFO: os::commit_memory(0x00000000eaaa0000, 178978816, 0) failed; "
     "error='Cannot allocate memory' (errno=12)\n", "oom", "jvm-native-memory-exhausted"),
    ("#\n# There is insufficient memory for the Java Runtime Environment to continue.\n# Native memory allocation (mmap) "
     "failed to map 986513408 bytes for committing reserved memory.\n", "oom", "jvm-native-memory-exhausted"),
    ("# Native memory allocation (malloc) failed to allocate 4088 bytes for AllocateHeap\n", "oom",
     "jvm-native-memory-exhausted"),
    # CUDA's PTX JIT errors (cudaGetErrorString, CUresult names)
    ("CUDA error 222 at /home/runner/work/ctransformers/ctransformers/models/ggml/ggml-cuda.cu:6045: the provided PTX was "
     "compiled with an unsupported toolchain.\n", "jit_error", "cuda-ptx-jit-failed"),
    ("RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.\nCUDA kernel errors might be "
     "asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n", "jit_error",
     "cuda-ptx-jit-failed"),
    ("cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX\n", "jit_error", "cuda-ptx-jit-failed"),
    ("Error: cudaErrorJitCompilerNotFound: PTX JIT compiler library not found\n", "jit_error", "cuda-ptx-jit-failed"),
    # llama-swap's start-up health check past its timeout (both spellings), and a script's own
    ("[ERROR] unable to start process: health check timed out after 5m0s\n", "hang", "llama-swap-health-check-timeout"),
    ("error starting upstream qwen: health check failed after 120s\n", "hang", "llama-swap-health-check-timeout"),
    ("Health check failed after 300s\n", "hang", "llama-swap-health-check-timeout"),
    # llama.cpp's server main loop and slot choice behind the timestamped log prefix, and its 2025-26 listening line
    ("0.06.582.356 I srv  llama_server: model loaded\n0.06.582.362 I srv  llama_server: server is listening on "
     "http://0.0.0.0:8000\n0.06.582.368 I srv  update_slots: all slots are idle\n", "ready", None),
    ("srv  update_slots: all slots are idle\n", "ready", None),
    ("1.07.002.103 I slot get_availabl: id  0 | task -1 | selected slot by LRU, t_last = -1\n", "ready", None),
    ("0.02.762.494 I srv  llama_server: listening on http://127.0.0.1:8080\n", "ready", None),
    # KoboldCpp's line once its model loaded, before its bind
    ("Load Text Model OK: True\nEmbedded KoboldAI Lite loaded.\nStarting Kobold API on port 5001 at "
     "http://localhost:5001/api/\n======\nPlease connect to custom endpoint at http://localhost:5001\n", "ready", None),
    # Ollama's 2024 notice skipping a GPU too old for its CUDA build
    ('time=2024-01-20T10:00:00.000Z level=INFO source=gpu.go:128 msg="CUDA GPU is too old. Falling back to CPU mode. '
     'Compute Capability detected: 5.0"\n', "arch_mismatch", "generic-arch-line"),
    # a process reported ending unexpectedly; a model reported repeating itself; a stall in the past tense
    ("After an hour the llama runner terminated unexpectedly.\n", "other_crash", "generic-crash-report-line"),
    ("The server exited unexpectedly while loading the second model.\n", "other_crash", "generic-crash-report-line"),
    ("# Model keeps repeating itself after 2k tokens\n", "garbage", "generic-garbage-report-line"),
    ("Sometimes the output repeats itself until max_tokens.\n", "garbage", "generic-garbage-report-line"),
    ("I left it overnight and the engine hanged at step 3.\n", "hang", "generic-hang-report-line"),
    # Go's signal line of a panic caused by a signal (runtime/panic.go dopanic_m)
    ("[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x7f2c1a3b4c5d]\n", "other_crash", "go-runtime-crash"),
    ("time=2024-11-11T08:26:09.112Z level=INFO source=server.go:632 msg=\"llama runner started\"\n"
     "SIGSEGV: segmentation violation\nPC=0x7f8a2c4e1d30 m=5 sigcode=1 addr=0x8\n"
     "[signal SIGSEGV: segmentation violation code=0x1 addr=0x8 pc=0x7f8a2c4e1d30]\n", "other_crash", "go-runtime-crash"),
    # the JVM: a stack trace's frames, HotSpot's fatal error report
    ("\tat ai.djl.serving.wlm.WorkerThread.run(WorkerThread.java:158)\n\tat java.base/java.lang.Thread.run(Thread.java:829)\n",
     "other_crash", "java-stack-frame"),
    ("        at org.pytorch.serve.wlm.Model.pollBatch(Model.java:155)\n", "other_crash", "java-stack-frame"),
    ("\tat sun.misc.Unsafe.park(Native Method)\n", "other_crash", "java-stack-frame"),
    ("#\n# A fatal error has been detected by the Java Runtime Environment:\n#\n#  SIGSEGV (0xb) at pc=0x00007f8e1c2d3e4f, "
     "pid=1, tid=42\n", "other_crash", "jvm-fatal-error"),
    # Rust's allocation failure abort; Windows' faulthandler; Node's uncaught exception report
    ("memory allocation of 8589934592 bytes failed\nAborted (core dumped)\n", "oom", "rust-alloc-failed"),
    ("2024-05-01T10:00:00.000Z ERROR text_generation_launcher: memory allocation of 17179869184 bytes failed\n", "oom",
     "rust-alloc-failed"),
    ("Windows fatal exception: access violation\n\nThread 0x00002a3c (most recent call first):\n", "other_crash",
     "faulthandler-windows-exception"),
    ("Windows fatal exception: stack overflow\n", "other_crash", "faulthandler-windows-exception"),
    ("node:events:496\n      throw er; // Unhandled 'error' event\n      ^\n", "other_crash", "node-uncaught-exception"),
    ("    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n\nNode.js v18.19.0\n",
     "other_crash", "node-uncaught-exception"),
    # libc++abi's terminate handler and Rust's runtime abort as failure lines (the families read their messages)
    ("libc++abi: terminating due to uncaught exception of type std::runtime_error: failed to open model file\n",
     "other_crash", "generic-failure-line"),
    ("libc++abi.dylib: terminating with uncaught exception of type std::runtime_error: CUDA error: out of memory\n", "oom",
     "torch-cuda-oom"),
    ("thread 'tokio-runtime-worker' has overflowed its stack\nfatal runtime error: stack overflow\n", "other_crash",
     "generic-failure-line"),
    # the word gibberish (and its misspellings) in a report, replies all exclamation marks in Chinese, a model producing
    # repeated tokens
    ("Jibberish output on the new quant.\n", "garbage", "generic-garbage-report-line"),
    ("With greedy decoding the gibberish is the same every run\n", "garbage", "generic-garbage-report-line"),
    ("本地运行后，模型返回的内容全是感叹号\n", "garbage", "generic-garbage-report-line"),
    ("After 20k tokens the model generates endless repeating special tokens.\n", "garbage", "generic-garbage-report-line"),
    # Ollama's runner failing after the server listens: the reaper's line; a Go panic (fatal: counted after serving too)
    ('time=2025-01-01T10:00:00.000Z level=INFO source=routes.go:1238 msg="Listening on 127.0.0.1:11434 (version 0.5.7)"\n'
     'time=2025-01-01T10:00:09.565Z level=ERROR source=server.go:449 msg="llama runner terminated" error="exit status 2"\n',
     "other_crash", "ollama-runner-terminated"),
    ('time=2025-01-01T10:00:00.000Z level=INFO source=routes.go:1238 msg="Listening on 127.0.0.1:11434 (version 0.5.7)"\n'
     "panic: runtime error: invalid memory address or nil pointer dereference\n"
     "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x55d4c3a1b2c3]\n", "other_crash", "go-runtime-crash"),
    # OOM as a verb or as what the program reported; 'be killed' without its auxiliary; repetition in Chinese
    ("After a few hundred requests the server OOMs and restarts.\n", "oom", "generic-oom-line"),
    ("It went OOM on the second GPU while capturing graphs.\n", "oom", "generic-oom-line"),
    ("With tp=8 the engine reports OOM during warmup.\n", "oom", "generic-oom-line"),
    ("Loading the shards gets to 40%, then the worker be killed\n", "killed", "generic-killed-line"),
    ("用vllm部署后模型一直重复同一句话\n", "garbage", "generic-garbage-report-line"),
    ("量化后推理吐字重复\n", "garbage", "generic-garbage-report-line"),
    # mlx-lm's server once its model loaded and the socket is bound
    ("2025-02-01 10:00:00,123 - INFO - Starting httpd at 127.0.0.1 on port 8080...\n", "ready", None),
    # the JVM's heap running out, named as its OutOfMemoryError names it
    ("The model server crashes with Java heap space errors after an hour.\n", "oom", "generic-oom-line"),
    ("TorchServe's frontend ran out of heap space under load\n", "oom", "generic-oom-line"),
]

_DEV38_NEAR = [
    # near texts of dev38's rows: a Rust path on a healthy router line, a rustc location, hex that is no frame, prose
    # naming a file; signal numbers that are not macOS's report; the JVM's other commit failures and notes; PTX notes;
    # health checks counted in attempts or passed; llama.cpp's 2024 listener before its model loaded and a sentence naming
    # KoboldCpp's line; Ollama's fallback without its notice; a title's word after 'instead of'; denied endings, a
    # connection closing, a model that does not repeat, a stall denied
    ("2024-04-23T08:20:48.209311Z  INFO text_generation_router::server: router/src/server.rs:1750: Connected\n", "ready"),
    ("  --> src/main.rs:4:18\n", "incomplete"),
    ("  12: 0x1f - ok\n", "incomplete"),
    ("ptr: 0x7ffd5e3c - allocated 4096 bytes\n", "incomplete"),
    ("the handler is documented at src/lib.rs:12:5\n", "incomplete"),
    ("Segmentation fault: 110 handlers registered\n", "incomplete"),
    ("Killed: 90 tasks processed\n", "incomplete"),
    ("OpenJDK 64-Bit Server VM warning: INFO: os::commit_memory(0x00000000c5330000, 986513408, 0) failed; "
     "error='Operation not permitted' (errno=1)\n", "incomplete"),
    ("INFO: os::commit_memory succeeded for the 1 GB heap\n", "incomplete"),
    ("nvcc -arch=sm_89 -o gemm gemm.cu  # emits SASS, so no PTX JIT at load time\n", "incomplete"),
    ("ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'\n", "incomplete"),
    ("Health check failed after 3 attempts, retrying\n", "incomplete"),
    ("[INFO] <llama> Health check passed on http://localhost:9001/health\n", "incomplete"),
    ("healthCheckTimeout: 300\n", "incomplete"),
    ("main: HTTP server is listening, hostname: 127.0.0.1, port: 8080, http threads: 11\nmain: loading model\n",
     "incomplete"),
    ("Once KoboldCpp prints 'Please connect to custom endpoint at http://localhost:5001' you can open the UI\n",
     "incomplete"),
    ("Falling back to CPU mode.\n", "incomplete"),
    ("# Pod wedges instead of being OOM-killed\n", "incomplete"),
    ("The server never exited unexpectedly in our tests.\n", "incomplete"),
    ("The client connection closed unexpectedly\n", "incomplete"),
    ("The model does not repeat itself anymore.\n", "incomplete"),
    ("It never hanged on 0.4.2.\n", "incomplete"),
    # near texts of the second batch: a signal named in a setting, a JavaScript frame, a Java frame's text in prose, the
    # report's advice, an allocation that succeeded, faulthandler's code for a caught C++ exception, Node's version
    # printed by a tool, libc++abi named in a build line
    ("signal SIGSEGV will be forwarded to the runner\n", "incomplete"),
    ("    at Object.<anonymous> (/app/index.js:5:3)\n", "incomplete"),
    ("The frame at Model.java line 155 polls the batch queue\n", "incomplete"),
    ("Report a bug if a fatal error report appears in hs_err_pid.log\n", "incomplete"),
    ("memory allocation of 1048576 bytes succeeded\n", "incomplete"),
    ("Windows fatal exception: code 0xe06d7363\n", "incomplete"),
    ("Detected Node.js v20.12.2 (npm 10.5.0)\n", "incomplete"),
    ("-- Linking CXX shared library libllama.so against libc++abi\n", "incomplete"),
    # near texts of the third batch: gibberish denied or gone, a repetition setting, exclamation marks not all of a reply,
    # Ollama's listener quoted in prose, a handler's panic Gin's Recovery caught while the server served
    ("No gibberish anymore after upgrading.\n", "incomplete"),
    ("It isn't gibberish anymore.\n", "incomplete"),
    ("repetition_penalty penalizes repeated tokens in the output\n", "incomplete"),
    ("回答里没有感叹号\n", "incomplete"),
    ("Wait until the log says Listening on 127.0.0.1:11434, then pull the model\n", "incomplete"),
    ("2025/05/27 13:56:42 [Recovery] 2025/05/27 - 13:56:42 panic recovered:\n"
     "runtime error: invalid memory address or nil pointer dereference\n"
     "[GIN] 2025/05/27 - 13:56:50 | 200 |  2.104s |  127.0.0.1 | POST     \"/api/chat\"\n", "ready"),
    # OOM asked about, denied, or the OOM killer's; a kill foretold; repetition denied
    ("Does it still go OOM with the smaller batch?\n", "incomplete"),
    ("It never OOMs on the A100.\n", "incomplete"),
    ("the process will be killed if it exceeds the limit\n", "incomplete"),
    ("新版本不会一直重复了\n", "incomplete"),
    # llama.cpp's early-2024 server, which bound its port before loading the model (dev23): no readiness
    ("llama server listening at http://127.0.0.1:8080\n\nllama_model_loader: loaded meta data with 19 key-value pairs\n",
     "incomplete"),
    ("No heap space errors since the upgrade.\n", "incomplete"),
    ("Set -Xmx to give the JVM more heap space\n", "incomplete"),
]

_DEV39_ROWS = [
    # Ollama's listener as journalctl shows a systemd service's lines (short and short-iso formats)
    ('Jan 08 11:29:03 gpu-box ollama[1234]: time=2025-01-08T11:29:03.590-06:00 level=INFO '
     'source=routes.go:1310 msg="Listening on 127.0.0.1:11434 (version 0.5.4)"\n', 'ready', None),
    ('Mar  3 09:15:22 server1 ollama[998]: time=2024-03-03T09:15:22.101Z level=INFO '
     'source=routes.go:1100 msg="Listening on [::]:11434 (version 0.1.27)"\n', 'ready', None),
    ('2025-06-01T10:00:00+0000 node7 ollama[42]: time=2025-06-01T10:00:00.000Z level=INFO '
     'source=routes.go:1234 msg="Listening on 0.0.0.0:11434 (version 0.9.0)"\n', 'ready', None),
    # the model list an OpenAI-compatible server answers GET /v1/models with, as a client prints it
    ('$ curl '
     'http://localhost:8000/v1/models\n{"object":"list","data":[{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","created":1718000000,"owned_by":"vllm","root":"meta-llama/Llama-3.1-8B-Instruct","parent":null}]}\n',
     'ready', None),
    ('{"object": "list", "data": [{"id": "qwen2.5-7b", "object": "model", "created": 1730000000, '
     '"owned_by": "sglang"}]}\n', 'ready', None),
    ('{"object":"list","data":[{"id":"gpt-4","object":"model"},{"id":"whisper-1","object":"model"}]}\n', 'ready', None),
    # numpy's invalid-value warning for a cast, the next line an integer image's astype: NaN pixels written as a black image
    ('D:\\ComfyUI\\nodes.py:1496: RuntimeWarning: invalid value encountered in cast\n  img = '
     'Image.fromarray(np.clip(i, 0, 255).astype(np.uint8))\n', 'garbage', 'numpy-nan-image-cast'),
    ('/home/u/stable-diffusion-webui/modules/processing.py:968: RuntimeWarning: invalid value '
     'encountered in cast\n  x_sample = x_sample.astype(np.uint8)\n', 'garbage', 'numpy-nan-image-cast'),
    ('/ComfyUI/custom_nodes/ComfyUI-VideoHelperSuite/videohelpersuite/nodes.py:93: RuntimeWarning: '
     'invalid value encountered in cast\n  return tensor_to_int(tensor, 16).astype(np.uint16)\n',
     'garbage', 'numpy-nan-image-cast'),
    ('100%|##########| 30/30 [00:09<00:00,  '
     '3.2it/s]\n/venv/lib/python3.11/site-packages/diffusers/image_processor.py:147: RuntimeWarning: '
     'invalid value encountered in cast\n  images = (images * 255).round().astype("uint8")\nPrompt '
     'executed in 12.50 seconds\n', 'garbage', 'numpy-nan-image-cast'),
    # image outputs reported black, blank or noise; a reply reported as garbage in a noun phrase
    ('# Black images with SDXL on ROCm\n', 'garbage', 'generic-garbage-report-line'),
    ('After the update I only get black images, or color noise.\n', 'garbage', 'generic-garbage-report-line'),
    ('The sampler finishes but the result is a blank image.\n', 'garbage', 'generic-garbage-report-line'),
    ('With the new VAE I get noise instead of a picture.\n', 'garbage', 'generic-garbage-report-line'),
    ('Ollama returned another garbage response after the third prompt.\n', 'garbage', 'generic-garbage-report-line'),
    ('When the context is full it returns just garbage text.\n', 'garbage', 'generic-garbage-report-line'),
    # froze's past tense as some reports write it, a stall for a long time, a compile or a build that never finishes
    ('# Training freezed at epoch 3 with 4 GPUs\n', 'hang', 'generic-hang-report-line'),
    ('the dataloader freezed after the first batch\n', 'hang', 'generic-hang-report-line'),
    ('Epoch 2 starts, then stuck for a long time with 100% GPU util\n', 'hang', 'generic-hang-report-line'),
    ('NCCL init stuck for hours on the second node\n', 'hang', 'generic-hang-report-line'),
    ('# jax 0.4.30 never finishes compiling the train step\n', 'hang', 'generic-hang-report-line'),
    ('The engine build did not finish after 3 hours on an A10.\n', 'hang', 'generic-hang-report-line'),
    ('torch.compile never completes the compilation of the decoder\n', 'hang', 'generic-hang-report-line'),
    # a program reported panicking, or closing at once (or caused to)
    ('The application just panics and exits.\n', 'other_crash', 'generic-crash-report-line'),
    ('tabby panics on startup with the new model spec\n', 'other_crash', 'generic-crash-report-line'),
    ('# --cli mode makes the server close instantly\n', 'other_crash', 'generic-crash-report-line'),
    ('The CMD window disappears immediately after loading the model.\n', 'other_crash', 'generic-crash-report-line'),
    ('llama-server exits immediately after printing the banner\n', 'other_crash', 'generic-crash-report-line'),
    ('Loading a second model causes the runner to exit immediately.\n', 'other_crash', 'generic-crash-report-line'),
    # a Python library reported not installed (prose, a line of its own; exllamav2's assertion has a row of its own)
    ('start.bat stops on an assertion saying the Tokenizers library is not installed\n',
     'import_error', 'generic-import-line'),
    ("The 'pdf2docx' library is not installed.\nPlease install it by running: uv add pdf2docx\n",
     'import_error', 'generic-import-line'),
    ('AssertionError: Attempting to load HF tokenizer, but Tokenizers library is not installed\n',
     'import_error', 'dependency-not-installed'),
    # a reply or a transcript reported repeating one unit without end
    ('Sometimes it starts repeating the same phrase over and over again until the end of the file.\n',
     'garbage', 'generic-garbage-report-line'),
    ('The transcription begins looping the same sentence over and over again from 00:38:03.\n',
     'garbage', 'generic-garbage-report-line'),
    ("# Generating the same token (token '1') over and over, after a few successful messages?\n",
     'garbage', 'generic-garbage-report-line'),
    ('the output ends with the same random word 300x\n', 'garbage', 'generic-garbage-report-line'),
    # ComfyUI's ready line as ComfyUI-Manager's log file writes it; uvicorn's behind journalctl's prefix
    ('[2025-04-06 07:15:42.677] To see the GUI go to: http://127.0.0.1:8188\n', 'ready', None),
    ('[2024-08-20 23:14] To see the GUI go to: http://26.147.18.144:8188 or http://127.0.0.1:8188\n', 'ready', None),
    ('Aug 19 18:34:30 vllm vllm[8707]: (APIServer pid=8707) INFO:     Application startup complete.\n', 'ready', None),
    ('Mar  5 10:00:01 gpu lmdeploy[77]: INFO:     Uvicorn running on http://0.0.0.0:23333 (Press CTRL+C '
     'to quit)\n', 'ready', None),
    # text-embeddings-inference's router once its model is warmed up
    ('2024-03-08T15:20:31.201Z  INFO text_embeddings_router: router/src/lib.rs:250: Starting model '
     'backend\n2024-03-08T15:20:41.807Z  INFO text_embeddings_router: router/src/lib.rs:263: Warming up '
     'model\n2024-03-08T15:20:42.101Z  INFO text_embeddings_router: router/src/lib.rs:330: Ready\n', 'ready', None),
]

_DEV39_NEAR = [
    # near texts of dev39's rows: another service's listener under journalctl, Ollama's line quoted in prose; an empty model
    # list, a generation reply (the reply is the evidence: no readiness from it), a request; numpy's warning before another
    # cast or another operation; diffusers' safety checker's black image, black images denied, avoided or hedged, a noise
    # setting, garbage collection, garbage denied; layers frozen by the user, a stall denied; a connection closing, an
    # instruction, a forecast, a panic denied or hedged; a library's absence hedged, a module's optional extra; the
    # same answer a few times (consistency), repetition denied or hedged, a prompt sent many times; ComfyUI-Manager's
    # prefix before another line, uvicorn's line before its start-up finished; TEI's warm-up
    # line
    ('Jan 08 11:29:03 host sshd[812]: Server listening on 0.0.0.0 port 22.\n', 'incomplete'),
    ('journalctl says: Listening on 127.0.0.1:11434 (version 0.5.4) is printed before the GPUs\n', 'incomplete'),
    ('{"object":"list","data":[]}\n', 'incomplete'),
    ('{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"1. '
     '2. 3. 4."}}]}\n', 'incomplete'),
    ('curl http://localhost:8000/v1/chat/completions -d \'{"model": "m", "messages": [{"role": "user", '
     '"content": "hi"}]}\'\n', 'incomplete'),
    ('RuntimeWarning: invalid value encountered in cast\n  counts = '
     'np.asarray(values).astype(np.int64)\n', 'incomplete'),
    ('RuntimeWarning: invalid value encountered in divide\n  img = (x / y).astype(np.uint8)\n', 'incomplete'),
    ('RuntimeWarning: invalid value encountered in cast\n  latents = latents.astype(np.float16)\n', 'incomplete'),
    ('Potential NSFW content was detected in one or more images. A black image will be returned instead. '
     'Try again with a different prompt and/or seed.\n', 'incomplete'),
    ('No black images since I added --no-half-vae.\n', 'incomplete'),
    ('To avoid black images, use the fp16-fix VAE.\n', 'incomplete'),
    ('If you get black images, try --no-half-vae.\n', 'incomplete'),
    ('I set the noise schedule to karras and get noise levels from 0 to 14\n', 'incomplete'),
    ('the garbage collector freed 2 GB\n', 'incomplete'),
    ('There is no garbage output anymore.\n', 'incomplete'),
    ('I freezed the first 10 layers of the ViT\n', 'incomplete'),
    ('We freezed the text encoder for stage one\n', 'incomplete'),
    ('No longer stuck for hours after the fix\n', 'incomplete'),
    ('The connection closes immediately after the response\n', 'incomplete'),
    ('Press Ctrl+C twice to close immediately\n', 'incomplete'),
    ('It no longer panics on empty prompts\n', 'incomplete'),
    ('If it panics, restart the service\n', 'incomplete'),
    ('The handler never panics\n', 'incomplete'),
    ('If the port is taken, the server will exit immediately.\n', 'incomplete'),
    ('Gracefully degrades if the face_recognition library is not installed.\n', 'incomplete'),
    ("[W] 'colored' module is not installed, will not use colors when logging.\n", 'incomplete'),
    ('With temperature 0 I get the same answer 3 times in a row, as expected.\n', 'incomplete'),
    ('It no longer repeats the same phrase over and over.\n', 'incomplete'),
    ('If the model says the same sentence over and over, raise repetition_penalty.\n', 'incomplete'),
    ('I sent the same prompt 20 times to measure latency.\n', 'incomplete'),
    ('[2025-04-06 07:15:42.677] Starting server\n', 'incomplete'),
    ('Aug 19 18:34:30 vllm vllm[8707]: (APIServer pid=8707) INFO:     Waiting for application startup.\n',
     'incomplete'),
    ('2024-03-08T15:20:41.807Z  INFO text_embeddings_router: router/src/lib.rs:263: Warming up model\n', 'incomplete'),
]

@pytest.mark.parametrize(("text", "status", "signature"), [
    *_DEV26_ROWS, *_DEV27_ROWS, *_DEV28_ROWS, *_DEV29_ROWS, *_DEV30_ROWS, *_DEV31_ROWS, *_DEV32_ROWS, *_DEV33_ROWS,
    *_DEV34_ROWS, *_DEV35_ROWS, *_DEV36_ROWS, *_DEV37_ROWS, *_DEV38_ROWS, *_DEV39_ROWS])
def test_development_rows(text: str, status: str, signature: str | None) -> None:
    """dev26-dev33's rows: each text gets its class from its row (None: the class alone, no row named)."""
    d = classify_text(text)
    assert (d.status, d.signature) == (status, signature), d.label


@pytest.mark.parametrize(("text", "status"), [
    *_DEV26_NEAR, *_DEV27_NEAR, *_DEV28_NEAR, *_DEV29_NEAR, *_DEV30_NEAR, *_DEV31_NEAR, *_DEV32_NEAR, *_DEV33_NEAR,
    *_DEV34_NEAR, *_DEV35_NEAR, *_DEV36_NEAR, *_DEV37_NEAR, *_DEV38_NEAR, *_DEV39_NEAR])
def test_texts_near_development_rows_are_not_their_classes(text: str, status: str) -> None:
    """Texts near dev26-dev33's rows (negated, hedged, another library's) keep the class they had."""
    d = classify_text(text)
    assert d.status == status, d.label


# --- a report's title: a `# ` heading that claims a failure and names a family's word ([generic.title]) -------

_TITLE_ROWS = [
    ("# [Bug] NCCL error when running with tp 2\n", "nccl", "generic-nccl-title"),
    ("# undefined symbol when importing vllm._C\n", "missing_kernel", "generic-missing-kernel-title"),
    ("# Process killed while loading the model\n", "killed", "generic-killed-title"),
    ("# Timeout during NCCL init on 2 nodes\n", "hang", "generic-hang-title"),
    ("# Cuda out of memory while loading the quantized model\nThe model is 70B.\n", "oom", "generic-oom-title"),
    ("# GPU with CUDA is capability 7 0 is not supported\n", "arch_mismatch", "generic-arch-title"),
    ("# [Bug]: unrecognized arguments error when serving a model\n", "arg_error", "generic-arg-error-title"),
    # a failure line in the body says more than the title
    ("# [Bug] NCCL error on startup\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "oom", None),
]

_TITLE_NEAR = [
    # a change's title, a feature request's, a title claiming nothing, a hedge, a heading inside the body's code
    ("# Fix NCCL timeout on startup\n", "incomplete"),
    ("# [Bugfix] Fix OOM when loading LoRA adapters\n", "incomplete"),
    ("# [Feature] support OOM retry in the scheduler\n", "incomplete"),
    ("# Add NCCL error handling docs\n", "incomplete"),
    ("# Support for Qwen3 with NCCL 2.21\n", "incomplete"),
    ("# If the NCCL init fails, retry\n", "incomplete"),
    ("x = load()\n# avoid OOM error here\ny = 2\n", "incomplete"),
    ("## NCCL error when running with tp 2\n", "incomplete"),
    ("# Engine build no longer OOM with --max-batch-size 8\n", "incomplete"),
    ("# Runs without NCCL errors after the upgrade\n", "incomplete"),
    ("# Typo in the NCCL error message\n", "incomplete"),
]


@pytest.mark.parametrize(("text", "status", "signature"), _TITLE_ROWS)
def test_a_title_claiming_a_failure_names_its_family(text: str, status: str, signature: str | None) -> None:
    d = classify_text(text)
    assert d.status == status, d.label
    if signature is not None:
        assert d.signature == signature, d.label


@pytest.mark.parametrize(("text", "status"), _TITLE_NEAR)
def test_titles_that_claim_no_failure_are_no_evidence(text: str, status: str) -> None:
    assert classify_text(text).status == status


# --- glibc's heap and stack checks aborting the process (malloc_printerr, __fortify_fail) ----------------

@pytest.mark.parametrize("text", [
    "double free or corruption (!prev)\n", "double free or corruption (out)\nAborted (core dumped)\n",
    "free(): invalid pointer\n", "munmap_chunk(): invalid pointer\n", "malloc(): corrupted top size\n",
    "corrupted size vs. prev_size\n", "free(): double free detected in tcache 2\n",
    "malloc(): unaligned tcache chunk detected\n", "*** stack smashing detected ***: terminated\n",
    "*** buffer overflow detected ***: /usr/bin/python3 terminated\n",
])
def test_the_c_librarys_heap_checks_are_a_crash(text: str) -> None:
    d = classify_text(text)
    assert (d.status, d.signature) == ("other_crash", "glibc-heap-corruption-abort"), d.label


@pytest.mark.parametrize("text", [
    "We fixed a double free in the allocator\n", "free(): called with a valid pointer\n", "corrupted data in the cache file\n",
    "stack smashing protection is enabled (-fstack-protector-strong)\n",
])
def test_texts_near_the_heap_checks_are_no_crash(text: str) -> None:
    assert classify_text(text).status == "incomplete"


def test_a_packages_exc_module_exception_is_a_failure_line_and_dynamos_backend_failure_a_compile_error() -> None:
    """torch._dynamo.exc's exceptions name no Error (a failure line by its `.exc.` module); BackendCompilerFailed is
    the backend compiler raising (jit_error), unless the inner exception says more; an import of it is no failure."""
    assert classify_text("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n").status == "jit_error"
    assert classify_text("torch._dynamo.exc.Unsupported: call_function BuiltinVariable(setattr)\n").status == "other_crash"
    inner = "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert classify_text(inner).status == "oom"
    assert classify_text("from torch._dynamo.exc import BackendCompilerFailed\n").status == "incomplete"


@pytest.mark.parametrize("text", [
    "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to (172.17.0.9, 46229).\n",
    "[E728 15:01:59.561275187 socket.cpp:1028] [c10d] The client socket has timed out after 600000ms while trying to connect to (127.0.0.1, 48315).\n",
    "[W socket.cpp:663] [c10d] The client socket has timed out after 20min while trying to connect to (localhost, 57117).\n",
])
def test_a_rank_that_never_reached_the_store_hangs(text: str) -> None:
    """c10d's connect timeout (socket.cpp SocketConnectOp::throwTimeoutError) at any level: a hang."""
    assert classify_text(text).status == "hang"


def test_c10ds_own_error_line_without_a_rank_prefix_is_a_failure_line() -> None:
    """PyTorch's c10 log line at E ('[E728 15:01:59.561275187 file.cpp:N]', the month unpadded) is a failure line;
    at W it is not."""
    assert classify_text("[E728 15:01:59.561275187 foo.cpp:10] something went wrong\n").status == "other_crash"
    assert classify_text("[E1207 15:01:59.561275187 foo.cpp:10] something went wrong\n").status == "other_crash"
    assert classify_text("[W728 15:01:59.561275187 foo.cpp:10] Warning: something\n").status == "incomplete"


@pytest.mark.parametrize(("text", "status"), [
    # glibc's assert failing (assert.c __assert_fail_base), then abort(): a crash, after a server came up too
    ("python: CudaFrontend.cpp:94: static const string& X::Y(Frontend*, const CUdevice*): Assertion `0' failed\n", "other_crash"),
    ("HINT:    Please open http://0.0.0.0:23333 in a browser for detailed api usage!!!\nINFO:     Application startup complete.\n"
     "python3: src/alloc.cc:41: void* Pool::get(size_t): Assertion `n <= cap' failed.\nAborted (core dumped)\n", "other_crash"),
    # a CUDA kernel's device-side assertion (the expression closed by a backtick) and HIP's stay illegal memory
    ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] "
     "Assertion `index >= -sizes[i] && index < sizes[i] && \"index out of bounds\"` failed.\n", "illegal_memory"),
    ("/opt/pytorch/aten/src/ATen/native/hip/ScatterGatherKernel.hip:365: operator(): Device-side assertion "
     "`idx_dim >= 0' failed.\n", "illegal_memory"),
    # prose about an assert
    ("The Assertion `x' failed message is confusing\n", "incomplete"),
])
def test_a_failed_c_assert_aborts_the_process(text: str, status: str) -> None:
    assert classify_text(text).status == status


@pytest.mark.parametrize(("text", "status"), [
    ("# VLLM seems be hang\nThe log shows Running: 1 reqs for over an hour\n", "hang"),
    ("The server seems to be stuck after warmup\n", "hang"),
    ("It seemed hung for ten minutes before I killed it\n", "hang"),
    # denied
    ("It does not seem to be stuck, just slow\n", "incomplete"),
    ("This doesn't seem hung, the GPU is busy\n", "incomplete"),
    ("It doesn't seem to be hanging anymore\n", "incomplete"),
])
def test_a_stall_the_reporter_says_it_seems_to_be(text: str, status: str) -> None:
    assert classify_text(text).status == status


def test_ollama_listener_line_is_a_finished_start_up() -> None:
    """Ollama logs 'Listening on ADDR (version V)' once its listener is bound (server/routes.go Serve, after
    net.Listen) and loads a model per request: a start-up finished (LABELLING.md item 1), in slog's text form or
    bare; a failure after it is still that failure, and other servers' 'Listening on' lines are not this line."""
    slog = 'time=2024-08-19T14:09:56.520+08:00 level=INFO source=routes.go:1170 msg="Listening on 127.0.0.1:11434 (version 0.3.5)"\n'
    for text in (slog, "Listening on [::]:11434 (version 0.5.7)\n",
                 slog + 'time=2024-08-19T14:09:56.521+08:00 level=INFO source=gpu.go:204 msg="looking for compatible GPUs"\n'):
        assert classify_text(text).status == "ready", text
    failed = slog + ('time=2024-08-19T14:10:00.000+08:00 level=ERROR source=sched.go:443 msg="error loading llama server" '
                     'error="llama runner process has terminated: CUDA error: out of memory"\n')
    assert classify_text(failed).status == "oom"
    for text in ("Listening on port 8080\n", "Server listening on 0.0.0.0:8000\n",
                 "# Ollama stops after 'Listening on' and never answers\n"):
        assert classify_text(text).status != "ready", text


def test_a_whole_number_of_a_few_repeated_digits_is_a_number_not_a_loop() -> None:
    """A number that is one digit six to eleven times (a pid 222222, 333333 ms, a count reaching 111111) is a
    number, not a model looping on a digit (found by the harden audit: ``for i in range(200000): print(i)`` was
    recorded `garbage`); twelve or more, or quoted, is still a run of output."""
    counting = "".join(f"{i}\n" for i in range(100_000, 120_000))
    assert classify_text(counting).status == "incomplete"
    for line in ("pid 222222 started", "elapsed 333333 ms", "999999"):
        assert degenerate_line(line) is None, line
    for line in ("1111111111111111", "The answer is 7777777777777777777777", 'reply: "111111"', "!!!!!!"):
        assert degenerate_line(line), line


def test_a_hedged_gibberish_is_no_garbage_report() -> None:
    """SGLang's own benchmark client warns, on every healthy run (sglang/benchmark/serving.py, 0.5.23: 'Because when
    the tokenizer counts the output tokens, if there is gibberish, it might count incorrectly.'): a hedge, not a report
    (the fresh-clone CI's live bench tests recorded such runs `garbage`); the word said plainly still is one."""
    warning = "Because when the tokenizer counts the output tokens, if there is gibberish, it might count incorrectly.\n"
    assert classify_text(warning + "Successful requests:                     8\n").status == "ready"
    assert classify_text(warning).status == "incomplete"
    assert classify_text("Jibberish output.\n").status == "garbage"
    assert classify_text("It might be gibberish, we are not sure\n").status == "incomplete"
