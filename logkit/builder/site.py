"""Stage 6, mkdocs: run ``mkdocs build`` (Material) over the generated docs, in this process.

Contract: the configuration is ``mkdocs.yml`` from the working directory when there is one (it
INHERITs ``logkit/data/mkdocs-base.yml``), else that base file. ``docs_dir`` and ``site_dir`` are
overridden by the caller's paths, which must not contain each other (MkDocs refuses that, and so do
we, with a clearer message). Static files logkit ships (the offline search polyfill) are copied
into the docs first. MkDocs' own errors become :class:`~logkit.errors.BadInput`.

The site's address (``site_url``: canonical links, sitemap, ``logkit cite``) is unset unless the
team sets it: ``$LOGKIT_SITE_URL`` (for CI) wins over ``site_url`` in mkdocs.yml. Without one the
site uses relative links only and has no canonical link.
"""

from __future__ import annotations

import logging
import os
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import BadInput

__all__ = ["ENV_SITE_URL", "copy_assets", "default_config", "load_site_config", "run_mkdocs", "site_url"]

#: The environment variable that sets the site's address (CI), over mkdocs.yml's ``site_url``.
ENV_SITE_URL = "LOGKIT_SITE_URL"


def default_config() -> Path:
    """The configuration file to use: ``./mkdocs.yml`` if present, else the shipped base."""
    local = Path("mkdocs.yml")
    if local.is_file():
        return local.resolve()
    return Path(str(resources.files("logkit").joinpath("data/mkdocs-base.yml")))


def check_dirs(docs: Path, out: Path) -> None:
    """Refuse docs and output directories that are files or nested in each other."""
    for flag, path in (("--docs", docs), ("--out", out)):
        if path.exists() and not path.is_dir():
            raise BadInput(f"{flag} {path} is a file, not a directory",
                           fix=f"give {flag} a directory (it is created when missing)")
    d, o = docs.resolve(), out.resolve()
    if d == o or d in o.parents or o in d.parents:
        raise BadInput(
            f"the Markdown directory {docs} and the HTML directory {out} are nested in each other",
            fix="use siblings, e.g. site/docs and site/out (the defaults)",
        )


def copy_assets(docs: Path) -> None:
    """Copy the static files logkit ships (``logkit/assets``) into the docs directory."""
    root = resources.files("logkit").joinpath("assets")
    for sub in ("javascripts", "stylesheets"):
        folder = root.joinpath(sub)
        target = docs / "assets" / sub
        target.mkdir(parents=True, exist_ok=True)
        for item in folder.iterdir():
            dest = target / item.name
            data = item.read_bytes()
            if not dest.exists() or dest.read_bytes() != data:
                dest.write_bytes(data)


def load_site_config(config: Path | None, docs: Path, out: Path, **extra: Any) -> Any:
    """The MkDocs configuration object with our directories."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import ConfigurationError

    path = config or default_config()
    env_url = os.environ.get(ENV_SITE_URL, "").strip()
    if env_url:
        extra.setdefault("site_url", env_url)
    try:
        return load_config(config_file=str(path), docs_dir=str(docs.resolve()), site_dir=str(out.resolve()), **extra)
    except ConfigurationError as exc:
        raise BadInput(f"{path}: {exc}", fix="fix the MkDocs configuration named above") from exc


def site_url(config: Path | None = None) -> str | None:
    """``$LOGKIT_SITE_URL``, else ``site_url`` of the configuration, read without building."""
    import yaml

    env_url = os.environ.get(ENV_SITE_URL, "").strip()
    if env_url:
        return env_url
    path = config or default_config()
    seen = 0
    while path is not None and seen < 5:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise BadInput(f"cannot read {path}: {exc}", fix="fix or remove that mkdocs.yml") from exc
        if data.get("site_url"):
            return str(data["site_url"])
        parent = data.get("INHERIT")
        path = (path.parent / parent) if parent else None
        seen += 1
    return None


def _lean_plugin() -> Any:
    """A MkDocs plugin that lets go of what no later step reads, so the peak is not every page at once.

    MkDocs converts every page before it writes any and keeps each page's Markdown source beside
    its HTML to the end, then its written HTML too; Material's search plugin then writes its index
    as one string (and the offline plugin copies it as a second). This plugin, with the same site
    as the result, byte for byte:

    * drops a page's Markdown once converted (the search index and the templates read the HTML);
    * keeps each converted page's HTML compressed until the page is written (restored first thing
      in ``on_page_context``, before the search plugin indexes it), except a page with a tags
      listing, which the tags plugin fills in before any page is written;
    * drops a page's HTML once written (the search plugin indexed it before the template ran);
    * writes the search index (``search_index.json``, and the offline plugin's ``search_index.js``)
      entry by entry, as those two plugins would, instead of as whole strings in memory.

    Runs after every other plugin on the way in and before them on the way out, so each sees the
    page as MkDocs made it.
    """
    import zlib

    from mkdocs.plugins import BasePlugin, event_priority

    class Lean(BasePlugin):  # type: ignore[type-arg]
        def __init__(self) -> None:
            self.stash: dict[int, bytes] = {}
            self.paused: list[Any] = []

        @event_priority(-100)
        def on_page_content(self, html: str, page: Any, config: Any, **_kw: Any) -> str:
            page.markdown = ""  # not None: MkDocs reads None as "not read yet" (no title)
            if _tag_listing(config, page):
                return html
            self.stash[id(page)] = zlib.compress(html.encode("utf-8"), 1)
            return ""

        @event_priority(200)
        def on_page_context(self, context: Any, page: Any, **_kw: Any) -> Any:
            packed = self.stash.pop(id(page), None)
            if packed is not None:
                page.content = zlib.decompress(packed).decode("utf-8")
            return context

        @event_priority(-100)
        def on_post_page(self, output: str, page: Any, **_kw: Any) -> str:
            page.content = None
            return output

        @event_priority(200)
        def on_post_build(self, config: Any, **_kw: Any) -> None:
            search = _enabled(config, "material/search")
            if search is None or search.is_dirty or search.search_index_prev is not None:
                return  # a dirty rebuild (serve) merges the last index: the plugin's own way
            offline = _enabled(config, "material/offline")
            _write_search_index(config, search.search_index, offline is not None)
            search.search_index.entries = []
            for plugin in (search, offline):
                if plugin is not None:
                    plugin.config.enabled = False  # written: their own on_post_build skips it
                    self.paused.append(plugin)

        def on_shutdown(self) -> None:
            for plugin in self.paused:
                plugin.config.enabled = True
            self.paused.clear()

    return Lean()


def _tag_listing(config: Any, page: Any) -> bool:
    """Whether the tags plugin fills ``page`` in (a listing) before pages are written; True when it
    is on and cannot be asked (another Material version): then no page is set aside."""
    tags = _enabled(config, "material/tags")
    if tags is None:
        return False
    listings = getattr(getattr(tags, "listings", None), "data", None)
    if listings is None:
        return True
    return any(listing.page is page for listing in listings)


def _enabled(config: Any, name: str) -> Any:
    plugin = config.plugins.get(name)
    if plugin is None or not getattr(plugin, "config", None) or not plugin.config.get("enabled", True):
        return None
    return plugin


def _write_search_index(config: Any, index: Any, offline: bool) -> None:
    """``search/search_index.json`` (and with ``offline`` its ``.js`` copy) as Material writes them, one
    entry at a time: the same bytes as ``json.dumps`` of the whole index, without the whole string."""
    import json

    head = json.dumps({k: index.config[k] for k in ["lang", "separator", "pipeline", "fields"]},
                      separators=(",", ":"), default=str)
    folder = Path(config.site_dir) / "search"
    folder.mkdir(parents=True, exist_ok=True)
    names = ["search_index.json", *(["search_index.js"] if offline else [])]
    outs = [open(folder / name, "w", encoding="utf-8") for name in names]  # noqa: SIM115 - closed below
    try:
        if offline:
            outs[1].write("var __index = ")
        encode = json.JSONEncoder(separators=(",", ":"), default=str).encode
        chunk = ['{"config":', head, ',"docs":[']
        for i, entry in enumerate(index.entries):
            if i:
                chunk.append(",")
            chunk.append(encode(entry))
            if len(chunk) > 512:
                text = "".join(chunk)
                for out in outs:
                    out.write(text)
                chunk = []
        chunk.append("]}")
        text = "".join(chunk)
        for out in outs:
            out.write(text)
    finally:
        for out in outs:
            out.close()


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"mkdocs: {record.levelname.lower()}: {record.getMessage()}")


def run_mkdocs(config: Path | None, docs: Path, out: Path, *, quiet: bool = True, lean: bool = True) -> list[str]:
    """``mkdocs build --clean`` of ``docs`` into ``out``; returns MkDocs' warnings (also logged).

    ``lean`` adds :func:`_lean_plugin` (same site, less memory); without it MkDocs runs as configured.
    """
    from mkdocs.commands.build import build
    from mkdocs.exceptions import MkDocsException

    check_dirs(docs, out)
    cfg = load_site_config(config, docs, out)
    if lean:
        cfg.plugins["logkit-lean"] = _lean_plugin()
    log = logging.getLogger("mkdocs")
    level = log.level
    collect = _Collect()
    log.addHandler(collect)
    if quiet:
        log.setLevel(logging.WARNING)
    try:
        cfg.plugins.on_startup(command="build", dirty=False)
        try:
            build(cfg)
        finally:
            cfg.plugins.on_shutdown()
    except MkDocsException as exc:
        raise BadInput(f"mkdocs build failed: {exc}", fix="see the MkDocs messages above") from exc
    finally:
        log.setLevel(level)
        log.removeHandler(collect)
    if not (out / "index.html").exists():
        raise BadInput(f"mkdocs build wrote no {out / 'index.html'}", fix="see the MkDocs messages above")
    return collect.messages


def clean(path: Path) -> None:
    """Remove a generated directory."""
    shutil.rmtree(path, ignore_errors=True)
