"""Stage 1, load: read and validate every session of the store into :class:`Loaded`.

Contract: every line of every ``events.jsonl`` is validated through
:meth:`logkit.store.Store.read_all`. A line that does not validate is reported as ``file:line:
message`` through ``warn`` and skipped; the rest of its session and of the store still load.
With ``strict=True`` any problem raises :class:`~logkit.errors.BadInput` listing all of them.
Events are grouped per session, in time order, by kind; unknown kinds (added to the schema after
this module was written) are kept in ``events`` and shown generically.

Read cache (``<root>/.cache/load.json``, :mod:`logkit.readcache`): a session file whose stat has
not changed since it was last read keeps what that read found, namely its problems (so its lines
are not checked again), the repeated environments of its attempts (validated once, shared by the
attempts that carry the same bytes) and each attempt's derived facts for the frames stage
(:func:`logkit.builder.frames.fact_row`). Its lines are still validated into events every time
(pydantic, from the file itself, never from the cache). A cache entry that does not match its
file's stat, is shaped otherwise, or whose lines no longer validate as it says is derived again;
the cache's version covers logkit's version, the event models, this stage, the frames stage and
the knowledge tables, so new code never reads an old derivation. ``load(root, cache=False)``
reads without it (same result).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import operator
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..events import (
    Attempt,
    BaseEvent,
    Decision,
    Environment,
    Hypothesis,
    Metric,
    Note,
    Outcome,
    ServerInfo,
    Session,
    Smoke,
    Todo,
    Verdict,
)
from ..files import EVENTS_FILE
from ..files import lines as file_lines
from ..readcache import SessionCache, sessions_with_stat, stat_key
from ..reader import Problem, ReadResult, cross_check, read_events, read_known
from ..store import Store

__all__ = ["Loaded", "SessionData", "gc_paused", "load", "tables"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: reading builds millions of objects and no cycles.

    Every full collection rescans all live objects, so a big store cost about 2.5x its parse
    time in collections (100,000 events: load 19.4 s with, 7.9 s without, same machine and run).
    Restores the previous state, so it nests.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@cache
def tables() -> dict[str, Any]:
    """The builder's knowledge tables (``logkit/data/knowledge.toml``)."""
    with resources.files("logkit").joinpath("data/knowledge.toml").open("rb") as fh:
        return tomllib.load(fh)


@dataclass
class SessionData:
    """The validated events of one session, grouped by kind."""

    id: str
    path: Path
    meta: Session | None = None
    events: list[BaseEvent] = field(default_factory=list)
    attempts: dict[str, Attempt] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    hypotheses: dict[str, Hypothesis] = field(default_factory=dict)
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)
    todos: list[Todo] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    smokes: dict[str, list[Smoke]] = field(default_factory=dict)
    server_info: dict[str, ServerInfo] = field(default_factory=dict)
    #: attempt short id -> the full environment from a later ``environment`` event, if any
    environments: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: attempt short id -> its facts as the read cache kept them (:func:`logkit.builder.frames.fact_row`)
    fact_rows: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """The session's title, or its id when the session line is missing."""
        return self.meta.title if self.meta else self.id


@dataclass
class Loaded:
    """Everything the later stages need from the store."""

    root: Path
    sessions: dict[str, SessionData]
    problems: list[Problem]
    #: decision ids that moved (the ledger's ``moved to`` lines): old id -> [(session, new id)]
    moved: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: how the read cache served each session: ``"hit"`` or ``"derived"`` (empty without the cache)
    cached: dict[str, str] = field(default_factory=dict)


_BY_TS = operator.attrgetter("ts")


def _group(sid: str, path: Path, events: list[BaseEvent], problems: list[Problem]) -> SessionData:
    data = SessionData(id=sid, path=path, problems=problems)
    data.events = sorted(events, key=_BY_TS)
    for event in data.events:
        # the kinds are siblings, so the order of the tests is free: the most frequent first
        if isinstance(event, Metric):
            data.metrics.append(event)
        elif isinstance(event, Attempt):
            data.attempts[event.short_id] = event
        elif isinstance(event, Outcome):
            data.outcomes[event.attempt] = event
        elif isinstance(event, Smoke):
            data.smokes.setdefault(event.attempt, []).append(event)
        elif isinstance(event, Session):
            data.meta = data.meta or event
        elif isinstance(event, Decision):
            data.decisions.append(event)
        elif isinstance(event, Hypothesis):
            data.hypotheses[event.short_id] = event
        elif isinstance(event, Verdict):
            data.verdicts.setdefault(event.hypothesis, []).append(event)
        elif isinstance(event, Todo):
            data.todos.append(event)
        elif isinstance(event, Note):
            data.notes.append(event)
        elif isinstance(event, ServerInfo):
            data.server_info[event.attempt] = event
        elif getattr(event, "kind", None) == "environment" and getattr(event, "environment", None) is not None:
            # the background probes' result supersedes the attempt line's instant environment
            data.environments[str(getattr(event, "attempt", ""))] = event.environment  # type: ignore[attr-defined]
        elif getattr(event, "kind", None) == "launch_config" and getattr(event, "launch", None) is not None:
            # SGLang's full parse, run beside the launch: its args supersede the quick parse's
            ref = str(getattr(event, "attempt", ""))
            if ref in data.attempts and data.attempts[ref].launch is not None:
                data.attempts[ref] = data.attempts[ref].model_copy(update={"launch": event.launch})  # type: ignore[attr-defined]
    return data


def load(root: Path | str, *, strict: bool = False, warn: Callable[[str], None] = lambda _m: None,
         cache: bool = True) -> Loaded:
    """Read every session under ``root``; bad lines are warned about and skipped (or fatal).

    ``cache``: read through the store's ``load`` read cache and update it (see the module contract).
    """
    store = Store(root)
    with gc_paused():
        cached: dict[str, str] = {}
        if cache:
            results, sessions = _read_cached(store.root, cached)
        else:
            results = store.read_all()
            sessions = {}
    problems = [p for r in results.values() for p in r.problems]
    if strict and problems:
        raise BadInput(
            "the knowledge base has lines that do not validate:\n" + "\n".join(str(p) for p in problems),
            fix="fix or delete the lines named above, or build without --strict to skip them",
        )
    for problem in problems:
        warn(f"logkit: warning: skipped {problem}")
    with gc_paused():
        sessions = {
            sid: sessions.get(sid) or _group(sid, result.path, result.events, result.problems)
            for sid, result in results.items()
        }
    from ..reasoning.decisions import aliases

    return Loaded(root=Path(root), sessions=sessions, problems=problems, moved=aliases(store), cached=cached)


#: bump when what the ``load`` cache keeps changes shape (the code's digest covers the rest)
CACHE_FORMAT = 1
#: what a cached derivation depends on besides the session file: these modules and the tables
_DERIVED_FROM = ("events.py", "files.py", "store.py", "reader.py", "statuses.py", "builder/load.py", "builder/frames.py",
                 "launch/flags.py")


@cache
def cache_version() -> str:
    """The ``load`` cache's version: its format, logkit's version and a digest of the code and tables."""
    from .. import __version__

    package = Path(str(resources.files("logkit")))
    h = hashlib.sha256(__version__.encode())
    for name in _DERIVED_FROM:
        h.update(name.encode() + b"\0" + (package / name).read_bytes())
    for path in sorted((package / "data").rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return f"{CACHE_FORMAT}-{h.hexdigest()[:20]}"


def _read_cached(root: Path, how: dict[str, str]) -> tuple[dict[str, ReadResult], dict[str, SessionData]]:
    """Every session's read result (and grouped data), through the ``load`` read cache; ``how``
    gets what the cache did per session."""
    cache = SessionCache(root, "load", cache_version())
    results: dict[str, ReadResult] = {}
    sessions: dict[str, SessionData] = {}
    found = {sid: (path, st) for sid, path, st in sessions_with_stat(root)}
    # the same sessions, in the same order, as the store reads them (a directory without a valid id is no session)
    for sid in Store(root).session_ids():
        path = root / sid / EVENTS_FILE
        path_str, st = found.get(sid, (str(path), None))
        derived: dict[str, Any] = {}

        def derive(raw: bytes, sid: str = sid, path: Path = path, derived: dict[str, Any] = derived) -> Any:
            result = read_events(path, raw if raw else None)
            data = _group(sid, path, result.events, result.problems)
            derived["result"], derived["data"] = result, data
            return _summary(data, result, raw)

        raw, value, hit = cache.read(sid, path_str, derive, valid=_valid_summary, st=st)
        if hit:
            assert raw is not None
            got = _from_summary(sid, path, raw, value)
            if got is None:  # the lines do not validate as the entry says: derive the session again
                cache.last[sid] = "derived"
                value = derive(raw)
                if st is not None:
                    cache.put(sid, stat_key(st), raw, value)
            else:
                derived["result"], derived["data"] = got
        results[sid] = derived["result"]
        sessions[sid] = derived["data"]
    cross_check(results)
    how.update(cache.last)
    cache.prune(set(results))
    cache.save()
    return results, sessions


def _summary(data: SessionData, result: ReadResult, raw: bytes) -> dict[str, Any]:
    """What the cache keeps of one session file (JSON): see the module contract.

    Sets ``data.fact_rows`` as a cache hit would (the frames stage derives nothing twice).
    """
    from .frames import fact_row

    kept = set(result.lines)
    lines = {n: chunk for n, chunk, _torn in file_lines(raw)}
    shared: dict[str, list[int]] = {}
    for event, number in zip(result.events, result.lines, strict=True):
        env = event.__dict__.get("environment") if isinstance(event, Attempt) else None
        if env is not None:
            # the environment as the store writes it (model_dump, None left out): where the line holds
            # exactly these bytes, the reader can share one validated copy; elsewhere it is not shared
            shared.setdefault(env.model_dump_json(exclude_none=True), []).append(number)
    patches = []
    for text, numbers in shared.items():
        if len(numbers) < 2:
            continue  # nothing saved by sharing it
        needle = b'"environment":' + text.encode()
        good = [n for n in numbers if lines[n].count(needle) == 1]
        if len(good) < 2 or raw.count(needle) != len(good):  # what the reader replaces: exactly these
            continue
        try:
            if Environment.model_validate_json(text) != _env_at(result, good[0]):
                continue
        except ValueError:
            continue
        patches.append(["environment", text, good])
    rows: dict[str, list[Any]] = {}
    dicts: dict[str, int] = {}  # the versions and backends of a session's attempts repeat: kept once
    for short, attempt in data.attempts.items():
        row = fact_row(data, attempt)
        for i in (4, 6):
            key = json.dumps(row[i], default=str)  # in its order: the pages list versions as derived
            row[i] = dicts.setdefault(key, len(dicts))
        rows[short] = row
    data.fact_rows = _resolve(rows, [json.loads(k) for k in dicts]) or {}
    return {
        "problems": [[p.line, p.message, p.field, p.torn] for p in result.problems],
        "skip": sorted(n for n in lines if n not in kept),
        "shared": patches,
        "facts": rows,
        "dicts": list(dicts),
    }


def _env_at(result: ReadResult, number: int) -> Any:
    """The environment of the event on line ``number``."""
    return result.events[result.lines.index(number)].__dict__.get("environment")


def _resolve(rows: Any, dicts: list[Any]) -> dict[str, list[Any]] | None:
    """Fact rows with their versions and backends indexes replaced by (copies of) the dicts."""
    if type(rows) is not dict:
        return None
    out = {}
    try:
        for short, row in rows.items():
            if type(row) is not list or len(row) != 10 or not all(type(row[i]) is int and row[i] >= 0 for i in (4, 6)):
                return None
            row = list(row)
            row[4], row[6] = dict(dicts[row[4]]), dict(dicts[row[6]])
            out[short] = row
    except (TypeError, IndexError, ValueError):
        return None
    return out


def _valid_summary(value: Any) -> bool:
    if type(value) is not dict:
        return False
    problems, skip, shared, facts = (value.get(k) for k in ("problems", "skip", "shared", "facts"))
    if type(problems) is not list or type(skip) is not list or type(shared) is not list or type(facts) is not dict:
        return False
    for p in problems:
        if (type(p) is not list or len(p) != 4 or type(p[0]) is not int or type(p[1]) is not str
                or not isinstance(p[2], (str, type(None))) or type(p[3]) is not bool):
            return False
    # every line left out was a problem then, and is warned about now: a cache cannot hide a line
    if not all(type(n) is int for n in skip) or not set(skip) <= {p[0] for p in problems}:
        return False
    for s in shared:
        if (type(s) is not list or len(s) != 3 or s[0] != "environment" or type(s[1]) is not str
                or type(s[2]) is not list or not all(type(n) is int for n in s[2])):
            return False
    return True


def _from_summary(sid: str, path: Path, raw: bytes, value: dict[str, Any]) -> tuple[ReadResult, SessionData] | None:
    """The session read again from its unchanged bytes and the cache's summary; None if they disagree."""
    shared = []
    for name, text, numbers in value["shared"]:
        try:
            instance = Environment.model_validate_json(text)  # validated: the cache is never trusted
        except ValueError:
            return None
        shared.append((name, text.encode(), instance, numbers))
    got = read_known(raw, frozenset(value["skip"]), shared)
    if got is None:
        return None
    events, numbers = got
    result = ReadResult(path, events, [Problem(path, line, message, field, torn)
                                       for line, message, field, torn in value["problems"]], numbers)
    data = _group(sid, path, events, result.problems)
    try:
        dicts = [json.loads(k) for k in value.get("dicts") or []]
    except (TypeError, ValueError, RecursionError):
        return None
    rows = _resolve(value["facts"], dicts)
    if rows is None:
        return None
    data.fact_rows = rows
    return result, data
