"""``logkit status``: where the current session stands, for a terminal or a script.

Contract: :func:`status` is a pure function of a session's events (plus a liveness probe for
open attempts) returning a JSON-ready dict:

* ``hypotheses``: the open ones, each with the attempts testing it that are still pending;
* ``attempts``: the last ``last`` attempts with outcome status, label and the flags they changed;
* ``running``: launch attempts without an outcome whose recorder or server is still alive;
* ``proposals``: while H3 is open and the attempts run with ``--tests H3`` say ``refuted`` by the
  matrix cell's rule (:mod:`logkit.reasoning.matrix`: a refuting category, none working; an
  ``ignore`` status such as ``import_error`` refutes nothing, and a later launch testing H3 that came
  up ready and passed its smoke test withdraws it), the command that records the refutation, one
  per refuting attempt.

It is computed from a small *fold* of the events (:class:`Fold`: the hypotheses and verdicts, the
attempts that test one, the last :data:`KEPT` attempts, the open launches, the decisions, the
problems), never from the events themselves. :func:`session_status` reads a session file into
that fold line by line (bounded memory: no list of events) and keeps it in the ``status`` read
cache (:mod:`logkit.readcache`): a session appended to since (``logkit run``) is brought up to date
from its new lines only. Lines are validated and checked as :func:`logkit.reader.read_events`
does, except that an event id repeated from a line before the new ones goes unnoticed until the
fold is next made in full (a merge or edit rewrites the file, which makes it in full): event ids are
checked within one pass, not kept in the fold.

:func:`render` turns that dict into text.
"""

from __future__ import annotations

import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import files, procs
from ..events import Attempt, BaseEvent, Decision, Hypothesis, Outcome, Session, Smoke, Verdict
from . import matrix

__all__ = ["Fold", "KEPT", "render", "session_fold", "session_status", "status", "status_cache"]

#: attempts whose rows the fold keeps (``--last`` up to this is served from it)
KEPT = 100
#: problems the fold keeps word for word (the others are counted)
PROBLEMS_KEPT = 200
_VERSION = 3


def _changed(attempt: Attempt) -> dict[str, Any]:
    diff = attempt.launch.diff if attempt.launch else None
    if diff is None:
        return {}
    out: dict[str, Any] = {}
    out.update({f"+{k}": v for k, v in diff.added.items()})
    out.update({f"-{k}": v for k, v in diff.removed.items()})
    out.update({k: f"{v[0]} -> {v[1]}" for k, v in diff.changed.items() if len(v) == 2})
    return out


def _alive(host: str | None, pids: list[int | None]) -> bool:
    if host not in (None, procs.hostname()):
        return True  # another machine: assume its recorder knows
    return any(procs.alive(p) for p in pids if p)


class Fold:
    """What :func:`status` needs of a session, folded event by event; plain JSON (:meth:`dump`)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        d = data or {}
        self.title: str | None = d.get("title")
        self.has_meta: bool = d.get("has_meta", False)
        #: when the session line says the session started (ISO)
        self.started: str | None = d.get("started")
        #: valid events folded
        self.events: int = d.get("events", 0)
        #: H3 -> {text, priority, tags, verdict: [verdict, evidence, because, ts] | None}
        self.hyps: dict[str, dict[str, Any]] = d.get("hyps", {})
        #: attempts that test a hypothesis: A7 -> [tests, outcome status | None, outcome label | None,
        #: role, a smoke reply failed]
        self.tested: dict[str, list[Any]] = d.get("tested", {})
        #: the last KEPT attempts' rows (outcome filled in when it comes)
        self.rows: list[dict[str, Any]] = d.get("rows", [])
        #: launches without an outcome: A7 -> [command, pid, port, recorder host, recorder pid]
        self.open: dict[str, list[Any]] = d.get("open", {})
        self.count: int = d.get("count", 0)
        self.decisions: list[list[str]] = d.get("decisions", [])
        self.problems: list[str] = d.get("problems", [])
        self.more_problems: int = d.get("more_problems", 0)
        #: short ids and "outcome:A7" markers -> the line that recorded them (reader.clash's checks)
        self.seen: dict[str, int] = d.get("seen", {})
        #: lines folded so far (the next line's number is lines + 1)
        self.lines: int = d.get("lines", 0)
        #: the event ids :meth:`take` put in ``seen`` meanwhile (dropped when it ends: one id per line)
        self._ids: set[str] = set()

    def dump(self) -> dict[str, Any]:
        """The fold as plain JSON."""
        return {k: v for k, v in self.__dict__.items() if k != "_ids"}

    # -- folding ---------------------------------------------------------------------------------

    def problem(self, text: str) -> None:
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(text)
        else:
            self.more_problems += 1

    def add(self, event: BaseEvent) -> None:
        """Fold one valid event (checked against the events before it)."""
        self.events += 1
        if isinstance(event, Session):
            if not self.has_meta:
                self.has_meta, self.title, self.started = True, event.title, event.ts.isoformat()
        elif isinstance(event, Hypothesis):
            self.hyps[event.short_id] = {"text": event.text, "priority": event.priority, "tags": list(event.tags),
                                         "verdict": None}
        elif isinstance(event, Verdict):
            hyp = self.hyps.get(event.hypothesis)
            if hyp is not None:
                current = hyp["verdict"]
                if current is None or event.ts >= datetime.fromisoformat(current[3]):
                    hyp["verdict"] = [event.verdict, list(event.evidence), event.because, event.ts.isoformat()]
        elif isinstance(event, Attempt):
            self._attempt(event)
        elif isinstance(event, Outcome):
            self._outcome(event)
        elif isinstance(event, Smoke):
            if not event.ok and event.attempt in self.tested:
                self.tested[event.attempt][4] = True
        elif isinstance(event, Decision):
            self.decisions.append([event.decision_id, event.title, event.status])

    def _attempt(self, a: Attempt) -> None:
        self.count += 1
        if a.tests:
            self.tested[a.short_id] = [list(a.tests), None, None, a.role, False]
        self.rows.append({
            "id": a.short_id, "role": a.role, "command": shlex.join(a.argv), "tests": list(a.tests),
            "status": "running", "label": a.label, "attempt_label": a.label, "changed": _changed(a),
            "reconstructed": bool(a.provenance and a.provenance.source == "reconstructed"),
        })
        del self.rows[:-KEPT]
        if a.role == "launch":
            self.open[a.short_id] = [shlex.join(a.argv), a.pid, a.launch.port if a.launch else None,
                                     a.recorder_host, a.recorder_pid]

    def _outcome(self, o: Outcome) -> None:
        self.open.pop(o.attempt, None)
        if o.attempt in self.tested:
            self.tested[o.attempt][1:3] = [o.status, o.label]
        for row in self.rows:
            if row["id"] == o.attempt:
                row["status"], row["label"] = o.status, o.label or row["attempt_label"]

    def _row(self, session_id: str, aid: str) -> matrix.Row:
        """An attempt testing a hypothesis as a matrix row (no backends: only its category counts)."""
        tests, status, label, role, smoke_failed = (self.tested[aid] + [None, None, None, "command", False])[:5]
        return matrix.Row(session_id, aid, role or "command", "", status,
                          hang_timeout=matrix.hang_limit(label) if status == "hang" else None,
                          tests=tuple(tests), smoke_failed=bool(smoke_failed), label=label)

    def take_line(self, path: Path, line: bytes, number: int, torn: bool) -> None:
        """Validate line ``number`` of ``path`` and fold it, with the checks and the words of
        :func:`logkit.reader.read_events` (event ids excepted: they are not kept)."""
        from ..reader import clash, unknown_refs

        event = _validate(path, line, number, torn, self.problem)
        if event is None:
            return
        why = clash(event, number, self.seen)
        if event.id in self.seen:
            self._ids.add(event.id)  # in ``seen`` for this pass only (see :meth:`take`)
        if why:
            self.problem(f"{path}:{number}: {why}; skipped (fix or delete that line)")
            return
        if event.kind in ("decision", "verdict"):
            for ref in unknown_refs(event, self.seen):
                self.problem(f"{path}:{number}: field 'evidence': {event.kind} cites {ref}, which no earlier line "
                             "of this session records; the event is kept (fix or remove that reference)")
        self.add(event)

    def take(self, path: Path, raw: bytes, first: int = 1) -> None:
        """Fold the lines of ``raw`` (the file's bytes from line ``first`` on), one at a time."""
        number, pos, size = first - 1, 0, len(raw)
        self._ids = set()
        try:
            while pos < size:
                end = raw.find(b"\n", pos)
                torn = end < 0
                end = size if torn else end
                number += 1
                if raw[pos:end].strip():
                    self.take_line(path, raw[pos:end], number, torn)
                pos = end + 1
        finally:
            for event_id in self._ids:  # not kept: the fold would grow by one id per line
                self.seen.pop(event_id, None)
            self._ids = set()
        self.lines = first - 1 + raw.count(b"\n")

    # -- the status ------------------------------------------------------------------------------

    def status(self, session_id: str, last: int = 5) -> dict[str, Any]:
        """The status dict (see the module contract)."""
        hyp_rows = []
        open_ids = set()
        closed = 0
        for hid, h in self.hyps.items():
            tests = [a for a, t in self.tested.items() if hid in t[0]]
            verdict = h["verdict"]
            if verdict is not None:
                closed += 1
                continue
            open_ids.add(hid)
            hyp_rows.append({
                "id": hid, "text": h["text"], "priority": h["priority"], "tags": h["tags"], "status": "open",
                "evidence": [], "because": None, "tests": tests,
                "pending": [a for a in tests if self.tested[a][1] is None],
                "outcomes": {a: self.tested[a][1] for a in tests if self.tested[a][1] is not None},
            })
        proposals = []
        for ref in sorted(open_ids, key=lambda h: int(h[1:]) if h[1:].isdigit() else 0):
            rows = [self._row(session_id, aid) for aid, t in self.tested.items() if ref in t[0]]
            if matrix.state(matrix.category(r) for r in rows) != "refuted":
                continue
            for r in rows:
                if matrix.category(r) in (None, "works"):
                    continue
                because = f"{r.attempt} ended {r.status}" + (f": {r.label}" if r.label else "")
                proposals.append({
                    "hypothesis": ref, "attempt": r.attempt, "status": r.status,
                    "command": f"logkit hypothesis refute {ref} --evidence {r.attempt} --because {shlex.quote(because)}",
                })
        rows = [{k: v for k, v in r.items() if k != "attempt_label"} for r in self.rows[-last:]] if last > 0 else []
        running = [{"id": aid, "command": cmd, "pid": pid, "port": port}
                   for aid, (cmd, pid, port, host, rpid) in self.open.items() if _alive(host, [pid, rpid])]
        return {
            "session": session_id,
            "title": self.title,
            "hypotheses": hyp_rows,
            "closed_hypotheses": closed,
            "attempts": rows,
            "attempt_count": self.count,
            "running": running,
            "proposals": proposals,
            "decisions": [{"id": d[0], "title": d[1], "status": d[2]} for d in self.decisions],
        }


def status(session_id: str, events: list[BaseEvent], *, last: int = 5) -> dict[str, Any]:
    """The status dict of one session, from its (valid) events."""
    fold = Fold()
    for event in events:
        fold.add(event)
    data = fold.status(session_id, min(last, KEPT))
    if last > KEPT:
        data["attempts"] = _all_rows(events)[-last:]
    return data


def _validate(path: Path, chunk: bytes, number: int, torn: bool, problem: Any) -> BaseEvent | None:
    """One line as :func:`logkit.reader.read_events` validates it; its problem reported otherwise."""
    from pydantic import ValidationError

    from ..errors import SchemaTooNew
    from ..events import fast_validate, parse_event
    from ..reader import Problem, problem_from_validation

    if chunk.startswith(b'{"v":%d,' % files.SCHEMA_VERSION):
        try:
            return fast_validate(chunk)
        except (ValueError, RecursionError, OverflowError):
            pass
    try:
        data = files.load(chunk)
    except SchemaTooNew as exc:
        problem(str(Problem(path, number, f"{exc.message}; {exc.fix}", field="v")))
        return None
    except ValueError as exc:
        if torn:
            problem(str(Problem(path, number, "torn last line (logkit was killed while writing it); skipped", torn=True)))
        else:
            field_name = "v" if str(exc).startswith("'v'") else None
            problem(str(Problem(path, number, f"{exc}; fix or delete that line", field=field_name)))
        return None
    try:
        return parse_event(data)
    except SchemaTooNew as exc:
        problem(str(Problem(path, number, f"{exc.message}; {exc.fix}", field="v")))
    except ValidationError as exc:
        problem(str(problem_from_validation(path, number, exc)))
    except (ValueError, RecursionError, OverflowError) as exc:
        problem(str(Problem(path, number, f"{exc}; fix or delete that line")))
    return None


def _valid(value: Any) -> bool:
    """A cached fold as written: every field of its type (a damaged one is made again)."""
    if type(value) is not dict:
        return False
    types = {"title": (str, type(None)), "has_meta": bool, "started": (str, type(None)), "events": int, "hyps": dict, "tested": dict, "rows": list, "open": dict,
             "count": int, "decisions": list, "problems": list, "more_problems": int, "seen": dict, "lines": int}
    if set(value) != set(types) or not all(isinstance(value[k], t) for k, t in types.items()):
        return False
    try:
        return (all(type(h) is dict and isinstance(h.get("text"), str) and (h.get("verdict") is None or (
                    type(h["verdict"]) is list and len(h["verdict"]) == 4 and isinstance(h["verdict"][3], str)))
                    for h in value["hyps"].values())
                and all(type(t) is list and len(t) == 5 and type(t[0]) is list for t in value["tested"].values())
                and all(type(r) is dict and {"id", "status", "command", "tests"} <= set(r) for r in value["rows"])
                and all(type(o) is list and len(o) == 5 for o in value["open"].values())
                and all(type(d) is list and len(d) == 3 for d in value["decisions"])
                and all(type(v) is int for v in value["seen"].values()))
    except (TypeError, AttributeError):
        return False


def session_status(root: Path, session_id: str, *, last: int = 5) -> tuple[dict[str, Any], list[str]]:
    """``(status dict, problems)`` of one session file, through the ``status`` read cache."""
    path = files.events_path(root, session_id)
    fold = session_fold(root, session_id)
    problems = list(fold.problems)
    if fold.more_problems:
        problems.append(f"{path}: {fold.more_problems} more line(s) skipped (see 'logkit session show')")
    data = fold.status(session_id, min(last, KEPT))
    return data, problems


def session_fold(root: Path, session_id: str, cache: Any = None) -> Fold:
    """The fold of one session file, through the ``status`` read cache (``cache``: one already open,
    saved by the caller; else opened and saved here)."""
    from ..readcache import SessionCache

    path = files.events_path(root, session_id)
    own = cache is None
    cache = cache or SessionCache(root, "status", f"{_VERSION}-{KEPT}")

    def derive(raw: bytes) -> tuple[dict[str, Any], None]:
        fold = Fold()
        fold.take(path, raw)
        return fold.dump(), None

    def extend(value: dict[str, Any], _state: Any, appended: bytes) -> tuple[dict[str, Any], None]:
        fold = Fold(value)
        fold.take(path, appended, fold.lines + 1)
        return fold.dump(), None

    fold = Fold(cache.get(session_id, path, derive, valid=_valid, extend=extend))
    if own:
        cache.save()
    return fold


def status_cache(root: Path) -> Any:
    """The ``status`` read cache of a store, for :func:`session_fold` over many sessions."""
    from ..readcache import SessionCache

    return SessionCache(root, "status", f"{_VERSION}-{KEPT}")


def _all_rows(events: list[BaseEvent]) -> list[dict[str, Any]]:
    outcomes = {e.attempt: e for e in events if isinstance(e, Outcome)}
    rows = []
    for a in (e for e in events if isinstance(e, Attempt)):
        o = outcomes.get(a.short_id)
        rows.append({"id": a.short_id, "role": a.role, "command": shlex.join(a.argv), "tests": a.tests,
                     "status": o.status if o else "running", "label": (o.label if o else None) or a.label,
                     "changed": _changed(a),
                     "reconstructed": bool(a.provenance and a.provenance.source == "reconstructed")})
    return rows


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
