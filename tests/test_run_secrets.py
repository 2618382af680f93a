"""No secret reaches disk: planted in the environment, in a flag, and printed by the child."""

from __future__ import annotations

import sys
from pathlib import Path

from logkit.capture.redact import Redactor
from logkit.store import Store

ENV_TOKEN = "hf_PlantedEnvToken0123456789abcdef"
ODD_TOKEN = "zq8-planted-odd-shape-xyz"  # no recognisable shape: only the learned literal catches it
FLAG_KEY = "planted-flag-key-7771"
URL_PASS = "planted-url-pass"

CHILD = f"""
import os
print("env token:", os.environ["HF_TOKEN"])
print("odd:", os.environ["MY_SERVICE_PASSWORD"])
print("server_args=ServerArgs(api_key={FLAG_KEY!r}, admin_api_key=None, port=30000)")
print({{'api_key': {FLAG_KEY!r}, 'tp_size': 8}})
print("proxy https://user:{URL_PASS}@proxy.internal:3128/")
print("partial line without newline", os.environ["HF_TOKEN"], end="", flush=True)
"""


def test_planted_secrets_appear_in_no_file(sessions: Path, logkit) -> None:
    assert logkit("session", "start", "secrets").returncode == 0
    env = {"HF_TOKEN": ENV_TOKEN, "MY_SERVICE_PASSWORD": ODD_TOKEN, "SGLANG_PROXY": f"http://u:{URL_PASS}@p:1"}
    done = logkit("run", "--json", "--", sys.executable, "-c", CHILD, "--api-key", FLAG_KEY, env=env)
    assert done.returncode == 0, done.stderr
    assert ENV_TOKEN in done.stdout  # the terminal sees the child's output unchanged
    files = [p for p in sessions.rglob("*") if p.is_file()]
    assert any(p.suffix == ".log" for p in files)
    for path in files:
        data = path.read_bytes()
        for secret in (ENV_TOKEN, ODD_TOKEN, FLAG_KEY, URL_PASS):
            assert secret.encode() not in data, f"{secret} leaked into {path}"
    (sid,) = Store(sessions).session_ids()
    from logkit.events import AttemptEnvironment

    env_event = next(e for e in Store(sessions).handle(sid).read(strict=True).events if isinstance(e, AttemptEnvironment))
    assert set(env_event.environment.packages) == {"sglang", "sgl-kernel", "flashinfer", "torch", "triton", "transformers"}
    log = (sessions / sid / "logs" / "A1.log").read_text()
    assert "api_key='[REDACTED]'" in log and "'api_key': '[REDACTED]'" in log
    assert "user:[REDACTED]@proxy.internal" in log and "port=30000" in log
    assert log.endswith("partial line without newline [REDACTED]")
    assert ENV_TOKEN not in done.stderr.split("\n")[-2]  # the --json summary is redacted too


def test_redactor_keeps_harmless_values() -> None:
    r = Redactor.for_run({}, [])
    line = "Prefill batch, #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.01, #token: 123"
    assert r.text(line) == line
    assert r.text("ssl_keyfile_password=None, tokenizer_path='x'") == "ssl_keyfile_password=None, tokenizer_path='x'"
    assert r.argv(["x", "--api-key=abc", "--hf-token", "t", "--port", "1"]) == [
        "x", "--api-key=[REDACTED]", "--hf-token", "[REDACTED]", "--port", "1"]
    assert r.text("Authorization: Bearer abcdefghijkl") == "Authorization: Bearer [REDACTED]"
    assert r.scrub({"launch": {"api_key": "k", "tp_size": 8}}) == {"launch": {"api_key": "[REDACTED]", "tp_size": 8}}
    assert r.chunk(b"'hf_token': \"abc\"\n") == b"'hf_token': \"[REDACTED]\"\n"


def test_stdlib_prefilter_agrees_with_re2() -> None:
    text = (b"plain line\n" * 50 + b"{'api_key': 'abc123', 'hf_token': \"x1\"}\nhttps://u:pw12345@h/\n"
            + b"echo plantedtok123\n" + b"Decode batch, #token: 1234, token usage: 0.01\n")
    fast = Redactor.for_run({"HF_TOKEN": "plantedtok123"}, [])
    slow = Redactor.for_run({"HF_TOKEN": "plantedtok123"}, [])
    slow._fast = None  # the path taken without google-re2
    assert fast.chunk(text) == slow.chunk(text)
    assert b"plantedtok123" not in slow.chunk(text) and b"pw12345" not in slow.chunk(text)
    assert slow.chunk(b"nothing here\n") == b"nothing here\n"
