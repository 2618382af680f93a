"""Stage 2, frames: the facts of every attempt, outcome and metric as plain Python rows.

Contract: :func:`make_frames` is a pure function of :class:`~logkit.builder.load.Loaded`. Each
``attempts`` row of the index becomes one :class:`AttemptFacts` (every fact as the index derived
it, nothing derived again); every ``metrics`` row one :class:`MetricRow` joined to the launch it
measured. Missing data stays ``None``. No pandas: a page aggregates a few thousand rows at most,
and pandas and NumPy cost a build ~90 MB and a second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from ..reasoning.matrix import with_smoke
from .load import Event, Loaded, SessionData, attempt_rows, gc_paused, parse_time

__all__ = ["AttemptFacts", "FACT_COLUMNS", "Frames", "MetricRow", "facts_of", "make_frames", "ref_of"]


def ref_of(session: str, short_id: str) -> str:
    """The knowledge-base-wide reference of an attempt: ``2026-11-14-glm5/A4``."""
    return f"{session}/{short_id}"


@dataclass(eq=False, slots=True)
class AttemptFacts:
    """One ``attempts`` row of the index; :attr:`attempt` and :attr:`outcome` read its lines on first use."""

    ref: str
    session: str
    short_id: str
    role: str
    started: datetime
    command: str
    model: str | None = None
    gpu_name: str | None = None
    gpu_count: int = 0
    arch: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    fp_hash: str | None = None
    backends: dict[str, str] = field(default_factory=dict)
    #: the outcome's status; None while the attempt has no outcome
    status: str | None = None
    category: str | None = None
    smoke_failed: bool = False
    source: str = "captured"
    #: the attempt's own label (``--label``)
    name: str | None = None
    #: the outcome's label, signature and end
    label: str | None = None
    signature: str | None = None
    ended: datetime | None = None
    data: SessionData | None = field(default=None, repr=False)

    @property
    def attempt(self) -> Event:
        """The attempt's line (:class:`~logkit.builder.load.Heavy`; reads the session's if not in memory)."""
        assert self.data is not None
        return self.data.heavy.attempts[self.short_id]

    @property
    def outcome(self) -> Event | None:
        """The outcome's line, if any (reads the session's lines if they are not in memory)."""
        if self.status is None or self.data is None:
            return None
        return self.data.heavy.outcomes.get(self.short_id)

    def outcome_alone(self) -> Event | None:
        """:attr:`outcome`, without reading the session's other lines when they are not in memory."""
        if self.status is None or self.data is None:
            return None
        return self.data.outcome_of(self.short_id)

    @property
    def gpu_label(self) -> str | None:
        """``8x NVIDIA RTX PRO 6000`` or ``None``."""
        if not self.gpu_name:
            return None
        return f"{self.gpu_count}x {self.gpu_name}" if self.gpu_count > 1 else self.gpu_name


class MetricRow(NamedTuple):
    """One figure joined to its launch (``server``: its reference, then its model, GPU and key; None: unknown)."""

    session: str
    name: str
    value: float
    unit: str | None
    attempt: str | None
    server: str | None
    model: str | None
    gpu: str | None
    fp: str | None
    concurrency: float | None
    item: str | None
    ts: datetime
    dataset: str | None
    input_len: float | None
    output_len: float | None

    @property
    def workload(self) -> tuple[Any, ...]:
        """(concurrency, dataset, input length, output length)."""
        return (self.concurrency, self.dataset, self.input_len, self.output_len)


@dataclass
class Frames:
    """The rows later stages aggregate over, plus the facts by reference."""

    facts: dict[str, AttemptFacts]
    metrics: list[MetricRow]


#: The ``attempts`` columns :func:`facts_of` reads: all a build reads of every attempt (the others
#: are for the CLI and ``export``).
FACT_COLUMNS = ("session", "short_id", "role", "started", "command", "model", "gpu", "gpu_count", "arch", "versions",
                "configuration", "config_key", "backends", "status", "category", "smoke_ok", "source", "label",
                "outcome_label", "signature", "ended")


def facts_of(row: dict[str, Any], session: SessionData | None, memo: dict[Any, Any] | None = None) -> AttemptFacts:
    """The facts of one ``attempts`` row; ``memo`` shares one object per repeated string or JSON dict."""
    memo = {} if memo is None else memo

    def _json(text: str | None) -> dict[str, Any]:
        if not text:
            return {}
        got = memo.get(("json", text))
        if got is None:
            got = memo[("json", text)] = json.loads(text)
        return got

    row = {k: memo.setdefault(v, v) if type(v) is str and k not in ("started", "ended", "short_id") else v
           for k, v in row.items()}
    smoke_failed = row["smoke_ok"] == 0
    return AttemptFacts(
        ref=ref_of(row["session"], row["short_id"]), session=row["session"], short_id=row["short_id"],
        role=row["role"] or "", started=parse_time(row["started"]), command=row["command"] or "",
        model=row["model"], gpu_name=row["gpu"], gpu_count=row["gpu_count"] or 0, arch=row["arch"],
        versions=_json(row["versions"]), fingerprint=_json(row["configuration"]), fp_hash=row["config_key"],
        backends=_json(row["backends"]), status=row["status"],
        category=with_smoke(row["category"], smoke_failed),  # the matrix cell's rule, one owner
        smoke_failed=smoke_failed, source=row["source"] or "captured", name=row["label"],
        label=row["outcome_label"], signature=row["signature"],
        ended=parse_time(row["ended"]) if row["ended"] else None, data=session)


@gc_paused()  # many rows, no cycles
def make_frames(loaded: Loaded) -> Frames:
    """The facts of every attempt and the metric rows joined to their launches."""
    facts: dict[str, AttemptFacts] = {}
    memo: dict[Any, Any] = {}
    for values in attempt_rows(loaded.conn, FACT_COLUMNS):  # one at a time, never all in memory
        row = dict(zip(FACT_COLUMNS, values, strict=True))
        f = facts_of(row, loaded.sessions.get(row["session"]), memo)
        facts[f.ref] = f
    mrows: list[MetricRow] = []
    none = (None, None, None, None)
    for session in loaded.sessions.values():
        sid = session.id
        launches: dict[str, tuple[str | None, ...]] = {}
        for m in session.metric_rows:
            server = m.server_attempt or m.attempt
            shown = launches.get(server) if server else none
            if shown is None:
                launch = facts.get(ref_of(sid, server))
                shown = launches[server] = ((launch.ref, launch.model, launch.gpu_label, launch.fp_hash)
                                            if launch else none)
            mrows.append(MetricRow(sid, m.name, m.value, m.unit, ref_of(sid, m.attempt) if m.attempt else None, *shown,
                                   m.concurrency, m.item, m.ts, m.dataset, m.input_len, m.output_len))
    return Frames(facts=facts, metrics=mrows)
