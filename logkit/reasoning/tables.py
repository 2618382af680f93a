"""The reasoning tables of ``logkit/data/reasoning.toml``, read once with stdlib tomllib."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["tables"]

DATA = Path(__file__).resolve().parent.parent / "data" / "reasoning.toml"


@functools.cache
def tables() -> dict[str, Any]:
    """The parsed ``reasoning.toml``."""
    with open(DATA, "rb") as fh:
        return tomllib.load(fh)
