"""A Hyperscan prefilter for the SGLang watcher: one scan where Python would take one per literal.

Contract: :func:`finder` compiles literals into one Hyperscan database (the optional extra
``logkit[fast]``) and returns a function ``chunk -> the indices of the literals that occur in it, in
any case``; it returns None where Hyperscan is not installed or ``LOGKIT_REDACT_ENGINE`` names
another engine, and callers then keep their own checks (one substring test per literal). A literal
found in any case covers its case-sensitive occurrences too, so a caller that skips a regex whose
literals are all absent never skips one that could match.

Imports only the standard library (Hyperscan when it is there).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any

from .prefilter import ENGINE_ENV

__all__ = ["finder"]


def _hyperscan() -> Any:
    if os.environ.get(ENGINE_ENV, "auto").strip().lower() not in ("", "auto", "hyperscan"):
        return None
    try:
        import hyperscan  # type: ignore[import-not-found]
    except Exception:  # noqa: BLE001 - not installed (ARM)
        return None
    return hyperscan


def finder(literals: tuple[bytes, ...]) -> Callable[[bytes], set[int]] | None:
    """A function giving which of ``literals`` occur in a chunk (any case), or None (see above)."""
    hyperscan = _hyperscan()
    if not literals or hyperscan is None:
        return None
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[re.escape(lit) for lit in literals], ids=list(range(len(literals))),
                   flags=[hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH] * len(literals))
    except Exception:  # noqa: BLE001 - a literal it cannot take
        return None
    lock = threading.Lock()  # one scratch space: one scan at a time

    def find(chunk: bytes) -> set[int]:
        found: set[int] = set()
        if chunk:
            with lock:
                db.scan(chunk, match_event_handler=lambda index, *_a: found.add(index))
        return found

    return find
