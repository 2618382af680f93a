"""A session of more attempts than one page holds is split into parts that link each other.

Real files: one generated session of 450 launches (three parts of ``PART_ATTEMPTS``), built into
Markdown and, once, through MkDocs with its anchor validation.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kb_factory import FAILS, MODELS, MOE, VERSIONS, Writer, _write
from logkit.builder import build, generate
from logkit.builder.paths import PART_ATTEMPTS, attempt_href
from logkit.events import Note
from logkit.store import Store

SID = "2026-06-01-big"
N = 2 * PART_ATTEMPTS + 50


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root = tmp_path_factory.mktemp("big") / "sessions"
    w = Writer(SID, datetime(2026, 6, 1, 8, 0, tzinfo=UTC))
    hyp = w.hypothesis("flashinfer_trtllm MoE runs on SM120")
    for i in range(N):
        moe = MOE[i % len(MOE)]
        w.launch(MODELS[0], "SM120", 8, moe, "flashinfer", VERSIONS[1], fail=FAILS.get((moe, "SM120")))
        if i == PART_ATTEMPTS + 10:
            w.add(Note(session=SID, ts=w.tick(1), text="a note in the middle", refs=["A3", f"A{N}"]))
    w.hypothesis(f"late hypothesis after {hyp}")
    store = Store(root)
    _write(store, SID, "A long bring-up", datetime(2026, 6, 1, 8, 0, tzinfo=UTC), w)
    return store


def _anchors(text: str) -> set[str]:
    return set(re.findall(r"\{ #([A-Za-z0-9-]+) \}", text))


def test_attempt_urls_depend_on_the_id_alone() -> None:
    assert attempt_href("s", "A1") == "sessions/s/index.md#A1"
    assert attempt_href("s", f"A{PART_ATTEMPTS}") == f"sessions/s/index.md#A{PART_ATTEMPTS}"
    assert attempt_href("s", f"A{PART_ATTEMPTS + 1}") == f"sessions/s/part-2/index.md#A{PART_ATTEMPTS + 1}"


def test_a_big_session_is_split_into_parts_that_link_all_parts(store: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    generate(store.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None)
    folder = docs / "sessions" / SID
    pages = {1: folder / "index.md", 2: folder / "part-2" / "index.md", 3: folder / "part-3" / "index.md"}
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.md")) == \
        ["index.md", "part-2/index.md", "part-3/index.md"]
    texts = {n: p.read_text(encoding="utf-8") for n, p in pages.items()}
    for n, text in texts.items():
        # every part links every other part, and the table says which one this is
        others = [m for m in pages if m != n]
        for m in others:
            target = "../index.md" if m == 1 and n > 1 else ("index.md" if m == 1 else
                                                              (f"part-{m}/index.md" if n == 1 else f"../part-{m}/index.md"))
            assert f"[{m}]({target})" in text, (n, m)
        assert f"| **{n}** |" in text
    # each attempt on exactly the page its URL names
    for i in range(1, N + 1):
        part = (i - 1) // PART_ATTEMPTS + 1
        assert [n for n, text in texts.items() if f"A{i}" in _anchors(text)] == [part], i
    # hypotheses resolve on the session page (the story shows them without a second anchor there)
    assert {"H1", "H2"} <= _anchors(texts[1])
    assert "late hypothesis" in texts[3]
    assert "a note in the middle" in texts[2]
    # a link to a later attempt from part 2 points at part 3
    assert f"../part-3/index.md#A{N}" in texts[2]
    # the pages stay small: none holds more than its share of the story
    assert max(len(t) for t in texts.values()) < 0.6 * sum(len(t) for t in texts.values())


def test_a_rebuild_keeps_every_part(store: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    first = generate(store.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None)
    second = generate(store.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None)
    assert second.pages_kept == 3 and second.pages == first.pages
    assert (docs / "sessions" / SID / "part-3" / "index.md").exists()
    # a damaged part is noticed: the session is rendered again
    (docs / "sessions" / SID / "part-2" / "index.md").write_text("edited", encoding="utf-8")
    third = generate(store.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None)
    assert third.pages_kept == 0
    assert "edited" not in (docs / "sessions" / SID / "part-2" / "index.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_mkdocs_resolves_every_link_into_the_parts(store: Store, tmp_path: Path) -> None:
    warnings: list[str] = []
    result = build(store.root, tmp_path / "docs", tmp_path / "out", warn=warnings.append)
    problems = [w for w in result.warnings + warnings if "sessions/" in w]
    assert problems == []
    assert (tmp_path / "out" / "sessions" / SID / "part-3" / "index.html").exists()
    # an old link to #A450 on the session page (made while it was one page) is sent on to part 3
    html = (tmp_path / "out" / "sessions" / SID / "index.html").read_text(encoding="utf-8")
    assert 'window.location.replace("part-" + part + "/index.html" + window.location.hash)' in html
    assert f"/ {PART_ATTEMPTS}) + 1" in html
