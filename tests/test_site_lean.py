"""MkDocs with logkit's memory-saving plugin writes the same site, byte for byte, as MkDocs as configured.

Real files and the real ``mkdocs build`` (Material, its search, tags and offline plugins): the
realistic knowledge base's Markdown built twice, with and without the plugin, and every file of the
two sites compared; the search index as JSON too (the plugin writes it entry by entry).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from kb_factory import realistic
from logkit.builder import generate
from logkit.builder.site import run_mkdocs

REPO = Path(__file__).resolve().parent.parent


def _files(site: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)  # the gzip header holds the time it was written
        out[path.relative_to(site).as_posix()] = data
    return out


def test_the_lean_build_writes_the_same_site_as_mkdocs_alone(tmp_path: Path) -> None:
    store = realistic(tmp_path / "sessions")
    docs = tmp_path / "docs"
    generate(store.root, docs, chart_cache=tmp_path / "charts", warn=lambda _m: None)
    run_mkdocs(REPO / "mkdocs.yml", docs, tmp_path / "lean", lean=True)
    run_mkdocs(REPO / "mkdocs.yml", docs, tmp_path / "plain", lean=False)
    lean, plain = _files(tmp_path / "lean"), _files(tmp_path / "plain")
    assert sorted(lean) == sorted(plain)
    differ = [name for name in plain if lean[name] != plain[name]]
    assert differ == []
    index = json.loads(lean["search/search_index.json"])
    assert len(index["docs"]) > 50 and any("/A1" in d["location"] or "#A1" in d["location"] for d in index["docs"])
    assert lean["search/search_index.js"] == b"var __index = " + lean["search/search_index.json"]
    # the tags listing page is filled in (its HTML was not set aside before the tags plugin ran)
    assert b"tag:" in lean["tags.html"] and lean["tags.html"] == plain["tags.html"]
