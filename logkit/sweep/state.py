"""Sweeps as recorded: find one (by id or by spec hash), fold its cells, rank them.

Contract: :func:`find` and :func:`load` query one snapshot of the store's index, brought up to date
first, for its ``sweep`` and ``sweep_cell`` events; :func:`load` returns a :class:`SweepView` (the
sweep, its session, the latest result per cell); :func:`ranking` orders the cells (working ones by
their best throughput within the latency limit, a point's figure the median of its runs, then the
failed ones, then those never run) and compares each working cell with the first at the first's
best bench point by :func:`logkit.reasoning.matrix.compare` (a cell not measured there is not
compared: two workloads never are); :func:`table` renders it as plain text. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import NotFound
from ..events import Sweep, SweepCellResult
from ..store import Store

__all__ = ["RankRow", "SweepView", "at_text", "find", "load", "point_text", "ranking", "table", "versus_text"]

_KINDS = ("sweep", "sweep_cell")


@dataclass
class RankRow:
    """One cell as the ranking shows it."""

    rank: int | None
    cell: str
    key: str
    status: str
    why: str | None
    throughput: dict[str, float | None] = field(default_factory=dict)  # bench label (max_concurrency=16) -> tok/s
    per_user: dict[str, float | None] = field(default_factory=dict)
    latency: dict[str, float | None] = field(default_factory=dict)
    within_limit: bool | None = None
    best: float | None = None
    attempts: list[str] = field(default_factory=list)
    hypothesis: str | None = None
    refuted_by: str | None = None
    runs: dict[str, list[float]] = field(default_factory=dict)  # bench label -> every measured run's tok/s
    best_at: str | None = None  # the bench label ``best`` comes from
    # this working cell against the first-ranked one (None for the first itself), and the label compared at
    versus: Any = None  # logkit.reasoning.matrix.Comparison
    versus_at: str | None = None


@dataclass
class SweepView:
    """A sweep and the results of its cells so far."""

    sweep: Sweep
    session: str
    results: dict[str, SweepCellResult] = field(default_factory=dict)

    @property
    def pending(self) -> list[str]:
        """Cells without a result yet (a resume runs these)."""
        return [c.id for c in self.sweep.cells if c.id not in self.results]


def _recorded(store: Store) -> list[tuple[str, dict[str, Any]]]:
    """``(session, event dict)`` of every ``sweep`` and ``sweep_cell`` event, in order, from one snapshot of the index."""
    from ..store.index import current

    with current(store.root) as snap:
        return [(row["session"], row["event"]) for s in snap.sessions() for row in snap.events(s["session"], _KINDS)]


def find(store: Store, *, sweep_id: str | None = None, spec_hash: str | None = None,
         recorded: list[tuple[str, dict[str, Any]]] | None = None) -> list[tuple[str, Sweep]]:
    """``(session, sweep)`` for every sweep with this id or spec hash, oldest first."""
    out = [(sid, Sweep.model_validate(data)) for sid, data in recorded or _recorded(store) if data["kind"] == "sweep"
           and (sweep_id is None or data.get("sweep") == sweep_id)
           and (spec_hash is None or data.get("spec_hash") == spec_hash)]
    return sorted(out, key=lambda pair: pair[1].ts)


def load(store: Store, sweep_id: str) -> SweepView:
    """The sweep ``sweep_id`` with its cell results; :class:`NotFound` names the sweeps that exist."""
    recorded = _recorded(store)
    hits = find(store, sweep_id=sweep_id, recorded=recorded)
    if not hits:
        known = sorted({d.get("sweep", "?") for _s, d in recorded if d["kind"] == "sweep"})
        raise NotFound(f"no sweep {sweep_id!r} in {store.root}", fix="known sweeps: " + (", ".join(known) or "none yet"))
    session, sweep = hits[0]
    view = SweepView(sweep, session)
    for sid, data in recorded:
        if sid == session and data["kind"] == "sweep_cell" and data.get("sweep") == sweep_id:
            view.results[data["cell"]] = SweepCellResult.model_validate(data)
    return view


def _label(labels: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in labels.items()) or "bench"


def ranking(view: SweepView) -> list[RankRow]:
    """Every cell, best first: working cells by best throughput within the limit, then the rest."""
    rows: list[RankRow] = []
    for cell in view.sweep.cells:
        result = view.results.get(cell.id)
        if result is None:
            rows.append(RankRow(None, cell.id, cell.key, "pending", "not run yet"))
            continue
        row = RankRow(None, cell.id, cell.key, result.status, result.reason, attempts=list(result.attempts),
                      hypothesis=result.hypothesis, refuted_by=result.refuted_by)
        if result.status != "works" and result.outcome and result.outcome not in (row.why or ""):
            row.why = f"{result.outcome}: {row.why}" if row.why else result.outcome
        for point in result.points:
            name = _label(point.labels)
            row.throughput[name] = point.output_throughput
            if point.output_throughput is not None:
                row.runs[name] = list(point.runs) or [point.output_throughput]
            row.per_user[name] = point.per_user
            row.latency[name] = point.latency
            if (point.output_throughput is not None and point.within_limit is not False
                    and point.output_throughput > (row.best or 0.0)):
                row.best, row.best_at = point.output_throughput, name
        within = [p.within_limit for p in result.points if p.within_limit is not None]
        row.within_limit = all(within) if within else None
        rows.append(row)
    order = {"works": 0, "failed": 1, "preflight": 2, "skipped": 3, "pending": 4}
    rows.sort(key=lambda r: (order.get(r.status, 5), -(r.best or 0.0)))
    works = [r for r in rows if r.status == "works"]
    for n, row in enumerate(works):
        row.rank = n + 1
    if works and works[0].best_at is not None:
        from ..reasoning.matrix import compare

        top = works[0]
        for row in works[1:]:
            mine = row.runs.get(top.best_at)  # the same bench point only: two workloads are never compared
            if mine:
                row.versus, row.versus_at = compare(mine, top.runs[top.best_at]), top.best_at
    return rows


def at_text(label: str | None) -> str:
    """`` at max_concurrency=16``: where a figure was measured (nothing for a bench without axes)."""
    return f" at {label}" if label and label != "bench" else ""


def versus_text(row: RankRow) -> str:
    """``tied with #1 (5 runs each)``, ``47% below #1 (5 runs each)`` or ``""`` for the first."""
    if (v := row.versus) is None:
        return ""
    at = at_text(row.versus_at)
    return (f"tied with #1{at} ({v.runs})" if v.verdict == "tied"
            else f"{abs(v.by):.0%} {'below' if v.by > 0 else 'above'} #1{at} ({v.runs})")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def point_text(value: float | None, runs: list[float]) -> str:
    """``71.9``, or with repeated runs ``71.9 (70.1-73.0, 5 runs)``: the median and the interval compare uses."""
    if value is None or len(runs) < 2:
        return _fmt(value)
    from ..stats import spread

    lo, hi = spread(runs).interval
    return f"{_fmt(value)} ({lo:,.1f}-{hi:,.1f}, {len(runs)} runs)"


def table(view: SweepView) -> str:
    """The ranking as a plain-text table (what ``logkit sweep`` prints at the end)."""
    rows = ranking(view)
    labels = list(dict.fromkeys(k for row in rows for k in row.throughput))
    sweep = view.sweep
    limit = f"{sweep.limit_metric} <= {sweep.limit_max:g}" if sweep.limit_metric and sweep.limit_max is not None else None
    head = ["#", "cell", "result"] + [f"tok/s {k}" for k in labels] + ["vs #1"] + (
        [f"{sweep.limit_metric} (max {sweep.limit_max:g})"] if limit else [])
    body: list[list[str]] = []
    for row in rows:
        result = "works" if row.status == "works" else f"{row.status}: {row.why or ''}".rstrip(": ")
        line = [str(row.rank or "-"), row.key, result[:70],
                *(point_text(row.throughput.get(k), row.runs.get(k) or []) for k in labels), versus_text(row)]
        if limit:
            worst = max((v for v in row.latency.values() if v is not None), default=None)
            mark = "" if row.within_limit is None else (" ok" if row.within_limit else " OVER")
            line.append(_fmt(worst) + mark if worst is not None else "-")
        body.append(line)
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    text = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *body]]
    return f"sweep {sweep.sweep} ({view.session}): {sweep.title}\n" + "\n".join(text)
