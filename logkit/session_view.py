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

from .events import Attempt, BaseEvent, Decision, Hypothesis, Metric, Note, Outcome, Session, Todo, Verdict

__all__ = ["render_rows", "shown_events", "summaries", "to_json"]


def summaries(root: Path) -> list[dict[str, Any]]:
    """One row per session of ``root`` (id, title, started, attempts, events, problems), from the index."""
    from .store.index import Index

    with Index(root) as index:
        index.refresh()
        with index.snapshot() as snap:
            rows = snap.sessions()
    return [{"id": r["session"], "title": r["title"] if r["title"] is not None else "(no session line)",
             "started": r["started"], "attempts": r["attempts"], "events": r["events"], "problems": r["problems"]}
            for r in rows]


def _line(event: BaseEvent) -> str:
    when = f"{event.ts:%Y-%m-%d %H:%M:%S}"
    if isinstance(event, Session):
        return f"{when}  session    {event.title}" + (f"  (goal: {event.goal})" if event.goal else "")
    if isinstance(event, Hypothesis):
        return f"{when}  {event.short_id:<9}  hypothesis [{event.priority}] {event.text}"
    if isinstance(event, Verdict):
        ev = ", ".join(event.evidence)
        return f"{when}  {event.hypothesis:<9}  {event.verdict}" + (f" by {ev}" if ev else "") + (
            f": {event.because}" if event.because else ""
        )
    if isinstance(event, Attempt):
        return f"{when}  {event.short_id:<9}  {event.role:<7} $ {' '.join(event.argv)}"
    if isinstance(event, Outcome):
        took = f" after {event.duration_s:.1f}s" if event.duration_s is not None else ""
        label = f": {event.label}" if event.label else ""
        return f"{when}  {event.attempt:<9}  -> {event.status}{took}{label}"
    if isinstance(event, Metric):
        unit = f" {event.unit}" if event.unit else ""
        return f"{when}  metric     {event.name} = {event.value:g}{unit}"
    if isinstance(event, Decision):
        return f"{when}  {event.decision_id}    [{event.status}] {event.title}"
    if isinstance(event, Todo):
        done = sum(1 for i in event.items if i.status == "completed")
        return f"{when}  todo       {done}/{len(event.items)} completed"
    if isinstance(event, Note):
        return f"{when}  note       {event.text}"
    return f"{when}  {getattr(event, 'kind', '?')}"


def render_rows(session_id: str, rows: list[tuple[datetime, str]]) -> str:
    """The session as time-ordered one-line events, from ``(ts, line)`` pairs in file order."""
    return "\n".join([f"session {session_id}", *(text for _ts, text in sorted(rows, key=lambda r: r[0]))])


def shown_events(root: Path, session_id: str, take: Callable[[BaseEvent], None]) -> list[str]:
    """Hand ``take`` each event of the session in file order, from the index; returns the session's problems."""
    from .events import event_adapter
    from .store.index import Index

    adapter = event_adapter()
    with Index(root) as index:
        index.refresh([session_id])
        with index.snapshot() as snap:
            for row in snap.events(session_id):
                take(adapter.validate_python(row["event"]))
            return [str(p) for p in snap.problems(session=session_id)]


def to_json(event: BaseEvent) -> str:
    """One event as an element of ``session show --json``'s list (``json.dumps(list, indent=2)``'s form)."""
    text = json.dumps(event.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False, default=str)
    return "  " + text.replace("\n", "\n  ")
