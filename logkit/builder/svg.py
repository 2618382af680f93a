"""Chart specs to SVG files with vl-convert; imports nothing else heavy.

Contract: :func:`render_all` writes each ``(src, spec)`` job to ``docs/src``, atomically (a
temporary file outside ``docs``, then a rename, so MkDocs never lists a half-written file), using
and filling ``cache`` when given. A chart that cannot render becomes a small "chart unavailable"
SVG and a warning; it never stops the build. This module is what the chart process imports, so it
stays free of pandas and Altair.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["render_all"]


def _render_one(spec: dict[str, Any]) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(spec)


def render_all(jobs: list[tuple[str, dict[str, Any]]], docs: Path, cache: Path | None,
               warn: Callable[[str], None]) -> None:
    """Render every job into ``docs`` (see the module contract)."""
    tmp = docs.parent / f".{docs.name}-charts-tmp"  # outside docs: MkDocs must never list a half-written file
    tmp.mkdir(parents=True, exist_ok=True)
    for src, spec in jobs:
        target = docs / src
        target.parent.mkdir(parents=True, exist_ok=True)
        cached = cache / Path(src).name if cache else None
        if cached is not None and cached.exists():
            shutil.copyfile(cached, tmp / target.name)
        else:
            try:
                svg = _render_one(spec)
            except Exception as exc:  # a chart that cannot render must not stop the build
                warn(f"logkit: warning: chart {src} could not be rendered: {exc}")
                svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="40">'
                       '<text x="5" y="25">chart unavailable</text></svg>')
            (tmp / target.name).write_text(svg, encoding="utf-8")
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tmp / target.name, cached)
        (tmp / target.name).replace(target)
    shutil.rmtree(tmp, ignore_errors=True)
