"""Stage 3, charts: Altair charts of the metrics, rendered to SVG files at build time.

Contract: :func:`metrics_pages` turns the metrics frame into one :class:`MetricsPage` per model x
GPU with up to five charts (throughput against concurrency per configuration, TTFT and ITL
against concurrency, throughput per item such as a prompt, best throughput per configuration),
each with the numbers as a table. A chart draws only what was measured: points on a log2
concurrency axis, joined only between neighbouring measured concurrencies at most ``join_ratio`` (4x) apart (no
line through concurrencies nobody ran); figures at a single concurrency get the table alone. Charts
are rendered with vl-convert (no browser, no CDN: the site needs no JavaScript to show them) into
``<docs>/assets/charts/<hash>.svg``; the hash is of the chart spec, so an unchanged chart keeps
its file name and a cache directory lets a rebuild skip rendering it. :class:`BackgroundCharts`
renders them in a second process while MkDocs builds the pages, then copies any MkDocs missed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from .contexts import ChartCtx, MetricsIndex, MetricsPage, Page
from .frames import Frames
from .load import tables
from .paths import metrics_path
from .svg import render_all

__all__ = ["BackgroundCharts", "ChartJob", "metrics_pages", "render_svgs"]

ChartJob = tuple[str, dict[str, Any]]


def _config_label(frames: Frames, ref: str) -> str:
    f = frames.facts[ref]
    parts = [f"{k.removesuffix('_backend')}={v}" for k, v in sorted(f.backends.items())]
    tp = f.fingerprint.get("tp_size")
    if tp is not None:
        parts.append(f"tp={tp}")
    return " ".join(parts) or (f.fp_hash or "config")  # whole: charts show C1.., the key table this


def _first(names: list[str], present: set[str]) -> str | None:
    return next((n for n in names if n in present), None)


def _spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
    spec = chart.to_dict(validate=False)  # built by this module from known columns
    spec.pop("$schema", None)
    return spec


def _job(spec: dict[str, Any]) -> tuple[str, ChartJob]:
    digest = hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]
    src = f"assets/charts/{digest}.svg"
    return src, (src, spec)


def _segments(df: pd.DataFrame) -> pd.DataFrame:
    """Number the runs of neighbouring measured concurrencies (``join_ratio`` apart at most) per configuration."""
    ratio = float(tables()["metrics"].get("join_ratio", 4))
    df = df.sort_values(["config", "concurrency"]).reset_index(drop=True)
    segment, labels, last = 0, [], None
    for config, conc in zip(df["config"], df["concurrency"], strict=True):
        if last is None or last[0] != config or conc > ratio * last[1] or last[1] <= 0:
            segment += 1
        labels.append(f"{config}-{segment}")
        last = (config, conc)
    return df.assign(segment=labels)


def _line(df: pd.DataFrame, y: str, title: str) -> alt.LayerChart:
    df = _segments(df)
    ticks = sorted({float(c) for c in df["concurrency"]})
    base = alt.Chart(df, title=title, width=520, height=260).encode(
        x=alt.X("concurrency:Q", title="max concurrency (log2)", scale=alt.Scale(type="log", base=2, padding=24),
                axis=alt.Axis(values=ticks, format="~g")),
        y=alt.Y("value:Q", title=y, scale=alt.Scale(zero=True, padding=12)),
        color=alt.Color("config:N", title="configuration", legend=alt.Legend(orient="right")),
    )
    return alt.layer(base.mark_line().encode(detail="segment:N"), base.mark_point(filled=True, size=60))


def _per_item(df: pd.DataFrame, x: str, title: str) -> alt.Chart:
    return alt.Chart(df, title=title, width=520).mark_bar().encode(
        y=alt.Y("item:N", title=None, sort=None),
        yOffset=alt.YOffset("config:N"),
        x=alt.X("value:Q", title=x),
        color=alt.Color("config:N", title="configuration", legend=alt.Legend(orient="right")),
    )


def metrics_pages(frames: Frames) -> tuple[list[MetricsPage], MetricsIndex, list[ChartJob]]:
    """Metric pages with their chart contexts, and the charts still to render."""
    names = tables()["metrics"]
    m = frames.metrics
    m = m[m["server"].notna()] if not m.empty else m
    pages: list[MetricsPage] = []
    jobs: list[ChartJob] = []
    rows: list[tuple[str, str, int, str]] = []
    if m.empty:
        return pages, MetricsIndex(Page("metrics/index.md", "Metrics", "metrics_index.md.j2"), rows), jobs
    m = m.assign(full=[_config_label(frames, r) for r in m["server"]])
    # A figure per item (a prompt) compares launches, which the same flags cannot tell apart (a
    # different build, a patch): their --label names them.
    labels = [frames.facts[r].attempt.label for r in m["server"]]
    m = m.assign(full=[f"{f} ({lab})" if lab and pd.isna(c) and pd.notna(i) else f
                       for f, lab, c, i in zip(m["full"], labels, m["concurrency"], m["item"], strict=True)])
    for (model, gpu), group in m.groupby(["model", "gpu"], dropna=False, sort=True):
        # Short series names keep the SVG light (vl-convert measures every glyph); the key
        # table on the page maps them to the full configuration.
        key = {full: f"C{i + 1}" for i, full in enumerate(sorted(set(group["full"])))}
        group = group.assign(config=[key[f] for f in group["full"]])
        model_s = model if isinstance(model, str) else "unknown model"
        gpu_s = gpu if isinstance(gpu, str) else "unknown GPU"
        present = set(group["name"])
        charts: list[ChartCtx] = []
        for kind, label in (("throughput", "tok/s"), ("ttft", "ms"), ("itl", "ms")):
            name = _first(names[kind], present)
            if name is None:
                continue
            sel = group[(group["name"] == name) & group["concurrency"].notna()]
            if sel.empty:
                continue
            # the latest figure per configuration and concurrency
            sel = sel.sort_values("ts").groupby(["config", "concurrency"], as_index=False)["value"].last()
            src, note = None, "measured at one concurrency only: no chart, the figures are all in the table"
            if sel["concurrency"].nunique() > 1:
                src, job = _job(_spec(_line(sel, f"{name} ({label})", f"{name} against concurrency")))
                jobs.append(job)
                note = None
            table = sel.pivot(index="concurrency", columns="config", values="value").sort_index()
            charts.append(ChartCtx(
                title=f"{name} against concurrency", src=src,
                alt=f"{name} against max concurrency for {model_s} on {gpu_s}",
                headers=["concurrency", *[str(c) for c in table.columns]],
                rows=[[f"{c:g}", *[("" if pd.isna(v) else f"{v:,.1f}") for v in r]] for c, r in zip(table.index, table.values)],
                note=note,
            ))
        name = _first(names["throughput"], present)
        items = group[(group["name"] == name) & group["concurrency"].isna() & group["item"].notna()] if name else group[:0]
        if not items.empty:
            items = items.sort_values("ts").groupby(["item", "config"], as_index=False, sort=False)["value"].last()
            src, job = _job(_spec(_per_item(items, f"{name} (tok/s)", f"{name} per prompt")))
            jobs.append(job)
            table = items.pivot(index="item", columns="config", values="value")
            table = table.reindex(list(dict.fromkeys(items["item"])))  # in the order measured
            charts.append(ChartCtx(
                title=f"{name} per prompt", src=src, alt=f"{name} per prompt for {model_s} on {gpu_s}",
                headers=["prompt", *[str(c) for c in table.columns]],
                rows=[[str(i), *[("" if pd.isna(v) else f"{v:,.1f}") for v in r]] for i, r in zip(table.index, table.values)],
            ))
        name = _first(names["throughput"], present)
        if name is not None:
            best = group[group["name"] == name].groupby("config", as_index=False)["value"].max()
            if len(best) > 1:
                spec = _spec(alt.Chart(best, title=f"best {name} per configuration", width=520).mark_bar().encode(
                    x=alt.X("value:Q", title=f"{name} (tok/s)"),
                    y=alt.Y("config:N", sort="-x", title="configuration"),
                ))
                src, job = _job(spec)
                jobs.append(job)
                charts.append(ChartCtx(
                    title=f"best {name} per configuration", src=src, alt=f"backend comparison for {model_s} on {gpu_s}",
                    headers=["configuration", name],
                    rows=[[str(c), f"{v:,.1f}"] for c, v in best.sort_values("value", ascending=False).values],
                ))
        path = metrics_path(model_s if isinstance(model, str) else None, gpu_s if isinstance(gpu, str) else None)
        pages.append(MetricsPage(Page(path, f"Metrics: {model_s} on {gpu_s}", "metrics.md.j2"), model_s, gpu_s, charts,
                                 key=[(short, full) for full, short in key.items()]))
        rows.append((model_s, gpu_s, len(group), path))
    return pages, MetricsIndex(Page("metrics/index.md", "Metrics", "metrics_index.md.j2"), rows), jobs


def _pending(jobs: list[ChartJob], docs: Path) -> list[ChartJob]:
    seen: set[str] = set()
    todo = []
    for src, spec in jobs:
        if src in seen or (docs / src).exists():
            continue  # the name is the spec's hash: an existing file is this chart
        seen.add(src)
        todo.append((src, spec))
    return todo


def render_svgs(jobs: list[ChartJob], docs: Path, cache: Path | None, warn: Callable[[str], None]) -> int:
    """Write every chart's SVG under ``docs`` now; returns how many were missing."""
    todo = _pending(jobs, docs)
    render_all(todo, docs, cache, warn)
    return len(todo)


class BackgroundCharts:
    """Charts rendered by a second process while MkDocs builds the pages (they need no page).

    :meth:`finish` waits for it and copies into the site the charts MkDocs did not pick up.
    """

    def __init__(self, jobs: list[ChartJob], docs: Path, cache: Path | None) -> None:
        import multiprocessing

        self.docs = docs
        self.jobs = jobs
        self.todo = _pending(jobs, docs)
        self.process = None
        if self.todo:
            # spawn, not fork: after a fork every refcount update of the big parent heap copies a
            # page, which slowed the page stages (and MkDocs after them) by half
            ctx = multiprocessing.get_context("spawn")
            self.process = ctx.Process(target=render_all, args=(self.todo, docs, cache, _stderr), daemon=True)
            self.process.start()

    def finish(self, out: Path | None) -> int:
        """Wait for the renderer; returns how many charts it rendered."""
        if self.process is not None:
            self.process.join()
            if self.process.exitcode != 0:  # it died: render what is missing here
                render_all(_pending(self.jobs, self.docs), self.docs, None, _stderr)
        if out is not None:
            for src, _spec in self.jobs:
                if not (out / src).exists() and (self.docs / src).exists():
                    (out / src).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(self.docs / src, out / src)
        return len(self.todo)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)
