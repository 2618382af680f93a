"""Which lines of a chunk each signature row and the garbage scan read: the classifier's prefilter.

Contract:

* A line's *shape* (:data:`logkit.capture.shapes.SHAPE`: ASCII letters lowercased, each digit ``0``)
  holds, shaped the same way, every literal the line holds. A row reads only the lines whose shape
  holds one of its ``needles`` (a needle with a digit other than 0 names its digits: :func:`needle_key`).
  Own lines' literals (ready, args, start-up: :data:`OWN_LINES`), an SGLang server's ``server_needles``
  until its first line is found (:data:`SERVER_LINES`, :meth:`LineKinds.forget`) and echoed inputs'
  literals (:data:`INPUT_LINES`, cut out by :func:`without_inputs`) are needles of no row. The garbage
  scan reads the lines holding a candidate run that may be garbage (``judge``, once per kind when it
  comes back) and those holding a run of one repeated digit (:func:`digit_runs`).
* What a shape needs is learnt once per classifier (:class:`LineKinds`), for a chunk's new shapes
  together; a chunk of known clean shapes costs a translate, a split and a set lookup per line, in C.
  At most :data:`~logkit.capture.shapes.MAX_SHAPES` shapes of at most ``MAX_SHAPE_BYTES`` are kept.
* A row whose regex can match no line break nor test the end of the text (:func:`reach` is 0) reads
  exactly its lines, in place (its lookbehinds see the chunk); one that can reads :data:`CONTEXT` lines
  either side; one without needles reads the whole chunk.
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
#: The groups of needles that are no row's: own lines (ready, args, start-up), an SGLang server's lines, and
#: the literals a request's echoed input starts with (a line holding one is never known clean).
OWN_LINES, SERVER_LINES, INPUT_LINES = -1, -2, -3

_ALL_BYTES = bytes(range(256))

#: Where a kind of line holds the shape of needles naming their digits: offset, length, needle -> groups.
Check = tuple[int, int, dict[bytes, tuple[int, ...]]]
#: What a kind of line needs: the groups whose needles its shape holds, whether the garbage scan reads it
#: (None: it holds a candidate run, not judged yet), and its checks of needles naming digits.
Kind = tuple[tuple[int, ...], "bool | None", tuple[Check, ...]]
#: A run of lines to read: (its first byte, its end byte, its first line's number).
Run = tuple[int, int, int]


def line_starts(lines: list[bytes]) -> list[int]:
    """Where each of ``lines`` starts in them joined by ``\n``, and one past the last."""
    ends = itertools.accumulate(map(len, lines), initial=0)  # the lengths summed, then one newline a line: in C
    return list(map(operator.add, ends, itertools.count()))


def without_inputs(chunk: bytes, spans: re.Pattern[bytes] | None) -> bytes:
    """``chunk`` with each echoed input (:func:`.table.input_spans`) cut out; ``chunk`` itself when none is."""
    return chunk if spans is None else spans.sub(b"", chunk)


def needle_key(literal: bytes) -> bytes:
    """A needle as compared: lowercased (all-``0`` digits stand for any; another digit names its digits)."""
    return literal.lower()


def digit_runs(chunk: bytes, norm: bytes) -> list[int]:
    """Offsets in ``chunk`` of runs of six of one digit 1-9 (which a shape hides), found with numpy."""
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
        """``marks(data, pos)``: the next candidate run's offset or -1; ``judge(shape)``: may it be garbage."""
        self.needles = needles  # each needle (needle_key) -> the groups of rows that list it
        self._looked_for = [(needle, needle.translate(SHAPE), owners) for needle, owners in needles.items()]
        self.marks = marks
        self.judge = judge
        self.clean: set[bytes] = set()
        self.kinds: dict[bytes, Kind] = {}

    def forget(self, group: int) -> None:
        """No line is read for ``group`` from now on (the server's own lines once one was found)."""
        self.needles = {n: kept for n, owners in self.needles.items() if (kept := tuple(g for g in owners if g != group))}
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
        """The lines of ``chunk`` that each group of rows and the garbage scan (``scan``) read."""
        # a kind holding a candidate run is judged when it comes back: a line printed once costs one scan
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
        """Judge each kind holding a candidate run not judged yet; one no row's and no garbage is clean."""
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
        self.clean = clean  # every line holds no needle (the garbage scan may still read some)
        self.size = size
        self.shapes = shapes
        self.first_line = first_line
        self.lines = lines  # each kind of line's groups and lines (numbers from 0)
        self.groups: dict[int, list[object]] = {}
        for shape, (groups, _lines) in lines.items():
            for g in groups:
                self.groups.setdefault(g, []).append(shape)
        self.garbage = garbage
        self._runs: dict[tuple[int, int, str | None], list[Run]] = {}
        self._starts: list[int] | None = None

    def runs(self, group: int, regex: re.Pattern[bytes], gate: str | None = None, chunk: bytes = b"") -> list[Run]:
        """The runs a group reads with ``regex`` (its lines and :func:`reach` either side; a ``gate`` filters)."""
        kinds = self.groups.get(group)
        if not kinds:
            return []
        context = reach(regex)
        got = self._runs.get((group, context, gate))
        if got is None:
            lines = (self.lines[kinds[0]][1] if len(kinds) == 1
                     else sorted(itertools.chain.from_iterable(self.lines[k][1] for k in kinds)))
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
    """The most line breaks a match of ``regex`` can cross (lookarounds too), at most :data:`CONTEXT`."""
    # CONTEXT also when unbounded or unknown, when it tests the end of the text or can match nothing
    if _p is None:
        return CONTEXT
    try:
        parsed = _p.parse(regex.pattern, regex.flags)
        refs: list[bool] = []
        breaks = _breaks(parsed, parsed.state.flags, refs)
    except (ValueError, TypeError, AttributeError):  # an op this check does not know: the safe answer
        return CONTEXT
    # refs: a back-reference's group may hold breaks
    return CONTEXT if parsed.getwidth()[0] == 0 or breaks > CONTEXT or breaks and refs else breaks


def literal_prefix(regex: re.Pattern[bytes]) -> bytes:
    """The literal every match of ``regex`` starts with (case-sensitive; empty when none)."""
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
    """The most line breaks the parsed ``seq`` can match or look at; a back-reference is noted in ``refs``."""
    # _UNBOUNDED: no bound, or an end of the text tested (``$`` without MULTILINE is also before a last newline)
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
    """Each row's group (rows with the same needles) and each needle -> the groups listing it."""
    groups: dict[frozenset[bytes], int] = {}
    of_row = [groups.setdefault(frozenset(needles), len(groups)) for needles in rows]
    owners: dict[bytes, set[int]] = {}
    for shapes, g in groups.items():
        for n in shapes:
            owners.setdefault(n, set()).add(g)
    return of_row, {n: tuple(sorted(gs)) for n, gs in owners.items()}
