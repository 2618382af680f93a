"""Line shapes: the "nothing to see on these lines" test of the classifier and the redactor.

Both look in every chunk of output for literal needles (the classifier's rows' needles, with their own
memory in :mod:`logkit.capture.sglang.prefilter`; the redactor's triggers and learned secrets,
:class:`CleanShapes`). A line's *shape* is the line with ASCII letters lowercased and each digit made
``0`` (one ``bytes.translate``); a needle in a line is, shaped, in its shape, so a chunk whose lines'
shapes are all known clean holds none: a translate, a split and a set lookup per line, in C.

Contract: needles never hold a line break (one that does makes :class:`CleanShapes` vouch for nothing);
at most :data:`MAX_SHAPES` shapes of at most :data:`MAX_SHAPE_BYTES` are remembered.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable

__all__ = ["CleanShapes", "MAX_SHAPES", "MAX_SHAPE_BYTES", "SHAPE"]

#: ASCII letters lowercased, each digit made ``0``; every other byte kept.
SHAPE = bytes(c + 32 if 65 <= c <= 90 else 48 if 48 <= c <= 57 else c for c in range(256))
MAX_SHAPES = 8192
#: at most 16 MiB: longer lines are read every time (a batch line is ~250 bytes, a request line can pass 1 KiB)
MAX_SHAPE_BYTES = 2048


class CleanShapes:
    """The line shapes known to hold none of ``needles`` (nor an offset ``marks(data)`` yields, when given)."""

    def __init__(self, needles: Iterable[bytes], marks: Callable[[bytes], Iterable[int]] | None = None) -> None:
        needles = tuple(needles)
        self.usable = not any(b"\n" in n for n in needles)
        self.needles = tuple(n.translate(SHAPE) for n in needles)
        self.marks = marks
        self.known: set[bytes] = set()
        self.unclean: set[bytes] = set()  # shapes holding a needle or a mark (not tested again)

    def shapes(self, data: bytes) -> list[bytes]:
        """The shape of each line of ``data`` (split at ``\\n``; offsets match ``data``'s)."""
        return data.translate(SHAPE).split(b"\n")

    def all_clean(self, shapes: list[bytes]) -> bool:
        """Whether every one of ``shapes`` is known clean (nothing is learnt)."""
        return self.usable and self.known.issuperset(shapes)

    def learn(self, shapes: list[bytes]) -> bool:
        """Test the new shapes together (one search per needle); True when all of ``shapes`` are clean."""
        if not self.usable:
            return False
        known, seen_unclean = self.known, self.unclean
        distinct = set(shapes)
        new = list(distinct.difference(known).difference(seen_unclean))
        if not new:
            return distinct.isdisjoint(seen_unclean)
        if 2 * len(new) > len(shapes):
            return False  # mostly lines never seen (a traceback, a start-up): read them all, learn later
        if len(known) + len(seen_unclean) + len(new) > MAX_SHAPES:
            known.clear()
            seen_unclean.clear()
        joined = b"\n".join(new)
        starts = list(itertools.accumulate((len(shape) + 1 for shape in new), initial=0))
        unclean = {bisect.bisect_right(starts, at) - 1 for n in self.needles for at in _finds(joined, n)}
        if self.marks is not None:
            unclean |= {bisect.bisect_right(starts, at) - 1 for at in self.marks(joined)}
        clean = not unclean and distinct.isdisjoint(seen_unclean)
        for i, shape in enumerate(new):
            if len(shape) <= MAX_SHAPE_BYTES:
                (seen_unclean if i in unclean else known).add(shape)
            elif i not in unclean:
                clean = False  # clean, but too long to remember: the caller reads it
        return clean


def _finds(data: bytes, needle: bytes) -> Iterable[int]:
    at = data.find(needle)
    while at >= 0:
        yield at
        at = data.find(needle, at + 1)
