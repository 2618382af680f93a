"""``logkit why``: has this failure been seen before, and what was decided about it?

Contract: :func:`failure_key` says what makes two failures "the same": the signature row that
decided them, or, for ``other_crash`` (nothing explains it), the normalised template of its
exception line (:func:`logkit.errorlines.error_template`). An outcome recorded without a signature
(reconstructed from a written account, or by an older logkit) gets one by classifying its own
label and evidence lines, when that agrees with its recorded status. :func:`seen_before` reads every
session of the store and returns the attempts that failed the same way, each with its
configuration (the flags chosen, else its fingerprint) and the decisions that cite it (as evidence,
or as an option's attempt). Attempts reconstructed from an account (no log to compare) that
end in the same class are listed apart, as "same class". The attempt whose log is the one asked
about (the same file, or the same bytes: an imported copy) is not "seen before": it is named apart
(:attr:`SeenReport.itself`). What is a failure at all is :func:`logkit.statuses.is_failure`.
Reading the store goes through :meth:`logkit.store.Store.read_all`; nothing is written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import statuses
from ...errorlines import error_template
from ...events import Attempt, Decision, Outcome
from ...store import Store
from .outcomes import Classification as Verdict
from .outcomes import classify_text

__all__ = ["Match", "SeenReport", "failure_key", "seen_before"]


@dataclass
class Match:
    """One earlier attempt that failed the same way."""

    ref: str
    session: str
    attempt: str
    status: str
    label: str | None
    when: str
    config: dict[str, Any]
    #: (decision id, title, status, chosen option names)
    decisions: list[tuple[str, str, str, list[str]]] = field(default_factory=list)


@dataclass
class SeenReport:
    """The answer of ``logkit why``."""

    status: str
    label: str | None
    signature: str | None
    #: what was compared: ``signature <id>`` or ``template <text>`` (None: nothing to compare)
    key: str | None
    evidence: list[tuple[int, str]]
    same: list[Match]
    #: same class, from accounts without a log or text to compare
    same_class: list[Match]
    #: the attempts whose log is the one asked about (``session/A4``): not listed as seen before
    itself: list[str] = field(default_factory=list)


def failure_key(status: str, signature: str | None, label: str | None, texts: list[str] = ()) -> str | None:  # type: ignore[assignment]
    """``signature <id>``, ``template <normalised error>`` for other_crash, or None."""
    if not statuses.is_failure(status):
        return None
    if status == "other_crash" and (signature is None or signature.startswith(("python-", "sglang-"))):
        line = label or next((t for t in texts if t.strip()), None)
        return f"template {error_template(line)}" if line else None
    return f"signature {signature}" if signature else None


def _outcome_key(o: Outcome) -> str | None:
    texts = [e.text for e in o.evidence]
    if o.signature:
        return failure_key(o.status, o.signature, o.label, texts)
    # No signature recorded: classify what the outcome says, if that agrees with its status.
    d = classify_text("\n".join([*(t for t in texts), o.label or ""]) + "\n")
    if d.status != o.status:
        return None
    return failure_key(d.status, d.signature, d.label if d.status == "other_crash" else o.label, texts)


def _config(a: Attempt | None) -> dict[str, Any]:
    if a is None or a.launch is None:
        return {}
    return dict(a.launch.non_default or a.launch.fingerprint or {})


def _cites(d: Decision, session: str) -> set[str]:
    """Attempt refs (``session/A4``) a decision cites, as evidence or as an option's attempts."""
    refs = list(d.evidence) + [a for o in d.options for a in o.attempts]
    return {r if "/" in r else f"{session}/{r}" for r in refs}


def _own_log(root: Path, sid: str, logs: list[Any], asked: Path, size: int, digest: list[str]) -> bool:
    """Whether one of an attempt's recorded logs is the file ``asked`` (same path, or same size and sha256)."""
    for log in logs:
        if log is None:
            continue
        if (root / sid / log.path).resolve() == asked:
            return True
        if log.sha256 and log.size == size:
            if not digest:  # hashed once, and only when some log has its size
                with asked.open("rb") as f:
                    digest.append(hashlib.file_digest(f, "sha256").hexdigest())
            if log.sha256 == digest[0]:
                return True
    return False


def seen_before(store: Store, verdict: Verdict, log: Path | None = None) -> SeenReport:
    """Every attempt of the store that failed like ``verdict`` (a classified log or pasted error);
    ``log``: the file it was read from, whose own attempt is not listed."""
    texts = [e.text for e in verdict.evidence]
    key = failure_key(verdict.status, verdict.signature, verdict.label, texts)
    attempts: dict[str, Attempt] = {}
    outcomes: dict[str, Outcome] = {}
    decisions: dict[str, tuple[Decision, str]] = {}
    for sid, result in sorted(store.read_all().items()):
        for ev in result.events:
            if isinstance(ev, Attempt):
                attempts[f"{sid}/{ev.short_id}"] = ev
            elif isinstance(ev, Outcome):
                outcomes[f"{sid}/{ev.attempt}"] = ev  # the latest outcome of an attempt wins
            elif isinstance(ev, Decision):
                old = decisions.get(ev.decision_id)
                if old is None or ev.ts >= old[0].ts:
                    decisions[ev.decision_id] = (ev, sid)
    cited: dict[str, list[tuple[str, str, str, list[str]]]] = {}
    for did, (d, sid) in sorted(decisions.items()):
        chosen = [o.name for o in d.options if o.chosen]
        for ref in _cites(d, sid):
            cited.setdefault(ref, []).append((did, d.title, d.status, chosen))
    same: list[Match] = []
    same_class: list[Match] = []
    itself: list[str] = []
    asked = log.resolve() if log is not None else None
    size, digest = (asked.stat().st_size if asked is not None else -1), []
    for ref, o in sorted(outcomes.items(), key=lambda kv: (kv[1].ended, kv[0])):
        if key is None or not statuses.is_failure(o.status):
            continue
        a = attempts.get(ref)
        sid, short = ref.rsplit("/", 1)
        if asked is not None and _own_log(store.root, sid, [a.log if a else None, o.log], asked, size, digest):
            itself.append(ref)
            continue
        m = Match(ref=ref, session=sid, attempt=short, status=o.status, label=o.label,
                  when=o.ended.date().isoformat(), config=_config(a), decisions=cited.get(ref, []))
        ok = _outcome_key(o)
        if ok == key:
            same.append(m)
        elif o.status == verdict.status and (not o.evidence or getattr(o.provenance, "source", None) == "reconstructed"):
            same_class.append(m)
    return SeenReport(status=verdict.status, label=verdict.label, signature=verdict.signature, key=key,
                      evidence=[(e.line, e.text) for e in verdict.evidence], same=same, same_class=same_class,
                      itself=itself)
