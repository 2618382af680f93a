"""logkit: record SGLang launches and benchmarks as typed events, publish them as a knowledge base.

The public API is small: :func:`load` reads a sessions directory, :class:`Store` writes one, and
:mod:`logkit.events` holds the event models. The CLI (``logkit.cli``) is a layer on top that the
library never imports.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

from .errors import LogkitError

if TYPE_CHECKING:
    from . import events
    from .store.reader import ReadResult
    from .store import SessionHandle, Store

# `events` and `store` import pydantic; load them on first use so `logkit run -- true` starts fast.
_LAZY = {"events": ".events", "ReadResult": ".store.reader", "SessionHandle": ".store", "Store": ".store"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name], __name__)
        return module if name == "events" else getattr(module, name)
    raise AttributeError(f"module 'logkit' has no attribute {name!r}")


__all__ = ["LogkitError", "ReadResult", "SessionHandle", "Store", "__version__", "events", "load"]


def load(root: str | None = None) -> dict[str, ReadResult]:
    """Read every session under ``root`` (default ``$LOGKIT_SESSIONS`` or ``./sessions``)."""
    from .store import Store

    return Store.from_env(root).read_all()
