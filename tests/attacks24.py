"""Issue 24's attacks as functions of real logkit processes: the tests run them small
(``tests/test_hardening.py``), ``bench/report.py`` runs them full size. Each returns its figures
and raises ``AssertionError`` when something was lost, leaked, hung or printed a traceback.

Needs only the standard library and logkit (``bench/report.py`` runs without pytest); the sweep
attacks use the stand-in SGLang of ``logkit/demo/standin/fake_sglang`` and ``tests/test_sweep.py``'s backends.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import scenarios

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "logkit" / "demo" / "standin" / "fake_sglang"
LOGKIT = scenarios.LOGKIT
HANG_S = 20.0  # a command that takes longer than this beside a FIFO counts as hung


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something listens on TCP ``port`` (:func:`logkit.procs.listen_inodes`, the owner)."""
    from logkit.procs import listen_inodes

    return bool(listen_inodes(port))


def _run(args: list[str | bytes], env: dict[str, str], cwd: Path | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOGKIT, *args], env=env, cwd=cwd, capture_output=True, text=True, errors="replace",
                          timeout=timeout)


def _clear(done: subprocess.CompletedProcess[str]) -> bool:
    """A refusal as logkit words them: exit 2, ``logkit: error:`` and a fix, no traceback."""
    return (done.returncode == 2 and "Traceback" not in done.stderr and "logkit: error:" in done.stderr
            and "fix:" in done.stderr)


# -- two hosts, one title, one git repository ------------------------------------------------------


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def two_hosts_git(work: Path, *, build: bool = True, runs: int = 2) -> dict[str, Any]:
    """Two clones of a team's repository, on two hosts: each starts the same title on the same day,
    records runs and a decision, commits (``git add -A``) and pulls the other's work. Nothing may
    conflict; the merged repository passes ``decision check`` (and ``build --strict``)."""
    bare = work / "team.git"
    assert _git(work, "init", "-q", "--bare", str(bare)).returncode == 0
    clones = {}
    for host in ("gpu-host-a", "gpu-host-b"):
        clone = work / host
        assert _git(work, "clone", "-q", str(bare), str(clone)).returncode == 0
        for key, value in (("user.name", host), ("user.email", f"{host}@example.com"), ("pull.rebase", "false")):
            _git(clone, "config", key, value)
        clones[host] = clone
        if len(clones) == 1:  # the team's repository begins with one commit, which each clone holds
            (clone / "README.md").write_text("# our knowledge base\n")
            _git(clone, "add", "-A")
            assert _git(clone, "commit", "-qm", "start").returncode == 0
            assert _git(clone, "push", "-q", "origin", "HEAD").returncode == 0
    conflicts = 0
    for n, (host, clone) in enumerate(clones.items()):
        env = scenarios.env_for(clone / "sessions", LOGKIT_HOST=host)
        assert _run(["session", "start", "GLM-5 NVFP4 bring-up on SM120"], env, clone).returncode == 0
        for i in range(runs):
            done = _run(["run", "--", "echo", f"{host} run {i}"], env, clone)
            assert done.returncode == 0, done.stderr
        done = _run(["decide", f"Keep what {host} found", "--decision", "keep it", "--evidence", "A1"], env, clone)
        assert done.returncode == 0, done.stderr
        _git(clone, "add", "-A")
        assert _git(clone, "commit", "-qm", f"{host}: sessions").returncode == 0
        if n:  # the second host pulls the first one's work, then pushes the merge
            pulled = _git(clone, "pull", "-q", "--no-edit", "origin", "HEAD")
            conflicts += pulled.returncode != 0 or "CONFLICT" in pulled.stdout + pulled.stderr
        assert _git(clone, "push", "-q", "origin", "HEAD").returncode == 0
    first = clones["gpu-host-a"]
    pulled = _git(first, "pull", "-q", "--no-edit", "origin", "HEAD")
    conflicts += pulled.returncode != 0 or "CONFLICT" in pulled.stdout + pulled.stderr
    assert conflicts == 0, pulled.stdout + pulled.stderr
    tracked = _git(first, "ls-files", "sessions").stdout.split()
    assert not any(p.endswith((".current", ".lock")) or "/.cache/" in p or "/.locks/" in p for p in tracked), tracked
    env = scenarios.env_for(first / "sessions", LOGKIT_HOST="gpu-host-a")
    check = _run(["decision", "check"], env, first)
    assert check.returncode == 0, check.stdout + check.stderr
    assert _run(["status"], env, first).returncode == 0  # this clone's current session is still its own
    sessions = files_sessions(first / "sessions")
    attempts = sum(1 for sid in sessions for e in scenarios.lines(first / "sessions", sid) if e["kind"] == "attempt")
    decisions = sum(1 for sid in sessions for e in scenarios.lines(first / "sessions", sid) if e["kind"] == "decision")
    assert attempts == len(clones) * runs and decisions == len(clones)
    if build:
        built = _run(["build", "--strict"], env, first, timeout=300)
        assert built.returncode == 0, built.stderr
    return {"conflicts": conflicts, "sessions": len(sessions), "attempts": attempts, "decisions": decisions}


def files_sessions(root: Path) -> list[str]:
    from logkit.store import files

    return files.session_ids(root)


# -- FIFOs -------------------------------------------------------------------------------------------


def fifos(sessions: Path, work: Path) -> dict[str, Any]:
    """A FIFO named ``events.jsonl`` in one session, a FIFO as a sweep spec and as a decision draft:
    every command ends within :data:`HANG_S`, with a warning or an error naming the FIFO."""
    sid = scenarios.new_session(sessions)
    (sessions / "fifo-session").mkdir()
    fifo = sessions / "fifo-session" / "events.jsonl"
    os.mkfifo(fifo)
    spec, draft = work / "spec.toml", work / "draft.toml"
    os.mkfifo(spec)
    os.mkfifo(draft)
    env = scenarios.env_for(sessions, PYTHONPATH=os.pathsep.join([str(FAKE), str(ROOT)]), FAKE_SGLANG_MODE="sm100")
    commands: list[tuple[list[str], str]] = [
        (["session", "list"], "warning"), (["status"], "ok"), (["run", "--", "true"], "ok"),
        (["run", "--session", "fifo-session", "--", "true"], "error"), (["session", "show", "fifo-session"], "error"),
        (["run", "--", sys.executable, "-m", "sglang.launch_server", "--model-path", "m/x", "--port",
          str(free_port())], "child"),
        (["sweep", str(spec)], "error"), (["decide", "--from-file", str(draft)], "error"),
        (["build"], "warning"),
    ]
    hung = tracebacks = 0
    for args, expect in commands:
        try:
            done = _run(args, env, work, timeout=HANG_S if args[0] != "build" else 120)
        except subprocess.TimeoutExpired:
            hung += 1
            continue
        tracebacks += expect != "child" and "Traceback" in done.stderr  # the stand-in's crash prints its own
        if expect == "error":
            assert _clear(done) and "FIFO" in done.stderr, (args, done.stderr)
        elif expect == "warning":
            assert done.returncode == 0 and f"skipped {fifo}: a FIFO" in done.stderr, (args, done.stderr)
    assert scenarios.lines(sessions, sid)[-1]["kind"] == "outcome"  # the runs beside it were recorded
    return {"commands": len(commands), "hung": hung, "tracebacks": tracebacks}


# -- invalid UTF-8 -----------------------------------------------------------------------------------


def invalid_utf8(sessions: Path, work: Path) -> dict[str, Any]:
    """Non-UTF-8 bytes in every command's words and in the TOML files: clear errors, nothing half
    written; a child's non-UTF-8 word (after ``--``) is recorded, not refused."""
    env = scenarios.env_for(sessions)
    sid = scenarios.new_session(sessions)
    before = sorted(p.name for p in sessions.iterdir())
    bad = b"\xff\xfe-bad"
    log = work / "server.log"
    log.write_text("[2026-01-01 00:00:00] The server is fired up and ready to roll!\n")
    commands: list[list[str | bytes]] = [
        ["session", "start", bad], ["session", "start", "ok", "--goal", bad], ["hypothesis", "add", bad],
        ["decide", bad, "--decision", "x"], ["note", bad], ["record", "attempt", "--cmd", b"python " + bad,
                                                             "--status", "exit_ok", "--reconstructed", "x"],
        ["import", "--cmd", bad, str(log)], ["run", "--label", bad, "--", "true"], ["why", bad],
    ]
    spec, draft = work / "spec.toml", work / "draft.toml"
    spec.write_bytes(b'title = "t"\ncommand = "python -m sglang.launch_server \xff"\n')
    draft.write_bytes(b'session = "s"\ntitle = "\xff"\n')
    tracebacks = unclear = 0
    for args in [*commands, ["sweep", str(spec)], ["decide", "--from-file", str(draft)]]:
        done = _run(args, env, work)
        tracebacks += "Traceback" in done.stderr
        unclear += not (_clear(done) and "UTF-8" in done.stderr)
    assert sorted(p.name for p in sessions.iterdir()) == before, "a refused command left something behind"
    child = _run(["run", "--", "echo", b"name-\xff"], env, work)
    attempt = [e for e in scenarios.lines(sessions, sid) if e["kind"] == "attempt"][-1]
    recorded = child.returncode == 0 and attempt["argv"] == ["echo", "name-\\xff"]
    return {"commands": len(commands) + 3, "tracebacks": tracebacks, "unclear": unclear, "child_recorded": recorded}


# -- a killed build ----------------------------------------------------------------------------------


def _site_files(out: Path) -> int:
    return sum(1 for p in out.rglob("*") if p.is_file())


def killed_build(work: Path, *, tries: int = 1, sessions_n: int = 3, seed: int = 24) -> dict[str, Any]:
    """SIGKILL ``logkit build`` while MkDocs writes the site, ``tries`` times at random moments: the
    site in ``site/out`` is the previous one, whole, every time; the next build cleans up."""
    import kb_factory

    sessions = work / "sessions"
    kb_factory.realistic(sessions)
    for i in range(sessions_n):
        scenarios.new_session(sessions, f"extra {i}")
    env = scenarios.env_for(sessions)
    first = _run(["build"], env, work, timeout=300)
    assert first.returncode == 0, first.stderr
    out = work / "site" / "out"
    whole = _site_files(out)
    rng = random.Random(seed)
    half = in_mkdocs = 0
    for _ in range(tries):
        scenarios.new_session(sessions, "one more")  # a change, so the new site differs
        proc = subprocess.Popen([*LOGKIT, "build"], env=env, cwd=work, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        new = out.with_name(f".out.{proc.pid}.new")
        try:
            scenarios.wait_for(lambda: new.exists() or proc.poll() is not None, timeout=120, what="mkdocs")
            in_mkdocs += new.exists()
            time.sleep(rng.uniform(0.0, 1.0))
        finally:
            proc.kill()
            proc.wait()
        files_now = _site_files(out)
        half += not (out / "index.html").exists() or files_now < whole
        whole = max(whole, files_now)
    again = _run(["build"], env, work, timeout=300)
    assert again.returncode == 0, again.stderr
    assert not list(out.parent.glob(".out.*.new")), "a killed build's directory was left behind"
    return {"tries": tries, "half_sites": half, "killed_in_mkdocs": in_mkdocs, "files": _site_files(out)}


# -- secrets in forms the first tables missed --------------------------------------------------------

PRIVATE_BODY = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQPRIVBODY0015a", "AAAAAAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5PRIVBODY0015b"]
#: (what is printed, the planted value that must not reach disk)
PRINTED = [
    ("\x1b[33mapi_key\x1b[0m=ANSIKEY0001", "ANSIKEY0001"),
    ("\x1b[1mBearer\x1b[0m ANSIBEARER0002", "ANSIBEARER0002"),
    ("password\x1b[0m: ANSIPASS0003", "ANSIPASS0003"),
    ("curl -u admin:CURLPASS0004 https://h/", "CURLPASS0004"),
    ("git clone https://TOKENUSER00050123456789@github.com/o/r", "TOKENUSER0005"),
    ("openssl enc --key KEYFLAG0006 -in x", "KEYFLAG0006"),
    ("mysql -uroot -pGLUEDPASS0007 db", "GLUEDPASS0007"),
    ('{"api_key": "ESC\\"APETAIL0008"}', "APETAIL0008"),
    ("aws AKIAQWERTYUIOPASDFGH", "QWERTYUIOPASDFGH"),
    ("glpat-GLPATVALUE0010abcdefgh", "GLPATVALUE0010"),
    ("xoxb-1234567890-1234567890123-SLACKVALUE0011abc", "SLACKVALUE0011"),
    ("sk_live_STRIPEVALUE0012", "STRIPEVALUE0012"),
    ("AIza" + "GCPVALUE0013" + "x" * 23, "GCPVALUE0013"),
    ("Cookie: session=COOKIEVALUE0014; theme=dark", "COOKIEVALUE0014"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(PRIVATE_BODY) + "\n-----END OPENSSH PRIVATE KEY-----",
     "PRIVBODY0015"),
]
#: secret-looking names, whatever their prefix (the allow-listed SGLANG_ one is recorded with the environment)
ENV = {"SGLANG_DB_PASS": "ENVPASS0016x", "TOKEN": "ENVTOKEN0017", "APIKEY": "ENVAPIKEY0018", "MY_PWD": "ENVPWD0019x"}
ARGV = ["-u", "admin:ARGVPASS0020", "--key", "ARGVKEY0021"]

CHILD = """
import os, sys
for text in json.loads(open(sys.argv[1], encoding="utf-8").read()):
    print(text, flush=True)
for name in {env}:
    print(name, "is", os.environ[name], flush=True)
"""


def secret_forms(sessions: Path, work: Path) -> dict[str, Any]:
    """Each form printed by a child of ``logkit run`` (and passed in its argv and environment), each
    also typed into a note: none of the planted values may be in any file under ``sessions``."""
    sid = scenarios.new_session(sessions)
    child = work / "child.py"
    child.write_text("import json\n" + CHILD.format(env=sorted(ENV)))
    env = scenarios.env_for(sessions, **ENV)
    texts = work / "printed.json"  # read by the child: the forms reach logkit through its output only
    texts.write_text(json.dumps([t for t, _p in PRINTED]))
    done = _run(["run", "--", sys.executable, str(child), str(texts), *ARGV], env, work)
    assert done.returncode == 0, done.stderr
    for text, _planted in PRINTED:
        assert _run(["note", text], env, work).returncode == 0
    shown = _run(["session", "show", sid], env, work).stdout
    planted = [p for _t, p in PRINTED] + [v for v in ENV.values()] + ["ARGVPASS0020", "ARGVKEY0021"]
    leaked = []
    for path in sessions.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            leaked += [f"{path.relative_to(sessions)}: {p}" for p in planted if p.encode() in data]
    leaked += [f"session show: {p}" for p in planted if p in shown]
    log = next((sessions / sid / "logs").glob("A*.log")).read_bytes()
    assert log.count(b"\n") == sum(t.count("\n") + 1 for t, _p in PRINTED) + len(ENV), "a redaction lost a line"
    return {"planted": len(planted), "leaked": leaked}


# -- the sweep ---------------------------------------------------------------------------------------


def sweep_env(work: Path) -> dict[str, str]:
    """A sweep's environment: the stand-in SGLang and nvidia-smi of ``tests/test_sweep.py``."""
    from test_sweep import BACKENDS, SMI  # the one description of the stand-in backends

    bindir = work / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "nvidia-smi").write_text(SMI)
    (bindir / "nvidia-smi").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": os.pathsep.join([str(FAKE), str(ROOT)]),
           "FAKE_SGLANG_BACKENDS": BACKENDS, "LOGKIT_SESSIONS": str(work / "sessions")}
    env.pop("LOGKIT_GPU_ARCH", None)
    return env


def write_spec(work: Path, *, backends: tuple[str, ...] = ("triton",), budget: str | None = None,
               flags: str = "", smoke: str = "What is 3 + 5?", name: str = "spec.toml") -> Path:
    text = (f'title = "issue 24"\ncommand = "{sys.executable} -m sglang.launch_server --model-path fake/model '
            f'--host 127.0.0.1 --port {free_port()} {flags}"\nsmoke = [{json.dumps(smoke)}]\nready_timeout = 20\n'
            f'grace = 5\n' + (f"budget = {budget}\n" if budget is not None else "")
            + f"\n[axes]\nmoe-runner-backend = {json.dumps(list(backends))}\n")
    path = work / name
    path.write_text(text)
    return path


def concurrent_sweeps(work: Path) -> dict[str, Any]:
    """Two ``logkit sweep`` of one spec at once: the second is refused naming the first one's pid;
    the first runs every cell, each working backend recorded as working."""
    env = sweep_env(work)
    spec = write_spec(work, backends=("triton", "flashinfer_cutlass"))
    first = subprocess.Popen([*LOGKIT, "sweep", str(spec)], env=env, cwd=work, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        locks = work / "sessions" / ".locks"
        scenarios.wait_for(lambda: any(p.read_text().strip() for p in locks.glob("sweep-*.lock"))
                           if locks.exists() else first.poll() is not None, timeout=60, what="the first sweep's lock")
        second = _run(["sweep", str(spec)], env, work, timeout=120)
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    refused = int(_clear(second) and "already running" in second.stderr)
    evs = [e for f in (work / "sessions").glob("*/events.jsonl") for e in map(json.loads, f.read_text().splitlines())]
    cells = {e["key"]: e["status"] for e in evs if e["kind"] == "sweep_cell"}
    assert set(cells.values()) == {"works"} and len(cells) == 2, cells
    return {"refused": refused, "named_pid": f"pid {first.pid}" in second.stderr, "cells": len(cells)}


def sweep_log_secrets(work: Path) -> dict[str, Any]:
    """A sweep whose command, smoke prompt and environment carry secrets: its log
    (``logs/sweep-SW-*.log``, committed with ``logs/``) holds none of them."""
    env = {**sweep_env(work), "HF_TOKEN": "SWEEPHFTOKEN0002"}
    spec = write_spec(work, flags="--api-key SWEEPAPIKEY0001", smoke="my password is SMOKEPASS0003")
    done = subprocess.run([*LOGKIT, "sweep", str(spec)], env=env, cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    logs = list((work / "sessions").glob("*/logs/sweep-SW-*.log"))
    assert len(logs) == 1
    planted = ["SWEEPAPIKEY0001", "SWEEPHFTOKEN0002", "SMOKEPASS0003"]
    leaked = [f"{p.relative_to(work)}: {s}" for p in (work / "sessions").rglob("*") if p.is_file()
              for s in planted if s.encode() in p.read_bytes()]
    return {"leaked": leaked, "log_bytes": logs[0].stat().st_size}


def build_beside_writers(work: Path, *, builds: int = 3) -> dict[str, Any]:
    """``logkit build`` while a ``logkit run`` loop appends: every build succeeds (one snapshot)."""
    sessions = work / "sessions"
    scenarios.new_session(sessions)
    env = scenarios.env_for(sessions)
    stop = time.monotonic() + 3600
    loop = subprocess.Popen(["bash", "-c", f"while :; do {' '.join(map(str, LOGKIT))} run -- true >/dev/null 2>&1; done"],
                            env=env, cwd=work, process_group=0)
    failed = 0
    try:
        for _ in range(builds):
            done = _run(["build"], env, work, timeout=300)
            failed += done.returncode != 0 or "Traceback" in done.stderr
            assert time.monotonic() < stop
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    shutil.rmtree(work / "site", ignore_errors=True)
    return {"builds": builds, "failed": failed}
