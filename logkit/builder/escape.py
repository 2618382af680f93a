"""Escaping of every user-supplied string that reaches a generated Markdown page.

Contract: a value that passes through :func:`esc` renders as the literal text it holds (redacted again
with today's secret patterns, :func:`redacted`), in a
Markdown paragraph, a list item, a table cell or a heading: no HTML tag, no entity, no emphasis,
link, attribute list or table separator survives. Fragments the builder itself makes (links to
pages it generated, code spans, fences) are :class:`markupsafe.Markup` and pass through the
template engine's ``finalize`` untouched; every other ``{{ value }}`` is escaped by it.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from markupsafe import Markup

__all__ = ["Markup", "code", "esc", "fence", "finalize", "html_text", "keep_words", "link", "redacted", "redacted_argv", "text_block"]

# Characters Python-Markdown, its tables/attr_list extensions or raw HTML give a meaning to. Others
# (``(``, ``!``, ``.``) only mean something next to one of these, so escaping these is enough; an
# underscore inside a word is literal in Python-Markdown, so only one at a word edge is escaped.
# Every entity costs the Markdown parser an inline match: escape no more than needed.
_SPECIAL = re.compile(r"[&<>\\`*\[\]{}|\"]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# At the start of a line these make a heading, list, quote or setext underline.
_LEADING = re.compile(r"^(\s*)([-+#>=:]|\d+(?=[.)](?:\s|$)))")
_NEEDS = re.compile(r"[&<>\\`*\[\]{}|\"_\x00-\x1f\x7f]")
_LEAD_CHARS = frozenset(" \t-+#>=:0123456789")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Terminal escape sequences (colours, cursor moves, titles) that pty runs keep in their logs: on a
# page they are noise ("[01;34m"), so they are dropped before the other control characters.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


@functools.lru_cache(maxsize=1)
def _redactor() -> Any:
    from ..capture.redact import Redactor

    return Redactor()


def redacted(text: str) -> str:
    """Raw ``text`` (before escaping) redacted again with today's secret patterns."""
    # a session was redacted as written, by the patterns of then (an older logkit, a teammate's clone)
    return _redactor().text(text)


def redacted_argv(words: list[str]) -> list[str]:
    """A command's words redacted as :func:`redacted`, each alone (redacting the quoted command would cut its quoting)."""
    return _redactor().argv(words)


def _entity(match: re.Match[str]) -> str:
    return "".join(f"&#{ord(c)};" for c in match.group(0))


def esc(value: Any) -> Markup:
    """``value`` as inline Markdown that renders as exactly its text (newlines become spaces)."""
    if value is None:
        return Markup("")
    if isinstance(value, Markup):
        return value
    return _esc_str(str(value))


@functools.lru_cache(maxsize=1 << 17)
def _esc_str(text: str) -> Markup:
    """:func:`esc` of a string; cached, because statuses, versions and labels repeat a lot."""
    text = redacted(text)
    if not _NEEDS.search(text) and text[:1] not in _LEAD_CHARS:
        return Markup(text)  # the common case: nothing to escape
    text = _CONTROL.sub(" ", _ANSI.sub("", text)).replace("\r", " ").replace("\n", " ")
    text = _SPECIAL.sub(_entity, text)
    text = _LEADING.sub(lambda m: m.group(1) + "".join(f"&#{ord(c)};" for c in m.group(2)), text)
    return Markup(text)


_HREF = re.compile(r"[A-Za-z0-9._/#%-]*")
_IDENT = re.compile(r"(?<!\S)(\S*[-_/.]\S*)")


def _nowrap(match: re.Match[str]) -> str:
    if len(match[1]) > 60:  # a URL or a long path may break rather than push the page sideways
        return match[1]
    return f'<span class="lk-nw">{match[1]}</span>'  # a function: a template string is re-parsed per match


def keep_words(text: str) -> str:
    """Escaped ``text`` with each word holding ``-``, ``_``, ``/`` or ``.`` (a flag, an id, a path) kept on one line."""
    if "-" in text or "_" in text or "/" in text or "." in text:
        return _IDENT.sub(_nowrap, text)
    return text


def text_block(value: Any) -> Markup:
    """Multi-line prose as one escaped paragraph, its line breaks kept as ``<br>`` (:func:`keep_words`)."""
    if value is None:
        return Markup("")
    lines = [keep_words(str(esc(line))) for line in str(value).splitlines() if line.strip()]
    return Markup("<br>\n".join(lines))


def html_text(value: Any) -> str:
    """Plain HTML escaping, for strings MkDocs' own templates print unescaped (page titles)."""
    return redacted(str(value)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def code(value: Any) -> Markup:
    """An inline code span that keeps its text literal, also in a table cell; several words wrap between words."""
    if value is None or value == "":
        return Markup("")
    text = str(esc(value))
    if " " in text.strip():
        words = " ".join(f'<span class="lk-nw">{w}</span>' for w in text.split())
        return Markup(f'<code class="lk-wrap">{words}</code>')
    return Markup(f"<code>{text}</code>")


def fence(value: Any, lang: str = "text", *, clean: bool = False) -> Markup:
    """A fenced code block no backtick run inside can close; ``clean``: its text was redacted already."""
    text = str(value or "")
    text = _CONTROL.sub(" ", _ANSI.sub("", text if clean else redacted(text)))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return Markup(f"{ticks} {lang}\n{text}\n{ticks}")


def link(label: Any, href: str) -> Markup:
    """A Markdown link to a page the builder generated; ``href`` is builder-made, never user text."""
    if not _HREF.fullmatch(href):
        raise ValueError(f"refusing to link to a non-generated path: {href!r}")
    return Markup(f"[{esc(label)}]({href})")


def finalize(value: Any) -> Any:
    """Jinja ``finalize`` hook: escape everything that is not already Markup."""
    kind = type(value)
    if kind is str:  # most of what a page prints (one call less than through :func:`esc`)
        return _esc_str(value)
    if kind is Markup or isinstance(value, Markup):
        return value
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return esc(value)
