"""Smoke prompts against a ready server, and the one test for degenerate (garbage) output.

Contract: :func:`degenerate` says why a reply is garbage (a character or short unit repeated, empty
output, a token loop, U+FFFD characters, NaN log-probabilities, word salad) or returns None;
:func:`degenerate_line` applies the same tests to one printed line, with absolute thresholds and what
is never output excluded (rules, progress bars, masks, hex dumps, base64 blobs, numbers, tensor
prints). :class:`GarbageScanner` finds such lines in a chunk (one regex scan for candidate runs, then
:func:`degenerate_line` on their lines); :func:`may_degenerate` judges a line *shape* once, so the
prefilter stops scanning a healthy kind of line. Thresholds: ``sglang.toml`` ``[garbage]``.
:func:`send` posts one prompt to ``/v1/chat/completions`` (else ``/v1/completions``); never raises.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..shapes import MAX_SHAPE_BYTES

__all__ = ["GarbageScanner", "SmokeReply", "degenerate", "degenerate_line", "may_degenerate", "post_json", "send"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


@dataclass
class SmokeReply:
    reply: str | None
    latency_s: float
    logprobs: list[float | None]
    error: str | None = None


@lru_cache(maxsize=1)
def _cfg() -> dict[str, Any]:
    from .table import data as _data

    return dict(_data("sglang.toml")["garbage"])


@lru_cache(maxsize=1)
def _never() -> tuple[frozenset[str], tuple[tuple[int, int], ...]]:
    g = _cfg()
    return frozenset(g["never_units"]), tuple((int(a), int(b)) for a, b in g["never_ranges"])


def _never_char(ch: str) -> bool:
    chars, ranges = _never()
    return ch in chars or ch.isspace() or any(a <= ord(ch) <= b for a, b in ranges)


@lru_cache(maxsize=16)
def _unit_re(max_unit: int, reps: int) -> re.Pattern[str]:
    return re.compile(r"(.{1,%d}?)\1{%d,}" % (max_unit, reps - 1), re.S)


def _grown(text: str, a: int, b: int, keep: Any) -> str:
    """``text[a:b]`` grown both ways over the characters ``keep`` accepts."""
    while a > 0 and keep(text[a - 1]):
        a -= 1
    while b < len(text) and keep(text[b]):
        b += 1
    return text[a:b]


_HEX_TOKEN = re.compile(r"^(?:0x)?[0-9a-fA-F]{2,}[,:]?$")
_B64_TOKEN = re.compile(r"^[A-Za-z0-9+/=_-]{64,}$")


def _run_is_output(text: str, m: re.Match[str], hexdump: bool) -> bool:
    """Is this repeated run plausibly generated text (not a rule, mask, number, dump or blob)?"""
    unit = m.group(1)
    if all(_never_char(c) for c in unit):
        return False
    word = unit.strip(" ,;'\"[](){}").lower()
    listed = any(c in unit for c in " ,;")
    if listed and (word in _cfg()["number_words"] or word.replace(".", "").lstrip("-").isdigit()):
        return False  # a tensor or list print: nan, nan, nan / 1, 1, 1
    token = _grown(text, m.start(), m.end(), lambda c: not c.isspace())
    if _B64_TOKEN.match(token.strip("'\"`,;()[]{}")) and len(m.group(0)) < 0.5 * len(token):
        return False
    if len(unit) == 1 and unit.isalpha() and len(m.group(0)) < 2 * _cfg()["repeat_char_run"]:
        if any(c.lower() != unit.lower() for c in _grown(text, m.start(), m.end(), str.isalpha)):
            return False  # dev29: a name spelled with a run of one letter ("jllllll's" wheels), not a letter looping
    if all(c in "0123456789abcdefABCDEF" for c in unit):
        if hexdump or token.lower().startswith("0x") or "0x" in token.lower():
            return False
        quoted = m.start() > 0 and text[m.start() - 1] in "'\"`"
        if unit.isdigit() and not quoted and token.strip("'\"`,;()[]{}") != m.group(0):
            return False  # part of a number, a version or key=value: 0.3333333, id=99999999
        if len(unit) == 1 and unit.isdigit() and not quoted and len(m.group(0)) < 2 * _cfg()["repeat_char_run"]:
            return False  # a whole number of a few repeated digits is a number (pid 222222, 333333 ms, a count reaching 111111)
        before = text[: m.start()].rstrip()
        if unit.isdigit() and not quoted and before.endswith((":", "=")) and (
                text[m.end():m.end() + 1] == "," or before.rsplit(None, 1)[-1].startswith("#")):
            return False  # a counter in a list of them: `#token: 999999,` in a batch line
    return True


def _word_loop(words: list[str], n: int, numbers: frozenset[str]) -> tuple[list[str], int] | None:
    """The longest-running n-gram (with a real word) repeated ``n`` times or more back to back, and its count."""
    best: tuple[list[str], int] | None = None
    for size in range(1, int(_cfg()["loop_max_words"]) + 1):
        i = 0
        while i + size * n <= len(words):
            gram = words[i : i + size]
            k = 1
            while words[i + k * size : i + (k + 1) * size] == gram:
                k += 1
            if k >= n and any(w.strip("'\"`,;.:!?()[]{}").lower() not in numbers
                              and any(c.isalpha() for c in w) for w in gram):
                if best is None or k * size > best[1] * len(best[0]):
                    best = (gram, k)
                i += k * size
            else:
                i += 1
    return best


def _why_run(unit: str, reps: int) -> str:
    if len(unit) == 1:
        return f"one character repeated ({unit!r} x{reps})"
    if any(c.isspace() for c in unit) and unit.strip():
        return f"token loop ({unit.strip()!r} x{reps})"
    return f"a unit repeated ({unit!r} x{reps})"


def _special_token() -> str:
    """One special token (``<|im_end|>``, ``<unk>``, DeepSeek's ``<｜end▁of▁sentence｜>``), as text or bytes."""
    bar, mark = "(?:\\||\uff5c)?", "\u2581"
    return r"<%s[A-Za-z_](?:[\w.-]|%s){0,40}%s>" % (bar, mark, bar)


def _special_run(g: dict[str, Any]) -> str:
    """One special token repeated back to back (``tok``: the token)."""
    # between them blanks, or a repr's / JSON string's literal escapes ('<|im_start|>\\n<|im_start|>\\n')
    return r"(?P<tok>%s)(?:(?:\s|\\[nrt])*(?P=tok)){%d}" % (_special_token(), g["special_token_repeats"] - 1)


@lru_cache(maxsize=1)
def _salad_cfg() -> tuple[frozenset[str], tuple[tuple[int, int, str], ...], re.Pattern[str], re.Pattern[str]]:
    g = _cfg()
    ranges = tuple(sorted((int(a), int(b), str(name)) for name, a, b in g["scripts"]))
    # UTF-8's lead byte then continuation bytes, each decoded as Latin-1 or cp1252 ("Ð°", "å¤§")
    cont = "\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122"
    mojibake = re.compile(f"[\u00c2-\u00df][{cont}]|[\u00e0-\u00ef][{cont}]{{2}}")
    return frozenset(g["function_words"]), ranges, mojibake, re.compile(_special_run(g))


def _script(ch: str, ranges: tuple[tuple[int, int, str], ...]) -> str | None:
    o = ord(ch)
    for a, b, name in ranges:
        if o < a:
            return None
        if o <= b:
            return name
    return None


def _salad(text: str) -> str | None:
    """Why one line reads as sampled tokens (word salad, scripts mixed in words, mojibake, a special token looping)."""
    g = _cfg()
    function, ranges, mojibake, special = _salad_cfg()
    m = special.search(text)
    if m:
        return f"special token repeated ({m.group('tok')!r})"
    doubled = _stutter(text)
    if doubled:
        return doubled
    if not text.isascii():
        if len(mojibake.findall(text)) >= g["mojibake_pairs"]:
            return "mojibake (UTF-8 text read as Latin-1)"
        counts: dict[str, int] = {}
        switching = 0
        for token in text.split():
            seen = set()
            for ch in token:
                if ch.isalpha():
                    sc = _script(ch, ranges)
                    if sc is not None:
                        seen.add(sc)
                        counts[sc] = counts.get(sc, 0) + 1
            switching += len(seen) > 1
        scripts = sorted(sc for sc, n in counts.items() if n >= 2)
        # text in several languages keeps each in its own words; sampled tokens glue systems together
        if len(scripts) >= g["mixed_scripts"] and switching >= g["mixed_scripts_tokens"]:
            return f"letters of {len(scripts)} writing systems mixed ({', '.join(scripts)})"
    tokens = text.split()
    if len(tokens) < g["salad_min_words"]:
        return None
    if sum(1 for t in tokens if t.endswith(",")) >= g["salad_list_share"] * len(tokens):
        return None
    words = [w for w in (t.strip("'\"`,;.:!?()[]{}*") for t in tokens)
             if w.isalpha() and (w.islower() or w[1:].islower())]
    if len(words) < g["salad_min_words"]:
        return None
    used = sum(1 for w in words if w.lower() in function)
    capitalized = sum(1 for w in words if w[0].isupper())
    # sampled tokens mix cases; a list of names or packages is all one case
    mixed = g["salad_capitalized_share"] * len(words) <= capitalized <= (1 - g["salad_capitalized_share"]) * len(words)
    if mixed and used <= g["salad_function_share"] * len(words):
        return f"word salad ({len(words)} words, {used} function words)"
    return None


def _doubled(text: str) -> tuple[int, int, set[str]]:
    """Words written twice back to back: (the words of letters, the pairs, the doubled words lowercased)."""
    tokens = [t for t in (t.strip("'\"`,;.:!?()[]{}*|\u2502") for t in text.split()) if t]
    words = sum(1 for t in tokens if any(c.isalpha() for c in t))
    i = pairs = 0
    seen: set[str] = set()
    while i + 1 < len(tokens):
        if tokens[i] == tokens[i + 1] and any(c.isalpha() for c in tokens[i]):
            pairs += 1
            seen.add(tokens[i].lower())
            i += 2
        else:
            i += 1
    return words, pairs, seen


def _stutter(text: str) -> str | None:
    """Each word written twice ("parsing parsing and and"): a stream whose every piece was emitted twice."""
    # several words doubled, much of the line (prose doubles a word by mistake once; a table repeats one value)
    g = _cfg()
    words, pairs, seen = _doubled(text)
    if pairs >= g["stutter_pairs"] and len(seen) >= g["stutter_words"] and 2 * pairs >= g["stutter_share"] * words:
        return f"words doubled ({pairs} pairs back to back, e.g. {sorted(seen)[0]!r})"
    return None


def degenerate(reply: str | None, logprobs: list[float | None] | None = None) -> str | None:
    """Why ``reply`` is garbage, or None when it looks like text."""
    g = _cfg()
    if logprobs and any(isinstance(lp, float) and math.isnan(lp) for lp in logprobs):
        return "NaN log-probabilities"
    if reply is None or not reply.strip():
        return "empty reply"
    text = reply.strip()
    if text.count("\ufffd") >= g["replacement_chars"]:
        return "replacement characters (U+FFFD) in the reply"
    dense = len(text.replace(" ", ""))
    for m in _unit_re(g["line_unit_max"], min(g["repeat_char_run"], g["line_unit_repeats"])).finditer(text):
        unit = m.group(1)
        reps = len(m.group(0)) // len(unit)
        need = g["repeat_char_run"] if len(unit) == 1 else g["line_unit_repeats"]
        if reps >= need and len(m.group(0)) >= g["repeat_char_share"] * dense and not unit.isspace():
            return _why_run(unit, reps)
    words = text.split()
    loop = _word_loop(words, g["loop_min_repeats"], frozenset())
    # In a reply the loop must dominate (a short answer may repeat a word legitimately).
    if loop is not None and loop[1] * len(loop[0]) >= 0.5 * len(words):
        return f"token loop ({' '.join(loop[0])!r} repeated)"
    for line in text.splitlines():
        why = _salad(line)
        if why:
            return why
    return None


def degenerate_line(line: str, span: tuple[int, int] | None = None) -> str | None:
    """Why one printed line carries degenerate output, or None; ``span`` limits the search for repeated runs."""
    g = _cfg()
    text = _ANSI.sub("", line).rsplit("\r", 1)[-1]
    if text.count("\ufffd") >= g["line_replacement_chars"]:
        return "replacement characters (U+FFFD)"
    hexdump = sum(1 for t in text.split() if _HEX_TOKEN.match(t)) >= 4
    lo, hi = (0, len(text)) if span is None or len(text) != len(line) else span
    for m in _unit_re(g["line_unit_max"], min(g["repeat_char_run"], g["line_unit_repeats"])).finditer(text, lo, hi):
        unit = m.group(1)
        reps = len(m.group(0)) // len(unit)
        need = g["repeat_char_run"] if len(unit) == 1 else g["line_unit_repeats"]
        if reps >= need and _run_is_output(text, m, hexdump):
            return _why_run(unit, reps)
    # a loop of words runs past the candidate that found it (a sentence looping is hundreds of
    # characters): its words are read from a window as long as the longest loop looked for
    reach = 32 * int(g["loop_max_words"]) * int(g["line_loop_min_repeats"])
    loop = _word_loop(text[max(0, lo - reach):hi + reach].split(), g["line_loop_min_repeats"], frozenset(g["number_words"]))
    return f"token loop ({' '.join(loop[0])!r} x{loop[1]})" if loop is not None else _salad(text)


@lru_cache(maxsize=1)
def _gate() -> re.Pattern[bytes]:
    """The regex of candidate runs in a chunk: one ``re`` scan."""
    g = _cfg()
    never = set(g["never_units"])
    # one character (not a separator) repeated: one back-reference, not an alternation of ~60 literals
    # (which the `re` engine tries one by one at every byte: 30x slower on healthy lines)
    chars = b"".join(re.escape(c.encode()) for c in map(chr, range(0x21, 0x7F)) if c not in never)
    singles = [b"([%s])\\1{%d}" % (chars, g["repeat_char_run"] - 1)]
    long_run = rb"[^\s\[\](){}/\\:=,.'\"|<>*#~+`^;_0-9]{20,}"
    # words in a row (a loop's candidate): hyphenated and quoted words, words of other writing systems
    # (the bytes of UTF-8 sequences are letters) and a reply's literal \n escapes inside a JSON string
    # or a repr (a backslash is a letter: "you?\nI" is two words) count
    # (digits inside a word too: a loop's word may hold a number, "clothes\\n\\n10 year old ...")
    words = rb"(?:[A-Za-z\\\x80-\xff][A-Za-z0-9'\\\x80-\xff-]{0,19}[ ,.;!?]{1,3}){%d,}" % g["line_loop_min_repeats"]
    fffd = rb"(?:\xef\xbf\xbd[^\n]{0,40}){%d}" % g["line_replacement_chars"]
    wide = rb"[\x80-\xff]{%d,}" % (3 * g["repeat_char_run"])  # a run of non-ASCII characters (CJK)
    pattern = b"|".join([*singles, long_run, words, fffd, wide, _special_run(g).encode()])
    return re.compile(pattern)


@lru_cache(maxsize=1)
def _shape_runs() -> re.Pattern[str]:
    """In a shape: a unit repeated, neither all ``0`` nor all never-output characters; or digits after a quote."""
    g = _cfg()
    reps = min(g["repeat_char_run"], g["line_unit_repeats"])
    never = re.escape("".join(sorted(set(g["never_units"]) - {"0"})))
    units = [r"(?![\s%s]{%d})(?!0{%d})(.{%d})\%d{%d}" % (never, n, n, n, n, reps - 1)
             for n in range(1, int(g["line_unit_max"]) + 1)]
    return re.compile("|".join([*units, r"['\"`]0{%d}" % reps]), re.S)


@lru_cache(maxsize=1)
def _shape_runs_near() -> re.Pattern[str]:
    """A faster necessary condition of :func:`_shape_runs`: from its first non-``0`` on, one repeat less."""
    g = _cfg()
    reps = min(g["repeat_char_run"], g["line_unit_repeats"])
    return re.compile(r"([^0].{0,%d}?)\1{%d}|['\"`]0{%d}" % (int(g["line_unit_max"]) - 1, reps - 2, reps), re.S)


_SHAPE_SPECIAL = re.compile(_special_token())
_SHAPE_TOKEN_EDGES = "'\"`,;()[]{}"


def may_degenerate(shape: str) -> bool:
    """Whether some line of this shape may be degenerate (:func:`degenerate_line`, any span); False: none is."""
    # Whatever repeats in a line repeats in its shape, so each test is read there loosened: a non-ASCII line is
    # judged per line; a unit run counts unless all never-output or all 0 (digits: only a whole token or quoted);
    # any word loop counts; doubled words count their pairs; salad its words of letters; a special token anywhere.
    g = _cfg()
    text = _ANSI.sub("", shape).rsplit("\r", 1)[-1]
    if not text.isascii() or _SHAPE_SPECIAL.search(text):
        return True
    if _shape_runs_near().search(text) and _shape_runs().search(text):
        return True
    tokens = text.split()
    reps = min(g["repeat_char_run"], g["line_unit_repeats"])
    if any(len(s) >= reps and s.count("0") == len(s) for s in (t.strip(_SHAPE_TOKEN_EDGES) for t in tokens)):
        return True
    if _word_loop(tokens, g["line_loop_min_repeats"], frozenset()) is not None:
        return True
    # words doubled: a shape's pairs are at least the line's (equal words stay equal); its distinct
    # words may be fewer (case folded), so their count is not asked
    words, pairs, _seen = _doubled(text)
    if pairs >= g["stutter_pairs"] and 2 * pairs >= g["stutter_share"] * words:
        return True
    # word salad: enough words of letters, not a list
    if len(tokens) < g["salad_min_words"] or sum(1 for t in tokens if t.endswith(",")) >= g["salad_list_share"] * len(tokens):
        return False
    return sum(1 for t in tokens if t.strip("'\"`,;.:!?()[]{}*").isalpha()) >= g["salad_min_words"]


class GarbageScanner:
    """Finds degenerate output in chunks of complete log lines (the classifier's hot path)."""

    def may_hold(self, shape: bytes) -> bool:
        """Whether a line of this shape may be degenerate (a line longer than MAX_SHAPE_BYTES always may)."""
        return len(shape) > MAX_SHAPE_BYTES or may_degenerate(shape.decode("utf-8", "replace"))

    def candidates(self, data: bytes) -> list[int]:
        """Offsets of the candidate runs in ``data`` (none spans a line break)."""
        return [m.start() for m in _gate().finditer(data)]

    def first(self, data: bytes, pos: int = 0) -> int:
        """The offset of the first candidate run in ``data`` at or after ``pos``, or -1."""
        m = _gate().search(data, pos)
        return -1 if m is None else m.start()

    def scan(self, chunk: bytes) -> list[tuple[int, str, str]]:
        """``(offset of the line, line text, reason)`` for each degenerate line in ``chunk``."""
        spans: dict[int, list[int]] = {}
        ends: dict[int, int] = {}
        for a, b in (m.span() for m in _gate().finditer(chunk)):
            start = chunk.rfind(b"\n", 0, a) + 1
            if start not in spans:
                end = chunk.find(b"\n", a)
                ends[start] = len(chunk) if end < 0 else end
                spans[start] = [a, b]
            else:
                spans[start][1] = max(spans[start][1], b)
        out: list[tuple[int, str, str]] = []
        for start, (a, b) in spans.items():
            raw = chunk[start : ends[start]][:8000]
            line = raw.decode("utf-8", "replace")
            # The candidate's byte span, as character offsets (with margins for a unit's start).
            lo = len(raw[: max(0, a - start - 64)].decode("utf-8", "replace"))
            hi = len(raw[: max(0, b - start + 64)].decode("utf-8", "replace"))
            why = degenerate_line(line, (lo, hi))
            if why:
                out.append((start, line, why))
        return out


def post_json(url: str, body: dict[str, Any], timeout: float, api_key: str | None) -> dict[str, Any]:
    """POST ``body`` as JSON to ``url`` (with ``api_key`` as a bearer token) and return the reply's JSON."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the server's own host:port
        return json.loads(resp.read().decode("utf-8", "replace"))


def send(base: str, prompt: str, *, model: str = "default", timeout: float = 120.0, api_key: str | None = None,
         max_tokens: int = 64) -> SmokeReply:
    """Send one prompt; never raises."""
    t0 = time.monotonic()
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0, "logprobs": True}
    try:
        try:
            data = post_json(f"{base}/v1/chat/completions", body, timeout, api_key)
            choice = data["choices"][0]
            reply = (choice.get("message") or {}).get("content")
            lps = [c.get("logprob") for c in ((choice.get("logprobs") or {}).get("content") or [])]
        except urllib.error.HTTPError as exc:
            if exc.code not in (404, 400):
                raise
            body2 = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 1}
            data = post_json(f"{base}/v1/completions", body2, timeout, api_key)
            choice = data["choices"][0]
            reply = choice.get("text")
            lps = list((choice.get("logprobs") or {}).get("token_logprobs") or [])
        lps = [float(x) if x is not None else None for x in lps]
        return SmokeReply(reply, round(time.monotonic() - t0, 3), lps)
    except Exception as exc:  # noqa: BLE001 - a smoke test reports, it never crashes the recorder
        return SmokeReply(None, round(time.monotonic() - t0, 3), [], f"{type(exc).__name__}: {exc}")
