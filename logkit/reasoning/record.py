"""Record what happened without running anything: sessions, attempts, outcomes and metrics
reconstructed from a written account (``logkit record ...``).

Contract:

* Every event written here carries ``provenance.source = "reconstructed"`` with the account it
  follows in ``detail`` (``--reconstructed`` is required): the site shows it, and such an attempt
  has no log, because none was given.
* :func:`attempt` writes an ``attempt`` and, when a status is given, its ``outcome``. Its launch
  config comes from the caller (the CLI parses the argv with the SGLang flag parser); a config
  diff against the session's previous launch is computed here when the caller has none, so the
  refuted-fingerprint check knows which flags an attempt changed.
* :func:`metric` writes a ``metric`` tied to an attempt that must exist: a launch attempt is the
  ``server_attempt``, any other attempt the measuring ``attempt``.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from ..errors import BadInput
from ..events import (OUTCOME_STATUSES, Attempt, ConfigDiff, Environment, EvidenceLine, Gpu, LaunchConfig, Metric,
                      Outcome)
from ..launch.flags import diff
from ..store import SessionHandle, Store, Txn
from .common import check_refs, now, provenance

__all__ = ["attempt", "environment", "metric", "session"]


def _required(reconstructed: str | None) -> str:
    if not reconstructed or not reconstructed.strip():
        raise BadInput("recording without running needs the account it follows",
                       fix='add --reconstructed "seed 000: msg 5976" (or use logkit run to capture a real run)')
    return reconstructed


def session(store: Store, title: str, *, session_id: str | None, goal: str | None, tags: list[str], at: str | None,
            reconstructed: str | None) -> SessionHandle:
    """Create a reconstructed session (and make it current)."""
    return store.create(title, goal=goal, tags=tags, session_id=session_id, when=now(at),
                        provenance=provenance(_required(reconstructed)))


def environment(*, gpu: str | None, compute_cap: str | None, count: int, first_index: int = 0,
                packages: dict[str, str | None] | None = None,
                env: dict[str, str] | None = None) -> Environment | None:
    """An environment made of what an account states (GPUs, packages, environment variables)."""
    if count < 1:
        raise BadInput(f"--count {count} must be at least 1", fix="--count 8")
    if compute_cap and not gpu:
        raise BadInput("--compute-cap needs --gpu NAME", fix='--gpu "NVIDIA RTX PRO 6000 Blackwell" --compute-cap 12.0')
    gpus = [Gpu(index=first_index + i, name=gpu, compute_cap=compute_cap) for i in range(count)] if gpu else []
    if not (gpus or packages or env):
        return None
    return Environment(gpus=gpus, packages=dict(packages or {}), env=dict(env or {}), device_capability=compute_cap)


def attempt(handle: SessionHandle, argv: list[str], *, role: str, status: str | None, label: str | None,
            outcome_label: str | None, evidence_text: list[str], tests: list[str], environment: Environment | None,
            launch: LaunchConfig | None, at: str | None, duration_s: float | None, reconstructed: str | None,
            model: str | None = None) -> tuple[Attempt, Outcome | None]:
    """Write a reconstructed attempt and (with ``status``) its outcome."""
    prov = provenance(_required(reconstructed))
    if not argv:
        raise BadInput("an attempt needs its command", fix='--cmd "python -m sglang.launch_server ..."')
    if status is not None and status not in OUTCOME_STATUSES:
        raise BadInput(f"unknown outcome status {status!r}", fix="one of: " + ", ".join(OUTCOME_STATUSES))
    events = handle.read().events
    check_refs(handle, events, tests, allow="H")
    started = now(at)
    if launch is not None and launch.diff is None:
        previous = next((e for e in reversed(events) if isinstance(e, Attempt) and e.launch is not None), None)
        if previous is not None and previous.launch is not None:  # what it changed (chosen flags)
            prev = {"short_id": previous.short_id, "launch": previous.launch.model_dump(mode="json")}
            changes = ConfigDiff.model_validate(diff(launch.model_dump(mode="json"), prev))
            launch = launch.model_copy(update={"diff": changes})

    def build(txn: Txn) -> Attempt:
        return Attempt(session=handle.id, ts=started, short_id=txn.next_short_id("A"), argv=argv,
                       role=role, started=started, tests=tests, environment=environment,  # type: ignore[arg-type]
                       launch=launch, label=label, provenance=prov, model=model)

    made = handle.append_new(build)
    assert isinstance(made, Attempt)
    outcome = None
    if status is not None:
        ended = started + timedelta(seconds=duration_s or 0)
        # line 0: the text is quoted from the account, not from a log (there is none).
        outcome = Outcome(session=handle.id, ts=ended, attempt=made.short_id, status=status,  # type: ignore[arg-type]
                          label=outcome_label, ended=ended, duration_s=duration_s, provenance=prov,
                          evidence=[EvidenceLine(line=0, text=t) for t in evidence_text])
        handle.append(outcome, durable=True)
    return made, outcome


def metric(handle: SessionHandle, name: str, value: float, *, attempt_id: str, unit: str | None,
           labels: dict[str, Any], at: str | None, reconstructed: str | None) -> Metric:
    """Write one reconstructed figure, tied to an existing attempt."""
    if not math.isfinite(value):
        raise BadInput(f"metric {name} = {value}: a figure must be a finite number",
                       fix="give the measured value, e.g. logkit record metric output_throughput 225.4 ...")
    prov = provenance(_required(reconstructed))
    events = handle.read().events
    check_refs(handle, events, [attempt_id], allow="A")
    target = next(e for e in events if isinstance(e, Attempt) and e.short_id == attempt_id)
    server = attempt_id if target.role == "launch" else None
    measured = None if target.role == "launch" else attempt_id
    if measured is not None:
        # A bench attempt measured the most recent launch before it.
        launches = [e for e in events if isinstance(e, Attempt) and e.role == "launch" and e.ts <= target.ts]
        server = launches[-1].short_id if launches else None
    event = Metric(session=handle.id, ts=now(at), name=name, value=value, unit=unit, attempt=measured,
                   server_attempt=server, labels=labels, provenance=prov)
    handle.append(event)
    return event

