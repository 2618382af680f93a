"""Plain-text and dict views of one session, for ``logkit session list|show``.

Pure functions of events; no heavy imports (the build uses pandas, the terminal does not). The
sessions and their events come from the index (:mod:`logkit.store.index`): :func:`summaries` one
row per session, :func:`shown_events` hands a callback one event at a time instead of keeping them
all (``session show`` of 100,000 events held 725 MB of events to print one line of each).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .events import BaseEvent

__all__ = ["render_rows", "shown_events", "summaries", "to_json"]


def summaries(root: Path) -> list[dict[str, Any]]:
    """One row per session of ``root`` (id, title, started, attempts, events, problems), from the index."""
    from .store.index import current

    with current(root) as snap:
        rows = snap.sessions()
    return [{"id": r["session"], "title": r["title"] if r["title"] is not None else "(no session line)",
             "started": r["started"], "attempts": r["attempts"], "events": r["events"], "problems": r["problems"]}
            for r in rows]


#: each kind's line after its time (a kind not here shows its name)
_LINES: dict[str, Callable[[Any], str]] = {
    "session": lambda e: f"session    {e.title}" + (f"  (goal: {e.goal})" if e.goal else ""),
    "hypothesis": lambda e: f"{e.short_id:<9}  hypothesis [{e.priority}] {e.text}",
    "verdict": lambda e: f"{e.hypothesis:<9}  {e.verdict}" + (f" by {', '.join(e.evidence)}" if e.evidence else "")
                         + (f": {e.because}" if e.because else ""),
    "attempt": lambda e: f"{e.short_id:<9}  {e.role:<7} $ {' '.join(e.argv)}",
    "outcome": lambda e: f"{e.attempt:<9}  -> {e.status}"
                         + (f" after {e.duration_s:.1f}s" if e.duration_s is not None else "")
                         + (f": {e.label}" if e.label else ""),
    "metric": lambda e: f"metric     {e.name} = {e.value:g}" + (f" {e.unit}" if e.unit else ""),
    "decision": lambda e: f"{e.decision_id}    [{e.status}] {e.title}",
    "todo": lambda e: f"todo       {sum(1 for i in e.items if i.status == 'completed')}/{len(e.items)} completed",
    "note": lambda e: f"note       {e.text}",
}


def _line(event: BaseEvent) -> str:
    shown = _LINES.get(event.kind)  # type: ignore[attr-defined]
    return f"{event.ts:%Y-%m-%d %H:%M:%S}  " + (shown(event) if shown else event.kind)  # type: ignore[attr-defined]


def render_rows(session_id: str, rows: list[tuple[datetime, str]]) -> str:
    """The session as time-ordered one-line events, from ``(ts, line)`` pairs in file order."""
    return "\n".join([f"session {session_id}", *(text for _ts, text in sorted(rows, key=lambda r: r[0]))])


def shown_events(root: Path, session_id: str, take: Callable[[BaseEvent], None]) -> list[str]:
    """Hand ``take`` each event of the session in file order, from the index; returns the session's problems."""
    from .events import event_adapter
    from .store.index import current

    adapter = event_adapter()
    with current(root, [session_id]) as snap:
        for row in snap.events(session_id):
            take(adapter.validate_python(row["event"]))
        return [str(p) for p in snap.problems(session=session_id)]


def to_json(event: BaseEvent) -> str:
    """One event as an element of ``session show --json``'s list (``json.dumps(list, indent=2)``'s form)."""
    text = json.dumps(event.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False, default=str)
    return "  " + text.replace("\n", "\n  ")
