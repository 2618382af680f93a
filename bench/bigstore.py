"""A big synthetic store and the baseline every benchmark here divides by, shared by bench_index.py
and bench_readers.py.

* :func:`generate` writes ``kb_factory.synthetic`` sessions (reused when the size matches);
* :func:`baseline` reads every session file and ``json.loads`` every line (no validation): the cost
  of merely parsing the store, measured in the same run as the figure it divides;
* :func:`timed` gives ``((wall seconds, CPU seconds), value)`` of a call.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import kb_factory  # noqa: E402

EVENTS_PER_ATTEMPT = 4.62  # what kb_factory.synthetic writes on average


def baseline(root: Path) -> int:
    """Read every session file and ``json.loads`` every line; the number of lines."""
    n = 0
    loads = json.loads
    for path in sorted(root.glob("*/events.jsonl")):
        for line in path.read_bytes().split(b"\n"):
            if line:
                loads(line)
                n += 1
    return n


def timed(fn: Callable[[], Any]) -> tuple[tuple[float, float], Any]:
    """((wall seconds, CPU seconds), value) of ``fn()``."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return (time.perf_counter() - start, time.process_time() - cpu), value


def generate(root: Path, events: int, sessions: int) -> None:
    """Write the store (or reuse one of this size: ``.bench-size``)."""
    marker = root / ".bench-size"
    want = f"{events} {sessions}"
    if marker.exists() and marker.read_text() == want:
        print(f"reusing {root}")
        return
    shutil.rmtree(root, ignore_errors=True)
    start = time.perf_counter()
    kb_factory.synthetic(root, sessions, int(events / EVENTS_PER_ATTEMPT))
    marker.write_text(want)
    print(f"generated {root} in {time.perf_counter() - start:.1f} s")
