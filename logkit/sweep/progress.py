"""What a sweep shows while it runs: a live ``rich`` panel on a terminal, plain lines otherwise.

Contract: :func:`make` returns :class:`LiveProgress` when stderr is a terminal (cells done of
total, the current cell and its phase, elapsed time and an estimate of what is left, redrawn in
place; ``NO_COLOR`` is honoured by rich) and :class:`PlainProgress` otherwise (one line per cell
as it ends, nothing redrawn). ``rich`` is imported only here, only for a terminal: ``logkit run``
never imports this module.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

__all__ = ["LiveProgress", "PlainProgress", "make"]


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class PlainProgress:
    """One line per event on ``stream``; nothing is redrawn (logs, CI, pipes)."""

    def __init__(self, total: int, done: int, stream: IO[str] | None = None) -> None:
        self.total, self.done, self.stream = total, done, stream or sys.stderr
        self.started = time.monotonic()
        self.cell_key: str | None = None
        self.durations: list[float] = []

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *_exc: Any) -> None:
        return None

    def estimate(self) -> float | None:
        """Seconds left, from the mean duration of the cells run so far."""
        return sum(self.durations) / len(self.durations) * max(0, self.total - self.done) if self.durations else None

    def say(self, text: str) -> None:
        """A message worth keeping (budget spent, port busy, survivors)."""
        print(f"logkit sweep: {text}", file=self.stream, flush=True)

    def cell(self, key: str) -> None:
        """A cell starts."""
        self.cell_key = key

    def phase(self, phase: str) -> None:
        """The current cell's phase changed."""
        return None

    def ended(self, key: str, status: str, why: str | None, seconds: float | None, ran: bool) -> None:
        """A cell has its result."""
        left, tail, reason = self._count(why, seconds, ran)
        eta = f", ~{_clock(left)} left" if left else ""
        print(f"[{self.done}/{self.total}] {key}: {status}{reason}{tail} "
              f"(elapsed {_clock(time.monotonic() - self.started)}{eta})", file=self.stream, flush=True)

    def _count(self, why: str | None, seconds: float | None, ran: bool) -> tuple[float | None, str, str]:
        """Count the ended cell; the time left, and the text of its duration and of its reason."""
        self.done += 1
        if ran and seconds is not None:
            self.durations.append(seconds)
        return self.estimate(), f" in {seconds:.1f}s" if seconds is not None else "", f": {why}" if why else ""


class LiveProgress(PlainProgress):
    """A live panel on a terminal (rich); finished cells scroll above it."""

    def __init__(self, total: int, done: int, stream: IO[str] | None = None) -> None:
        super().__init__(total, done, stream)
        from rich.console import Console
        from rich.live import Live

        self.console = Console(file=self.stream, highlight=False)
        self.current = "starting"
        self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=True,
                         get_renderable=self._render)

    def _render(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        grid = Table.grid(padding=(0, 1))
        grid.add_row(ProgressBar(total=max(1, self.total), completed=self.done, width=30),
                     f"{self.done}/{self.total} cells", f"elapsed {_clock(time.monotonic() - self.started)}",
                     f"~{_clock(self.estimate() or 0)} left" if self.estimate() else "estimating")
        if self.cell_key:
            from rich.markup import escape

            grid.add_row("", f"[bold]{escape(self.cell_key)}[/bold]", escape(self.current), "")
        return grid

    def __enter__(self) -> LiveProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.live.__exit__(*exc)

    def say(self, text: str) -> None:
        from rich.markup import escape

        self.console.print(f"logkit sweep: {escape(text)}")

    def phase(self, phase: str) -> None:
        self.current = phase

    def ended(self, key: str, status: str, why: str | None, seconds: float | None, ran: bool) -> None:
        from rich.markup import escape

        _left, tail, reason = self._count(escape(why) if why else why, seconds, ran)
        style = {"works": "green", "failed": "red", "preflight": "red", "skipped": "yellow"}.get(status)
        shown = f"[{style}]{status}[/{style}]" if style else status
        self.console.print(f"[{self.done}/{self.total}] {escape(key)}: {shown}{reason}{tail}", markup=True)
        self.cell_key = None


def make(total: int, done: int, stream: IO[str] | None = None) -> PlainProgress:
    """The live panel on a terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return (LiveProgress if tty and os.environ.get("TERM") != "dumb" else PlainProgress)(total, done, stream)
