"""Stage 4a, contexts of the home, decision and session pages.

Contract: pure functions of the loaded knowledge base, its frames and its :class:`KBIndex`; each
returns the typed context of one page (see :mod:`logkit.builder.contexts`). References that name
nothing in the knowledge base are kept as text (``unresolved``), never dropped or guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..events import DECISION_STATUSES, Decision, Hypothesis, Note, Session, Todo, Verdict
from .contexts import (
    AliasPage, AliasTarget, BestRow, DecisionPage, DecisionsIndex, Entry, EvidenceCtx, HomePage, MetricRow, OptionCtx,
    Page, SessionPage, SessionPart, SessionRow, SessionsIndex,
)
from .contexts_kb import DiffRow
from ..launch.flags import workload_order as _work_order
from ..launch.flags import workload_text
from ..stats import figure
from ..statuses import is_failure
from .frames import AttemptFacts
from .pages_configs import excerpt, working_config
from .index import KBIndex, provenance_text
from .load import Event, SessionData, tables
from .render import figure_text
from .paths import (
    PART_ATTEMPTS, attempt_href, attempt_part, attempt_ref, config_href, decision_href, log_href, session_href,
    session_part_href,
)
from ..logfiles import log_file

__all__ = ["decision_pages", "decisions_index", "home_page", "session_pages", "sessions_index"]


def _pivot(rows: list[MetricRow]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    names = list(dict.fromkeys(r.name for r in rows))
    table: dict[float | None, dict[str, str]] = {}
    for r in rows:
        unit = f" {r.unit}" if r.unit else ""
        table.setdefault(r.concurrency, {})[r.name] = figure_text(r.value) + unit
    order = sorted(table, key=lambda c: (c is None, c or 0))
    return names, [("—" if c is None else f"{c:g}", [table[c].get(n, "") for n in names]) for c in order]


def _log_path(facts: AttemptFacts) -> str | None:
    """The attempt's raw log as its outcome, else its attempt line, names it."""
    return ((facts.outcome or {}).get("log") or facts.attempt.get("log") or {}).get("path")


def home_page(index: KBIndex) -> HomePage:
    """The home page context."""
    loaded, frames = index.loaded, index.frames
    facts = list(frames.facts.values())
    launches = [f for f in facts if f.role == "launch"]
    dates = [d for s in loaded.sessions.values() for d in (s.first, s.last) if d is not None]
    rows = [r for r in (index.decision_row(d) for d in index.decisions) if r is not None]
    rows.sort(key=lambda r: (r.date, r.id), reverse=True)
    best: list[BestRow] = []
    metrics = frames.metrics
    for name in tables()["metrics"]["throughput"]:
        # only a working configuration's figures (the ones its page shows): never a launch still
        # running, nor one that failed after its benchmark, whose configuration has no page
        per_config: dict[tuple[Any, ...], list[Any]] = {}
        for r in metrics:
            if r.name == name and r.server in frames.facts and working_config(frames.facts[r.server]):
                per_config.setdefault((r.model, r.gpu, *r.workload, frames.facts[r.server].fp_hash or ""), []).append(r)
        # "best" is per model, GPU and workload; a configuration's figure is the median of its runs
        # there, as its page shows it (pages_configs._metric_table), never its luckiest run
        medians = sorted(((key[:-1], figure([r.value for r in runs]), runs) for key, runs in per_config.items()),
                         key=lambda t: -t[1])
        top: dict[tuple[Any, ...], tuple[float, list[Any]]] = {}
        for key, value, runs in medians:  # the highest median
            top.setdefault(key, (value, runs))
        found = []
        for key, (value, runs) in top.items():
            server, work = frames.facts[runs[-1].server], tuple(key[2:])
            found.append(((server.model or "", server.gpu_label or "", _work_order(work)), BestRow(
                model=server.model or "unknown model", gpu=server.gpu_label or "unknown GPU", metric=name,
                value=float(value), unit=next((r.unit for r in runs if r.unit is not None), None), concurrency=work[0],
                config_href=config_href(server), attempt=attempt_ref(server), workload=workload_text(work),
            )))
        if found:
            best = [row for _key, row in sorted(found, key=lambda kv: kv[0])]
            break
    sources: dict[str, int] = {}
    for s in loaded.sessions.values():
        for src in sorted({*s.declared, *(["captured"] if s.undeclared else [])}):
            sources[src] = sources.get(src, 0) + 1
    gpus = sorted({(f.gpu_label, f.arch or "unknown") for f in launches if f.gpu_label})
    return HomePage(
        page=Page("index.md", "Knowledge base", "home.md.j2"),
        counts={
            "sessions": len(loaded.sessions), "attempts": len(facts), "launches": len(launches),
            "working launches": sum(1 for f in launches if f.category == "works"),
            # failed: the status's class (statuses.toml), or a launch up whose smoke test failed
            "failed launches": sum(1 for f in launches if f.category not in (None, "works") or is_failure(f.status)),
            "decisions": len(index.decisions),
            "metrics": len(metrics),
        },
        models=sorted({f.model for f in launches if f.model}),
        gpus=gpus,
        sglang_versions=sorted({f.versions["sglang"] for f in facts if f.versions.get("sglang")}),
        first=min(dates) if dates else None,
        last=max(dates) if dates else None,
        latest_decisions=rows[:10],
        best=best,
        sources=sources,
        problems=[str(p) for p in loaded.problems],
    )


def published_log(index: KBIndex, facts: AttemptFacts) -> tuple[str, str] | None:
    """An attempt's raw log (relative to its session) and its published copy's href; None without one on disk."""
    rel = _log_path(facts)
    if rel is None or log_file(index.loaded.root / facts.session, rel) is None:
        return None
    return rel, log_href(facts.session, rel)


def _evidence(index: KBIndex, facts: AttemptFacts) -> EvidenceCtx:
    log = published_log(index, facts)
    metrics = [MetricRow(m.name, m.value, m.unit, m.concurrency) for m in index.loaded.sessions[facts.session].metric_rows
               if facts.short_id in (m.attempt, m.server_attempt)]
    return EvidenceCtx(attempt=attempt_ref(facts), signature=facts.signature, metrics=metrics,
                       lines=excerpt(facts.outcome, tail=True), log=_log_path(facts), log_href=log[1] if log else None)


def _record_page(index: KBIndex, did: str, d: Decision, sid: str, also: list[AliasTarget]) -> DecisionPage:
    row = index.decision_row(did, d, sid)
    unresolved: list[str] = []
    evidence = []
    for ref in d.evidence:
        facts = index.attempt(ref, sid)
        if facts is None:
            unresolved.append(ref)
        else:
            evidence.append(_evidence(index, facts))
    options = []
    for opt in d.options:
        hyps = [h for h in (index.hypothesis(r, sid) for r in opt.hypotheses) if h is not None]
        atts = [attempt_ref(f) for f in (index.attempt(r, sid) for r in opt.attempts) if f is not None]
        unresolved += [r for r in opt.hypotheses if index.hypothesis(r, sid) is None]
        unresolved += [r for r in opt.attempts if index.attempt(r, sid) is None]
        options.append(OptionCtx(opt.name, opt.chosen, opt.why_not, hyps, atts))
    session = index.loaded.sessions[sid]
    tags = [f"status:{row.status}", *d.tags]
    return DecisionPage(
        page=Page(decision_href(did), f"{did}: {d.title}", "decision.md.j2", tags=tags),
        row=row,
        recorded_status=d.status,
        context=d.context, decision=d.decision, consequences=d.consequences,
        options=options, evidence=evidence, unresolved=unresolved,
        supersedes=index.decision_row(d.supersedes) if d.supersedes else None,
        superseded_by=[r for r in (index.decision_row(x) for x in index.superseded_by(did)) if r],
        tags=list(d.tags),
        provenance=provenance_text(d.provenance),
        session_href=session_href(sid), session_title=session.title,
        also=also,
    )


def decision_pages(index: KBIndex, keep: Callable[[str], bool] = lambda _path: False,
                   ) -> Iterator[tuple[DecisionPage | AliasPage | None, set[str] | None, str]]:
    """``(page, the sessions it read, path)`` per decision id, made when asked for (an alias page: no deps;
    a page ``keep`` keeps: ``(None, None, path)``), and per id that moved or several sessions recorded."""
    # a later record of a shared (older, sequential) id gets a longer form of its own id, which the
    # shared id's page names; a moved id's page leads to where it went: every id cited resolves

    def record(did: str, d: Decision, sid: str, also: list[AliasTarget],
               ) -> tuple[DecisionPage | None, set[str] | None, str]:
        path = decision_href(did)
        if keep(path):
            return None, None, path
        index.touched = {sid}
        try:
            ctx = _record_page(index, did, d, sid, also)
        finally:
            deps, index.touched = index.touched, None
        return ctx, deps, path

    # by session: a record reads its own session's attempts (its evidence), which stay in memory
    # for the next record of that session (:class:`~logkit.builder.load.Resident`)
    for did in sorted(index.decisions, key=lambda did: (index.decisions[did][1], did)):
        d, sid = index.decisions[did]
        also = [AliasTarget(index.page_id(o), o.title, osid, decision_href(index.page_id(o)))
                for o, osid in index.shared.get(did, [])]
        also += [AliasTarget(new, index.decisions[new][0].title, msid, decision_href(new))
                 for msid, new in index.moved.get(did, []) if new in index.decisions and new != did]
        yield record(did, d, sid, also)
        for other, osid in index.shared.get(did, []):
            own = index.page_id(other)
            yield record(own, other, osid, [AliasTarget(did, d.title, sid, decision_href(did))])
    for old, moves in sorted(index.moved.items()):
        if old in index.decisions:
            continue  # the earliest record kept it; its page names where the others went
        targets = [AliasTarget(new, index.decisions[new][0].title, msid, decision_href(new))
                   for msid, new in moves if new in index.decisions]
        if targets:
            path = decision_href(old)
            yield AliasPage(Page(path, f"{old} moved", "decision_alias.md.j2", no_search=True), old, targets), None, path


def decisions_index(index: KBIndex) -> DecisionsIndex:
    """The decision index grouped by status."""
    rows = [r for r in (index.decision_row(d) for d in sorted(index.decisions)) if r is not None]
    rows += [index.decision_row(index.page_id(o), o, osid) for others in index.shared.values() for o, osid in others]
    by_status = {s: [r for r in rows if r.status == s] for s in DECISION_STATUSES}
    return DecisionsIndex(
        page=Page("decisions/index.md", "Decision records", "decisions_index.md.j2"),
        by_status=by_status,
        counts={s: len(v) for s, v in by_status.items()},
    )


def _flat(launch: Event | None) -> dict[str, Any]:
    return {**launch.get("non_default", {}), **launch.get("fingerprint", {})} if launch else {}


def _diff(prev: Event | None, cur: Event) -> tuple[list[DiffRow], str | None]:
    """What changed against the previous launch: as recorded with the launch, else computed."""
    launch = cur.get("launch")
    d = (launch or {}).get("diff")
    if d is not None:
        rows = [DiffRow(k, None, str(v)) for k, v in d.get("added", {}).items()]
        rows += [DiffRow(k, str(v), None) for k, v in d.get("removed", {}).items()]
        rows += [DiffRow(k, str(v[0]) if v else None, str(v[1]) if len(v) > 1 else None)
                 for k, v in d.get("changed", {}).items()]
        for what, changed in (("env", d.get("env_changed", {})), ("package", d.get("packages_changed", {}))):
            rows += [DiffRow(f"{what} {k}", v[0] if v else None, v[1] if len(v) > 1 else None) for k, v in changed.items()]
        return rows, d.get("against")
    if prev is None or launch is None:
        return [], None
    return diff_settings(_flat(prev.get("launch")), _flat(launch)), prev["short_id"]


def diff_settings(old: dict[str, Any], new: dict[str, Any]) -> list[DiffRow]:
    """The settings that differ between two flat configurations."""
    rows = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            rows.append(DiffRow(key, str(old[key]) if key in old else None, str(new[key]) if key in new else None))
    return rows


def _todo_changes(prev: Todo | None, cur: Todo) -> list[str]:
    if prev is None:
        return []
    from ..reasoning.todo import diff  # the one rule of what changed between two snapshots

    d = diff(prev, cur)
    return ([f"added: {i['content']}" for i in d["added"]] + [f"dropped: {i['content']}" for i in d["removed"]]
            + [f"{c['content']}: {c['from']} → {c['to']}" for c in d["changed"]])


def _links(index: KBIndex, refs: list[str], sid: str) -> list[tuple[str, str]]:
    return [(r, attempt_href(f.session, f.short_id)) for r in refs if (f := index.attempt(r, sid))]


def _session_page(index: KBIndex, session: SessionData) -> list[SessionPage]:
    """The session's page; several when its story holds more than ``PART_ATTEMPTS`` attempts."""
    entries: list[Entry] = []
    #: the part each entry goes to: an attempt's by its number, any other entry its predecessor's
    part_of: list[int] = []
    part = 1
    prev_launch: Event | None = None
    prev_versions: dict[str, str] | None = None
    prev_todo: Todo | None = None
    measured_by: dict[str, set[str]] = {}
    own_metrics: dict[str, list[MetricRow]] = {}
    for m in session.metric_rows:
        if owner := m.attempt or m.server_attempt:
            own_metrics.setdefault(owner, []).append(MetricRow(m.name, m.value, m.unit, m.concurrency))
        if m.server_attempt and m.attempt and m.attempt != m.server_attempt:
            measured_by.setdefault(m.server_attempt, set()).add(m.attempt)
    heavy = session.heavy
    # the story: the typed few events and the attempts' lines, in time order (then file order)
    story = sorted([*((event.ts, line, event) for line, event in session.light),
                    *((*heavy.when[short], attempt) for short, attempt in heavy.attempts.items())],
                   key=lambda item: item[:2])
    for ts, _line, event in story:
        if isinstance(event, dict):  # an attempt's line
            short = event["short_id"]
            part = attempt_part(short)
            facts = index.frames.facts[f"{session.id}/{short}"]
            launch = event.get("role", "command") == "launch"
            diff, against = _diff(prev_launch, event) if launch else ([], None)
            versions = facts.versions
            if launch:
                prev_launch = event
                if prev_versions is not None:
                    diff += [DiffRow(f"version {k}", prev_versions.get(k), versions.get(k))
                             for k in sorted(set(prev_versions) | set(versions)) if prev_versions.get(k) != versions.get(k)]
                    versions = {}
                prev_versions = facts.versions
            outcome = heavy.outcomes.get(short) if facts.status is not None else None
            extra = {}
            if outcome is not None:
                if outcome.get("duration_s") is not None:
                    extra["duration"] = f"{outcome['duration_s']:.1f} s"
                if outcome.get("exit_code") is not None:
                    extra["exit code"] = str(outcome["exit_code"])
                if outcome.get("signature"):
                    extra["signature"] = outcome["signature"]
                if outcome.get("timeline"):
                    extra["timeline"] = ", ".join(m["stage"] + (f" {m['seconds']:.0f}s" if m.get("seconds") is not None else "")
                                                  for m in outcome["timeline"])
            if short in measured_by:
                extra["measured by"] = ", ".join(sorted(measured_by[short]))
            for smoke in heavy.smokes.get(short, []):
                extra["smoke"] = ("ok: " if smoke["ok"] else "FAILED: ") + (smoke.get("reason") or (smoke.get("reply") or "")[:200])
            names, rows = _pivot(own_metrics.get(short, []))
            entries.append(Entry(
                kind="attempt", ts=ts, anchor=short, title=f"{short} · {event.get('role', 'command')}",
                provenance=provenance_text(event.get("provenance")),
                attempt=attempt_ref(facts), command=facts.command, versions=versions, diff=diff, diff_against=against,
                lines=excerpt(outcome, tail=True), metric_names=names, metric_rows=rows, extra=extra,
                text=event.get("label"), log=published_log(index, facts),
            ))
            part_of.append(part)
            continue
        kind = event.kind
        prov = provenance_text(event.provenance)
        if isinstance(event, Hypothesis):
            entries.append(Entry(kind="hypothesis", ts=event.ts, anchor=event.short_id,
                                 title=f"{event.short_id} [{event.priority}]", text=event.text, provenance=prov))
        elif isinstance(event, Verdict):
            links = _links(index, event.evidence, session.id)
            was = next((v.verdict for v in session.verdicts.get(event.hypothesis, []) if v.id == event.replaces), None)
            entries.append(Entry(kind="verdict", ts=event.ts, title=f"{event.hypothesis} {event.verdict}"
                                 + (f" (replaces {was})" if was else ""),
                                 text=event.because, provenance=prov, links=links))
        elif isinstance(event, Todo):
            entries.append(Entry(kind="todo", ts=event.ts, title="todo snapshot", provenance=prov,
                                 items=[(i.status, i.content, i.hypothesis) for i in event.items],
                                 changes=_todo_changes(prev_todo, event)))
            prev_todo = event
        elif isinstance(event, Decision):
            entries.append(Entry(kind="decision", ts=event.ts, anchor=event.decision_id,
                                 title=f"{event.decision_id} [{event.status}]", text=event.title, provenance=prov))
        elif isinstance(event, Note):
            links = _links(index, event.refs, session.id)
            entries.append(Entry(kind="note", ts=event.ts, title="note", text=event.text, provenance=prov, links=links))
        elif isinstance(event, Session):
            continue
        else:  # a kind added after this builder: show it generically
            entries.append(Entry(kind="other", ts=event.ts, title=str(kind), provenance=prov,
                                 text=str(getattr(event, "text", "") or getattr(event, "title", "") or "")))
        part_of.extend([part] * (len(entries) - len(part_of)))
    meta = session.meta
    sources = sorted({t for source, detail in heavy.provenance
                      if (t := provenance_text({"source": source, "detail": detail}))})
    facts = index.facts_by_session.get(session.id, [])

    def page(number: int, own: list[Entry], parts: list[SessionPart]) -> SessionPage:
        title = f"Session {session.id}" + (f" (part {number} of {len(parts)})" if parts and number > 1 else "")
        hyps = [(h.short_id, f"{h.short_id} [{h.priority}]", h.text) for h in session.hypotheses.values()]
        return SessionPage(
            page=Page(session_part_href(session.id, number), title, "session.md.j2", no_search=number > 1),
            id=session.id, title=session.title, goal=meta.goal if meta else None, tags=list(meta.tags) if meta else [],
            started=meta.ts if meta else None, host=meta.host if meta else None, provenance=sources,
            counts={
                "attempts": len(facts), "hypotheses": len(session.hypotheses), "decisions": len(session.decisions),
                "metrics": len(session.metric_rows),
            },
            # part 1 of a split story lists the hypotheses with their #H3 anchors: one anchor per page
            entries=[replace(e, anchor=None) if e.kind == "hypothesis" and parts and number == 1 else e for e in own],
            problems=[str(p) for p in session.problems],
            part=number, parts=parts, hypotheses=hyps if parts and number == 1 else [],
            part_attempts=PART_ATTEMPTS if parts else 0,
        )

    numbers = sorted(set(part_of)) or [1]
    if numbers == [1]:
        return [page(1, entries, [])]
    if numbers[0] != 1:
        numbers.insert(0, 1)  # the session page exists even when A1-A200 were never recorded
    by_part: dict[int, list[Entry]] = {n: [] for n in numbers}
    for entry, number in zip(entries, part_of, strict=True):
        by_part[number].append(entry)
    parts = []
    for number in numbers:
        own = by_part[number]
        shown = [e.anchor for e in own if e.kind == "attempt" and e.anchor]
        parts.append(SessionPart(number, session_part_href(session.id, number), shown[0] if shown else None,
                                 shown[-1] if shown else None, own[0].ts if own else None, own[-1].ts if own else None,
                                 len(own)))
    return [page(number, by_part[number], parts) for number in numbers]


def session_pages(index: KBIndex, keep: Callable[[str], bool] = lambda _sid: False,
                  ) -> Iterator[list[tuple[SessionPage, set[str]]]]:
    """Per session not kept, its pages with the sessions each references, made when asked for (one at a time)."""
    for s in index.loaded.sessions.values():
        if keep(s.id):
            continue
        index.touched = set()
        try:
            pages = [(ctx, index.touched) for ctx in _session_page(index, s)]
        finally:
            index.touched = None
        yield pages


def sessions_index(index: KBIndex) -> SessionsIndex:
    """The session index, newest first."""
    rows = []
    by_session = index.facts_by_session
    for s in index.loaded.sessions.values():
        facts = by_session.get(s.id, [])
        srcs = s.declared or ["captured"]
        rows.append(SessionRow(
            id=s.id, title=s.title, started=s.meta.ts if s.meta else None, attempts=len(facts),
            ready=sum(1 for f in facts if f.category == "works"), decisions=len(s.decisions),
            source=", ".join(srcs), href=session_href(s.id),
        ))
    rows.sort(key=lambda r: (r.started is None, r.started), reverse=True)
    return SessionsIndex(page=Page("sessions/index.md", "Sessions", "sessions_index.md.j2"), rows=rows)
