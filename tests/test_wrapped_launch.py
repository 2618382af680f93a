"""Wrapped launches and the one verdict (issue 20).

* ``detect`` looks through ``docker run``/``podman run``, ``srun``/``mpirun``, ``systemd-run`` and
  ``conda run`` (pure, fast).
* ``logkit run`` and ``logkit classify`` give one class on one text by construction: both end in
  :meth:`Classifier.decide`. Every corpus log is replayed through that one function the way each
  command calls it (no process: the whole corpus in well under a second); a handful go through real
  ``logkit run`` processes (bare, ``sh -c``, a script file, a ``docker run`` stand-in) and real
  ``logkit classify`` processes.
* A command whose output shows an SGLang server's own lines becomes a launch: its role in the index
  is ``launch`` and its flags are the ones the server printed (``parser="printed"``).
* ``classify`` and ``why`` never answer ``abandoned`` (``why /etc/hostname``).
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import stat
import sys
import tomllib
from pathlib import Path

import pytest

from logkit.capture.sglang.detect import detect
from logkit.capture.sglang.outcomes import Classifier, blocks, classify_file

LOGS = Path(__file__).parent / "fixtures" / "logs"
#: every part of the corpus: the training part and each hold-out (one manifest per folder)
CORPUS = [(m.parent / e["file"], e) for m in sorted(LOGS.glob("**/manifest.toml"))
          for e in tomllib.loads(m.read_text())["log"]]
#: the replay below: the training part and the first hold-out in the fast lane, the rest in CI's full run
REPLAY = [pytest.param(p, e, id=p.name, marks=() if p.parent in (LOGS, LOGS / "holdout") else pytest.mark.slow)
          for p, e in CORPUS]


@pytest.mark.parametrize(("cmd", "args", "env"), [
    ("docker run --gpus all --shm-size 32g -p 30000:30000 -v /m:/root/.cache -e HF_TOKEN=x --ipc=host --rm -it "
     "lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m --port 30000",
     ["--model-path", "m", "--port", "30000"], {"HF_TOKEN": "x"}),
    ("podman run --rm --device nvidia.com/gpu=all docker.io/lmsysorg/sglang python3 -m sglang.launch_server --tp 2",
     ["--tp", "2"], {}),
    ("srun -N 1 --gres=gpu:8 --pty python -m sglang.launch_server --model-path m", ["--model-path", "m"], {}),
    ("mpirun -np 2 -x NCCL_DEBUG=INFO --allow-run-as-root python -m sglang.launch_server --tp 2", ["--tp", "2"],
     {"NCCL_DEBUG": "INFO"}),
    ("systemd-run --user --scope -p MemoryMax=100G -E CUDA_VISIBLE_DEVICES=1 python3 -m sglang.launch_server --tp 1",
     ["--tp", "1"], {"CUDA_VISIBLE_DEVICES": "1"}),
    ("conda run -n sgl --no-capture-output python -m sglang.launch_server --tp 1", ["--tp", "1"], {}),
    ("sh -c 'docker run --gpus all img python3 -m sglang.launch_server --tp 2'", ["--tp", "2"], {}),
])
def test_detect_looks_through_launchers_and_containers(cmd: str, args: list[str], env: dict[str, str]) -> None:
    found = detect(shlex.split(cmd))
    assert found is not None and found.kind == "launch", cmd
    assert found.args == args and found.env == env


def test_a_container_launch_is_marked_and_gets_no_host_paths() -> None:
    found = detect(shlex.split("docker run --rm img python3 -m sglang.bench_serving --port 30000"))
    assert found is not None and found.kind == "bench" and found.container
    assert found.args_at is None and found.python == []  # no --output-file of this host, no host interpreter
    assert not detect(["srun", "-N", "1", "python", "-m", "sglang.launch_server"]).container  # type: ignore[union-attr]
    for other in ("docker ps", "docker run -d lmsysorg/sglang", "conda list", "srun hostname"):
        assert detect(shlex.split(other)) is None, other


def _replay(path: Path) -> tuple[Classifier, str]:
    clf = Classifier()
    with path.open("rb") as fh:
        for chunk, first in blocks(fh):
            clf.feed(chunk, first)
    return clf, path.name


@pytest.mark.parametrize(("path", "entry"), REPLAY)
def test_run_and_classify_give_one_class_on_every_corpus_log(path: Path, entry: dict) -> None:
    """The one function both commands call, called as each calls it: ``logkit classify`` with no exit,
    ``logkit run`` with the exit a process printing that log has (1 after a failure; stopped by logkit
    while serving), as a launch only when the output shows an SGLang server (or for a launch argv)."""
    clf, _ = _replay(path)
    read_alone = clf.decide(finished=False)
    assert read_alone.status != "abandoned"
    if read_alone.status == "incomplete":
        return  # no verdict in the text: the exit alone decides a run, as it should
    serving = read_alone.status == "ready"
    for launch in (True, clf.server_line is not None):
        ran = clf.decide(exit_code=None if serving else 1, signal=None, stopped_by_logkit=serving,
                         finished=True, launch=launch)
        assert ran.status == read_alone.status, (path.name, launch, ran.label, read_alone.label)


def _stand_in_bin(tmp_path: Path) -> Path:
    """A ``docker`` on PATH that runs nothing: it prints the log named by $LOGKIT_TEST_LOG and exits 1
    (a container whose server fails): a stand-in, no container runtime here."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(f"#!{sys.executable}\nimport os, sys\nsys.stdout.write(open(os.environ['LOGKIT_TEST_LOG']).read())\n"
                      "sys.stdout.flush()\nsys.exit(int(os.environ.get('LOGKIT_TEST_EXIT', '1')))\n")
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _outcome(sessions: Path) -> tuple[dict, list[dict]]:
    events = [json.loads(line) for f in sessions.glob("*/events.jsonl") for line in f.read_text().splitlines()]
    return [e for e in events if e["kind"] == "outcome"][-1], events


SAMPLE = ["crash-sglang-2468.log", "oom-vllm-15039.log", "arg-tgi-1451.log", "port-vllm-7514.log"]


def test_a_handful_through_real_run_and_classify_processes(tmp_path: Path, sessions: Path, logkit) -> None:
    """The same text, four ways of running it, one class: bare, ``sh -c``, a script file and a
    ``docker run`` stand-in, each checked against a real ``logkit classify`` of the file."""
    assert logkit("session", "start", "wrapped").returncode == 0
    bin_dir = _stand_in_bin(tmp_path)
    script = tmp_path / "serve.sh"
    script.write_text('#!/bin/sh\ncat "$LOGKIT_TEST_LOG"\nexit 1\n')
    script.chmod(0o755)
    ways = [
        [sys.executable, "-c", "import os,sys; sys.stdout.write(open(os.environ['LOGKIT_TEST_LOG']).read()); sys.exit(1)"],
        ["sh", "-c", 'cat "$LOGKIT_TEST_LOG"; exit 1'],
        [str(script)],
        ["docker", "run", "--gpus", "all", "--shm-size", "1g", "lmsysorg/sglang:latest", "python3", "-m",
         "sglang.launch_server", "--model-path", "m", "--port", "30987"],
    ]
    for name, argv in zip(SAMPLE, ways, strict=True):
        log = next(p for p, _ in CORPUS if p.name == name)
        env = {"LOGKIT_TEST_LOG": str(log), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        done = logkit("run", "--", *argv, env=env)
        assert done.returncode == 1, done.stderr
        outcome, _ = _outcome(sessions)
        classified = json.loads(logkit("classify", "--json", str(log)).stdout)
        assert outcome["status"] == classified["status"] != "abandoned", (name, outcome["label"], classified["label"])


def test_output_makes_a_command_a_launch_with_the_printed_flags(tmp_path: Path, sessions: Path, logkit) -> None:
    """A script whose output is an SGLang server's (its server_args line, its ready line) is a launch:
    the index says role launch and the configuration is the one the server printed."""
    assert logkit("session", "start", "printed").returncode == 0
    script = tmp_path / "serve.sh"
    script.write_text(f'#!/bin/sh\ncat "{LOGS / "docs-notebook-027.log"}"\nexit 0\n')
    script.chmod(0o755)
    # a cold parser-spec cache (a first launch on this install): the printed flags are still recorded,
    # before the outcome (the end of the run waits for that event, never for a full parse)
    done = logkit("run", "--", str(script), env={"XDG_CACHE_HOME": str(tmp_path / "cold-cache")})
    assert done.returncode == 0, done.stderr
    outcome, events = _outcome(sessions)
    printed = [e for e in events if e["kind"] == "launch_config" and e.get("role") == "launch"]
    assert [e["kind"] for e in events].index("launch_config") < [e["kind"] for e in events].index("outcome")
    assert printed and printed[-1]["launch"]["parser"] == "printed", [(e["kind"], e.get("role")) for e in events]
    assert printed[-1]["launch"]["args"]["model_path"] == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    assert printed[-1]["launch"]["port"] == 33322
    assert logkit("status").returncode == 0  # a reader brings the index up to date
    db = next(p for p in sessions.rglob("*") if p.suffix in (".sqlite", ".db"))
    role = sqlite3.connect(db).execute("SELECT role FROM attempts ORDER BY session, line DESC LIMIT 1").fetchone()[0]
    assert role == "launch"
    assert outcome["status"] == "exit_ok"  # the server exited 0 after ready: the exit says more than the log


def test_role_launch_forces_classification_of_a_plain_script(tmp_path: Path, sessions: Path, logkit) -> None:
    """Issue 20's example: a script printing a CUDA 'no kernel image' error and exiting 1 is
    arch_mismatch with --role launch, as `logkit classify` says of the same text."""
    assert logkit("session", "start", "role").returncode == 0
    text = tmp_path / "out.log"
    text.write_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    script = tmp_path / "serve.sh"
    script.write_text(f'#!/bin/sh\ncat "{text}"\nexit 1\n')
    script.chmod(0o755)
    assert logkit("run", "--role", "launch", "--", str(script)).returncode == 1
    outcome, _ = _outcome(sessions)
    assert outcome["status"] == "arch_mismatch" == json.loads(logkit("classify", "--json", str(text)).stdout)["status"]


def test_classify_and_why_never_answer_abandoned(tmp_path: Path, sessions: Path, logkit) -> None:
    hostname = tmp_path / "hostname"
    hostname.write_text("buildbox\n")
    for path in (hostname, Path("/etc/hostname")):
        if not path.is_file():
            continue
        why = logkit("why", "--json", str(path))
        assert why.returncode == 0, why.stderr
        got = json.loads(why.stdout)
        assert got["status"] == "incomplete" and "abandoned" not in got["label"]
        assert "no verdict and no failure" in got["label"] and got["evidence"]  # its last lines
    assert classify_file(hostname).status == "incomplete"


def test_a_script_that_starts_a_server_is_probed_and_smoked_as_a_launch(tmp_path: Path, sessions: Path, logkit) -> None:
    """`./serve.sh` starting the stand-in server (logkit/demo/standin/fakeserver.py: SGLang's own log lines and
    endpoints, no GPU here): its printed server_args make it a launch, readiness is probed on the
    printed port, the --smoke prompt is sent and --smoke-only stops it."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert logkit("session", "start", "served").returncode == 0
    script = tmp_path / "serve.sh"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).parent.parent / "logkit" / "demo" / "standin" / "fakeserver.py"}" '
                      f'--model-path fake/model --host 127.0.0.1 --port {port} --mode healthy\n')
    script.chmod(0o755)
    done = logkit("run", "--smoke", "Say hi", "--smoke-only", "--grace", "5", "--", str(script), timeout=90)
    outcome, events = _outcome(sessions)
    assert outcome["status"] == "ready", (outcome["label"], done.stderr[-500:])
    printed = [e for e in events if e["kind"] == "launch_config" and e.get("role") == "launch"]
    assert printed and printed[-1]["launch"]["port"] == port and printed[-1]["launch"]["parser"] == "printed"
    smokes = [e for e in events if e["kind"] == "smoke"]
    assert smokes and smokes[0]["ok"], smokes
    # attribution: a benchmark of that port in this session is linked to the script's attempt
    from logkit.capture.sglang import _server_for

    session_dir = next(sessions.glob("*/events.jsonl")).parent
    assert _server_for("127.0.0.1", port, str(session_dir)) == outcome["attempt"]


def test_import_of_a_scripts_log_that_shows_a_server_records_a_launch(sessions: Path, logkit) -> None:
    assert logkit("session", "start", "imported").returncode == 0
    done = logkit("import", str(LOGS / "docs-notebook-027.log"), "--cmd", "./serve.sh", "--json")
    assert done.returncode == 0, done.stderr
    attempt = json.loads(done.stdout)["attempt"]
    assert attempt["role"] == "launch" and attempt["launch"]["parser"] == "printed"
    assert attempt["launch"]["args"]["port"] == 33322


def test_printed_flags_are_kept_when_sglangs_defaults_are_slow_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrapped launch that ends while SGLang's defaults are still being read (a cold parser-spec cache
    on a busy host) keeps its printed flags, unresolved and said so, once: nothing of the launch is lost."""
    import threading
    import time

    from logkit.capture.hooks import ExitInfo, WatchContext
    from logkit.capture.sglang import watcher
    from logkit.events import Attempt, AttemptLaunch, Note
    from logkit.launch import config

    release = threading.Event()

    def slow_spec(_python: str) -> tuple[dict, str]:
        release.wait(10)
        return {"defaults": {}}, "0.5.23"

    monkeypatch.setattr(config, "spec_for", slow_spec)
    monkeypatch.setattr(watcher, "PRINTED_WAIT_S", 0.2)
    emitted: list = []
    attempt = Attempt(session="s", short_id="A1", argv=["./serve.sh"])
    w = watcher.LaunchWatcher(None, latent=True)
    w.started(WatchContext(attempt, emitted.append, lambda _why: None))
    w.feed((LOGS / "docs-notebook-027.log").read_bytes(), 1)
    w.finished(ExitInfo(exit_code=0, signal=None, stopped_by_logkit=False, lines=10, stop_reason=None, escalated=False))
    release.set()
    time.sleep(0.3)  # the late thread finds its text already recorded
    launches = [e for e in emitted if isinstance(e, AttemptLaunch) and e.launch is not None]
    assert len(launches) == 1 and launches[0].launch.parser == "printed" and launches[0].launch.unresolved
    assert launches[0].launch.args["model_path"] == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    assert launches[0].launch.port == 33322
    assert any(isinstance(e, Note) and "unresolved" in e.text for e in emitted)
