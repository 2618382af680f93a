"""Charts draw only what was measured: no line through concurrencies nobody ran, no one-point
charts, and per-prompt figures charted per prompt (the shipped sessions and a factory store)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


def _sweep_spec(cells: dict[str, list[tuple[float, float, float]]]) -> dict:
    """The sweep chart of cells, each with its bench points (concurrency, per user, total)."""
    from logkit.builder.pages_sweeps import _chart
    from logkit.events import Sweep, SweepCellResult

    sweep = Sweep(session="s", sweep="SW-0000000a", title="t", spec_hash="h")
    results = [SweepCellResult(session="s", sweep="SW-0000000a", cell=f"c{i}", key=key, status="works",
                               points=[{"attempt": f"A{n}", "labels": {"concurrency": n}, "per_user": pu,
                                        "output_throughput": tp} for n, pu, tp in pts])
               for i, (key, pts) in enumerate(cells.items())]
    _ctx, _names, job = _chart(sweep, results)
    assert job is not None
    return job[1]


def _edge_specs() -> list[dict]:
    """Each kind's specs at the edges of its scales and layout: figures under 1 (decimal ticks), a zero,
    big numbers (x labels that overlap and are thinned), a gap, NaN, ties, one bar, more series than
    colours, an item one configuration lacks, labels past Vega's limits (180 px, maxExtent 200)."""
    from logkit.builder import charts

    specs = []
    for rows in ([("a=1", 1.0, 0.37), ("a=1", 8.0, 0.052), ("b=2", 2.0, 0.2)],
                 [("a=1", 2.0, 0.0), ("a=1", 128.0, 12345.6)],
                 [("a=1", 1.0, 3.0), ("a=1", 3.0, 7.5), ("a=1", 512.0, 1.5e6), ("b=2", 16.0, 2.0), ("b=2", 32.0, float("nan"))]):
        specs.append(charts._line([{"config": c, "concurrency": n, "value": v} for c, n, v in rows], "y (units)", "a title"))
    long = " moe_runner=flashinfer_cutlass attention=trtllm_mla speculative=EAGLE3 @ sharegpt in=1024 out=1024" * 2
    for values in ([3.5, 1.0], [0.42, 0.42, 0.07], [1.5e6, 2.25e5, 987654.0], [17.0], [2.0, float("nan"), 5.0],
                   [float(v) for v in range(12)], [99.0, 1234.5]):
        best = [{"config": f"{'c' if i % 2 else 'a'}={i}" + (long if len(values) == 2 and i else ""), "value": v}
                for i, v in enumerate(values)]
        specs.append(charts._best_chart(best, "a ranking", "output_throughput"))
    for configs, items, scale in ((["a=1", "b=2"], ["p1", "p2"], 1.0), (["x"], ["only"], 0.01),
                                   ([f"k={i}" for i in range(11)], ["p1", "p2", "p3"], 1e5),
                                   (["a=1", "b=2", "c=3"], ["zeta", "alpha", "a prompt named at some length" * 4], 7.0)):
        rows = [{"item": item, "config": c, "value": scale * (1 + i + 2 * j)} for j, item in enumerate(items)
                for i, c in enumerate(configs) if not (c == "b=2" and item == "p2")]
        specs.append(charts._per_item(rows, "output tok/s", "per prompt"))
    specs.append(_sweep_spec({"moe=a": [(1, 80.0, 80.0), (16, 45.9, 735.2)], "moe=b": [(1, 40.0, 40.0), (16, 23.0, 367.6)]}))
    specs.append(_sweep_spec({"moe=a": [(1, 0.8, 0.8)]}))  # one point: the front alone, no line
    specs.append(_sweep_spec({f"moe={c}" + long * (c == "k"): [(1, 100.0 + i, 100.0 + i), (64, 31.0 - i, 1984.0 - 9 * i)]
                              for i, c in enumerate("abcdefghijk")}))
    specs.append(_sweep_spec({"moe=a": [(1, 1.2e4, 1.2e4), (8, 9.0e3, 7.2e4)], "moe=b": [(1, 1.1e4, 1.1e4)]}))
    return specs


@pytest.mark.slow  # draws 86 specs through vl-convert's JavaScript runtime (about 2 s): CI runs it, the fast lane does not
def test_charts_drawn_in_python_show_what_vega_draws(tmp_path: Path) -> None:
    """Every chart kind is drawn from its spec without Vega (``builder/svgchart.py``): the same words
    (titles, every axis label Vega's ticks, number formats and label overlap give, the legends), the
    same colour per series, a mark per figure, about the same size and plot offset. Over the shipped
    sessions, the realistic store, a sweep and each kind's edge cases."""
    import html

    import vl_convert as vlc

    from logkit.builder.pages_sweeps import sweep_pages
    from logkit.builder.svgchart import draw
    from test_sweep_site import make_sweep

    kb_factory.realistic(tmp_path / "sessions")
    make_sweep(tmp_path / "sessions")
    specs = _edge_specs()
    for root in (REPO / "sessions", tmp_path / "sessions"):
        loaded = load(root)
        specs += [spec for _src, spec in metrics_pages(make_frames(loaded))[2] + sweep_pages(loaded)[2]]
    kinds = {("layer" in s, "yOffset" in s.get("encoding", {}), "order" in str(s)) for s in specs}
    assert len(kinds) == 4  # lines, ranked bars, bars per item, sweeps
    for spec in specs:
        mine, vega = draw(spec), vlc.vegalite_to_svg(spec)
        assert mine is not None
        shown = re.sub(r'<text [^>]*opacity="0"[^>]*>[^<]*</text>', "", vega)  # labels Vega hides as overlapping
        assert sorted(_texts(mine)) == sorted(t for t in _texts(shown) if t), spec
        symbol = r'(?:fill|stroke)="(#[0-9a-f]{6}|black)"'
        assert _legend(mine, r'<(?:circle|rect) [^>]*?fill="(#[0-9a-f]{6}|black)"[^>]*/><text[^>]*>([^<]*)</text>') == _legend(
            vega, rf'role-legend-symbol.*?{symbol}.*?role-legend-label[^>]*><text[^>]*>([^<]*)</text>')
        size = [tuple(int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', s).groups()) for s in (mine, vega)]
        offset = [tuple(float(v) for v in re.search(r"translate\(([\d.]+),([\d.]+)\)", s).groups()) for s in (mine, vega)]
        assert all(abs(a - b) <= 12 for a, b in zip(size[0] + offset[0], size[1] + offset[1], strict=True)), (size, offset)
        # a mark per figure, in its series' colour: a point, a bar
        marks = [html.unescape(m) for m in re.findall(r'fill="(#[0-9a-f]{6})"[^>]*><title>', mine)]
        vega_marks = re.findall(r'role="graphics-symbol" aria-roledescription="(?:point|bar)"[^>]*fill="(#[0-9a-f]{6})"', vega)
        assert sorted(marks) == sorted(vega_marks)
    assert draw({"mark": {"type": "area"}, "encoding": {}}) is None


def test_a_build_draws_every_chart_without_vl_convert(tmp_path: Path) -> None:
    """A build of the shipped sessions with a sweep (every chart kind: lines, both bar kinds, the
    sweep chart) writes all its charts without importing vl-convert (~120 MB and 60-110 ms a chart)."""
    import shutil
    import subprocess
    import sys

    from test_sweep_site import make_sweep

    shutil.copytree(REPO / "sessions", tmp_path / "sessions", ignore=shutil.ignore_patterns(".*"))
    make_sweep(tmp_path / "sessions")
    code = ("import sys; from pathlib import Path; from logkit.builder import generate; "
            "r = generate(Path(sys.argv[1]), Path(sys.argv[2])); "
            "print(r.charts_rendered, 'vl_convert' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "sessions"), str(tmp_path / "docs")],
                         capture_output=True, text=True, check=True, cwd=REPO).stdout.split()
    svgs = list((tmp_path / "docs" / "assets" / "charts").glob("*.svg"))
    assert out == [str(len(svgs)), "False"] and len(svgs) >= 5
    assert not any("chart unavailable" in p.read_text() for p in svgs)
