"""Charts draw only what was measured: no line through concurrencies nobody ran, no one-point
charts, and per-prompt figures charted per prompt (the shipped sessions and a factory store)."""

from __future__ import annotations

import re
from pathlib import Path

import kb_factory
from conftest import REPO
from logkit.builder.charts import metrics_pages
from logkit.builder.frames import make_frames
from logkit.builder.load import load


def _pages(root: Path) -> dict[str, object]:
    pages, _index, _jobs = metrics_pages(make_frames(load(root)))
    return {p.model: p for p in pages}


def _data(job_spec: dict) -> list[dict]:
    datasets = job_spec.get("datasets", {})
    return [row for rows in datasets.values() for row in rows]


def test_shipped_sessions_charts_show_only_measured_points_and_per_prompt_figures() -> None:
    pages, _index, jobs = metrics_pages(make_frames(load(REPO / "sessions")))
    by_model = {p.model: p for p in pages}
    specs = dict(jobs)
    glm = by_model["GLM-5-NVFP4"]
    chart = next(c for c in glm.charts if c.title == "output tok/s against concurrency")
    rows = _data(specs[chart.src])
    # measured at 1 and 64 only: two points, each its own segment, so no line joins them
    assert sorted(r["concurrency"] for r in rows) == [1.0, 64.0]
    assert len({r["segment"] for r in rows}) == 2
    assert specs[chart.src]["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    qwen36 = by_model["Qwen3.6"]
    per_prompt = next(c for c in qwen36.charts if c.title == "output tok/s per prompt")
    assert per_prompt.src is not None and [r[0] for r in per_prompt.rows] == ["fibonacci", "quicksort", "short-answer"]
    # the two launches share their flags; their --label tells them apart (native DFlash vs DDTree)
    # the series are named by what tells them apart (not C1/C2 and a lookup): here the --label
    key = dict(qwen36.key)
    assert per_prompt.rows[0][1:] == ["140.4", "140.6"]
    assert sorted(key) == ["(DDTree shadow-linear (DDTree dispatch and logging, linear verification; its flags are "
                           "not given))", "(native DFlash (linear))"]
    assert all(k in full and full.startswith("attention=triton") for k, full in key.items())
    single = next(c for c in by_model["Qwen3.5-397B-A17B-NVFP4"].charts if "against concurrency" in c.title)
    assert single.src is None and single.rows == [["1", "172.0"]] and "one concurrency" in single.note
    for page in pages:
        for c in page.charts:
            if c.src is not None and "against concurrency" in c.title:
                assert len({r["concurrency"] for r in _data(specs[c.src])}) > 1, (page.model, c.title)  # no 1-point chart


def test_a_sweep_is_joined_and_a_single_concurrency_gets_the_table_alone(tmp_path: Path) -> None:
    kb_factory.realistic(tmp_path / "sessions")
    pages, _index, jobs = metrics_pages(make_frames(load(tmp_path / "sessions")))
    specs = dict(jobs)
    swept = [c for p in pages for c in p.charts if c.src and "against concurrency" in c.title]
    assert swept
    for c in swept:
        rows = _data(specs[c.src])
        per_config: dict[str, set[str]] = {}
        for r in rows:
            per_config.setdefault(r["config"], set()).add(r["segment"])
        assert all(len(s) == 1 for s in per_config.values())  # 1, 4, 16, 64: a sweep, one line
        encoding = specs[c.src]["layer"][0]["encoding"]
        # latency and throughput start at zero, never below it; the legend shows whole names
        assert encoding["y"]["scale"] == {"zero": True, "nice": True}
        assert encoding["color"]["legend"]["labelLimit"] == 0
        assert not any(re.fullmatch(r"C\d+", str(r["config"])) for r in rows)


def _altair(spec: object) -> dict:
    out = spec.to_dict(validate=False)  # type: ignore[attr-defined]
    out.pop("$schema", None)
    return out


def test_plain_specs_are_the_ones_altair_writes() -> None:
    """The builder writes its Vega-Lite specs as plain dicts of plain rows (``builder/vlspec.py``,
    no Altair, no pandas); each kind is the dict Altair writes for the same chart from a DataFrame
    of those rows, key order and dataset names included, so a chart keeps its file name (a hash of
    its spec)."""
    import json

    import altair as alt
    import pandas as pd

    from logkit.builder import charts
    from logkit.builder.pages_sweeps import _chart
    from logkit.events import Sweep, SweepCellResult

    legend = charts._LEGEND
    lines = [{"config": c, "concurrency": n, "value": v}
             for c, n, v in (("b=2", 64.0, 3.0), ("a=1", 1.0, 10.5), ("a=1", 4.0, 20.25), ("b=2", 1.0, float("nan")))]
    df = pd.DataFrame(charts._segments(lines))
    base = alt.Chart(df, title="t", width=520, height=260).encode(
        x=alt.X("concurrency:Q", title="max concurrency (log2)", scale=alt.Scale(type="log", base=2, padding=24),
                axis=alt.Axis(values=sorted({float(c) for c in df["concurrency"]}), format="~g")),
        y=alt.Y("value:Q", title="y", scale=alt.Scale(zero=True, nice=True)),
        color=alt.Color("config:N", title="configuration", legend=legend))
    want = alt.layer(base.mark_line().encode(detail="segment:N"), base.mark_point(filled=True, size=60))
    items = [{"item": i, "config": c, "value": v} for i, c, v in (("p1", "a", 1.0), ("p2", "b", float("inf")), (None, "a", 2.0))]
    want_items = alt.Chart(pd.DataFrame(items), title="t", width=520).mark_bar().encode(
        y=alt.Y("item:N", title=None, sort=None), yOffset=alt.YOffset("config:N"),
        x=alt.X("value:Q", title="x", scale=alt.Scale(zero=True, nice=True)),
        color=alt.Color("config:N", title="configuration", legend=legend))
    best = [{"config": "a", "value": 3.5}, {"config": "b", "value": 1.0}]
    want_best = alt.Chart(pd.DataFrame(best), title="t", width=520).mark_bar().encode(
        x=alt.X("value:Q", title=charts.metric_label("output_throughput"), scale=alt.Scale(zero=True, nice=True)),
        y=alt.Y("config:N", sort="-x", title="configuration", axis=alt.Axis(labelLimit=0)))
    for got, ref in ((charts._line(lines, "y", "t"), want), (charts._per_item(items, "x", "t"), want_items),
                     (charts._best_chart(best, "t", "output_throughput"), want_best)):
        assert json.dumps(got) == json.dumps(_altair(ref))

    sweep = Sweep(session="s", sweep="SW-0000000a", title="t", spec_hash="h")
    results = [SweepCellResult(session="s", sweep="SW-0000000a", cell=c, key=f"moe={c}", status="works",
                               points=[{"attempt": f"A{n}", "labels": {"concurrency": n}, "per_user": pu,
                                        "output_throughput": tp} for n, pu, tp in pts])
               for c, pts in (("c1", [(1, 50.0, 50.0), (8, 20.0, 160.0)]), ("c2", [(1, 40.0, 40.0), (8, 25.0, 150.0)]))]
    _ctx, _names, job = _chart(sweep, results)
    assert job is not None
    frame = pd.DataFrame([{"cell": r.key, "point": f"concurrency {p.labels['concurrency']:g}", "per_user": p.per_user,
                           "throughput": p.output_throughput} for r in results for p in r.points])
    front = {(50.0, 50.0), (25.0, 150.0), (20.0, 160.0)}
    frame["front"] = ["Pareto front" if (x, y) in front else "dominated" for x, y in zip(frame["per_user"], frame["throughput"])]
    x = alt.X("per_user:Q", title="output tok/s per user")
    y = alt.Y("throughput:Q", title="output tok/s (all users)")
    points = alt.Chart(frame).mark_point(filled=True, size=90).encode(
        x=x, y=y, color=alt.Color("cell:N", title="cell", legend=alt.Legend(labelLimit=0, orient="bottom", direction="vertical")),
        shape=alt.Shape("front:N", title="", legend=alt.Legend(orient="bottom")),
        tooltip=["cell", "point", "per_user", "throughput"])
    line = alt.Chart(frame[frame["front"] == "Pareto front"].sort_values("per_user")).mark_line(
        color="black", strokeDash=[5, 3]).encode(x=x, y=y, order="per_user:Q")
    want_sweep = (line + points).properties(width=560, height=340, title="SW-0000000a: throughput per user vs total")
    assert json.dumps(job[1]) == json.dumps(_altair(want_sweep))


def _texts(svg: str) -> list[str]:
    """The words an SVG shows (its ``<text>`` elements), unescaped, in document order."""
    import html

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def _legend(svg: str, symbol: str) -> dict[str, str]:
    """Legend label -> the fill colour of its symbol."""
    import html

    return {html.unescape(label): colour for colour, label in re.findall(symbol, svg, re.S)}


def test_line_charts_drawn_in_python_show_what_vega_draws(tmp_path: Path) -> None:
    """The line charts are drawn from their spec without Vega (``builder/svgchart.py``): the same
    words (titles, every axis label Vega's ticks and number formats give, the legend), the same
    colour per series, a point per measured figure, about the same size. Other kinds are Vega's."""
    import vl_convert as vlc

    from logkit.builder import charts
    from logkit.builder.svgchart import draw

    kb_factory.realistic(tmp_path / "sessions")
    _pages_, _index, jobs = metrics_pages(make_frames(load(tmp_path / "sessions")))
    lines = [spec for _src, spec in jobs if "layer" in spec]
    # and the scales' edge cases: figures under 1 (decimal ticks), a zero, big numbers, a gap, NaN
    for rows in ([("a=1", 1.0, 0.37), ("a=1", 8.0, 0.052), ("b=2", 2.0, 0.2)],
                 [("a=1", 2.0, 0.0), ("a=1", 128.0, 12345.6)],
                 [("a=1", 1.0, 3.0), ("a=1", 3.0, 7.5), ("a=1", 512.0, 1.5e6), ("b=2", 16.0, 2.0), ("b=2", 32.0, float("nan"))]):
        lines.append(charts._line([{"config": c, "concurrency": n, "value": v} for c, n, v in rows], "y (units)", "a title"))
    assert len(lines) >= 5
    for spec in lines:
        mine, vega = draw(spec), vlc.vegalite_to_svg(spec)
        assert mine is not None
        assert sorted(_texts(mine)) == sorted(t for t in _texts(vega) if t)
        assert _legend(mine, r'<circle cx="6"[^>]*fill="(#[0-9a-f]{6})"[^>]*/><text[^>]*>([^<]*)</text>') == _legend(
            vega, r'role-legend-symbol.*?fill="(#[0-9a-f]{6})".*?role-legend-label[^>]*><text[^>]*>([^<]*)</text>')
        size = [tuple(int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', s).groups()) for s in (mine, vega)]
        assert abs(size[0][0] - size[1][0]) <= 12 and abs(size[0][1] - size[1][1]) <= 12, size
        rows = [r for rs in spec["datasets"].values() for r in rs if r["value"] is not None]
        assert mine.count("<circle") == len(rows) + len({r["config"] for r in rows})  # the points, the legend's symbols
    assert draw(charts._best_chart([{"config": "a", "value": 1.0}, {"config": "b", "value": 2.0}], "t", "output_throughput")) is None
