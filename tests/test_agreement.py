"""One knowledge base, four readers, one answer per matrix cell (issue 19).

The knowledge base is written by real logkit commands: a session whose hypotheses ("moe X works")
are each tested by one ``logkit run --smoke-only`` launch, then a ``logkit sweep`` over the same
four MoE backends, with the stand-in server (logkit/demo/standin/fakeserver.py) crashing for one (SM100-only
kernels), answering garbage for one, hanging for one under a shortened ``--hang-timeout`` (not
attributable: the user cut it short) and working for one; a fifth backend worked once and crashed
once (conflicting evidence: said, never skipped). Then the
pre-launch check (:mod:`logkit.reasoning.refuted`), ``logkit status``'s proposals, the sweep's skip
step and the site's matrix (the built page's context) must say the same thing of every cell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_sweep import events, free_port, lab, left_behind, results, write_spec  # noqa: F401 - lab is a fixture

pytestmark = [pytest.mark.slow, pytest.mark.sglang]

PY = sys.executable
# what each backend does in the stand-in server, and what its matrix cell must then say
EXPECTED = {"flashinfer_trtllm": "refuted", "flashinfer_cutedsl": "refuted", "marlin": "untested", "triton": "works",
            "flashinfer_cutlass": "conflicting"}
HANG = "3"  # seconds: far below launch.toml's hang_timeout_default


def _logkit(lab: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "logkit", *args], env=lab["env"], capture_output=True, text=True,
                          timeout=timeout, cwd=lab["dir"])


def _site_states(sessions: Path) -> dict[str, str]:
    """backend value -> the state the site's matrix shows on SM120 ('untested' where it shows none)."""
    from logkit.builder.frames import make_frames
    from logkit.builder.index import KBIndex
    from logkit.builder.load import load
    from logkit.builder.pages_configs import matrix_page

    loaded = load(sessions)
    page, _negatives = matrix_page(KBIndex(loaded, make_frames(loaded)))
    shown: dict[str, str] = {}
    for table in page.tables:
        for row in table.rows:
            if row.axis != "moe_runner_backend":
                continue
            cell = row.cells[table.archs.index("SM120")]
            shown[row.value] = cell.category
    classes = {"crash", "garbage", "oom", "refuted"}
    return {b: ("refuted" if shown.get(b) in classes else shown.get(b, "untested")) for b in EXPECTED}


def _check_states(sessions: Path) -> dict[str, str]:
    """backend value -> what the pre-launch check says of a launch choosing it on SM120."""
    from logkit.reasoning import refuted

    class Root:
        root = sessions

    out = {}
    for backend in EXPECTED:
        choice = {"moe_runner_backend": backend}
        if refuted.check(choice, "SM120", Root, model="fake/model"):  # type: ignore[arg-type]
            out[backend] = "refuted"
        elif refuted.conflicts(choice, "SM120", Root, model="fake/model"):  # type: ignore[arg-type]
            out[backend] = "conflicting"
        else:
            out[backend] = "not refuted"
    return out


def _launch(lab: dict, hypothesis: str, backend: str, behaves: str | None = None) -> None:
    port = free_port()
    lab.setdefault("ports", []).append(port)
    env = {**lab["env"], **({"FAKE_SGLANG_BACKENDS": f"{backend}={behaves}"} if behaves else {})}
    subprocess.run([PY, "-m", "logkit", "run", "--tests", hypothesis, "--hang-timeout", HANG, "--grace", "5",
                    "--smoke", "What is 3 + 5?", "--smoke-only", "--yes", "--", PY, "-m", "sglang.launch_server",
                    "--model-path", "fake/model", "--host", "127.0.0.1", "--port", str(port),
                    "--moe-runner-backend", backend], env=env, capture_output=True, text=True, timeout=180,
                   cwd=lab["dir"])


def test_check_status_sweep_skip_and_site_agree_cell_by_cell(lab: dict) -> None:  # noqa: F811
    assert _logkit(lab, "session", "start", "agreement", "--id", "by-hand").returncode == 0
    hyps: dict[str, str] = {}
    for backend in EXPECTED:
        added = _logkit(lab, "hypothesis", "add", f"moe_runner_backend={backend} works on SM120")
        assert added.returncode == 0, added.stderr
        hyps[backend] = added.stdout.strip().splitlines()[-1]
        _launch(lab, hyps[backend], backend)
    _launch(lab, hyps["flashinfer_cutlass"], "flashinfer_cutlass", "sm100")  # worked once, crashed once
    statuses = {e["attempt"]: e["status"] for e in events(lab)["by-hand"] if e["kind"] == "outcome"}
    assert sorted(statuses.values()) == sorted(["arch_mismatch", "garbage", "hang", "ready", "ready",
                                                "arch_mismatch"]), statuses

    def agree(skipped: set[str] | None = None) -> None:
        check, site = _check_states(lab["sessions"]), _site_states(lab["sessions"])
        assert site == EXPECTED
        assert check == {b: s if s in ("refuted", "conflicting") else "not refuted" for b, s in EXPECTED.items()}
        shown = _logkit(lab, "status", "--session", "by-hand", "--json")
        assert shown.returncode == 0, shown.stderr
        proposed = {p["hypothesis"] for p in json.loads(shown.stdout)["proposals"]}
        assert proposed == {hyps[b] for b, s in EXPECTED.items() if s == "refuted"}
        # which hypotheses are open: status and hypothesis list read the one standing verdict
        listed = _logkit(lab, "hypothesis", "list", "--session", "by-hand", "--json")
        assert listed.returncode == 0, listed.stderr
        open_ids = [h["id"] for h in json.loads(listed.stdout) if h["status"] == "open"]
        assert [h["id"] for h in json.loads(shown.stdout)["hypotheses"]] == open_ids
        assert hyps["triton"] not in open_ids
        if skipped is not None:
            assert skipped == {b for b, s in EXPECTED.items() if s == "refuted"}

    # a verdict replaced by a later one (refuted, then confirmed): the hypothesis is closed for every reader
    for verb in ("refute", "confirm"):
        closed = _logkit(lab, "hypothesis", verb, hyps["triton"], "--because", f"by hand ({verb})")
        assert closed.returncode == 0, closed.stderr
    agree()
    # the sweep's known-outcomes step skips exactly the refuted cells, and runs the rest
    spec = write_spec(lab, list(EXPECTED), bench=False)
    text = spec.read_text().replace("ready_timeout = 4", f"ready_timeout = {HANG}")
    spec.write_text(text)
    swept = subprocess.run([PY, "-m", "logkit", "sweep", str(spec)], env=lab["env"], capture_output=True, text=True,
                           timeout=300, cwd=lab["dir"])
    assert swept.returncode == 0, swept.stderr
    (sweep_sid,) = [s for s in events(lab) if s != "by-hand"]
    got = results(events(lab)[sweep_sid])
    skipped = {k.split("=", 1)[1] for k, v in got.items() if v["status"] == "skipped"}
    ran = {k.split("=", 1)[1]: v["outcome"] for k, v in got.items() if v["status"] != "skipped"}
    assert ran == {"marlin": "hang", "triton": "ready", "flashinfer_cutlass": "ready"}
    # the sweep's own attempts changed no cell: every reader still says the same
    agree(skipped)
    assert left_behind(lab) == []
