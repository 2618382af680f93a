"""An adversarial audit of the four promises (bad input, the wrapped run, secrets, network filesystems),
as real processes: the forms earlier rounds did not try.

* A variable ``secrets.toml`` calls secret, printed or passed as ``NAME=VALUE`` (an ``env`` dump,
  ``export X=``, ``docker run -e X=``) when logkit's own environment does not hold it.
* A URL whose credentials have a password and no user (``redis://:PW@host``), printed or in the environment.
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import scenarios
from logkit.capture import redact
from logkit.capture.redact import Redactor


def _cli(sessions: Path, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*scenarios.LOGKIT, *args], env=scenarios.env_for(sessions, **env), capture_output=True,
                          text=True, errors="replace", timeout=timeout)


def _everything(sessions: Path) -> bytes:
    """Every byte under the sessions directory (events, logs, index)."""
    return b"\n".join(p.read_bytes() for p in sessions.rglob("*") if p.is_file())


def _names_from_globs() -> list[str]:
    """One concrete variable name per ``[env] names`` glob of secrets.toml, not one of ``not_secret``."""
    data = tomllib.loads((redact._DATA / "secrets.toml").read_text(encoding="utf-8"))["env"]
    names = []
    for glob in data["names"]:
        name = glob.replace("*", "MY_X", 1).replace("*", "_Y") if glob.startswith("*") else glob.replace("*", "_Y")
        if any(fnmatch.fnmatch(name, n) for n in data.get("not_secret", [])):
            continue
        assert redact.load_rules().env_re.match(name), (glob, name)
        names.append(name)
    return names


def test_every_secret_variable_name_printed_as_an_assignment_is_redacted() -> None:
    """The [env] names are the one list of secret variables: printed as NAME=VALUE each one is caught."""
    r = Redactor.for_run({}, [])
    for name in _names_from_globs():
        for form in (f"{name}=V4lueOf{len(name)}xyz", f"export {name}=V4lueOf{len(name)}xyz",
                     f"-e {name}='V4lueOf{len(name)}xyz'", f"declare -x {name}=\"V4lueOf{len(name)}xyz\""):
            out = r.chunk(b"Decode batch, #token: 1\n" * 200 + form.encode() + b"\n")
            assert f"V4lueOf{len(name)}xyz".encode() not in out, form
    # names known to hold no secret, and numbers, stay readable
    for kept in ("TOKENIZERS_PARALLELISM=false", "HF_HUB_DISABLE_IMPLICIT_TOKEN=1", "SGLANG_MAX_TOKEN=4096",
                 "cache_key=prefix42", "SSH_AUTH_SOCK=/tmp/agent.1"):
        assert r.text(kept) == kept


CHILD_DUMP = """
import sys
print("+ export DB_PASS=ChildDbPass11")
print("MYSQL_PWD=ChildMysqlPwd22")
print("GITHUB_PAT=ChildGithubPat33")
print("OPENAI_KEY=ChildOpenaiKey44")
print("REGISTRY_AUTH=ChildRegAuth55")
print("connecting to redis://:ChildRedisPw66@cache:6379/0")
print("argv:", sys.argv[1:])
"""


def test_assignments_and_userless_url_passwords_reach_no_file(sessions: Path, tmp_path: Path) -> None:
    """A child's environment dump, assignments on its command line, a ``redis://:PW@`` URL printed and one
    in logkit's environment (learned, then printed bare) are stored redacted: events, log and index."""
    done = _cli(sessions, "session", "start", "assignments")
    assert done.returncode == 0, done.stderr
    script = tmp_path / "dump.py"
    script.write_text(CHILD_DUMP + "import os\nprint('bare', os.environ['CACHE_URL'].split(':')[2].split('@')[0])\n")
    done = _cli(sessions, "run", "--", "env", "SGLANG_DB_PASS=ArgvDbPass88", "OPENAI_KEY=ArgvKey99x",
                sys.executable, str(script), "-e", "HF_PAT=ArgvPat100", CACHE_URL="redis://:EnvRedisPw77@cache:6379/0")
    assert done.returncode == 0, done.stderr
    assert "ChildDbPass11" in done.stdout  # the terminal still shows the child's output unchanged
    stored = _everything(sessions)
    for value in ("ChildDbPass11", "ChildMysqlPwd22", "ChildGithubPat33", "ChildOpenaiKey44", "ChildRegAuth55",
                  "ChildRedisPw66", "EnvRedisPw77", "ArgvDbPass88", "ArgvKey99x", "ArgvPat100"):
        assert value.encode() not in stored, value
    assert b"[REDACTED]" in stored and b"MYSQL_PWD=" in stored  # the name stays readable
