"""`logkit run` as a real process: exit codes, signals, the process group, survivors, abandonment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from logkit.events import Attempt, AttemptEnvironment, Outcome
from logkit.store import Store

LOGKIT = [sys.executable, "-m", "logkit"]


def _start_session(logkit) -> None:
    done = logkit("session", "start", "run tests")
    assert done.returncode == 0, done.stderr


def _events(sessions: Path) -> list:
    store = Store(sessions)
    (sid,) = store.session_ids()
    result = store.handle(sid).read(strict=True)  # every line logkit run wrote validates
    return result.events


def _outcome(sessions: Path, attempt: str = "A1") -> Outcome:
    return next(e for e in _events(sessions) if isinstance(e, Outcome) and e.attempt == attempt)


def _wait_for(predicate, timeout: float = 8.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _alive(pid: int) -> bool:
    from logkit import procs

    return procs.alive(pid)


@pytest.mark.slow
def test_exit_code_and_streams_propagate(sessions: Path, logkit) -> None:
    _start_session(logkit)
    for text in ("one", "two", "three"):
        assert logkit("hypothesis", "add", text).returncode == 0
    done = logkit("run", "--tests", "H3", "--label", "x", "--", "bash", "-c", "echo out; echo err >&2; exit 3")
    assert done.returncode == 3
    assert done.stdout == "out\n"  # stdout belongs to the child
    assert done.stderr.startswith("err\n")
    events = _events(sessions)
    attempt = next(e for e in events if isinstance(e, Attempt))
    assert attempt.short_id == "A1" and attempt.tests == ["H3"] and attempt.label == "x"
    assert attempt.pgid == attempt.pid and attempt.recorder_pid and attempt.role == "command"
    env_event = next(e for e in events if isinstance(e, AttemptEnvironment) and e.attempt == "A1")
    assert env_event.environment.probes["packages"].error == "not a Python command"
    outcome = _outcome(sessions)
    assert (outcome.status, outcome.exit_code, outcome.signal) == ("other_crash", 3, None)
    log = sessions / attempt.session / "logs" / "A1.log"
    assert sorted(log.read_bytes().splitlines()) == [b"err", b"out"]
    assert outcome.log.size == log.stat().st_size
    import hashlib

    assert outcome.log.sha256 == hashlib.sha256(log.read_bytes()).hexdigest()
    assert [t.text for t in outcome.tail] and outcome.duration_s is not None


@pytest.mark.slow
def test_signal_death_is_128_plus_n(sessions: Path, logkit) -> None:
    _start_session(logkit)
    done = logkit("run", "--", "bash", "-c", "kill -TERM $$")
    assert done.returncode == 143
    outcome = _outcome(sessions)
    # SIGTERM from outside logkit stops the command (logkit/data/statuses.toml): it refutes nothing
    assert (outcome.status, outcome.signal, outcome.exit_code) == ("interrupted", 15, None)
    assert logkit("run", "--", "true").returncode == 0
    assert _outcome(sessions, "A2").status == "exit_ok"
    # a shell reports its child's SIGKILL as exit code 137: the same status as the signal itself
    done = logkit("run", "--", "bash", "-c", "bash -c 'kill -KILL $$'; exit $?")
    assert done.returncode == 137
    outcome = _outcome(sessions, "A3")
    assert (outcome.status, outcome.exit_code, outcome.label) == ("killed", 137, "killed by SIGKILL (the OOM killer?)")


@pytest.mark.slow
def test_missing_command_is_a_clear_error(sessions: Path, logkit) -> None:
    _start_session(logkit)
    done = logkit("run", "--", "no-such-command-xyz")
    # as a shell would say it: 127 for a command that is not there, 126 for one that cannot run
    assert done.returncode == 127 and "no-such-command-xyz" in done.stderr and "fix:" in done.stderr
    assert done.stderr.startswith("logkit: error: ")
    not_exec = sessions.parent / "not-executable.sh"
    not_exec.write_text("echo hi\n")
    assert logkit("run", "--", str(not_exec)).returncode == 126


@pytest.mark.slow
def test_tests_must_name_a_hypothesis_and_the_log_path_opens_from_here(sessions: Path, logkit, tmp_path: Path) -> None:
    _start_session(logkit)
    done = logkit("run", "--tests", "H9", "--", "true")
    assert done.returncode == 2 and "--tests H9" in done.stderr and "no hypothesis H9" in done.stderr
    assert logkit("hypothesis", "add", "true works").returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = logkit("run", "--tests", "H1", "--label", "the one that works", "--", "true", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    printed = done.stderr.strip().rsplit("; log ", 1)[1]
    assert (elsewhere / printed).resolve() == (sessions / Store(sessions).session_ids()[0] / "logs" / "A1.log").resolve()


STUBBORN = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    code = "import signal,time\\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\\ntime.sleep(60)"
    kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    print("pids", os.getpid(), *[k.pid for k in kids], flush=True)
    time.sleep(60)
    """
)


@pytest.mark.slow
def test_sigint_forwarded_then_sigkill_after_grace_leaves_no_survivor(sessions: Path, logkit, tmp_path: Path) -> None:
    _start_session(logkit)
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    proc = subprocess.Popen([*LOGKIT, "run", "--grace", "1", "--", sys.executable, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        pids = [int(p) for p in line.split()[1:]]
        assert len(pids) == 3
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=15)
    finally:
        proc.kill()
    assert rc == 128 + signal.SIGKILL
    for pid in pids:
        _wait_for(lambda pid=pid: not _alive(pid), 3)
    outcome = _outcome(sessions)
    assert outcome.status == "interrupted" and "SIGINT" in outcome.label and "SIGKILL" in outcome.label
    assert outcome.survivors == []


@pytest.mark.slow
def test_survivors_of_a_normal_exit_are_recorded(sessions: Path, logkit) -> None:
    _start_session(logkit)
    done = logkit("run", "--", "bash", "-c", "sleep 30 & echo bg $!")
    pid = int(done.stdout.split()[1])
    try:
        outcome = _outcome(sessions)
        assert outcome.status == "exit_ok"
        assert [s.pid for s in outcome.survivors] == [pid]
        assert "sleep 30" in (outcome.survivors[0].cmdline or "")
        assert "still running" in done.stderr
    finally:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_logkit_sigkilled_mid_run_is_marked_abandoned_and_log_prefix_kept(sessions: Path, logkit) -> None:
    _start_session(logkit)
    # Like a server, the child outlives a broken stdout (it ignores the write errors).
    child = ("import os, time\nfor i in range(1, 10000):\n    try:\n        os.write(1, b'line %d\\n' % i)\n"
             "    except OSError:\n        pass\n    time.sleep(0.02)")
    proc = subprocess.Popen([*LOGKIT, "run", "--", sys.executable, "-c", child],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (sid,) = Store(sessions).session_ids()
    log = sessions / sid / "logs" / "A1.log"
    _wait_for(lambda: log.exists() and log.read_bytes().count(b"\n") >= 10)
    proc.kill()
    proc.wait()
    attempt = next(e for e in _events(sessions) if isinstance(e, Attempt))
    try:
        show = logkit("session", "show", "--json")
        assert show.returncode == 0, show.stderr
        outcome = _outcome(sessions)
        assert outcome.status == "abandoned"
        assert attempt.pid in [s.pid for s in outcome.survivors]  # the child outlived its recorder
        lines = log.read_bytes().decode().splitlines()
        assert lines and lines == [f"line {i}" for i in range(1, len(lines) + 1)]
    finally:
        os.killpg(attempt.pgid, signal.SIGKILL)


def test_json_summary_goes_to_a_file_not_stdout(sessions: Path, logkit, tmp_path: Path) -> None:
    _start_session(logkit)
    target = tmp_path / "summary.json"
    done = logkit("run", "--json", str(target), "--", "echo", "hi")
    assert done.stdout == "hi\n"
    data = json.loads(target.read_text())
    assert data["exit_status"] == 0 and data["outcome"]["status"] == "exit_ok" and data["attempt"]["short_id"] == "A1"


@pytest.mark.slow
def test_hang_timeout_stops_a_silent_command(sessions: Path, logkit) -> None:
    _start_session(logkit)
    done = logkit("run", "--hang-timeout", "1", "--grace", "1", "--", "sleep", "30")
    assert done.returncode == 128 + signal.SIGTERM
    outcome = _outcome(sessions)
    assert outcome.status == "hang" and "--hang-timeout" in outcome.label


@pytest.mark.parametrize("mode", ["session-flag"])
def test_session_flag_and_no_session_error(sessions: Path, logkit, mode: str) -> None:
    done = logkit("run", "--", "true")
    assert done.returncode == 2 and "logkit session start" in done.stderr
    _start_session(logkit)
    (sid,) = Store(sessions).session_ids()
    assert logkit("run", "--session", sid, "--", "true").returncode == 0


def test_sigterm_to_logkit_reaches_a_cooperative_child(sessions: Path, logkit) -> None:
    _start_session(logkit)
    child = "import signal, sys, time\nprint('up', flush=True)\ntime.sleep(30)"
    proc = subprocess.Popen([*LOGKIT, "run", "--grace", "5", "--", sys.executable, "-c", child],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "up\n"
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=10)
    finally:
        proc.kill()
    assert rc == 128 + signal.SIGTERM
    outcome = _outcome(sessions)
    assert outcome.status == "interrupted" and outcome.signal == signal.SIGTERM
    assert "SIGKILL" not in outcome.label  # it ended within the grace period


def test_stdin_is_passed_through_and_help_documents_grace(sessions: Path, logkit) -> None:
    _start_session(logkit)
    done = logkit("run", "--", "cat", input="from stdin\n")
    assert done.returncode == 0 and done.stdout == "from stdin\n"
    helptext = logkit("run", "--help")
    assert helptext.returncode == 0 and "--grace" in helptext.stdout and "75" in helptext.stdout


def test_signal_still_forwarded_after_the_child_closed_its_output(sessions: Path, logkit) -> None:
    _start_session(logkit)
    # SIGINT as a terminal leaves it: a suite started in the background by a script (no job control)
    # inherits it ignored, and so would the child, which then outlives the SIGINT (exit 137 at the grace)
    proc = subprocess.Popen([*LOGKIT, "run", "--grace", "5", "--", "bash", "-c", "echo up; exec >/dev/null 2>&1; sleep 30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline() == "up\n"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=10)
    finally:
        proc.kill()
    assert rc in (128 + signal.SIGINT, 128 + signal.SIGTERM, 0, 130)
    assert _outcome(sessions).status == "interrupted"
