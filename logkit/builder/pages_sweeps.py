"""Site pages for sweeps: ``/sweeps/`` and one page per sweep, ``/sweeps/<SW-id>/``.

Contract: :func:`sweep_pages` takes the loaded store and returns the index context, one
:class:`SweepPage` per recorded sweep, and the chart jobs to render: the grid (each cell with its
result, throughput per bench point, the latency limit, links to its hypothesis and attempts), a
chart of output tok/s per user against total output tok/s with the Pareto front marked (points no
other point beats on both), and the decisions tagged with the sweep id (``logkit decide
--from-sweep``). Pure: contexts and Vega-Lite specs (:mod:`.vlspec`), nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..events import Decision, Sweep, SweepCellResult
from . import vlspec as vl
from .charts import chart_job
from .contexts import ChartCtx, Page
from ..reasoning.decisions import supersession
from ..sweep.state import RankRow, SweepView, at_text, point_text, ranking
from .load import Loaded, metric_label, tables
from .paths import attempt_href, decision_href, session_href

__all__ = ["SweepPage", "SweepRow", "SweepsIndex", "pareto", "sweep_pages"]


@dataclass
class SweepRow:
    """One cell of the grid as the page shows it."""

    rank: str
    key: str
    status: str
    why: str
    #: one formatted figure per bench label (``ctx.labels``)
    throughput: list[str]
    latency: str
    #: (label, href) of its hypothesis and attempts, the evidence
    evidence: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class SweepPage:
    """``sweeps/<SW-id>/``."""

    page: Page
    sweep: str
    title: str
    session: str
    session_href: str
    arch: str
    sglang: str
    limit: str
    labels: list[str]
    rows: list[SweepRow]
    chart: ChartCtx | None
    pareto: list[str]
    #: (id, title, status, href)
    decisions: list[tuple[str, str, str, str]]
    command: str


@dataclass
class SweepsIndex:
    """``sweeps/``: every sweep, newest first."""

    page: Page
    #: (id, title, session, cells, working, href)
    rows: list[tuple[str, str, str, int, int, str]]


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (higher is better)."""
    front = []
    for i, (x, y) in enumerate(points):
        if not any((ox >= x and oy >= y) and (ox > x or oy > y) for ox, oy in points):
            front.append(i)
    return front


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f}"


def _label(labels: dict[str, Any]) -> str:
    """A bench point's labels as a reader says them: ``concurrency 16``, other labels ``key=value``."""
    conc = tables()["metrics"]["concurrency_labels"]
    return " ".join(f"concurrency {v:g}" if k in conc and isinstance(v, (int, float)) else f"{k}={v}"
                    for k, v in labels.items()) or "bench"


def _chart(sweep: Sweep, results: list[SweepCellResult]) -> tuple[ChartCtx | None, list[str], tuple[str, dict] | None]:
    rows = [(r.key, _label(p.labels), p.per_user, p.output_throughput) for r in results if r.status == "works"
            for p in r.points if p.per_user is not None and p.output_throughput is not None]
    if not rows:
        return None, [], None
    front = set(pareto([(x, y) for _k, _l, x, y in rows]))
    frame = [{"cell": k, "point": lab, "per_user": x, "throughput": y, "front": "Pareto front" if i in front else "dominated"}
             for i, (k, lab, x, y) in enumerate(rows)]
    x = vl.field("per_user:Q", title="output tok/s per user")
    y = vl.field("throughput:Q", title="output tok/s (all users)")
    points = {"x": x, "y": y,
              "color": vl.field("cell:N", title="cell", legend={"direction": "vertical", "labelLimit": 0, "orient": "bottom"}),
              "shape": vl.field("front:N", title="", legend={"orient": "bottom"}),
              "tooltip": [vl.field("cell:N"), vl.field("point:N"), vl.field("per_user:Q"), vl.field("throughput:Q")]}
    spec = vl.layer([
        (sorted((p for p in frame if p["front"] == "Pareto front"), key=lambda p: p["per_user"]),
         {"type": "line", "color": "black", "strokeDash": [5, 3]}, {"x": x, "y": y, "order": vl.field("per_user:Q")}, {}),
        (frame, {"type": "point", "filled": True, "size": 90}, points, {}),
    ], width=560, height=340, title=f"{sweep.sweep}: throughput per user vs total")
    src, job = chart_job(spec)
    table = [[k, lab, _fmt(xv), _fmt(yv), "yes" if i in front else ""] for i, (k, lab, xv, yv) in enumerate(rows)]
    names = [f"{rows[i][0]} ({rows[i][1]})" for i in sorted(front, key=lambda i: rows[i][2])]
    ctx = ChartCtx(title="Throughput per user against total throughput", src=src,
                   alt=f"output tok/s per user against total output tok/s for {len(rows)} bench points; "
                       f"Pareto front: {', '.join(names)}",
                   headers=["cell", "bench", "tok/s per user", "tok/s total", "Pareto front"], rows=table)
    return ctx, names, job


def _versus(row: RankRow) -> str:
    """A working cell against the first-ranked one, as :func:`logkit.sweep.state.ranking` compared them."""
    v = row.versus
    if v is None:
        return ""
    at = at_text(row.versus_at)  # the one workload compared
    return v.text() + at if v.verdict == "tied" else f"{v.verdict} than #1{at}: {v.text()}"


def _page(sid: str, sweep: Sweep, results: dict[str, SweepCellResult], decisions: list[Decision],
          later: dict[str, list[str]]) -> tuple[SweepPage, list]:
    ordered = [results[c.id] for c in sweep.cells if c.id in results]
    labels: list[str] = []
    for r in ordered:
        labels.extend(lab for lab in (_label(p.labels) for p in r.points) if lab not in labels)
    rows: list[SweepRow] = []
    for ranked in ranking(SweepView(sweep, sid, results)):  # the CLI's ranking, the one rule
        r = results.get(ranked.cell)
        if r is None:
            rows.append(SweepRow("", ranked.key, "pending", "not run yet", [""] * len(labels), ""))
            continue
        by = {_label(p.labels): p for p in r.points}
        lat = [p for p in r.points if p.latency is not None]
        worst = max(lat, key=lambda p: p.latency or 0) if lat else None
        latency = "" if worst is None else _fmt(worst.latency) + (" (over)" if worst.within_limit is False else "")
        evidence = ([(r.hypothesis, f"{session_href(sid)}#{r.hypothesis}")] if r.hypothesis else [])
        evidence += [(a, attempt_href(sid, a)) for a in r.attempts]
        if r.refuted_by:
            other, _, short = r.refuted_by.rpartition("/")
            evidence.append((r.refuted_by, attempt_href(other or sid, short)))
        why = _versus(ranked) if r.status == "works" else ": ".join(x for x in (r.outcome, r.reason) if x and x != r.status)
        rows.append(SweepRow(str(ranked.rank or ""), r.key, r.status, why,
                             [point_text(by[lab].output_throughput, by[lab].runs) if lab in by else "" for lab in labels],
                             latency, evidence))
    chart, front, job = _chart(sweep, ordered)
    limit = f"{metric_label(sweep.limit_metric)} <= {sweep.limit_max:g}" if sweep.limit_metric and sweep.limit_max is not None else "none"
    page = SweepPage(
        page=Page(f"sweeps/{sweep.sweep}/index.md", f"Sweep {sweep.sweep}: {sweep.title}", "sweep.md.j2",
                  tags=["sweep", *([sweep.arch] if sweep.arch else [])]),
        sweep=sweep.sweep, title=sweep.title, session=sid, session_href=session_href(sid), arch=sweep.arch or "unknown",
        sglang=sweep.sglang_version or "unknown", limit=limit, labels=labels, rows=rows, chart=chart, pareto=front,
        decisions=[(d.decision_id, d.title,
                    f"superseded by {', '.join(later[d.decision_id])}" if later.get(d.decision_id) else d.status,
                    decision_href(d.decision_id)) for d in decisions],
        command=" ".join(sweep.argv))
    return page, [job] if job else []


def sweep_pages(loaded: Loaded) -> tuple[SweepsIndex, list[SweepPage], list[tuple[str, dict[str, Any]]]]:
    """The sweeps index, a page per sweep, and the chart jobs of those pages."""
    sweeps: list[tuple[str, Sweep]] = []
    results: dict[str, dict[str, SweepCellResult]] = {}
    decisions: dict[str, list[Decision]] = {}
    every: list[Decision] = []
    for sid, data in loaded.sessions.items():
        for _line, event in data.light:
            if isinstance(event, Sweep):
                sweeps.append((sid, event))
            elif isinstance(event, SweepCellResult):
                results.setdefault(event.sweep, {})[event.cell] = event
            elif isinstance(event, Decision):
                every.append(event)
                for tag in event.tags:
                    decisions.setdefault(tag, []).append(event)
    later = supersession(every)  # a decision replaced by a later one reads "superseded", as everywhere
    pages, jobs = [], []
    for sid, sweep in sorted(sweeps, key=lambda pair: pair[1].ts, reverse=True):
        page, page_jobs = _page(sid, sweep, results.get(sweep.sweep, {}), decisions.get(sweep.sweep, []), later)
        pages.append(page)
        jobs.extend(page_jobs)
    index = SweepsIndex(Page("sweeps/index.md", "Sweeps", "sweeps_index.md.j2"), [
        (p.sweep, p.title, p.session, len(p.rows), sum(1 for r in p.rows if r.status == "works"),
         f"sweeps/{p.sweep}/index.md") for p in pages])
    return index, pages, jobs
