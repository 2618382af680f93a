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
from datetime import datetime
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


def facts_of(session: SessionData, attempt: Attempt) -> AttemptFacts:
    """The derived facts of one attempt."""
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


def _concurrency(labels: dict[str, Any]) -> float | None:
    for key in tables()["metrics"]["concurrency_labels"]:
        value = labels.get(key)
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


def _item(labels: dict[str, Any]) -> str | None:
    for key in tables()["metrics"].get("item_labels", []):
        value = labels.get(key)
        if value is not None and str(value).strip():
            return str(value)
    return None


def make_frames(loaded: Loaded) -> Frames:
    """Facts and DataFrames of the whole knowledge base."""
    with gc_paused():
        return _make_frames(loaded)


def _make_frames(loaded: Loaded) -> Frames:
    facts: dict[str, AttemptFacts] = {}
    for session in loaded.sessions.values():
        for attempt in session.attempts.values():
            f = facts_of(session, attempt)
            facts[f.ref] = f
    rows = [
        {
            "ref": f.ref, "session": f.session, "attempt": f.attempt.short_id, "role": f.role,
            "started": f.started, "model": f.model, "gpu": f.gpu_label, "arch": f.arch,
            "sglang": f.versions.get("sglang"), "fp": f.fp_hash, "status": f.status, "category": f.category,
            "signature": f.outcome.signature if f.outcome else None,
        }
        for f in facts.values()
    ]
    attempts = pd.DataFrame(rows, columns=[
        "ref", "session", "attempt", "role", "started", "model", "gpu", "arch", "sglang", "fp", "status",
        "category", "signature",
    ])
    mrows = []
    for session in loaded.sessions.values():
        for m in session.metrics:
            server = m.server_attempt or m.attempt
            launch = facts.get(ref_of(session.id, server)) if server else None
            mrows.append({
                "session": session.id, "name": m.name, "value": m.value, "unit": m.unit,
                "attempt": ref_of(session.id, m.attempt) if m.attempt else None,
                "server": launch.ref if launch else None,
                "model": launch.model if launch else None,
                "gpu": launch.gpu_label if launch else None,
                "fp": launch.fp_hash if launch else None,
                "concurrency": _concurrency(m.labels), "item": _item(m.labels), "ts": m.ts,
            })
    metrics = pd.DataFrame(mrows, columns=[
        "session", "name", "value", "unit", "attempt", "server", "model", "gpu", "fp", "concurrency", "item", "ts",
    ])
    return Frames(facts=facts, attempts=attempts, metrics=metrics)
