"""Issue 24's third adversarial pass, each probe as the real command: ids from two hosts, a team's
repository merged with real git, FIFOs, invalid UTF-8, conflict markers, newlines in titles, errors
instead of tracebacks, the site swapped in whole, and the forms the secret patterns missed.
The full-size runs of the same attacks are ``bench/report.py``'s issue 24 rows (``tests/attacks24.py``)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import attacks24
import scenarios
from logkit.store import files, shared
from logkit.store.sessions import slugify

pytestmark = pytest.mark.slow  # issue 24's probes as real processes (sweeps, git, FIFOs, builds)


def _cli(sessions: Path, *args: str | bytes, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*scenarios.LOGKIT, *args], env=env or scenarios.env_for(sessions), cwd=cwd,
                          capture_output=True, text=True, errors="replace", timeout=timeout)


def _refused(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.startswith("logkit: error:"), done.stderr
    assert "fix:" in done.stderr, done.stderr
    for needle in needles:
        assert needle in done.stderr, (needle, done.stderr)


# -- ids --------------------------------------------------------------------------------------------


def test_a_title_is_cut_at_a_word_boundary() -> None:
    title = "Qwen3.5-397B NVFP4 on 8x RTX PRO 6000 (SM120) flashinfer"
    assert slugify(title) == "qwen3-5-397b-nvfp4-on-8x-rtx-pro-6000"
    assert not slugify("GLM-5 NVFP4 sweep of MoE runners (SM120)", limit=38).endswith("-sm12")
    assert slugify("x" * 60) == "x" * 40  # one word longer than the limit is cut


def test_two_hosts_starting_one_title_get_two_readable_ids(sessions: Path) -> None:
    made = []
    for host in ("gpu-box-a", "gpu-box-b"):
        done = _cli(sessions, "session", "start", "GLM-5 bring-up", "--json",
                    env=scenarios.env_for(sessions, LOGKIT_HOST=host))
        assert done.returncode == 0, done.stderr
        made.append(json.loads(done.stdout)["session"])
    a, b = made
    assert a != b and a.rsplit("-", 1)[0] == b.rsplit("-", 1)[0]
    assert a.endswith("-glm-5-bring-up-" + shared.host_tag("gpu-box-a"))
    assert len(a.rsplit("-", 1)[1]) == 4 and files.valid_session_id(a)
    # an id of the old form (no host tag) is still a session
    old = sessions / "2026-11-14-old-form"
    old.mkdir()
    (old / "events.jsonl").write_text(json.dumps({"v": 1, "id": "0" * 32, "session": old.name, "kind": "session",
                                                  "ts": "2026-11-14T00:00:00Z", "title": "old"}) + "\n")
    listed = _cli(sessions, "session", "list", "--json")
    assert {r["id"] for r in json.loads(listed.stdout)} == {a, b, old.name}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_team_repository_of_two_hosts_merges_with_git_and_loses_nothing(tmp_path: Path) -> None:
    figures = attacks24.two_hosts_git(tmp_path, build=True)
    assert figures["conflicts"] == 0 and figures["sessions"] == 2 and figures["decisions"] == 2
    assert figures["attempts"] == 4


# -- the current-session pointer, FIFOs, titles ----------------------------------------------------------


def test_a_current_pointer_with_conflict_markers_is_explained(sessions: Path) -> None:
    sid = scenarios.new_session(sessions)
    (sessions / ".current").write_text(f"<<<<<<< HEAD\n{sid}\n=======\nother\n>>>>>>> origin/main\n")
    for args in (("status",), ("note", "x"), ("run", "--", "true")):
        _refused(_cli(sessions, *args), "merge-conflict markers", "logkit session use")
    assert (sessions / ".gitignore").read_text().splitlines().count("/.current") == 1


def test_a_fifo_is_skipped_with_a_warning_and_nothing_hangs(sessions: Path, tmp_path: Path) -> None:
    figures = attacks24.fifos(sessions, tmp_path)
    assert figures["hung"] == 0 and figures["tracebacks"] == 0, figures


def test_a_newline_in_a_title_is_shown_escaped_never_as_a_fake_line(sessions: Path) -> None:
    scenarios.new_session(sessions, "multi\nline")
    assert _cli(sessions, "hypothesis", "add", "real\n2026-01-01 00:00:00  H9  hypothesis [high] fake").returncode == 0
    shown = _cli(sessions, "session", "show").stdout
    assert "real\\n2026-01-01" in shown and "\nfake" not in shown
    assert len(shown.splitlines()) == 3, shown
    assert "multi\\nline" in _cli(sessions, "session", "list").stdout
    assert _cli(sessions, "decide", "Dec\nfake decision line", "--decision", "x").returncode == 0
    for args in (("status",), ("hypothesis", "list"), ("decision", "list")):
        out = _cli(sessions, *args).stdout
        assert "\nfake" not in out and "\\nfake" in out or "real\\n2026" in out, (args, out)
        assert not any(line.startswith(("2026-01-01", "fake")) for line in out.splitlines()), (args, out)


# -- errors, not tracebacks -------------------------------------------------------------------------


def test_invalid_utf8_in_argv_and_toml_files_is_a_clear_error(sessions: Path, tmp_path: Path) -> None:
    figures = attacks24.invalid_utf8(sessions, tmp_path)
    assert figures["tracebacks"] == 0 and figures["unclear"] == 0, figures
    assert figures["child_recorded"], "run -- CMD with a non-UTF-8 word is recorded"


def test_bad_places_and_addresses_are_errors(sessions: Path, tmp_path: Path) -> None:
    scenarios.new_session(sessions)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    _refused(_cli(sessions, "schema", "--write", str(blocker / "dir")), "cannot write the schemas")
    for addr in ("127.0.0.1:99999", "localhost", "127.0.0.1:0"):
        _refused(_cli(sessions, "serve", "--addr", addr), "HOST:PORT")
    _refused(_cli(sessions, "build", "--out", str(blocker / "out"), cwd=tmp_path), "cannot write the site")
    _refused(_cli(sessions, "build", "--docs", str(blocker / "docs"), cwd=tmp_path), "cannot write the Markdown")


# -- the site ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_killed_build_leaves_the_previous_site_whole(tmp_path: Path) -> None:
    figures = attacks24.killed_build(tmp_path, tries=1)
    assert figures["half_sites"] == 0 and figures["killed_in_mkdocs"] == 1, figures


@pytest.mark.slow
def test_a_launch_never_benchmarked_publishes_with_strict(sessions: Path, tmp_path: Path) -> None:
    src = ["--reconstructed", "test account"]
    assert _cli(sessions, "record", "session", "no bench", "--id", "nb", *src).returncode == 0
    assert _cli(sessions, "record", "attempt", "--session", "nb", "--status", "ready", *src, "--cmd",
                "python -m sglang.launch_server --model-path m/x --moe-runner-backend triton").returncode == 0
    done = _cli(sessions, "build", "--strict", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = next((tmp_path / "site" / "docs" / "configs").rglob("index.md")).read_text()
    assert "metrics/" not in page


def test_every_build_warning_is_said(sessions: Path, tmp_path: Path) -> None:
    scenarios.new_session(sessions)
    config = tmp_path / "mkdocs.yml"
    base = Path(__file__).resolve().parent.parent / "logkit" / "data" / "mkdocs-base.yml"
    config.write_text(f"INHERIT: {json.dumps(str(base))}\nnav:\n  - Home: index.md\n  - Gone: no-such-page.md\n")
    done = _cli(sessions, "build", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    count = int(done.stdout.split(" warning(s)")[0].rsplit(" ", 1)[1])
    said = [line for line in done.stderr.splitlines() if line.startswith("logkit: ") and "warning" in line]
    assert count >= 1 and len(said) == count and "no-such-page.md" in done.stderr, (done.stdout, done.stderr)


# -- secrets ---------------------------------------------------------------------------------------------


def test_the_forms_the_patterns_missed_never_reach_disk(sessions: Path, tmp_path: Path) -> None:
    figures = attacks24.secret_forms(sessions, tmp_path)
    assert figures["leaked"] == [], figures["leaked"]
    assert figures["planted"] >= 20


def test_a_secret_looking_name_is_redacted_whatever_its_prefix() -> None:
    from logkit.capture.redact import Redactor

    r = Redactor()
    for name in ("SGLANG_DB_PASS", "TOKEN", "APIKEY", "MY_PWD", "NCCL_SOCKET_PASS", "CUDA_X_PASSPHRASE"):
        assert r.is_secret_env(name), name
    for name in ("TOKENIZERS_PARALLELISM", "PWD", "OLDPWD", "SGLANG_PORT", "NCCL_DEBUG"):
        assert not r.is_secret_env(name), name
    assert r.env({"SGLANG_DB_PASS": "pw123456", "SGLANG_PORT": "1"}) == {"SGLANG_DB_PASS": "[REDACTED]",
                                                                        "SGLANG_PORT": "1"}
    assert r.scrub({"key": "moe_runner_backend=triton"}) == {"key": "moe_runner_backend=triton"}


def test_provider_formats_are_data_with_their_source_named() -> None:
    import tomllib

    from logkit.capture import redact

    rows = tomllib.loads((redact._DATA / "secrets.toml").read_text(encoding="utf-8"))["text"]["patterns"]
    sourced = {r["name"]: r["source"] for r in rows if "source" in r}
    assert len(sourced) >= 10 and all(s.startswith(("gitleaks:", "kingfisher:")) for s in sourced.values())
    r = redact.Redactor()
    for row in rows:
        if "example" in row:
            assert redact.PLACEHOLDER in r.text(row["example"]), row["name"]
            stored = r.chunk(b"x\n" * 100 + row["example"].encode() + b"\n" + b"x\n" * 100)
            assert redact.PLACEHOLDER.encode() in stored, row["name"]
            assert stored.count(b"\n") == 201 + row["example"].count("\n"), row["name"]  # lines kept


# -- the sweep's own guards --------------------------------------------------------------------------


def test_a_benchmark_is_credited_only_to_the_launchs_own_server(tmp_path: Path) -> None:
    from logkit.sweep.cell import foreign_server

    def serve(port: int) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=tmp_path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, process_group=0)
        scenarios.wait_for(lambda: attacks24.listening(port), what="the server to listen")
        return proc

    port, later_port = attacks24.free_port(), attacks24.free_port()
    procs = [serve(port)]  # another sweep's server, there before the launch
    time.sleep(0.1)
    procs.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=0))
    launch = {"pgid": procs[-1].pid}  # a launch whose own server never bound the port
    time.sleep(0.1)
    procs.append(serve(later_port))  # started after the launch (a container's port proxy): not foreign
    try:
        assert foreign_server({"pgid": procs[0].pid}, port) is None  # the server's own launch
        why = foreign_server(launch, port)
        assert why is not None and f"pid {procs[0].pid}" in why
        assert foreign_server(launch, later_port) is None
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_second_sweep_of_a_running_spec_is_refused_naming_the_first(tmp_path: Path) -> None:
    figures = attacks24.concurrent_sweeps(tmp_path)
    assert figures["refused"] == 1 and figures["named_pid"], figures


def test_a_budget_of_zero_runs_no_cell(tmp_path: Path) -> None:
    spec = attacks24.write_spec(tmp_path, budget="0")
    done = subprocess.run([*scenarios.LOGKIT, "sweep", str(spec)], env=attacks24.sweep_env(tmp_path),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 3, done.stderr  # cells left for a later run: the budget's exit status
    assert "time budget (0s) spent: 1 cell(s) left" in done.stderr and "Traceback" not in done.stderr
    assert not any(e["kind"] == "attempt" for f in (tmp_path / "sessions").glob("*/events.jsonl")
                   for e in map(json.loads, f.read_text().splitlines()))


def test_the_sweep_log_goes_through_the_redactor(tmp_path: Path) -> None:
    figures = attacks24.sweep_log_secrets(tmp_path)
    assert figures["leaked"] == [] and figures["log_bytes"] > 0, figures


def test_ctrl_c_is_a_line_not_a_traceback(sessions: Path) -> None:
    scenarios.new_session(sessions)
    # SIGINT as a terminal sends it: a suite started in the background by a script (no job control)
    # inherits SIGINT ignored, and so would `why`, which then reads on to the end of its input
    proc = subprocess.Popen([*scenarios.LOGKIT, "why"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=scenarios.env_for(sessions),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(1.5)  # reading the pasted error from stdin
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err and "logkit: interrupted" in err, err


def test_a_private_key_printed_across_reads_is_redacted_to_its_end(tmp_path: Path) -> None:
    from logkit.capture import recorder
    from logkit.capture.redact import Redactor

    reads = [b"before\n-----BEGIN OPENSSH PRIVATE KEY-----\n", b"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUSECRETBODY1\n",
             b"AAAASECRETBODY2\n-----END OPENSSH PRIVATE KEY-----\nafter api_key=None\n"]
    log = tmp_path / "A1.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    rec = recorder.Recorder(fd, Redactor.for_run({}, []), None)
    for data in reads:  # the recorder's order: scanned on the reading thread, stored later
        rec.consume(5, data, rec.scan(5, data))
    os.close(fd)
    assert log.read_bytes() == (b"before\n-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED]\n[REDACTED]\n"
                                b"-----END OPENSSH PRIVATE KEY-----\nafter api_key=None\n")


@pytest.mark.parametrize("seed", range(3))
def test_a_private_key_after_another_secret_is_redacted_however_the_reads_split(tmp_path: Path, seed: int) -> None:
    """CI once leaked a key's body: its header sat in the two-line region of the cookie on the line
    before, so the block's region stopped at the header. Every split of the same output, tried."""
    from logkit.capture import recorder
    from logkit.capture.redact import Redactor

    text = "".join(t + "\n" for t, _p in attacks24.PRINTED).encode()
    planted = [p.encode() for _t, p in attacks24.PRINTED]
    rng = random.Random(seed)
    for trial in range(300):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(0, 3)))
        if trial == 0:
            cuts = [215, 389, 484]  # the split CI met
        reads = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        log = tmp_path / f"A{seed}-{trial}.log"
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        rec = recorder.Recorder(fd, Redactor.for_run({}, []), None)
        for data in reads:
            rec.consume(5, data, rec.scan(5, data))
        os.close(fd)
        stored = log.read_bytes()
        assert [p for p in planted if p in stored] == [], cuts
        assert stored.count(b"\n") == text.count(b"\n"), cuts
