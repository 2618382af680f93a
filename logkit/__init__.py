"""logkit: record SGLang launches and benchmarks as typed events, publish them as a knowledge base.

The public API is small: :func:`load` reads a sessions directory, :class:`Store` writes one, and
:mod:`logkit.events` holds the event models. The CLI (``logkit.cli``) is a layer on top that the
library never imports.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import events
from .errors import LogkitError
from .store import ReadResult, SessionHandle, Store

__all__ = [
    "LogkitError",
    "ReadResult",
    "SessionHandle",
    "Store",
    "__version__",
    "events",
    "load",
]


def load(root: str | None = None) -> dict[str, ReadResult]:
    """Read every session under ``root`` (default ``$LOGKIT_SESSIONS`` or ``./sessions``)."""
    return Store.from_env(root).read_all()
