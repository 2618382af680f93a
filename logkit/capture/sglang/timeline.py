"""Startup milestones of an SGLang launch, read from its log lines (patterns in data/sglang.toml).

Contract: :class:`Timeline` is fed the same chunks as the classifier and keeps the first line of
each (stage, rank) with its timestamp (the ``[YYYY-MM-DD HH:MM:SS(.ms) DPn TPn]`` prefix, else the
time it arrived), the rank (``TP3``) and the numbers the line gives (avail mem, elapsed, #tokens).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache

from ...events import Milestone
from .outcomes import _line_at
from .table import data as _data

__all__ = ["Timeline"]

_STAMP = re.compile(rb"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d{3}))?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\]")
_RANK = re.compile(rb"\b(TP\d+)\b")


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[str, re.Pattern[bytes]], ...]:
    return tuple((m["stage"], re.compile(m["pattern"].encode())) for m in _data("sglang.toml")["milestone"])


def _num(value: bytes) -> float | str:
    text = value.decode("utf-8", "replace")
    try:
        return float(text)
    except ValueError:
        return text


@dataclass
class Timeline:
    """First occurrence of each milestone per rank."""

    milestones: list[Milestone] = field(default_factory=list)
    _seen: set[tuple[str, str | None]] = field(default_factory=set)

    def feed(self, chunk: bytes, first_line: int, now: datetime | None = None) -> None:
        for stage, regex in _patterns():
            pos, line = 0, first_line
            for m in regex.finditer(chunk):
                line += chunk.count(b"\n", pos, m.start())
                pos = m.start()
                stamp = _STAMP.search(chunk, chunk.rfind(b"\n", 0, m.start()) + 1, m.start())  # on the line, before
                rank_m = _RANK.search(stamp.group(3)) if stamp and stamp.group(3) else None
                rank = rank_m.group(1).decode() if rank_m else None
                if (stage, rank) in self._seen:
                    continue
                self._seen.add((stage, rank))
                at = now
                if stamp:
                    with contextlib.suppress(ValueError):
                        # SGLang stamps local time (logging's asctime) without a zone.
                        at = datetime.strptime(stamp.group(1).decode(), "%Y-%m-%d %H:%M:%S").astimezone(UTC)
                        if stamp.group(2):
                            at = at.replace(microsecond=int(stamp.group(2)) * 1000)
                detail = {k: _num(v) for k, v in m.groupdict().items() if v is not None}
                detail["text"] = _line_at(chunk, m.start())[:300]
                self.milestones.append(Milestone(stage=stage, at=at, line=line, rank=rank, detail=detail))

    def with_seconds(self, started: datetime | None) -> list[Milestone]:
        """Milestones with ``seconds`` since ``started`` (or since the first stamped one)."""
        base = started or next((m.at for m in self.milestones if m.at is not None), None)
        # Log stamps have whole seconds: a stage in the launch's first second is at 0, not < 0.
        return [m.model_copy(update={"seconds": max(0.0, round((m.at - base).total_seconds(), 3)) if m.at and base
                                     else None}) for m in self.milestones]
