"""Cross-references of the whole knowledge base: attempts by reference, decisions by id.

Contract: :class:`KBIndex` resolves ``A7`` (in a given session) and ``2026-11-14-glm5/A4``
(anywhere) to attempt facts, ``H3`` to a hypothesis, and ``DR-7K3FQ`` to the latest record of that
decision (an id two sessions share, which only older sequential ids do, belongs to the session that
recorded it first; :attr:`KBIndex.shared` keeps the others, :attr:`KBIndex.moved` the ids that
moved). ``supersedes`` is written once, on the newer record; :meth:`KBIndex.superseded_by`
derives the other direction so both pages show the link and it can never be one-sided.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import Decision
from ..store.files import REF_RE
from ..reasoning.decisions import supersession
from ..reasoning.hypotheses import current_verdict
from .contexts import DecisionRow, HypRef
from .frames import AttemptFacts, Frames, ref_of
from .load import Loaded, Workload
from .paths import attempt_ref, decision_href, session_href

__all__ = ["KBIndex", "provenance_text"]


def provenance_text(provenance: Any) -> str | None:
    """How a page says where facts come from (a provenance or its dict); None for plain live capture."""
    if provenance is None:
        return None
    if isinstance(provenance, dict):
        source, detail = provenance.get("source", "captured"), provenance.get("detail")
    else:
        source, detail = provenance.source, provenance.detail
    words = {
        "reconstructed": "reconstructed from a written account",
        "imported": "imported",
        "captured": "captured",
    }.get(source, str(source))
    if source == "captured" and not detail:
        return None
    return f"{words}: {detail}" if detail else words


class KBIndex:
    """Lookups over the loaded knowledge base."""

    def __init__(self, loaded: Loaded, frames: Frames) -> None:
        self.loaded = loaded
        self.frames = frames
        by_id: dict[str, dict[str, Decision]] = {}
        first: dict[tuple[str, str], object] = {}
        for session in loaded.sessions.values():
            for d in session.decisions:
                held = by_id.setdefault(d.decision_id, {})
                known = held.get(session.id)
                if known is None or d.ts >= known.ts:
                    held[session.id] = d
                key = (d.decision_id, session.id)
                first[key] = min(first.get(key, d.ts), d.ts)  # type: ignore[type-var]
        self.decisions: dict[str, tuple[Decision, str]] = {}
        #: id -> the other sessions' records of an id several sessions recorded
        self.shared: dict[str, list[tuple[Decision, str]]] = {}
        for did, held in by_id.items():
            order = sorted(held, key=lambda sid: (first[(did, sid)], sid))
            self.decisions[did] = (held[order[0]], order[0])
            if len(order) > 1:
                self.shared[did] = [(held[sid], sid) for sid in order[1:]]
        #: ids that moved: old id -> [(session, new id)]
        self.moved: dict[str, list[tuple[str, str]]] = dict(loaded.moved)
        self.facts_by_session: dict[str, list[AttemptFacts]] = {}
        for f in frames.facts.values():
            self.facts_by_session.setdefault(f.session, []).append(f)
        #: per launch reference, its metrics in time order: (name, value, unit, workload, item: the
        #: prompt a per-prompt figure is of, or None)
        self.metrics_by_server: dict[str, list[tuple[str, float, str | None, Workload, str | None]]] = {}
        for m in frames.metrics:  # each session's in time order, joined to its launch
            if m.server is not None:
                self.metrics_by_server.setdefault(m.server, []).append((m.name, m.value, m.unit, m.workload, m.item))
        #: while not None, :meth:`attempt` adds every session a reference names (the sessions a page depends on)
        self.touched: set[str] | None = None
        self._superseded_by = supersession(d for d, _sid in self.decisions.values())
        self._memo: dict[str, Any] = {}

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        """``make()``, made once per index under ``name`` (what several pages compute alike)."""
        if name not in self._memo:
            self._memo[name] = make()
        return self._memo[name]

    def attempt(self, ref: str, session: str) -> AttemptFacts | None:
        """The attempt ``ref`` names, read in ``session``; None if no such attempt exists."""
        match = REF_RE.match(ref.strip())
        if not match or not match["id"].startswith("A"):
            return None
        if self.touched is not None:
            self.touched.add(match["session"] or session)
        return self.frames.facts.get(ref_of(match["session"] or session, match["id"]))

    def hypothesis(self, ref: str, session: str) -> HypRef | None:
        """The hypothesis ``ref`` names, with its latest verdict."""
        match = REF_RE.match(ref.strip())
        if not match or not match["id"].startswith("H"):
            return None
        sid = match["session"] or session
        if self.touched is not None:
            self.touched.add(sid)
        data = self.loaded.sessions.get(sid)
        if data is None or match["id"] not in data.hypotheses:
            return None
        hyp = data.hypotheses[match["id"]]
        last = current_verdict(data.verdicts.get(hyp.short_id, []))
        evidence = []
        if last is not None:
            for r in last.evidence:
                facts = self.attempt(r, sid)
                if facts is not None:
                    evidence.append(attempt_ref(facts))
        return HypRef(
            id=hyp.short_id if sid == session else f"{sid}/{hyp.short_id}",
            text=hyp.text,
            href=session_href(sid) + f"#{hyp.short_id}",
            verdict=last.verdict if last else "open",
            because=last.because if last else None,
            evidence=evidence,
        )

    def decisions_digest(self) -> str:
        """A digest of what a decision page shows of other decisions (a kept one needs it unchanged)."""
        import hashlib
        import json

        rows = [[did, d.id, d.title, d.status, d.ts.isoformat(), d.supersedes, sid]
                for did, (d, sid) in sorted(self.decisions.items())]
        shared = [[did, [[o.id, o.title, o.status, o.ts.isoformat(), o.supersedes, osid] for o, osid in others]]
                  for did, others in sorted(self.shared.items())]
        moved = sorted([old, sorted(map(list, moves))] for old, moves in self.moved.items())
        return hashlib.sha256(json.dumps([rows, shared, moved], default=str).encode()).hexdigest()

    def superseded_by(self, decision_id: str) -> list[str]:
        """The decisions whose ``supersedes`` names ``decision_id``."""
        return self._superseded_by.get(decision_id, [])

    def page_id(self, decision: Decision) -> str:
        """The id a record's page has: its own, or for the later holder of a shared id a longer form."""
        from ..reasoning.decisions import permanent_id

        held = self.decisions.get(decision.decision_id)
        if held is not None and held[0] is not decision and decision.decision_id in self.shared:
            return permanent_id(decision.id, set(self.decisions) | set(self.moved))
        return decision.decision_id

    def decision_row(self, decision_id: str, record: Decision | None = None, session: str | None = None) -> DecisionRow | None:
        """The list row of a decision (``record`` for a page of its own), with its shown status."""
        if record is None or session is None:
            known = self.decisions.get(decision_id)
            if known is None:
                return None
            record, session = known
        later = self.superseded_by(record.decision_id) if decision_id == record.decision_id else []
        return DecisionRow(
            id=decision_id,
            title=record.title,
            status="superseded" if later else record.status,
            date=record.ts,
            href=decision_href(decision_id),
            session=session,
            superseded_by=later,
        )
