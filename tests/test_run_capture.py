"""The run path's parts: light imports, environment probes, failures inside logkit, the planner seam."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from logkit.capture import environment, recorder, runner
from logkit.capture.hooks import ExitInfo, Plan, WatchContext, WatchResult
from logkit.capture.redact import Redactor
from logkit.events import AttemptEnvironment, Outcome, Smoke
from logkit.store import Store

HEAVY = ("pandas", "altair", "jinja2", "mkdocs", "pydantic", "rich")
#: Standard-library modules that cost `logkit run` start-up for nothing: dataclasses imports inspect,
#: ast and dis (~10 ms); the run path uses plain __slots__ classes instead (capture/_slotted.py).
SLOW_STDLIB = ("dataclasses", "inspect")


@pytest.mark.slow
def test_run_path_imports_nothing_heavy(sessions: Path, logkit) -> None:
    assert logkit("session", "start", "imports").returncode == 0
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "logkit", "run", "--", "true"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    # pandas/altair/jinja2/mkdocs: the build's; pydantic: 150 ms of start-up, not needed to record.
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
    assert "logkit.capture.runner" in done.stderr, "the run path was not imported: the check would pass vacuously"
    assert not loaded & set(SLOW_STDLIB), loaded & set(SLOW_STDLIB)
    # ctypes (~4 ms) is imported only on a fast stream's first big read (supervisor._keep_buffers)
    assert "ctypes" not in loaded


def _fake_tool(bindir: Path, name: str, script: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_probes_gpus_topology_git_and_packages(tmp_path: Path) -> None:
    # No GPU here: a stand-in nvidia-smi prints what the real one prints on an SM120 host.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake_tool(bindir, "nvidia-smi", """
if [ "$1" = "topo" ]; then printf '\\tGPU0\\tGPU1\\nGPU0\\t X \\tNODE\\nGPU1\\tNODE\\t X \\n'; exit 0; fi
echo "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.82.07, 97887, 12.0"
echo "1, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.82.07, 97887, 12.0"
""")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f").write_text("x")
    subprocess.run(["git", "-C", str(repo), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True)
    (repo / "f").write_text("dirty")
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "NCCL_P2P_DISABLE": "1", "HF_TOKEN": "hf_x" * 8}
    red = Redactor.for_run(env, [])
    probes = environment.Probes([sys.executable, "-m", "sglang.launch_server"], str(repo), env, red)
    result = probes.result(environment.quick(env, red), wait=15)
    assert result["probes"]["gpus"]["ok"] and result["probes"]["git"]["ok"] and result["probes"]["packages"]["ok"]
    assert result["gpus"][0] == {"index": 0, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                                 "driver": "580.82.07", "memory_mib": 97887, "compute_cap": "12.0"}
    assert result["device_capability"] == "12.0" and "NODE" in result["topology"]
    assert result["git"]["dirty"] is True and len(result["git"]["commit"]) == 40
    assert set(result["packages"]) == set(environment.PACKAGES)
    assert result["env"]["NCCL_P2P_DISABLE"] == "1" and result["env"]["HF_TOKEN"] == "[REDACTED]"
    from logkit.events import Environment

    Environment.model_validate(result)


def test_probe_that_cannot_run_is_recorded(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path)}  # no git, no nvidia-smi, no python
    red = Redactor.for_run(env, [])
    result = environment.Probes(["true"], str(tmp_path), env, red).result({}, wait=5)
    assert result["probes"]["gpus"]["ok"] is False and "nvidia-smi" in result["probes"]["gpus"]["error"]
    assert result["probes"]["packages"] == {"ok": False, "error": "not a Python command",
                                            "seconds": result["probes"]["packages"]["seconds"]}


def test_interpreter_detection(tmp_path: Path) -> None:
    env = dict(os.environ)
    assert environment.interpreter_of([sys.executable, "-c", "1"], env) == sys.executable
    assert environment.interpreter_of(["env", "A=1", "-u", "B", sys.executable, "x.py"], env) == sys.executable
    script = tmp_path / "sglang"
    script.write_text(f"#!{sys.executable}\nprint(1)\n")
    script.chmod(0o755)
    assert environment.interpreter_of([str(script), "serve"], env) == sys.executable
    assert environment.interpreter_of(["true"], env) is None


class _Boom:
    def feed(self, chunk: bytes, first_line: int) -> None:
        raise RuntimeError("watcher bug")


def test_disk_full_and_watcher_crash_never_stop_the_stream(capfd: pytest.CaptureFixture[str]) -> None:
    full = os.open("/dev/full", os.O_WRONLY)
    rec = recorder.Recorder(full, Redactor.for_run({}, []), _Boom())
    for i in range(3):
        data = f"line {i}\n".encode()
        rec.echo(1, data)
        rec.consume(5, data)
    os.close(full)
    assert capfd.readouterr().out == "line 0\nline 1\nline 2\n"
    assert any("log write failed" in p and "space" in p for p in rec.problems)
    rec2 = recorder.Recorder(None, Redactor.for_run({}, []), _Boom())
    rec2.consume(5, b"a\n")
    assert rec2.watcher is None and "watcher failed: RuntimeError: watcher bug" in rec2.problems


def test_long_partial_lines_are_flushed_in_bounded_pieces(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT)
    rec = recorder.Recorder(fd, Redactor.for_run({}, []), None)
    rec.consume(5, b"x " * 100_000 + b"tail")  # 200 KB, no newline
    assert 0 < len(rec.partial.get(5, b"")) <= recorder.PARTIAL_MAX
    rec.flush_stale(0.0, everything=True)
    os.close(fd)
    assert (tmp_path / "log").read_bytes() == b"x " * 100_000 + b"tail"


# -- the planner seam, with a planner defined here -------------------------------------------------

class _Watcher:
    def __init__(self) -> None:
        self.fed: list[tuple[int, bytes]] = []

    def started(self, ctx: WatchContext) -> None:
        self.ctx = ctx
        assert ctx.attempt.short_id == "A1" and ctx.options["hang_timeout"] == 9.0
        assert ctx.options["smoke"] == ["hi"] and ctx.options["preflight"] is True

    def feed(self, chunk: bytes, first_line: int) -> None:
        self.fed.append((first_line, chunk))

    def tick(self, now: float) -> None:
        pass

    def finished(self, exit_info: ExitInfo) -> WatchResult:
        self.ctx.emit(Smoke(session=self.ctx.attempt.session, attempt="A1", prompt="hi", ok=True, reply="sk-" + "a" * 24))
        first, _ = self.fed[0]
        return WatchResult(status="ready", label=f"lines={exit_info.lines} first={first}")


SEEN: dict[str, Any] = {}


def plan(argv: list[str], env: dict[str, str], options: dict[str, Any]) -> Plan | None:
    SEEN["options"] = dict(options)
    watcher = _Watcher()
    SEEN["watcher"] = watcher
    return Plan(role="launch", watcher=watcher, notes=["planned by the test"])


@pytest.mark.slow
def test_planner_and_watcher_seam(sessions: Path, logkit, monkeypatch: pytest.MonkeyPatch,
                                  capfd: pytest.CaptureFixture[str]) -> None:
    assert logkit("session", "start", "seam").returncode == 0
    monkeypatch.setattr(runner, "PLANNERS", [(f"{__name__}:plan", r"fake-sglang")])
    confirmed: list[Any] = []
    SEEN["confirmed"] = confirmed
    opts = runner.RunOptions(hang_timeout=9.0, smoke=["hi"])
    result = runner.run(["bash", "-c", "echo one; echo two; : fake-sglang"], opts, confirm=_confirm, use_pty=False)
    assert result.exit_status == 0
    assert SEEN["options"]["previous_launch"] is None and "session_dir" in SEEN["options"]
    assert confirmed and confirmed[0][0] == "launch"
    assert b"".join(c for _, c in SEEN["watcher"].fed) == b"one\ntwo\n"
    events = Store(sessions).handle(result.session).read(strict=True).events
    outcome = next(e for e in events if isinstance(e, Outcome))
    assert outcome.status == "ready" and outcome.label == "lines=2 first=1"
    smoke = next(e for e in events if isinstance(e, Smoke))
    assert smoke.reply == "[REDACTED]"  # emitted events are redacted too
    assert any(isinstance(e, AttemptEnvironment) for e in events)
    assert "planned by the test" in capfd.readouterr().err
    # The second launch gets the first as previous_launch.
    runner.run(["bash", "-c", ": fake-sglang"], opts, confirm=None, use_pty=False)
    assert SEEN["options"]["previous_launch"]["short_id"] == "A1"  # the stored line: no pydantic before spawn


def _confirm(plan_: Plan, environment_: Any) -> bool:
    SEEN["confirmed"].append((plan_.role, environment_))
    return True


def test_confirmer_can_refuse(sessions: Path, logkit) -> None:
    assert logkit("session", "start", "refuse").returncode == 0
    result = runner.run(["true"], runner.RunOptions(), confirm=_no, use_pty=False)
    assert result.exit_status == 1 and result.attempt is None
    assert not [e for e in Store(sessions).handle(result.session).read().events if e.kind == "attempt"]


def _no(plan_: Plan, environment_: Any) -> bool:
    return False
