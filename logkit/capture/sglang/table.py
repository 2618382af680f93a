"""The classifier's knowledge, loaded and compiled once: the signature table
(:file:`logkit/data/signatures.toml`, validated row by row: a bad row names its id and the fix) and
what :file:`logkit/data/sglang.toml` says about SGLang's own lines (the ready line, the server's
lines, the serving evidence). :mod:`.outcomes` applies it, :mod:`.prefilter` says which lines each row reads.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ... import statuses
from ...errors import BadInput
from ..shapes import SHAPE

__all__ = ["DETECTORS", "Signature", "compiled", "data", "extras", "lines_of", "load_signatures", "server_regexes"]

#: Detectors a signature row may name instead of a pattern.
DETECTORS = ("degenerate",)


@dataclass(frozen=True)
class Signature:
    """One row of the signature table."""

    id: str
    status: str
    label: str
    pattern: str
    priority: int
    weak: bool = False
    fatal: bool = False  # a weak row after which the process is dead: it counts even after ready
    source: str = ""
    source_file: str = ""
    detector: str | None = None
    needles: tuple[str, ...] = ()  # literals, one in every match (as line shapes): the row reads their lines
    generic: bool = False  # a row of the generic layer (a shape any program prints)
    gate: str | None = None  # a regex each line the row matches matches in part: it reads only those lines


def data(name: str) -> dict[str, Any]:
    text = resources.files("logkit.data").joinpath(name).read_text(encoding="utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"logkit/data/{name}: {exc}", fix="fix the TOML syntax at that line") from exc


def _bad(sid: str, problem: str, fix: str) -> BadInput:
    return BadInput(f"logkit/data/signatures.toml: signature {sid}: {problem}", fix=fix)


@lru_cache(maxsize=1)
def load_signatures() -> tuple[Signature, ...]:
    """The signature table, validated (a bad row names its id and the problem)."""
    out: list[Signature] = []
    seen: set[str] = set()
    for i, row in enumerate(data("signatures.toml").get("signature", []), 1):
        sid = row.get("id") or f"#{i}"
        if row.get("class") not in statuses.names():
            raise _bad(sid, f"class {row.get('class')!r} is not an outcome status",
                       f"use one of {', '.join(statuses.names())}")
        if sid in seen:
            raise BadInput(f"logkit/data/signatures.toml: duplicate signature id {sid!r}", fix="give each row its own id")
        seen.add(sid)
        if not row.get("source_file"):
            raise _bad(sid, "no source_file", "cite the file the message comes from (repository:path)")
        if row.get("detector") is not None and row["detector"] not in DETECTORS:
            raise _bad(sid, f"unknown detector {row['detector']!r}", f"use one of {', '.join(DETECTORS)}")
        if row.get("detector") is None:
            try:
                re.compile(row["pattern"].encode())
            except (KeyError, re.error) as exc:
                raise _bad(sid, f"bad pattern: {exc}", "fix the regex") from exc
        needles = row.get("needles", [])
        if not isinstance(needles, list) or not all(isinstance(n, str) and len(n) >= 3 for n in needles):
            raise _bad(sid, f"needles {needles!r} is not a list of literals",
                      "list literals of 3+ characters, one of which every match contains, or drop the key")
        out.append(Signature(id=sid, status=row["class"], label=row.get("label", sid), pattern=row.get("pattern", ""),
                             priority=int(row.get("priority", 50)), weak=bool(row.get("weak", False)),
                             fatal=bool(row.get("fatal", False)), source=row.get("source", ""),
                             source_file=row["source_file"], detector=row.get("detector"), needles=tuple(needles),
                             generic=bool(row.get("generic", False))))
    return tuple(out) + generic_rows()


def generic_rows() -> tuple[Signature, ...]:
    """The generic layer (``[generic]`` in sglang.toml) as weak rows: a family's words on a failure line."""
    # words = []: any failure line; no words: only its own ``lines`` (evidence on any line, a row ``<id>-line``)
    cfg = data("sglang.toml").get("generic")
    if not cfg:
        return ()
    shapes = "|".join(f"(?:{s})" for s in cfg["failure_lines"])
    hedges = "|".join(f"(?:{h})" for h in cfg.get("hedges", [])) or "(?!)"
    benign = "".join(r"(?![^\r\n]{0,2000}?" + f"(?:{b}))" for b in cfg.get("benign", []))
    out = []
    for fam in cfg.get("family", []):
        words = "|".join(f"(?:{w})" for w in fam.get("words", []))
        if "words" not in fam and fam.get("lines"):  # a family of own lines only: no failure-line row
            out.extend(_own_lines_row(fam, cfg, benign, hedges))
            continue
        # the word: on the line, with no hedge before it (a tempered token: no char starts a hedge)
        pattern = (r"(?im)(?:^|(?<=\r))" + benign + r"(?=[^\r\n]{0,2000}?(?-i:" + shapes + "))"
                   + (r"(?=(?:(?!" + hedges + r")[^\r\n]){0,2000}?(?:" + words + "))" if words else "") + r"[^\r\n]{1,2000}")
        try:
            re.compile(pattern.encode())
        except re.error as exc:
            raise BadInput(f"logkit/data/sglang.toml: generic family {fam.get('id')}: bad pattern: {exc}",
                           fix="fix the failure_lines or the family's words") from exc
        if fam.get("class") not in statuses.names():
            raise BadInput(f"logkit/data/sglang.toml: generic family {fam.get('id')}: class {fam.get('class')!r} is not "
                           "an outcome status", fix=f"use one of {', '.join(statuses.names())}")
        out.append(Signature(id=fam["id"], status=fam["class"], label=fam["label"], pattern=pattern,
                             priority=int(fam.get("priority", cfg["priority"])), weak=True,
                             source="a failure line's shape and a word of its family",
                             source_file="logkit/data/sglang.toml [generic]", needles=tuple(cfg["needles"]),
                             generic=True, gate=f"(?m){shapes}"))
        if words and cfg.get("title"):  # a report's title claiming a failure and naming a word of it
            out.append(_title_row(fam, words, cfg["title"], hedges))
        if fam.get("lines"):  # its own evidence, on any line (a metric `loss: nan`, a stall notice)
            out.extend(_own_lines_row(fam, cfg, benign, hedges))
    return tuple(out)


def _title_row(fam: dict, words: str, title: dict, hedges: str) -> Signature:
    """A family's words in a report's ``# `` title claiming a failure, no change's, with no hedge before."""
    claims = "|".join(f"(?:{c})" for c in title["claims"])
    hedges = "|".join([hedges, *(f"(?:{h})" for h in title.get("hedges", []))])
    changes = "|".join(f"(?:{n})" for n in title.get("not", [])) or "(?!)"
    return Signature(id=f"{fam['id']}-title", status=fam["class"],
                     label=fam["label"].replace("a failure line", "the report's title", 1),
                     pattern=(r"(?im)^# (?!" + changes + r")(?=[^\r\n]{0,300}?(?:" + claims + r"))(?=(?:(?!" + hedges
                              + r")[^\r\n]){0,300}?(?:" + words + r"))[^\r\n]{1,300}"),
                     priority=int(title["priority"]), weak=True,
                     source="a report's title claiming a failure, and a word of its family",
                     source_file="logkit/data/sglang.toml [generic.title]", needles=("# ",), generic=True, gate=r"(?m)^# ")


def _own_lines_row(fam: dict, cfg: dict, benign: str, hedges: str) -> tuple[Signature, ...]:
    """A family's own ``lines`` as one weak row ``<id>-line`` (``line_fatal``: read even after serving)."""
    own = "|".join(f"(?:{w})" for w in fam["lines"])
    # a hedge tempers its own sentence only: the evidence may follow the end of a sentence that held one ("if I
    # send X, the request hangs. Subsequent requests then all hang")
    sentence = r"(?:[^\r\n]{0,2000}?[.!?][ \t]+(?=(?-i:[A-Z])))?"
    # the gate spares a line with no own line the whole pattern (a millisecond on a long line of prose); only
    # for own lines that stay on one line, as the gate tries each line alone
    from .prefilter import reach

    gate = f"(?im)(?:{own})"
    return (Signature(id=f"{fam['id']}-line", status=fam["class"], label=fam.get("line_label", fam["label"]),
                      pattern=(r"(?im)(?:^|(?<=\r))" + benign + r"(?=" + sentence + r"(?:(?!" + hedges
                               + r")[^\r\n]){0,2000}?(?:" + own + r"))[^\r\n]{1,2000}"),
                      priority=int(fam.get("line_priority", cfg["line_priority"])), weak=True,
                      fatal=bool(fam.get("line_fatal", False)),
                      source="a line of its family's own evidence shapes",
                      source_file="logkit/data/sglang.toml [generic]", needles=tuple(fam["line_needles"]),
                      generic=True, gate=gate if reach(re.compile(gate.encode())) == 0 else None),)


#: A compiled row: regex, signature, needles as shapes (None: none), whether it reads only the lines
#: holding a needle, and its group of rows (:func:`.prefilter.needle_groups`).
_Row = tuple[re.Pattern[bytes], Signature, "tuple[bytes, ...] | None", bool, int]


@lru_cache(maxsize=1)
def compiled() -> tuple[tuple[_Row, ...], bytes, dict[bytes, tuple[int, ...]], tuple[_Row, ...]]:
    """The rows (:data:`_Row`), the ready line, each needle -> its groups, and the rows that read every line."""
    from .prefilter import needle_groups, needle_key

    cfg = data("sglang.toml")
    rows = []
    keys = []
    for s in load_signatures():
        if s.detector is not None:
            continue
        regex = re.compile(s.pattern.encode())
        needles = tuple(n.encode().translate(SHAPE) for n in s.needles) or None
        by_lines = needles is not None and not any(b"\n" in n for n in needles)
        rows.append((regex, s, needles, by_lines))
        keys.append(tuple(needle_key(n.encode()) for n in s.needles) if by_lines else ())
    groups, owners = needle_groups(keys)
    out = tuple((*r, g) for r, g in zip(rows, groups))
    return out, cfg["ready_pattern"].encode(), owners, tuple(r for r in out if not r[3])


@lru_cache(maxsize=1)
def server_regexes() -> tuple[re.Pattern[bytes], re.Pattern[bytes], bytes, tuple[bytes, ...]]:
    """An SGLang server's own lines' regex, its ``server_args`` regex and literal prefix, its line needles."""
    # the needles: ``server_needles`` and the ready line (empty: not known, every line is searched)
    from .prefilter import literal_prefix

    cfg = data("sglang.toml")
    pats = [p.encode() for p in cfg.get("server_patterns", [])] + [re.escape(cfg["ready_pattern"].encode())]
    args = re.compile(cfg["server_args_pattern"].encode())
    needles = tuple(n.encode() for n in cfg.get("server_needles", []))
    return (re.compile(b"|".join(b"(?:%s)" % p for p in pats)), args, literal_prefix(args),
            needles + (cfg["ready_pattern"].encode(),) if needles else ())


@lru_cache(maxsize=1)
def input_spans() -> tuple[tuple[bytes, ...], re.Pattern[bytes] | None]:
    """The literals echoed inputs (``input_spans``) start with, and one regex of every span (None: none)."""
    # a span runs from its start to the literal it ends before on its line (``until``) or to the line's end
    from .prefilter import literal_prefix

    literals, spans = [], []
    for span in data("sglang.toml").get("input_spans", []):
        start, until = span["start"].encode(), span.get("until", "").encode()
        literals.append(literal_prefix(re.compile(start)))
        spans.append(b"(?:%s)%s" % (start, b"(?:(?!%s)[^\n])*" % re.escape(until) if until else b"[^\n]*"))
    return tuple(literals), re.compile(b"|".join(spans)) if spans else None


@lru_cache(maxsize=None)
def lines_of(name: str) -> tuple[re.Pattern[bytes], tuple[bytes, ...]] | None:
    """``<name>_patterns`` (``startup``, ``engine_startup``) as one regex and ``<name>_needles``; None: none."""
    cfg = data("sglang.toml")
    pats = [p.encode() for p in cfg.get(f"{name}_patterns", [])]
    needles = tuple(n.encode() for n in cfg.get(f"{name}_needles", []))
    return (re.compile(b"|".join(b"(?:%s)" % p for p in pats), re.M), needles) if pats else None


@lru_cache(maxsize=1)
def extras() -> tuple[re.Pattern[bytes] | None, Signature | None, Any]:
    """The serving-evidence regex, the degenerate-output row and its scanner (None when absent)."""
    pats = [p.encode() for p in data("sglang.toml").get("serving_patterns", [])]
    serving = re.compile(b"|".join(b"(?:%s)" % p for p in pats)) if pats else None
    row = next((s for s in load_signatures() if s.detector == "degenerate"), None)
    scanner = None
    if row is not None:
        from .smoke import GarbageScanner

        scanner = GarbageScanner()
    return serving, row, scanner
