"""Leak probes against logkit as real processes: secrets in every way in, then grep disk and site.

Each probe plants values through one way in (a command line, a title, a note, a child's output, a
hand-edited ``events.jsonl``), runs real ``python -m logkit`` processes, builds the site, and returns
``{"tries": n, "leaked": [...]}``: every planted value found in a file under the sessions directory,
the built site, or a terminal stream that is often captured to a file. Shared by
``tests/test_leaks.py`` (asserts nothing leaked) and ``bench/report.py`` (one row per probe).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

LOGKIT = [sys.executable, "-m", "logkit"]

#: values printed by a child, outside the shapes the first patterns knew (issue 13)
PRINTED = {
    "aws-printed": ("print('aws_secret_access_key = AWSPRINTEDSECRET1')", "AWSPRINTEDSECRET1"),
    "aws-env-style": ("print('AWS_SECRET_ACCESS_KEY=AWSNOTINENV22')", "AWSNOTINENV22"),
    "url-query-token": ("print('GET https://hub.example/x?a=1&token=URLQUERYTOK33&b=2')", "URLQUERYTOK33"),
    "basic-auth": ("print('Authorization: Basic dXNlcjpCQVNJQ1NFQ1JFVDQ0')", "dXNlcjpCQVNJQ1NFQ1JFVDQ0"),
    "bare-jwt": ("print('token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwcm9iZTU1In0.c2lnbmF0dXJlNTVhYmNkZWY')",
                 "eyJzdWIiOiJwcm9iZTU1In0"),
    "encryption-key-env": ("import os; print('key:', os.environ['SGLANG_ENCRYPTION_KEY'])", "ENCKEYPROBE66x"),
}
NOTE_PASSWORD = "hunter2probe77"


def _env(sessions: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["LOGKIT_SESSIONS"] = str(sessions)
    env.update(extra)
    return env


def _logkit(sessions: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*LOGKIT, *args], capture_output=True, text=True, env=env or _env(sessions), timeout=timeout)
    return done


def _files(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file() or p.is_dir()]


def find(value: str, roots: list[Path], streams: tuple[str, ...] = ()) -> list[str]:
    """Where ``value`` (also lowercased: ids and slugs are lowercase) occurs: file contents, file and
    directory names, and the given terminal streams."""
    needles = {value.encode(), value.lower().encode()}
    found = []
    for path in _files(*roots):
        if any(n in str(path).encode() for n in needles):
            found.append(f"name {path}")
        elif path.is_file() and not path.is_symlink() and any(n in path.read_bytes() for n in needles):
            found.append(f"in {path}")
    found += [f"on a terminal stream: {s[:200]!r}" for s in streams if any(n.decode() in s for n in needles)]
    return found


def build(sessions: Path, work: Path) -> Path:
    out = work / "site"
    done = _logkit(sessions, "build", "--out", str(out), "--docs", str(work / "docs"))
    assert done.returncode == 0, done.stderr
    return out


def within_patterns(sessions: Path, work: Path) -> dict[str, Any]:
    """Secrets the documented patterns cover that still reached disk through a side door."""
    key = "sk-PlantedTitleKey0123456789abcdefXYZ"
    leaked: list[str] = []
    done = _logkit(sessions, "session", "start", f"bring-up with key {key}", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    base = "python -m sglang.launch_server --model-path /nonexistent --api-key "
    for value in ("recordkey1111", "RECORDDIFFKEY2222"):
        res = _logkit(sessions, "record", "attempt", "--cmd", base + value, "--status", "ready",
                      "--reconstructed", "account")
        assert res.returncode == 0, res.stderr
    res = _logkit(sessions, "decide", f"rotate {key} weekly", "--chosen", "rotation")
    assert res.returncode == 0, res.stderr
    streams = []
    for value in ("runapikey3333", "RUNNEWAPIKEY4444"):
        res = _logkit(sessions, "run", "--", sys.executable, "-m", "sglang.launch_server", "--model-path",
                      "/nonexistent", "--api-key", value)
        streams.append(res.stderr)
    site = build(sessions, work)
    for value in (key, "recordkey1111", "RECORDDIFFKEY2222", "runapikey3333", "RUNNEWAPIKEY4444"):
        leaked += [f"{value}: {w}" for w in find(value, [sessions, site, work / "docs"], tuple(streams))]
    return {"tries": 5, "leaked": leaked, "session": sid}


def outside_patterns(sessions: Path, work: Path) -> dict[str, Any]:
    """Secret shapes the first table missed: AWS keys, URL query tokens, Basic auth, JWTs, an
    allow-listed ``SGLANG_ENCRYPTION_KEY``, a password in prose."""
    done = _logkit(sessions, "session", "start", "outside the patterns")
    assert done.returncode == 0, done.stderr
    child = "\n".join(code for code, _ in PRINTED.values())
    env = _env(sessions, SGLANG_ENCRYPTION_KEY=PRINTED["encryption-key-env"][1])
    res = _logkit(sessions, "run", "--", sys.executable, "-c", child, env=env)
    assert res.returncode == 0, res.stderr
    res = _logkit(sessions, "note", f"the staging password {NOTE_PASSWORD} expires friday")
    assert res.returncode == 0, res.stderr
    site = build(sessions, work)
    leaked = []
    for name, (_code, value) in PRINTED.items():
        leaked += [f"{name}: {w}" for w in find(value, [sessions, site, work / "docs"])]
    leaked += [f"note password: {w}" for w in find(NOTE_PASSWORD, [sessions, site, work / "docs"])]
    return {"tries": len(PRINTED) + 1, "leaked": leaked}


def escaped_log_path(sessions: Path, work: Path) -> dict[str, Any]:
    """An attempt line (edited, or merged from git) whose ``log.path`` leads out of the session:
    the abandoned-attempt outcome must not copy that file into the session or the site."""
    done = _logkit(sessions, "session", "start", "merged from a fork", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    outside = work / "private.txt"
    outside.write_text("PRIVATEFILELINE8888 do not publish\n")
    link_dir = sessions / sid / "logs"
    link_dir.mkdir(exist_ok=True)
    (link_dir / "A3.log").symlink_to(outside)
    paths = [str(outside), os.path.relpath(outside, sessions / sid), "logs/A3.log"]
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(sessions / sid / "events.jsonl", "a") as fh:
        for n, path in enumerate(paths, start=1):
            fh.write(json.dumps({"v": 1, "id": uuid.uuid4().hex, "session": sid, "kind": "attempt",
                                 "ts": "2026-12-02T10:00:00Z", "short_id": f"A{n}", "argv": ["x"],
                                 "log": {"path": path}, "pid": dead.pid, "pgid": dead.pid,
                                 "recorder_pid": dead.pid, "recorder_host": None}) + "\n")
    res = _logkit(sessions, "status")
    assert res.returncode == 0, res.stderr
    site = build(sessions, work)
    leaked = [w for w in find("PRIVATEFILELINE8888", [sessions, site, work / "docs"], (res.stdout, res.stderr))
              if "private.txt" not in w]
    events = [json.loads(line) for line in (sessions / sid / "events.jsonl").read_text().splitlines()]
    abandoned = [e for e in events if e.get("kind") == "outcome" and e.get("status") == "abandoned"]
    assert len(abandoned) == len(paths), abandoned
    return {"tries": len(paths), "leaked": leaked}


ESCAPES = {
    "colour": "\x1b[31mRED",
    "osc52-clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "cursor-home-clear": "\x1b[H\x1b[2J",
    "c1-csi": "\x9b31m",
    "carriage-return": "hidden\rshown",
}


def terminal_escapes(sessions: Path, work: Path) -> dict[str, Any]:
    """Terminal escapes in user text (a title, a label, a note, a hypothesis) printed by
    ``session list``, ``session show`` and ``status``: none may reach the terminal raw."""
    plant = " ".join(ESCAPES.values())
    done = _logkit(sessions, "session", "start", f"title {plant}")
    assert done.returncode == 0, done.stderr
    for args in (["note", f"note {plant}"], ["hypothesis", "add", f"hyp {plant}"],
                 ["run", "--label", f"label {plant}", "--", "true"]):
        res = _logkit(sessions, *args)
        assert res.returncode == 0, (args, res.stderr)
    raw = []
    tries = 0
    for args in (["session", "list"], ["session", "show"], ["status"], ["session", "list", "--json"],
                 ["session", "show", "--json"], ["status", "--json"]):
        res = _logkit(sessions, *args)
        assert res.returncode == 0, (args, res.stderr)
        for name, esc in ESCAPES.items():
            tries += 1
            bad = "\x1b" if esc.startswith("\x1b") else esc[0] if name != "carriage-return" else "\r"
            if bad in res.stdout + res.stderr:
                raw.append(f"{' '.join(args)}: {name}")
        assert "RED" in res.stdout, (args, "the text itself must still be shown")
    return {"tries": tries, "leaked": sorted(set(raw))}


SPLIT_CHILD = """
import sys, time
pause = float(sys.argv[1])
for spec in sys.argv[2:]:
    line, cut = spec.rsplit(":", 1)
    data = bytes.fromhex(line)
    cut = int(cut)
    sys.stdout.buffer.write(data[:cut]); sys.stdout.buffer.flush()
    if pause:
        time.sleep(pause)
    sys.stdout.buffer.write(data[cut:]); sys.stdout.buffer.flush()
"""

SPLIT_LINES = [
    ("hf_" + "P" * 30, b"export HF_TOKEN=hf_" + b"P" * 30 + b" done\n"),
    ("hunter2split", b"the password hunter2split was set\n"),
    ("splitkey12345", b"server_args=ServerArgs(api_key='splitkey12345', port=1)\n"),
    ("dXNlcjpTUExJVFBBU1M", b"Authorization: Basic dXNlcjpTUExJVFBBU1M=\n"),
]


def paused_lines(sessions: Path, work: Path, tries: int, *, seed: int = 13) -> dict[str, Any]:
    """A child prints secret-bearing lines in two parts with a pause over the partial-line age
    (1 s) at a random byte; nothing may reach the raw log."""
    import random

    rng = random.Random(seed)
    done = _logkit(sessions, "session", "start", "paused lines")
    assert done.returncode == 0, done.stderr
    specs, secrets = [], []
    for i in range(tries):
        secret, line = SPLIT_LINES[i % len(SPLIT_LINES)]
        specs.append(f"{line.hex()}:{rng.randrange(1, len(line) - 1)}")
        secrets.append(secret)
    res = _logkit(sessions, "run", "--", sys.executable, "-c", SPLIT_CHILD, "1.2", *specs, timeout=60 + 2 * tries)
    assert res.returncode == 0, res.stderr
    leaked = []
    for n, secret in enumerate(secrets):
        hits = find(secret, [sessions])
        if hits:
            leaked.append(f"try {n} ({specs[n].rsplit(':', 1)[1]}): {hits[0]}")
    return {"tries": tries, "leaked": leaked}


STRADDLE_CHILD = """
import os, sys, time
for offset in range(int(sys.argv[1])):
    # written 4 KiB at a time, so logkit's buffer first passes PARTIAL_MAX (64 KiB) at 69,632 bytes,
    # where a line without spaces used to be cut 512 bytes before its end: the token is put around there
    line = (b"x" * (69_120 - 24 + offset * 3) + b"=hf_" + b"%02dSTRADDLE" % offset + b"T" * 30
            + b";" + b"y" * 5000 + b" end\\n")
    for at in range(0, len(line), 4096):
        os.write(1, line[at:at + 4096])
        time.sleep(0.01)  # one read per write
"""


def straddled_cut(sessions: Path, work: Path, tries: int) -> dict[str, Any]:
    """A token across the 64 KiB partial-line cut, at ``tries`` positions."""
    done = _logkit(sessions, "session", "start", "straddled cut")
    assert done.returncode == 0, done.stderr
    res = _logkit(sessions, "run", "--", sys.executable, "-c", STRADDLE_CHILD, str(tries))
    assert res.returncode == 0, res.stderr
    (log,) = sessions.glob("*/logs/A1.log")
    lines = log.read_bytes().split(b"\n")[:-1]
    assert len(lines) == tries, f"{len(lines)} lines stored of {tries}"
    leaked = []
    for offset, line in enumerate(lines):
        # the whole token is one placeholder: not a byte of it, not even its hf_ prefix, was written
        if not line.endswith(b"=[REDACTED];" + b"y" * 5000 + b" end") or b"STRA" in line:
            leaked.append(f"offset {offset}: {line[-5060:-5000]!r}")
    return {"tries": tries, "leaked": leaked}
