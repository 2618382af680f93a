"""Stage 5, render: page contexts -> Markdown files under the docs directory.

Contract: one Jinja2 environment over ``logkit/templates`` (``*.md.j2``, partials ``_*.md.j2``)
whose ``finalize`` escapes every printed value (:mod:`logkit.builder.escape`); templates get the
page's context as ``ctx`` plus ``link(label, href)`` / ``url(href)``, which turn a docs-root path
into one relative to the page (so the site works from ``file://`` and under any base URL). Each
page gets YAML front matter with its title, tags and search exclusion. Files whose content did not
change are not rewritten (MkDocs live reload only sees real changes).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import posixpath
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from .contexts import Page
from .load import metric_label, tables
from .escape import Markup, code, esc, fence, finalize, html_text, keep_words, link, redacted_argv, text_block

__all__ = ["Renderer", "figure_text"]


def _date(value: datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> Markup:
    return Markup(value.strftime(fmt)) if value else Markup("")


def figure_text(value: float | None) -> str:
    """A figure as every page prints it: ``71.9``, from a thousand on ``1,234``; none (or NaN) ``""``."""
    if value is None or value != value:
        return ""
    return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"


def _conc(value: float | None) -> Markup:
    """A concurrency (a count of requests): ``64``, never ``64.0``."""
    if value is None or value != value:
        return Markup("")
    return Markup(f"{value:g}")


def count(n: int, nouns: str, bold: bool = False) -> Markup:
    """``n`` and ``nouns`` (a plural) in the number's form: ``1 hypothesis``, ``2 decisions``."""
    if n == 1:
        nouns = (nouns[:-2] + "is" if nouns.endswith("ses") and nouns.endswith("theses") else
                 nouns[:-2] if nouns.endswith(("ches", "shes", "sses")) else nouns.removesuffix("s"))
    number = f"**{n}**" if bold else str(n)
    return Markup(f"{number} ") + esc(nouns)


#: what makes ``shlex.split`` differ from ``str.split`` on ASCII text: its quotes and escape, and the
#: separators ``str.split`` splits at that shlex's whitespace (space, tab, CR, LF) leaves in a word
_SHELL_SYNTAX = frozenset("'\"\\\x0b\x0c\x1c\x1d\x1e\x1f")


def _words(text: str) -> list[str]:
    """``shlex.split(text)``, as ``text.split()`` (ten times faster) where that gives the same words."""
    if text.isascii() and _SHELL_SYNTAX.isdisjoint(text):
        return text.split()
    return shlex.split(text)


@functools.lru_cache(maxsize=4096)  # a command shows on its attempt, session, configuration and matrix pages
def _command(text: str) -> Markup:
    """A launch command as a bash block, one flag and its value per line joined by ``\\`` (still one command)."""
    try:
        words = _words(text)
    except ValueError:  # unbalanced quotes: show it as recorded
        return fence(text, "bash")
    if "\n" in text or any(set(w) <= set("|&;<>()") for w in words):  # a pipeline or script: as recorded
        return fence(text, "bash")
    lines: list[list[str]] = [[]]
    for word in redacted_argv(words):  # each word redacted before it is quoted (see escape.redacted)
        if lines[-1] and (word.startswith("--") or (len(lines) > 1 and word.startswith("-") and len(word) == 2)):
            lines.append([])
        lines[-1].append(shlex.quote(word))
    return fence(" \\\n  ".join(" ".join(line) for line in lines), "bash", clean=True)


def _numbered(lines: Any) -> str:
    """Log lines as ``  123  text``, each numbered by its place in its log (0: quoted from an account)."""
    return "\n".join(
        f"{line.number:>6}  {line.text}" if line.number else f"{'account':>7}  {line.text}" for line in lines
    )


def _excerpt(lines: Any) -> Markup:
    """A log excerpt as a fenced block, each line with its number in the log (top level only)."""
    if not lines:
        return Markup("")
    return fence(_numbered(lines), "text")


def _cell(value: Any) -> Markup:
    """Escaped text for a table cell, never empty (the row keeps its shape), identifiers whole (:func:`keep_words`)."""
    text = str(esc(value))
    return Markup(keep_words(text)) if text else Markup("&nbsp;")


_HEADING = re.compile(r"^##+ ", re.M)
_SECTION = re.compile(r"^#{1,6} ", re.M)
_MARKUP = re.compile(r"<[^>]*>|\]\([^)]*\)|&#?\w+;")


def fits_search(body: str) -> bool:
    """Whether every section of a page (one search entry each) fits ``[site] search_field_max``."""
    # Zensical refuses a bigger field; counted on the Markdown less its tags and link targets (at
    # least the text the index gets). A page that does not fit is left out of search, never cut.
    limit = int(tables()["site"]["search_field_max"])
    if len(body.encode()) <= limit:
        return True
    return all(len(_MARKUP.sub(" ", part).encode()) <= limit for part in _SECTION.split(body))


@functools.lru_cache(maxsize=65536)
def _relative(href: str, here: str) -> str:
    """``href`` (from the docs root) as seen from the directory ``here``."""
    path, _, anchor = href.partition("#")
    if not path:
        return f"#{anchor}"
    src = here.split("/") if here else []
    dst = path.split("/")
    common = 0
    while common < len(src) and common < len(dst) - 1 and src[common] == dst[common]:
        common += 1
    rel = "/".join([".."] * (len(src) - common) + dst[common:])
    return rel + (f"#{anchor}" if anchor else "")


class Renderer:
    """Renders pages into ``docs``."""

    def __init__(self, docs: Path, templates: Path | None = None) -> None:
        self.docs = docs
        loaders: list[jinja2.BaseLoader] = []
        if templates is not None:
            loaders.append(jinja2.FileSystemLoader(str(templates)))  # a user's overrides first
        loaders.append(jinja2.PackageLoader("logkit", "templates"))
        self.env = jinja2.Environment(
            loader=jinja2.ChoiceLoader(loaders),
            autoescape=False,
            auto_reload=False,  # one build, templates do not change under it (saves a stat per include)
            finalize=finalize,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            undefined=jinja2.StrictUndefined,
        )
        self.env.filters.update(code=code, fence=fence, text=text_block, esc=esc, date=_date, cell=_cell,
                                numbered=_numbered, excerpt=_excerpt, conc=_conc, metric=metric_label,
                                num=lambda value: Markup(figure_text(value)),
                                command=lambda value: _command(str(value or "")))
        self.written: list[Path] = []

    def render(self, page: Page, ctx: Any) -> str:
        """The Markdown of one page."""
        here = posixpath.dirname(page.path)

        def url(href: str) -> str:
            return _relative(href, here)

        def page_link(label: Any, href: str) -> Markup:
            return link(label, url(href))

        def aref(a: Any) -> Markup:
            return page_link(a.ref, a.href) + Markup(" <small>") + esc(a.status) + Markup("</small>")

        body = self.env.get_template(page.template).render(ctx=ctx, link=page_link, url=url, code=code, aref=aref,
                                                          count=count)
        lines = ["---", f"title: {json.dumps(html_text(page.title))}"]
        if not _HEADING.search(body):
            lines += ["hide:", "  - toc"]  # nothing to list: give the page's tables the room
        if page.tags:
            lines += ["tags:", *(f"  - {json.dumps(html_text(t))}" for t in page.tags)]
        if page.no_search or not fits_search(body):
            lines += ["search:", "  exclude: true"]
        lines.append("---")
        return "\n".join(lines) + "\n\n" + body

    def keep(self, path: str) -> None:
        """Keep a page written by an earlier build as it is (:meth:`prune` leaves it)."""
        self.written.append(self.docs / path)

    def write(self, pages: Iterable[tuple[Page, Any]], texts: dict[str, str] | None = None) -> None:
        """Render and write every page whose Markdown changed (all of it into ``texts`` by path, if given)."""
        for page, ctx in pages:
            text = self.render(page, ctx)
            if texts is not None:
                texts[page.path] = text
            target = self.docs / page.path
            self.written.append(target)
            try:
                if target.read_text(encoding="utf-8") == text:
                    continue
            except OSError:
                pass
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def prune(self) -> None:
        """Delete generated Markdown files that this build did not write."""
        keep = set(self.written)  # the paths rglob gives: docs / a page's path (no link resolved, no stat)
        for path in self.docs.rglob("*.md"):
            if path not in keep:
                path.unlink()
