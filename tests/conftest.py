"""Shared fixtures: a fresh sessions directory per test, and the logkit command as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Logs over [logs] compress_over_bytes (1 MiB) are stored compressed once their attempt ends. Tests
# that read a big log's bytes straight from logs/A<n>.log keep it plain; tests/test_log_compression.py
# sets its own value (0: every log) and checks the default without this one.
os.environ.setdefault("LOGKIT_COMPRESS_LOGS_OVER", str(1 << 40))

# The suite starts a few thousand Python processes (logkit, stand-ins): where the environment sets
# PYTHONDONTWRITEBYTECODE, each would compile logkit from source again, and pytest would rewrite every
# test module again on every run. Bytecode goes to the git-ignored __pycache__ folders.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty sessions directory, exported as $LOGKIT_SESSIONS."""
    root = tmp_path / "sessions"
    root.mkdir()
    monkeypatch.setenv("LOGKIT_SESSIONS", str(root))
    return root


def run_logkit(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, input: str | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m logkit ARGS`` as a real process and capture its output."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "logkit", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        input=input,
        timeout=timeout,
    )


@pytest.fixture
def logkit():
    """The ``run_logkit`` helper as a fixture."""
    return run_logkit


@pytest.fixture(scope="session", autouse=True)
def parser_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One $XDG_CACHE_HOME for the whole run: SGLang's parser spec is built once (seconds), reused by
    every logkit process, and the user's own ~/.cache is never written by a test."""
    path = tmp_path_factory.mktemp("xdg-cache")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(path)
    yield path
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="module")
def sglang_args_cache(parser_cache: Path) -> Iterator[None]:
    """SGLang's parser spec cached for the module's logkit processes (the session-wide cache)."""
    yield


def on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path | None = None,
                  timeout: float = 120) -> tuple[int, bytes]:
    """Run ``argv`` with a pseudo-terminal as its stdin, stdout and stderr: (exit status, all it wrote)."""
    import select
    import time

    master, slave = os.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    out = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=30), out
