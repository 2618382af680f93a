"""Hypotheses and their verdicts: ``H3: flashinfer_trtllm MoE runs on SM120`` closed by ``A7``.

Contract:

* :func:`add` allocates the next ``H<n>`` under the session lock and appends a ``hypothesis`` event.
* :func:`close` appends a ``verdict``: the hypothesis and every evidence ref must exist, and the
  evidence must be attempts that tested it (``logkit run --tests H3``); anything else is refused,
  naming what the attempt tested and which attempts did test it. A verdict on a hypothesis that
  has one is a new event whose ``replaces`` names the earlier verdict's event id.
* :func:`current_verdict` is the one rule for which verdict stands: the latest (by time, then file
  order) that no other verdict replaces; none standing = open (``hypothesis list``, ``status``
  through :func:`standing`, the site).
* :func:`states` folds a session's events into one :class:`HypothesisState` per hypothesis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadInput
from ..events import Attempt, BaseEvent, Hypothesis, Outcome, Verdict
from ..store import SessionHandle, Txn
from .common import check_refs, now, provenance

__all__ = ["HypothesisState", "add", "close", "current_verdict", "standing", "states"]

VERDICTS = ("confirmed", "refuted", "inconclusive")


@dataclass
class HypothesisState:
    """One hypothesis as it stands now."""

    hypothesis: Hypothesis
    verdict: Verdict | None = None
    replaced: Verdict | None = None  # the verdict the current one replaced
    tests: list[str] = field(default_factory=list)  # attempts whose ``tests`` names it, in order
    pending: list[str] = field(default_factory=list)  # of those, the ones without an outcome yet
    outcomes: dict[str, str] = field(default_factory=dict)  # attempt -> outcome status, for those that ended

    @property
    def status(self) -> str:
        """``open`` or the latest verdict."""
        return self.verdict.verdict if self.verdict else "open"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        h, v, r = self.hypothesis, self.verdict, self.replaced
        return {"id": h.short_id, "text": h.text, "priority": h.priority, "tags": h.tags, "status": self.status,
                "evidence": v.evidence if v else [], "because": v.because if v else None,
                "replaces": {"verdict": r.verdict, "evidence": r.evidence, "id": r.id} if r else None,
                "tests": self.tests, "pending": self.pending, "outcomes": self.outcomes}


def add(handle: SessionHandle, text: str, *, priority: str = "medium", tags: list[str] | None = None,
        at: str | None = None, reconstructed: str | None = None) -> Hypothesis:
    """Record a new hypothesis; returns it (with its ``H<n>``)."""
    if not text.strip():
        raise BadInput("a hypothesis needs its claim", fix='logkit hypothesis add "flashinfer_trtllm MoE runs on SM120"')
    when, prov = now(at), provenance(reconstructed)

    def build(txn: Txn) -> Hypothesis:
        return Hypothesis(session=handle.id, ts=when, short_id=txn.next_short_id("H"), text=text.strip(),
                          priority=priority, tags=list(tags or []), provenance=prov)  # type: ignore[arg-type]

    event = handle.append_new(build)
    assert isinstance(event, Hypothesis)
    return event


def close(handle: SessionHandle, hypothesis: str, verdict: str, *, evidence: list[str] | None = None,
          because: str | None = None, at: str | None = None,
          reconstructed: str | None = None) -> tuple[Verdict, Verdict | None]:
    """Close ``hypothesis`` as ``verdict`` citing ``evidence``; the new verdict and the one it replaces (or None)."""
    if verdict not in VERDICTS:
        raise BadInput(f"unknown verdict {verdict!r}", fix="one of: " + ", ".join(VERDICTS))
    events = handle.read().events
    refs = list(evidence or [])
    check_refs(handle, events, [hypothesis], allow="H")
    check_refs(handle, events, refs, allow="A")
    if not refs and not (because and because.strip()):
        raise BadInput(f"a verdict on {hypothesis} needs --evidence or --because",
                       fix=f"logkit hypothesis {_verb(verdict)} {hypothesis} --evidence A7 [--because '...']")
    _only_testing(handle.id, events, hypothesis, verdict, refs)
    earlier = current_verdict(e for e in events if isinstance(e, Verdict) and e.hypothesis == hypothesis)
    event = Verdict(session=handle.id, ts=now(at), hypothesis=hypothesis, verdict=verdict,  # type: ignore[arg-type]
                    evidence=refs, because=because, replaces=earlier.id if earlier is not None else None,
                    provenance=provenance(reconstructed))
    handle.append(event)
    return event, earlier


def _only_testing(session: str, events: list[BaseEvent], hypothesis: str, verdict: str, refs: list[str]) -> None:
    """Refuse evidence that did not test ``hypothesis`` (an attempt whose ``tests`` does not name it)."""
    attempts = {e.short_id: e for e in events if isinstance(e, Attempt)}
    testing = [a for a, e in attempts.items() if hypothesis in e.tests]
    for ref in refs:
        other, _, short = ref.rpartition("/")
        attempt = attempts.get(short) if other in ("", session) else None
        if attempt is not None and hypothesis in attempt.tests:
            continue
        tested = (f"tested {', '.join(attempt.tests)}" if attempt.tests else "tested no hypothesis") if attempt else \
            f"is an attempt of session {other}, so it tested that session's hypotheses"
        cite = (f"cite an attempt that tested it ({', '.join(testing)})" if testing else
                f"no attempt tested {hypothesis} yet: run one with 'logkit run --tests {hypothesis} -- ...'")
        alone = f"or give the reason alone: logkit hypothesis {_verb(verdict)} {hypothesis} --because '...'"
        raise BadInput(f"{ref} did not test {hypothesis}: it {tested}", fix=f"{cite}; {alone}")


def current_verdict(verdicts: Iterable[Verdict]) -> Verdict | None:
    """The verdict that stands: the latest (by time, then file order) that no other one replaces."""
    found = list(verdicts)
    replaced = {v.replaces for v in found if v.replaces}
    current = None
    for v in found:
        if v.id not in replaced and (current is None or v.ts >= current.ts):
            current = v
    return current


def standing(verdicts: Iterable[Verdict]) -> dict[str, Verdict]:
    """Hypothesis short id -> its :func:`current_verdict`, for the hypotheses one stands on (the others are open)."""
    found: dict[str, list[Verdict]] = {}
    for v in verdicts:
        found.setdefault(v.hypothesis, []).append(v)
    return {h: current for h, vs in found.items() if (current := current_verdict(vs)) is not None}


def _verb(verdict: str) -> str:
    return {"confirmed": "confirm", "refuted": "refute"}.get(verdict, verdict)


def states(events: list[BaseEvent]) -> list[HypothesisState]:
    """Every hypothesis of a session with its current verdict and the attempts testing it."""
    by_id = {e.short_id: HypothesisState(e) for e in events if isinstance(e, Hypothesis)}
    ended = {e.attempt: e.status for e in events if isinstance(e, Outcome)}
    for attempt in (e for e in events if isinstance(e, Attempt)):
        for state in filter(None, map(by_id.get, attempt.tests)):
            state.tests.append(attempt.short_id)
            if attempt.short_id in ended:
                state.outcomes[attempt.short_id] = ended[attempt.short_id]
            else:
                state.pending.append(attempt.short_id)
    verdicts = [e for e in events if isinstance(e, Verdict) and e.hypothesis in by_id]
    for hid, verdict in standing(verdicts).items():
        by_id[hid].verdict = verdict
        if verdict.replaces:
            by_id[hid].replaced = next((v for v in verdicts if v.id == verdict.replaces and v.hypothesis == hid), None)
    return list(by_id.values())
