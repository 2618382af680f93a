"""What a regex's shape allows the redaction's detectors (``Redactor._changes``) to do faster.

Contract: pure functions of a pattern's source, checked on the parse tree of Python's ``re``
(``re._parser``): whether it may run case-sensitively on ASCII-lowered text instead of with
``(?i)`` (:func:`lowerable`), looser parts that together find every match and each start with a
literal (:func:`alternatives`), and the bytes or literal every match starts with
(:func:`first_bytes`, :func:`literal_prefix`). Python's ``re`` skips ahead with a fast search only
when a pattern starts with a literal; these let a detector be shaped so that it does.

Imports only the standard library (the ``logkit run`` start-up must stay light).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["alternatives", "first_bytes", "literal_prefix", "lowerable", "unharmless"]


def lowerable(source: str) -> bool:
    """Whether ``(?i)source`` matches at the same places as ``source`` run case-sensitively on the
    ASCII-lowered text (``bytes.lower`` keeps every length, so the spans map back to the original).

    True when every literal letter is lowercase, every character class holds the lowercase of each
    capital it holds (``[A-Za-z]`` yes, ``[A-Z]`` no), and nothing switches flags or refers back to
    a group. Checked on the parse tree when a pattern is compiled; a pattern that fails it runs
    with ``(?i)`` on the original text instead (slower: Python's ``re`` then cannot use a literal
    prefix to skip ahead).
    """
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    upper = range(ord("A"), ord("Z") + 1)

    def klass(items: Any) -> bool:
        members: set[int] = set()
        for op, av in items:
            if op is c.LITERAL:
                members.add(av)
            elif op is c.RANGE:
                members.update(range(av[0], av[1] + 1))
            elif op not in (c.NEGATE, c.CATEGORY):  # \s \d \w are closed under case
                return False
        return all(ch + 32 in members for ch in members if ch in upper)

    def walk(items: Any) -> bool:
        for op, av in items:
            if op in (c.LITERAL, c.NOT_LITERAL):
                if av in upper:
                    return False
            elif op is c.IN:
                if not klass(av):
                    return False
            elif op is c.BRANCH:
                if not all(walk(b) for b in av[1]):
                    return False
            elif op is c.SUBPATTERN:
                if av[1] or av[2] or not walk(av[3]):  # a scoped flag switch
                    return False
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                if not walk(av[2]):
                    return False
            elif op in (c.ASSERT, c.ASSERT_NOT):
                if not walk(av[1]):
                    return False
            elif op is c.ATOMIC_GROUP:
                if not walk(av):
                    return False
            elif op not in (c.ANY, c.AT, c.CATEGORY):
                return False  # a back-reference or anything this check does not know
        return True

    try:
        parsed = _parser.parse(source)
    except re.error:
        return False
    return not parsed.state.flags & re.IGNORECASE and walk(parsed)


def _group_end(source: str, at: int) -> tuple[int, list[int]]:
    """For the group opening at ``source[at]``: the index of its ``)`` (-1 if none) and of the
    ``|`` at its own level."""
    bars: list[int] = []
    depth, i, in_class = 0, at + 1, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if source[i + 1:i + 2] == "^":
                i += 1
            if source[i + 1:i + 2] == "]":
                i += 1  # a `]` first in a class is a member
        elif ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return i, bars
            depth -= 1
        elif ch == "|" and depth == 0:
            bars.append(i)
        i += 1
    return -1, bars


def alternatives(source: str) -> list[str]:
    """Looser regexes that together find every place ``source`` matches, each as fast to search as
    Python's ``re`` allows: leading ``\\b`` and look-behinds dropped (only ever narrowing where a
    match starts), and a leading group ``(?:a|b)rest`` split into ``a + rest`` and ``b + rest``
    (something matches the whole iff one of them matches there). A part that now starts with a
    literal gets ``re``'s fast literal search; an alternation, a ``\\b`` or a look-behind first
    makes it try every byte.
    """
    while True:
        if source.startswith("\\b"):
            source = source[2:]
        elif source.startswith(("(?<!", "(?<=")):
            close, _bars = _group_end(source, 0)
            if close < 0:
                return [source]
            source = source[close + 1:]
        else:
            break
    if not source.startswith("(?:"):
        return [source]
    close, bars = _group_end(source, 0)
    rest = source[close + 1:]
    if close < 0 or rest[:1] in ("?", "*", "+", "{"):
        return [source]  # the group is repeated or optional: not a plain prefix
    cuts = [2, *bars, close]
    return [p for a, b in zip(cuts, cuts[1:], strict=False) for p in alternatives(source[a + 1:b] + rest)]


def first_bytes(source: str, flags: int = 0) -> tuple[bytes, ...]:
    """The few bytes one of which starts every match of ``source`` (a literal or a small class of
    literals first), or ``()`` when that is not known."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(source, flags)
    except re.error:
        return ()
    if not parsed.data:
        return ()
    op, av = parsed.data[0]
    if op is c.LITERAL:
        codes = {av}
    elif op is c.IN and all(o is c.LITERAL for o, _v in av) and len(av) <= 8:
        codes = {v for _o, v in av}
    else:
        return ()
    if (flags | parsed.state.flags) & re.IGNORECASE:
        codes |= {ord(chr(x).swapcase()) for x in codes if x < 128}
    if any(x > 255 for x in codes):
        return ()
    return tuple(bytes([x]) for x in sorted(codes))


def literal_prefix(source: str) -> bytes:
    """The literal text every match of ``source`` starts with (``b""`` if under 3 bytes): a
    case-sensitive ``source`` is looked for in any case, so this only needs to be a necessary sign."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(source)
    except re.error:
        return b""
    out = bytearray()
    for op, av in parsed.data:
        if op is not c.LITERAL or av > 255:
            break
        out.append(av)
    return bytes(out) if len(out) >= 3 else b""


#: the ``harmless`` values and the unquoted-value class :func:`unharmless` knows how to complement
_NUMBER = r"-?[0-9][0-9.,_]*%?"
_VALUE_CHARS = r"""[^\s,;)}'"]"""


def unharmless(harmless: str, value_chars: str) -> str | None:
    """A regex without look-arounds (Hyperscan takes it) matching at a value's start exactly when
    the unquoted value there, a maximal run of ``value_chars``, is *not* ``harmless``; or None
    when ``harmless`` is not a number pattern and plain words, or the class is another.

    ``harmless`` is ``-?[0-9][0-9.,_]*%?|word|word...`` (as secrets.toml has it); a comma ends a
    value, so a harmless run is a number ``-?D[D._]*%?`` or one of the words (any case). A run is
    not harmless when it holds a byte outside ``[0-9a-z._%-]``; or has a letter and is no word
    (it leaves the words' trie, stops inside it, or goes on past a word); or has no letter and is
    no number (starts with ``.``, ``_`` or ``%``; ``-`` not followed by a digit; a ``-`` later on;
    a ``%`` with more after it). Used case-insensitively.
    """
    alts = harmless.split("|")
    if value_chars != _VALUE_CHARS or not alts or alts[0] != _NUMBER:
        return None
    words = alts[1:]
    if not all(re.fullmatch(r"[a-z]+", w) for w in words):
        return None
    allowed = "0-9a-z._%-"
    term = r"""(?:[\s,;)}'"]|$)"""
    run = _VALUE_CHARS
    firsts = sorted({w[0] for w in words})
    others = "".join(c for c in "abcdefghijklmnopqrstuvwxyz" if c not in firsts)
    out = [
        rf"""[{allowed}]*[^\s,;)}}'"{allowed}]""",  # a byte no harmless value holds
        f"[{others}]" if others else "(?!)",  # a first letter no word starts with
        r"[0-9._%-]+[a-z]",  # a letter after a start that is no letter: neither word nor number
        r"[._%]",  # a number starts with a digit or a minus
        r"-(?:[^0-9]|$)",  # a minus not followed by a digit
        rf"{run}+-",  # a minus after the first byte
        rf"{run}*%{run}",  # a percent sign with more after it
    ]
    prefixes = sorted({w[:k] for w in words for k in range(1, len(w) + 1)})
    for p in prefixes:
        children = sorted({w[len(p)] for w in words if w.startswith(p) and len(w) > len(p)})
        if p in words:
            out.append(rf"{p}[{allowed}]")  # goes on past a word
        if p not in words:
            out.append(rf"{p}{term}")  # stops inside a word
        rest = "".join(c for c in "0123456789abcdefghijklmnopqrstuvwxyz._%-" if c not in children)
        if children:
            out.append(f"{p}[{re.escape(rest)}]")  # leaves the words' trie
    return "(?:" + "|".join(out) + ")"
