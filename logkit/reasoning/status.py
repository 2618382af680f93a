"""``logkit status``: where the current session stands, for a terminal or a script.

Contract: :func:`status` is a pure function of a session's events (plus a liveness probe for
open attempts) returning a JSON-ready dict:

* ``hypotheses``: the open ones, each with the attempts testing it that are still pending;
* ``attempts``: the last ``last`` attempts with outcome status, label and the flags they changed;
* ``running``: launch attempts without an outcome whose recorder or server is still alive;
* ``proposals``: for every attempt run with ``--tests H3`` that ended in a failure class while
  H3 is still open, the one command that records the refutation.

:func:`render` turns that dict into text.
"""

from __future__ import annotations

import shlex
from typing import Any

from .. import procs, statuses
from ..events import Attempt, BaseEvent, Decision, Outcome, Session
from .hypotheses import states

__all__ = ["render", "status"]


def _changed(attempt: Attempt) -> dict[str, Any]:
    diff = attempt.launch.diff if attempt.launch else None
    if diff is None:
        return {}
    out: dict[str, Any] = {}
    out.update({f"+{k}": v for k, v in diff.added.items()})
    out.update({f"-{k}": v for k, v in diff.removed.items()})
    out.update({k: f"{v[0]} -> {v[1]}" for k, v in diff.changed.items() if len(v) == 2})
    return out


def _alive(attempt: Attempt) -> bool:
    if attempt.recorder_host not in (None, procs.hostname()):
        return True  # another machine: assume its recorder knows
    pids = [p for p in (attempt.pid, attempt.recorder_pid) if p]
    return any(procs.alive(p) for p in pids)


def status(session_id: str, events: list[BaseEvent], *, last: int = 5) -> dict[str, Any]:
    """The status dict of one session."""
    meta = next((e for e in events if isinstance(e, Session)), None)
    outcomes = {e.attempt: e for e in events if isinstance(e, Outcome)}
    attempts = [e for e in events if isinstance(e, Attempt)]
    # Any failure refutes the hypothesis the attempt tested ("this command works"); whether it also
    # counts against a backend (statuses.refuting()) is the refuted check's and the matrix's question.
    failure = set(statuses.of_class("failure"))
    hyp = states(events)
    open_ids = {s.hypothesis.short_id for s in hyp if s.status == "open"}
    proposals = []
    for attempt in attempts:
        outcome = outcomes.get(attempt.short_id)
        if outcome is None or outcome.status not in failure:
            continue
        for ref in attempt.tests:
            if ref in open_ids:
                because = f"{attempt.short_id} ended {outcome.status}" + (f": {outcome.label}" if outcome.label else "")
                proposals.append({
                    "hypothesis": ref,
                    "attempt": attempt.short_id,
                    "status": outcome.status,
                    "command": f"logkit hypothesis refute {ref} --evidence {attempt.short_id} --because {shlex.quote(because)}",
                })
    rows = []
    for attempt in attempts[-last:]:
        outcome = outcomes.get(attempt.short_id)
        rows.append({
            "id": attempt.short_id,
            "role": attempt.role,
            "command": shlex.join(attempt.argv),
            "tests": attempt.tests,
            "status": outcome.status if outcome else "running",
            "label": (outcome.label if outcome else None) or attempt.label,
            "changed": _changed(attempt),
            "reconstructed": bool(attempt.provenance and attempt.provenance.source == "reconstructed"),
        })
    running = [
        {"id": a.short_id, "command": shlex.join(a.argv), "pid": a.pid, "port": a.launch.port if a.launch else None}
        for a in attempts
        if a.short_id not in outcomes and a.role == "launch" and _alive(a)
    ]
    decisions = [e for e in events if isinstance(e, Decision)]
    return {
        "session": session_id,
        "title": meta.title if meta else None,
        "hypotheses": [s.as_dict() for s in hyp if s.status == "open"],
        "closed_hypotheses": len([s for s in hyp if s.status != "open"]),
        "attempts": rows,
        "attempt_count": len(attempts),
        "running": running,
        "proposals": proposals,
        "decisions": [{"id": d.decision_id, "title": d.title, "status": d.status} for d in decisions],
    }


def render(data: dict[str, Any]) -> str:
    """The status dict as text for a terminal."""
    out = [f"session {data['session']}" + (f": {data['title']}" if data.get("title") else "")]
    out.append("")
    out.append(f"open hypotheses ({len(data['hypotheses'])}, {data['closed_hypotheses']} closed):")
    for h in data["hypotheses"]:
        pending = f"  pending: {', '.join(h['pending'])}" if h["pending"] else ""
        tested = f"  tested by: {', '.join(h['tests'])}" if h["tests"] else "  no attempt tests it yet"
        out.append(f"  {h['id']:<4} [{h['priority']}] {h['text']}{tested}{pending}")
    if not data["hypotheses"]:
        out.append("  none")
    out.append("")
    out.append(f"last attempts ({len(data['attempts'])} of {data['attempt_count']}):")
    for a in data["attempts"]:
        tests = f" tests {','.join(a['tests'])}" if a["tests"] else ""
        out.append(f"  {a['id']:<4} {a['status']:<14} {a['role']:<7}{tests} $ {a['command']}")
        if a["label"]:
            out.append(f"       {a['label']}")
        if a["changed"]:
            out.append("       changed: " + ", ".join(f"{k}={v}" for k, v in a["changed"].items()))
        if a["reconstructed"]:
            out.append("       (reconstructed from a written account; no log)")
    if data["running"]:
        out.append("")
        out.append("still running:")
        for r in data["running"]:
            where = f" port {r['port']}" if r.get("port") else ""
            out.append(f"  {r['id']:<4} pid {r['pid']}{where} $ {r['command']}")
    if data["decisions"]:
        out.append("")
        out.append("decisions: " + ", ".join(f"{d['id']} {d['title']}" for d in data["decisions"]))
    if data["proposals"]:
        out.append("")
        out.append("proposed (accept with the command shown):")
        for p in data["proposals"]:
            out.append(f"  {p['attempt']} tested {p['hypothesis']} and ended {p['status']}: refute it?")
            out.append(f"    {p['command']}")
    return "\n".join(out)
