"""Smoke prompts against a ready server, and the test for degenerate (garbage) replies.

Contract: :func:`degenerate` says why a reply is garbage (a run of one repeated character such as
"!!!!!!", empty output, a token loop, U+FFFD replacement characters, NaN log-probabilities) or
returns None; thresholds are in ``logkit/data/sglang.toml`` ``[garbage]``. :func:`send` posts one
prompt to the OpenAI-compatible ``/v1/chat/completions`` (falling back to ``/v1/completions``) with
the standard library only, and returns reply, latency, logprobs and error.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from .outcomes import _data

__all__ = ["SmokeReply", "degenerate", "send"]


@dataclass
class SmokeReply:
    reply: str | None
    latency_s: float
    logprobs: list[float | None]
    error: str | None = None


def degenerate(reply: str | None, logprobs: list[float | None] | None = None) -> str | None:
    """Why ``reply`` is garbage, or None when it looks like text."""
    g = _data("sglang.toml")["garbage"]
    if logprobs and any(lp is None or (isinstance(lp, float) and math.isnan(lp)) for lp in logprobs if lp is not None or True):
        if any(isinstance(lp, float) and math.isnan(lp) for lp in logprobs):
            return "NaN log-probabilities"
    if reply is None or not reply.strip():
        return "empty reply"
    text = reply.strip()
    if text.count("\ufffd") >= g["replacement_chars"]:
        return "replacement characters (U+FFFD) in the reply"
    run = re.search(r"(\S)\1{%d,}" % (g["repeat_char_run"] - 1), text)
    if run and len(run.group(0)) >= g["repeat_char_share"] * len(text.replace(" ", "")):
        return f"one character repeated ({run.group(1)!r} x{len(run.group(0))})"
    words = text.split()
    n = g["loop_min_repeats"]
    for size in range(1, 6):
        if len(words) < size * n:
            continue
        for i in range(0, len(words) - size * n + 1):
            gram = words[i : i + size]
            if all(words[i + k * size : i + (k + 1) * size] == gram for k in range(n)):
                covered = size * n
                if covered >= 0.5 * len(words):
                    return f"token loop ({' '.join(gram)!r} repeated)"
    return None


def _post(url: str, body: dict[str, Any], timeout: float, api_key: str | None) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the server's own host:port
        return json.loads(resp.read().decode("utf-8", "replace"))


def send(base: str, prompt: str, *, model: str = "default", timeout: float = 120.0, api_key: str | None = None,
         max_tokens: int = 64) -> SmokeReply:
    """Send one prompt; never raises."""
    t0 = time.monotonic()
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0, "logprobs": True}
    try:
        try:
            data = _post(f"{base}/v1/chat/completions", body, timeout, api_key)
            choice = data["choices"][0]
            reply = (choice.get("message") or {}).get("content")
            lps = [c.get("logprob") for c in ((choice.get("logprobs") or {}).get("content") or [])]
        except urllib.error.HTTPError as exc:
            if exc.code not in (404, 400):
                raise
            body2 = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 1}
            data = _post(f"{base}/v1/completions", body2, timeout, api_key)
            choice = data["choices"][0]
            reply = choice.get("text")
            lps = list((choice.get("logprobs") or {}).get("token_logprobs") or [])
        lps = [float(x) if x is not None else None for x in lps]
        return SmokeReply(reply, round(time.monotonic() - t0, 3), lps)
    except Exception as exc:  # noqa: BLE001 - a smoke test reports, it never crashes the recorder
        return SmokeReply(None, round(time.monotonic() - t0, 3), [], f"{type(exc).__name__}: {exc}")
