"""Plain-text and dict views of one session, for ``logkit session list|show``.

Pure functions of events; no heavy imports (the build uses pandas, the terminal does not).
:func:`scan` reads a session file line by line, validated and checked as
:func:`logkit.reader.read_events` does, handing each event to a callback instead of keeping them
all (``session show`` of 100,000 events held 725 MB of events to print one line of each).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .events import Attempt, BaseEvent, Decision, Hypothesis, Metric, Note, Outcome, Session, Todo, Verdict
from .store import SessionHandle

__all__ = ["render_rows", "render_text", "scan", "summarize", "to_json"]


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


def render_rows(session_id: str, rows: list[tuple[datetime, str]]) -> str:
    """:func:`render_text` from ``(ts, line)`` pairs in file order (:func:`_line` of each event)."""
    return "\n".join([f"session {session_id}", *(text for _ts, text in sorted(rows, key=lambda r: r[0]))])


def scan(path: Path, take: Callable[[BaseEvent], None]) -> list[str]:
    """Validate every line of ``path`` (as :func:`logkit.reader.read_events`: same checks, same words)
    and call ``take`` with each event, in order; returns the problems. No event is kept here."""
    from .reasoning.status import _validate
    from .reader import Problem, clash, unknown_refs

    problems: list[str] = []
    seen: dict[str, int] = {}
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below; the lines are read one at a time
    except FileNotFoundError:
        return [str(Problem(path, 0, "file is missing"))]
    except OSError as exc:
        return [str(Problem(path, 0, f"cannot read: {exc.strerror}"))]
    with fh:
        for number, raw in enumerate(fh, start=1):
            torn = not raw.endswith(b"\n")
            line = raw[:-1] if not torn else raw
            if not line.strip():
                continue
            event = _validate(path, line, number, torn, problems.append)
            if event is None:
                continue
            why = clash(event, number, seen)
            if why:
                problems.append(str(Problem(path, number, why + "; skipped (fix or delete that line)")))
                continue
            take(event)
            if event.kind in ("decision", "verdict"):
                for ref in unknown_refs(event, seen):
                    problems.append(str(Problem(
                        path, number, f"{event.kind} cites {ref}, which no earlier line of this session records; "
                        "the event is kept (fix or remove that reference)", field="evidence")))
    return problems


def to_json(event: BaseEvent) -> str:
    """One event as an element of ``session show --json``'s list (``json.dumps(list, indent=2)``'s form)."""
    text = json.dumps(event.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False, default=str)
    return "  " + text.replace("\n", "\n  ")
