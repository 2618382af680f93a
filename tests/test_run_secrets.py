"""No secret reaches disk: planted in the environment, in a flag, and printed by the child."""

from __future__ import annotations

import os
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


def test_every_prefilter_agrees() -> None:
    from logkit.capture import redact

    text = (b"plain line\n" * 50 + b"{'api_key': 'abc123', 'hf_token': \"x1\"}\nhttps://u:pw12345@h/\n"
            + b"echo plantedtok123\n" + b"Decode batch, #token: 1234, token usage: 0.01\n")
    fast = Redactor.for_run({"HF_TOKEN": "plantedtok123"}, [])
    assert type(fast._fast if fast._fast is not False else redact._fast_prefilter((b"x",), ())).__name__ in (
        "_HyperscanFilter", "_Regexp", "Pattern"), "the fast prefilter is installed"
    slow = Redactor.for_run({"HF_TOKEN": "plantedtok123"}, [])
    slow._fast = None  # the path taken without hyperscan or google-re2
    re2_only = Redactor.for_run({"HF_TOKEN": "plantedtok123"}, [])
    import re2

    re2_only._fast = re2.compile(b"(?i:" + b"|".join(re2.escape(t) for t in re2_only.rules.prefilter) + b")|plantedtok123")
    assert fast.chunk(text) == slow.chunk(text) == re2_only.chunk(text)
    for r in (fast, re2_only):
        assert r.suspicious(b"x" * 5000 + b"HF_abc") and not r.suspicious(b"Decode batch, #token: 1\n" * 100)
    assert b"plantedtok123" not in slow.chunk(text) and b"pw12345" not in slow.chunk(text)
    assert slow.chunk(b"nothing here\n") == b"nothing here\n"


def test_a_secret_split_across_reads_is_still_redacted(tmp_path: Path) -> None:
    line = b"[2026-01-01] server_args=ServerArgs(model_path='m', api_key='s3cr3tvalue', tp_size=8)\n"
    planted = b"echo hf_" + b"A" * 30 + b"\n"
    for stream in (b"Decode batch, #token: 1\n" * 3 + line + b"done\n", line + planted):
        _split_everywhere(tmp_path, stream)


def _split_everywhere(tmp_path: Path, stream: bytes) -> None:
    from logkit.capture import recorder

    for cut in range(1, len(stream)):
        log = tmp_path / f"cut{cut}.log"
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        rec = recorder.Recorder(fd, Redactor.for_run({}, []), None)
        for part in (stream[:cut], stream[cut:]):
            rec.record(5, part, rec.scan(5, part))  # the runner's order: scan on read, record later
        rec.flush_stale(0.0, everything=True)
        os.close(fd)
        stored = log.read_bytes()
        assert b"s3cr3tvalue" not in stored and b"A" * 30 not in stored, (stream, cut)
        assert stored.count(b"\n") == stream.count(b"\n")
