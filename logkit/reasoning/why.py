"""``logkit why``: has this failure been seen before, and what was decided about it?

Contract: :func:`failure_key` says what makes two failures "the same": the signature row that
decided them, or for ``other_crash`` (nothing explains it) the normalised template of its exception
line (:func:`logkit.errorlines.error_template`); an outcome recorded without a signature gets one
by classifying its own label and evidence, when that agrees with its recorded status.
:func:`seen_before` queries the index for the failed attempts that can match, reads only their
attempt and outcome events, and returns those that failed the same way, each with its
configuration (:func:`logkit.launch.flags.configuration`) and the decisions citing it; accounts
without a log that end in the same class are listed apart ("same class"). The attempt whose own
log is the one asked about (the same file, or the same bytes) is named apart
(:attr:`SeenReport.itself`). A log that shows no failure but is the own log of an attempt that
logkit's probes failed after ready (:data:`~logkit.capture.sglang.watcher.PROBE_FINDINGS`) or its
hang stop ended (:data:`~logkit.capture.sglang.outcomes.HANG_STOP`) is judged by that recorded
outcome. What is a failure at all is :func:`logkit.statuses.is_failure`. Nothing is written but the
index. :func:`as_json` is the report as ``logkit why --json`` and the MCP ``why`` tool give it.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import statuses

from ..store import files
from ..store.index import lines_at
from ..errorlines import error_template
from ..capture.sglang.outcomes import Classification as Verdict
from ..capture.sglang.outcomes import HANG_STOP, classify_text
from ..launch.flags import configuration

__all__ = ["Match", "SeenReport", "as_json", "cite_links", "cited_by", "failure_key", "seen_before"]


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
    decisions: list[tuple[str, str, str, list[str]]] = field(default_factory=list)  # (id, title, status, chosen)


@dataclass
class SeenReport:
    """The answer of ``logkit why``."""

    status: str
    label: str | None
    signature: str | None
    key: str | None  # what was compared: ``signature <id>`` or ``template <text>`` (None: nothing to compare)
    evidence: list[tuple[int, str]]
    same: list[Match]
    same_class: list[Match]  # same class, from accounts without a log or text to compare
    itself: list[str] = field(default_factory=list)  # the attempts whose log is the one asked about


def failure_key(status: str, signature: str | None, label: str | None, texts: list[str] = ()) -> str | None:  # type: ignore[assignment]
    """``signature <id>``, ``template <normalised error>`` for other_crash, or None."""
    if not statuses.is_failure(status):
        return None
    if status == "other_crash" and (signature is None or signature.startswith(("python-", "sglang-"))):
        line = label or next((t for t in texts if t.strip()), None)
        return f"template {error_template(line)}" if line else None
    return f"signature {signature}" if signature else None


def _outcome_key(o: dict[str, Any]) -> str | None:
    """The failure key of a stored outcome event (a dict)."""
    texts = [e.get("text") or "" for e in o.get("evidence") or []]
    status, label = o.get("status"), o.get("label")
    if o.get("signature"):
        return failure_key(status, o["signature"], label, texts)
    # No signature recorded: classify what the outcome says, if that agrees with its status.
    d = classify_text("\n".join([*texts, label or ""]) + "\n")
    if d.status != status:
        return None
    return failure_key(d.status, d.signature, d.label if d.status == "other_crash" else label, texts)


def cited_by(decisions: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, str, list[str]]]]:
    """Attempt ref (``session/A4``) -> the decisions (latest record of each id) citing it, a replaced one's status
    ``superseded by DR-...``."""
    from types import SimpleNamespace

    from .decisions import supersession

    latest: dict[str, dict[str, Any]] = {}
    for row in decisions:  # in (session, line) order: a later record of an id at the same time wins
        old = latest.get(row["decision_id"])
        if old is None or row["ts"] >= old["ts"]:
            latest[row["decision_id"]] = row
    later = supersession(SimpleNamespace(decision_id=row["decision_id"], supersedes=row["event"].get("supersedes"))
                         for row in decisions)
    cited: dict[str, list[tuple[str, str, str, list[str]]]] = {}
    for did, row in sorted(latest.items()):
        d, sid = row["event"], row["session"]
        options = d.get("options") or []
        chosen = [o.get("name") for o in options if o.get("chosen")]
        refs = list(d.get("evidence") or []) + [a for o in options for a in o.get("attempts") or []]
        for ref in {r if "/" in r else f"{sid}/{r}" for r in refs}:
            status = f"superseded by {', '.join(later[did])}" if later.get(did) else d.get("status")
            cited.setdefault(ref, []).append((did, d.get("title"), status, chosen))
    return cited


def _own_log(root: Path, sid: str, logs: list[Any], asked: Path, size: int, digest: list[str]) -> bool:
    """Whether one of an attempt's recorded logs is the file ``asked`` (same path, or same size and sha256)."""
    for log in logs:
        if not log:
            continue
        recorded = root / sid / log["path"]
        if asked in (recorded.resolve(), recorded.with_name(recorded.name + ".gz").resolve()):  # stored compressed
            return True
        if log.get("sha256") and log.get("size") == size:
            if not digest:  # hashed once, and only when some log has its size
                with asked.open("rb") as f:
                    digest.append(hashlib.file_digest(f, "sha256").hexdigest())
            if log["sha256"] == digest[0]:
                return True
    return False


def _candidates(snap: Any, status: str, signature: str | None) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(ref, outcome, attempt)`` of the failed attempts that can match: the same signature, or class."""
    failures = [s for s in statuses.names() if statuses.is_failure(s)]
    where = [f"a.status IN ({','.join('?' * len(failures))})", "(a.signature = ? OR a.signature IS NULL OR a.status = ?)"]
    rows = snap.conn.execute(
        "SELECT a.session, a.short_id, e.id, e.offset, e.length, o.id, o.offset, o.length"
        " FROM attempts a JOIN events e ON e.session = a.session AND e.line = a.line"
        " JOIN events o ON o.session = a.session AND o.line = (SELECT max(x.line) FROM events x"
        " WHERE x.session = a.session AND x.attempt = a.short_id AND x.kind = 'outcome')"
        f" WHERE {' AND '.join(where)} ORDER BY a.session", (*failures, signature, status)).fetchall()
    out = []
    for sid, group in itertools.groupby(rows, key=lambda r: r[0]):
        group = list(group)
        spans = [span for r in group for span in (r[2:5], r[5:8])]
        events = list(lines_at(files.events_path(snap.root, sid), spans))
        for r, attempt, outcome in zip(group, events[0::2], events[1::2], strict=True):
            out.append((f"{sid}/{r[1]}", outcome, attempt))
    return out


def _probed(snap: Any, root: Path, asked: Path, size: int, digest: list[str]) -> dict[str, Any] | None:
    """The outcome of the attempt whose own log is ``asked``, when its failure was found outside the log."""
    # by logkit's probes after ready, or its hang stop (the log just stops)
    from ..capture.sglang.watcher import PROBE_FINDINGS

    for signature, status in {**PROBE_FINDINGS, HANG_STOP: "hang"}.items():
        for ref, o, a in _candidates(snap, status, signature):
            sid = ref.rsplit("/", 1)[0]
            if o.get("signature") == signature and _own_log(root, sid, [a.get("log"), o.get("log")], asked, size, digest):
                return o
    return None


def seen_before(store: Any, verdict: Verdict, log: Path | None = None) -> SeenReport:
    """Every attempt of the store that failed like ``verdict``; ``log``: its file, whose own attempt is left out."""
    from ..store.index import current

    key = failure_key(verdict.status, verdict.signature, verdict.label, [e.text for e in verdict.evidence])
    report = SeenReport(status=verdict.status, label=verdict.label, signature=verdict.signature, key=key,
                        evidence=[(e.line, e.text) for e in verdict.evidence], same=[], same_class=[])
    asked = log.resolve() if log is not None else None
    if asked is not None and not asked.exists() and asked.with_name(asked.name + ".gz").is_file():
        asked = asked.with_name(asked.name + ".gz")  # its attempt ended and the log was stored compressed
    size, digest = (asked.stat().st_size if asked is not None else -1), []
    if key is None and asked is None:
        return report
    with current(store.root) as snap:
        if key is None and asked is not None:
            probed = _probed(snap, store.root, asked, size, digest)
            if probed is None:
                return report
            report.status, report.label, report.signature = probed["status"], probed.get("label"), probed["signature"]
            report.key = key = failure_key(report.status, report.signature, report.label)
            report.evidence = []
        found = _candidates(snap, report.status, report.signature)
        cited = cited_by(snap.decisions()) if found else {}
    for ref, o, a in sorted(found, key=lambda item: (item[1].get("ended") or "", item[0])):
        sid, short = ref.rsplit("/", 1)
        if asked is not None and _own_log(store.root, sid, [a.get("log"), o.get("log")], asked, size, digest):
            report.itself.append(ref)
            continue
        m = Match(ref, sid, short, o["status"], o.get("label"), (o.get("ended") or "")[:10],
                  configuration(a.get("launch")), cited.get(ref, []))
        if _outcome_key(o) == key:
            report.same.append(m)
        elif o["status"] == report.status and (not o.get("evidence")
                                                or (o.get("provenance") or {}).get("source") == "reconstructed"):
            report.same_class.append(m)
    return report


def cite_links(root: Path, report: SeenReport, config: Path | None = None) -> dict[str, str]:
    """The Markdown link (``logkit cite``) of every decision the report's matches name, by id."""
    from ..builder.cite import cite

    return {did: cite(root, did, config, warn=lambda _m: None)
            for m in report.same + report.same_class for did, *_ in m.decisions}


def as_json(report: SeenReport, links: dict[str, str]) -> dict[str, Any]:
    """The report as ``logkit why --json`` prints it (and the MCP ``why`` tool answers)."""
    def match(m: Match) -> dict[str, Any]:
        return {"attempt": m.ref, "status": m.status, "label": m.label, "date": m.when, "config": m.config,
                "decisions": [{"id": d, "title": t, "status": s, "chosen": c, "cite": links[d]}
                              for d, t, s, c in m.decisions]}
    return {"status": report.status, "label": report.label, "signature": report.signature,
            "key": report.key, "evidence": [{"line": n, "text": t} for n, t in report.evidence],
            "same": [match(m) for m in report.same], "same_class": [match(m) for m in report.same_class],
            "itself": report.itself}
