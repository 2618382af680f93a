"""The knowledge-base pages an agent reads: decision records and working configurations as
Markdown by id, the working configurations and the matrix as data.

Contract: every answer comes from one snapshot of the refreshed index, through the site builder's
own stages (:func:`logkit.builder.load.load`, :func:`~logkit.builder.frames.make_frames`,
:class:`~logkit.builder.index.KBIndex`), page contexts (:mod:`logkit.builder.pages_configs`,
:func:`~logkit.builder.pages_kb.decision_pages`) and templates: an agent reads what the site shows.
A configuration page's id is its directory name (``configs/<id>/``), a decision's its permanent id
(any id ever printed resolves). An id that names nothing raises :class:`~logkit.errors.NotFound`
with the ids there are. Nothing is written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import NotFound

__all__ = ["config_id", "config_markdown", "decision_markdown", "matrix_cells", "working_configurations"]


@contextlib.contextmanager
def _kb(root: Path) -> Iterator[Any]:
    """The builder's view of the knowledge base (one snapshot of the refreshed index)."""
    from ..builder.frames import make_frames
    from ..builder.index import KBIndex
    from ..builder.load import load
    from ..store.index import current

    if not root.is_dir():
        raise NotFound(f"no sessions directory {root.name}",
                       fix="start logkit mcp with --sessions DIR (or set LOGKIT_SESSIONS) where the sessions are")
    with current(root) as snap:
        loaded = load(root, snapshot=snap)
        try:
            yield KBIndex(loaded, make_frames(loaded))
        finally:
            loaded.resident.release_all()


def _render(page: Any, ctx: Any) -> str:
    from ..builder.render import Renderer

    return Renderer(Path(".")).render(page, ctx)


def config_id(page_path: str) -> str:
    """``configs/<id>/index.md`` -> ``<id>``."""
    return page_path.split("/")[1]


def _matches(value: str | None, wanted: str | None) -> bool:
    return wanted is None or (value is not None and wanted.strip().lower() in value.lower())


def working_configurations(root: Path, model: str | None = None, gpu: str | None = None) -> list[dict[str, Any]]:
    """The working-configuration pages as data; ``model``, ``gpu`` (or architecture): a part of the name."""
    from ..builder.pages_configs import config_pages

    out = []
    with _kb(root) as index:
        for p in config_pages(index):
            if not _matches(p.model, model) or not (_matches(p.gpu, gpu) or _matches(p.arch, gpu)):
                continue
            out.append({
                "id": config_id(p.page.path), "model": p.model, "gpu": p.gpu, "arch": p.arch, "sglang": p.sglang,
                "configurations": [{
                    "heading": c.heading, "backends": dict(c.backends), "command": c.command,
                    "holds_for": c.holds_for, "last_verified": c.last_verified.isoformat(),
                    "attempts": [a.ref for a in c.attempts],
                    "stale_by": ({"attempt": c.stale_by.ref, "status": c.stale_by.status, "label": c.stale_by.label}
                                 if c.stale_by else None),
                    "metrics": [dict(zip(["workload", *c.metric_names], [w, *vals], strict=True))
                                for w, vals in c.metric_rows],
                } for c in p.configs],
            })
    return out


def config_markdown(root: Path, wanted: str) -> str:
    """The Markdown of the working-configuration page ``wanted`` (its id)."""
    from ..builder.pages_configs import config_pages

    with _kb(root) as index:
        pages = config_pages(index)
        for p in pages:
            if config_id(p.page.path) == wanted:
                return _render(p.page, p)
    known = ", ".join(config_id(p.page.path) for p in pages) or "none yet"
    raise NotFound(f"no working-configuration page {wanted!r}", fix=f"known: {known} (see working_configurations)")


def decision_markdown(root: Path, wanted: str) -> str:
    """The Markdown of the decision record ``wanted`` names (as its site page shows it)."""
    from ..builder.paths import decision_href
    from ..builder.pages_kb import decision_pages
    from ..reasoning.decisions import resolve
    from ..store import Store

    found = resolve(Store(root), wanted)  # NotFound names the ids there are
    targets = {decision_href(found.cited), decision_href(found.decision.decision_id)}
    with _kb(root) as index:
        for ctx, _deps, path in decision_pages(index, keep=lambda path: path not in targets):
            if ctx is not None and path in targets:
                return _render(ctx.page, ctx)
    raise NotFound(f"no decision record page for {wanted}", fix="see 'logkit decision list'")


def matrix_cells(root: Path, backend: str | None = None, arch: str | None = None) -> list[dict[str, Any]]:
    """The site's matrix cells as data; ``backend``: an axis or value (a part of it), ``arch``: ``SM120``, ``12.0``."""
    from ..builder.pages_configs import site_cells
    from ..gpu import arch_name
    from ..reasoning.prelaunch import cell_json

    want_arch = (arch_name(arch) or arch.strip().upper()) if arch else None
    out = []
    with _kb(root) as index:
        for (model, axis, value, cell_arch), (cell, _hits) in sorted(site_cells(index).items(), key=lambda kv: tuple(map(str, kv[0]))):
            if backend and not (_matches(axis, backend) or _matches(value, backend)):
                continue
            if want_arch and cell_arch != want_arch:
                continue
            out.append({**cell_json(cell), "arch": cell_arch})
    return out
