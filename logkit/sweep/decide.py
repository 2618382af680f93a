"""A decision record proposed from a sweep: options = its cells, evidence = their attempts.

Contract: :func:`propose` writes a draft (TOML, commented) the user edits: title, context, the
decision, ``chosen`` (the best working cell by default), one ``[[option]]`` per cell with why it
lost (a working cell: ``slower`` only when :func:`logkit.reasoning.matrix.compare` finds the
intervals apart, else ``tied``, with both figures and the runs, and the decision says throughput
does not choose between tied cells) and its hypothesis and attempts, the evidence, consequences,
status. Nothing is recorded until :func:`accept` reads the edited draft back and records it
(:func:`logkit.reasoning.decisions.record`) in the sweep's session, tagged with the sweep id. A
bad draft is refused with ``file:line`` and the fix, and records nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..events import DECISION_STATUSES, Decision
from ..store import Store, shared
from .spec import line_of
from .state import at_text, load, ranking

__all__ = ["accept", "draft", "propose"]

FIELDS = {"session", "sweep", "title", "status", "context", "decision", "chosen", "evidence", "consequences", "option"}


def _q(text: str | None) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text or "", ensure_ascii=False)


def draft(store: Store, sweep_id: str) -> str:
    """The TOML text of the proposed decision for ``sweep_id``."""
    view = load(store, sweep_id)
    rows = ranking(view)
    sweep = view.sweep
    works = [r for r in rows if r.status == "works"]
    best = works[0] if works else None
    at_best = at_text(best.best_at if best else None)
    limit = f" with {sweep.limit_metric} <= {sweep.limit_max:g}" if sweep.limit_metric and sweep.limit_max is not None else ""
    context = (f"Sweep {sweep.sweep} ran {len(rows)} configuration(s) of {', '.join(sweep.axes)} on "
               f"{sweep.arch or 'this GPU'}{' (SGLang ' + sweep.sglang_version + ')' if sweep.sglang_version else ''}: "
               f"{len(works)} worked, {len(rows) - len(works)} did not.")
    decision = (f"Launch with {best.key}: the highest output throughput{limit} "
                f"({best.best:,.1f} tok/s{at_best}{_runs(best)})." if best and best.best else "")
    tied = [r for r in works if r.versus is not None and r.versus.verdict == "tied"]
    if decision and tied:
        decision += (f" Tied with {', '.join(r.key for r in tied)} (the intervals overlap): throughput does not "
                     "decide between them on these runs.")
    evidence = sorted({a for r in rows for a in r.attempts}, key=lambda a: (len(a), a))
    out = [
        f"# Proposed by: logkit decide --from-sweep {sweep.sweep}",
        "# Edit what you like (title, chosen, why_not, consequences...), then record it with:",
        "#   logkit decide --from-file THIS_FILE",
        f"session = {_q(view.session)}",
        f"sweep = {_q(sweep.sweep)}",
        f"title = {_q(f'{best.key} for {sweep.title}' if best else f'No configuration of {sweep.title} works')}",
        'status = "accepted"',
        f"context = {_q(context)}",
        f"decision = {_q(decision)}",
        f"chosen = [{_q(best.key) if best else ''}]",
        f"evidence = [{', '.join(_q(a) for a in evidence)}]",
        'consequences = ""',
    ]
    for row in rows:
        if row is best:
            why = ""
        elif row.status == "works" and row.versus is not None:  # compared at the chosen one's best point
            why = f"{row.versus.verdict}: {row.versus.text()}" if row.versus.verdict != "tied" else row.versus.text()
            why += at_best
        elif row.status == "works":  # not measured at the chosen one's point: its own best, with where
            why = (f"ranked lower: {row.best:,.1f} tok/s{at_text(row.best_at)}, not measured{at_best}"
                   if row.best and best else "over the latency limit")
        else:
            why = f"{row.status}: {row.why or ''}".rstrip(": ")
        refs = ([row.hypothesis] if row.hypothesis else []) + row.attempts + ([row.refuted_by] if row.refuted_by else [])
        out += ["", "[[option]]", f"name = {_q(row.key)}", f"why_not = {_q(why)}",
                f"refs = [{', '.join(_q(r) for r in refs)}]"]
    return "\n".join(out) + "\n"


def _runs(row: Any) -> str:
    """``, median of 5 runs`` for a repeated point, else nothing."""
    n = len(row.runs.get(row.best_at or "", []))
    return f", median of {n} runs" if n > 1 else ""


def propose(store: Store, sweep_id: str, path: Path) -> Path:
    """Write the draft to ``path`` (refusing to overwrite an edited one); returns it."""
    if path.exists():
        raise BadInput(f"{path} exists already (an edited draft?)", fix=f"record it: logkit decide --from-file {path}, "
                       "or pass --write ANOTHER.toml")
    path.write_text(draft(store, sweep_id), encoding="utf-8")
    return path


def accept(store: Store, path: Path) -> Decision:
    """Record the (edited) draft at ``path`` as a decision of the sweep's session."""
    from ..reasoning import decisions

    text, data = shared.read_toml(path, fix="logkit decide --from-sweep SW-... writes a draft")
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise BadInput(f"{path}:{line_of(text, unknown[0])}: unknown key {unknown[0]!r}",
                       fix="keys: " + ", ".join(sorted(FIELDS)))
    for key in ("session", "title"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise BadInput(f"{path}:{line_of(text, key)}: {key} must be a non-empty string", fix=f'{key} = "..."')
    status = str(data.get("status") or "accepted")
    if status not in DECISION_STATUSES:
        raise BadInput(f"{path}:{line_of(text, 'status')}: status {status!r} is not a decision status",
                       fix="one of: " + ", ".join(DECISION_STATUSES))
    options = []
    for n, option in enumerate(data.get("option", []), start=1):
        if not isinstance(option, dict) or not isinstance(option.get("name"), str):
            raise BadInput(f"{path}: option {n} has no name", fix='[[option]]\nname = "moe_runner_backend=triton"')
        refs = option.get("refs", [])
        why = str(option.get("why_not") or "").replace("(", "[").replace(")", "]")
        options.append(f"{option['name']}: {why}" + (f" ({', '.join(refs)})" if refs else ""))
    chosen = data.get("chosen", [])
    if isinstance(chosen, str):
        chosen = [chosen]
    sweep = str(data.get("sweep") or "")
    return decisions.record(store.open(data["session"]), data["title"], context=data.get("context") or None,
                            decision=data.get("decision") or None, options=options, chosen=[c for c in chosen if c],
                            evidence=list(data.get("evidence", [])), consequences=data.get("consequences") or None,
                            status=status, tags=["sweep", sweep] if sweep else ["sweep"])
