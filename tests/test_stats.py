"""logkit.stats (median, spread, bootstrap interval of the median) and the one "slow" rule,
logkit.reasoning.matrix.compare: slow only when the intervals do not overlap."""

from __future__ import annotations

import random

import pytest

from logkit.reasoning.matrix import compare
from logkit.stats import BOOTSTRAP_MIN, bootstrap_median, spread


def test_spread_median_min_max_and_a_bootstrap_interval_from_five_runs() -> None:
    assert spread([3.0, 1.0, 2.0]).text() == "2.0 (min-max 1.0-3.0, 3 runs)"
    assert spread([3.0, 1.0, 2.0]).ci is None and spread([3.0, 1.0, 2.0]).interval == (1.0, 3.0)
    assert spread([71.9]).text() == "71.9 (1 run)" and spread([71.9]).interval == (71.9, 71.9)
    five = spread([70.0, 72.0, 71.0, 73.0, 69.0])
    assert five.n == BOOTSTRAP_MIN and five.median == 71.0
    lo, hi = five.ci
    assert 69.0 <= lo <= 71.0 <= hi <= 73.0
    assert "95% interval of the median" in five.text() and "5 runs" in five.text()
    assert bootstrap_median([1.0, 2.0, 3.0, 4.0, 5.0]) == bootstrap_median([1.0, 2.0, 3.0, 4.0, 5.0])  # seeded
    with pytest.raises(ValueError):
        spread([])


def test_the_bootstrap_interval_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = random.Random(1)
    hits = 0
    for _ in range(200):
        lo, hi = bootstrap_median([rng.gauss(100.0, 5.0) for _ in range(15)], resamples=400)
        hits += lo <= 100.0 <= hi
    assert 0.88 <= hits / 200 <= 0.995


def test_slow_only_when_the_intervals_do_not_overlap() -> None:
    # the seeds' cutlass vs cudnn, one run each: a tie, both figures shown
    tie = compare([71.6], [71.9])
    assert tie.verdict == "tied" and tie.text() == "tied: 71.6 vs 71.9 tok/s, intervals overlap, on 1 run each"
    # one run each: slow only beyond the slow_ratio margin (launch.toml [attribution])
    assert compare([30.0], [100.0]).verdict == "slower" and compare([60.0], [100.0]).verdict == "tied"
    # repeated runs far apart: slower, by how much and on how many runs
    slow = compare([38.0, 39.0, 37.5, 38.4, 38.1], [71.0, 72.0, 73.0, 70.1, 71.9])
    assert slow.verdict == "slower" and slow.by == pytest.approx(1 - 38.1 / 71.9)
    assert slow.text().startswith("38.1 vs 71.9 tok/s: 47% lower, intervals ") and slow.text().endswith("on 5 runs each")
    assert compare([71.0, 72.0, 73.0, 70.1, 71.9], [38.0, 39.0, 37.5, 38.4, 38.1]).verdict == "faster"
    # a 5% gap whose runs overlap is a tie, however the medians fall
    noisy = compare([95.0, 101.0, 99.0], [100.0, 104.0, 98.0, 106.0, 103.0])
    assert noisy.verdict == "tied" and noisy.runs == "3 and 5 runs"
    # a small gap measured tightly on enough runs is real
    tight = compare([95.0, 95.2, 94.9, 95.1, 95.0], [100.0, 100.1, 99.9, 100.2, 100.0])
    assert tight.verdict == "slower" and "5% lower" in tight.text()


def test_a_configuration_figure_is_the_median_of_its_runs_whatever_their_order() -> None:
    from logkit.stats import figure

    assert figure([100.0, 200.0, 120.0]) == figure([120.0, 100.0, 200.0]) == 120.0
    assert figure([float("nan"), 90.0]) == 90.0  # a run without a value is left out
    assert figure([float("nan")]) != figure([float("nan")])  # none has one: NaN


def test_charts_and_pages_use_the_one_figure_rule() -> None:
    # the metrics page's charts and rankings take each configuration's figure from stats.figure,
    # as the configuration pages and the home page's best do (no latest-wins, no luckiest-run-wins)
    import inspect

    from logkit.builder import charts, pages_configs, pages_kb

    for module in (charts, pages_configs, pages_kb):
        src = inspect.getsource(module)
        assert "figure(" in src and "median(" not in src, module.__name__
