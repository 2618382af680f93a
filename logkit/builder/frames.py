"""Stage 2, frames: the facts of every attempt, outcome and metric as pandas DataFrames.

Contract: :func:`make_frames` is a pure function of :class:`~logkit.builder.load.Loaded`. Each
attempt becomes one :class:`AttemptFacts` (model, GPU, architecture (:mod:`logkit.gpu`), versions,
backend axes, its configuration and its key (:func:`logkit.launch.flags.configuration`), its
matrix category) and one row of ``attempts``; every metric one row of
``metrics`` joined to the launch it measured. Fingerprint keys are treated generically: any key
ending in ``_backend`` is a backend axis. Missing data stays ``None``; nothing is guessed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from .. import statuses
from ..events import Attempt, Outcome
from ..gpu import arch_of
from ..launch.flags import backend_axes, config_key, configuration, model_of
from .load import Loaded, SessionData, gc_paused, norm_time, tables

__all__ = ["AttemptFacts", "Frames", "WORKLOAD", "fact_row", "make_frames", "ref_of"]


def ref_of(session: str, short_id: str) -> str:
    """The knowledge-base-wide reference of an attempt: ``2026-11-14-glm5/A4``."""
    return f"{session}/{short_id}"


@dataclass(eq=False, slots=True)
class AttemptFacts:
    """What the site says about one attempt, derived once (and kept in the read cache): the aggregate
    pages read these; :attr:`attempt` and :attr:`outcome` read the session's events on first use."""

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
    def attempt(self) -> Attempt:
        """The attempt event (reads the session's events if they are not in memory)."""
        assert self.data is not None
        return self.data.attempts[self.short_id]

    @property
    def outcome(self) -> Outcome | None:
        """The outcome event, if any (reads the session's events if they are not in memory)."""
        if self.status is None or self.data is None:
            return None
        return self.data.outcomes.get(self.short_id)

    @property
    def gpu_label(self) -> str | None:
        """``8x NVIDIA RTX PRO 6000`` or ``None``."""
        if not self.gpu_name:
            return None
        return f"{self.gpu_count}x {self.gpu_name}" if self.gpu_count > 1 else self.gpu_name

    def fields(self) -> dict[str, Any]:
        """Every field but the session it reads from (tests compare these)."""
        return {name: getattr(self, name) for name in self.__slots__ if name != "data"}  # type: ignore[attr-defined]


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
    """What :class:`AttemptFacts` holds of one attempt beyond its reference, as a JSON list for the
    read cache (:mod:`logkit.builder.load`): dict fields at 4, 6 and 17, times as ISO strings."""
    f = _derive_facts(session, attempt)
    return [f.model, f.gpu_name, f.gpu_count, f.arch, f.versions, f.fp_hash, f.backends, f.category,
            f.smoke_failed, f.command, f.role, f.started.isoformat(), f.status, f.signature, f.label, f.name,
            f.source, f.fingerprint, f.ended.isoformat() if f.ended else None]


_S = (str, type(None))


def _from_row(session: SessionData, short: str, row: Any) -> AttemptFacts | None:
    """:class:`AttemptFacts` from a cached :func:`fact_row`; None when the row is not shaped as written."""
    if type(row) is not list or len(row) != 19:
        return None
    (model, gpu_name, gpu_count, arch, versions, fp_hash, backends, category, smoke_failed, command, role, started,
     status, signature, label, name, source, fingerprint, ended) = row
    if (not isinstance(model, _S) or not isinstance(gpu_name, _S) or type(gpu_count) is not int
            or not isinstance(arch, _S) or type(versions) is not dict or not isinstance(fp_hash, _S)
            or type(backends) is not dict or not isinstance(category, _S) or type(smoke_failed) is not bool
            or type(command) is not str or type(role) is not str or type(started) is not str
            or not isinstance(status, _S) or not isinstance(signature, _S) or not isinstance(label, _S)
            or not isinstance(name, _S) or type(source) is not str or type(fingerprint) is not dict
            or not isinstance(ended, _S)):
        return None
    try:
        when = norm_time(datetime.fromisoformat(started))
        end = norm_time(datetime.fromisoformat(ended)) if ended is not None else None
    except ValueError:
        return None
    return AttemptFacts(
        ref=ref_of(session.id, short), session=session.id, short_id=short, role=role, started=when, command=command,
        model=model, gpu_name=gpu_name, gpu_count=gpu_count, arch=arch, versions=versions, fingerprint=fingerprint,
        fp_hash=fp_hash, backends=backends, status=status, category=category, smoke_failed=smoke_failed, source=source,
        name=name, label=label, signature=signature, ended=end, data=session,
    )


def _derive_facts(session: SessionData, attempt: Attempt) -> AttemptFacts:
    outcome = session.outcomes.get(attempt.short_id)
    launch = attempt.launch
    stored = ({"parser": launch.parser, "fingerprint": launch.fingerprint, "non_default": launch.non_default,
               "args": launch.args} if launch is not None else None)
    fingerprint = configuration(stored)
    model = model_of(stored) or getattr(attempt, "model", None)
    info = session.server_info.get(attempt.short_id)
    env = session.environments.get(attempt.short_id) or attempt.environment
    gpus = list(getattr(env, "gpus", None) or [])
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
        short_id=attempt.short_id,
        role=attempt.role,
        started=norm_time(attempt.started),
        command=shlex.join(attempt.argv),
        model=str(model) if model else None,
        gpu_name=gpus[0].name if gpus else None,
        gpu_count=len(gpus),
        arch=arch_of(env),
        versions=_versions(attempt, env),
        fingerprint=fingerprint,
        fp_hash=config_key(stored),
        backends=backend_axes(stored, info.resolved if info is not None else None),
        status=status,
        category=category,
        smoke_failed=smoke_failed,
        source=provenance.source if provenance else "captured",
        name=attempt.label,
        label=outcome.label if outcome else None,
        signature=outcome.signature if outcome else None,
        ended=norm_time(outcome.ended) if outcome is not None and outcome.ended is not None else None,
        data=session,
    )


def make_frames(loaded: Loaded) -> Frames:
    """Facts and DataFrames of the whole knowledge base."""
    with gc_paused():
        return _make_frames(loaded)


_ATTEMPT_COLUMNS = ["ref", "session", "attempt", "role", "started", "model", "gpu", "arch", "sglang", "fp", "status",
                    "category", "signature"]
#: the metric frame's columns that make a workload (:func:`logkit.launch.flags.workload`)
WORKLOAD = ["concurrency", "dataset", "input_len", "output_len"]
_METRIC_COLUMNS = ["session", "name", "value", "unit", "attempt", "server", "model", "gpu", "fp", "concurrency",
                   "item", "ts", "dataset", "input_len", "output_len"]


def _make_frames(loaded: Loaded) -> Frames:
    facts: dict[str, AttemptFacts] = {}
    for session in loaded.sessions.values():
        rows = session.fact_rows
        made = [_from_row(session, short, row) for short, row in rows.items()] if rows else []
        if rows and None not in made:
            for f in made:
                facts[f.ref] = f  # type: ignore[union-attr]
            continue
        for attempt in session.attempts.values():  # no facts kept, or damaged: from the events
            f = _derive_facts(session, attempt)
            facts[f.ref] = f
    # column by column: a million rows as dicts cost more than the frames themselves
    rows_ = [
        (f.ref, f.session, f.short_id, f.role, f.started, f.model, f.gpu_label, f.arch, f.versions.get("sglang"),
         f.fp_hash, f.status, f.category, f.signature)
        for f in facts.values()
    ]
    attempts = pd.DataFrame(dict(zip(_ATTEMPT_COLUMNS, map(list, zip(*rows_)) if rows_ else [[]] * 13, strict=True)),
                            columns=_ATTEMPT_COLUMNS)
    mrows = []
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
            mrows.append((sid, m.name, m.value, m.unit, ref_of(sid, m.attempt) if m.attempt else None, *shown,
                          m.concurrency, m.item, m.ts, m.dataset, m.input_len, m.output_len))
    columns = map(list, zip(*mrows)) if mrows else [[]] * len(_METRIC_COLUMNS)
    metrics = pd.DataFrame(dict(zip(_METRIC_COLUMNS, columns, strict=True)), columns=_METRIC_COLUMNS)
    return Frames(facts=facts, attempts=attempts, metrics=metrics)
