"""Stage 2, frames: the facts of every attempt, outcome and metric as pandas DataFrames.

Contract: :func:`make_frames` is a pure function of :class:`~logkit.builder.load.Loaded`. Each
attempt becomes one :class:`AttemptFacts` (model, GPU, architecture, versions, backend axes, the
fingerprint hash, its matrix category) and one row of ``attempts``; every metric one row of
``metrics`` joined to the launch it measured. Fingerprint keys are treated generically: any key
ending in ``_backend`` is a backend axis. Missing data stays ``None``; nothing is guessed.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from .. import statuses
from ..events import Attempt, Outcome
from ..launch.flags import backend_axes, model_of
from .load import Loaded, SessionData, gc_paused, tables

__all__ = ["AttemptFacts", "Frames", "arch_of", "make_frames", "ref_of"]


def ref_of(session: str, short_id: str) -> str:
    """The knowledge-base-wide reference of an attempt: ``2026-11-14-glm5/A4``."""
    return f"{session}/{short_id}"


def arch_of(compute_cap: str | None) -> str | None:
    """``"12.0"`` -> ``"SM120"``, ``"9.0"`` -> ``"SM90"``; ``None`` when unknown."""
    if not compute_cap:
        return None
    major, _, minor = str(compute_cap).partition(".")
    if not major.isdigit():
        return None
    return f"SM{int(major)}{minor[:1] if minor[:1].isdigit() else '0'}"


@dataclass
class AttemptFacts:
    """What the site says about one attempt, derived once."""

    ref: str
    session: str
    attempt: Attempt
    outcome: Outcome | None
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
    status: str | None = None
    category: str | None = None
    smoke_failed: bool = False
    source: str = "captured"

    @property
    def gpu_label(self) -> str | None:
        """``8x NVIDIA RTX PRO 6000`` or ``None``."""
        if not self.gpu_name:
            return None
        return f"{self.gpu_count}x {self.gpu_name}" if self.gpu_count > 1 else self.gpu_name


@dataclass
class Frames:
    """The tables later stages aggregate over, plus the facts by reference."""

    facts: dict[str, AttemptFacts]
    attempts: pd.DataFrame
    metrics: pd.DataFrame


def _versions(attempt: Attempt, env: Any) -> dict[str, str]:
    packages = dict(getattr(env, "packages", None) or {})
    found: dict[str, str] = {}
    for name, keys in tables()["versions"].items():
        for key in keys:
            if packages.get(key):
                found[name] = str(packages[key])
                break
    launch = attempt.launch
    if launch is not None and launch.sglang_version and "sglang" not in found:
        found["sglang"] = launch.sglang_version
    cuda = getattr(env, "torch_cuda", None)
    if cuda:
        found["cuda"] = str(cuda)
    gpus = getattr(env, "gpus", None) or []
    if gpus and getattr(gpus[0], "driver", None):
        found["driver"] = str(gpus[0].driver)
    return found


def _category(status: str | None) -> str | None:
    return statuses.category(status)  # None: the status says nothing about the backend (ignore)


def fact_row(session: SessionData, attempt: Attempt) -> list[Any]:
    """What :func:`facts_of` derives about one attempt beyond its own events, as a JSON list for the
    read cache (:mod:`logkit.builder.load`)."""
    f = _derive_facts(session, attempt)
    return [f.model, f.gpu_name, f.gpu_count, f.arch, f.versions, f.fp_hash, f.backends, f.category,
            f.smoke_failed, f.command]


def _from_row(session: SessionData, attempt: Attempt, row: Any) -> AttemptFacts | None:
    """:func:`facts_of` from a cached :func:`fact_row`; None when the row is not shaped as written."""
    if type(row) is not list or len(row) != 10:
        return None
    model, gpu_name, gpu_count, arch, versions, fp_hash, backends, category, smoke_failed, command = row
    if (not isinstance(model, (str, type(None))) or not isinstance(gpu_name, (str, type(None)))
            or type(gpu_count) is not int or not isinstance(arch, (str, type(None))) or type(versions) is not dict
            or not isinstance(fp_hash, (str, type(None))) or type(backends) is not dict
            or not isinstance(category, (str, type(None))) or type(smoke_failed) is not bool or type(command) is not str):
        return None
    outcome = session.outcomes.get(attempt.short_id)
    launch = attempt.launch
    provenance = attempt.provenance
    return AttemptFacts(
        ref=ref_of(session.id, attempt.short_id), session=session.id, attempt=attempt, outcome=outcome,
        role=attempt.role, started=attempt.started, command=command, model=model, gpu_name=gpu_name,
        gpu_count=gpu_count, arch=arch, versions=versions,
        fingerprint=dict(launch.fingerprint) if launch is not None else {}, fp_hash=fp_hash, backends=backends,
        status=outcome.status if outcome else None, category=category, smoke_failed=smoke_failed,
        source=provenance.source if provenance else "captured",
    )


def facts_of(session: SessionData, attempt: Attempt) -> AttemptFacts:
    """The derived facts of one attempt (from the read cache's row when the session has one)."""
    row = session.fact_rows.get(attempt.short_id)
    if row is not None:
        facts = _from_row(session, attempt, row)
        if facts is not None:
            return facts
    return _derive_facts(session, attempt)


def _derive_facts(session: SessionData, attempt: Attempt) -> AttemptFacts:
    outcome = session.outcomes.get(attempt.short_id)
    launch = attempt.launch
    fingerprint = dict(launch.fingerprint) if launch is not None else {}
    stored = ({"fingerprint": launch.fingerprint, "non_default": launch.non_default, "args": launch.args}
              if launch is not None else None)
    model = model_of(stored) or getattr(attempt, "model", None)
    info = session.server_info.get(attempt.short_id)
    env = session.environments.get(attempt.short_id) or attempt.environment
    gpus = list(getattr(env, "gpus", None) or [])
    cap = getattr(gpus[0], "compute_cap", None) if gpus else None
    cap = cap or getattr(env, "device_capability", None)
    status = outcome.status if outcome else None
    smokes = session.smokes.get(attempt.short_id, [])
    smoke_failed = any(not s.ok for s in smokes)
    category = _category(status)
    if category == "works" and smoke_failed:
        category = "garbage"
    provenance = attempt.provenance
    return AttemptFacts(
        ref=ref_of(session.id, attempt.short_id),
        session=session.id,
        attempt=attempt,
        outcome=outcome,
        role=attempt.role,
        started=attempt.started,
        command=shlex.join(attempt.argv),
        model=str(model) if model else None,
        gpu_name=gpus[0].name if gpus else None,
        gpu_count=len(gpus),
        arch=arch_of(cap),
        versions=_versions(attempt, env),
        fingerprint=fingerprint,
        fp_hash=hashlib.sha1(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:10]
        if fingerprint
        else None,
        backends=backend_axes(stored, info.resolved if info is not None else None),
        status=status,
        category=category,
        smoke_failed=smoke_failed,
        source=provenance.source if provenance else "captured",
    )


def _concurrency(labels: dict[str, Any], keys: list[str]) -> float | None:
    for key in keys:
        value = labels.get(key)
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


def _item(labels: dict[str, Any], keys: list[str]) -> str | None:
    for key in keys:
        value = labels.get(key)
        if value is not None and str(value).strip():
            return str(value)
    return None


def make_frames(loaded: Loaded) -> Frames:
    """Facts and DataFrames of the whole knowledge base."""
    with gc_paused():
        return _make_frames(loaded)


def _utc(when: datetime) -> datetime:
    """``when`` with the standard library's UTC when it is a UTC instant (pandas converts a column of
    pydantic's own UTC ``TzInfo`` element by element: 20x slower); otherwise as it is."""
    tz = when.tzinfo
    if tz is UTC or tz is None or when.utcoffset():
        return when
    return when.replace(tzinfo=UTC)


_ATTEMPT_COLUMNS = ["ref", "session", "attempt", "role", "started", "model", "gpu", "arch", "sglang", "fp", "status",
                    "category", "signature"]
_METRIC_COLUMNS = ["session", "name", "value", "unit", "attempt", "server", "model", "gpu", "fp", "concurrency",
                   "item", "ts"]


def _make_frames(loaded: Loaded) -> Frames:
    facts: dict[str, AttemptFacts] = {}
    for session in loaded.sessions.values():
        for attempt in session.attempts.values():
            f = facts_of(session, attempt)
            facts[f.ref] = f
    # column by column: a million rows as dicts cost more than the frames themselves
    rows = [
        (f.ref, f.session, f.attempt.short_id, f.role, _utc(f.started), f.model, f.gpu_label, f.arch, f.versions.get("sglang"),
         f.fp_hash, f.status, f.category, f.outcome.signature if f.outcome else None)
        for f in facts.values()
    ]
    attempts = pd.DataFrame(dict(zip(_ATTEMPT_COLUMNS, map(list, zip(*rows)) if rows else [[]] * 13, strict=True)),
                            columns=_ATTEMPT_COLUMNS)
    mrows = []
    none = (None, None, None, None)
    # the label keys once, not per metric
    concurrency_keys = tables()["metrics"]["concurrency_labels"]
    item_keys = tables()["metrics"].get("item_labels", [])
    for session in loaded.sessions.values():
        sid = session.id
        launches: dict[str, tuple[str | None, ...]] = {}
        for m in session.metrics:
            server = m.server_attempt or m.attempt
            shown = launches.get(server) if server else none
            if shown is None:
                launch = facts.get(ref_of(sid, server))
                shown = launches[server] = ((launch.ref, launch.model, launch.gpu_label, launch.fp_hash)
                                            if launch else none)
            mrows.append((sid, m.name, m.value, m.unit, ref_of(sid, m.attempt) if m.attempt else None, *shown,
                          _concurrency(m.labels, concurrency_keys), _item(m.labels, item_keys), _utc(m.ts)))
    metrics = pd.DataFrame(dict(zip(_METRIC_COLUMNS, map(list, zip(*mrows)) if mrows else [[]] * 12, strict=True)),
                           columns=_METRIC_COLUMNS)
    return Frames(facts=facts, attempts=attempts, metrics=metrics)
