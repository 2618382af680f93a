"""Stage 1, load: the knowledge base as one snapshot of the index (:mod:`logkit.store.index`).

Contract: :func:`load` reads one :class:`~logkit.store.index.Snapshot` (a read transaction: a
``logkit run`` appending meanwhile changes nothing the build sees). The aggregate pages read the
index's rows: :func:`attempt_rows` and each session's :attr:`SessionData.metric_rows`. A session's
few events (every kind but :data:`HEAVY`, ~2% of the lines) are typed with it, since the
cross-session checks and the reasoning rules take events. Its many (:data:`HEAVY`) are read as the
plain dicts the index validated at ingest (:class:`Heavy`), when a page first needs them, and let
go when more than a few sessions hold theirs (:class:`Resident`), so memory does not grow with the
store. Bad lines (the index's ``problems``) are warned about as ``file:line: message`` and
skipped; with ``strict=True`` any raises :class:`~logkit.errors.BadInput`.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import BadInput
from ..events import BaseEvent, Decision, Hypothesis, Session, Verdict, event_adapter
from ..store.derive import knowledge
from ..store.files import events_path
from ..store.reader import Problem, ReadResult, cross_check
from ..store.snapshot import gc_paused, lines_at

__all__ = ["HEAVY", "Heavy", "Loaded", "METRIC_FACT_COLUMNS", "MetricFact", "Resident", "SessionData", "attempt_rows",
           "gc_paused", "load", "metric_label", "metric_rows", "parse_time", "tables"]

Event = dict[str, Any]


def tables() -> dict[str, Any]:
    """The builder's knowledge tables (``logkit/data/knowledge.toml``, loaded by the store's one loader)."""
    return knowledge()


def metric_label(name: str) -> str:
    """How metric ``name`` reads in a header or on an axis (``[metrics.labels]`` of knowledge.toml)."""
    return str(tables()["metrics"].get("labels", {}).get(name) or name.replace("_", " "))


#: the kinds a session holds many of (per attempt): read when a page shows them, see the contract
HEAVY = ("attempt", "outcome", "metric", "smoke", "server_info", "environment", "launch_config")

#: a benchmark's workload as :func:`logkit.launch.flags.workload` reads it
Workload = tuple[float | None, str | None, float | None, float | None]


def parse_time(text: str | None) -> datetime:
    """An ISO 8601 time as the event models read it, in UTC (naive: taken as UTC; none sorts last)."""
    if not text:
        return datetime.max.replace(tzinfo=UTC)
    when = datetime.fromisoformat(text)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


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
    """A session's attempts (SGLang's full parse and role merged in), last outcomes and smoke tests, as
    the dicts of their lines; and the (source, detail) of every provenance its events name."""

    attempts: dict[str, Event] = field(default_factory=dict)
    #: attempt short id -> (time, line): where its entry goes in the session's story
    when: dict[str, tuple[datetime, int]] = field(default_factory=dict)
    outcomes: dict[str, Event] = field(default_factory=dict)
    smokes: dict[str, list[Event]] = field(default_factory=dict)
    provenance: set[tuple[str, str | None]] = field(default_factory=set)


class Resident:
    """The sessions whose :class:`Heavy` part is in memory: at most ``limit``, least recently used let go first."""

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
    """One session: its few events typed and grouped, its metric rows, its many events (:class:`Heavy`)."""

    id: str
    path: Path
    meta: Session | None = None
    #: (line, event) of every kind but :data:`HEAVY`, in time order
    light: list[tuple[int, BaseEvent]] = field(default_factory=list)
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
    #: reads the :class:`Heavy` part of the events the ``events`` rows ``where`` selects (all: "")
    reader: Callable[..., Heavy] | None = field(default=None, repr=False)
    resident: Resident | None = field(default=None, repr=False)

    @property
    def title(self) -> str:
        """The session's title, or its id when the session line is missing."""
        return self.meta.title if self.meta else self.id

    @property
    def heavy(self) -> Heavy:
        """The many events, read now if they are not in memory."""
        if self.heavy_part is None:
            self.heavy_part = self.reader() if self.reader is not None else Heavy()
        if self.resident is not None:
            self.resident.touch(self)
        return self.heavy_part

    def launches(self, only: Collection[str]) -> dict[str, Event]:
        """:attr:`Heavy.attempts` (at least those ``only`` names; read alone, not kept, when not in memory)."""
        if self.heavy_part is not None or self.reader is None:
            return self.heavy.attempts
        wanted = sorted(set(only))
        attempts: dict[str, Event] = {}
        for at in range(0, len(wanted), 400):  # inside SQLite's variables per statement
            some = wanted[at:at + 400]
            marks = ",".join("?" * len(some))
            attempts.update(self.reader(f"(kind = 'attempt' AND short_id IN ({marks})) OR "
                                        f"(kind = 'launch_config' AND attempt IN ({marks}))", (*some, *some)).attempts)
        return attempts

    def outcome_of(self, short_id: str) -> Event | None:
        """The outcome of attempt ``short_id`` (read alone when the many events are not in memory)."""
        if self.heavy_part is not None or self.reader is None:
            return self.heavy.outcomes.get(short_id)
        return self.reader("kind = 'outcome' AND attempt = ?", (short_id,)).outcomes.get(short_id)


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
    #: the index and snapshot :func:`load` opened itself, held open while this is in use
    _hold: Any = field(default=None, repr=False)


def attempt_rows(conn: Any, columns: tuple[str, ...]) -> Any:
    """The cursor of ``columns`` of every ``attempts`` row in (session, line) order: one scan of its key."""
    return conn.execute(f"SELECT {', '.join(columns)} FROM attempts ORDER BY session, line")


#: The ``metrics`` columns a build reads (one :class:`MetricFact` each), in :func:`metric_rows`' order.
METRIC_FACT_COLUMNS = ("session", "name", "value", "unit", "attempt", "server_attempt", "concurrency", "item", "ts",
                       "dataset", "input_len", "output_len")


def metric_rows(conn: Any) -> Any:
    """The cursor of :data:`METRIC_FACT_COLUMNS` of every ``metrics`` row, each session's in time order."""
    return conn.execute(f"SELECT {', '.join(METRIC_FACT_COLUMNS)} FROM metrics ORDER BY session, ts, line")


def _heavy_of(lines: Iterable[tuple[int, Event]]) -> Heavy:
    """A session's ``(line, event)`` grouped in time order: a later outcome or full parse replaces an earlier one."""
    part = Heavy()
    for line, event in sorted(lines, key=lambda pair: (parse_time(pair[1].get("ts")), pair[0])):
        kind, ref = event["kind"], event.get("attempt")
        if kind == "attempt":
            part.attempts[event["short_id"]] = event
            part.when[event["short_id"]] = (parse_time(event.get("ts")), line)
        elif kind == "outcome":
            part.outcomes[ref] = event
        elif kind == "smoke":
            part.smokes.setdefault(ref, []).append(event)
        elif kind == "launch_config" and ref in part.attempts:
            attempt, role = part.attempts[ref], event.get("role")
            if event.get("launch") is not None and (attempt.get("launch") is not None or role):
                attempt["launch"] = event["launch"]
            if role:  # a command whose output showed an SGLang server is a launch (capture.sglang.watcher)
                attempt["role"] = role
    return part


def _heavy(conn: Any, root: Path, sid: str, where: str = "", args: tuple[Any, ...] = ()) -> Heavy:
    """The :class:`Heavy` part of ``sid`` from the lines ``where`` selects (all, and their provenance: ``""``)."""
    kinds = "kind IN ('attempt', 'outcome', 'smoke', 'launch_config')"
    rows = conn.execute(f"SELECT id, offset, length, line FROM events WHERE session = ? AND {kinds} AND ({where or 1}) "
                        "ORDER BY line", (sid, *args)).fetchall()
    path = events_path(root, sid)
    part = _heavy_of(zip((r[3] for r in rows), lines_at(path, [r[:3] for r in rows])))
    if not where:
        spans = conn.execute("SELECT id, offset, length FROM events WHERE session = ? AND source IS NOT NULL "
                             "ORDER BY line", (sid,)).fetchall()
        for data in lines_at(path, spans):
            prov = data.get("provenance") or {}
            part.provenance.add((prov.get("source", "captured"), prov.get("detail")))
    return part


def _light(conn: Any, root: Path, sid: str) -> tuple[list[BaseEvent], list[int]]:
    """The events of ``sid`` of every kind but :data:`HEAVY`, typed, and their line numbers."""
    rows = conn.execute(f"SELECT id, offset, length, line FROM events WHERE session = ? AND kind NOT IN "
                        f"({','.join('?' * len(HEAVY))}) ORDER BY line", (sid, *HEAVY)).fetchall()
    validate = event_adapter().validate_python
    return [validate(data) for data in lines_at(events_path(root, sid), [r[:3] for r in rows])], [r[3] for r in rows]


def _group_light(data: SessionData, events: list[BaseEvent], lines: list[int]) -> None:
    data.light = sorted(zip(lines, events, strict=True), key=lambda pair: (pair[1].ts, pair[0]))
    for _line, event in data.light:
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
        data.reader = (lambda where="", args=(), sid=sid: _heavy(conn, root, sid, where, args))
    few: dict[str, ReadResult] = {}
    with gc_paused():
        for sid, data in sessions.items():
            events, lines = _light(conn, root, sid)
            few[sid] = ReadResult(data.path, events, [], lines)
            _group_light(data, events, lines)
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
    """The knowledge base under ``root``: ``snapshot``, or one of its refreshed index held open by the result."""
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
