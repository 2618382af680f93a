"""Escaping of every user-supplied string that reaches a generated Markdown page.

Contract: a value that passes through :func:`esc` renders as the literal text it holds, in a
Markdown paragraph, a list item, a table cell or a heading: no HTML tag, no entity, no emphasis,
link, attribute list or table separator survives. Fragments the builder itself makes (links to
pages it generated, code spans, fences) are :class:`markupsafe.Markup` and pass through the
template engine's ``finalize`` untouched; every other ``{{ value }}`` is escaped by it.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup

__all__ = ["Markup", "code", "esc", "fence", "finalize", "html_text", "link", "text_block"]

# Characters Python-Markdown, its tables/attr_list extensions or raw HTML give a meaning to.
_SPECIAL = "&\\`*_{}[]()<>|!~\"'$^"
_TABLE = str.maketrans({c: f"&#{ord(c)};" for c in _SPECIAL})
# At the start of a line these make a heading, list, quote or setext underline.
_LEADING = re.compile(r"^(\s*)([-+#>=:]|\d+(?=[.)]))")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def esc(value: Any) -> Markup:
    """``value`` as inline Markdown that renders as exactly its text (newlines become spaces)."""
    if value is None:
        return Markup("")
    if isinstance(value, Markup):
        return value
    text = _CONTROL.sub(" ", str(value)).replace("\r", " ").replace("\n", " ")
    text = text.translate(_TABLE)
    text = _LEADING.sub(lambda m: m.group(1) + "".join(f"&#{ord(c)};" for c in m.group(2)), text)
    return Markup(text)


def text_block(value: Any) -> Markup:
    """Multi-line prose as one escaped paragraph, its line breaks kept as ``<br>``."""
    if value is None:
        return Markup("")
    lines = [esc(line) for line in str(value).splitlines() if line.strip()]
    return Markup("<br>\n".join(lines))


def html_text(value: Any) -> str:
    """Plain HTML escaping, for strings MkDocs' own templates print unescaped (page titles)."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def code(value: Any) -> Markup:
    """An inline code span that keeps its text literal, also inside a table cell."""
    if value is None or value == "":
        return Markup("")
    return Markup(f"<code>{esc(value)}</code>")


def fence(value: Any, lang: str = "text") -> Markup:
    """A fenced code block (top level only) whose fence no backtick run inside can close."""
    text = _CONTROL.sub(" ", str(value or ""))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return Markup(f"{ticks} {lang}\n{text}\n{ticks}")


def link(label: Any, href: str, title: str | None = None) -> Markup:
    """A Markdown link to a page the builder generated; ``href`` is builder-made, never user text."""
    if not re.fullmatch(r"[A-Za-z0-9._/#%-]*", href):
        raise ValueError(f"refusing to link to a non-generated path: {href!r}")
    return Markup(f"[{esc(label)}]({href})")


def finalize(value: Any) -> Any:
    """Jinja ``finalize`` hook: escape everything that is not already Markup."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return esc(value)
