"""``logkit build --strict`` publishes nothing unless everything is right (real processes, real
mkdocs): stale schema files and MkDocs warnings fail it with their names; without --strict the
same knowledge base builds. Duplicate and dangling ids: tests/test_reason_decisions.py, test_build.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kb_factory
from conftest import REPO, run_logkit

pytestmark = pytest.mark.slow  # real MkDocs builds


def _build(tmp_path: Path, *extra: str, cwd: Path) -> object:
    return run_logkit("--sessions", str(tmp_path / "sessions"), "build", "--docs", str(tmp_path / "docs"),
                      "--out", str(tmp_path / "out"), *extra, cwd=cwd, timeout=600)


def test_strict_fails_on_stale_schemas_in_the_working_directory(tmp_path: Path) -> None:
    kb_factory.realistic(tmp_path / "sessions")
    work = tmp_path / "work"
    shutil.copytree(REPO / "schemas", work / "schemas")
    schema = work / "schemas" / "decision.schema.json"
    data = json.loads(schema.read_text())
    data["title"] = "an older decision"
    schema.write_text(json.dumps(data))
    # (the realistic knowledge base cites one missing session on purpose: strip that problem first)
    events = tmp_path / "sessions"
    for path in events.glob("*/events.jsonl"):
        path.write_text(path.read_text().replace('"2026-01-01-nowhere/A9"', '"A1"'))
    failed = _build(tmp_path, "--strict", cwd=work)
    assert failed.returncode == 2 and "stale schema files decision.schema.json" in failed.stderr
    assert "logkit schema --write schemas" in failed.stderr and not (tmp_path / "out" / "index.html").exists()
    shutil.rmtree(work / "schemas")
    shutil.copytree(REPO / "schemas", work / "schemas")
    built = _build(tmp_path, "--strict", cwd=work)
    assert built.returncode == 0, built.stderr


def test_strict_fails_on_a_mkdocs_warning(tmp_path: Path) -> None:
    kb_factory.realistic(tmp_path / "sessions")
    for path in (tmp_path / "sessions").glob("*/events.jsonl"):
        path.write_text(path.read_text().replace('"2026-01-01-nowhere/A9"', '"A1"'))
    work = tmp_path / "work"
    work.mkdir()
    base = REPO / "logkit" / "data" / "mkdocs-base.yml"
    (work / "mkdocs.yml").write_text(
        f"INHERIT: {base}\nnav:\n  - Home: index.md\n  - Gone: no-such-page.md\n")
    failed = _build(tmp_path, "--strict", cwd=work)
    assert failed.returncode == 2 and "MkDocs warned" in failed.stderr and "no-such-page.md" in failed.stderr
    loose = _build(tmp_path, cwd=work)
    assert loose.returncode == 0 and "warning" in loose.stdout + loose.stderr
