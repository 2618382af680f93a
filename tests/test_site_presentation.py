"""The site as an engineer reads it: the presentation defects of issue 23, each checked on a real build
(the real ``mkdocs build`` of a small store written with the store API).

Concurrency reads ``64`` (not ``64.0``); metric headers read ``output tok/s`` (not ``output_throughput``);
configuration headings name each value's axis; a launch command is one flag per line (wrapped, still
one command for the copy button); a decision's flags never break inside (``--fp4-`` / ``gemm-backend``);
a decision page lists its tags once (Material's, from the front matter); counts agree in number
("1 decision"); the raw log is linked, and published under its recorded name also once compressed.
The look of each page kind is tests/test_screens.py's (golden screenshots in headless Chromium).
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from logkit.builder import build
from logkit.events import Attempt, Decision, DecisionOption, LaunchConfig, LogFile, Metric, Outcome
from logkit.store import Store
from logkit.logfiles import compress, log_file, read_log

pytestmark = pytest.mark.slow  # a real mkdocs build

FLAGS = "--fp4-gemm-backend flashinfer_cutlass --moe-runner-backend flashinfer_cutlass"
ARGV = ["python", "-m", "sglang.launch_server", "--model-path", "org/M", "--tp", "2",
        "--moe-runner-backend", "flashinfer_cutlass", "--attention-backend", "flashinfer"]


def _store(root: Path) -> str:
    store = Store(root)
    h = store.create("presentation", make_current=False)
    sid = h.id
    for n, text in ((1, "first launch\nready\n"), (2, "second launch\nNaN detected\n")):
        (h.dir / "logs").mkdir(exist_ok=True)
        (h.dir / "logs" / f"A{n}.log").write_text(text)
        fp = {"moe_runner_backend": "flashinfer_cutlass", "attention_backend": "flashinfer", "model_path": "org/M"}
        h.append(Attempt(session=sid, short_id=f"A{n}", argv=ARGV, role="launch", log=LogFile(path=f"logs/A{n}.log"),
                         launch=LaunchConfig(fingerprint=fp)))
        h.append(Outcome(session=sid, attempt=f"A{n}", status="ready", label="server ready",
                         log=LogFile(path=f"logs/A{n}.log")))
    # another model's working launch, never benchmarked: its configuration page links no charts page
    h.append(Attempt(session=sid, short_id="A3", argv=["python", "-m", "sglang.launch_server", "--model-path", "org/N"],
                     role="launch", launch=LaunchConfig(fingerprint={"model_path": "org/N"})))
    h.append(Outcome(session=sid, attempt="A3", status="ready", label="server ready"))
    for conc, value in ((1, 11.0), (64, 225.0)):
        h.append(Metric(session=sid, name="output_throughput", value=value, unit="tok/s", attempt="A1",
                        server_attempt="A1", labels={"max_concurrency": conc}))
    h.append(Decision(session=sid, decision_id="DR-0001", title="pin the backends", decision=f"Use {FLAGS}.",
                      options=[DecisionOption(name="cutlass", chosen=True, attempts=["A1"])],
                      evidence=["A1", "A2"], tags=["sm120", "nvfp4"]))
    return sid


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("presentation")
    sid = _store(root / "sessions")
    # A2's attempt has ended: its log is stored compressed, and every reader still gets its text
    packed = compress(root / "sessions" / sid, "logs/A2.log")
    assert packed is not None and packed.name == "A2.log.gz" and not (root / "sessions" / sid / "logs" / "A2.log").exists()
    assert gzip.decompress(packed.read_bytes()) == b"second launch\nNaN detected\n"
    assert read_log(log_file(root / "sessions" / sid, "logs/A2.log")) == b"second launch\nNaN detected\n"
    result = build(root / "sessions", root / "docs", root / "out", strict=True)
    assert result.warnings == []
    return root, sid


def test_decision_page_reads_as_prose_and_numbers(site: tuple[Path, str]) -> None:
    root, _sid = site
    page = (root / "docs" / "decisions" / "DR-0001" / "index.md").read_text()
    assert "| output tok/s | 225.0 tok/s | 64 |" in page and "| 1 |" in page
    assert "64.0" not in page and "output_throughput" not in page
    assert "**tags:**" not in page  # Material shows the front matter's tags once, above the title
    assert 'tags:\n  - "status:accepted"\n  - "sm120"\n  - "nvfp4"' in page
    # each flag of the decision's prose is kept whole on a line
    assert '<span class="lk-nw">&#45;-fp4-gemm-backend</span>' in page or '<span class="lk-nw">--fp4-gemm-backend</span>' in page
    html = (root / "out" / "decisions" / "DR-0001" / "index.html").read_text()
    assert re.search(r'<span class="lk-nw">(--|&#45;-|&ndash;)fp4-gemm-backend</span>', html), "flag not kept whole"


def test_raw_logs_are_linked_and_published_compressed_or_not(site: tuple[Path, str]) -> None:
    root, sid = site
    html = (root / "out" / "decisions" / "DR-0001" / "index.html").read_text()
    hrefs = re.findall(r'href="([^"]*logs/[^"]*\.log)"', html)
    assert len(hrefs) == 2, hrefs
    base = root / "out" / "decisions" / "DR-0001"
    texts = sorted((base / h).resolve().read_text() for h in hrefs)
    assert texts == ["first launch\nready\n", "second launch\nNaN detected\n"]
    session = (root / "out" / "sessions" / sid / "index.html").read_text()
    assert session.count("raw log") == 2 and f"logs/{sid}/logs/A2.log" in session


def test_session_and_configuration_pages(site: tuple[Path, str]) -> None:
    root, sid = site
    session = (root / "docs" / "sessions" / sid / "index.md").read_text()
    assert "1 decision ·" in session or session.rstrip().endswith("1 decision") or "· 1 decision" in session
    assert "1 decisions" not in session
    assert "python -m sglang.launch_server \\\n  --model-path org/M \\\n  --tp 2 \\\n" in session
    (config,) = (root / "docs" / "configs").glob("org-m-*/index.md")
    text = config.read_text()
    assert "[charts](" in text
    (other,) = (root / "docs" / "configs").glob("org-n-*/index.md")
    assert "charts" not in other.read_text()  # no figures, no metrics page: no link to one
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings and all("flashinfer attention + flashinfer_cutlass MoE" in h for h in headings), headings
    assert "| workload | output tok/s |" in text and "1 configuration ·" in text


def test_nothing_rests_on_materials_internals(site: tuple[Path, str]) -> None:
    """The offline search is logkit's hook over public interfaces: no ``extra.polyfills``, no offline plugin."""
    root, _sid = site
    base = (Path(__file__).resolve().parent.parent / "logkit" / "data" / "mkdocs-base.yml").read_text()
    assert "polyfills" not in base and "- offline" not in base
    html = (root / "out" / "index.html").read_text()
    assert "unpkg" not in html
    assert html.index("iframe-worker-shim.js") < html.index("javascripts/bundle.")  # before the search worker starts
    assert (root / "out" / "search" / "search_index.js").read_text().startswith("var __index = {")


def test_a_page_with_a_section_past_the_search_field_limit_stays_out_of_the_index() -> None:
    """Zensical refuses a search entry over its field limit ([site] search_field_max): such a page is
    left out of the search index (never cut); tags and link targets do not count as text."""
    from logkit.builder.load import tables
    from logkit.builder.render import fits_search

    limit = tables()["site"]["search_field_max"]
    small = "# T\n\n" + "\n".join(f"## S{i}\n\n" + "word " * 100 for i in range(40))  # big page, small sections
    assert len(small.encode()) > limit and fits_search(small)
    assert not fits_search("# T\n\n## one section\n\n" + "word " * (limit // 4))
    linked = "# T\n\n" + " ".join(f'<span class="lk-nw">[x](../../very/long/path/{i}/index.md)</span>' for i in range(200))
    assert len(linked.encode()) > limit and fits_search(linked)
