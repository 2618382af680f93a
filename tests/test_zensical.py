"""Zensical (Material for MkDocs' successor) builds the knowledge base from the same configuration.

MkDocs with Material stays the default (``logkit build``); this keeps the way to Zensical open: the
realistic test knowledge base and a larger synthetic one (the tags page, which broke Zensical's search
index at 6,119 pages, is left out of the index: it grows with the knowledge base) are rendered by logkit, then
built by the real ``zensical build`` from a configuration that INHERITs logkit's own
``logkit/data/mkdocs-base.yml``, as the repository's ``mkdocs.yml`` does. Every page is built and
every search entry is inside the field limit (``[site] search_field_max`` of knowledge.toml).

Skipped when Zensical is not installed (an optional extra: ``pip install -e '.[zensical]'``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import kb_factory
from conftest import REPO
from logkit.builder import generate
from logkit.builder.load import tables

pytest.importorskip("zensical")
ZENSICAL = shutil.which("zensical") or str(Path(__import__("sys").executable).with_name("zensical"))


def _zensical_build(root: Path, docs: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = root / "out"
    config = root / "zensical.yml"
    # relative directories: Zensical 0.0.73 panics on an absolute docs_dir
    config.write_text(f"INHERIT: {REPO / 'logkit' / 'data' / 'mkdocs-base.yml'}\nsite_name: kb\n"
                      f"docs_dir: {docs.relative_to(root)}\nsite_dir: {out.relative_to(root)}\n")
    r = subprocess.run([ZENSICAL, "build", "--strict", "-f", str(config)], capture_output=True, text=True,
                       timeout=300, cwd=root)
    return r, out


@pytest.mark.parametrize("kind", ["realistic", "synthetic"])
def test_zensical_builds_the_knowledge_base_inside_its_limits(kind: str, tmp_path: Path) -> None:
    if kind == "realistic":
        kb_factory.realistic(tmp_path / "sessions")
    else:
        kb_factory.synthetic(tmp_path / "sessions", sessions=10, attempts=200)
    docs = tmp_path / "docs"
    generate(tmp_path / "sessions", docs, warn=lambda _m: None)
    r, out = _zensical_build(tmp_path, docs)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "exceeds" not in r.stdout + r.stderr
    pages = sorted(p.relative_to(docs).with_suffix(".html").as_posix() for p in docs.rglob("*.md"))
    missing = [p for p in pages if not (out / p).exists()]
    assert missing == [], missing[:5]
    limit = tables()["site"]["search_field_max"]
    index = json.loads((out / "search.json").read_text())
    too_big = [(item["location"], k, len(v.encode())) for item in index["items"]
               for k, v in item.items() if isinstance(v, str) and len(v.encode()) > limit]
    assert too_big == []
    assert not any(item["location"].startswith("tags.html") for item in index["items"])  # left out: it grows
    assert "search:\n  exclude: true" in (docs / "tags.md").read_text()
