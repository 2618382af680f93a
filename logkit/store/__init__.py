"""Storage: ``sessions/<id>/events.jsonl`` and what is derived from it.

* :mod:`logkit.store.sessions`: :class:`Store` and :class:`SessionHandle`, the typed writer and
  reader of session directories (the contract is that module's docstring).
* :mod:`logkit.store.index`: :class:`~logkit.store.index.Index`, the one SQLite index every reader
  queries.

Import-light on purpose: ``logkit run`` imports this package before it spawns its child, so the
names that need pydantic (everything of :mod:`.sessions`) are loaded on first use
(``__getattr__``), and :mod:`.index` needs only the standard library until it ingests a line.
The bytes of lines, ids and paths stay :mod:`logkit.store.files`'; line validation :mod:`logkit.store.reader`'s.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .files import ENV_SESSIONS, EVENTS_FILE

if TYPE_CHECKING:
    from .index import Index
    from .sessions import SessionHandle, Store, Txn, slugify

__all__ = [
    "ENV_SESSIONS",
    "EVENTS_FILE",
    "Index",
    "SessionHandle",
    "Store",
    "Txn",
    "slugify",
]

_LAZY = {
    "Index": "index",
    "SessionHandle": "sessions",
    "Store": "sessions",
    "Txn": "sessions",
    "slugify": "sessions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
