"""Todo lists as snapshots: ``logkit todo import FILE`` and what changed between two snapshots.

Contract:

* :func:`parse` reads the JSON an agent's ``todowrite`` tool writes: ``{"todos": [{"content",
  "status", "priority"}, ...]}`` or a bare list of such items (:func:`parse_data` the same JSON
  already read: an MCP tool's argument, a TodoWrite hook's input; Claude Code's ``activeForm`` is
  accepted and not kept). Bad input raises :class:`~logkit.errors.BadInput` naming the file, the
  JSON line and the fix.
* :func:`match` maps each item onto a hypothesis transparently: an explicit ``H3:`` prefix wins;
  else the hypothesis with the highest token overlap coefficient, if it reaches the threshold of
  ``reasoning.toml`` ``[todo_match]``. Every mapping comes back as a :class:`Match` with its score
  and reason, is stored on ``TodoItem.hypothesis`` and is printed by the CLI: never silent.
* :func:`record_items` appends one ``todo`` event (a snapshot of the parsed items); :func:`diff`
  compares two snapshots.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..events import Hypothesis, Todo, TodoItem
from ..store import SessionHandle
from .common import now, provenance

__all__ = ["ITEM_FIELDS", "Match", "diff", "match", "parse", "parse_data", "record_items", "tokens"]

_PREFIX = re.compile(r"^\s*\[?(H[0-9]+)\]?\s*[:\-]\s*")
_TOKEN = re.compile(r"[a-z0-9_]+")


@functools.cache
def _rule() -> dict[str, Any]:
    """``logkit/data/reasoning.toml``'s ``[todo_match]``, read once."""
    return tomllib.loads((Path(__file__).resolve().parent.parent / "data" / "reasoning.toml").read_text("utf-8"))["todo_match"]


@dataclass(frozen=True)
class Match:
    """How one todo item was mapped (or not) onto a hypothesis."""

    index: int
    content: str
    hypothesis: str | None
    score: float
    reason: str


def tokens(text: str) -> set[str]:
    """Lowercase word tokens of ``text`` without stopwords."""
    stop = set(_rule()["stopwords"])
    return {t for t in _TOKEN.findall(text.lower()) if t not in stop}


def parse(path: Path) -> list[TodoItem]:
    """The items of a todo file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"no todo file {path}", fix="pass the path of a todowrite JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}", fix="pass a UTF-8 JSON file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})",
                       fix="fix the JSON there (a truncated todowrite message needs its last item closed)") from None
    except RecursionError:
        raise BadInput(f"{path}: JSON nested too deeply to be a todo list",
                       fix='give {"todos": [{"content", "status", "priority"}, ...]} or a bare list') from None
    return parse_data(data, path)


# the fields a todo item may carry: todowrite's, and Claude Code TodoWrite's activeForm (the item in
# the present tense, shown while it runs: not recorded)
ITEM_FIELDS = ("content", "status", "priority", "id", "activeForm")


def parse_data(data: Any, path: Path | str) -> list[TodoItem]:
    """The items of a todo list already read as JSON (``path`` names where it came from)."""
    if isinstance(data, dict) and isinstance(data.get("todos"), list):
        data = data["todos"]
    elif not isinstance(data, list):
        raise BadInput(f"{path}: expected {{\"todos\": [...]}} or a list of todo items, got {type(data).__name__}",
                       fix='write {"todos": [{"content": "...", "status": "pending", "priority": "high"}]}')
    items: list[TodoItem] = []
    for number, raw in enumerate(data, start=1):
        if isinstance(raw, str):
            raw = {"content": raw}
        if not isinstance(raw, dict) or not isinstance(raw.get("content"), str) or not raw["content"].strip():
            raise BadInput(f"{path}: todo item {number} has no \"content\" text: {json.dumps(raw)[:120]}",
                           fix='every item needs "content"; "status" and "priority" are optional')
        if unknown := set(raw) - set(ITEM_FIELDS):
            raise BadInput(f"{path}: todo item {number} has unknown field(s) {', '.join(sorted(unknown))}",
                           fix='use only "content", "status", "priority" (and "id", "activeForm")')
        status, priority = raw.get("status", "pending"), raw.get("priority")
        if not isinstance(status, str) or (priority is not None and not isinstance(priority, str)):
            raise BadInput(f"{path}: todo item {number}: status and priority must be strings", fix='e.g. "status": "completed"')
        items.append(TodoItem(content=raw["content"], status=status, priority=priority))
    return items


def match(items: list[TodoItem], hypotheses: list[Hypothesis]) -> list[Match]:
    """Map every item onto at most one hypothesis; see the module docstring for the rule."""
    rule = _rule()
    threshold, min_shared = float(rule["threshold"]), int(rule["min_shared"])
    known = {h.short_id: h for h in hypotheses}
    hyp_tokens = {h.short_id: tokens(h.text) for h in hypotheses}
    matches: list[Match] = []
    for index, item in enumerate(items, start=1):
        explicit = _PREFIX.match(item.content)
        if explicit and explicit.group(1) in known:
            matches.append(Match(index, item.content, explicit.group(1), 1.0, f"explicit {explicit.group(1)}: prefix"))
            continue
        mine = tokens(item.content)
        scored = [(shared / min(len(mine), len(theirs)), shared, hid) for hid, theirs in hyp_tokens.items()
                  if (shared := len(mine & theirs))]
        best = max(scored, key=lambda c: c[:2], default=None)  # the first of the best: hypotheses in order
        if best and best[0] >= threshold and best[1] >= min_shared:
            score, shared, hid = best
            matches.append(Match(index, item.content, hid, round(score, 2), f"{shared} shared words, overlap {score:.2f}"))
        else:
            why = f"best overlap {best[0]:.2f} with {best[2]}" if best else "no shared words"
            matches.append(Match(index, item.content, None, round(best[0], 2) if best else 0.0,
                                 f"no match ({why}; threshold {threshold:.2f})"))
    return matches


def record_items(handle: SessionHandle, items: list[TodoItem], *, source: str, at: str | None = None,
                 reconstructed: str | None = None) -> tuple[Todo, list[Match]]:
    """Record ``items`` as one snapshot, mapped onto the session's hypotheses (:func:`match`)."""
    events = handle.read().events
    matches = match(items, [e for e in events if isinstance(e, Hypothesis)])
    mapped = [item.model_copy(update={"hypothesis": m.hypothesis}) for item, m in zip(items, matches, strict=True)]
    event = Todo(session=handle.id, ts=now(at), items=mapped, source=source, provenance=provenance(reconstructed))
    handle.append(event)
    return event, matches


def diff(before: Todo | None, after: Todo) -> dict[str, list[dict[str, Any]]]:
    """What changed from one snapshot to the next: added, removed and status-changed items."""
    old = {i.content: i for i in (before.items if before else [])}
    new = {i.content: i for i in after.items}
    return {"added": [i.model_dump(exclude_none=True) for c, i in new.items() if c not in old],
            "removed": [i.model_dump(exclude_none=True) for c, i in old.items() if c not in new],
            "changed": [{"content": c, "from": old[c].status, "to": i.status}
                        for c, i in new.items() if c in old and old[c].status != i.status]}
