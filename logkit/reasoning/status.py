"""``logkit status``: where the current session stands, for a terminal or a script.

Contract: :func:`session_status` is a query over the index (brought up to date for the session
first; every line was validated once, at ingest, and its problems are named ``file:line``). Its
JSON-ready dict holds:

* ``hypotheses``: the open ones (:func:`logkit.reasoning.hypotheses.standing`), each with the
  attempts testing it and those still pending;
* ``attempts``: the last ``last`` attempts with outcome status, label and the flags they changed;
* ``running``: launch attempts without an outcome whose recorder or server is still alive;
* ``proposals``: while H3 is open and the attempts run with ``--tests H3`` make its matrix cell
  ``refuted`` (:mod:`logkit.reasoning.matrix`: an ``ignore`` status such as ``import_error``
  refutes nothing; a later ready launch that passed its smoke test withdraws it), the command that
  records the refutation, one per refuting attempt; but an attempt whose every cell is
  ``conflicting`` in the whole knowledge base (the cells the pre-launch check and the site read)
  is listed under ``conflicting`` with the latest working attempt of each cell, nothing proposed;
* ``decisions``: the session's decision records; ``todo``: the latest todo snapshot's items.

Only the attempts shown are read as events; the rest are index rows. :func:`render` makes the text.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from .. import procs
from ..events import Verdict
from ..store import files
from . import matrix
from .hypotheses import standing

__all__ = ["PROBLEMS_KEPT", "current_status", "render", "session_status", "status"]

PROBLEMS_KEPT = 200  # problems named word for word (the others are counted)


def _changed(attempt: dict[str, Any]) -> dict[str, Any]:
    diff = (attempt.get("launch") or {}).get("diff") or {}
    return {**{f"+{k}": v for k, v in (diff.get("added") or {}).items()},
            **{f"-{k}": v for k, v in (diff.get("removed") or {}).items()},
            **{k: f"{v[0]} -> {v[1]}" for k, v in (diff.get("changed") or {}).items() if len(v) == 2}}


def _alive(host: str | None, pids: list[int | None]) -> bool:
    if host not in (None, procs.hostname()):
        return True  # another machine: assume its recorder knows
    return any(procs.alive(p) for p in pids if p)


def _cells_of(snap: Any, row: matrix.Row) -> list[matrix.Cell]:
    """The knowledge base's cells ``row`` falls in (its own model, architecture and versions), every session's."""
    if not row.arch or not row.backends:
        return []
    from .refuted import cells_in

    return [c for c in cells_in(snap, row.backends, row.arch, row.model, row.sglang)
            if (c.model, c.sglang, c.flashinfer) == (row.model, row.sglang, row.flashinfer)]


def _proposals(snap: Any, open_ids: list[str],
               rows: list[matrix.Row]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(proposals, conflicting)`` of the open hypotheses (see the contract)."""
    out, conflicting = [], []
    for ref in sorted(open_ids, key=lambda h: int(h[1:]) if h[1:].isdigit() else 0):
        tested = [r for r in rows if ref in r.tests]
        if matrix.state(matrix.category(r) for r in tested) != "refuted":
            continue
        for r in tested:
            if matrix.category(r) in (None, "works"):
                continue
            cells = _cells_of(snap, r)
            if cells and all(c.state == "conflicting" for c in cells):
                conflicting.append({"hypothesis": ref, "attempt": r.attempt, "status": r.status,
                                    "worked": {f"{c.axis}={c.value}": c.working[-1].ref if c.working else None
                                               for c in sorted(cells, key=lambda c: (c.axis, c.value))}})
                continue
            because = shlex.quote(f"{r.attempt} ended {r.status}" + (f": {r.label}" if r.label else ""))
            out.append({"hypothesis": ref, "attempt": r.attempt, "status": r.status,
                        "command": f"logkit hypothesis refute {ref} --evidence {r.attempt} --because {because}"})
    return out, conflicting


def status(snap: Any, session_id: str, *, last: int = 5) -> dict[str, Any]:
    """The status dict of one session from an index snapshot (:class:`logkit.store.index.Snapshot`)."""
    attempts = snap.attempts(session=session_id)
    tests = {a["short_id"]: json.loads(a["tests"]) if a["tests"] else [] for a in attempts}
    state = {a["short_id"]: a["status"] for a in attempts}
    # the verdict events only (validated at ingest): few, and they say what they replace
    closed_by = standing(Verdict.model_validate(row["event"]) for row in snap.events(session_id, ["verdict"]))
    hyp_rows, closed = [], 0
    for h in snap.hypotheses(session=session_id):
        if h["short_id"] in closed_by:
            closed += 1
            continue
        testing = [aid for aid, t in tests.items() if h["short_id"] in t]
        hyp_rows.append({"id": h["short_id"], "text": h["text"], "priority": h["priority"],
                         "tags": json.loads(h["tags"] or "[]"), "status": "open", "evidence": [], "because": None,
                         "tests": testing, "pending": [a for a in testing if state[a] is None],
                         "outcomes": {a: state[a] for a in testing if state[a] is not None}})
    shown = attempts[-last:] if last > 0 else []
    running = [a for a in attempts if a["role"] == "launch" and a["status"] is None]
    events = snap.attempt_events(session_id, [a["short_id"] for a in shown + running])
    rows = []
    for a in shown:
        e = events.get(a["short_id"]) or {}
        rows.append({"id": a["short_id"], "role": a["role"], "command": shlex.join(e.get("argv") or []),
                     "tests": tests[a["short_id"]], "status": a["status"] or "running",
                     "label": a["outcome_label"] or a["label"], "changed": _changed(e),
                     "reconstructed": (e.get("provenance") or {}).get("source") == "reconstructed"})
    alive = []
    for a in running:
        e = events.get(a["short_id"]) or {}
        if _alive(e.get("recorder_host"), [e.get("pid"), e.get("recorder_pid")]):
            alive.append({"id": a["short_id"], "command": shlex.join(e.get("argv") or []), "pid": e.get("pid"),
                          "port": (e.get("launch") or {}).get("port")})
    meta = snap.sessions(session=session_id)
    proposals, conflicting = _proposals(snap, [h["id"] for h in hyp_rows],
                                        [matrix.row_of(a) for a in attempts if tests[a["short_id"]]])
    todo: dict[str, Any] = {}
    for row in snap.events(session_id, ["todo"]):
        todo = row["event"]  # the latest snapshot
    return {"session": session_id, "title": meta[0]["title"] if meta else None, "hypotheses": hyp_rows,
            "closed_hypotheses": closed, "attempts": rows, "attempt_count": len(attempts), "running": alive,
            "proposals": proposals, "conflicting": conflicting,
            "decisions": [{"id": d["decision_id"], "title": d["title"], "status": d["status"]}
                          for d in snap.decisions(session=session_id)],
            "todo": [{k: item.get(k) for k in ("content", "status", "priority", "hypothesis")}
                     for item in todo.get("items") or []]}


def session_status(root: Path, session_id: str, *, last: int = 5) -> tuple[dict[str, Any], list[str]]:
    """``(status dict, problems)`` of one session, from the index brought up to date for it."""
    from ..store.index import Index

    with Index(root) as index:
        index.refresh([session_id])
        with index.snapshot() as snap:
            data = status(snap, session_id, last=last)
        if data["proposals"] or data["conflicting"]:
            # they read the cells of every session (as the pre-launch check does): all brought up to date
            index.refresh()
            with index.snapshot() as snap:
                data = status(snap, session_id, last=last)
        with index.snapshot() as snap:
            found = snap.problems(session=session_id)
    problems = [str(p) for p in found[:PROBLEMS_KEPT]]
    if len(found) > PROBLEMS_KEPT:
        problems.append(f"{files.events_path(root, session_id)}: {len(found) - PROBLEMS_KEPT} more line(s) skipped"
                        " (see 'logkit session show')")
    return data, problems


def current_status(store: Any, session_id: str | None = None, *, last: int = 5) -> tuple[dict[str, Any], list[str]]:
    """:func:`session_status` of ``session_id`` (default: the current one), its dead recorders reconciled first."""
    from ..capture.journal import Journal

    handle = store.handle(session_id or store.current_or_fail())
    Journal(store.root, handle.id).reconcile()  # through the session view: no typed read of the session
    return session_status(store.root, handle.id, last=last)


def render(data: dict[str, Any]) -> str:
    """The status dict as text for a terminal."""
    out = [f"session {data['session']}" + (f": {data['title']}" if data.get("title") else ""), "",
           f"open hypotheses ({len(data['hypotheses'])}, {data['closed_hypotheses']} closed):"]
    for h in data["hypotheses"]:
        pending = f"  pending: {', '.join(h['pending'])}" if h["pending"] else ""
        tested = f"  tested by: {', '.join(h['tests'])}" if h["tests"] else "  no attempt tests it yet"
        out.append(f"  {h['id']:<4} [{h['priority']}] {h['text']}{tested}{pending}")
    if not data["hypotheses"]:
        out.append("  none")
    out += ["", f"last attempts ({len(data['attempts'])} of {data['attempt_count']}):"]
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
        out += ["", "still running:"]
        for r in data["running"]:
            where = f" port {r['port']}" if r.get("port") else ""
            out.append(f"  {r['id']:<4} pid {r['pid']}{where} $ {r['command']}")
    if todo := data.get("todo") or []:
        out += ["", f"todo ({sum(t.get('status') == 'completed' for t in todo)} of {len(todo)} done):"]
        for t in todo:
            mark = {"completed": "x", "in_progress": "~"}.get(str(t.get("status")), " ")
            linked = f"  ({t['hypothesis']})" if t.get("hypothesis") else ""
            out.append(f"  [{mark}] {t.get('content')}{linked}")
    if data["decisions"]:
        out += ["", "decisions: " + ", ".join(f"{d['id']} {d['title']}" for d in data["decisions"])]
    if data["proposals"]:
        out += ["", "proposed (accept with the command shown):"]
        for p in data["proposals"]:
            out += [f"  {p['attempt']} tested {p['hypothesis']} and ended {p['status']}: refute it?",
                    f"    {p['command']}"]
    if data.get("conflicting"):
        out += ["", "conflicting evidence (nothing proposed):"]
        for c in data["conflicting"]:
            also = "; ".join(f"{cell} also worked in {ref}" for cell, ref in c["worked"].items())
            out.append(f"  {c['attempt']} tested {c['hypothesis']} and ended {c['status']}, but {also}")
    return "\n".join(out)
