"""Hypotheses and their verdicts: ``H3: flashinfer_trtllm MoE runs on SM120`` closed by ``A7``.

Contract:

* :func:`add` allocates the next ``H<n>`` under the session lock and appends a ``hypothesis`` event.
* :func:`close` appends a ``verdict``; the hypothesis and every evidence ref must exist (clear
  :class:`~logkit.errors.NotFound` otherwise). A later verdict overrides an earlier one.
* :func:`states` folds a session's events into one :class:`HypothesisState` per hypothesis:
  its latest verdict, the attempts that test it (``logkit run --tests H3``) and which of those are
  still pending (no outcome yet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import BadInput
from ..events import Attempt, BaseEvent, Hypothesis, Outcome, Verdict
from ..store import SessionHandle, Txn
from .common import check_refs, now, provenance

__all__ = ["HypothesisState", "add", "close", "states"]

VERDICTS = ("confirmed", "refuted", "inconclusive")


@dataclass
class HypothesisState:
    """One hypothesis as it stands now."""

    hypothesis: Hypothesis
    verdict: Verdict | None = None
    #: Attempts that test it (their ``tests`` names it), in order.
    tests: list[str] = field(default_factory=list)
    #: Of those, the ones without an outcome yet.
    pending: list[str] = field(default_factory=list)
    #: attempt -> outcome status, for those that ended.
    outcomes: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``open`` or the latest verdict."""
        return self.verdict.verdict if self.verdict else "open"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "id": self.hypothesis.short_id,
            "text": self.hypothesis.text,
            "priority": self.hypothesis.priority,
            "tags": self.hypothesis.tags,
            "status": self.status,
            "evidence": self.verdict.evidence if self.verdict else [],
            "because": self.verdict.because if self.verdict else None,
            "tests": self.tests,
            "pending": self.pending,
            "outcomes": self.outcomes,
        }


def add(
    handle: SessionHandle,
    text: str,
    *,
    priority: str = "medium",
    tags: list[str] | None = None,
    at: str | None = None,
    reconstructed: str | None = None,
) -> Hypothesis:
    """Record a new hypothesis; returns it (with its ``H<n>``)."""
    if not text.strip():
        raise BadInput("a hypothesis needs its claim", fix='logkit hypothesis add "flashinfer_trtllm MoE runs on SM120"')
    when, prov = now(at), provenance(reconstructed)

    def build(txn: Txn) -> Hypothesis:
        return Hypothesis(
            session=handle.id,
            ts=when,
            short_id=txn.next_short_id("H"),
            text=text.strip(),
            priority=priority,  # type: ignore[arg-type]
            tags=list(tags or []),
            provenance=prov,
        )

    event = handle.append_new(build)
    assert isinstance(event, Hypothesis)
    return event


def close(
    handle: SessionHandle,
    hypothesis: str,
    verdict: str,
    *,
    evidence: list[str] | None = None,
    because: str | None = None,
    at: str | None = None,
    reconstructed: str | None = None,
) -> Verdict:
    """Confirm, refute or call inconclusive ``hypothesis`` with ``evidence`` (attempt ids)."""
    if verdict not in VERDICTS:
        raise BadInput(f"unknown verdict {verdict!r}", fix="one of: " + ", ".join(VERDICTS))
    events = handle.read().events
    refs = list(evidence or [])
    check_refs(handle, events, [hypothesis], allow="H")
    check_refs(handle, events, refs, allow="A")
    if not refs and not (because and because.strip()):
        raise BadInput(
            f"a verdict on {hypothesis} needs --evidence or --because",
            fix=f"logkit hypothesis {_verb(verdict)} {hypothesis} --evidence A7 [--because '...']",
        )
    event = Verdict(
        session=handle.id,
        ts=now(at),
        hypothesis=hypothesis,
        verdict=verdict,  # type: ignore[arg-type]
        evidence=refs,
        because=because,
        provenance=provenance(reconstructed),
    )
    handle.append(event)
    return event


def _verb(verdict: str) -> str:
    return {"confirmed": "confirm", "refuted": "refute"}.get(verdict, verdict)


def states(events: list[BaseEvent]) -> list[HypothesisState]:
    """Every hypothesis of a session with its current verdict and the attempts testing it."""
    by_id: dict[str, HypothesisState] = {}
    for event in events:
        if isinstance(event, Hypothesis):
            by_id[event.short_id] = HypothesisState(event)
    ended = {e.attempt: e.status for e in events if isinstance(e, Outcome)}
    for event in events:
        if isinstance(event, Verdict) and event.hypothesis in by_id:
            current = by_id[event.hypothesis].verdict
            if current is None or event.ts >= current.ts:
                by_id[event.hypothesis].verdict = event
        elif isinstance(event, Attempt):
            for ref in event.tests:
                state = by_id.get(ref)
                if state is None:
                    continue
                state.tests.append(event.short_id)
                if event.short_id in ended:
                    state.outcomes[event.short_id] = ended[event.short_id]
                else:
                    state.pending.append(event.short_id)
    return list(by_id.values())
