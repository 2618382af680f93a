"""Line shapes: the "nothing to see on these lines" test of the classifier and the redactor.

Both scan every chunk of a command's output for literal needles (the classifier's prefilter words,
the redactor's triggers and learned secrets), one ``bytes.__contains__`` pass per needle: dozens of
passes per chunk, although a healthy log repeats a few hundred kinds of line. A line's *shape* is
the line with ASCII letters lowercased and each digit made ``0`` (one ``bytes.translate``). A needle
in a line is, shaped the same way, in that line's shape; so a shape that holds no shaped needle
belongs only to lines that hold no needle (whatever their case or digits), and a chunk whose lines'
shapes are all known clean holds none: a translate, a split and a set lookup per line, in C.

Contract: needles never hold a line break (a needle that does makes :class:`CleanShapes` refuse to
vouch for anything); what is remembered is bounded (:data:`MAX_SHAPES` shapes of at most
:data:`MAX_SHAPE_BYTES`): a log of ever-new or very long lines only costs the speed-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["MAX_SHAPES", "MAX_SHAPE_BYTES", "SHAPE", "CleanShapes"]

#: ASCII letters lowercased, each digit made ``0``; every other byte kept.
SHAPE = bytes(c + 32 if 65 <= c <= 90 else 48 if 48 <= c <= 57 else c for c in range(256))
MAX_SHAPES = 8192
MAX_SHAPE_BYTES = 1024


class CleanShapes:
    """The line shapes known to hold none of ``needles`` (and to pass ``also``, when given)."""

    def __init__(self, needles: Iterable[bytes], also: Callable[[bytes], bool] | None = None) -> None:
        needles = tuple(needles)
        self.usable = not any(b"\n" in n for n in needles)
        self.needles = tuple(n.translate(SHAPE) for n in needles)
        self.also = also
        self.known: set[bytes] = set()

    def shapes(self, data: bytes) -> list[bytes]:
        """The shape of each line of ``data`` (split at ``\\n``; offsets match ``data``'s)."""
        return data.translate(SHAPE).split(b"\n")

    def all_clean(self, shapes: list[bytes]) -> bool:
        """Whether every one of ``shapes`` is known clean (nothing is learnt)."""
        return self.usable and self.known.issuperset(shapes)

    def learn(self, shapes: list[bytes]) -> bool:
        """Test the shapes not known yet, remember the clean ones; True when all of ``shapes`` are clean."""
        if not self.usable:
            return False
        known = self.known
        if len(known) > MAX_SHAPES:
            known.clear()
        clean = True
        for shape in set(shapes).difference(known):
            if any(n in shape for n in self.needles) or (self.also is not None and not self.also(shape)):
                clean = False
            elif len(shape) <= MAX_SHAPE_BYTES:
                known.add(shape)
            else:
                clean = False  # clean, but too long to remember: the caller reads it
        return clean
