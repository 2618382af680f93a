"""Figures of repeated runs: the median, its spread and a bootstrap interval of the median.

Contract: :func:`spread` summarises the values of N runs of one benchmark figure as a
:class:`Spread`: the median, min and max, and from :data:`BOOTSTRAP_MIN` runs on a percentile
bootstrap interval of the median (:data:`LEVEL`, :data:`RESAMPLES` resamples, a fixed seed so the
same runs always give the same interval). :meth:`Spread.interval` is the range a comparison uses:
the bootstrap interval where there is one, else min-max; one run has no spread and its interval
is the point itself (the verdict rule, :func:`logkit.reasoning.matrix.compare`, decides what a
single run may claim). Stdlib only (no numpy, no scipy), pure, cheap to import.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from statistics import median
from typing import NamedTuple

__all__ = ["BOOTSTRAP_MIN", "LEVEL", "RESAMPLES", "Spread", "bootstrap_median", "figure", "spread"]

#: runs from which the bootstrap interval of the median is given
BOOTSTRAP_MIN = 5
#: the interval's coverage
LEVEL = 0.95
RESAMPLES = 2000


class Spread(NamedTuple):
    """N runs of one figure: median, min-max and (N >= :data:`BOOTSTRAP_MIN`) the bootstrap interval."""

    n: int
    median: float
    low: float
    high: float
    ci: tuple[float, float] | None

    @property
    def interval(self) -> tuple[float, float]:
        """The bootstrap interval of the median, else min-max (a point for one run)."""
        return self.ci if self.ci is not None else (self.low, self.high)

    def text(self, fmt: str = ",.1f") -> str:
        """``71.9 (min-max 70.2-73.0, 95% interval of the median 70.8-72.6, 5 runs)`` or ``71.9 (1 run)``."""
        if self.n == 1:
            return f"{self.median:{fmt}} (1 run)"
        parts = [f"min-max {self.low:{fmt}}-{self.high:{fmt}}"]
        if self.ci is not None:
            parts.append(f"{LEVEL:.0%} interval of the median {self.ci[0]:{fmt}}-{self.ci[1]:{fmt}}")
        return f"{self.median:{fmt}} ({', '.join(parts)}, {self.n} runs)"

    def __repr__(self) -> str:
        return f"Spread({self.text('.4g')})"


def bootstrap_median(values: Sequence[float], *, resamples: int = RESAMPLES, level: float = LEVEL,
                     seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval of the median of ``values`` (resampled with replacement)."""
    rng = random.Random(seed)
    n = len(values)
    meds = sorted(median(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    lo = meds[int(tail * (resamples - 1))]
    hi = meds[int(round((1.0 - tail) * (resamples - 1)))]
    return (lo, hi)


def figure(values: Sequence[float]) -> float:
    """The median of a configuration's runs at one workload (NaN left out): its figure (not best, not latest)."""
    vals = [float(v) for v in values if v == v]
    return median(vals) if vals else float("nan")


def spread(values: Sequence[float]) -> Spread:
    """The :class:`Spread` of some runs' values (at least one)."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("no runs")
    ci = bootstrap_median(vals) if len(vals) >= BOOTSTRAP_MIN else None
    return Spread(len(vals), median(vals), min(vals), max(vals), ci)
