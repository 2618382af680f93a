"""Error lines, normalised: the one place that says when two failures are "the same error".

Contract: :func:`exception_in` finds the Python exception line in a text ("KeyError: 'x'", with its
dotted type, never a ``raise`` statement quoted by a traceback); :func:`error_template` masks what
varies between two occurrences of one error (paths, addresses, long hex ids, uuids, numbers) and
collapses spaces, so ``KeyError: 'model.layers.55.mlp'`` and ``KeyError: 'model.layers.13.mlp'``
share the template ``KeyError: 'model.layers.<n>.mlp'``. A leaf module (no logkit imports): the
classifier (capture), ``logkit why`` and the site (build) all group failures with it.
"""

from __future__ import annotations

import re

__all__ = ["EXCEPTION_LINE", "error_template", "exception_in"]

#: A Python exception line inside a log line: optional dotted module path, the type, its message.
EXCEPTION_LINE = re.compile(
    r"(?:^|(?<=[\s:\]|>)]))((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception)|KeyboardInterrupt|SystemExit)"
    r"(?:: .*|\s*$))")

_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*/)+[\w.@+-]*")
_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{14,}\b|\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b")
_NUM = re.compile(r"\d+(?:\.\d+)?")


def exception_in(text: str) -> str | None:
    """The first exception line in ``text`` that is not a ``raise`` statement, or None."""
    for m in EXCEPTION_LINE.finditer(text):
        if not text[: m.start(1)].rstrip().endswith("raise"):
            return m.group(1).strip()
    return None


def error_template(text: str) -> str:
    """The normalised form of an error line (its exception line when it has one)."""
    s = exception_in(text.strip()) or text.strip()
    s = _PATH.sub("<path>", s)
    s = _ADDR.sub("<addr>", s)
    s = _ID.sub("<id>", s)
    s = _NUM.sub("<n>", s)
    return re.sub(r"\s+", " ", s)[:300]
