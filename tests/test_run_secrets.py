"""No secret reaches disk: planted in the environment, in a flag, and printed by the child."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

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


REGISTRY_PW = "planted-registry-pw-4411"
WANDB_KEY = "0123456789abcdef0123456789abcdef0badc0de"


def test_login_commands_store_no_password_or_key(sessions: Path, logkit, tmp_path: Path) -> None:
    """`docker login -p PW` and `wandb login KEY`, run through logkit (here they fail: no docker, no wandb) and
    printed by a script: neither the recorded argv nor the log holds the secret."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("docker", "wandb"):  # stand-ins on PATH that print their command line, as a shell's `set -x` does
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "+ {tool} $*"\nexit 1\n')
        script.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    assert logkit("session", "start", "logins").returncode == 0
    for argv in (["docker", "login", "-u", "bob", "-p", REGISTRY_PW, "registry.example.com"],
                 ["docker", "login", f"--password={REGISTRY_PW}", "quay.io"],
                 ["wandb", "login", "--relogin", WANDB_KEY]):
        done = logkit("run", "--", *argv, env=env)
        assert done.returncode == 1, done.stderr
    for path in (p for p in sessions.rglob("*") if p.is_file()):
        for secret in (REGISTRY_PW, WANDB_KEY):
            assert secret.encode() not in path.read_bytes(), f"{secret} leaked into {path}"
    (sid,) = Store(sessions).session_ids()
    logs = sorted((sessions / sid / "logs").glob("A*.log"))
    assert len(logs) == 3 and all(b"[REDACTED]" in p.read_bytes() for p in logs)


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


def test_the_trigger_check_and_the_redaction_agree() -> None:
    text = (b"plain line\n" * 50 + b"{'api_key': 'abc123', 'hf_token': \"x1\"}\nhttps://u:pw12345@h/\n"
            + b"echo plantedtok123\n" + b"Decode batch, #token: 1234, token usage: 0.01\n")
    r = Redactor.for_run({"HF_TOKEN": "plantedtok123"}, [])
    assert r.suspicious(b"x" * 5000 + b"HF_abc") and not r.suspicious(b"Decode batch, #token: 1\n" * 100)
    out = r.chunk(text)
    assert out == text.replace(b"abc123", b"[REDACTED]").replace(b'"x1"', b'"[REDACTED]"').replace(
        b"pw12345", b"[REDACTED]").replace(b"plantedtok123", b"[REDACTED]")
    assert r.chunk(b"nothing here\n") == b"nothing here\n"
    # a trigger deep inside a big chunk: only its lines are searched, the rest is copied unchanged
    big = b"plain line\n" * 20_000 + b"key is hf_" + b"B" * 30 + b"\n" + b"plain line\n" * 20_000
    assert r.chunk(big) == big.replace(b"hf_" + b"B" * 30, b"[REDACTED]")


def test_searching_only_around_triggers_equals_a_full_search() -> None:
    """The trigger regions and pattern subsets give what the whole regex over the whole chunk gives."""
    import random

    rng = random.Random(5)
    pieces = [b"Decode batch, #token: 1, token usage: 0.2", b"ssh user@host ok", b"GET https://h/x?a=1&token=QTOK1&b=2",
              b"https://u:pw9999@proxy:3128/", b"api_key=None", b"api_key='k1234567'", b"x_token=abc123 y",
              b"aws_secret_access_key = AWS1", b"--hf-token TOK7777", b"Authorization: Bearer abcdefghijk",
              b"password hunter2zz", b"hf_" + b"A" * 25, b"sk-" + b"b" * 22, b"eyJabcdefghij.eyJabcd.sig",
              b"{'token': 'tv1'}", b"planted-literal-77", b"\x00\xff" + rng.randbytes(40)]
    r = Redactor(literals=["planted-literal-77"])
    for _ in range(30):
        chunk = b"\n".join(rng.choice(pieces) + b" " + rng.choice(pieces) for _ in range(200)) + b"\n"
        assert r.chunk(chunk) == r._sub(chunk)


def test_every_pattern_is_reached_through_the_trigger_check() -> None:
    """One example per pattern of secrets.toml, each alone in a big chunk: the trigger check must let it through."""
    from logkit.capture.redact import load_rules

    examples = {
        "url-credentials": b"proxy https://user:s3cretpw@proxy:3128/",
        "url-query-secret": b"GET https://h/x?a=1&token=URLTOKENVALUE3&b=2",
        "key-value": b"aws_secret_access_key = AWSSECRETVALUE1",
        "token-value": b"{'token': 'TOKVALUE99'}",
        "flag-value": b"cmd: serve --admin-api-key FLAGKEY1234",
        "authorization": b"Authorization: Basic dXNlcjpCQVNJQ1BBU1M=",
        "bearer": b"curl -H 'x: Bearer BEARERVALUE123'",
        "password-word": b"the password hunter2xyz in a note",
        "huggingface-token": b"echo hf_" + b"H" * 30,
        "openai-style-key": b"key sk-" + b"O" * 30,
        "github-token": b"ghp_" + b"G" * 36,
        "jwt": b"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    }
    import tomllib

    from logkit.capture import redact

    # the rows that carry their own example in secrets.toml (the provider formats, issue 24's forms)
    table = tomllib.loads((redact._DATA / "secrets.toml").read_text(encoding="utf-8"))["text"]["patterns"]
    examples.update({row["name"]: row["example"].encode() for row in table if "example" in row})
    assert set(examples) == {name for name, _ in load_rules().patterns}, "every pattern has an example"
    r = Redactor.for_run({}, [])
    for name, example in examples.items():
        chunk = b"Decode batch, #token: 1\n" * 3000 + example + b"\n" + b"Decode batch, #token: 1\n" * 3000
        out = r.chunk(chunk)
        assert out != chunk and b"[REDACTED]" in out, name
        assert out.count(b"\n") == chunk.count(b"\n") and out.startswith(b"Decode batch"), name


@pytest.mark.slow
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
            rec.consume(5, part, rec.scan(5, part))  # the runner's order: scan on read, record later
        rec.flush_stale(0.0, everything=True)
        os.close(fd)
        stored = log.read_bytes()
        assert b"s3cr3tvalue" not in stored and b"A" * 30 not in stored, (stream, cut)
        assert stored.count(b"\n") == stream.count(b"\n")


# -- a line written in parts: the partial-line flush must never write a secret -----------------------

PAUSED_LINES = [
    b"export HF_TOKEN=hf_" + b"P" * 30 + b" done\n",
    b"the password hunter2xyz was set\n",
    b"server_args=ServerArgs(api_key='pausedkey123', port=1)\n",
    b"Authorization: Basic dXNlcjpQQVVTRURQQVNT\n",
]
PAUSED_SECRETS = [b"P" * 30, b"hunter2xyz", b"pausedkey123", b"dXNlcjpQQVVTRURQQVNT"]


def _record_in_parts(path: Path, parts: list[bytes], stale_between: bool, literals: list[str] = ()) -> bytes:
    from logkit.capture import recorder

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    rec = recorder.Recorder(fd, Redactor(literals=literals), None)
    for part in parts:
        rec.consume(5, part, rec.scan(5, part))
        if stale_between:
            rec.flush_stale(time.monotonic() + recorder.PARTIAL_AGE_S + 0.1)  # the pause: older than the age
    rec.flush_stale(0.0, everything=True)
    os.close(fd)
    return path.read_bytes()


@pytest.mark.slow
def test_a_line_paused_at_any_byte_stores_no_secret(tmp_path: Path) -> None:
    """Every cut of every line, with a pause longer than the partial-line age at the cut."""
    for line, secret in zip(PAUSED_LINES, PAUSED_SECRETS, strict=True):
        for cut in range(1, len(line)):
            stored = _record_in_parts(tmp_path / "log", [line[:cut], line[cut:]], stale_between=True)
            assert secret not in stored, (line, cut, stored)
            assert b"[REDACTED]" in stored and stored.count(b"\n") == 1, (line, cut, stored)
        # three parts, two pauses
        for a in range(1, len(line), 3):
            for b in range(a + 1, len(line), 5):
                stored = _record_in_parts(tmp_path / "log", [line[:a], line[a:b], line[b:]], stale_between=True)
                assert secret not in stored, (line, a, b, stored)


@pytest.mark.slow
def test_a_secret_straddling_the_partial_line_cut_is_redacted(tmp_path: Path) -> None:
    """A line longer than PARTIAL_MAX is stored in pieces; a token across any piece boundary stays whole.

    With reads of R bytes the buffer first passes PARTIAL_MAX at L (a multiple of R); a line without
    spaces used to be cut 512 bytes before its end, so the token is put around every such cut."""
    from logkit.capture import recorder

    secret = b"hf_" + b"S" * 34
    for read in (4096, 1000):
        crossing = read * (recorder.PARTIAL_MAX // read + 1)
        for filler, before in ((b"x", b"="), (b"x", b","), (b"x y ", b" key "), (b"x", b"token=")):
            for delta in range(-40, 8, 4):
                head = (filler * recorder.PARTIAL_MAX * 2)[: crossing - 512 + delta - len(before)]
                stream = head + before + secret + b";" + b"y" * 5000 + b" more\n"
                parts = [stream[i:i + read] for i in range(0, len(stream), read)]
                stored = _record_in_parts(tmp_path / "log", parts, stale_between=False)
                assert secret not in stored and b"SSSSSSSS" not in stored, (filler, before, delta, read)
                assert stored.count(b"\n") == 1 and stored.startswith(head[:1000])


PAUSED_CHILD = """
import sys, time
parts = [bytes.fromhex(h) for h in sys.argv[1:]]
for part in parts:
    sys.stdout.buffer.write(part)
    sys.stdout.buffer.flush()
    time.sleep(1.3)
# a token across the 64 KiB partial-line cut, written in one go
sys.stdout.buffer.write(b"x" * 65_530 + b"=hf_" + b"T" * 40 + b";" + b"y" * 5000 + b" end\\n")
"""


@pytest.mark.slow
def test_paused_output_through_logkit_run_stores_no_secret(sessions: Path, logkit) -> None:
    """A real child printing each secret line in two parts with a pause over the partial-line age."""
    assert logkit("session", "start", "paused").returncode == 0
    parts = []
    for line in PAUSED_LINES:
        at = line.index(b" ", 8) + 1 if b" " in line[8:] else len(line) // 2
        parts += [line[:at], line[at:]]
    done = logkit("run", "--", sys.executable, "-c", PAUSED_CHILD, *[p.hex() for p in parts])
    assert done.returncode == 0, done.stderr
    (log,) = sessions.glob("*/logs/A1.log")
    stored = log.read_bytes()
    assert stored.count(b"\n") == len(PAUSED_LINES) + 1 and stored.count(b"[REDACTED]") >= 5
    for path in (p for p in sessions.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for secret in (*PAUSED_SECRETS, b"T" * 40):
            assert secret not in data, f"{secret!r} leaked into {path}"
