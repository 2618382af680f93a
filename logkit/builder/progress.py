"""What ``logkit build`` shows while it works: its stages with their counts, live on a terminal.

Contract: :func:`make` returns :class:`LiveProgress` when stderr is a terminal (a spinner on the
stage running, each finished stage kept as a line with its counts and seconds; ``NO_COLOR`` is
honoured by rich) and None otherwise: a build in CI or a pipe prints only its closing line. The
builder calls ``started(stage)`` and ``done(stage, detail)``; ``rich`` is imported only here, only
for a terminal.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

__all__ = ["LiveProgress", "make"]

#: what each stage does, as the spinner says it
STAGES = {
    "load": "reading the sessions (index)",
    "frames": "tabulating attempts and metrics",
    "charts": "making the charts' specs",
    "pages": "writing the aggregate pages",
    "sessions": "writing session pages and decision records",
    "svg": "rendering charts",
    "mkdocs": "mkdocs build",
}


class LiveProgress:
    """A rich spinner over the running stage; finished stages printed above it."""

    def __init__(self, stream: Any = None) -> None:
        from rich.console import Console
        from rich.status import Status

        self.console = Console(file=stream or sys.stderr, highlight=False)
        self.status = Status("", console=self.console)
        self.since = time.monotonic()

    def __enter__(self) -> LiveProgress:
        self.status.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.status.stop()

    def started(self, stage: str) -> None:
        self.since = time.monotonic()
        self.status.update(f"{STAGES.get(stage, stage)}...")

    def done(self, stage: str, detail: str = "") -> None:
        took = time.monotonic() - self.since
        self.console.print(f"[green]done[/green] {stage:<8} {detail}  [dim]{took:.1f}s[/dim]")
        self.since = time.monotonic()


def make(stream: Any = None) -> LiveProgress | None:
    """The build's progress for ``stream`` (default stderr): live on a terminal, None without one."""
    target = stream or sys.stderr
    if not (hasattr(target, "isatty") and target.isatty()) or os.environ.get("TERM") == "dumb":
        return None
    return LiveProgress(target)
