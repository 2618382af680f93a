"""The matrix cell: the one rule for what the evidence says about a backend value (docs/knowledge-model.md).

Contract (pure functions of :class:`Row` s, no I/O, no pydantic):

* :func:`row_of` makes a :class:`Row` (one attempt as plain data) from an index ``attempts`` row:
  the one way every reader (the pre-launch check, the sweep's skip, ``status``) gets its rows.
* :func:`category` is a row's attributable category (``statuses.toml``), or None: only launches
  count; an ``ignore`` status says nothing; a ``works`` launch with a degenerate smoke reply is
  ``garbage``; a ``hang`` under a ``--hang-timeout`` shorter than ``[attribution]
  hang_timeout_default`` (``launch.toml``) is not attributable (the user cut it short).
* :func:`state` of some categories: ``works``, ``refuted``, ``conflicting`` (both), ``untested``.
* :func:`cells` groups rows into :class:`Cell` s keyed (model, axis, value, arch, sglang,
  flashinfer); the site's matrix, the pre-launch check, the sweep's skip and ``status`` read them.
* :func:`compare` is the one rule for "slow": two sets of runs of a higher-is-better figure are
  ``slower`` / ``faster`` only when their intervals (:mod:`logkit.stats`; a single run's from
  ``[attribution] slow_ratio``) do not overlap, else ``tied`` (the matrix page, a sweep's ranking
  and its decision draft).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import statuses
from ..launch.flags import table as launch_table

__all__ = ["Cell", "Comparison", "Key", "Row", "aggregated", "category", "category_of", "cells", "compare",
           "hang_limit", "order", "refutes", "row_of", "state", "with_smoke"]

#: (model, axis, value, arch, sglang version, flashinfer version)
Key = tuple[str | None, str, str, str | None, str | None, str | None]

# the limit logkit's hang stop names: the outcome label of an SGLang launch reads "no output for 5s
# before ready" or "ready endpoint not answering 5s after the server started listening"
# (capture/sglang/watcher.py), a stop reason "no output for 5s (--hang-timeout)" (capture/supervisor.py)
_HANG = re.compile(r"(?:no output for |not answering )(\d+(?:\.\d+)?)s\b|(\d+(?:\.\d+)?)s\b.*\(--hang-timeout\)")


def hang_limit(label: str | None) -> float | None:
    """The ``--hang-timeout`` an outcome label says stopped the attempt, or None."""
    match = _HANG.search(label or "")
    return float(match.group(1) or match.group(2)) if match else None


@dataclass(frozen=True)
class Row:
    """One attempt as the matrix sees it."""

    session: str
    attempt: str
    role: str
    started: str
    status: str | None
    model: str | None = None
    arch: str | None = None
    sglang: str | None = None
    flashinfer: str | None = None
    backends: dict[str, str] = field(default_factory=dict)
    hang_timeout: float | None = None  # the --hang-timeout that stopped it (a hang)
    tests: tuple[str, ...] = ()
    smoke_failed: bool = False
    label: str | None = None

    @property
    def ref(self) -> str:
        """``session/A4``."""
        return f"{self.session}/{self.attempt}"


def row_of(attempt: dict[str, Any]) -> Row:
    """The matrix row of an index ``attempts`` row (:data:`logkit.store.derive.ATTEMPT_COLUMNS`)."""
    return Row(
        session=attempt["session"], attempt=attempt["short_id"], role=attempt["role"] or "command",
        started=attempt["started"] or "", status=attempt["status"], model=attempt["model"], arch=attempt["arch"],
        sglang=attempt["sglang"], flashinfer=attempt["flashinfer"],
        backends=json.loads(attempt["backends"]) if attempt["backends"] else {},
        hang_timeout=attempt["hang_timeout"], tests=tuple(json.loads(attempt["tests"]) if attempt["tests"] else ()),
        smoke_failed=attempt["smoke_ok"] == 0, label=attempt["outcome_label"])


def refutes(status: str | None, hang_timeout: float | None = None) -> bool:
    """Whether a launch that ended ``status`` refutes its backend values (a hang under a shortened timeout does not)."""
    if status is None or statuses.category(status) is None or not statuses.row(status).refutes:
        return False
    default = float(launch_table()["attribution"]["hang_timeout_default"])
    return not (status == "hang" and hang_timeout is not None and hang_timeout < default)


def with_smoke(cat: str | None, smoke_failed: bool) -> str | None:
    """A status category as the smoke test leaves it: a launch up but failing its smoke prompts is ``garbage``."""
    return "garbage" if cat == "works" and smoke_failed else cat


def category(row: Row) -> str | None:
    """The row's attributable category (works, crash, garbage, oom), or None (see the contract)."""
    return category_of(row.role, row.status, row.smoke_failed, row.hang_timeout)


def category_of(role: str | None, status: str | None, smoke_failed: bool, hang_timeout: float | None) -> str | None:
    """:func:`category` of an attempt's parts (the index stores it with each attempt's row)."""
    if role != "launch" or status is None:
        return None
    cat = statuses.category(status)
    if cat == "works":
        return with_smoke(cat, smoke_failed)
    return cat if refutes(status, hang_timeout) else None


def state(categories: Iterable[str | None]) -> str:
    """``works`` / ``refuted`` / ``conflicting`` / ``untested`` of some categories."""
    cats = {c for c in categories if c is not None}
    works, refutes = "works" in cats, bool(cats - {"works"})
    return "conflicting" if works and refutes else "works" if works else "refuted" if refutes else "untested"


@dataclass
class Cell:
    """Backend axis=value x architecture x model, per SGLang (and flashinfer) version."""

    model: str | None
    axis: str
    value: str
    arch: str | None
    sglang: str | None
    flashinfer: str | None
    # attributable attempts in time order: all (cells()), or the latest of each category (aggregated())
    rows: list[Row] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> Key:
        """(model, axis, value, arch, sglang, flashinfer)."""
        return (self.model, self.axis, self.value, self.arch, self.sglang, self.flashinfer)

    @property
    def latest(self) -> Row | None:
        """The latest attributable attempt."""
        return self.rows[-1] if self.rows else None

    @property
    def state(self) -> str:
        """works / refuted / conflicting / untested."""
        return state(self.counts)

    @property
    def refuting(self) -> list[Row]:
        """The refuting attempts, in time order."""
        return [r for r in self.rows if category(r) not in (None, "works")]

    @property
    def working(self) -> list[Row]:
        """The working attempts, in time order."""
        return [r for r in self.rows if category(r) == "works"]

    @property
    def refuted_class(self) -> str | None:
        """The category of the latest refuting attempt (crash, garbage, oom), None without one."""
        return category(self.refuting[-1]) if self.refuting else None


def cells(rows: Iterable[Row]) -> dict[Key, Cell]:
    """Every cell the attributable rows fill (see the contract), rows in (start, reference) order."""
    out: dict[Key, Cell] = {}
    for row in sorted(rows, key=order):
        if (cat := category(row)) is None:
            continue
        for axis, value in row.backends.items():
            key = (row.model, axis, value, row.arch, row.sglang, row.flashinfer)
            if (cell := out.get(key)) is None:
                cell = out[key] = Cell(*key)
            cell.rows.append(row)
            cell.counts[cat] = cell.counts.get(cat, 0) + 1
    return out


def aggregated(key: Key, counts: dict[str, int], latest: Iterable[Row]) -> Cell:
    """The cell ``key`` from the index's ``counts`` per category and its ``latest`` working and refuting rows."""
    return Cell(*key, rows=sorted(latest, key=order), counts=dict(counts))


def order(row: Row) -> tuple[str, str, int]:
    """The order of attempts, the latest last: start time, session, then attempt number (A9 before A10)."""
    digits = row.attempt.lstrip("A")
    return (row.started, row.session, int(digits) if digits.isdigit() else 0)


@dataclass(frozen=True)
class Comparison:
    """Two configurations' runs of a higher-is-better figure, and what they say (:func:`compare`)."""

    verdict: str  # slower / faster (mine against theirs), or tied when the intervals overlap
    mine: Any  # logkit.stats.Spread
    theirs: Any
    mine_interval: tuple[float, float]  # the intervals compared (a single run's widened by slow_ratio)
    theirs_interval: tuple[float, float]

    @property
    def by(self) -> float:
        """How much lower (negative: higher) mine's median is, as a share of theirs."""
        return 1.0 - self.mine.median / self.theirs.median if self.theirs.median else 0.0

    @property
    def runs(self) -> str:
        """``5 and 3 runs`` / ``1 run each``."""
        a, b = self.mine.n, self.theirs.n
        return (f"{a} run{'s' if a > 1 else ''} each" if a == b else f"{a} and {b} runs")

    def text(self, unit: str = "tok/s") -> str:
        """``38.2 vs 71.9 tok/s: 47% lower, intervals ... apart, on 5 runs each``, or ``tied: ...``."""
        a, b = self.mine.median, self.theirs.median
        if self.verdict == "tied":
            return f"tied: {a:,.1f} vs {b:,.1f} {unit}, intervals overlap, on {self.runs}"
        word = "lower" if self.verdict == "slower" else "higher"
        if self.mine.n == 1 or self.theirs.n == 1:  # no spread measured: the slow_ratio margin decided
            ratio = float(launch_table()["attribution"]["slow_ratio"])
            return (f"{a:,.1f} vs {b:,.1f} {unit}: {abs(self.by):.0%} {word}, beyond the {ratio:.0%} margin a "
                    f"single run needs, on {self.runs}")
        (ml, mh), (tl, th) = self.mine_interval, self.theirs_interval
        return (f"{a:,.1f} vs {b:,.1f} {unit}: {abs(self.by):.0%} {word}, intervals {ml:,.1f}-{mh:,.1f} and "
                f"{tl:,.1f}-{th:,.1f} apart, on {self.runs}")


def _interval(spread: Any) -> tuple[float, float]:
    """The interval of a :class:`logkit.stats.Spread` as compared: one run's widened by ``slow_ratio``."""
    if spread.n > 1:
        return spread.interval
    band = math.sqrt(float(launch_table()["attribution"]["slow_ratio"]))
    return (spread.median * band, spread.median / band)


def compare(mine: Sequence[float], theirs: Sequence[float]) -> Comparison:
    """The one "slow" rule: ``slower``/``faster`` when the intervals (:mod:`logkit.stats`) are apart, else ``tied``."""
    from ..stats import spread

    a, b = spread(mine), spread(theirs)
    ia, ib = _interval(a), _interval(b)
    verdict = "slower" if ia[1] < ib[0] else "faster" if ia[0] > ib[1] else "tied"
    return Comparison(verdict, a, b, ia, ib)
