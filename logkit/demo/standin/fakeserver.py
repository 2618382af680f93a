"""A stand-in SGLang server for the tests (there is no GPU here): SGLang's endpoints and log lines.

    python logkit/demo/standin/fakeserver.py --model-path M --port P [--host H] [--api-key K] --mode MODE

Modes: ``healthy`` (sensible replies), ``garbage`` (replies "!!!!!!..."), ``sm100`` (exits with the
TRT-LLM "only supported on SM100" error while loading), ``oom`` (CUDA out of memory while
allocating the KV cache), ``nan`` (dies of NaN a moment after ready, as SGLang does: NaN line,
scheduler traceback, SIGKILL of its own tree), ``inaccurate`` (healthy, but answers half the
accuracy questions wrong), ``hang`` (two startup lines, then nothing), ``stuck`` (listens, but
``/ready`` answers 503 forever), ``warning`` (no INFO lines, so no ready line). The log lines are
SGLang 0.5.23's own f-strings, on stderr with its ``[%Y-%m-%d %H:%M:%S]`` prefix. Loopback only;
other SGLang flags are accepted and ignored.

``FAKE_SGLANG_BACKENDS="flashinfer_trtllm=sm100,triton=healthy:2.5"`` maps a
``--moe-runner-backend`` value to a mode and a speed factor (``/server_info``'s ``fake_speed``).

For SGLang's real benchmark client: ``/generate`` and ``/v1/completions`` stream server-sent events
when asked (``data: {...}`` per token, ``data: [DONE]`` at the end; ``/generate``'s chunks carry the
text so far and ``meta_info.completion_tokens``, the completions chunks each new piece). A request
generates ``max_new_tokens`` / ``max_tokens`` words, ``FAKE_SGLANG_TOKEN_MS`` (default 2) ms apart
divided by the speed factor, so a faster backend measures faster. ``FAKE_SGLANG_WRONG=0.3`` (or
``--wrong 0.3``) answers that share of the accuracy questions wrong, each question consistently.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS: argparse.Namespace


def log(msg: str, rank: str = "") -> None:
    if ARGS.mode == "warning":
        return
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    sys.stderr.write(f"[{stamp}{' ' + rank if rank else ''}] {msg}\n")
    sys.stderr.flush()


def reply_text(prompt: str) -> str:
    if ARGS.mode == "garbage":
        return "!!!!!!!!!!!!!!!!!!!!!!!!"
    answer = accuracy_answer(prompt)
    if answer is not None:
        return answer
    return "3 + 5 = 8." if "3 + 5" in prompt else "The capital of France is Paris."


# The last "Question: ... Answer:" of a few-shot prompt (logkit/data/accuracy.toml's format).
_QUESTION = re.compile(r"Question: ([^\n]*)\s*Answer:\s*$")


def accuracy_answer(prompt: str) -> str | None:
    """The answer to the last question of an accuracy prompt, or None; a ``--wrong`` share is answered wrong."""
    m = _QUESTION.search(prompt)
    if not m:
        return None
    from logkit.capture.sglang.accuracy import questions

    question = m.group(1).strip()
    right = next((q.answer for q in questions() if q.text == question), None)
    share = int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF  # each question consistently
    if right is None or share < ARGS.wrong:
        return "1" if right == "0" else "0"
    return right


def tokens(n: int) -> list[str]:
    """``n`` generated tokens, one word each (the tiny test tokenizer knows these words)."""
    words = ("the", "model", "said", "tokens", "here", "and", "more", "text")
    return [(" " if i else "") + words[i % len(words)] for i in range(max(0, n))]


def token_delay() -> float:
    return float(os.environ.get("FAKE_SGLANG_TOKEN_MS", "2")) / 1000.0 / (ARGS.speed or 1.0)


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"

    def log_message(self, fmt: str, *a: object) -> None:  # uvicorn's access line
        log(f'INFO:     {self.client_address[0]}:{self.client_address[1]} - "{self.requestline}" {a[1] if len(a) > 1 else ""}')

    def _json(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: "list[dict] | object") -> None:
        """Server-sent events: ``data: {json}`` per chunk, then ``data: [DONE]`` (SGLang's framing)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for chunk in chunks:  # type: ignore[attr-defined]
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?")[0]
        if path in ("/ready", "/health", "/health_generate", "/ping"):
            self._json(200, {}) if READY.is_set() else self._json(503, {})
        elif path in ("/model_info", "/get_model_info"):
            self._json(200, {"model_path": ARGS.model_path, "tokenizer_path": ARGS.tokenizer_path or ARGS.model_path,
                             "is_generation": True, "served_model_name": ARGS.model_path})
        elif path in ("/server_info", "/get_server_info"):
            self._json(200, {"model_path": ARGS.model_path, "tp_size": ARGS.tp_size, "attention_backend": "flashinfer",
                             "moe_runner_backend": "auto", "kv_cache_dtype": "auto", "mem_fraction_static": 0.88,
                             "host": ARGS.host, "port": ARGS.port, "api_key": ARGS.api_key, "admin_api_key": ARGS.api_key,
                             "version": "0.5.23", **({"fake_speed": ARGS.speed} if ARGS.speed else {}), "internal_states": [{"avg_spec_accept_length": None}]})
        elif path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": ARGS.model_path, "object": "model", "owned_by": "sglang"}]})
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        if path == "/v1/chat/completions":
            prompt = " ".join(m.get("content", "") for m in body.get("messages", []))
            text = reply_text(prompt)
            self._json(200, {"id": "1", "object": "chat.completion", "model": ARGS.model_path,
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                          "logprobs": {"content": [{"token": t, "logprob": -0.1} for t in text.split()]},
                                          "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 8, "completion_tokens": len(text.split()), "total_tokens": 8 + len(text.split())}})
        elif path == "/v1/completions":
            prompt = body.get("prompt", "")
            n_in = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
            if body.get("stream"):
                self._stream(self._completion_chunks(int(body.get("max_tokens") or 16), n_in))
                return
            text = reply_text(str(prompt))
            self._json(200, {"id": "1", "object": "text_completion", "model": ARGS.model_path,
                             "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}],
                             "usage": {"prompt_tokens": n_in, "completion_tokens": len(text.split()),
                                       "total_tokens": n_in + len(text.split())}})
        elif path == "/generate":
            ids = body.get("input_ids")
            n_in = len(ids) if isinstance(ids, list) else len(str(body.get("text", "")).split())
            if body.get("stream"):
                want = int((body.get("sampling_params") or {}).get("max_new_tokens") or 16)
                self._stream(self._generate_chunks(want, n_in))
                return
            text = reply_text(str(body.get("text", "")))
            self._json(200, {"text": text, "meta_info": {"id": "1", "prompt_tokens": n_in,
                                                          "completion_tokens": len(text.split()),
                                                          "finish_reason": {"type": "length"}}})
        else:
            self._json(404, {"detail": "Not Found"})

    def _generate_chunks(self, want: int, n_in: int):  # type: ignore[no-untyped-def]
        """``/generate``'s stream: the text so far and ``meta_info`` with the token counts."""
        text = ""
        for i, tok in enumerate(tokens(want), 1):
            time.sleep(token_delay())
            text += tok
            yield {"text": text, "meta_info": {"id": "1", "prompt_tokens": n_in, "completion_tokens": i,
                                               "finish_reason": {"type": "length"} if i == want else None}}

    def _completion_chunks(self, want: int, n_in: int):  # type: ignore[no-untyped-def]
        """``/v1/completions``' stream: each new piece, and ``usage`` with the token counts."""
        for i, tok in enumerate(tokens(want), 1):
            time.sleep(token_delay())
            yield {"id": "1", "object": "text_completion", "model": ARGS.model_path,
                   "choices": [{"index": 0, "text": tok, "logprobs": None,
                                "finish_reason": "length" if i == want else None}],
                   "usage": {"prompt_tokens": n_in, "completion_tokens": i, "total_tokens": n_in + i}}


READY = threading.Event()


def main() -> None:
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-path", default="fake/model")
    ap.add_argument("--tokenizer-path")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--tp-size", "--tp", type=int, default=1)
    ap.add_argument("--api-key")
    ap.add_argument("--moe-runner-backend", default="auto")
    ap.add_argument("--wrong", type=float, default=float(os.environ.get("FAKE_SGLANG_WRONG", "0")),
                    help="the share of accuracy questions answered wrong")
    ap.add_argument("--mode", default="healthy",
                    choices=("healthy", "garbage", "nan", "hang", "stuck", "warning", "sm100", "oom", "inaccurate"))
    ARGS, _ = ap.parse_known_args()
    ARGS.speed = None
    for item in filter(None, os.environ.get("FAKE_SGLANG_BACKENDS", "").split(",")):
        backend, _, how = item.partition("=")
        if backend == ARGS.moe_runner_backend:
            mode, _, speed = how.partition(":")
            ARGS.mode, ARGS.speed = mode, float(speed or 1.0)
    if ARGS.mode == "inaccurate":  # serves sensibly, but half the accuracy answers are wrong
        ARGS.mode, ARGS.wrong = "healthy", max(ARGS.wrong, 0.5)
    assert ARGS.host in ("127.0.0.1", "localhost"), "loopback only"
    log(f"server_args=ServerArgs(model_path='{ARGS.model_path}', host='{ARGS.host}', port={ARGS.port}, tp_size={ARGS.tp_size})")
    log("Load weight begin. avail mem=78.59 GB")
    if ARGS.mode == "hang":
        time.sleep(3600)
        return
    if ARGS.mode == "sm100":
        log("Scheduler hit an exception: Traceback (most recent call last):")
        sys.stderr.write("ValueError: TRTLLM MoE backend is only supported on Blackwell GPUs (SM100). "
                         "Please use a different backend.\n")
        sys.exit(1)
    log("Load weight end. elapsed=1.20 s, type=LlamaForCausalLM, avail mem=63.50 GB, mem usage=15.09 GB.")
    if ARGS.mode == "oom":
        sys.stderr.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 27.04 GiB. GPU 0 has a "
                         "total capacity of 95.00 GiB of which 3.10 GiB is free.\n")
        sys.exit(1)
    log("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 442913, K size: 27.04 GB, V size: 27.04 GB")
    log("Memory pool end. avail mem=8.37 GB")
    log("Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=8.30 GB")
    log("Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=0.40 s, mem usage=0.10 GB, avail mem=8.20 GB.")
    log("max_total_num_tokens=442913, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2049, context_len=131072, available_gpu_mem=8.20 GB")
    httpd = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    log(f"INFO:     Uvicorn running on http://{ARGS.host}:{ARGS.port} (Press CTRL+C to quit)")
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    time.sleep(0.2)
    if ARGS.mode == "stuck":  # listening, but the warmup never returns: /ready stays 503
        time.sleep(3600)
    READY.set()
    log("The server is fired up and ready to roll!")
    if ARGS.mode == "nan":
        time.sleep(1.5)
        log("Detected errors during sampling! NaN in the logits.")
        log("Scheduler hit an exception: Traceback (most recent call last):")
        log("Received sigquit from a child process. It usually means the child failed.")
        os.kill(os.getpid(), signal.SIGKILL)
    signal.signal(signal.SIGTERM, lambda *_: (log("SIGTERM received. Draining requests and shutting down..."), httpd.shutdown(), sys.exit(0)))
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        httpd.shutdown()


if __name__ == "__main__":
    main()
