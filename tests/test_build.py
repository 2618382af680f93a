"""The knowledge builder end to end: real sessions written through logkit.store, the real
`mkdocs build` with Material, checks on the built HTML (pages, stable URLs, supersession both
ways, matrix cells, staleness, escaping of planted injections, no external URL, bad lines)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

import kb_factory
from conftest import REPO, run_logkit
from logkit.builder import build, generate
from logkit.store import Store

HTML_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(https?:)?//([^/"' >]+)""", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The planted realistic knowledge base, built once with the repository's mkdocs.yml."""
    root = tmp_path_factory.mktemp("kb")
    kb_factory.realistic(root / "sessions", planted=True)
    warnings: list[str] = []
    build(root / "sessions", root / "docs", root / "out", config=REPO / "mkdocs.yml", warn=warnings.append)
    assert warnings == []
    return root


def html(site: Path, rel: str) -> str:
    return (site / "out" / rel).read_text(encoding="utf-8")


@pytest.mark.slow  # the module's real MkDocs build
def test_pages_at_stable_urls(site: Path) -> None:
    out = site / "out"
    for rel in ["index.html", "decisions/index.html", "decisions/DR-0001/index.html", "decisions/DR-0002/index.html",
                "configs/index.html", "backends/index.html", "signatures/index.html", "metrics/index.html",
                "sessions/index.html", "sessions/2026-11-14-glm5-sm120/index.html", "tags.html",
                "search/search_index.js"]:
        assert (out / rel).is_file(), rel
    session = html(site, "sessions/2026-11-14-glm5-sm120/index.html")
    for anchor in ("A1", "A2", "A3", "H1", "H2"):
        assert f'id="{anchor}"' in session


@pytest.mark.slow  # the module's real MkDocs build
def test_home_covers_models_gpus_versions_and_best(site: Path) -> None:
    home = html(site, "index.html")
    for text in ("zai-org/GLM-5-NVFP4", "nvidia/Qwen3.5-397B-A17B-NVFP4", "SM120", "SM100", "SM90", "0.5.23",
                 "Best measured configuration", "4,800"):
        assert text in home, text
    assert "reconstructed" in home  # the provenance of the third session is counted


@pytest.mark.slow  # the module's real MkDocs build
def test_supersedes_shown_both_ways(site: Path) -> None:
    old = html(site, "decisions/DR-0001/index.html")
    new = html(site, "decisions/DR-0002/index.html")
    assert "superseded by" in old and 'href="../DR-0002/index.html"' in old
    assert "recorded as accepted" in old  # the status is derived, the record is not rewritten
    assert "supersedes" in new and 'href="../DR-0001/index.html"' in new
    index = html(site, "decisions/index.html")
    superseded = index.split('id="superseded"')[1].split('id="deprecated"')[0]
    assert "DR-0001" in superseded


@pytest.mark.slow  # the module's real MkDocs build
def test_decision_links_down_to_evidence(site: Path) -> None:
    page = html(site, "decisions/DR-0001/index.html")
    assert "../../sessions/2026-11-14-glm5-sm120/index.html#A1" in page  # an option's attempt
    assert "../../sessions/2026-11-14-glm5-sm120/index.html#H1" in page  # the refuted hypothesis
    assert "902" in page and "no kernel image is available" in page  # log excerpt with its line number
    assert "2026-01-01-nowhere/A9" in page  # an unresolvable reference is shown, not dropped
    cross = html(site, "decisions/DR-0002/index.html")
    assert "../../sessions/2026-11-14-glm5-sm120/index.html#A4" in cross  # cross-session evidence


@pytest.mark.slow  # the module's real MkDocs build
def test_matrix_cells(site: Path) -> None:
    page = html(site, "backends/index.html")
    glm = page.split(">zai-org/GLM-5-NVFP4<")[1].split("<h2")[0]  # the GLM-5 table (SM120 only)
    rows = re.findall(r"<tr>.*?</tr>", glm, re.S)
    row = lambda value: next(r for r in rows if f"<code>{value}</code>" in r)  # noqa: E731
    assert "crash" in row("flashinfer_trtllm") and "SM120" in page
    assert "garbage" in row("flashinfer_cutedsl")
    assert "slow" in row("triton")
    assert "works" in row("flashinfer_cutlass")
    assert "untested" in page
    assert rows  # the matrix has rows at all
    # a failing cell links to a negative result page with the command to reproduce it
    neg = re.search(r'href="([^"]+)"><span class="lk-cell lk-crash">crash', page)
    assert neg, "no link from a crash cell"
    neg_page = (site / "out" / "backends" / neg.group(1)).read_text()
    assert "--moe-runner-backend flashinfer_trtllm" in neg_page or "--attention-backend" in neg_page
    assert "What would justify a retry" in neg_page and "Reproduce" in neg_page


@pytest.mark.slow  # the module's real MkDocs build
def test_config_page_has_command_versions_metrics(site: Path) -> None:
    index = html(site, "configs/index.html")
    href = re.search(r'href="(zai-org-glm-5-nvfp4[^"]*0-5-23[^"]*)"', index).group(1)
    page = (site / "out" / "configs" / href).read_text()
    assert "--moe-runner-backend flashinfer_cutlass" in page
    assert "md-clipboard" in page or "content.code.copy" in (site / "out" / "index.html").read_text()
    for text in ("flashinfer 0.5.3", "torch 2.9.1", "cuda 12.9", "driver 580.82.07", "output tok/s", "64"):
        assert text in page, text


@pytest.mark.slow  # the module's real MkDocs build
def test_charts_are_svg_files(site: Path) -> None:
    index = html(site, "metrics/index.html")
    href = re.search(r'href="([^"]+/index.html)"', index.split("<table>")[1]).group(1)
    page = (site / "out" / "metrics" / href).read_text()
    srcs = re.findall(r'<img[^>]+src="([^"]+\.svg)"', page)
    assert len(srcs) >= 3
    for src in srcs:
        svg = (site / "out" / "metrics" / href).parent.joinpath(src).resolve()
        text = svg.read_text()
        assert text.startswith("<svg") and "chart unavailable" not in text and len(text) > 2000


@pytest.mark.slow
def test_a_missing_chart_is_rendered_again_and_copied_into_the_site(tmp_path: Path) -> None:
    """Charts render in the build's own process, before MkDocs: a chart file deleted from the docs is
    rendered by the next build (the others are kept) and the site shows it."""
    kb_factory.realistic(tmp_path / "sessions")
    args = (tmp_path / "sessions", tmp_path / "docs", tmp_path / "out")
    first = build(*args, config=REPO / "mkdocs.yml", warn=lambda _m: None)
    assert first.charts_rendered >= 3
    svgs = sorted((tmp_path / "docs" / "assets" / "charts").glob("*.svg"))
    rendered = svgs[0].read_text()
    assert rendered.startswith("<svg") and len(rendered) > 2000
    svgs[0].unlink()
    (tmp_path / "out" / "assets" / "charts" / svgs[0].name).unlink()
    again = build(*args, config=REPO / "mkdocs.yml", warn=lambda _m: None)
    assert again.charts_rendered == 1
    assert svgs[0].read_text() == rendered
    assert (tmp_path / "out" / "assets" / "charts" / svgs[0].name).read_text() == rendered


@pytest.mark.slow  # the module's real MkDocs build
def test_planted_injections_render_as_text(site: Path) -> None:
    for path in (site / "out").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "<script>window.__pwned" not in text, path
        assert "<img src=x" not in text and 'href="javascript:' not in text, path
        assert "<strong>bold</strong>" not in text and 'id="evil"' not in text, path
        assert "<script>x</script>" not in text, path
    page = html(site, "decisions/DR-0001/index.html")
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page  # shown, as text
    assert "[click](javascript:alert(1)) **bold** | cell |" in re.sub(r"<[^>]+>", "", page).replace("&#124;", "|")


@pytest.mark.slow  # the module's real MkDocs build
def test_no_external_urls(site: Path) -> None:
    for path in (site / "out").rglob("*.html"):
        for scheme, host in HTML_EXTERNAL.findall(path.read_text(encoding="utf-8")):
            raise AssertionError(f"{path}: external {scheme}{host}")  # no site_url is set: not even its own


def test_rebuild_is_identical(tmp_path: Path) -> None:
    kb_factory.realistic(tmp_path / "sessions")
    generate(tmp_path / "sessions", tmp_path / "a")
    generate(tmp_path / "sessions", tmp_path / "b")
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_stale_when_a_later_launch_with_the_same_fingerprint_failed(tmp_path: Path) -> None:
    store = Store(tmp_path / "sessions")
    w = kb_factory.Writer("2026-12-01-stale", kb_factory.datetime(2026, 12, 1, tzinfo=kb_factory.UTC))
    w.launch(kb_factory.MODELS[0], "SM120", 8, "flashinfer_cutlass", "flashinfer", kb_factory.VERSIONS[2], throughput=2000)
    w.tick(60 * 24)
    w.launch(kb_factory.MODELS[0], "SM120", 8, "flashinfer_cutlass", "flashinfer", kb_factory.VERSIONS[2],
             fail=("oom", "cuda-oom-graph-capture", "CUDA out of memory during CUDA graph capture", "OOM"))
    kb_factory._write(store, "2026-12-01-stale", "stale check", w.t - timedelta(days=2), w)
    generate(tmp_path / "sessions", tmp_path / "docs")
    page = next((tmp_path / "docs" / "configs").glob("*/index.md")).read_text()
    assert "(stale)" in page and "A3" in page


def test_configurations_differing_only_in_mem_fraction_get_distinct_headings(tmp_path: Path) -> None:
    store = Store(tmp_path / "sessions")
    w = kb_factory.Writer("2026-12-02-mem", kb_factory.datetime(2026, 12, 2, tzinfo=kb_factory.UTC))
    for mem in ("0.85", "0.92", None):
        aid = w.launch(kb_factory.MODELS[0], "SM120", 8, "flashinfer_cutlass", "flashinfer", kb_factory.VERSIONS[2],
                       extra=["--mem-fraction-static", mem] if mem else [])
        i, attempt = next((i, e) for i, e in enumerate(w.events) if getattr(e, "short_id", None) == aid)
        fingerprint = {**attempt.launch.fingerprint, **({"mem_fraction_static": float(mem)} if mem else {})}
        w.events[i] = attempt.model_copy(update={"launch": attempt.launch.model_copy(update={"fingerprint": fingerprint})})
    kb_factory._write(store, "2026-12-02-mem", "mem fraction", w.t - timedelta(days=1), w)
    generate(tmp_path / "sessions", tmp_path / "docs")
    page = next((tmp_path / "docs" / "configs").glob("*/index.md")).read_text()
    headings = [line.split(" { #")[0] for line in page.splitlines() if line.startswith("## ")]
    assert sorted(headings) == ["## flashinfer attention + flashinfer_cutlass FP4 GEMM + flashinfer_cutlass MoE · mem_fraction_static not set",
                                "## flashinfer attention + flashinfer_cutlass FP4 GEMM + flashinfer_cutlass MoE · mem_fraction_static=0.85",
                                "## flashinfer attention + flashinfer_cutlass FP4 GEMM + flashinfer_cutlass MoE · mem_fraction_static=0.92"]


@pytest.mark.slow
def test_bad_lines_warned_with_file_line_and_strict_fails(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    kb_factory.realistic(sessions)
    events = sessions / "2026-11-20-qwen35-b200" / "events.jsonl"
    count = len(events.read_text().splitlines())
    with events.open("a") as fh:
        fh.write("{not json\n")
        fh.write('{"kind": "decision", "session": "x", "decision_id": "DR-0009", "title": "t", "status": "maybe"}\n')
    env = {"LOGKIT_SESSIONS": str(sessions)}
    ok = run_logkit("build", "--out", str(tmp_path / "out"), "--docs", str(tmp_path / "docs"), env=env, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert f"{events}:{count + 1}:" in ok.stderr and f"{events}:{count + 2}:" in ok.stderr
    assert "status" in ok.stderr
    assert (tmp_path / "out" / "decisions" / "DR-0002" / "index.html").exists()  # the rest still built
    strict = run_logkit("build", "--strict", "--out", str(tmp_path / "out2"), "--docs", str(tmp_path / "docs2"),
                        env=env, cwd=tmp_path)
    assert strict.returncode == 2
    assert f"{events}:{count + 1}" in strict.stderr and "fix:" in strict.stderr


def test_nested_dirs_refused(tmp_path: Path) -> None:
    kb_factory.realistic(tmp_path / "sessions")
    result = run_logkit("--sessions", str(tmp_path / "sessions"), "build", "--out", str(tmp_path / "site"),
                        "--docs", str(tmp_path / "site" / "docs"), cwd=tmp_path)
    assert result.returncode == 2 and "nested" in result.stderr and "fix:" in result.stderr


@pytest.mark.slow
def test_cite(tmp_path: Path) -> None:
    kb_factory.realistic(tmp_path / "sessions")
    s = str(tmp_path / "sessions")
    # the shipped mkdocs.yml sets no address: a relative link, and how to set one
    plain = {"LOGKIT_SITE_URL": ""}
    result = run_logkit("--sessions", s, "cite", "DR-0002", "--config", str(REPO / "mkdocs.yml"), env=plain)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[DR-0002: Move GLM-5 on SM120 to SGLang 0.5.23](decisions/DR-0002/)"
    assert "LOGKIT_SITE_URL=" in result.stderr and "site_url:" in result.stderr
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"INHERIT: {REPO / 'logkit/data/mkdocs-base.yml'}\nsite_url: https://kb.team.example/kb/\n")
    result = run_logkit("--sessions", s, "cite", "dr-0002", "--config", str(config), env=plain)
    assert result.stdout.strip() == (
        "[DR-0002: Move GLM-5 on SM120 to SGLang 0.5.23](https://kb.team.example/kb/decisions/DR-0002/)")
    assert result.stderr == ""
    result = run_logkit("--sessions", s, "cite", "DR-0002", "--config", str(config),
                        env={"LOGKIT_SITE_URL": "https://ci.example/kb"})  # the variable CI sets wins
    assert result.stdout.strip().endswith("(https://ci.example/kb/decisions/DR-0002/)")
    missing = run_logkit("--sessions", s, "cite", "DR-0042", "--config", str(REPO / "mkdocs.yml"))
    assert missing.returncode == 2 and "DR-0001, DR-0002" in missing.stderr
    bad = run_logkit("--sessions", s, "cite", "0042")
    assert bad.returncode == 2 and "DR-0003" in bad.stderr


@pytest.mark.parametrize("command", ["build", "serve", "cite"])
def test_help(command: str) -> None:
    result = run_logkit(command, "--help")
    assert result.returncode == 0 and "usage: logkit " + command in result.stdout


def test_environment_event_supplies_gpus_and_versions(tmp_path: Path) -> None:
    """An attempt line without GPUs, completed later by an `environment` event (the probes' result)."""
    from logkit.events import AttemptEnvironment

    store = Store(tmp_path / "sessions")
    w = kb_factory.Writer("2026-12-02-env", kb_factory.datetime(2026, 12, 2, tzinfo=kb_factory.UTC))
    w.launch(kb_factory.MODELS[1], "SM100", 4, "flashinfer_trtllm", "fa3", kb_factory.VERSIONS[2],
             fail=kb_factory.FAILS[("fa3", "SM100")])
    attempt = w.events[0]
    full = attempt.environment
    w.events[0] = attempt.model_copy(update={"environment": kb_factory.Environment(host="gpu-node-07")})
    w.events.append(AttemptEnvironment(session="2026-12-02-env", ts=w.tick(1), attempt="A1", environment=full))
    kb_factory._write(store, "2026-12-02-env", "environment event", w.t, w)
    generate(tmp_path / "sessions", tmp_path / "docs")
    matrix = (tmp_path / "docs" / "backends" / "index.md").read_text()
    assert "| SM100 |" in matrix and "crash" in matrix
    session = (tmp_path / "docs" / "sessions" / "2026-12-02-env" / "index.md").read_text()
    assert "flashinfer 0.5.3" in session and "driver 575.57.08" in session


def test_a_configuration_page_shows_the_full_parse_that_a_later_launch_config_event_gave(tmp_path: Path) -> None:
    """The configuration pages read only the last launch of each configuration with its
    ``launch_config`` events (SGLang's full parse, recorded beside the launch): its arguments are
    the page's full list, and another launch's parse is not."""
    from logkit.events import AttemptLaunch, LaunchConfig

    store = Store(tmp_path / "sessions")
    sid = "2026-12-04-full-parse"
    w = kb_factory.Writer(sid, kb_factory.datetime(2026, 12, 4, tzinfo=kb_factory.UTC))
    # two launches of one configuration: the page shows the last one's parse
    refs = [w.launch(kb_factory.MODELS[1], "SM100", 4, "flashinfer_trtllm", "trtllm_mla", kb_factory.VERSIONS[2],
                     throughput=5400.0) for _ in range(2)]
    launch = next(e for e in w.events if getattr(e, "short_id", None) == refs[1] and e.kind == "attempt").launch
    for ref, value in zip(refs, (111, 222), strict=True):
        full = launch.model_copy(update={"args": {**launch.args, "chunked_prefill_size": value, "port": 30000}})
        w.events.append(AttemptLaunch(session=sid, ts=w.tick(1), attempt=ref, launch=full))
    kb_factory._write(store, sid, "full parse", w.t, w)
    generate(tmp_path / "sessions", tmp_path / "docs")
    pages = [p.read_text() for p in (tmp_path / "docs" / "configs").glob("*/index.md")]
    page = next(text for text in pages if "chunked_prefill_size" in text)
    assert "222" in page and "111" not in page


def test_a_provenance_only_a_metric_line_names_is_on_its_session_page(tmp_path: Path) -> None:
    """The builder never types a metric event again (the pages read the index's metrics rows), yet a
    provenance that only a metric line names is still in its session's Provenance box."""
    from logkit.events import Metric, Provenance

    store = Store(tmp_path / "sessions")
    sid = "2026-12-03-imported-metric"
    w = kb_factory.Writer(sid, kb_factory.datetime(2026, 12, 3, tzinfo=kb_factory.UTC))
    w.launch(kb_factory.MODELS[1], "SM100", 4, "flashinfer_trtllm", "trtllm_mla", kb_factory.VERSIONS[2], throughput=5400.0)
    w.events.append(Metric(session=sid, ts=w.tick(1), name="output_throughput", value=5500.0, server_attempt="A1",
                           provenance=Provenance(source="imported", detail="bench/old-run.jsonl")))
    w.events.append(Metric(session=sid, ts=w.tick(1), name="output_throughput", value=5600.0, server_attempt="A1",
                           provenance=Provenance(source="captured")))  # says nothing on a page
    kb_factory._write(store, sid, "one imported figure", w.t, w)
    generate(tmp_path / "sessions", tmp_path / "docs")
    page = (tmp_path / "docs" / "sessions" / sid / "index.md").read_text()
    box = page.split('!!! info "Provenance"')[1].split("\n\n")[0]
    assert box.strip().splitlines() == ["- imported: bench/old-run.jsonl"]


@pytest.mark.parametrize("command", ["build", "serve"])
def test_build_and_serve_refuse_a_sessions_directory_that_does_not_exist(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-sessions"
    result = run_logkit("--sessions", str(missing), command, "--docs", str(tmp_path / "docs"), cwd=tmp_path, timeout=60)
    assert result.returncode == 2 and f"no sessions directory {missing}" in result.stderr
    assert "--sessions DIR" in result.stderr and not (tmp_path / "docs").exists()


@pytest.mark.slow
def test_strict_build_fails_on_a_dangling_citation_and_names_it(tmp_path: Path) -> None:
    kb_factory.realistic(tmp_path / "sessions")
    sid = sorted(p.name for p in (tmp_path / "sessions").iterdir() if p.is_dir())[0]
    with open(tmp_path / "sessions" / sid / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"v": 1, "id": "f" * 32, "session": sid, "ts": "2026-11-20T00:00:00Z", "kind": "decision",
                             "decision_id": "DR-0778", "title": "ghost evidence", "evidence": ["A999"]}) + "\n")
    result = run_logkit("--sessions", str(tmp_path / "sessions"), "build", "--strict", "--docs", str(tmp_path / "d"),
                        "--out", str(tmp_path / "o"), cwd=tmp_path)
    # the reader names the line (file:line) and what it cites in vain
    assert result.returncode == 2 and "events.jsonl:" in result.stderr and "decision cites A999, which no" in result.stderr
    assert not (tmp_path / "o" / "index.html").exists()  # nothing published
    loose = run_logkit("--sessions", str(tmp_path / "sessions"), "build", "--docs", str(tmp_path / "d"),
                       "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert loose.returncode == 0, loose.stderr


@pytest.mark.slow
def test_a_plain_script_without_a_main_guard_builds_the_site(tmp_path: Path) -> None:
    """The builder starts no process: a script calling it at top level (no ``if __name__ ==
    "__main__"``) runs once and finishes, where a spawned helper process would import it again."""
    import os
    import subprocess
    import sys

    kb_factory.realistic(tmp_path / "sessions")
    script = tmp_path / "make_site.py"
    script.write_text(
        "import os\n"
        "from pathlib import Path\n"
        "from logkit.builder import build, generate\n"
        "here = Path(__file__).parent\n"
        "with open(here / 'runs', 'a') as fh:\n"
        "    fh.write(f'{os.getpid()}\\n')\n"
        "generate(here / 'sessions', here / 'md', warn=lambda _m: None)\n"
        f"build(here / 'sessions', here / 'docs', here / 'out', config=Path({str(REPO / 'mkdocs.yml')!r}))\n"
        "print('done')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("done") == 1
    assert len((tmp_path / "runs").read_text().split()) == 1, done.stderr[-3000:]  # no process imported it again
    assert (tmp_path / "md" / "index.md").is_file()
    assert (tmp_path / "out" / "index.html").is_file()
    assert list((tmp_path / "out" / "assets" / "charts").glob("*.svg"))
