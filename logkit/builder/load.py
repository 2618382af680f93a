"""Stage 1, load: read and validate every session of the store into :class:`Loaded`.

Contract: every line of every ``events.jsonl`` is validated through
:meth:`logkit.store.Store.read_all`. A line that does not validate is reported as ``file:line:
message`` through ``warn`` and skipped; the rest of its session and of the store still load.
With ``strict=True`` any problem raises :class:`~logkit.errors.BadInput` listing all of them.
Events are grouped per session, in time order, by kind; unknown kinds (added to the schema after
this module was written) are kept in ``events`` and shown generically.

Two weights of event. A session holds few events of most kinds (its session line, decisions,
hypotheses, verdicts, sweeps, kinds added later) and many of the kinds in :data:`HEAVY`
(attempts, outcomes, metrics, smokes, server info, environments, launch configs: per attempt;
todo snapshots and notes, which only the session's own page shows). The few are read and validated with the session. The many are read on first use
(:attr:`SessionData.events`, ``.attempts``, ...) and let go again when more than a few sessions
hold theirs (:class:`Resident`): the aggregate pages read the facts kept per attempt and per
metric (:attr:`SessionData.fact_rows`, :attr:`SessionData.metric_rows`), and only a page that
shows a session's attempts reads them, so memory does not grow with the store.

Read cache (``<root>/.cache/load.json``, :mod:`logkit.readcache`): validation happens on a changed
file. A session file whose stat has not changed since it was last read keeps what that read found:
its problems (so its lines are not checked again), the line numbers of its few events, the
repeated environments of its attempts (validated once, shared by the attempts that carry the same
bytes), each attempt's derived facts (:func:`logkit.builder.frames.fact_row`), each metric's
facts, its time span and provenance sources. Its few events are validated again from the file
every time (pydantic, never from the cache); its many are validated from the file when a page
reads them. A cache entry that does not match its file's stat, is shaped otherwise, or whose
lines no longer validate as it says is derived again; the cache's version covers logkit's
version, the event models, this stage, the frames stage and the knowledge tables, so new code
never reads an old derivation. ``load(root, cache=False)`` reads without it (same result, every
event in memory). A file rewritten after the load and before a page reads its many events is
read as it is then (the facts were taken before).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import operator
import tomllib
from collections.abc import Callable, Iterator
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timezone
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

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
from ..launch.flags import workload
from ..files import lines as file_lines
from ..files import session_dirs
from ..readcache import SessionCache, stat_key
from ..reader import Problem, ReadResult, cross_check, read_events, read_known
from ..store import Store

__all__ = ["HEAVY", "Heavy", "Loaded", "MetricFact", "Resident", "SessionData", "gc_paused", "load", "norm_time",
           "tables"]


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


#: the kinds a session holds many of (per attempt): read when a page shows them, see the contract
HEAVY = frozenset({"attempt", "outcome", "metric", "smoke", "server_info", "environment", "launch_config", "todo",
                   "note"})


#: a benchmark's workload as :func:`logkit.launch.flags.workload` reads it
Workload = tuple[float | None, str | None, float | None, float | None]


class MetricFact(NamedTuple):
    """What the aggregate pages read of one metric event (kept in the read cache)."""

    name: str
    value: float
    unit: str | None
    attempt: str | None
    server_attempt: str | None
    concurrency: float | None
    item: str | None
    ts: datetime
    #: the rest of the workload (:func:`logkit.launch.flags.workload`): figures compare only at one
    dataset: str | None = None
    input_len: float | None = None
    output_len: float | None = None

    @property
    def workload(self) -> Workload:
        """(concurrency, dataset, input length, output length): figures compare only at one."""
        return (self.concurrency, self.dataset, self.input_len, self.output_len)


@dataclass(eq=False, slots=True)
class Heavy:
    """The events of the kinds in :data:`HEAVY`, grouped, with every event of the session in time order."""

    events: list[BaseEvent] = field(default_factory=list)
    attempts: dict[str, Attempt] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list)
    smokes: dict[str, list[Smoke]] = field(default_factory=dict)
    server_info: dict[str, ServerInfo] = field(default_factory=dict)
    #: attempt short id -> the full environment from a later ``environment`` event, if any
    environments: dict[str, Any] = field(default_factory=dict)
    todos: list[Todo] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


class Resident:
    """The sessions whose :class:`Heavy` part is in memory: at most ``limit`` of those that can be read
    again (the least recently used is let go first), so a build's memory does not grow with the store."""

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self._order: OrderedDict[int, SessionData] = OrderedDict()

    def touch(self, data: SessionData) -> None:
        key = id(data)
        if key in self._order:
            self._order.move_to_end(key)
            return
        self._order[key] = data
        while len(self._order) > self.limit:
            _key, old = self._order.popitem(last=False)
            old.release()

    def release_all(self) -> None:
        """Let go of every heavy part that can be read again."""
        while self._order:
            self._order.popitem()[1].release()


@dataclass(eq=False)
class SessionData:
    """One session: its few events (session, decisions, hypotheses, verdicts, sweeps, ...)
    validated and grouped, the facts the aggregate pages read, and its many events (:data:`HEAVY`)
    read on first use (:attr:`events`, :attr:`attempts`, ...) and let go when :class:`Resident` says."""

    id: str
    path: Path
    meta: Session | None = None
    #: the events of every kind but :data:`HEAVY`, in time order
    light: list[BaseEvent] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    hypotheses: dict[str, Hypothesis] = field(default_factory=dict)
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: attempt short id -> its facts (:func:`logkit.builder.frames.fact_row`), in the attempts' order;
    #: empty when they are derived from the attempts themselves
    fact_rows: dict[str, list[Any]] = field(default_factory=dict)
    #: every metric event's facts, in time order
    metric_rows: list[MetricFact] = field(default_factory=list)
    #: the earliest and latest timestamp of any event
    first: datetime | None = None
    last: datetime | None = None
    #: the provenance sources events name, sorted; whether some event names none (plain capture)
    declared: list[str] = field(default_factory=list)
    undeclared: bool = False
    heavy_part: Heavy | None = field(default=None, repr=False)
    reader: Callable[[], Heavy] | None = field(default=None, repr=False)
    resident: Resident | None = field(default=None, repr=False)

    @property
    def title(self) -> str:
        """The session's title, or its id when the session line is missing."""
        return self.meta.title if self.meta else self.id

    @property
    def heavy(self) -> Heavy:
        """The many events, read (and validated) now if they are not in memory."""
        part = self.heavy_part
        if part is None:
            if self.reader is None:
                part = Heavy()
            else:
                with gc_paused():
                    part = self.reader()
            self.heavy_part = part
        if self.resident is not None:
            self.resident.touch(self)
        return part

    def release(self) -> None:
        """Let go of the many events when they can be read again."""
        if self.reader is not None:
            self.heavy_part = None

    @property
    def events(self) -> list[BaseEvent]:
        return self.heavy.events

    @property
    def attempts(self) -> dict[str, Attempt]:
        return self.heavy.attempts

    @property
    def outcomes(self) -> dict[str, Outcome]:
        return self.heavy.outcomes

    @property
    def metrics(self) -> list[Metric]:
        return self.heavy.metrics

    @property
    def smokes(self) -> dict[str, list[Smoke]]:
        return self.heavy.smokes

    @property
    def server_info(self) -> dict[str, ServerInfo]:
        return self.heavy.server_info

    @property
    def environments(self) -> dict[str, Any]:
        return self.heavy.environments

    @property
    def todos(self) -> list[Todo]:
        return self.heavy.todos

    @property
    def notes(self) -> list[Note]:
        return self.heavy.notes


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
    #: the sessions whose many events are in memory
    resident: Resident = field(default_factory=Resident)


_BY_TS = operator.attrgetter("ts")


def norm_time(when: datetime) -> datetime:
    """``when`` with the standard library's fixed-offset tzinfo (pydantic's parse and
    ``datetime.fromisoformat`` give equal instants with different tzinfo objects: one form for both;
    and pandas converts a column of pydantic's own UTC ``TzInfo`` element by element, 20x slower)."""
    off = when.utcoffset()
    if off is None:
        return when
    return when.replace(tzinfo=UTC if not off else timezone(off))


def _conc(labels: dict[str, Any], keys: list[str]) -> float | None:
    for key in keys:
        value = labels.get(key)
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _item(labels: dict[str, Any], keys: list[str]) -> str | None:
    for key in keys:
        value = labels.get(key)
        if value is not None and str(value).strip():
            return str(value)
    return None


def _heavy_of(events: list[BaseEvent]) -> Heavy:
    """The many events of a session's validated ``events`` (all kinds), grouped."""
    part = Heavy(events=sorted(events, key=_BY_TS))
    attempts, outcomes, metrics, smokes = part.attempts, part.outcomes, part.metrics, part.smokes
    for event in part.events:
        # the kinds are siblings, so the order of the tests is free: the most frequent first
        if isinstance(event, Metric):
            metrics.append(event)
        elif isinstance(event, Attempt):
            attempts[event.short_id] = event
        elif isinstance(event, Outcome):
            outcomes[event.attempt] = event
        elif isinstance(event, Smoke):
            smokes.setdefault(event.attempt, []).append(event)
        elif isinstance(event, ServerInfo):
            part.server_info[event.attempt] = event
        elif isinstance(event, Todo):
            part.todos.append(event)
        elif isinstance(event, Note):
            part.notes.append(event)
        elif getattr(event, "kind", None) == "environment" and getattr(event, "environment", None) is not None:
            # the background probes' result supersedes the attempt line's instant environment
            part.environments[str(getattr(event, "attempt", ""))] = event.environment  # type: ignore[attr-defined]
        elif getattr(event, "kind", None) == "launch_config" and getattr(event, "launch", None) is not None:
            # SGLang's full parse, run beside the launch: its args supersede the quick parse's
            ref = str(getattr(event, "attempt", ""))
            if ref in attempts and attempts[ref].launch is not None:
                attempts[ref] = attempts[ref].model_copy(update={"launch": event.launch})  # type: ignore[attr-defined]
    return part


def _light(data: SessionData, light: list[BaseEvent]) -> None:
    """Group a session's few events (every kind but :data:`HEAVY`, in time order) into ``data``."""
    data.light = light
    for event in light:
        if isinstance(event, Session):
            data.meta = data.meta or event
        elif isinstance(event, Decision):
            data.decisions.append(event)
        elif isinstance(event, Hypothesis):
            data.hypotheses[event.short_id] = event
        elif isinstance(event, Verdict):
            data.verdicts.setdefault(event.hypothesis, []).append(event)


def _group(sid: str, path: Path, events: list[BaseEvent], problems: list[Problem],
           memo: dict[Any, Any] | None = None) -> SessionData:
    """A session from all its validated events, its heavy part in memory (and the facts read from it;
    with ``memo``, one object per distinct string they repeat)."""
    data = SessionData(id=sid, path=path, problems=problems)
    part = data.heavy_part = _heavy_of(events)
    _light(data, [e for e in part.events if e.kind not in HEAVY])
    metric_tables = tables()["metrics"]
    conc_keys, item_keys = metric_tables["concurrency_labels"], metric_tables.get("item_labels", [])
    one = (memo if memo is not None else {}).setdefault
    data.metric_rows = [
        MetricFact(one(m.name, m.name), m.value, m.unit and one(m.unit, m.unit), m.attempt and one(m.attempt, m.attempt),
                   m.server_attempt and one(m.server_attempt, m.server_attempt), _num(work[0]),
                   _item(m.labels, item_keys), norm_time(m.ts), _str(work[1]), _num(work[2]), _num(work[3]))
        for m in part.metrics
        for work in (workload(m.labels, _conc(m.labels, conc_keys)),)
    ]
    if part.events:
        data.first, data.last = norm_time(part.events[0].ts), norm_time(part.events[-1].ts)
    declared = set()
    for e in part.events:
        if e.provenance:
            declared.add(e.provenance.source)
        else:
            data.undeclared = True
    data.declared = sorted(declared)
    return data


def load(root: Path | str, *, strict: bool = False, warn: Callable[[str], None] = lambda _m: None,
         cache: bool = True) -> Loaded:
    """Read every session under ``root``; bad lines are warned about and skipped (or fatal).

    ``cache``: read through the store's ``load`` read cache and update it (see the module contract).
    """
    store = Store(root)
    resident = Resident()
    with gc_paused():
        cached: dict[str, str] = {}
        if cache:
            results, sessions = _read_cached(store.root, cached, resident)
        else:
            results = store.read_all()
            sessions = {sid: _group(sid, result.path, result.events, result.problems) for sid, result in results.items()}
    problems = [p for r in results.values() for p in r.problems]
    if strict and problems:
        raise BadInput(
            "the knowledge base has lines that do not validate:\n" + "\n".join(str(p) for p in problems),
            fix="fix or delete the lines named above, or build without --strict to skip them",
        )
    for problem in problems:
        warn(f"logkit: warning: skipped {problem}")
    from ..reasoning.decisions import aliases

    return Loaded(root=Path(root), sessions=sessions, problems=problems, moved=aliases(store), cached=cached,
                  resident=resident)


#: bump when what the ``load`` cache keeps changes shape (the code's digest covers the rest)
CACHE_FORMAT = 3
#: what a cached derivation depends on besides the session file: these modules and the tables
_DERIVED_FROM = ("events.py", "files.py", "store/sessions.py", "reader.py", "statuses.py", "builder/load.py", "builder/frames.py",
                 "launch/flags.py")
#: the fact row's fields that hold a dict (kept once per session in the entry's ``dicts``)
_DICT_FIELDS = (4, 6, 17)
_ROW_LEN = 19


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


def _read_cached(root: Path, how: dict[str, str], resident: Resident,
                 ) -> tuple[dict[str, ReadResult], dict[str, SessionData]]:
    """Every session's read result (its few events on a hit) and grouped data, through the ``load``
    read cache; ``how`` gets what the cache did per session."""
    cache = SessionCache(root, "load", cache_version())
    # one object per distinct string and dict the entries repeat (models, GPUs, statuses, versions):
    # a big store's facts take a fraction of the memory of one copy per attempt
    memo: dict[Any, Any] = {}
    results: dict[str, ReadResult] = {}
    sessions: dict[str, SessionData] = {}
    attempts: dict[str, list[str]] = {}
    found = {sid: (path, st) for sid, path, st in session_dirs(root)}
    # the same sessions, in the same order, as the store reads them (a directory without a valid id is no session)
    for sid in Store(root).session_ids():
        path = root / sid / EVENTS_FILE
        path_str, st = found.get(sid, (str(path), None))
        derived: dict[str, Any] = {}

        def derive(raw: bytes, sid: str = sid, path: Path = path, derived: dict[str, Any] = derived) -> Any:
            result = read_events(path, raw if raw else None)
            data = _group(sid, path, result.events, result.problems, memo)
            derived["result"], derived["data"] = result, data
            return _summary(data, result, raw, memo)

        raw, value, hit = cache.read(sid, path_str, derive, valid=_valid_summary, st=st)
        if hit:
            assert raw is not None
            got = _from_summary(sid, path, raw, value, memo)
            if got is None:  # the lines do not validate as the entry says: derive the session again
                cache.last[sid] = "derived"
                value = derive(raw)
                if st is not None:
                    cache.put(sid, stat_key(st), raw, value)
            else:
                derived["result"], derived["data"] = got
                attempts[sid] = list(got[1].fact_rows)
        del raw
        data, result = derived["data"], derived["result"]
        value = value if type(value) is dict else None
        if value is not None and data.heavy_part is not None:
            # derived now: the many events can be read again as a hit would (and let go meanwhile);
            # what is kept of the read is what a hit keeps (its few events; its problems, the same list)
            data.reader = _heavy_reader(path, value)
            attempts[sid] = list(data.attempts)
            few = [(e, n) for e, n in zip(result.events, result.lines, strict=True) if e.kind not in HEAVY]
            result = ReadResult(path, [e for e, _n in few], result.problems, [n for _e, n in few])
        data.resident = resident
        if data.heavy_part is not None:
            resident.touch(data)
        results[sid] = result
        sessions[sid] = data
    cross_check(results, attempts)
    how.update(cache.last)
    cache.prune(set(results))
    cache.save()
    return results, sessions


def _heavy_reader(path: Path, value: dict[str, Any]) -> Callable[[], Heavy]:
    """How a cached session's many events are read when a page first needs them: every line the
    entry does not name a problem, validated (:func:`logkit.reader.read_known`, or in full when the
    file no longer reads as the entry says)."""
    skip = frozenset(value["skip"])
    shared_json = [(name, text) for name, text, _numbers in value["shared"]]
    numbers = [lines for _name, _text, lines in value["shared"]]

    def read() -> Heavy:
        try:
            raw = path.read_bytes()
        except OSError:
            return Heavy()
        shared = []
        try:
            for (name, text), lines in zip(shared_json, numbers, strict=True):
                shared.append((name, text.encode(), Environment.model_validate_json(text), lines))
            got = read_known(raw, skip, shared)
        except ValueError:
            got = None
        events = got[0] if got is not None else read_events(path, raw).events
        return _heavy_of(events)

    return read


def _summary(data: SessionData, result: ReadResult, raw: bytes, memo: dict[Any, Any] | None = None) -> dict[str, Any]:
    """What the cache keeps of one session file (JSON): see the module contract.

    Sets ``data.fact_rows`` as a cache hit would (the frames stage derives nothing twice).
    """
    from .frames import fact_row

    kept = set(result.lines)
    lines = {n: chunk for n, chunk, _torn in file_lines(raw)}
    shared: dict[str, list[int]] = {}
    light: list[int] = []
    for event, number in zip(result.events, result.lines, strict=True):
        if event.kind not in HEAVY:
            light.append(number)
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
    dicts: dict[str, int] = {}  # the versions, backends and fingerprints of a session's attempts repeat: kept once
    for short, attempt in data.attempts.items():
        row = fact_row(data, attempt)
        for i in _DICT_FIELDS:
            key = json.dumps(row[i], default=str)  # in its order: the pages list versions as derived
            row[i] = dicts.setdefault(key, len(dicts))
        rows[short] = row
    memo = {} if memo is None else memo
    data.fact_rows = _resolve(rows, _shared_dicts(dicts, memo), memo) or {}
    return {
        "problems": [[p.line, p.message, p.field, p.torn] for p in result.problems],
        "skip": sorted(n for n in lines if n not in kept),
        "shared": patches,
        "light": light,
        # what makes the lines add up: every usable line is a problem, one of the few or one of the many
        "heavy": len(kept) - len(light),
        "usable": len(lines),
        "facts": rows,
        "dicts": list(dicts),
        "metrics": [[m.name, m.value, m.unit, m.attempt, m.server_attempt, m.concurrency, m.item, m.ts.isoformat(),
                     m.dataset, m.input_len, m.output_len] for m in data.metric_rows],
        "span": [data.first.isoformat(), data.last.isoformat()] if data.first and data.last else [],
        "declared": data.declared,
        "undeclared": data.undeclared,
    }


def _env_at(result: ReadResult, number: int) -> Any:
    """The environment of the event on line ``number``."""
    return result.events[result.lines.index(number)].__dict__.get("environment")


def _shared_dicts(texts: Any, memo: dict[Any, Any]) -> list[Any]:
    """The dicts an entry's JSON texts hold, one object per distinct text across the store (``memo``)."""
    out = []
    for text in texts:
        key = ("dict", text)
        if key not in memo:
            memo[key] = json.loads(text)
        out.append(memo[key])
    return out


def _resolve(rows: Any, dicts: list[Any], memo: dict[Any, Any] | None = None) -> dict[str, list[Any]] | None:
    """Fact rows with their dict fields' indexes replaced by the dicts (one object per distinct dict,
    shared by the rows: the pages read them and never change them), and with ``memo`` their
    strings too (one object per distinct string)."""
    if type(rows) is not dict or not all(type(d) is dict for d in dicts):
        return None
    out = {}
    try:
        for short, row in rows.items():
            if type(row) is not list or len(row) != _ROW_LEN:
                return None
            row = list(row) if memo is None else [memo.setdefault(x, x) if type(x) is str else x for x in row]
            for i in _DICT_FIELDS:
                k = row[i]
                if type(k) is not int or k < 0:
                    return None
                row[i] = dicts[k]
            out[short] = row
    except (TypeError, IndexError, ValueError):
        return None
    return out


def _valid_summary(value: Any) -> bool:
    if type(value) is not dict:
        return False
    problems, skip, shared, facts, light = (value.get(k) for k in ("problems", "skip", "shared", "facts", "light"))
    if (type(problems) is not list or type(skip) is not list or type(shared) is not list or type(facts) is not dict
            or type(light) is not list or type(value.get("metrics")) is not list or type(value.get("span")) is not list
            or type(value.get("declared")) is not list or type(value.get("undeclared")) is not bool):
        return False
    for p in problems:
        if (type(p) is not list or len(p) != 4 or type(p[0]) is not int or type(p[1]) is not str
                or not isinstance(p[2], (str, type(None))) or type(p[3]) is not bool):
            return False
    # every line left out was a problem then, and is warned about now: a cache cannot hide a line
    if not all(type(n) is int for n in skip) or not set(skip) <= {p[0] for p in problems}:
        return False
    if not all(type(n) is int for n in light) or not all(type(x) is str for x in value["declared"]):
        return False
    heavy, usable = value.get("heavy"), value.get("usable")
    if (type(heavy) is not int or type(usable) is not int or heavy < 0
            or len(set(light)) + len(set(skip)) + heavy != usable or set(light) & set(skip)):
        return False  # a cache cannot hide a line: not one of the few, not a problem, not counted
    for s in shared:
        if (type(s) is not list or len(s) != 3 or s[0] != "environment" or type(s[1]) is not str
                or type(s[2]) is not list or not all(type(n) is int for n in s[2])):
            return False
    return True


_STR_OR_NONE = (str, type(None))


def _metric_facts(rows: list[Any], memo: dict[Any, Any]) -> list[MetricFact] | None:
    """The cached metric rows as :class:`MetricFact` (one object per distinct string, ``memo``); None
    when one is not shaped as written."""
    out = []
    m = memo.setdefault
    num = (int, float)
    for r in rows:
        if (type(r) is not list or len(r) != 11 or type(r[0]) is not str or not isinstance(r[1], num)
                or type(r[1]) is bool or not isinstance(r[2], _STR_OR_NONE) or not isinstance(r[3], _STR_OR_NONE)
                or not isinstance(r[4], _STR_OR_NONE) or not isinstance(r[5], (int, float, type(None)))
                or not isinstance(r[6], _STR_OR_NONE) or type(r[7]) is not str or not isinstance(r[8], _STR_OR_NONE)
                or not all(isinstance(v, (int, float, type(None))) for v in r[9:])):
            return None
        try:
            ts = norm_time(datetime.fromisoformat(r[7]))
        except ValueError:
            return None
        out.append(MetricFact(m(r[0], r[0]), float(r[1]), r[2] and m(r[2], r[2]), r[3] and m(r[3], r[3]),
                              r[4] and m(r[4], r[4]), None if r[5] is None else float(r[5]), r[6], ts, r[8],
                              *(None if v is None else float(v) for v in r[9:])))
    return out


def _from_summary(sid: str, path: Path, raw: bytes, value: dict[str, Any],
                  memo: dict[Any, Any]) -> tuple[ReadResult, SessionData] | None:
    """The session from its unchanged bytes and the cache's summary: its few events validated again
    (never taken from the cache), its facts from the entry, its many events read when first used;
    None if the bytes and the entry disagree."""
    got = read_known(raw, frozenset(), None, only=frozenset(value["light"]))
    if got is None:
        return None
    events, numbers = got
    problems = [Problem(path, line, message, field, torn) for line, message, field, torn in value["problems"]]
    result = ReadResult(path, events, problems, numbers)
    data = SessionData(id=sid, path=path, problems=problems)
    if any(e.kind in HEAVY for e in events):
        return None
    _light(data, sorted(events, key=_BY_TS))
    try:
        dicts = _shared_dicts(value.get("dicts") or [], memo)
    except (TypeError, ValueError, RecursionError):
        return None
    rows = _resolve(value["facts"], dicts, memo)
    metrics = _metric_facts(value["metrics"], memo)
    if rows is None or metrics is None:
        return None
    span = value["span"]
    try:
        if span:
            first, last = (norm_time(datetime.fromisoformat(x)) for x in span)
            data.first, data.last = first, last
    except (TypeError, ValueError):
        return None
    data.fact_rows, data.metric_rows = rows, metrics
    data.declared, data.undeclared = list(value["declared"]), value["undeclared"]
    data.reader = _heavy_reader(path, value)
    return result, data
