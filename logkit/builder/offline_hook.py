"""MkDocs hook of ``logkit build`` and ``logkit serve``: the knowledge base searchable from disk.

What Material's ``offline`` plugin did, through public interfaces only (its ``extra.polyfills``
hook is undocumented, and the plugin fetches iframe-worker from a CDN without it): MkDocs' hook
events, a theme extension in ``logkit/data/overrides`` (``main.html``'s documented ``extrahead``
block loads the shipped polyfill), and the search index MkDocs' search plugin writes, inlined as
``search/search_index.js`` for a page opened from ``file://``. Zensical ignores MkDocs hooks and
has its own search.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["OVERRIDES", "on_config", "on_post_build"]

#: the theme extension's templates
OVERRIDES = Path(__file__).resolve().parent.parent / "data" / "overrides"


def on_config(config: Any) -> Any:
    config.use_directory_urls = False  # links that resolve from the file system
    if str(OVERRIDES) not in config.theme.dirs:
        config.theme.dirs.insert(0, str(OVERRIDES))
    return config


def on_post_build(config: Any) -> None:
    index = Path(config.site_dir) / "search" / "search_index.json"
    if index.is_file():
        index.with_suffix(".js").write_text("var __index = " + index.read_text(encoding="utf-8"), encoding="utf-8")
