"""Plain-text and dict views of one session, for ``logkit session list|show``.

Pure functions of events; no heavy imports (the build uses pandas, the terminal does not).
"""

from __future__ import annotations

from typing import Any

from .events import Attempt, BaseEvent, Decision, Hypothesis, Metric, Note, Outcome, Session, Todo, Verdict
from .store import SessionHandle

__all__ = ["render_text", "summarize"]


def summarize(handle: SessionHandle, cache: Any = None) -> dict[str, Any]:
    """One row about a session: id, title, dates, counts.

    From the session's status fold (:func:`logkit.reasoning.status.session_fold`: a read cache,
    extended from appended lines), not from a typed read of every event.
    """
    from .reasoning.status import session_fold

    fold = session_fold(handle.store.root, handle.id, cache)
    return {
        "id": handle.id,
        "title": fold.title if fold.has_meta else "(no session line)",
        "started": fold.started,
        "attempts": fold.count,
        "events": fold.events,
        "problems": len(fold.problems) + fold.more_problems,
    }


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


def render_text(session_id: str, events: list[BaseEvent]) -> str:
    """The session as a time-ordered list of one-line events."""
    lines = [f"session {session_id}"]
    lines += [_line(e) for e in sorted(events, key=lambda e: e.ts)]
    return "\n".join(lines)
