"""The redaction's prefilter engines: which triggers and learned literals occur in a chunk.

Contract: :func:`prefilter_for` returns the first engine of :data:`ENGINES` that is installed and
takes every literal: Hyperscan, else RE2 (both optional: ``logkit[fast]``), else the standard
library (one ``bytes.find`` per trigger); ``LOGKIT_REDACT_ENGINE=stdlib|re2|hyperscan`` starts the
search at that engine. Each answers ``any`` (is there a trigger), ``hits`` (where, up to a limit),
``present`` (which); all three give the same answers. Hyperscan's also offers ``finder`` and
``matcher`` (one scan for many literals or regexes), which the redactor's detectors use; the
others have None there.

Imports only the standard library (Hyperscan or RE2 when they are there).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ENGINES", "ENGINE_ENV", "available_engines", "prefilter_for"]

ENGINES = ("hyperscan", "re2", "stdlib")
#: Environment variable that forces a prefilter engine (``stdlib`` tests the path without the extra).
ENGINE_ENV = "LOGKIT_REDACT_ENGINE"


class _HyperscanFilter:
    """Every trigger and literal in one Hyperscan database: about 4x faster than RE2's DFA here."""

    name = "hyperscan"

    def __init__(self, hyperscan: Any, triggers: tuple[bytes, ...], literals: tuple[bytes, ...]) -> None:
        import threading

        self._hs = hyperscan
        patterns = [re.escape(t) for t in triggers] + [re.escape(v) for v in literals]
        flags = [hyperscan.HS_FLAG_CASELESS] * len(triggers) + [0] * len(literals)
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=patterns, ids=list(range(len(patterns))), flags=flags)
        # the same, each pattern reported once: which triggers a dense chunk holds, in <= N calls
        self._once = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._once.compile(expressions=patterns, ids=list(range(len(patterns))),
                           flags=[f | hyperscan.HS_FLAG_SINGLEMATCH for f in flags])
        self._lens = [len(t) for t in (*triggers, *literals)]
        self._lock = threading.Lock()  # one scratch space: one scan at a time

    @staticmethod
    def _stop(*_args: Any) -> bool:
        return True  # the first match answers the question

    def any(self, data: bytes) -> bool:
        if not data:
            return False
        with self._lock:
            try:
                self._db.scan(data, match_event_handler=self._stop)
            except self._hs.ScanTerminated:
                return True
        return False

    def hits(self, data: bytes, limit: int) -> list[tuple[int, int]] | None:
        found: list[tuple[int, int]] = []
        add = found.append
        lens = self._lens

        def on_match(index: int, _start: int, end: int, _flags: int, _ctx: Any) -> bool:
            add((end - lens[index], index))  # Hyperscan reports where a match ends
            return len(found) > limit

        with self._lock:
            try:
                self._db.scan(data, match_event_handler=on_match)
            except self._hs.ScanTerminated:
                return None
        return found

    def present(self, data: bytes) -> set[int]:
        found: set[int] = set()

        def on_match(index: int, *_args: Any) -> None:
            found.add(index)

        with self._lock:
            self._once.scan(data, match_event_handler=on_match)
        return found

    def matcher(self, expressions: list[tuple[bytes, bool]]) -> tuple[Any, list[int]]:
        """One database of regexes (each with whether it is caseless), each reported once: a
        function telling which of them match somewhere in a text, and the indices it took
        (a regex Hyperscan cannot compile is left out, for the caller to run itself)."""
        import threading

        hs = self._hs
        kept: list[int] = []
        for n, (source, caseless) in enumerate(expressions):
            try:
                probe = hs.Database(mode=hs.HS_MODE_BLOCK)
                probe.compile(expressions=[source], ids=[0], flags=[hs.HS_FLAG_CASELESS if caseless else 0])
                kept.append(n)
            except Exception:  # noqa: BLE001 - a construct Hyperscan does not take
                continue
        db = hs.Database(mode=hs.HS_MODE_BLOCK)
        db.compile(expressions=[expressions[n][0] for n in kept], ids=kept,
                   flags=[(hs.HS_FLAG_CASELESS if expressions[n][1] else 0) | hs.HS_FLAG_SINGLEMATCH for n in kept])
        lock = threading.Lock()

        def match(data: bytes) -> set[int]:
            found: set[int] = set()
            with lock:
                db.scan(data, match_event_handler=lambda index, *_a: found.add(index))
            return found

        return match, kept

    def finder(self, needles: tuple[bytes, ...]) -> Any:
        """A function telling which of ``needles`` (any case) occur in a text: one scan."""
        import threading

        db = self._hs.Database(mode=self._hs.HS_MODE_BLOCK)
        db.compile(expressions=[re.escape(n) for n in needles], ids=list(range(len(needles))),
                   flags=[self._hs.HS_FLAG_CASELESS | self._hs.HS_FLAG_SINGLEMATCH] * len(needles))
        lock = threading.Lock()

        def find(data: bytes) -> set[int]:
            found: set[int] = set()
            with lock:
                db.scan(data, match_event_handler=lambda index, *_a: found.add(index))
            return found

        return find


class _Re2Filter:
    """Every trigger and literal as one RE2 alternation (one DFA pass; releases the GIL)."""

    name = "re2"
    finder = None
    matcher = None

    def __init__(self, re2: Any, triggers: tuple[bytes, ...], literals: tuple[bytes, ...]) -> None:
        alternatives = [b"(?i:" + b"|".join(b"(" + re.escape(t) + b")" for t in triggers) + b")"]
        alternatives += [b"(" + re.escape(v) + b")" for v in literals]
        self._re = re2.compile(b"|".join(alternatives))
        self._stdlib = _StdlibFilter(triggers, literals)

    def any(self, data: bytes) -> bool:
        return self._re.search(data) is not None

    def hits(self, data: bytes, limit: int) -> list[tuple[int, int]] | None:
        # one group per trigger says which; a trigger overlapping an earlier one (`key=` in
        # `api_key=`) is not reported, but the earlier one's patterns cover that text
        found = []
        for m in self._re.finditer(data):
            found.append((m.start(), m.lastindex - 1))
            if len(found) > limit:
                return None
        return found

    def present(self, data: bytes) -> set[int]:
        return self._stdlib.present(data)


class _StdlibFilter:
    """One substring search per trigger on the lowered chunk (``bytes.find`` is a C loop)."""

    name = "stdlib"
    finder = None
    matcher = None

    def __init__(self, triggers: tuple[bytes, ...], literals: tuple[bytes, ...]) -> None:
        self._triggers = triggers
        self._literals = literals

    def any(self, data: bytes) -> bool:
        low = data.lower()
        return any(t in low for t in self._triggers) or any(v in data for v in self._literals)

    def hits(self, data: bytes, limit: int) -> list[tuple[int, int]] | None:
        found: list[tuple[int, int]] = []
        low = data.lower()
        index = 0
        for hay, needles in ((low, self._triggers), (data, self._literals)):
            for needle in needles:
                at = hay.find(needle)
                while at >= 0:
                    found.append((at, index))
                    if len(found) > limit:
                        return None
                    at = hay.find(needle, at + 1)
                index += 1
        return found

    def present(self, data: bytes) -> set[int]:
        low = data.lower()
        n = len(self._triggers)
        return {i for i, t in enumerate(self._triggers) if t in low} | {
            n + i for i, v in enumerate(self._literals) if v in data}


def prefilter_for(triggers: tuple[bytes, ...], literals: tuple[bytes, ...]) -> Any:
    """The first engine of :data:`ENGINES` that is installed and takes every literal.

    ``LOGKIT_REDACT_ENGINE`` names where to start (``stdlib`` never tries the optional ones).
    Hyperscan and RE2 come with ``pip install 'logkit[fast]'``; the stdlib engine needs nothing.
    """
    import os

    wanted = os.environ.get(ENGINE_ENV, "auto").strip().lower() or "auto"
    order = ENGINES[ENGINES.index(wanted):] if wanted in ENGINES else ENGINES
    for name in order:
        try:
            if name == "hyperscan":
                import hyperscan  # type: ignore[import-not-found]

                return _HyperscanFilter(hyperscan, triggers, literals)
            if name == "re2":
                import re2  # type: ignore[import-not-found]

                return _Re2Filter(re2, triggers, literals)
        except Exception:  # not installed (ARM has no Hyperscan), or a literal it cannot take
            continue
    return _StdlibFilter(triggers, literals)


def available_engines() -> list[str]:
    """The prefilter engines importable here, fastest first (``stdlib`` always)."""
    found = []
    for name in ENGINES[:-1]:
        try:
            __import__(name)
            found.append(name)
        except Exception:
            pass
    return [*found, "stdlib"]
