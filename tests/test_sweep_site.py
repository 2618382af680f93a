"""A sweep's decision record and site page: ``logkit decide --from-sweep``, the real mkdocs build,
headless Chromium. The sweep's events are written with the store API (what ``logkit sweep``
writes, see tests/test_sweep.py for the real runs); everything after that is the real CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from logkit.events import (Attempt, Hypothesis, LaunchConfig, Metric, Outcome, Sweep, SweepCell, SweepCellResult,
                           SweepPoint, Verdict)
from logkit.store import Store

pytestmark = pytest.mark.slow  # sweeps, real MkDocs builds and the browser

PY = sys.executable
SW = "SW-0123abcd"
CELLS = [("c1", "flashinfer_trtllm"), ("c2", "flashinfer_cutlass"), ("c3", "triton"), ("c4", "flashinfer_cutedsl")]


def logkit(*args: str, sessions: Path, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), *args], capture_output=True, text=True,
                          timeout=300, **kw)


def decisions(sessions: Path, sid: str) -> int:
    lines = (sessions / sid / "events.jsonl").read_text().splitlines()
    return sum(1 for line in lines if json.loads(line)["kind"] == "decision")


def make_sweep(root: Path) -> str:
    store = Store(root)
    h = store.create("sweep: fake MoE backends", make_current=False)
    sid = h.id
    key = "moe_runner_backend={}".format
    h.append(Sweep(session=sid, sweep=SW, title="fake MoE backends", spec_hash="0123abcd" + "0" * 56,
                   argv=["python", "-m", "sglang.launch_server", "--model-path", "m"],
                   axes={"moe_runner_backend": [v for _c, v in CELLS]}, arch="SM120", sglang_version="0.5.23",
                   limit_metric="p99_tpot_ms", limit_max=20.0,
                   cells=[SweepCell(id=c, key=key(v), values={"moe_runner_backend": v}) for c, v in CELLS]))
    n = 0

    def attempt(role: str, status: str, tests: list[str], label: str) -> str:
        nonlocal n
        n += 1
        a = f"A{n}"
        h.append(Attempt(session=sid, short_id=a, argv=["python", "-m", "x"], role=role, tests=tests, label=label,
                         launch=LaunchConfig(fingerprint={"moe_runner_backend": label}) if role == "launch" else None))
        h.append(Outcome(session=sid, attempt=a, status=status, label=status))
        return a

    speeds = {"flashinfer_cutlass": 2.0, "triton": 1.0}
    for i, (cell, value) in enumerate(CELLS, start=1):
        hyp = f"H{i}"
        h.append(Hypothesis(session=sid, short_id=hyp, text=f"{key(value)} works on SM120", tags=["sweep", SW]))
        if value == "flashinfer_cutedsl":  # refuted elsewhere: skipped
            h.append(Verdict(session=sid, hypothesis=hyp, verdict="refuted", because="refuted on SM120"))
            h.append(SweepCellResult(session=sid, sweep=SW, cell=cell, key=key(value), status="skipped",
                                     outcome="garbage", hypothesis=hyp, reason="refuted on SM120 by other/A2"))
            continue
        launch = attempt("launch", "ready" if value in speeds else "arch_mismatch", [hyp], value)
        points, attempts = [], [launch]
        for conc in (1, 16) if value in speeds else ():
            b = attempt("bench", "exit_ok", [], f"bench {conc}")
            tput = 40.0 * speeds[value] * conc ** 0.8
            h.append(Metric(session=sid, name="output_throughput", value=tput, attempt=b, server_attempt=launch,
                            labels={"max_concurrency": conc}))
            tpot = 1000.0 * conc / tput
            points.append(SweepPoint(attempt=b, labels={"max_concurrency": conc}, output_throughput=tput,
                                     per_user=1000.0 / tpot, latency=tpot * 1.3, within_limit=tpot * 1.3 <= 20))
            attempts.append(b)
        status = "works" if value in speeds else "failed"
        h.append(Verdict(session=sid, hypothesis=hyp, verdict="confirmed" if status == "works" else "refuted",
                         evidence=attempts))
        h.append(SweepCellResult(session=sid, sweep=SW, cell=cell, key=key(value), status=status,
                                 outcome="ready" if status == "works" else "arch_mismatch", hypothesis=hyp,
                                 attempts=attempts, points=points,
                                 reason=None if status == "works" else "TRT-LLM kernels built for SM100 only"))
    return sid


def test_decide_from_sweep_proposes_the_user_edits_and_accepts(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sid = make_sweep(sessions)
    draft = tmp_path / "decision.toml"
    r = logkit("decide", "--from-sweep", SW, "--write", str(draft), sessions=sessions)
    assert r.returncode == 0, r.stderr
    assert f"logkit decide --from-file {draft}" in r.stderr
    text = draft.read_text()
    assert 'chosen = ["moe_runner_backend=flashinfer_cutlass"]' in text
    assert text.count("[[option]]") == 4
    assert 'name = "moe_runner_backend=flashinfer_trtllm"' in text and "arch_mismatch" in text
    assert decisions(sessions, sid) == 0
    # a second proposal never overwrites the draft being edited
    again = logkit("decide", "--from-sweep", SW, "--write", str(draft), sessions=sessions)
    assert again.returncode == 2 and "exists already" in again.stderr
    # the user edits the title and the consequences, then accepts
    text = re.sub(r'^title = .*$', 'title = "flashinfer_cutlass MoE on SM120"', text, flags=re.M)
    text = text.replace('consequences = ""', 'consequences = "Pin it in the launch scripts."')
    draft.write_text(text)
    ok = logkit("decide", "--from-file", str(draft), sessions=sessions)
    assert ok.returncode == 0, ok.stderr
    dr = ok.stdout.strip()
    assert re.fullmatch(r"DR-[0-9A-Z]{4,}", dr)
    (decision,) = [e for e in map(json.loads, (sessions / sid / "events.jsonl").read_text().splitlines())
                   if e["kind"] == "decision"]
    assert decision["title"] == "flashinfer_cutlass MoE on SM120" and decision["tags"] == ["sweep", SW]
    assert decision["consequences"] == "Pin it in the launch scripts."
    options = {o["name"]: o for o in decision["options"]}
    assert options["moe_runner_backend=flashinfer_cutlass"]["chosen"] is True
    assert options["moe_runner_backend=flashinfer_trtllm"]["attempts"] == ["A1"]
    assert options["moe_runner_backend=flashinfer_trtllm"]["hypotheses"] == ["H1"]
    assert "arch_mismatch" in options["moe_runner_backend=flashinfer_trtllm"]["why_not"]
    assert len(options) == 4 and decision["evidence"] == [f"A{n}" for n in range(1, 8)]
    shown = logkit("decision", "list", sessions=sessions)
    assert dr in shown.stdout
    # a broken draft names the line and records nothing more
    draft.write_text(text.replace("status = ", "statsu = "))
    bad = logkit("decide", "--from-file", str(draft), sessions=sessions)
    assert bad.returncode == 2 and re.search(r"decision.toml:\d+: unknown key 'statsu'", bad.stderr)
    assert decisions(sessions, sid) == 1


def _built(tmp_path: Path) -> tuple[Path, str]:
    sessions = tmp_path / "sessions"
    sid = make_sweep(sessions)
    draft = tmp_path / "d.toml"
    assert logkit("decide", "--from-sweep", SW, "--write", str(draft), sessions=sessions).returncode == 0
    done = logkit("decide", "--from-file", str(draft), sessions=sessions)
    assert done.returncode == 0, done.stderr
    (tmp_path / "dr.txt").write_text(done.stdout.strip())
    out = tmp_path / "out"
    r = logkit("build", "--docs", str(tmp_path / "docs"), "--out", str(out), sessions=sessions, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return out, sid


def test_the_sweep_page_has_the_grid_evidence_pareto_chart_and_decision(tmp_path: Path) -> None:
    out, sid = _built(tmp_path)
    page = (out / "sweeps" / SW / "index.html").read_text()
    index = (out / "sweeps" / "index.html").read_text()
    assert f"{SW}/index.html" in index
    # the grid: ranked, why the others failed, every cell linking its evidence on the session page
    assert page.index("flashinfer_cutlass") < page.index("moe_runner_backend=triton") < page.index("flashinfer_trtllm")
    assert "TRT-LLM</span> kernels built for SM100 only" in page and "skipped" in page
    for ref in ("#H2", "#A2", "#A3", "#A4", "#A1"):
        assert f"../../sessions/{sid}/index.html{ref}" in page
    # the chart: an SVG rendered at build time, the Pareto front named
    src = re.search(r'<img src="(\.\./\.\./assets/charts/[0-9a-f]+\.svg)"', page).group(1)
    svg = (out / "sweeps" / SW / src).resolve()
    assert svg.is_file() and "<svg" in svg.read_text()[:500]
    front = page.split("Pareto front (no other point", 1)[1].split("</p>", 1)[0]
    assert "flashinfer_cutlass" in front and "triton" not in front
    # the decision it led to
    dr = (tmp_path / "dr.txt").read_text()
    assert f"../../decisions/{dr}/index.html" in page


@pytest.mark.browser
def test_the_sweep_page_in_headless_chromium(tmp_path: Path) -> None:
    webdriver = pytest.importorskip("selenium.webdriver")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("needs Debian's chromium")
    out, _sid = _built(tmp_path)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
                "--allow-file-access-from-files", "--window-size=1280,1000", "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path="/usr/bin/chromedriver"))
    try:
        drv.get((out / "sweeps" / SW / "index.html").as_uri())
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(drv, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
        assert SW in drv.find_element("css selector", "article h1").text
        width = drv.execute_script("const i = document.querySelector('figure.logkit-chart img');"
                                   "return i && i.complete ? i.naturalWidth : 0")
        assert width > 100, "the chart did not load"
        rows = drv.find_elements("css selector", "article table tr")
        assert len(rows) >= 5
        assert not [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        drv.execute_script("document.querySelector('figure.logkit-chart').scrollIntoView()")
        Path(__file__).parent.joinpath("artifacts").mkdir(exist_ok=True)
        drv.save_screenshot(str(Path(__file__).parent / "artifacts" / "sweep.png"))
    finally:
        drv.quit()
