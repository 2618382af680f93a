"""Stage 3, charts: Vega-Lite charts of the metrics, rendered to SVG files at build time.

Contract: :func:`metrics_pages` makes one :class:`MetricsPage` per model x GPU with up to five
charts, each with its numbers as a table: throughput, TTFT and ITL against concurrency per
configuration (points on a log2 axis, joined only between measured concurrencies at most
``join_ratio`` apart; one concurrency: the table alone), throughput per item (a prompt), and best
throughput per configuration at each workload (two workloads are never ranked together; a ranking
whose bars are all points of the throughput chart is its table alone, which says so). Charts are
``<docs>/assets/charts/<hash of the spec>.svg`` (no JavaScript needed), drawn in Python
(:mod:`.svgchart`); a spec of another kind goes to vl-convert through a cache directory. Specs are
plain dicts (:mod:`.vlspec`); a :class:`SpecCache` keeps the last build's by a digest of their data.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..launch.flags import table as launch_table
from ..launch.flags import workload_order, workload_text
from ..stats import figure
from .contexts import ChartCtx, MetricsIndex, MetricsPage, Page
from .frames import Frames, MetricRow
from .incremental import read_state, write_state
from .load import metric_label, tables
from . import vlspec as vl
from .paths import metrics_path
from .svgchart import draw

__all__ = ["ChartJob", "SpecCache", "chart_job", "metrics_pages", "prune_svgs", "render_svgs"]

ChartJob = tuple[str, dict[str, Any]]


class SpecCache:
    """The last build's Vega-Lite specs (in their JSON form, as a fresh one is used) by a digest of
    their data, under the builder's key (:func:`.incremental.build_key`); anything else is made again."""

    FILE = ".logkit-chart-specs.json"
    _FORMAT = 3  # 2: legends under the chart, named series, axes from zero; 3: digests of the rows' JSON

    def __init__(self, docs: Path, key: str) -> None:
        self.path = docs / self.FILE
        self.key = key
        self.old: dict[str, Any] = {}
        self.new: dict[str, dict[str, Any]] = {}
        data = read_state(self.path, self._FORMAT, key)
        if data is not None and isinstance(data.get("specs"), dict):
            self.old = data["specs"]

    def spec(self, kind: str, rows: list[dict[str, Any]], labels: tuple[str, ...],
             make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The spec ``make()`` gives for chart ``kind`` of ``rows`` with ``labels``, made only when new."""
        digest = hashlib.sha256(json.dumps([kind, list(labels), rows], default=str).encode()).hexdigest()
        spec = self.old.get(digest)
        if not (isinstance(spec, dict) and ("mark" in spec or "layer" in spec)):
            spec = _plain(make())
        self.new[digest] = spec
        return spec

    def save(self) -> None:
        """Write the specs this build used (best effort: without them the next build makes them again)."""
        write_state(self.path, {"format": self._FORMAT, "key": self.key, "specs": self.new})


def _plain(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` as JSON gives it back (what the chart file name is a hash of, and what a cache returns)."""
    return json.loads(json.dumps(spec, default=str))


def _config_label(frames: Frames, ref: str) -> str:
    """The launch's configuration but the model (which the page names): one series per configuration."""
    f = frames.facts[ref]
    rules = launch_table()["fingerprint"]
    short = {v: k for k, v in (rules.get("aliases") or {}).items()}
    parts = [f"{short.get(k, k.removesuffix('_backend'))}={v}" for k, v in sorted(f.fingerprint.items())
             if k not in rules["model_keys"]]
    return " ".join(parts) or (f.fp_hash or "config")  # whole: the key table on the page shows it


def _first(names: list[str], present: set[str]) -> str | None:
    return next((n for n in names if n in present), None)


def chart_job(spec: dict[str, Any]) -> tuple[str, ChartJob]:
    """A chart's SVG file (named by its spec's hash, so an unchanged chart keeps its file) and its job."""
    digest = hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]
    src = f"assets/charts/{digest}.svg"
    return src, (src, spec)


Rows = list[dict[str, Any]]


def _segments(rows: Rows) -> Rows:
    """The rows by configuration and concurrency, each with its ``segment`` (neighbours ``join_ratio`` apart at most)."""
    ratio = float(tables()["metrics"].get("join_ratio", 4))
    out: Rows = []
    segment, last = 0, None
    for row in sorted(rows, key=lambda r: (r["config"], r["concurrency"])):
        config, conc = row["config"], row["concurrency"]
        if last is None or last[0] != config or conc > ratio * last[1] or last[1] <= 0:
            segment += 1
        out.append({**row, "segment": f"{config}-{segment}"})
        last = (config, conc)
    return out


def _figures(rows: list[MetricRow], key: Callable[[MetricRow], tuple[Any, ...]]) -> dict[tuple[Any, ...], float]:
    """The figure (:func:`logkit.stats.figure` of its runs) of each ``key``, in the order first measured."""
    runs: dict[tuple[Any, ...], list[float]] = {}
    for row in sorted(rows, key=lambda r: r.ts):
        runs.setdefault(key(row), []).append(row.value)
    return {k: figure(v) for k, v in runs.items()}


def _fmt(value: float | None) -> str:
    return "" if value is None or value != value else f"{value:,.1f}"


#: a legend under the chart, one series per line, its labels whole (Vega cuts them at 160 px by default)
_LEGEND = {"orient": "bottom", "direction": "vertical", "labelLimit": 0}


def _series_names(parts: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """A legend label per series: the parts of it that differ between the page's series (one series: whole)."""
    if len(parts) < 2:
        return {full: full for full in parts}
    common = set.intersection(*(set(p) for p in parts.values()))
    names = {full: " ".join(x for x in p if x not in common) or full for full, p in parts.items()}
    if len(set(names.values())) < len(names):  # two series only told apart by their order: whole
        return {full: full for full in parts}
    return names


def _line(rows: Rows, y: str, title: str) -> dict[str, Any]:
    df = _segments(rows)
    ticks = sorted({float(r["concurrency"]) for r in df})
    shared = {
        "color": vl.field("config:N", title="configuration", legend=_LEGEND),
        "x": vl.field("concurrency:Q", title="max concurrency (log2)", scale={"base": 2, "padding": 24, "type": "log"},
                      axis={"format": "~g", "values": ticks}),
        "y": vl.field("value:Q", title=y, scale={"nice": True, "zero": True}),  # never below zero
    }
    return vl.layer([(None, {"type": "line"}, {**shared, "detail": vl.field("segment:N")}, {"title": title}),
                     (None, {"type": "point", "filled": True, "size": 60}, shared, {"title": title})],
                    data=df, height=260, width=520)


def _per_item(df: Rows, x: str, title: str) -> dict[str, Any]:
    return vl.chart(df, {"type": "bar"}, {
        "y": vl.field("item:N", title=None, sort=None),
        "yOffset": vl.field("config:N"),
        "x": vl.field("value:Q", title=x, scale={"nice": True, "zero": True}),
        "color": vl.field("config:N", title="configuration", legend=_LEGEND),
    }, title=title, width=520)


def _best_chart(best: Rows, title: str, name: str) -> dict[str, Any]:
    return vl.chart(best, {"type": "bar"}, {
        "x": vl.field("value:Q", title=metric_label(name), scale={"nice": True, "zero": True}),
        "y": vl.field("config:N", sort="-x", title="configuration", axis={"labelLimit": 0}),
    }, title=title, width=520)


def metrics_pages(frames: Frames, specs: SpecCache | None = None,
                  ) -> tuple[list[MetricsPage], MetricsIndex, list[ChartJob]]:
    """Metric pages with their chart contexts, and the charts still to render (specs from ``specs`` when kept)."""

    pages: list[MetricsPage] = []
    jobs: list[ChartJob] = []

    def draw(kind: str, rows: Rows, labels: tuple[str, ...], make: Callable[[], Any]) -> str:
        """The chart's SVG file, its job added (its spec from ``specs`` when kept)."""
        src, job = chart_job(specs.spec(kind, rows, labels, make) if specs is not None else _plain(make()))
        jobs.append(job)
        return src

    names = tables()["metrics"]
    m = [row for row in frames.metrics if row.server is not None]
    index_rows: list[tuple[str, str, int, str]] = []
    servers = dict.fromkeys(row.server for row in m)  # a launch has many figures: label each launch once
    config_of = {r: _config_label(frames, r) for r in servers}
    label_of = {r: frames.facts[r].name for r in servers}
    # A figure per item (a prompt) compares launches, which the same flags cannot tell apart (a
    # different build, a patch): their --label names them.
    parts = [(*config_of[r.server].split(" "),
              *([f"({label_of[r.server]})"] if label_of[r.server] and r.concurrency is None and r.item is not None else []))
             for r in m]
    # a series is one configuration at one dataset and lengths: concurrency is the only axis a
    # line crosses (figures of two workloads are never drawn as one)
    parts = [(*p, f"@ {workload_text((None, *r.workload[1:]))}") if any(x is not None for x in r.workload[1:]) else p
             for p, r in zip(parts, m, strict=True)]
    fulls = [" ".join(p) for p in parts]
    parts_of = dict(zip(fulls, parts, strict=True))
    groups: dict[tuple[str | None, str | None], list[tuple[str, MetricRow]]] = {}
    for full, row in zip(fulls, m, strict=True):
        groups.setdefault((row.model, row.gpu), []).append((full, row))
    for model, gpu in sorted(groups, key=lambda k: (k[0] is None, k[0] or "", k[1] is None, k[1] or "")):
        group = groups[(model, gpu)]
        # A series is named by what tells it apart from the others on the page; the key table
        # on the page gives each one's whole configuration.
        key = _series_names({full: parts_of[full] for full in sorted({full for full, _row in group})})
        config = {id(row): key[full] for full, row in group}
        rows = [row for _full, row in group]
        model_s = model if isinstance(model, str) else "unknown model"
        gpu_s = gpu if isinstance(gpu, str) else "unknown GPU"
        present = {row.name for row in rows}
        charts: list[ChartCtx] = []
        drawn: dict[str, tuple[str, dict[tuple[Any, ...], float]]] = {}  # metric -> its line chart's title and points
        for kind in ("throughput", "ttft", "itl"):
            name = _first(names[kind], present)
            if name is None:
                continue
            sel_rows = [r for r in rows if r.name == name and r.concurrency is not None]
            if not sel_rows:
                continue
            # each configuration's figure per concurrency
            latest = _figures(sel_rows, lambda r: (config[id(r)], r.concurrency))
            sel = [{"config": c, "concurrency": conc, "value": v} for (c, conc), v in sorted(latest.items(), key=lambda kv: kv[0])]
            src, note = None, "measured at one concurrency only: no chart, the figures are all in the table"
            concs = sorted({r["concurrency"] for r in sel})
            if len(concs) > 1:
                y, title = metric_label(name), f"{metric_label(name)} against concurrency"
                src, note = draw("line", sel, (y, title), lambda: _line(sel, y, title)), None
                drawn[name] = (title, latest)
            columns = sorted({r["config"] for r in sel})
            charts.append(ChartCtx(
                title=f"{metric_label(name)} against concurrency", src=src,
                alt=f"{name} against max concurrency for {model_s} on {gpu_s}",
                headers=["concurrency", *columns],
                rows=[[f"{c:g}", *[_fmt(latest.get((col, c))) for col in columns]] for c in concs],
                note=note,
            ))
        name = _first(names["throughput"], present)
        item_rows = [r for r in rows if r.name == name and r.concurrency is None and r.item is not None] if name else []
        if item_rows:
            latest = _figures(item_rows, lambda r: (r.item, config[id(r)]))
            items = [{"item": i, "config": c, "value": v} for (i, c), v in latest.items()]
            x, title = metric_label(name), f"{metric_label(name)} per prompt"
            src = draw("per_item", items, (x, title), lambda: _per_item(items, x, title))
            columns = sorted({r["config"] for r in items})
            charts.append(ChartCtx(
                title=f"{metric_label(name)} per prompt", src=src, alt=f"{name} per prompt for {model_s} on {gpu_s}",
                headers=["prompt", *columns],
                rows=[[str(i), *[_fmt(latest.get((i, col))) for col in columns]]
                      for i in dict.fromkeys(r["item"] for r in items)],  # in the order measured
            ))
        if name is not None:
            works: dict[tuple[Any, ...], dict[str, float]] = {}
            for (work, c), value in _figures([r for r in rows if r.name == name],
                                             lambda r: (r.workload, config[id(r)])).items():
                works.setdefault(work, {})[c] = value
            for work in sorted(works, key=workload_order):  # one ranking per workload
                best = [{"config": c, "value": v} for c, v in sorted(works[work].items())]
                if len(best) < 2:
                    continue
                title = f"{metric_label(name)} per configuration at {workload_text(work)}, ranked"
                line = drawn.get(name)
                if line is not None and work[0] is not None and all(line[1].get((r["config"], work[0])) == r["value"] for r in best):
                    # every bar would be a point the line chart above draws: the table ranks them
                    src, note = None, f"no chart: these are the points at {workload_text(work)} of “{line[0]}” above, ranked"
                else:
                    src, note = draw("best", best, (title, name), lambda b=best, t=title: _best_chart(b, t, name)), None
                charts.append(ChartCtx(
                    title=title, src=src, alt=f"backend comparison for {model_s} on {gpu_s} at {workload_text(work)}",
                    headers=["configuration", metric_label(name)],
                    rows=[[str(r["config"]), f"{r['value']:,.1f}"] for r in sorted(best, key=lambda r: -r["value"])],
                    note=note,
                ))
        path = metrics_path(model, gpu)
        pages.append(MetricsPage(Page(path, f"Metrics: {model_s} on {gpu_s}", "metrics.md.j2", no_search=True), model_s, gpu_s, charts,
                                 key=[(short, full) for full, short in key.items()]))
        index_rows.append((model_s, gpu_s, len(group), path))
    return pages, MetricsIndex(Page("metrics/index.md", "Metrics", "metrics_index.md.j2"), index_rows), jobs


def render_svgs(jobs: list[ChartJob], docs: Path, cache: Path | None, warn: Callable[[str], None]) -> int:
    """Write every chart's SVG under ``docs`` that is not there yet (its name is its spec's hash); how many."""
    # written outside ``docs`` then renamed: MkDocs never lists a half-written file. A chart that
    # cannot render becomes a "chart unavailable" SVG and a warning, never a failed build.
    todo = {src: spec for src, spec in jobs if not (docs / src).exists()}
    if not todo:
        return 0
    tmp = docs.parent / f".{docs.name}-charts-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    for src, spec in todo.items():
        target = docs / src
        target.parent.mkdir(parents=True, exist_ok=True)
        made = tmp / target.name
        cached = cache / target.name if cache else None
        native = draw(spec)
        if native is not None:  # every kind the builder makes: drawn here in a millisecond, no cache needed
            made.write_text(native, encoding="utf-8")
        elif cached is not None and cached.exists():
            shutil.copyfile(cached, made)
        else:
            try:
                import vl_convert as vlc

                svg = vlc.vegalite_to_svg(spec)
            except Exception as exc:  # a chart that cannot render must not stop the build
                warn(f"logkit: warning: chart {src} could not be rendered: {exc}")
                svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="40">'
                       '<text x="5" y="25">chart unavailable</text></svg>')
            made.write_text(svg, encoding="utf-8")
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(made, cached)
        made.replace(target)
    shutil.rmtree(tmp, ignore_errors=True)
    return len(todo)


def prune_svgs(jobs: list[ChartJob], docs: Path) -> None:
    """Delete the chart files no page shows any more."""
    wanted = {docs / src for src, _spec in jobs}
    for old in (docs / "assets" / "charts").glob("*.svg"):
        if old not in wanted:
            old.unlink()
