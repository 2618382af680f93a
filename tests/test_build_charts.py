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
