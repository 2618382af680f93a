"""A rebuild re-renders only the session pages whose inputs changed, and always equals a fresh build.

Real files: the realistic knowledge base written through the store, built into one docs directory
again and again (as ``logkit build`` does) and compared page by page with a from-scratch build of
the same sessions into an empty directory.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

from kb_factory import realistic
from logkit.builder import generate
from logkit.builder.incremental import MANIFEST
from logkit.events import Attempt, Note, Outcome
from logkit.store import Store


def _pages(docs: Path) -> dict[str, str]:
    return {p.relative_to(docs).as_posix(): p.read_text(encoding="utf-8") for p in sorted(docs.rglob("*.md"))}


@pytest.fixture
def kb(tmp_path: Path) -> Store:
    return realistic(tmp_path / "sessions")


def _build(store: Store, docs: Path, tmp_path: Path, **kw) -> tuple[int, int]:
    result = generate(store.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None, **kw)
    return result.pages, result.pages_kept


def _same_as_fresh(store: Store, docs: Path, tmp_path: Path, name: str) -> None:
    fresh = tmp_path / f"fresh-{name}"
    _build(store, fresh, tmp_path)
    assert _pages(docs) == _pages(fresh)


def _add_attempt(store: Store, sid: str) -> str:
    handle = store.handle(sid)
    template = next(e for e in handle.read().events if isinstance(e, Attempt) and e.role == "launch")
    with handle.transaction() as txn:
        short = txn.next_short_id("A")
        txn.append(template.model_copy(update={"id": os.urandom(16).hex(), "short_id": short,
                                               "label": "added for the rebuild"}))
        txn.append(Outcome(session=sid, attempt=short, status="ready", duration_s=4.5))
    return short


@pytest.mark.slow
def test_an_unchanged_store_keeps_every_session_page(kb: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    pages, kept = _build(kb, docs, tmp_path)
    sessions = kb.session_ids()
    assert kept == 0 and pages > len(sessions)
    before = {p: p.stat().st_mtime_ns for p in (docs / "sessions").rglob("*.md")}
    pages2, kept2 = _build(kb, docs, tmp_path)
    assert (pages2, kept2) == (pages, len(sessions))
    assert {p: p.stat().st_mtime_ns for p in (docs / "sessions").rglob("*.md")} == before
    _same_as_fresh(kb, docs, tmp_path, "unchanged")


def test_one_new_attempt_rerenders_only_its_session(kb: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _build(kb, docs, tmp_path)
    sid = kb.session_ids()[0]
    short = _add_attempt(kb, sid)
    _pages_n, kept = _build(kb, docs, tmp_path)
    assert kept == len(kb.session_ids()) - 1
    page = (docs / "sessions" / sid / "index.md").read_text(encoding="utf-8")
    assert f"{short} · launch" in page
    _same_as_fresh(kb, docs, tmp_path, "one-attempt")


def test_a_reference_into_a_changed_session_rerenders_the_referring_page(kb: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    target, other = kb.session_ids()[0], kb.session_ids()[1]
    handle = kb.handle(target)
    upcoming = f"A{1 + sum(1 for e in handle.read().events if isinstance(e, Attempt))}"
    kb.handle(other).append(Note(session=other, text="see the retry over there", refs=[f"{target}/{upcoming}"]))
    _build(kb, docs, tmp_path)
    assert f"{target}/{upcoming}" not in (docs / "sessions" / other / "index.md").read_text(encoding="utf-8")
    assert _add_attempt(kb, target) == upcoming
    _pages_n, kept = _build(kb, docs, tmp_path)
    assert kept == len(kb.session_ids()) - 2  # the changed session and the one pointing into it
    assert f"{target}/{upcoming}" in (docs / "sessions" / other / "index.md").read_text(encoding="utf-8")
    _same_as_fresh(kb, docs, tmp_path, "cross-reference")


@pytest.mark.slow
def test_a_hand_edited_page_or_a_damaged_manifest_is_rendered_again(kb: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _build(kb, docs, tmp_path)
    sid = kb.session_ids()[0]
    page = docs / "sessions" / sid / "index.md"
    page.write_text("edited by hand\n", encoding="utf-8")
    _pages_n, kept = _build(kb, docs, tmp_path)
    assert kept == len(kb.session_ids()) - 1 and "edited by hand" not in page.read_text(encoding="utf-8")
    for damage in ("{not json", json.dumps({"format": 1, "key": "x", "pages": {}}), "[" * 100_000):
        (docs / MANIFEST).write_text(damage, encoding="utf-8")
        _pages_n, kept = _build(kb, docs, tmp_path)
        assert kept == 0
    manifest = json.loads((docs / MANIFEST).read_text())
    manifest["pages"][sid]["path"] = "../../outside.md"  # a path out of the docs is never believed
    (docs / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    _pages_n, kept = _build(kb, docs, tmp_path)
    assert kept == len(kb.session_ids()) - 1
    _same_as_fresh(kb, docs, tmp_path, "damaged")


def test_a_template_override_rerenders_everything(kb: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _build(kb, docs, tmp_path)
    overrides = tmp_path / "templates"
    overrides.mkdir()
    shipped = Path(__file__).resolve().parent.parent / "logkit" / "templates" / "session.md.j2"
    (overrides / "session.md.j2").write_text(shipped.read_text(encoding="utf-8") + "\nOVERRIDDEN\n", encoding="utf-8")
    _pages_n, kept = _build(kb, docs, tmp_path, templates=overrides)
    assert kept == 0
    assert all("OVERRIDDEN" in p.read_text(encoding="utf-8") for p in (docs / "sessions").glob("*/index.md"))


@pytest.mark.slow
def test_chart_specs_are_kept_by_their_data_and_a_damaged_spec_file_is_made_again(kb: Store, tmp_path: Path) -> None:
    from logkit.builder.charts import SpecCache

    docs = tmp_path / "docs"
    _build(kb, docs, tmp_path)
    specs = json.loads((docs / SpecCache.FILE).read_text())["specs"]
    assert specs and all("mark" in s or "layer" in s for s in specs.values())
    charts = sorted(p.name for p in (docs / "assets" / "charts").glob("*.svg"))
    for damage in ("{", json.dumps({"format": 1, "key": "another", "specs": {}}),
                   json.dumps({"format": 1, "key": json.loads((docs / SpecCache.FILE).read_text())["key"],
                               "specs": {k: "not a spec" for k in specs}})):
        (docs / SpecCache.FILE).write_text(damage, encoding="utf-8")
        _build(kb, docs, tmp_path)
        assert sorted(p.name for p in (docs / "assets" / "charts").glob("*.svg")) == charts
        _same_as_fresh(kb, docs, tmp_path, f"specs-{len(damage)}")
    # a new metric changes that chart's data: its spec (and file name) change, the page follows
    bench = next(e for sid in kb.session_ids() for e in kb.handle(sid).read().events
                 if getattr(e, "kind", None) == "metric" and e.name == "output_throughput" and e.server_attempt)
    with kb.handle(bench.session).transaction() as txn:
        txn.append(bench.model_copy(update={"id": os.urandom(16).hex(), "value": bench.value * 3,
                                            "ts": bench.ts + timedelta(days=30)}))  # the latest figure
    _build(kb, docs, tmp_path)
    assert sorted(p.name for p in (docs / "assets" / "charts").glob("*.svg")) != charts
    _same_as_fresh(kb, docs, tmp_path, "specs-new-metric")


@pytest.mark.slow
def test_a_build_never_imports_altair(kb: Store, tmp_path: Path) -> None:
    """Altair costs a second of import and ~23 MB: the builder writes its Vega-Lite specs as plain
    dicts (``builder/vlspec.py``), so neither a first build, which draws every chart, nor a rebuild
    imports it."""
    import subprocess
    import sys

    script = ("import sys; from pathlib import Path; from logkit.builder import generate; "
              "r = generate(Path(sys.argv[1]), Path(sys.argv[2]), chart_cache=Path(sys.argv[3]), warn=lambda _m: None); "
              "print(r.charts_rendered, 'altair' in sys.modules)")
    args = [sys.executable, "-c", script, str(kb.root), str(tmp_path / "docs"), str(tmp_path / "charts")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                                      os.environ.get("PYTHONPATH")]))}
    first = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    again = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    drawn, imported = first.stdout.split()
    assert int(drawn) > 0 and imported == "False", first.stderr  # the first build draws the charts
    assert again.stdout.split() == ["0", "False"], again.stderr


def _decisions_kept(store: Store, docs: Path, tmp_path: Path, **kw) -> int:
    return generate(store.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None, **kw).decisions_kept


@pytest.mark.slow
def test_decision_pages_are_kept_until_a_session_they_read_or_the_decision_table_changes(
        kb: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DR-0001 (glm5) cites its own attempts; DR-0002 (qwen35) its own and glm5's A4. A rebuild keeps
    a record page while every session it read and what it shows of other decisions are unchanged."""
    from logkit.reasoning import decisions

    docs = tmp_path / "docs"
    glm5, qwen, dsv = kb.session_ids()
    assert _decisions_kept(kb, docs, tmp_path) == 0
    pages = sorted((docs / "decisions").glob("DR-*/index.md"))
    assert len(pages) == 2
    before = {p: p.stat().st_mtime_ns for p in pages}
    assert _decisions_kept(kb, docs, tmp_path) == 2
    assert {p: p.stat().st_mtime_ns for p in pages} == before
    _add_attempt(kb, dsv)  # read by neither record
    assert _decisions_kept(kb, docs, tmp_path) == 2
    _add_attempt(kb, qwen)  # DR-0002's own session
    assert _decisions_kept(kb, docs, tmp_path) == 1
    _same_as_fresh(kb, docs, tmp_path, "decision-own")
    _add_attempt(kb, glm5)  # DR-0001's session, and the one DR-0002's evidence names
    assert _decisions_kept(kb, docs, tmp_path) == 0
    _same_as_fresh(kb, docs, tmp_path, "decision-cited")
    assert _decisions_kept(kb, docs, tmp_path) == 2
    # a new record in a third session superseding DR-0002: DR-0002's page now says so
    new = decisions.record(kb.handle(dsv), "use the reconstructed settings", supersedes="DR-0002")
    assert _decisions_kept(kb, docs, tmp_path) == 0
    assert new.decision_id in (docs / "decisions" / "DR-0002" / "index.md").read_text(encoding="utf-8")
    _same_as_fresh(kb, docs, tmp_path, "decision-superseded")
    # a hand-edited record page is rendered again; --strict keeps none (it checks every reference)
    (docs / "decisions" / "DR-0001" / "index.md").write_text("edited by hand\n", encoding="utf-8")
    assert _decisions_kept(kb, docs, tmp_path) == 2
    assert "edited by hand" not in (docs / "decisions" / "DR-0001" / "index.md").read_text(encoding="utf-8")
    assert _decisions_kept(kb, docs, tmp_path) == 3
    _same_as_fresh(kb, docs, tmp_path, "decision-edited")
    # damaged decision entries are never believed (and never crash the build)
    manifest = json.loads((docs / MANIFEST).read_text())
    paths = sorted(manifest["decisions"])
    manifest["decisions"] = {paths[0]: 5, paths[1]: {"deps": [], "sha256": "x", "table": None},
                             "../../outside.md": manifest["decisions"][paths[2]]}
    (docs / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert _decisions_kept(kb, docs, tmp_path) == 0
    assert _decisions_kept(kb, docs, tmp_path) == 3
    from logkit.builder import incremental
    from logkit.errors import BadInput

    asked: list[str] = []
    real = incremental.Manifest.decision_unchanged
    monkeypatch.setattr(incremental.Manifest, "decision_unchanged",
                        lambda self, path, table: asked.append(path) or real(self, path, table))
    with pytest.raises(BadInput, match="2026-01-01-nowhere/A9"):  # DR-0001 cites a session not here
        generate(kb.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None, strict=True)
    assert asked == []
