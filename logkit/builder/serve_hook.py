"""MkDocs hook used by ``logkit serve``: regenerate the Markdown before every rebuild."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["on_pre_build"]


def on_pre_build(config: Any) -> None:
    """Re-render the sessions into the docs directory (only changed pages are rewritten)."""
    from logkit.builder import generate

    sessions = os.environ.get("LOGKIT_SERVE_SESSIONS")
    docs = os.environ.get("LOGKIT_SERVE_DOCS")
    if sessions and docs:
        generate(Path(sessions), Path(docs))
