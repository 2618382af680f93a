"""The SGLang watcher's Hyperscan prefilter (capture/fastscan.py) changes no verdict and no milestone.

With Hyperscan one scan says which signature, ready, serving and milestone literals occur in a
chunk, and only the regexes whose literals occur run; without it the old checks run. Both must
see exactly the same hits, evidence and timeline on every fixture log, fed whole and in pieces.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from logkit.capture.fastscan import finder
from logkit.capture.redact import ENGINE_ENV, available_engines
from logkit.capture.sglang import outcomes, timeline
from logkit.capture.sglang.outcomes import Classifier, blocks
from logkit.capture.sglang.timeline import Timeline

LOGS = sorted((Path(__file__).parent / "fixtures" / "logs").glob("*.log"))
NOW = datetime(2026, 12, 3, tzinfo=UTC)

pytestmark = pytest.mark.skipif("hyperscan" not in available_engines(), reason="Hyperscan is not installed")


def _watch(data: bytes, size: int) -> tuple[object, list[object]]:
    clf, tl = Classifier(), Timeline()
    import io

    for chunk, first in blocks(io.BytesIO(data), size):
        clf.feed(chunk, first)
        tl.feed(chunk, first, NOW)
    d = clf.decide(finished=False)
    return (d, sorted(clf.hits.items()), clf.ready_line, clf.serving_line, clf.lines), tl.milestones


def _both(monkeypatch: pytest.MonkeyPatch, data: bytes, size: int) -> tuple[object, object]:
    out = []
    for engine in ("hyperscan", "stdlib"):
        monkeypatch.setenv(ENGINE_ENV, engine)
        outcomes._plan.cache_clear()
        timeline._plan.cache_clear()
        assert (outcomes._plan()[0] is not None) == (engine == "hyperscan")
        out.append(_watch(data, size))
    outcomes._plan.cache_clear()
    timeline._plan.cache_clear()
    return out[0], out[1]


@pytest.mark.slow
@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_fixture_logs_classify_the_same_with_and_without_the_prefilter(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = log.read_bytes()
    for size in (1 << 20, 700):  # whole, and in pieces of a few lines
        fast, slow = _both(monkeypatch, data, size)
        assert fast == slow, (log.name, size)


def test_the_finder_reports_literals_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENGINE_ENV, "hyperscan")
    find = finder((b"Load weight end.", b"cuda error", b"x.y"))
    assert find is not None
    assert find(b"... load WEIGHT end. ... CUDA Error: ...") == {0, 1}
    assert find(b"xzy") == set() and find(b"") == set()
    monkeypatch.setenv(ENGINE_ENV, "re2")
    assert finder((b"a",)) is None  # another engine asked for: callers keep their own checks
