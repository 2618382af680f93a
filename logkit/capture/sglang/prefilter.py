"""Which lines of a chunk each signature row and the garbage scan read: the classifier's prefilter.

Contract:

* A line's *shape* (:data:`logkit.capture.shapes.SHAPE`: ASCII letters lowercased, each digit made
  ``0``) holds, shaped the same way, every literal the line holds. A row's ``needles``
  (signatures.toml: literals of which every match contains one, compared as shapes, so a needle
  may name a shape: ``e0000 00:00:00.``; one holding a digit other than 0 names its digits,
  :func:`needle_key`) are looked for in the shapes: a row reads only the lines whose shape holds
  one of its needles (and, for a needle naming digits, whose bytes there are that needle). The
  ready line's, the server's args line's and the start-up lines' literals are needles of no row
  (:data:`OWN_LINES`): a chunk none of whose lines holds one holds none of them. An SGLang server's
  own lines are looked for only on the lines holding one of ``server_needles`` (:data:`SERVER_LINES`),
  until the first is found (:meth:`LineKinds.forget`). A request's input a server's log echoes is cut
  out before any row reads the chunk (:func:`without_inputs`): it is evidence of nothing. A chunk is
  searched for one only when a line not known clean holds the shape of an input's literal
  (:data:`INPUT_LINES`), or when the chunk before it held one. The garbage scan
  reads only the lines whose shape holds one of its candidate runs (a run stays a run under the
  mapping) and may be garbage (``judge``: once per kind, when it comes back), and those holding a
  run of one repeated digit, which ``0`` hides (:func:`digit_runs`, in the raw bytes).
* What a shape needs is learnt once per classifier (:class:`LineKinds`): the rows whose needles it
  holds and whether it holds a candidate run, for all the new shapes of a chunk together (one
  ``find`` loop per needle, skipped when the chunk lacks one of its bytes, and one candidate search
  per shape that holds one, over them joined). A chunk whose shapes are all known clean costs a
  translate, a split and a set lookup per line, in C; any other chunk, one more walk of its lines'
  shapes picking out the kinds not known clean (a look-up each, driven in C: a search per kind
  would read the whole chunk once per kind). At most :data:`~logkit.capture.shapes.MAX_SHAPES`
  shapes of at most :data:`~logkit.capture.shapes.MAX_SHAPE_BYTES` are kept; a longer line is
  read every time.
* A row whose regex can match no line break and tests for no end of the text (:func:`reach` is 0,
  read from the parsed regex) reads exactly its lines, searched in place (``finditer(chunk, lo,
  hi)``: its lookbehinds see the chunk): the matches a scan of the whole chunk finds, since each
  holds a needle and lies on one line. A row that can match across lines reads :data:`CONTEXT`
  lines either side of each of its lines; a row without needles (or with one holding a line
  break) reads the whole chunk.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from ..shapes import MAX_SHAPE_BYTES, MAX_SHAPES, SHAPE

__all__ = ["CONTEXT", "INPUT_LINES", "LineKinds", "NOTHING", "OWN_LINES", "Reading", "SERVER_LINES", "digit_runs",
           "line_starts", "literal_prefix", "needle_groups", "needle_key", "reach", "without_inputs"]

#: Lines read either side of a needle's line by a row whose matches can span lines.
CONTEXT = 2
#: The group of the needles that are no row's (the ready line, the server's args line: see
#: :func:`.outcomes._line_kinds`).
OWN_LINES = -1
#: The group of the needles of an SGLang server's own lines (``server_needles``): the lines searched for one.
SERVER_LINES = -2
#: The group of the literals a request's echoed input starts with (``input_spans``): needles of no row, so a
#: line holding one is never known clean.
INPUT_LINES = -3

_ALL_BYTES = bytes(range(256))

#: Where a kind of line holds the shape of needles that name their digits (:func:`needle_key`): the
#: offset in the line, the needles' length, each needle -> its groups. A line of that kind holds one
#: when its bytes there, lowercased, are that needle.
Check = tuple[int, int, dict[bytes, tuple[int, ...]]]
#: What a kind of line needs: the groups of rows (rows listing the same needles) whose needles its
#: shape holds, whether the garbage scan reads it (it holds a candidate run and may be garbage; None:
#: it holds one, not judged yet), and the needles naming digits that each of its lines may hold.
Kind = tuple[tuple[int, ...], "bool | None", tuple[Check, ...]]
#: A run of lines to read: (its first byte, its end byte, its first line's number).
Run = tuple[int, int, int]


def line_starts(lines: list[bytes]) -> list[int]:
    """Where each of ``lines`` starts in them joined by ``\n``, and one past the last: line k spans
    ``[starts[k], starts[k + 1] - 1)`` (its newline excluded)."""
    ends = itertools.accumulate(map(len, lines), initial=0)  # the lengths summed, then one newline a line: in C
    return list(map(operator.add, ends, itertools.count()))


def without_inputs(chunk: bytes, spans: re.Pattern[bytes] | None) -> bytes:
    """``chunk`` with each match of ``spans`` (:func:`.table.input_spans`: a request's echoed input, from its
    start to the literal it ends before on its line or to the line's end) cut out, in one pass in C: each
    line keeps its place. Nothing cut: ``chunk`` itself."""
    return chunk if spans is None else spans.sub(b"", chunk)


def needle_key(literal: bytes) -> bytes:
    """A needle as the prefilter compares it: lowercased. One whose digits are all ``0`` is its own
    shape (each ``0`` any digit: ``e0000 00:00:00.`` names glog's E line); one holding another digit
    names its digits: a line holds it where its shape holds the needle's and its bytes there, lowercased,
    are the needle (``running: 1``: one request or more, not ``running: 0``)."""
    return literal.lower()


def digit_runs(chunk: bytes, norm: bytes) -> list[int]:
    """Offsets in ``chunk`` of runs of one repeated digit (``111111``, each start of six), which a shape
    hides. Such a run lies in a number of six digits or more, so a chunk whose shapes ``norm`` hold no
    ``000000`` holds none (a C search); any other is compared with itself shifted by one byte, as an
    array (numpy, imported then: every pass in C, none per number)."""
    if b"000000" not in norm:
        return []
    import numpy as np

    a = np.frombuffer(chunk, np.uint8)
    same = a[1:] == a[:-1]  # same[i]: byte i+1 repeats byte i
    two = same[:-1] & same[1:]  # bytes i..i+2 are one byte
    run = two[:-3] & two[2:-1] & same[4:]  # bytes i..i+5 are one byte
    at = np.flatnonzero(run)
    first = a[at]
    return at[(first >= 0x31) & (first <= 0x39)].tolist()  # ... and it is a digit 1-9


class LineKinds:
    """A classifier's memory of line shapes: the clean ones (no row's needle, no candidate run), and
    what each other one needs (:data:`Kind`)."""

    def __init__(self, needles: dict[bytes, tuple[int, ...]], marks: Callable[[bytes, int], int] | None,
                 judge: Callable[[bytes], bool] | None = None) -> None:
        """``marks(data, pos)``: the offset of the first garbage candidate run in ``data`` at or after
        ``pos`` (-1: none; a run never spans a line break); ``judge(shape)``: whether a line of that
        shape holding a candidate may be garbage (False: none is, whatever its case and digits)."""
        #: each needle (:func:`needle_key`) -> the groups of rows that list it
        self.needles = needles
        #: each needle with its shape (what is looked for in the shapes) and its groups
        self._looked_for = [(needle, needle.translate(SHAPE), owners) for needle, owners in needles.items()]
        self.marks = marks
        self.judge = judge
        self.clean: set[bytes] = set()
        self.kinds: dict[bytes, Kind] = {}

    def forget(self, group: int) -> None:
        """No line is read for ``group`` from now on (the server's own lines once one was found): its needles
        are looked for no more, and a kind of line that only it read is clean."""
        self.needles = {n: kept for n, owners in self.needles.items() for kept in [tuple(g for g in owners if g != group)]
                        if kept}
        self._looked_for = [(needle, needle.translate(SHAPE), owners) for needle, owners in self.needles.items()]
        for shape, (groups, garbage, checks) in list(self.kinds.items()):
            if group not in groups and not any(group in gs for _o, _n, by in checks for gs in by.values()):
                continue
            groups = tuple(g for g in groups if g != group)
            checks = tuple((o, n, by) for o, n, by0 in checks
                           for by in [{k: gs for k, v in by0.items() for gs in [tuple(g for g in v if g != group)] if gs}] if by)
            if not groups and garbage is False and not checks:
                del self.kinds[shape]
                self.clean.add(shape)
            else:
                self.kinds[shape] = (groups, garbage, checks)

    def learn(self, new: list[bytes]) -> dict[bytes, Kind]:
        """What each of the ``new`` shapes needs (the clean ones left out), remembered while there is room."""
        joined = b"\n".join(new)
        starts = line_starts(new)
        groups: dict[int, set[int]] = {}
        checks: dict[int, dict[tuple[int, int], dict[bytes, tuple[int, ...]]]] = {}
        absent = set(_ALL_BYTES.translate(None, joined))  # a needle with one of these is in no line (a
        for needle, shape, owners in self._looked_for:  # megabyte of one byte repeated costs no search)
            if absent and not absent.isdisjoint(shape):
                continue
            at = joined.find(shape)
            while at >= 0:
                i = bisect.bisect_right(starts, at) - 1
                if shape == needle:
                    groups.setdefault(i, set()).update(owners)
                else:  # it names digits: each line of this shape is looked at there
                    checks.setdefault(i, {}).setdefault((at - starts[i], len(needle)), {})[needle] = owners
                at = joined.find(shape, at + 1)
        marked = set()
        at = -1 if self.marks is None else self.marks(joined, 0)
        while at >= 0:  # one search per shape that holds a run (a megabyte of one byte is one hit)
            i = bisect.bisect_right(starts, at) - 1
            marked.add(i)
            at = self.marks(joined, starts[i + 1])
        if len(self.clean) + len(self.kinds) + len(new) > MAX_SHAPES:
            self.clean.clear()
            self.kinds.clear()
        out: dict[bytes, Kind] = {}
        for i, shape in enumerate(new):
            if i in groups or i in marked or i in checks:
                scanned = None if i in marked and self.judge else i in marked
                out[shape] = kind = (tuple(sorted(groups.get(i, ()))), scanned,
                                     tuple((at, n, by) for (at, n), by in checks[i].items()) if i in checks else ())
                if len(shape) <= MAX_SHAPE_BYTES:
                    self.kinds[shape] = kind
            elif len(shape) <= MAX_SHAPE_BYTES:
                self.clean.add(shape)
        return out

    def read(self, chunk: bytes, norm: bytes, shapes: list[bytes], first_line: int, *, scan: bool = True) -> Reading:
        """The lines of ``chunk`` (its first line numbered ``first_line``) that each group of rows and
        the garbage scan read; ``norm`` is the chunk's shape, ``shapes`` its lines'. ``scan``: the
        garbage scan reads this chunk (else no kind is judged: every candidate line is given). A kind
        holding a candidate run is judged when it comes back in a later chunk: a line printed once
        costs one scan, not a judgement too."""
        clean = self.clean
        all_clean = clean.issuperset(shapes)
        digits = digit_runs(chunk, norm)
        if all_clean:
            return NOTHING if not digits else Reading(len(chunk), shapes, first_line, {}, _numbers(norm, digits), clean=True)
        kinds = self.kinds
        distinct = set(shapes).difference(clean)
        kind_of = {shape: kinds[shape] for shape in distinct if shape in kinds}
        new = [shape for shape in distinct if shape not in kinds]
        if scan and self.judge is not None:  # a kind seen again (a line printed once is only scanned)
            self._judge(kind_of)
        if new:  # learnt before the memory may be cleared to make room
            kind_of.update(self.learn(new))
        by_shape: dict[bytes, list[int]] = {}  # each kind of line not clean -> its lines' numbers from 0
        if kind_of:  # the lines not clean picked out in C (one walk: a search per kind reads the chunk once each)
            for i in itertools.compress(range(len(shapes)), map(kind_of.__contains__, shapes)):
                by_shape.setdefault(shapes[i], []).append(i)
        garbage = {i for shape, lines in by_shape.items() if kind_of[shape][1] is not False for i in lines}
        # each kind (and the needles naming digits found on its lines) -> its groups, lines
        read: dict[object, tuple[tuple[int, ...], list[int]]] = {
            shape: (kind[0], lines) for shape, lines in by_shape.items()
            for kind in [kind_of[shape]] if kind[0] and not kind[2]}
        checked = [shape for shape in by_shape if kind_of[shape][2]]
        starts = line_starts(shapes) if checked else []  # each line's start in the chunk
        for shape in checked:
            groups, _garbage, checks = kind_of[shape]
            for i in by_shape[shape]:
                at = starts[i]
                found = {g for off, n, by in checks for key in [chunk[at + off:at + off + n].lower()] if key in by
                         for g in by[key]}
                got = tuple(sorted(found.union(groups))) if found else groups
                if got:
                    read.setdefault((shape, got), (got, []))[1].append(i)
        return Reading(len(chunk), shapes, first_line, read, sorted(garbage.union(_numbers(norm, digits))), clean=not read)

    def _judge(self, kind_of: dict[bytes, Kind]) -> None:
        """Judge once each kind of ``kind_of`` that holds a candidate run not judged yet (``judge``, on
        the shape: whatever a line of it holds in case and digits), remembered: a kind that is no
        row's and cannot be garbage is clean from now on, and leaves ``kind_of``."""
        for shape, (groups, garbage, checks) in list(kind_of.items()):
            if garbage is not None:
                continue
            kind = (groups, self.judge(shape), checks)  # type: ignore[misc]
            remembered = shape in self.kinds
            if kind == ((), False, ()):
                del kind_of[shape]
                if remembered:
                    del self.kinds[shape]
                    self.clean.add(shape)
            else:
                kind_of[shape] = kind
                if remembered:
                    self.kinds[shape] = kind


def _numbers(norm: bytes, offsets: list[int]) -> list[int]:
    """The numbers (from 0) of the lines holding ``offsets`` of ``norm``, in order, each once."""
    out = []
    line = prev = 0
    for start in sorted({norm.rfind(b"\n", 0, at) + 1 for at in offsets}):
        line += norm.count(b"\n", prev, start)
        prev = start
        out.append(line)
    return out


class Reading:
    """The lines of one chunk that each group of rows and the garbage scan read, as runs of lines."""

    def __init__(self, size: int, shapes: list[bytes], first_line: int,
                 lines: dict[object, tuple[tuple[int, ...], list[int]]], garbage: list[int], *, clean: bool = False) -> None:
        #: every line of the chunk is known clean (it holds no needle; the garbage scan may still read some)
        self.clean = clean
        self.size = size
        self.shapes = shapes
        self.first_line = first_line
        #: each kind of line's groups and lines (numbers from 0)
        self.lines = lines
        self.groups: dict[int, list[object]] = {}
        for shape, (groups, _lines) in lines.items():
            for g in groups:
                self.groups.setdefault(g, []).append(shape)
        self.garbage = garbage
        self._runs: dict[tuple[int, int, str | None], list[Run]] = {}
        self._starts: list[int] | None = None

    def runs(self, group: int, regex: re.Pattern[bytes], gate: str | None = None, chunk: bytes = b"") -> list[Run]:
        """The runs a group of rows reads with ``regex``: its lines, each with the lines either side
        the regex may reach (:func:`reach`); with a ``gate`` (a row's :attr:`~.table.Signature.gate`),
        only the lines of ``chunk`` some part of which it matches, tried once for every row sharing it."""
        kinds = self.groups.get(group)
        if not kinds:
            return []
        context = reach(regex)
        got = self._runs.get((group, context, gate))
        if got is None:
            if len(kinds) == 1:
                lines = self.lines[kinds[0]][1]
            else:
                lines = sorted(itertools.chain.from_iterable(self.lines[k][1] for k in kinds))
            if gate is not None:
                search = _gate(gate).search
                starts = self._line_starts()
                lines = [i for i in lines if search(chunk, starts[i], starts[i + 1] - 1)]
            got = self._runs[(group, context, gate)] = self._spans(lines, context) if lines else []
        return got

    def garbage_runs(self) -> list[Run]:
        """The runs the garbage scan reads."""
        return self._spans(self.garbage, 0) if self.garbage else []

    def _line_starts(self) -> list[int]:
        """Each line's start in the chunk (:func:`line_starts`), made once."""
        if self._starts is None:
            self._starts = line_starts(self.shapes)
        return self._starts

    def _spans(self, lines: list[int], context: int) -> list[Run]:
        merged: list[list[int]] = []
        for i in lines:
            if merged and i - context <= merged[-1][1] + 1:
                merged[-1][1] = i + context
            else:
                merged.append([i - context, i + context])
        starts = self._line_starts()
        last = len(self.shapes) - 1
        out = []
        for a, b in merged:
            a, b = max(a, 0), min(b, last)
            out.append((starts[a], min(self.size, starts[b + 1]), self.first_line + a))
        return out


#: The reading of a chunk whose lines are all known clean.
NOTHING = Reading(0, [], 1, {}, [], clean=True)


try:  # the parser `re` itself uses (CPython 3.11+); without it every row counts as spanning lines
    from re import _constants as _c
    from re import _parser as _p
except ImportError:  # pragma: no cover
    _c = _p = None  # type: ignore[assignment]


@lru_cache(maxsize=None)
def _gate(pattern: str) -> re.Pattern[bytes]:
    return re.compile(pattern.encode())


@lru_cache(maxsize=None)
def reach(regex: re.Pattern[bytes]) -> int:
    """The lines a row reads either side of a line holding one of its needles: the most line breaks a
    match of ``regex`` (its lookarounds included) can cross, 0 when every match lies on one line;
    :data:`CONTEXT` when that is more, unbounded or unknown, or when it tests the end of the text or
    can match nothing."""
    if _p is None:
        return CONTEXT
    try:
        parsed = _p.parse(regex.pattern, regex.flags)
        refs: list[bool] = []
        breaks = _breaks(parsed, parsed.state.flags, refs)
    except (ValueError, TypeError, AttributeError):  # an op this check does not know: the safe answer
        return CONTEXT
    if parsed.getwidth()[0] == 0 or breaks > CONTEXT or breaks and refs:  # a group's text may hold breaks
        return CONTEXT
    return breaks


def literal_prefix(regex: re.Pattern[bytes]) -> bytes:
    """The literal every match of ``regex`` starts with (case-sensitive; empty when none): a text
    without it needs no search."""
    if _p is None or regex.flags & re.IGNORECASE:
        return b""
    out = bytearray()
    for op, av in _p.parse(regex.pattern, regex.flags):
        if op is not _c.LITERAL:
            break
        out.append(av)  # type: ignore[arg-type]
    return bytes(out)


def _class_holds_newline(items: list[tuple[object, object]]) -> bool:
    negate = hit = False
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            hit |= av == 10
        elif op is _c.RANGE:
            hit |= av[0] <= 10 <= av[1]  # type: ignore[index]
        elif op is _c.CATEGORY:
            hit |= av in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_DIGIT, _c.CATEGORY_NOT_WORD, _c.CATEGORY_LINEBREAK)
        else:
            raise ValueError(op)
    return hit != negate


#: More line breaks than any count: a repeat of what may be one, an end of the text tested.
_UNBOUNDED = 1 << 30


def _breaks(seq: Iterable[tuple[object, object]], flags: int, refs: list[bool]) -> int:
    """The most line breaks the parsed ``seq`` can match or look at (:data:`_UNBOUNDED`: no bound, or
    it tests an end of the text: ``$`` without MULTILINE is also before a last newline, ``\\Z``); ``^``
    and ``\\A`` see the real start even when a search starts later. A back-reference is noted in
    ``refs`` (the group's text may hold breaks)."""
    total = 0
    for op, av in seq:
        if op is _c.LITERAL:
            n = int(av == 10)
        elif op is _c.NOT_LITERAL:
            n = int(av != 10)
        elif op is _c.ANY:
            n = int(bool(flags & _c.SRE_FLAG_DOTALL))
        elif op is _c.IN:
            n = int(_class_holds_newline(av))  # type: ignore[arg-type]
        elif op is _c.AT:
            n = _UNBOUNDED if av is _c.AT_END_STRING or (av is _c.AT_END and not flags & _c.SRE_FLAG_MULTILINE) else 0
        elif op is _c.SUBPATTERN:
            _group, add, remove, sub = av  # type: ignore[misc]
            n = _breaks(sub, (flags | add) & ~remove, refs)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            _lo, hi, sub = av  # type: ignore[misc]
            n = _breaks(sub, flags, refs)
            n = 0 if n == 0 else _UNBOUNDED if hi == _c.MAXREPEAT else n * hi
        elif op is _c.BRANCH:
            n = max(_breaks(b, flags, refs) for b in av[1])  # type: ignore[index]
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            n = _breaks(av[1], flags, refs)  # type: ignore[index]
        elif op is _c.ATOMIC_GROUP:
            n = _breaks(av, flags, refs)  # type: ignore[arg-type]
        elif op is _c.GROUPREF:
            refs.append(True)
            n = 0
        elif op is _c.GROUPREF_EXISTS:
            n = max(_breaks(b, flags, refs) for b in av[1:] if b is not None)  # type: ignore[index]
        else:
            raise ValueError(op)
        total = min(_UNBOUNDED, total + n)
    return total


def needle_groups(rows: list[tuple[bytes, ...]]) -> tuple[list[int], dict[bytes, tuple[int, ...]]]:
    """Each row's group (rows with the same needles read the same lines) and each needle -> the
    groups listing it, from each row's needles (:func:`needle_key`)."""
    groups: dict[frozenset[bytes], int] = {}
    of_row = [groups.setdefault(frozenset(needles), len(groups)) for needles in rows]
    owners: dict[bytes, set[int]] = {}
    for shapes, g in groups.items():
        for n in shapes:
            owners.setdefault(n, set()).add(g)
    return of_row, {n: tuple(sorted(gs)) for n, gs in owners.items()}
