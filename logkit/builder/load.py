"""Stage 1, load: the knowledge base as one snapshot of the index (:mod:`logkit.store.index`).

Contract: :func:`load` reads one :class:`~logkit.store.index.Snapshot` (a read transaction: every
query of the build sees the same state, however many lines a running ``logkit run`` appends
meanwhile). Nothing is validated here: the index validated every line once, at ingest. What
the aggregate pages read are the index's rows: :meth:`Loaded.attempt_rows` (the ``attempts`` rows,
:func:`logkit.store.derive.attempt_row`) and each session's :attr:`SessionData.metric_rows` (the
``metrics`` rows as :class:`MetricFact`). A session's few events (its session line, decisions,
hypotheses, verdicts, sweeps, kinds added later) are read with it; its many (:data:`HEAVY`: per
attempt, and its todos and notes, which only its own page shows) are read from the snapshot's
events when a page first needs them (:attr:`SessionData.events`, ``.attempts``, ...) and let go
again when more than a few sessions hold theirs (:class:`Resident`), so memory does not grow with
the store. A metric event is never typed here: what a page shows of a metric is its ``metrics`` row,
and of its line only its provenance (:attr:`Heavy.metric_provenance`, read from the line as the
index ingested it, for the lines whose ``events`` row names a source). Bad lines are the index's ``problems`` rows: each is warned about as ``file:line:
message`` and skipped; with ``strict=True`` any raises :class:`~logkit.errors.BadInput`.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import BadInput
from ..events import (
    Attempt, BaseEvent, Decision, Hypothesis, Note, Outcome, ServerInfo, Session, Smoke, Todo, Verdict,
    event_adapter,
)
from ..store.derive import knowledge
from ..store.files import events_path
from ..store.reader import Problem, ReadResult, cross_check
from ..store.snapshot import gc_paused  # re-exported: the builder's stages pause it too

__all__ = ["HEAVY", "Heavy", "Loaded", "METRIC_FACT_COLUMNS", "MetricFact", "Resident", "SessionData", "attempt_rows",
           "gc_paused", "load", "metric_label", "metric_rows", "norm_time", "tables"]


def tables() -> dict[str, Any]:
    """The builder's knowledge tables (``logkit/data/knowledge.toml``, loaded by the store's one loader)."""
    return knowledge()


def metric_label(name: str) -> str:
    """How metric ``name`` reads in a header or on an axis (``[metrics.labels]`` of knowledge.toml)."""
    return str(_metric_labels().get(name) or name.replace("_", " "))


@cache
def _metric_labels() -> dict[str, str]:
    return dict(tables()["metrics"].get("labels", {}))


#: the kinds a session holds many of (per attempt): read when a page shows them, see the contract
HEAVY = ("attempt", "outcome", "metric", "smoke", "server_info", "environment", "launch_config", "todo", "note")

#: a benchmark's workload as :func:`logkit.launch.flags.workload` reads it
Workload = tuple[float | None, str | None, float | None, float | None]


def norm_time(when: datetime) -> datetime:
    """``when`` with the standard library's fixed-offset tzinfo (pydantic's parse and
    ``datetime.fromisoformat`` give equal instants with different tzinfo objects: one form for both;
    and pandas converts a column of pydantic's own UTC ``TzInfo`` element by element, 20x slower)."""
    off = when.utcoffset()
    if off is None:
        return when
    return when.replace(tzinfo=UTC if not off else timezone(off))


def parse_time(text: str) -> datetime:
    """An ISO 8601 time as the index keeps it, as :func:`norm_time` gives it."""
    return norm_time(datetime.fromisoformat(text))


class MetricFact(NamedTuple):
    """One ``metrics`` row of the index (:func:`logkit.store.derive.metric_row`)."""

    name: str
    value: float
    unit: str | None
    attempt: str | None
    server_attempt: str | None
    concurrency: float | None
    item: str | None
    ts: datetime
    dataset: str | None = None
    input_len: float | None = None
    output_len: float | None = None

    @property
    def workload(self) -> Workload:
        """(concurrency, dataset, input length, output length): figures compare only at one."""
        return (self.concurrency, self.dataset, self.input_len, self.output_len)


@dataclass(eq=False, slots=True)
class Heavy:
    """Every event of the session but its metrics, in time order, those of the kinds in :data:`HEAVY`
    grouped; of the metric events, the provenance of those that name one (the pages read the
    ``metrics`` rows: :attr:`SessionData.metric_rows`)."""

    events: list[BaseEvent] = field(default_factory=list)
    attempts: dict[str, Attempt] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    #: (source, detail) of each distinct provenance the session's metric lines name
    metric_provenance: set[tuple[str, str | None]] = field(default_factory=set)
    smokes: dict[str, list[Smoke]] = field(default_factory=dict)
    server_info: dict[str, ServerInfo] = field(default_factory=dict)
    #: attempt short id -> the full environment from a later ``environment`` event, if any
    environments: dict[str, Any] = field(default_factory=dict)
    todos: list[Todo] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


class Resident:
    """The sessions whose :class:`Heavy` part is in memory: at most ``limit`` (the least recently
    used is let go first), so a build's memory does not grow with the store."""

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
            old.heavy_part = None

    def release_all(self) -> None:
        """Let go of every heavy part."""
        while self._order:
            self._order.popitem()[1].heavy_part = None


@dataclass(eq=False)
class SessionData:
    """One session: its few events grouped, its metric rows, and its many events (:data:`HEAVY`)
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
    #: every metric row of the session, in time order
    metric_rows: list[MetricFact] = field(default_factory=list)
    #: the earliest and latest timestamp of any event
    first: datetime | None = None
    last: datetime | None = None
    #: the provenance sources events name, sorted; whether some event names none (plain capture)
    declared: list[str] = field(default_factory=list)
    undeclared: bool = False
    heavy_part: Heavy | None = field(default=None, repr=False)
    reader: Callable[[], Heavy] | None = field(default=None, repr=False)
    #: reads the attempt and ``launch_config`` events of some attempts alone (:meth:`launches`)
    launch_reader: Callable[[Collection[str]], dict[str, Attempt]] | None = field(default=None, repr=False)
    resident: Resident | None = field(default=None, repr=False)
    #: reads one attempt's outcome events alone (:meth:`outcome_of`)
    outcome_reader: Callable[[str], Outcome | None] | None = field(default=None, repr=False)

    @property
    def title(self) -> str:
        """The session's title, or its id when the session line is missing."""
        return self.meta.title if self.meta else self.id

    @property
    def heavy(self) -> Heavy:
        """The many events, read now if they are not in memory."""
        part = self.heavy_part
        if part is None:
            with gc_paused():
                part = self.reader() if self.reader is not None else Heavy()
            self.heavy_part = part
        if self.resident is not None:
            self.resident.touch(self)
        return part

    def launches(self, only: Collection[str]) -> dict[str, Attempt]:
        """The attempts ``only`` names (at least) as :attr:`attempts` gives them (SGLang's full parse
        merged in), read with only the events that make them when the many events are not in memory,
        and nothing is kept (the configuration pages read the last launch of each configuration)."""
        if self.heavy_part is not None or self.launch_reader is None:
            return self.attempts
        with gc_paused():
            return self.launch_reader(only)

    def outcome_of(self, short_id: str) -> Outcome | None:
        """The outcome :attr:`outcomes` gives attempt ``short_id``, read with only that attempt's
        outcome events when the many events are not in memory (nothing is kept): a page that shows
        one attempt's log excerpt does not read its whole session."""
        if self.heavy_part is not None or self.outcome_reader is None:
            return self.outcomes.get(short_id)
        with gc_paused():
            return self.outcome_reader(short_id)

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
    """Everything the later stages need from the store: one snapshot of the index."""

    root: Path
    sessions: dict[str, SessionData]
    problems: list[Problem]
    #: decision ids that moved (the ledger's ``moved to`` lines): old id -> [(session, new id)]
    moved: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: the sessions whose many events are in memory
    resident: Resident = field(default_factory=Resident)
    #: session id -> what identifies its file's content as ingested (a page kept from the last build
    #: needs the same): the index's inode, size, mtime and tail hash
    digests: dict[str, str] = field(default_factory=dict)
    #: the snapshot's connection (its read transaction) the rows and heavy parts are read from
    conn: Any = field(default=None, repr=False)
    #: the index and snapshot :func:`load` opened itself (held open while this is in use)
    _hold: Any = field(default=None, repr=False)

    def attempt_rows(self, columns: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """The index's ``attempts`` rows in (session, line) order, one at a time (never all in memory);
        ``columns``: only these (:data:`logkit.builder.frames.FACT_COLUMNS`, what the pages read)."""
        from ..store.derive import ATTEMPT_COLUMNS

        columns = columns or ATTEMPT_COLUMNS
        for row in attempt_rows(self.conn, columns):
            yield dict(zip(columns, row, strict=True))


def attempt_rows(conn: Any, columns: tuple[str, ...]) -> Any:
    """The cursor of ``columns`` of every ``attempts`` row, as tuples in (session, line) order: one
    scan of the table (its key); what a build reads of every attempt (``bench/bench_index.py`` times it)."""
    return conn.execute(f"SELECT {', '.join(columns)} FROM attempts ORDER BY session, line")


#: The ``metrics`` columns a build reads (one :class:`MetricFact` each), in :func:`metric_rows`' order.
METRIC_FACT_COLUMNS = ("session", "name", "value", "unit", "attempt", "server_attempt", "concurrency", "item", "ts",
                       "dataset", "input_len", "output_len")


def metric_rows(conn: Any) -> Any:
    """The cursor of :data:`METRIC_FACT_COLUMNS` of every ``metrics`` row, as tuples, each session's
    in time order: what a build reads of every metric (``bench/bench_index.py`` times it)."""
    return conn.execute(f"SELECT {', '.join(METRIC_FACT_COLUMNS)} FROM metrics ORDER BY session, ts, line")


_BY_TS = lambda event: event.ts  # noqa: E731


def _heavy_of(events: list[BaseEvent]) -> Heavy:
    """The many events of a session, grouped."""
    part = Heavy(events=sorted(events, key=_BY_TS))
    attempts = part.attempts
    for event in part.events:
        if isinstance(event, Attempt):
            attempts[event.short_id] = event
        elif isinstance(event, Outcome):
            part.outcomes[event.attempt] = event
        elif isinstance(event, Smoke):
            part.smokes.setdefault(event.attempt, []).append(event)
        elif isinstance(event, ServerInfo):
            part.server_info[event.attempt] = event
        elif isinstance(event, Todo):
            part.todos.append(event)
        elif isinstance(event, Note):
            part.notes.append(event)
        elif event.kind == "environment" and getattr(event, "environment", None) is not None:
            # the background probes' result supersedes the attempt line's instant environment
            part.environments[str(getattr(event, "attempt", ""))] = event.environment  # type: ignore[attr-defined]
        elif event.kind == "launch_config" and getattr(event, "launch", None) is not None:
            # SGLang's full parse, run beside the launch: its args supersede the quick parse's
            ref = str(getattr(event, "attempt", ""))
            role = getattr(event, "role", None)
            if ref in attempts and (attempts[ref].launch is not None or role):
                attempts[ref] = attempts[ref].model_copy(update={"launch": event.launch})  # type: ignore[attr-defined]
        if event.kind == "launch_config" and getattr(event, "role", None):
            # a command whose output showed an SGLang server is a launch (logkit.capture.sglang.watcher)
            ref = str(getattr(event, "attempt", ""))
            if ref in attempts:
                attempts[ref] = attempts[ref].model_copy(update={"role": event.role})  # type: ignore[attr-defined]
    return part


def _outcome(conn: Any, root: Path, sid: str, short_id: str) -> Outcome | None:
    """The outcome :func:`_heavy_of` gives attempt ``short_id`` of ``sid``: its last in time order."""
    from ..store.index import lines_at

    rows = conn.execute("SELECT id, offset, length FROM events WHERE session = ? AND kind = 'outcome' AND attempt = ? "
                        "ORDER BY line", (sid, short_id)).fetchall()
    validate = event_adapter().validate_python
    return _heavy_of([validate(data) for data in lines_at(events_path(root, sid), rows)]).outcomes.get(short_id)


def _launches(conn: Any, root: Path, sid: str, only: Collection[str]) -> dict[str, Attempt]:
    """The attempts ``only`` names of ``sid`` as :func:`_heavy_of` makes them: each read with its
    ``launch_config`` events, which are all that change it (the attempt's short id and the
    ``attempt`` column of its ``launch_config`` rows)."""
    from ..store.index import lines_at

    wanted = sorted(set(only))
    rows: list[tuple[int, str, int, int]] = []
    for at in range(0, len(wanted), 400):  # inside SQLite's variables per statement
        some = wanted[at:at + 400]
        marks = ",".join("?" * len(some))
        rows += conn.execute(
            f"SELECT line, id, offset, length FROM events WHERE session = ? AND ((kind = 'attempt' AND short_id IN "
            f"({marks})) OR (kind = 'launch_config' AND attempt IN ({marks})))", (sid, *some, *some)).fetchall()
    rows.sort()
    validate = event_adapter().validate_python
    return _heavy_of([validate(data) for data in lines_at(events_path(root, sid), [r[1:] for r in rows])]).attempts



def _events(conn: Any, root: Path, sid: str, light: bool, skip: tuple[str, ...] = ()) -> tuple[list[BaseEvent], list[int]]:
    """The validated events of ``sid`` (only those not of the :data:`HEAVY` kinds: ``light``; none
    of ``skip``) and their line numbers, from the index."""
    from ..store.index import lines_at

    validate = event_adapter().validate_python
    skip = (*HEAVY, *skip) if light else skip
    where = f" AND kind NOT IN ({','.join('?' * len(skip))})" if skip else ""
    rows = conn.execute(f"SELECT id, offset, length, line FROM events WHERE session = ?{where} ORDER BY line",
                        (sid, *skip)).fetchall()
    # the lines as they are in the file (upgraded to the current schema), typed for the pages
    events = [validate(data) for data in lines_at(events_path(root, sid), [r[:3] for r in rows])]
    return events, [r[3] for r in rows]


def _heavy(conn: Any, root: Path, sid: str) -> Heavy:
    """The many events of ``sid`` (:class:`Heavy`): every kind but ``metric`` typed; of the metric
    lines whose ``events`` row names a provenance source, that provenance, read from the line as it
    is (the index validated it at ingest; a ``captured`` one without detail says nothing on a page)."""
    from ..store.index import lines_at

    part = _heavy_of(_events(conn, root, sid, light=False, skip=("metric",))[0])
    spans = conn.execute("SELECT id, offset, length FROM events WHERE session = ? AND kind = 'metric' "
                         "AND source IS NOT NULL ORDER BY line", (sid,)).fetchall()
    for data in lines_at(events_path(root, sid), spans):
        prov = data.get("provenance") or {}
        part.metric_provenance.add((prov.get("source", "captured"), prov.get("detail")))
    return part


def _group_light(data: SessionData, light: list[BaseEvent]) -> None:
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


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def from_snapshot(root: Path, snap: Any) -> Loaded:
    """The knowledge base of one index snapshot (see the module contract)."""
    conn = snap.conn
    resident = Resident()
    sessions: dict[str, SessionData] = {}
    digests = {}
    for sid, ino, size, mtime, tail in conn.execute("SELECT session, ino, size, mtime, tail FROM sessions ORDER BY session"):
        data = sessions[sid] = SessionData(id=sid, path=events_path(root, sid), resident=resident)
        digests[sid] = f"{ino}:{size}:{mtime}:{tail}"
        data.reader = (lambda sid=sid: _heavy(conn, root, sid))
        data.launch_reader = (lambda only, sid=sid: _launches(conn, root, sid, only))
        data.outcome_reader = (lambda short_id, sid=sid: _outcome(conn, root, sid, short_id))
    few: dict[str, ReadResult] = {}
    with gc_paused():
        for sid, data in sessions.items():
            events, lines = _events(conn, root, sid, light=True)
            few[sid] = ReadResult(data.path, events, [], lines)
            _group_light(data, sorted(events, key=_BY_TS))
        for sid, first, last in conn.execute("SELECT session, min(ts), max(ts) FROM events GROUP BY session"):
            if sid in sessions and first:
                sessions[sid].first, sessions[sid].last = parse_time(first), parse_time(last)
        for sid, source in conn.execute("SELECT DISTINCT session, source FROM events ORDER BY 1, 2"):
            if sid in sessions:
                if source is None:
                    sessions[sid].undeclared = True
                else:
                    sessions[sid].declared.append(source)
        times: dict[str, datetime] = {}
        strings: dict[str, str] = {}
        for row in metric_rows(conn):
            sid, name, value, unit, attempt, server, conc, item, ts, dataset, inp, outp = row
            when = times.get(ts) or times.setdefault(ts, parse_time(ts))
            one = strings.setdefault  # one object per distinct string the rows repeat
            sessions[sid].metric_rows.append(MetricFact(
                one(name, name), float(value), unit and one(unit, unit), attempt and one(attempt, attempt),
                server and one(server, server), _num(conc), item, when,
                None if dataset is None else one(str(dataset), str(dataset)), _num(inp), _num(outp)))
    # what a session cites of another (a decision's supersedes, evidence): named, the event kept
    shorts: dict[str, list[str]] = {}
    for sid, short in conn.execute("SELECT session, short_id FROM attempts"):
        shorts.setdefault(sid, []).append(short)
    problems = snap.problems() + [p for r in cross_check(few, shorts).values() for p in r.problems]
    problems.sort(key=lambda p: (str(p.path), p.line))
    for p in problems:
        sid = p.path.parent.name
        if sid in sessions:
            sessions[sid].problems.append(p)
    from ..reasoning.decisions import aliases
    from ..store import Store

    return Loaded(root=root, sessions=sessions, problems=problems, moved=aliases(Store(root)),
                  resident=resident, digests=digests, conn=conn)


def load(root: Path | str, *, strict: bool = False, warn: Callable[[str], None] = lambda _m: None,
         snapshot: Any = None) -> Loaded:
    """The knowledge base under ``root``: ``snapshot``, or a snapshot of its refreshed index held
    open by the result; bad lines are warned about and skipped (or fatal with ``strict``)."""
    root = Path(root)
    hold = None
    if snapshot is None:
        from ..store.index import Index

        hold = contextlib.ExitStack()
        index = hold.enter_context(Index(root))
        index.refresh()
        snapshot = hold.enter_context(index.snapshot())
    loaded = from_snapshot(root, snapshot)
    loaded._hold = hold
    if strict and loaded.problems:
        raise BadInput(
            "the knowledge base has lines that do not validate:\n" + "\n".join(str(p) for p in loaded.problems),
            fix="fix or delete the lines named above, or build without --strict to skip them",
        )
    for problem in loaded.problems:
        warn(f"logkit: warning: skipped {problem}")
    return loaded
