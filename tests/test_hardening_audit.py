"""An adversarial audit of the four promises (bad input, the wrapped run, secrets, network filesystems),
as real processes: the forms earlier rounds did not try.

* A variable ``secrets.toml`` calls secret, printed or passed as ``NAME=VALUE`` (an ``env`` dump,
  ``export X=``, ``docker run -e X=``) when logkit's own environment does not hold it.
* A URL whose credentials have a password and no user (``redis://:PW@host``), printed or in the environment.
* A camelCase token key (``"accessToken": "x"``), a shell-quoted flag value (``--api-key 'a b'``), a bare
  ``token: 'x'`` (redacted in events but not in the raw log: its triggers missed that form).
"""

from __future__ import annotations

import fnmatch
import time
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
                     f"-e {name}='V4lueOf{len(name)}xyz'", f"declare -x {name}=\"V4lueOf{len(name)}xyz\"",
                     f"environ({{'{name}': 'V4lueOf{len(name)}xyz', 'HOME': '/root'}})",
                     f'{{"{name}": "V4lueOf{len(name)}xyz"}}', f"{name}: V4lueOf{len(name)}xyz"):
            if form.startswith("TOKEN: "):
                continue  # `token: x` is on every SGLang decode line: not a trigger (secrets.toml, token-value)
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
print("environ({'OPENAI_KEY': 'ChildEnvironRepr111', 'PATH': '/usr/bin'})")
print('{"DB_PASS": "ChildJsonPass112"}')
print("DB_PASS: ChildYamlPass113")
print('{"accessToken": "ChildCamelTok114", "expiresIn": 3600}')
print("+ serve --api-key 'Child Quoted115'")
print("config = {token: 'ChildBareTok116'}")
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
                  "ChildRedisPw66", "EnvRedisPw77", "ChildEnvironRepr111", "ChildJsonPass112", "ChildYamlPass113",
                  "ChildCamelTok114", "Child Quoted115", "ChildBareTok116", "ArgvDbPass88", "ArgvKey99x", "ArgvPat100"):
        assert value.encode() not in stored, value
    assert b"[REDACTED]" in stored and b"MYSQL_PWD=" in stored  # the name stays readable


# -- a filesystem without flock ------------------------------------------------------------------

#: flock() fails on files under $NOFLOCK_PREFIX as on an NFS mount without its lock daemon (ENOLCK)
#: or a Lustre mount without -o flock (ENOSYS, $NOFLOCK_ERRNO): neither can be mounted here
NOFLOCK_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int flock(int fd, int op) {
    static int (*real)(int, int) = 0;
    if (!real) real = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    const char *prefix = getenv("NOFLOCK_PREFIX");
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (prefix && *prefix && n > 0) {
        target[n] = 0;
        if (strncmp(target, prefix, strlen(prefix)) == 0) {
            const char *e = getenv("NOFLOCK_ERRNO");
            errno = (e && strcmp(e, "ENOSYS") == 0) ? ENOSYS : ENOLCK;
            return -1;
        }
    }
    return real(fd, op);
}
"""


@pytest.fixture(scope="module")
def noflock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A preload library that takes flock() away from one directory tree."""
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the flock-less filesystem's stand-in")
    where = tmp_path_factory.mktemp("noflock")
    (where / "noflock.c").write_text(NOFLOCK_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(where / "noflock.so"), str(where / "noflock.c"), "-ldl"],
                   check=True, capture_output=True)
    return where / "noflock.so"


def _noflock_env(noflock: Path, sessions: Path, errno_name: str = "ENOLCK") -> dict[str, str]:
    return {"LD_PRELOAD": str(noflock), "NOFLOCK_PREFIX": str(sessions), "NOFLOCK_ERRNO": errno_name}


def _events(sessions: Path) -> list[dict]:
    import json

    [path] = sessions.glob("*/events.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("errno_name", ["ENOLCK", "ENOSYS"])
def test_without_flock_every_command_still_records(sessions: Path, noflock: Path, errno_name: str) -> None:
    """NFS without lockd, Lustre without -o flock: flock() fails; every command records all the same."""
    env = _noflock_env(noflock, sessions, errno_name)
    probe = subprocess.run([sys.executable, "-c", f"import fcntl, os; fcntl.flock(os.open({str(sessions)!r}, os.O_RDONLY), 2)"],
                           env={**scenarios.env_for(sessions), **env}, capture_output=True, text=True)
    assert probe.returncode != 0 and "Errno" in probe.stderr  # the stand-in works: flock fails there
    steps = [("session", "start", "on a filesystem without flock"), ("hypothesis", "add", "it records"),
             ("note", "a note"), ("run", "--", sys.executable, "-c", "print('child ran'); raise SystemExit(7)")]
    for step in steps:
        done = _cli(sessions, *step, **env)
        assert "Traceback" not in done.stderr and "NOT RECORDED" not in done.stderr, (step, done.stderr)
        assert done.returncode == (7 if step[0] == "run" else 0), (step, done.stderr)
    kinds = [e["kind"] for e in _events(sessions)]
    assert kinds.count("session") == 1 and kinds.count("hypothesis") == 1 and kinds.count("note") == 1
    assert kinds.count("attempt") == 1 and kinds.count("outcome") == 1
    status = _cli(sessions, "status", **env)
    assert status.returncode == 0 and "A1" in status.stdout and "H1" in status.stdout, status.stderr
    assert not list(sessions.rglob("*.lock.lock")) and not list(sessions.glob("*/events.jsonl.lock"))


def test_without_flock_concurrent_runs_take_distinct_ids(sessions: Path, noflock: Path) -> None:
    env = _noflock_env(noflock, sessions)
    assert _cli(sessions, "session", "start", "concurrent without flock", **env).returncode == 0
    procs = [subprocess.Popen([*scenarios.LOGKIT, "run", "--", sys.executable, "-c", f"print({i})"],
                              env=scenarios.env_for(sessions, **env), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for i in range(6)]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "Traceback" not in err, err
    events = _events(sessions)  # every line whole JSON
    shorts = sorted(e["short_id"] for e in events if e["kind"] == "attempt")
    assert shorts == sorted(f"A{i}" for i in range(1, 7)), shorts
    assert sum(e["kind"] == "outcome" for e in events) == 6


def test_a_lock_file_left_by_a_killed_holder_is_taken_over(sessions: Path, noflock: Path) -> None:
    import os
    import socket

    env = _noflock_env(noflock, sessions)
    assert _cli(sessions, "session", "start", "left lock", **env).returncode == 0
    [events] = sessions.glob("*/events.jsonl")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    from logkit import procs

    left = Path(f"{events}.lock")
    left.write_text(f"{dead.pid} {procs.hostname()} token\n")  # this host, its pid gone
    done = _cli(sessions, "note", "after a killed writer", timeout=60, **env)
    assert done.returncode == 0, done.stderr
    left.write_text(f"1 {socket.gethostname()}-elsewhere token\n")  # another host's, an hour old
    os.utime(left, (time.time() - 3600, time.time() - 3600))
    done = _cli(sessions, "note", "after another host's killed writer", timeout=60, **env)
    assert done.returncode == 0, done.stderr
    assert [e["kind"] for e in _events(sessions)].count("note") == 2 and not left.exists()


def test_the_shared_filesystems_of_gpu_clusters_put_the_index_on_local_disk() -> None:
    """WekaFS, JuiceFS, cluster filesystems and object stores through FUSE: SQLite's locks are not to be
    trusted there either (mountinfo as each of them shows it)."""
    from logkit.store.index import NETWORK_FS, filesystem_type

    for fstype, source in (("wekafs", "wekafs/default"), ("fuse.juicefs", "JuiceFS:myjfs"), ("gfs2", "/dev/vg/gfs"),
                           ("ocfs2", "/dev/sdb1"), ("fuse.mountpoint-s3", "mountpoint-s3"), ("fuse.rclone", "remote:"),
                           ("fuse.blobfuse2", "blobfuse2")):
        mountinfo = f"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n40 22 0:50 / /mnt/shared rw - {fstype} {source} rw\n"
        assert filesystem_type(Path("/mnt/shared/team/sessions"), mountinfo) in NETWORK_FS, fstype


# -- damaged events.jsonl lines ---------------------------------------------------------------------


def test_export_names_every_line_it_leaves_out(sessions: Path, tmp_path: Path) -> None:
    """A damaged line (invalid UTF-8, a NUL, a newer schema's) is left out of the table, and export says which,
    with its file, line and fix, on stderr (the table on stdout stays clean)."""
    import json

    assert _cli(sessions, "session", "start", "damaged lines").returncode == 0
    for code in ("print(1)", "print(2)"):
        assert _cli(sessions, "run", "--", sys.executable, "-c", code).returncode == 0
    [path] = sessions.glob("*/events.jsonl")
    lines = path.read_bytes().splitlines()
    first = next(i for i, line in enumerate(lines) if b'"kind":"attempt"' in line)
    lines[first] = lines[first].replace(b"print(1)", b"pr\xffint(1)")
    lines.append(b"\x00\x00")
    lines.append(json.dumps({"v": 99, "id": "f" * 32, "session": path.parent.name, "ts": "2026-12-07T00:00:00Z",
                             "kind": "note", "text": "from a newer logkit"}).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")
    for fmt in ("csv", "jsonl"):
        done = _cli(sessions, "export", "--what", "attempts", "--format", fmt)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "logkit: warning" not in done.stdout
        for number in (first + 1, len(lines) - 1, len(lines)):
            assert f"{path}:{number}:" in done.stderr and "fix or delete that line" in done.stderr, (number, done.stderr)
        assert "upgrade logkit" in done.stderr
    # the attempt on the damaged line: `show` says where it may be instead of only "no attempt A1"
    done = _cli(sessions, "show", "A1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"line(s) of {path} could not be read (line {first + 1}," in done.stderr, done.stderr
    assert "fix: fix or delete those lines" in done.stderr, done.stderr


# -- sessions written under older patterns ------------------------------------------------------------


def test_a_session_recorded_under_older_patterns_publishes_and_exports_no_secret(sessions: Path, tmp_path: Path) -> None:
    """A session recorded by an older logkit (or merged from a teammate's clone) holds what today's patterns
    catch: the site's pages and log copies, and an export, are redacted by today's patterns again."""
    import json

    assert _cli(sessions, "session", "start", "recorded by an older logkit").returncode == 0
    assert _cli(sessions, "run", "--", sys.executable, "-c", "print('ready')").returncode == 0
    [events] = sessions.glob("*/events.jsonl")
    [log] = sessions.glob("*/logs/A1.log")
    lines = events.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"kind":"attempt"' in line)
    attempt = json.loads(lines[at])
    attempt["argv"] = ["env", "MYSQL_PWD=OldArgvPwd123", *attempt["argv"]]
    lines[at] = json.dumps(attempt, separators=(",", ":"))
    lines.append(json.dumps({"v": 1, "id": "e" * 32, "session": events.parent.name, "ts": "2026-12-07T12:00:00Z",
                             "kind": "note", "text": "staging: export DB_PASS=OldNotePass456, hf_OldNoteHfTokenAbcdefghijklmn"}, separators=(",", ":")))
    events.write_text("\n".join(lines) + "\n")
    log.write_bytes(log.read_bytes() + b"GITHUB_PAT=OldLogPat789\nredis://:OldLogRedis012@cache:6379\nhf_OldLogHfTokenAbcdefghijklmnop\n")
    # what was redacted when written shows as it was: redacting again garbles nothing
    assert _cli(sessions, "note", "printed hf_token=\"zz9x\" and api_key='abc123'").returncode == 0
    assert _cli(sessions, "run", "--", sys.executable, "-c", "print(\"api_key='abc123'\")").returncode == 0
    out, docs = tmp_path / "site", tmp_path / "docs"
    done = _cli(sessions, "build", "--out", str(out), "--docs", str(docs), timeout=300)
    assert done.returncode == 0, done.stderr
    pages = b"\n".join(p.read_bytes() for p in docs.rglob("*.md"))
    assert b"hf_token=&#34;&#91;REDACTED&#93;&#34;" in pages and b"[REDACTED];" not in pages
    assert b"""print(\"api_key='\"'\"'[REDACTED]'\"'\"'\")""" in pages
    export = tmp_path / "attempts.csv"
    done = _cli(sessions, "export", "--what", "attempts", "--format", "csv", "--out", str(export))
    assert done.returncode == 0, done.stderr
    published = b"\n".join(p.read_bytes() for root in (out, docs) for p in root.rglob("*") if p.is_file())
    assert b"OldLogPat789" not in published and b"OldLogRedis012" not in published  # the log's copy
    assert b"OldNotePass456" not in published and b"OldArgvPwd123" not in published  # the pages
    # a form the patterns caught before this audit too: the site trusted what the session held
    assert b"OldLogHfToken" not in published and b"OldNoteHfToken" not in published
    assert b"GITHUB_PAT=[REDACTED]" in published and b"ready" in published
    assert b"OldArgvPwd123" not in export.read_bytes() and b"MYSQL_PWD=[REDACTED]" in export.read_bytes()
    # a copy published under other patterns is made again, though its log did not change
    stamp = docs / ".logkit-logs-redacted"
    assert stamp.is_file()
    copy = next(docs.rglob("A1.log"))
    copy.write_bytes(copy.read_bytes().replace(b"GITHUB_PAT=[REDACTED]", b"GITHUB_PAT=OldLogPat789"))
    stamp.write_text("older patterns")
    assert _cli(sessions, "build", "--out", str(out), "--docs", str(docs), timeout=300).returncode == 0
    assert b"OldLogPat789" not in copy.read_bytes()


# -- hostile output: time linear in a line's length ---------------------------------------------------


def test_a_long_run_of_a_key_name_is_redacted_in_linear_time() -> None:
    """`secret` (or `SECRET`, `api_key`, `mysql `) repeated over a 120 KB line: the key-value pattern tried every
    occurrence against the whole rest of the line (25 s for 60 KB, quadratic), and the recorder with it, so
    `logkit run` ended, and measured the command, that much later. Each now takes well under a second."""
    r = Redactor.for_run({}, [])
    for word in ("secret", "SECRET", "api_key", "Credentials_", "mysql ", "X_SECRET_"):
        line = (word * (120_000 // len(word))).encode() + b"\n"
        started = time.perf_counter()
        r.chunk(line)
        assert time.perf_counter() - started < 10, word


# -- signals that ask nothing to stop -----------------------------------------------------------------

SIGNAL_CHILD = """
import signal, sys, time
got = []
def take(n, _f):
    got.append(n)
    print("child got", signal.Signals(n).name, flush=True)
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT):
    signal.signal(s, take)
print("ready", flush=True)
end = time.time() + 60
while len(got) < 3 and time.time() < end:
    time.sleep(0.05)
print("child ends", flush=True)
sys.exit(len(got))
"""


def test_usr1_usr2_and_quit_reach_the_command_and_logkit_records_it(sessions: Path) -> None:
    """`kill -USR1 <logkit>` (a server's "dump your state"): it killed logkit, leaving the command without
    the reader of its output and the attempt unended. Now each is passed on, nothing stops, and the
    command's exit status and output come through."""
    import signal

    assert _cli(sessions, "session", "start", "signals passed on").returncode == 0
    proc = subprocess.Popen([*scenarios.LOGKIT, "run", "--", sys.executable, "-c", SIGNAL_CHILD],
                            env=scenarios.env_for(sessions), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGQUIT, signal.SIG_DFL))
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT):
        proc.send_signal(sig)
        assert proc.stdout.readline().strip() == f"child got {sig.name}"
    # not communicate(): it reads the pipes' descriptors and misses a line readline() already buffered
    # ("child ends" arriving with "child got SIGQUIT": the test failed ~1 run in 8 under load)
    assert proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 3, (proc.returncode, err)
    assert "child ends" in out and "Traceback" not in err
    events = _events(sessions)
    [outcome] = [e for e in events if e["kind"] == "outcome"]
    assert outcome["status"] != "interrupted" and outcome["exit_code"] == 3, outcome
    [log] = sessions.glob("*/logs/A1.log")
    assert b"child got SIGUSR2" in log.read_bytes()


# -- a hostile log read by why and classify -------------------------------------------------------------


def test_why_and_classify_show_a_logs_terminal_escapes_and_never_send_them(sessions: Path, tmp_path: Path) -> None:
    """A log from elsewhere (a bug report, a teammate's) holding an OSC 52 clipboard write, a title change
    and a screen clear on its error line: `why` and `classify` printed it raw to the terminal."""
    log = tmp_path / "hostile.log"
    log.write_bytes(b"starting\n\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;PWNED\x07\x1b[2J"
                    b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\x1b[0m\n")
    assert _cli(sessions, "session", "start", "hostile log").returncode == 0
    for args in (("why", str(log)), ("classify", str(log))):
        done = _cli(sessions, *args)
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout, (args, done.stdout)
        assert "\\x1b]52;c;" in done.stdout and "CUDA out of memory" in done.stdout, (args, done.stdout)


def test_a_home_on_nfs_keeps_the_index_off_nfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions on Lustre and the home directory (so ~/.cache) on NFS, as on most GPU clusters: the index
    went to ~/.cache, on NFS again. It goes to $XDG_RUNTIME_DIR or <tmp>/logkit-<uid> (local), or memory."""
    import os
    import tempfile

    from logkit.store.index import index_path

    mountinfo = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                 "30 22 0:40 / /home rw - nfs4 filer:/home rw\n"
                 "31 22 0:41 / /run/user/1000 rw - tmpfs tmpfs rw\n"
                 "40 22 0:50 / /lustre rw - lustre 10.0.0.1@tcp:/fs rw\n")
    monkeypatch.delenv("LOGKIT_NETWORK_FS", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "/home/me")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    where = index_path(Path("/lustre/team/sessions"), mountinfo)
    assert where is not None and where.parent == Path("/run/user/1000/logkit/index"), where
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    where = index_path(Path("/lustre/team/sessions"), mountinfo)
    tmp = Path(tempfile.gettempdir()).resolve()
    assert where is not None and where.parent == tmp / f"logkit-{os.getuid()}" / "index", where
    everything_nfs = "22 1 0:40 / / rw - nfs4 filer:/root rw\n"
    assert index_path(Path("/lustre/team/sessions"), everything_nfs) is None  # in memory
    # a local cache stays where it was
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    where = index_path(Path("/lustre/team/sessions"), mountinfo)
    assert where is not None and where.parent == tmp_path / "xdg" / "logkit" / "index"


def test_a_lock_file_that_cannot_be_judged_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without flock, a `<file>.lock` that is a folder (or unreadable) is never taken over: after twice the
    stale age the writer gives up with an error naming it, instead of waiting forever."""
    from logkit.store import lockfile

    monkeypatch.setattr(lockfile, "STALE_SECONDS", 0.2)
    (tmp_path / "events.jsonl.lock").mkdir()
    started = time.monotonic()
    with pytest.raises(OSError, match="events.jsonl.lock stays in the way"):
        lockfile._lock_file(tmp_path / "events.jsonl.lock", wait=True)
    assert time.monotonic() - started < 5


def test_a_compressed_log_cut_short_is_read_up_to_the_cut_with_a_warning(sessions: Path, tmp_path: Path) -> None:
    """A `logs/A1.log.gz` cut short (a partial copy or checkout, a full disk): build, show and why ended in an
    EOFError traceback. They read the text up to the cut and warn, naming the file and the fix."""
    assert _cli(sessions, "session", "start", "cut log").returncode == 0
    child = "import random\nr = random.Random(3)\nfor i in range(20000): print(i, r.getrandbits(64))"
    assert _cli(sessions, "run", "--", sys.executable, "-c", child, LOGKIT_COMPRESS_LOGS_OVER="0").returncode == 0
    [packed] = sessions.glob("*/logs/A1.log.gz")
    data = packed.read_bytes()
    packed.write_bytes(data[: len(data) * 6 // 10])
    out, docs = tmp_path / "site", tmp_path / "docs"
    for args in (("build", "--out", str(out), "--docs", str(docs)), ("show", "A1"), ("why", str(packed))):
        done = _cli(sessions, *args, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
        assert f"{packed}: the compressed log is damaged" in done.stderr and "fix: restore" in done.stderr, args
    [copy] = docs.rglob("A1.log")
    text = copy.read_bytes()
    assert text.startswith(b"0 ") and len(text) > 100_000 and b"\n" in text  # the text up to the cut


def test_an_nvidia_ngc_key_is_redacted_wherever_printed() -> None:
    """NIM containers and `docker login nvcr.io -p nvapi-...` print NGC keys, which no row knew."""
    key = "nvapi-" + ("NgcKeyProbe_0123456789-" * 3)[:64]
    r = Redactor.for_run({}, [])
    for line in (f"docker login nvcr.io -u '$oauthtoken' -p {key}", f"key={key}", f"using {key} for NIM"):
        assert key.encode() not in r.chunk(b"Decode batch, #token: 1\n" * 100 + line.encode() + b"\n"), line


def test_redacting_again_changes_nothing_already_redacted() -> None:
    """The site and export redact what a session holds again: text redacted once must come back the same
    (`Authorization: Bearer [REDACTED]` became `Authorization: [REDACTED] [REDACTED]`, the scheme taken for
    the secret), and a URL-encoded `Bearer%20TOKEN` left its token readable."""
    rows = tomllib.loads((redact._DATA / "secrets.toml").read_text(encoding="utf-8"))["text"]["patterns"]
    lines = [row["example"] for row in rows if "example" in row] + [
        "Authorization: Bearer abcdefgh1234xyz", "headers={'authorization': 'Bearer abcdefgh12345678'}",
        "Proxy-Authorization: Basic Zm9vOmJhcjE=", "server_args=ServerArgs(api_key='k1234567', hf_token=None)",
        "export DB_PASS=x1234567", '{"accessToken": "tok12345"}', "https://u:pw123456@h/ redis://:pw654321@c:1",
        "--api-key 'a b c'", "mysql -uroot -pPW123456 db", "token: 'abc12345'"]
    r = Redactor()
    for line in lines:
        once = r.chunk(line.encode() + b"\n")
        assert r.chunk(once) == once, line
        assert r.text(r.text(line)) == r.text(line), line
    assert r.text("GET /x?Authorization=Bearer%20UrlEncodedTok9") == "GET /x?Authorization=Bearer%20[REDACTED]"


HOLD_LOCK = """
import sys, time
from pathlib import Path
from logkit.store import shared
from logkit.errors import BadInput
try:
    with shared.running_lock(Path(sys.argv[1]), "spec", "logkit sweep spec.toml"):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
except BadInput as exc:
    print("refused:", exc, flush=True)
"""


def test_without_flock_a_second_sweep_is_still_refused_naming_the_first(sessions: Path, noflock: Path) -> None:
    env = scenarios.env_for(sessions, **_noflock_env(noflock, sessions))
    first = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(sessions), "30"], env=env, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "held"
        second = subprocess.run([sys.executable, "-c", HOLD_LOCK, str(sessions), "0"], env=env, capture_output=True,
                                text=True, timeout=60)
        assert f"refused: logkit sweep spec.toml is already running (pid {first.pid}" in second.stdout, second
    finally:
        first.kill()
        first.wait()
    # its holder killed: the next one takes the lock over (its pid is gone on this host)
    third = subprocess.run([sys.executable, "-c", HOLD_LOCK, str(sessions), "0"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert third.stdout.strip() == "held", third


def test_the_exit_status_passes_through_when_logkit_output_has_no_reader(sessions: Path) -> None:
    """`logkit run -- CMD 2>&1 | head -1` and the like: once the reader is gone, the closing line on stderr
    raised BrokenPipeError and `logkit run` exited 0, whatever the command's status."""
    assert _cli(sessions, "session", "start", "no reader").returncode == 0
    child = "import sys, time\ntime.sleep(0.5)\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)"
    proc = subprocess.Popen([*scenarios.LOGKIT, "run", "--", sys.executable, "-c", child],
                            env=scenarios.env_for(sessions), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before anything is written
    assert proc.wait(timeout=60) == 3
    [outcome] = [e for e in _events(sessions) if e["kind"] == "outcome"]
    assert outcome["exit_code"] == 3


def test_an_events_file_that_is_a_link_is_never_written_through(sessions: Path, tmp_path: Path) -> None:
    """A session merged from a teammate's repository whose `events.jsonl` (or `DECISIONS.tsv`) is a symbolic link
    (git stores links): `logkit note` appended to the file it led to, outside the store."""
    assert _cli(sessions, "session", "start", "a real one").returncode == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("# a file of the user's\n")
    evil = sessions / "2026-12-01-merged-aaaa"
    evil.mkdir()
    (evil / "events.jsonl").symlink_to(victim)
    done = _cli(sessions, "note", "--session", evil.name, "appended")
    assert done.returncode == 2 and "symbolic link" in done.stderr and "fix:" in done.stderr, done.stderr
    assert _cli(sessions, "status").returncode == 0
    done = _cli(sessions, "build", "--out", str(tmp_path / "site"), "--docs", str(tmp_path / "docs"), timeout=300)
    assert done.returncode == 0 and f"skipped {evil / 'events.jsonl'}: a symbolic link" in done.stderr, done.stderr
    (sessions / "DECISIONS.tsv").symlink_to(victim)
    done = _cli(sessions, "decide", "a choice", "--chosen", "a")
    assert done.returncode == 2 and "symbolic link" in done.stderr, done.stderr
    assert victim.read_text() == "# a file of the user's\n"
