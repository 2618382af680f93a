"""Fault, load and stream scenarios run against logkit as real processes; shared by tests and bench.

Every scenario starts real ``python -m logkit`` processes on a real sessions directory, attacks
them (SIGKILL at a chosen point, a file-size limit, a flood of hostile bytes, a stubborn server,
many concurrent writers) and checks what is left on disk. A scenario returns a dict of figures and
raises :class:`AssertionError` naming what was lost. The tests run them small
(``tests/test_faults.py``, ``tests/test_load.py``); ``bench/report.py`` runs them full size.

Points where logkit is SIGKILLed, each hit deterministically:

* ``before-attempt``: the test holds the session's lock, so logkit blocks after spawning the child
  but before its attempt line is on disk;
* ``after-attempt``: as soon as the attempt line is on disk, before the child printed anything;
* ``stream``: at a random delay while the child prints;
* ``outcome``: the child has printed everything and exited; the test holds the session's lock, so
  logkit is blocked writing the end of the attempt (environment/outcome) when it is killed;
  ``torn=True`` then leaves half an outcome line in the file, as a kill inside ``write`` would.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOGKIT = [sys.executable, "-m", "logkit"]
KILL_POINTS = ("before-attempt", "after-attempt", "stream", "outcome")

# A server-like child: prints "seq N t=TIME" lines, keeps its own copy of every byte in REF, and
# (with IGNORE=1) outlives a broken stdout the way SGLang does.
SEQ_CHILD = textwrap.dedent(
    """
    import os, sys, time
    ref = open(sys.argv[1], "ab", buffering=0)
    count, delay, ignore, first_delay = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1", float(sys.argv[5])
    time.sleep(first_delay)
    i = 0
    while count < 0 or i < count:
        line = b"seq %08d t=%.6f\\n" % (i, time.time())
        try:
            os.write(1, line)
        except OSError:
            if not ignore:
                raise SystemExit(1)
        ref.write(line)
        i += 1
        if delay:
            time.sleep(delay)
    open(sys.argv[1] + ".done", "w").close()
    if len(sys.argv) > 6 and sys.argv[6] == "hold":  # exit only once told (the test holds the session lock by then)
        end = time.time() + 30
        while not os.path.exists(sys.argv[1] + ".go") and time.time() < end:
            time.sleep(0.01)
    else:
        time.sleep(0.5)
    """
)


def env_for(sessions: Path, **extra: str) -> dict[str, str]:
    """The environment of a logkit process on ``sessions``."""
    env = dict(os.environ)
    env["LOGKIT_SESSIONS"] = str(sessions)
    env.update(extra)
    return env


def logkit(sessions: Path, *args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run one logkit command to completion."""
    return subprocess.run([*LOGKIT, *args], capture_output=True, text=True, env=env_for(sessions),
                          timeout=timeout, **kw)


def new_session(sessions: Path, title: str = "attack") -> str:
    """Start a session; returns its id."""
    done = logkit(sessions, "session", "start", title, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


def events_path(sessions: Path, sid: str) -> Path:
    return sessions / sid / "events.jsonl"


def lines(sessions: Path, sid: str) -> list[dict[str, Any]]:
    """Every line of a session that is JSON (a torn line is skipped: the store's reader reports it)."""
    out = []
    for raw in events_path(sessions, sid).read_bytes().splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def alive(pid: int) -> bool:
    from logkit import procs

    return procs.alive(pid)


def children_of(ppid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            fields = stat.rsplit(b")", 1)[-1].split()
            if len(fields) > 2 and int(fields[1]) == ppid:
                out.append(int(name))
    return out


class SessionLock:
    """The session's write lock, held by the test (logkit's next write blocks on it)."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _attempt(sessions: Path, sid: str, label: str) -> dict[str, Any] | None:
    for event in lines(sessions, sid):
        if event.get("kind") == "attempt" and event.get("label") == label:
            return event
    return None


def kill_run(sessions: Path, sid: str, point: str, *, rng: random.Random, work: Path, torn: bool = False,
             count: int = 400) -> dict[str, Any]:
    """SIGKILL ``logkit run`` at ``point``; check the session, the log prefix and the survivors."""
    assert point in KILL_POINTS, point
    label = f"kill-{point}-{rng.randrange(1 << 30)}"
    ref = work / f"{label}.ref"
    ref.write_bytes(b"")
    ignore = "0" if point == "before-attempt" else "1"
    n, delay, first = {"before-attempt": (-1, 0.01, 0.0), "after-attempt": (-1, 0.01, 1.0),
                       "stream": (-1, 0.002, 0.0), "outcome": (count, 0.0, 0.0)}[point]
    child = [sys.executable, "-c", SEQ_CHILD, str(ref), str(n), str(delay), ignore, str(first),
             "hold" if point == "outcome" else "go"]
    lock = SessionLock(events_path(sessions, sid)) if point == "before-attempt" else None
    proc = subprocess.Popen([*LOGKIT, "run", "--label", label, "--grace", "1", "--", *child],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_for(sessions))
    figures: dict[str, Any] = {"point": point}
    try:
        if point == "before-attempt":
            pid = wait_for(lambda: children_of(proc.pid), 20, "the child to be spawned")[0]
            wait_for(lambda: ref.stat().st_size > 0, 10, "the child to print")
            proc.kill()
            proc.wait()
            assert lock is not None
            lock.release()
            # Nothing of the attempt is on disk; the child must not go on silently: with its
            # output pipe gone it gets EPIPE and ends (a child that ignored EPIPE would be orphaned:
            # logkit cannot know its pgid before the attempt line is written).
            wait_for(lambda: not alive(pid), 5, f"the unrecorded child {pid} to end")
            assert _attempt(sessions, sid, label) is None
            figures["unrecorded_child_ended"] = True
            return figures
        attempt = wait_for(lambda: _attempt(sessions, sid, label), 20, "the attempt line")
        log = sessions / sid / attempt["log"]["path"]
        if point == "stream":
            wait_for(lambda: log.exists() and log.stat().st_size > 0, 10, "output in the log")
            time.sleep(rng.uniform(0.05, 1.0))
        elif point == "outcome":
            expected = wait_for(lambda: (work / f"{label}.ref.done").exists() and ref.read_bytes(), 20, "the child")
            wait_for(lambda: log.exists() and log.stat().st_size == len(expected), 10, "the whole output in the log")
            lock = SessionLock(events_path(sessions, sid))
            (work / f"{label}.ref.go").touch()  # the child exits now: logkit's outcome write waits on the lock held
            wait_for(lambda: not alive(attempt["pid"]), 5, "the child to exit")
            time.sleep(0.2)
        killed_at = time.time()
        proc.kill()
        proc.wait()
        if lock is not None:
            if torn:
                os.write(lock.fd, b'{"v":1,"kind":"outcome","session":"' + sid.encode() + b'","attempt":"'
                         + attempt["short_id"].encode() + b'","status":"exit_')
            lock.release()
        # The next logkit command: loads the session, marks the attempt abandoned, names survivors.
        show = logkit(sessions, "session", "show", sid, "--json")
        assert show.returncode == 0, show.stderr
        shown = json.loads(show.stdout)
        outcomes = [e for e in shown if e.get("kind") == "outcome" and e.get("attempt") == attempt["short_id"]]
        assert len(outcomes) == 1 and outcomes[0]["status"] == "abandoned", outcomes
        outcome = outcomes[0]
        survivors = [s["pid"] for s in outcome.get("survivors", [])]
        if point in ("after-attempt", "stream"):
            assert attempt["pid"] in survivors, (attempt["pid"], survivors)
            assert str(attempt["pid"]) in show.stderr, f"survivor {attempt['pid']} not reported: {show.stderr!r}"
            figures["survivors_reported"] = len(survivors)
        else:
            assert survivors == [], survivors
        if torn:
            assert "not valid JSON" in show.stderr or "torn" in show.stderr, show.stderr
        # The log is a byte-exact prefix of what the child printed, ending on a line boundary.
        got = log.read_bytes() if log.exists() else b""
        printed = ref.read_bytes()
        assert printed.startswith(got), "the log is not a prefix of what the child printed"
        assert not got or got.endswith(b"\n")
        if point == "outcome":
            assert got == printed, f"lost {len(printed) - len(got)} bytes"
        if point == "stream" and got:
            last_t = float(got.rstrip(b"\n").rsplit(b"t=", 1)[1])
            lag = killed_at - last_t
            figures["lag_s"] = lag
            # every line printed more than the partial-line age + a tick before the kill is kept
            assert lag < 2.0, f"the log misses the last {lag:.2f}s of output before the kill"
        tail_is_readable(outcome.get("tail", []), got)
        figures["log_bytes"] = len(got)
        assert outcome["log"]["size"] == len(got)
        return figures
    finally:
        if lock is not None:
            lock.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        att = _attempt(sessions, sid, label)
        if att is not None:
            try:
                os.killpg(att["pgid"], signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


# -- the disk fills up -------------------------------------------------------------------------

FILL_CHILD = textwrap.dedent(
    """
    import sys
    n = int(sys.argv[1])
    out = sys.stdout.buffer
    for i in range(n):
        out.write(b"fill %08d ..........................................................\\n" % i)
    out.flush()
    """
)


def disk_full_run(sessions: Path, sid: str, *, limit: int = 256 * 1024, lines_: int = 50_000) -> dict[str, Any]:
    """``logkit run`` under RLIMIT_FSIZE: the child finishes and its output reaches logkit's stdout."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    events_before = events_path(sessions, sid).stat().st_size
    assert events_before < limit // 2, "the session file itself must fit under the limit"
    done = subprocess.run([*LOGKIT, "run", "--label", "disk-full", "--", sys.executable, "-c", FILL_CHILD, str(lines_)],
                          capture_output=True, env=env_for(sessions), preexec_fn=limited, timeout=120)
    expected = b"".join(b"fill %08d ..........................................................\n" % i
                        for i in range(lines_))
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected, "the terminal lost output when the disk filled up"
    outcome = [e for e in lines(sessions, sid) if e.get("kind") == "outcome"][-1]
    assert outcome["status"] == "exit_ok", outcome["status"]
    reason = outcome.get("capture_truncated") or ""
    assert "log write failed" in reason and "File too large" in reason, reason
    log = sessions / sid / outcome["log"]["path"]
    stored = log.read_bytes()
    assert 0 < len(stored) <= limit and expected.startswith(stored)
    assert outcome["log"]["size"] == len(stored), "outcome.log.size does not describe the stored file"
    import hashlib

    assert outcome["log"]["sha256"] == hashlib.sha256(stored).hexdigest()
    return {"printed": len(expected), "stored": len(stored), "reason": reason}


# -- hostile output at full speed ----------------------------------------------------------------

FLOOD_CHILD = textwrap.dedent(
    """
    import os, random, sys, time
    seed, seconds, ref = int(sys.argv[1]), float(sys.argv[2]), open(sys.argv[3], "wb")
    rng = random.Random(seed)
    binary = bytes(b for b in range(256) if b != 0x40)  # no '@': no accidental URL credentials
    end = time.monotonic() + seconds
    block = 0
    def put(data):
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]
        ref.write(data)
    while True:
        put(b"".join(b"flood %d line %d the quick brown fox\\n" % (block, i) for i in range(2000)))
        put(b"bad utf8 \\xff\\xfe\\xc3\\x28\\xed\\xa0\\x80 %d\\n" % block)
        put(bytes(rng.choice(binary) for _ in range(4096)))
        put(b"long " * rng.randrange(20_000, 80_000))  # a very long line without a newline ...
        put(b"\\n")
        put(b"".join(b"\\rprogress %3d%% |%s" % (p, b"#" * (p // 4)) for p in range(0, 101, 5)) + b"\\n")
        put(b"\\x1b[32mgreen %d\\x1b[0m\\r\\n" % block)
        block += 1
        if time.monotonic() > end:
            break
    put(b"last line of the flood\\n")
    ref.close()
    """
)


def tail_is_readable(tail: list[dict[str, Any]], log: bytes) -> None:
    """Every tail line names its real line number in ``log`` and holds no line break."""
    raw_lines = log.split(b"\n")
    for entry in tail:
        text, number = entry["text"], entry["line"]
        assert "\n" not in text and "\r" not in text, f"line {number}: a line break inside {text[:80]!r}"
        assert len(text) <= 2000
        source = raw_lines[number - 1].decode("utf-8", "replace")
        assert text in source, f"tail line {number} {text[:60]!r} is not on line {number} of the log"


def flood_run(sessions: Path, sid: str, work: Path, *, seconds: float = 2.0, seed: int = 1) -> dict[str, Any]:
    """The child floods hostile bytes; the raw log and logkit's stdout equal what it printed."""
    from logkit.capture.redact import Redactor

    ref = work / f"flood-{seed}.ref"
    term = work / f"flood-{seed}.stdout"
    start = time.perf_counter()
    with open(term, "wb") as out:
        done = subprocess.run([*LOGKIT, "run", "--label", f"flood-{seed}", "--", sys.executable, "-c", FLOOD_CHILD,
                               str(seed), str(seconds), str(ref)], stdout=out, stderr=subprocess.PIPE,
                              env=env_for(sessions), timeout=seconds * 20 + 60)
    took = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    printed = ref.read_bytes()
    assert Redactor.for_run({}, []).chunk(printed) == printed, "precondition: the flood holds no secret shape"
    assert term.read_bytes() == printed, "logkit's stdout differs from what the child printed"
    outcome = [e for e in lines(sessions, sid) if e.get("kind") == "outcome"][-1]
    log = (sessions / sid / outcome["log"]["path"]).read_bytes()
    assert log == printed, f"raw log differs: {len(log)} bytes stored of {len(printed)} printed"
    assert not outcome.get("capture_truncated"), outcome.get("capture_truncated")
    tail_is_readable(outcome["tail"], log)
    show = logkit(sessions, "session", "show", sid)
    assert show.returncode == 0, show.stderr
    term.unlink()
    ref.unlink()
    return {"bytes": len(printed), "seconds": took, "mb_per_s": len(printed) / took / 1e6}


# -- a stubborn server with grandchildren ----------------------------------------------------------

STUBBORN = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    def deaf():
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
    deaf()
    code = ("import os, signal, time\\n"
            "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\\n"
            "time.sleep(120)")
    kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    # a grandchild that double-forks: its parent exits, init adopts it, it stays in the group
    r, w = os.pipe()
    if os.fork() == 0:
        if os.fork() == 0:
            os.write(w, b"%d\\n" % os.getpid())
            time.sleep(120)
            os._exit(0)
        os._exit(0)
    orphan = int(os.read(r, 64).split()[0])
    print("pids", os.getpid(), orphan, *[k.pid for k in kids], flush=True)
    while True:
        time.sleep(1)
    """
)


def stubborn_run(sessions: Path, sid: str, *, grace: float = 1.0, sig: int = signal.SIGTERM) -> dict[str, Any]:
    """SIGTERM to logkit; the deaf group gets SIGKILL after the grace period; nothing survives."""
    proc = subprocess.Popen([*LOGKIT, "run", "--label", "stubborn", "--grace", str(grace), "--", sys.executable, "-c",
                             STUBBORN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(sessions))
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()[1:]]
        assert len(pids) == 4, pids
        sent = time.monotonic()
        proc.send_signal(sig)
        rc = proc.wait(timeout=grace + 20)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 128 + signal.SIGKILL, rc
    for pid in pids:
        wait_for(lambda pid=pid: not alive(pid), 3, f"pid {pid} to be gone")
    outcome = [e for e in lines(sessions, sid) if e.get("kind") == "outcome"][-1]
    assert outcome["status"] == "interrupted" and "SIGKILL" in outcome["label"], outcome
    assert outcome.get("survivors", []) == []
    return {"processes": len(pids), "stopped_in_s": took}


# -- many concurrent writers -----------------------------------------------------------------------

def concurrent_runs(sessions: Path, sid: str, *, workers: int = 16, seconds: float = 0.0, runs: int = 1,
                    lines_per_run: int = 50) -> dict[str, Any]:
    """``workers`` threads each loop ``logkit run`` (``runs`` times, or for ``seconds``) on one session."""
    done_labels: list[str] = []
    errors: list[str] = []
    guard = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(w: int) -> None:
        j = 0
        while (j < runs) if not seconds else (time.monotonic() < deadline or j == 0):
            label = f"w{w}-r{j}"
            child = f"import sys\nfor i in range({lines_per_run}): print('{label} line', i)\n"
            res = subprocess.run([*LOGKIT, "run", "--label", label, "--", sys.executable, "-c", child],
                                 capture_output=True, env=env_for(sessions), timeout=300)
            with guard:
                if res.returncode != 0:
                    errors.append(f"{label}: rc {res.returncode}: {res.stderr[-300:]!r}")
                done_labels.append(label)
            j += 1

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    assert not errors, errors[:3]
    from logkit.store import Store

    result = Store(sessions).handle(sid).read(strict=True)  # no torn or invalid line anywhere
    events = result.events
    ids = [e.id for e in events]
    assert len(ids) == len(set(ids)), "an event appears twice"
    attempts = [e for e in events if e.kind == "attempt"]
    by_label: dict[str, Any] = {}
    for a in attempts:
        assert a.label not in by_label, f"attempt {a.label} recorded twice"
        by_label[a.label] = a
    assert set(by_label) == set(done_labels), set(done_labels) ^ set(by_label)
    shorts = [a.short_id for a in attempts]
    assert len(shorts) == len(set(shorts)), "a short id was given twice"
    outcomes = {}
    for o in (e for e in events if e.kind == "outcome"):
        assert o.attempt not in outcomes, f"two outcomes for {o.attempt}"
        outcomes[o.attempt] = o
    envs = [e.attempt for e in events if e.kind == "environment"]
    assert len(envs) == len(set(envs))
    for label, a in by_label.items():
        o = outcomes.get(a.short_id)
        assert o is not None and o.status == "exit_ok", (label, o and o.status)
        log = (sessions / sid / a.log.path).read_text()
        assert log == "".join(f"{label} line {i}\n" for i in range(lines_per_run)), f"log of {label} differs"
    return {"workers": workers, "runs": len(done_labels), "events": len(events), "seconds": took}


# -- a million events into frames ------------------------------------------------------------------

def write_big_store(root: Path, events: int, *, per_session: int = 4000) -> int:
    """Write ``events`` valid events (attempt, environment, outcome, metric per attempt) directly."""
    from logkit.events import Attempt, Environment, Gpu, LaunchConfig, Metric, Outcome, Session

    env = Environment(host="gpu-node-07", gpus=[Gpu(index=i, name="NVIDIA RTX PRO 6000 Blackwell", compute_cap="12.0")
                                                for i in range(8)], packages={"sglang": "0.5.23"})
    written = 0
    s = 0
    while written < events:
        sid = f"2026-11-{s:05d}-big"
        d = root / sid
        (d / "logs").mkdir(parents=True, exist_ok=True)
        out = [Session(session=sid, title=f"big {s}").model_dump_json(exclude_none=True)]
        a_tpl = Attempt(session=sid, short_id="A1", argv=["python", "-m", "sglang.launch_server", "--tp", "8"],
                        role="launch", environment=env,
                        launch=LaunchConfig(parser="sglang", fingerprint={"moe_runner_backend": "triton",
                                                                          "model_path": "zai-org/GLM-5-NVFP4"}))
        o_tpl = Outcome(session=sid, attempt="A1", status="ready", duration_s=12.5)
        m_tpl = Metric(session=sid, name="output_throughput", value=1.0, attempt="A1", server_attempt="A1")
        a_js, o_js, m_js = (json.loads(t.model_dump_json(exclude_none=True)) for t in (a_tpl, o_tpl, m_tpl))
        n = 1
        written += 1
        while len(out) < per_session and written < events:
            short = f"A{n}"
            a_js.update(id=os.urandom(16).hex(), short_id=short)
            o_js.update(id=os.urandom(16).hex(), attempt=short, status="ready" if n % 3 else "oom")
            m_js.update(id=os.urandom(16).hex(), attempt=short, server_attempt=short, value=float(n))
            for item in (a_js, o_js, m_js):
                out.append(json.dumps(item, separators=(",", ":")))
            written += 3
            n += 1
        (d / "events.jsonl").write_text("\n".join(out) + "\n")
        s += 1
    return written


def frames_run(root: Path, events: int) -> dict[str, Any]:
    """Write ``events`` events, then time load + frames; every attempt must become a row."""
    from logkit.builder.frames import make_frames
    from logkit.builder.load import load

    t0 = time.perf_counter()
    total = write_big_store(root, events)
    gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    loaded = load(root)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    frames = make_frames(loaded)
    t_frames = time.perf_counter() - t0
    assert not loaded.problems, loaded.problems[:3]
    # every event in the snapshot a build reads; every attempt's line read back as its facts say
    n_events = loaded.conn.execute("SELECT count(*) FROM events").fetchone()[0]
    assert n_events == total, (n_events, total)
    n_attempts = sum(len(s.heavy.attempts) for s in loaded.sessions.values())
    assert len(frames.facts) == n_attempts, (len(frames.facts), n_attempts)
    assert len(frames.metrics) == n_attempts
    return {"events": total, "write_s": gen, "load_s": t_load, "frames_s": t_frames}


# -- hand-edited sessions --------------------------------------------------------------------------

def hand_edited_build(sessions: Path, work: Path) -> dict[str, Any]:
    """A good session next to a hand-edited one; every bad line gets a file:line message, the rest builds."""
    import uuid

    good = new_session(sessions, "good")
    assert logkit(sessions, "run", "--", "echo", "hi").returncode == 0
    assert logkit(sessions, "decide", "first decision", "--decision", "x").returncode == 0
    bad = new_session(sessions, "bad")
    path = events_path(sessions, bad)

    def ev(**kw: Any) -> str:
        return json.dumps({"v": 1, "id": uuid.uuid4().hex, "session": bad, "ts": "2026-12-02T10:00:00Z", **kw})

    dup = uuid.uuid4().hex
    # (line text, what the message must say); line numbers start at 2 (the session line is 1)
    planted = [
        (ev(kind="note", text="kept before the bad lines"), None),
        (ev(kind="gpu_reset", text="an unknown kind"), "gpu_reset"),
        (ev(kind="note", text="from the future", v=99), "upgrade logkit"),
        ('{"kind": "note", "text": "a hand edit lost its quote}', "not valid JSON"),
        (ev(kind="attempt", short_id="A1", argv=["x"]), None),
        (ev(kind="outcome", attempt="A1", status="exit_ok"), None),
        (ev(kind="attempt", short_id="A1", argv=["y"]), "A1 is already taken"),
        (ev(kind="note", text="dup id 1", id=dup), None),
        (ev(kind="note", text="dup id 2", id=dup), "repeats line"),
        (ev(kind="outcome", attempt="A7", status="exit_ok"), "no earlier line records"),
        (ev(kind="decision", decision_id="DR-0002", title="supersedes nothing", supersedes="DR-0999"), "DR-0999"),
        (ev(kind="note", text="kept after the bad lines"), None),
    ]
    torn = ev(kind="note", text="torn by a kill")[:40]
    with open(path, "a") as fh:
        fh.write("\n".join(text for text, _ in planted) + "\n" + torn)
    out, docs = work / "out", work / "docs"
    done = logkit(sessions, "build", "--out", str(out), "--docs", str(docs))
    assert done.returncode == 0, done.stderr
    named = 0
    for number, (_text, message) in enumerate(planted, start=2):
        if message is None:
            continue
        want = f"{path}:{number}:"
        hit = [ln for ln in done.stderr.splitlines() if want in ln]
        assert hit and message in hit[0], f"line {number} ({message}) not named: {done.stderr}"
        named += 1
    assert f"{path}:{len(planted) + 2}: torn last line" in done.stderr
    named += 1
    show = logkit(sessions, "session", "show", bad)
    assert show.returncode == 0 and "kept before" in show.stdout and "kept after" in show.stdout, show.stderr
    assert "Traceback" not in done.stderr + show.stderr
    html = "\n".join(p.read_text(errors="replace") for p in out.rglob("*.html"))
    for text in ("first decision", "kept after the bad lines", "supersedes nothing", good, bad):
        assert text in html, f"{text!r} missing from the built site"
    strict = logkit(sessions, "build", "--strict", "--out", str(work / "out2"), "--docs", str(work / "docs2"))
    assert strict.returncode == 2 and f"{path}:3:" in strict.stderr and "fix:" in strict.stderr
    return {"bad_lines": named}


# -- planted secrets and injections, scanned on disk and in the built site -----------------------

SECRETS = {
    "env": "hf_PlantedEnvTokenAbcdefghij0123456789",
    "odd_env": "zq8-planted-odd-shape-77",
    "flag": "planted-flag-key-31337",
    "url": "planted-url-pass-4242",
    "printed": "sk-plantedPrintedKey0123456789abcdef",
    "hypothesis": "ghp_plantedHypothesisToken0123456789abcdef",
    "note": "hf_plantedNoteToken0123456789abcdefgh",
    "decision": "planted-decision-pass-9",
    "todo": "hf_plantedTodoToken0123456789abcdefghij",
}
INJECTIONS = ['<script>window.__pwned=1</script>', '<img src=x onerror="window.__pwned=2">',
              '[click](javascript:alert(1))', '[exfil](https://evil.example/x)', '![t](https://evil.example/t.png)']
PLANT = " ".join(INJECTIONS)


def _scan_html(path: Path, site_url: str | None) -> list[str]:
    from html.parser import HTMLParser

    found: list[str] = []

    class Scan(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            for name, value in attrs:
                value = value or ""
                if name.startswith("on") and "__pwned" in value:
                    found.append(f"{path}: <{tag} {name}=...> from user text")
                if name in ("src", "href", "srcset", "action", "data") and value:
                    low = value.strip().lower()
                    if low.startswith("javascript:"):
                        found.append(f"{path}: <{tag} {name}={value!r}>")
                    if low.startswith(("http://", "https://", "//")) and not (site_url and value.startswith(site_url)):
                        found.append(f"{path}: <{tag} {name}={value!r}> points at a network host")

        def handle_data(self, data: str) -> None:
            if self.lasttag == "script" and "__pwned" in data:
                found.append(f"{path}: a <script> from user text ran")

    Scan().feed(path.read_text(errors="replace"))
    return found


def secrets_and_site_scan(sessions: Path, work: Path) -> dict[str, Any]:
    """Plant tokens and injections through every way in; no file under sessions/ or the site holds one."""
    new_session(sessions, "secrets " + PLANT)
    env = env_for(sessions, HF_TOKEN=SECRETS["env"], MY_SERVICE_PASSWORD=SECRETS["odd_env"],
                  SGLANG_PROXY=f"http://u:{SECRETS['url']}@proxy.internal:3128")
    child = (f"import os\nprint('token', os.environ['HF_TOKEN'], os.environ['MY_SERVICE_PASSWORD'])\n"
             f"print('key {SECRETS['printed']}')\nprint('proxy https://u:{SECRETS['url']}@p.internal/')\n"
             f"print({PLANT!r})\n")
    done = subprocess.run([*LOGKIT, "run", "--label", PLANT, "--", sys.executable, "-c", child, "--api-key",
                           SECRETS["flag"]], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    steps = [
        ["hypothesis", "add", f"flashinfer works with HF_TOKEN={SECRETS['hypothesis']} {PLANT}"],
        ["note", f"the key was {SECRETS['note']} {PLANT}"],
        ["decide", f"Use triton {PLANT}", "--decision", f"password={SECRETS['decision']}", "--option",
         f"{PLANT}: lost"],
    ]
    for args in steps:
        res = logkit(sessions, *args)
        assert res.returncode == 0, (args, res.stderr)
    todo = work / "todos.json"
    todo.write_text(json.dumps({"todos": [{"content": f"retry with {SECRETS['todo']} {PLANT}", "status": "pending"}]}))
    res = logkit(sessions, "todo", "import", str(todo))
    assert res.returncode == 0, res.stderr
    out = work / "site"
    res = logkit(sessions, "build", "--out", str(out), "--docs", str(work / "docs"))
    assert res.returncode == 0, res.stderr
    leaks = []
    scanned = 0
    for root in (sessions, out, work / "docs"):
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                scanned += 1
                leaks += [f"{name} in {path}" for name, value in SECRETS.items() if value.encode() in data]
    assert not leaks, leaks
    from logkit.builder.site import site_url

    url = site_url()
    bad: list[str] = []
    pages = list(out.rglob("*.html"))
    for page in pages:
        bad += _scan_html(page, url)
    assert not bad, bad[:5]
    html = "\n".join(p.read_text(errors="replace") for p in pages)
    assert "window.__pwned=1" in html, "the planted text must still be shown, as text"
    return {"files_scanned": scanned, "pages": len(pages), "secrets": len(SECRETS), "injections": len(INJECTIONS)}
