"""One attempt whole, two attempts side by side, and the store as tidy tables: ``logkit show``,
``logkit compare`` and ``logkit export``.

Contract: every fact comes from the index (:mod:`logkit.store.index`, one snapshot per command):
the attempt's row (:data:`logkit.store.derive.ATTEMPT_COLUMNS`: configuration, versions, status,
category), its events read at their recorded offsets (the attempt, its probed environment, its
outcome with evidence lines), its metrics, the verdicts and decisions citing it. The configuration
is :func:`logkit.launch.flags.configuration`'s (the port and other run-specific values are not part
of it), the environment compared is :func:`logkit.launch.flags.watched_env`'s, a matrix cell is
:func:`logkit.reasoning.matrix.cells`' of the index rows (:func:`~logkit.reasoning.matrix.row_of`).
The raw log is read through :mod:`logkit.logfiles` (plain or compressed alike). No cache.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import BadInput, NotFound
from .store import files

__all__ = ["AttemptRecord", "WHATS", "compare", "compare_text", "export_rows", "load", "resolve", "show_json", "show_text"]

#: the kinds of event that belong to one attempt, besides the attempt line itself
_OWN_KINDS = ("environment", "outcome", "launch_config", "server_info", "smoke")


@dataclass
class AttemptRecord:
    """Everything recorded about one attempt."""

    session: str
    short_id: str
    row: dict[str, Any]
    attempt: dict[str, Any]
    environment: dict[str, Any]
    outcome: dict[str, Any] | None
    smokes: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[tuple[str, str, str]] = field(default_factory=list)
    log: Path | None = None
    log_name: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.session}/{self.short_id}"

    @property
    def configuration(self) -> dict[str, Any]:
        return json.loads(self.row["configuration"]) if self.row.get("configuration") else {}

    @property
    def versions(self) -> dict[str, Any]:
        return json.loads(self.row["versions"]) if self.row.get("versions") else {}


def resolve(ref: str, current: str | None) -> tuple[str, str]:
    """``A3`` (in the current session) or ``SESSION/A3`` as (session, short id)."""
    session, _, short = ref.rpartition("/")
    if not short or not short[:1] == "A" or not short[1:].isdigit():
        raise BadInput(f"{ref!r} is not an attempt", fix="name one as A3 or SESSION/A3 (see 'logkit session show')")
    if not session:
        if current is None:
            raise NotFound(f"{ref} names no session and there is no current one",
                           fix=f"write it as SESSION/{short} (see 'logkit session list')")
        session = current
    files.check_session_id(session)
    return session, short


def _events(snap: Any, session: str, short: str) -> list[dict[str, Any]]:
    spans = snap.conn.execute(
        "SELECT id, offset, length FROM events WHERE session = ? AND (kind = 'attempt' AND short_id = ?"
        f" OR attempt = ? AND kind IN ({','.join('?' * len(_OWN_KINDS))})) ORDER BY line",
        (session, short, short, *_OWN_KINDS)).fetchall()
    from .store.snapshot import lines_at

    return list(lines_at(files.events_path(snap.root, session), spans))


def load(snap: Any, session: str, short: str, *, decisions: list[dict[str, Any]] | None = None) -> AttemptRecord:
    """The record of ``session/short`` from the snapshot ``snap``."""
    from .abandon import confined_log
    from .logfiles import log_file

    rows = snap.attempts(session=session, short_id=short)
    if not rows:
        known = snap.sessions(session=session)
        if not known:
            raise NotFound(f"no session {session} in {snap.root}", fix="see 'logkit session list'")
        damaged = snap.problems(session=session)
        if damaged:  # its line may be one of them: say which, as the readers that warn do
            lines = ", ".join(str(p.line) for p in damaged[:5]) + (", ..." if len(damaged) > 5 else "")
            raise NotFound(f"no attempt {short} in session {session}; {len(damaged)} line(s) of "
                           f"{damaged[0].path} could not be read (line {lines}): it may be on one of them",
                           fix=f"fix or delete those lines ('logkit session show {session}' says what is wrong "
                           "with each)")
        raise NotFound(f"no attempt {short} in session {session}", fix=f"see 'logkit session show {session}'")
    attempt, environment, outcome, smokes = {}, {}, None, []
    for event in _events(snap, session, short):
        kind = event.get("kind")
        if kind == "attempt":
            attempt = event
            environment = event.get("environment") or environment
        elif kind == "environment":
            environment = event.get("environment") or environment
        elif kind == "outcome":
            outcome = event
        elif kind == "smoke":
            smokes.append(event)
    metrics = [m for m in snap.metrics(session=session) if short in (m["attempt"], m["server_attempt"])]
    verdicts = [v for v in snap.verdicts(session=session) if short in json.loads(v["evidence"] or "[]")]
    from .reasoning.why import cited_by as cited  # the one rule of which decisions cite an attempt

    ref = f"{session}/{short}"
    found = cited(decisions if decisions is not None else snap.decisions()).get(ref, [])
    log_rel = ((outcome or {}).get("log") or attempt.get("log") or {}).get("path")
    log = None
    if log_rel and confined_log(snap.root / session, log_rel) is not None:
        log = log_file(snap.root / session, log_rel)
    return AttemptRecord(session=session, short_id=short, row=rows[-1], attempt=attempt, environment=environment,
                         outcome=outcome, smokes=smokes, metrics=metrics, verdicts=verdicts,
                         decisions=[(d, t or "", s or "") for d, t, s, _chosen in found], log=log, log_name=log_rel)


def _tail(rec: AttemptRecord, lines: int) -> list[str]:
    from .logfiles import tail

    if rec.log is None or lines <= 0:
        return []
    text = tail(rec.log, 1 << 16).decode("utf-8", "replace")
    return text.splitlines()[-lines:]


def _where(m: dict[str, Any]) -> str:
    """`` at concurrency 16 (item)``: where a metric was measured."""
    where = f" at concurrency {m['concurrency']:g}" if m.get("concurrency") is not None else ""
    return where + (f" ({m['item']})" if m.get("item") else "")


def _fmt_metric(m: dict[str, Any]) -> str:
    from .builder.load import metric_label

    unit = f" {m['unit']}" if m.get("unit") else ""
    by = f"  [measured by {m['attempt']}]" if m.get("attempt") and m["attempt"] != m.get("server_attempt") else ""
    return f"{metric_label(m['name'])} = {m['value']:g}{unit}{_where(m)}{by}"


def show_text(rec: AttemptRecord, tail_lines: int = 20) -> str:
    """``logkit show``'s text."""
    r = rec.row
    out = [f"{rec.ref}  {r['role']}" + (f"  ({r['label']})" if r.get("label") else "")]
    out.append(f"  started {r['started']}" + (f", ended {r['ended']}" if r.get("ended") else ", still running"))
    out.append(f"  command: {r['command']}")
    if r.get("model") or r.get("gpu"):
        gpu = f"{r['gpu_count']}x {r['gpu']}" if r.get("gpu_count") and r.get("gpu") else r.get("gpu") or "GPU not recorded"
        out.append(f"  model {r.get('model') or 'not recorded'} on {gpu} ({r.get('arch') or 'architecture unknown'})")
    conf = rec.configuration
    out.append("configuration:" + ("" if conf else " none chosen"))
    out += [f"  {k} = {v}" for k, v in conf.items()]
    env = rec.environment or {}
    if rec.versions:
        out.append("versions: " + ", ".join(f"{k} {v}" for k, v in sorted(rec.versions.items())))
    if env:
        shown = [f"{k} {env[k]}" for k in ("host", "python") if env.get(k)]
        if shown:
            out.append("environment: " + ", ".join(shown))
        from .launch.flags import watched_env

        watched = watched_env(env.get("env"))
        out += [f"  {k}={v}" for k, v in sorted(watched.items())]
    o = rec.outcome
    if o is None:
        out.append("outcome: none yet (running, or its recorder is gone: 'logkit status' says which)")
    else:
        took = f" after {o['duration_s']:.1f}s" if o.get("duration_s") is not None else ""
        code = f", exit {o['exit_code']}" if o.get("exit_code") is not None else ""
        out.append(f"outcome: {o['status']}{took}{code}" + (f": {o['label']}" if o.get("label") else ""))
        if o.get("signature"):
            out.append(f"  signature {o['signature']}")
        for line in o.get("evidence") or []:  # line 0: quoted from a written account, no log
            out.append(f"  {line.get('line') or 'account':>7}: {str(line.get('text', ''))[:200]}")
    for s in rec.smokes:
        out.append("smoke: " + ("ok" if s.get("ok") else "FAILED") + (f": {s.get('reason')}" if s.get("reason") else ""))
    if rec.metrics:
        out.append("metrics:")
        out += [f"  {_fmt_metric(m)}" for m in rec.metrics]
    if rec.verdicts:
        out.append("evidence for:")
        out += [f"  {v['hypothesis']} {v['verdict']}" + (f": {v['because']}" if v.get("because") else "")
                for v in rec.verdicts]
    if rec.decisions:
        out.append("cited by:")
        out += [f"  {d} ({s}) {t}" for d, t, s in rec.decisions]
    if rec.log_name:
        if rec.log is None:
            out.append(f"log: {rec.log_name} (not on disk)")
        else:
            out.append(f"log: {rec.log}" + (" (compressed; logkit reads it as text)" if rec.log.suffix == ".gz" else ""))
            tail = _tail(rec, tail_lines)
            if tail:
                out.append(f"last {len(tail)} lines:")
                out += [f"  {line[:300]}" for line in tail]
    return "\n".join(out)


def show_json(rec: AttemptRecord, tail_lines: int = 20) -> dict[str, Any]:
    """``logkit show --json``."""
    return {"attempt": rec.ref, "row": {k: v for k, v in rec.row.items() if k not in ("configuration", "versions")},
            "configuration": rec.configuration, "versions": rec.versions, "environment": rec.environment,
            "outcome": rec.outcome, "smokes": rec.smokes, "metrics": rec.metrics, "verdicts": rec.verdicts,
            "decisions": [{"id": d, "title": t, "status": s} for d, t, s in rec.decisions],
            "log": str(rec.log) if rec.log else None, "tail": _tail(rec, tail_lines)}


def compare(a: AttemptRecord, b: AttemptRecord) -> dict[str, Any]:
    """Two attempts side by side: configuration (no run-specific values), environment, versions, outcomes, metrics."""
    from .launch.flags import watched_env

    def diff(x: dict[str, Any], y: dict[str, Any]) -> dict[str, list[Any]]:
        return {k: [x.get(k), y.get(k)] for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)}

    def metrics(rec: AttemptRecord) -> dict[tuple[str, Any, Any], float]:
        return {(m["name"], m.get("concurrency"), m.get("item")): m["value"] for m in rec.metrics}

    ma, mb = metrics(a), metrics(b)
    return {
        "a": a.ref, "b": b.ref,
        "configuration": diff(a.configuration, b.configuration),
        "environment": diff(watched_env((a.environment or {}).get("env")), watched_env((b.environment or {}).get("env"))),
        "versions": diff(a.versions, b.versions),
        "outcome": [[(r.outcome or {}).get("status"), (r.outcome or {}).get("label")] for r in (a, b)],
        "metrics": [{"name": k[0], "concurrency": k[1], "item": k[2], "a": ma.get(k), "b": mb.get(k)}
                    for k in sorted(set(ma) | set(mb), key=lambda k: (k[0], k[1] or 0, str(k[2] or "")))],
    }


def compare_text(c: dict[str, Any]) -> str:
    """``logkit compare``'s text."""
    from .builder.load import metric_label

    out = [f"{c['a']}  vs  {c['b']}"]
    for part in ("configuration", "environment", "versions"):
        out.append(f"{part}:" if c[part] else f"{part}: same")
        out += [f"  {k}: {_v(x)} -> {_v(y)}" for k, (x, y) in c[part].items()]
    out.append("outcome:")
    out += [f"  {side}: {status or 'none yet'}" + (f": {label}" if label else "")
            for side, (status, label) in zip("AB", c["outcome"], strict=True)]
    if c["metrics"]:
        out.append("metrics (A | B):")
        for m in c["metrics"]:
            out.append(f"  {metric_label(m['name'])}{_where(m)}: {_num(m['a'])} | {_num(m['b'])}"
                       + (f"  ({m['b'] / m['a']:.2f}x)" if m["a"] and m["b"] is not None else ""))
    return "\n".join(out)


def _v(value: Any) -> str:
    return "unset" if value is None else str(value)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


#: what ``logkit export --what`` can write: one row per attempt, per metric, per matrix cell
WHATS = ("attempts", "metrics", "matrix")


def export_rows(snap: Any, what: str) -> list[dict[str, Any]]:
    """The tidy rows of ``what`` (see :data:`WHATS`), plain values (JSON columns kept as JSON text)."""
    if what == "attempts":
        rows = snap.attempts()
        for r in rows:
            r["attempt"] = r.pop("short_id")
        return rows
    if what == "metrics":
        return snap.metrics()
    if what == "matrix":
        from .reasoning import matrix

        found = list(matrix.cells(matrix.row_of(r) for r in snap.attempts(role="launch")).values())
        categories = sorted({c for cell in found for c in cell.counts})  # one count column each
        out = []
        for cell in found:
            latest = cell.latest
            out.append({"model": cell.model, "axis": cell.axis, "value": cell.value, "arch": cell.arch,
                        "sglang": cell.sglang, "flashinfer": cell.flashinfer, "state": cell.state,
                        "refuted_class": cell.refuted_class, **{c: cell.counts.get(c, 0) for c in categories},
                        "attempts": len(cell.rows),
                        "latest": f"{latest.session}/{latest.attempt}" if latest else None,
                        "latest_started": latest.started if latest else None})
        return out
    raise BadInput(f"cannot export {what!r}", fix=f"use --what with one of: {', '.join(WHATS)}")
