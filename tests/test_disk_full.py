"""A really full disk and a really read-only store: a small tmpfs mounted for the test (root only;
skipped where mounting is not allowed; tests/test_faults.py covers a full disk with RLIMIT_FSIZE)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_logkit

pytestmark = pytest.mark.slow  # fault injection: a full filesystem under real processes

FILL = "import sys\nfor i in range(int(sys.argv[1])): sys.stdout.write('fill %08d %s\\n' % (i, '.' * 60))\n"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, unmounted afterwards."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); RLIMIT_FSIZE tests cover a full disk")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _lk(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_logkit(*args, env={"LOGKIT_SESSIONS": str(store)}, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _events(store: Path, sid: str) -> list[dict]:
    raw = (store / sid / "events.jsonl").read_bytes()
    assert raw.endswith(b"\n"), "the events file ends in a torn line"
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def test_a_full_disk_ends_in_a_whole_outcome_a_warning_and_commands_that_read(disk: Path) -> None:
    store = disk / "sessions"
    assert _lk(store, "session", "start", "full", "--id", "full").returncode == 0
    lines = 40_000  # ~2.9 MB printed onto a 1 MiB disk
    done = subprocess.run([sys.executable, "-m", "logkit", "run", "--", sys.executable, "-c", FILL, str(lines)],
                          capture_output=True, env={**os.environ, "LOGKIT_SESSIONS": str(store)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(b"\n") == lines, "the terminal lost output when the disk filled up"
    assert b"logkit: warning: the log stopped at" in done.stderr and b"No space left on device" in done.stderr
    (outcome,) = [e for e in _events(store, "full") if e["kind"] == "outcome"]
    assert outcome["status"] == "exit_ok" and "No space left on device" in outcome["capture_truncated"]
    assert not list((store / "full" / "logs").glob(".*.reserve"))
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh, pytest.raises(OSError):  # the outcome's reserve was freed: fill it again
        while True:
            fh.write(b"x" * 4096)
    # the disk is full: reading commands work, a new run still runs its command
    status = _lk(store, "status", "--json")
    assert status.returncode == 0, status.stderr
    again = _lk(store, "run", "--", "sh", "-c", "echo still-runs")
    assert again.returncode == 0 and again.stdout == "still-runs\n", again.stderr
    started = _lk(store, "session", "start", "another", "--id", "another")
    assert started.returncode == 2 and "No space left on device" in started.stderr and "fix:" in started.stderr
    assert not (store / "another").exists(), "a failed session start left an empty session directory"
    # space comes back: the run that exited 0 still reads exit_ok, never "abandoned"
    filler.unlink()
    statuses = [e["status"] for e in _events(store, "full") if e["kind"] == "outcome"]
    assert statuses[0] == "exit_ok" and "abandoned" not in statuses, statuses
    assert _lk(store, "status").returncode == 0


def test_a_read_only_store_gives_clear_errors_and_still_runs_the_command(disk: Path) -> None:
    store = disk / "sessions"
    assert _lk(store, "session", "start", "ro", "--id", "ro").returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    for args in (["session", "start", "x"], ["decide", "use cutlass"], ["hypothesis", "add", "h"], ["note", "n"]):
        done = _lk(store, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Read-only file system" in done.stderr and "fix:" in done.stderr, (args, done.stderr)
    ran = _lk(store, "run", "--", "sh", "-c", "echo ran")
    assert ran.returncode == 0 and ran.stdout == "ran\n", ran.stderr
    assert "runs unrecorded" in ran.stderr
    # said again in the closing summary: the warning at the top has scrolled away by the end of a launch
    last = ran.stderr.rstrip().splitlines()
    assert last[-2].startswith("logkit: NOT RECORDED: could not record the attempt") and "Read-only" in last[-2]
    assert last[-1].startswith("  fix: make ") and "writable" in last[-1]
