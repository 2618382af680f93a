"""The typed event records logkit writes, one JSON object per line of ``events.jsonl``.

Contract:

* Every event is a closed record (``extra="forbid"``) tagged by ``kind``; all kinds are members of
  the one discriminated union :data:`Event` and registered in :data:`EVENT_TYPES`.
* Every event carries ``v`` (the schema version it was written with), a unique ``id``, the
  ``session`` id and a UTC timestamp ``ts``.
* Adding a kind: define a ``BaseEvent`` subclass with ``kind: Literal["..."]``, add it to
  ``Event``, run ``logkit schema --write``. Adding an optional field needs no version bump;
  renaming or removing one does, with an upgrade step in :data:`UPGRADES`.
* Lines written by an older logkit are upgraded step by step on read (:func:`upgrade`, which
  lives with :data:`SCHEMA_VERSION` and :data:`UPGRADES` in the pydantic-free :mod:`logkit.store.files`);
  lines from a newer one are refused with :class:`~logkit.errors.SchemaTooNew`.
* The closed records nested inside events (environment, launch configuration, evidence lines,
  a decision's options...) live in :mod:`logkit.event_records`; this module re-exports them, so
  ``from logkit.events import Environment`` keeps working.

This module imports nothing heavier than pydantic, so ``logkit run`` starts fast.
"""

from __future__ import annotations

import functools
import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Union, get_args

from pydantic import Field, TypeAdapter, field_validator
from pydantic_core import TzInfo as _PydanticTz

from . import statuses
from .event_records import (BenchConfig, ConfigDiff, DecisionOption, Environment, EvidenceLine, GitInfo, Gpu,
                            LaunchConfig, LogFile, Milestone, Probe, Provenance, Record, Survivor, TodoItem)
from .store.files import SCHEMA_VERSION, UPGRADES, upgrade

__all__ = [
    "Attempt", "AttemptEnvironment", "AttemptLaunch", "BaseEvent", "BenchConfig", "DECISION_ID",
    "DECISION_ID_BODY", "DECISION_ID_RE", "DECISION_STATUSES", "Decision", "DecisionOption", "EVENT_TYPES",
    "Environment", "Event", "EvidenceLine", "GitInfo", "Gpu", "Hypothesis", "LaunchConfig", "LogFile",
    "Metric", "Milestone", "Note", "OUTCOME_STATUSES", "Outcome", "Probe", "Provenance", "SCHEMA_VERSION",
    "ServerInfo", "Session", "Smoke", "Survivor", "Sweep", "SweepCell", "SweepCellResult", "SweepPoint",
    "Todo", "TodoItem", "UPGRADES", "Verdict", "event_adapter", "new_id", "parse_event", "upgrade", "utcnow",
]

#: How an attempt ended: a row of logkit/data/statuses.toml, in its order. ``ready`` means a server
#: came up and was still serving when recording stopped; a server that became ready and later died
#: gets the cause (``nan``, ``oom``, ...) with ``ready_at`` set on the outcome.
OutcomeStatus = Literal[statuses.names()]  # type: ignore[valid-type] - the table is the one vocabulary
OUTCOME_STATUSES: tuple[str, ...] = get_args(OutcomeStatus)

AttemptRole = Literal["launch", "bench", "smoke", "command"]

DecisionStatus = Literal["proposed", "accepted", "superseded", "deprecated"]
DECISION_STATUSES: tuple[str, ...] = get_args(DecisionStatus)

#: How a sweep cell ended: ``works`` (launched, smoke passed, benchmarked), ``failed`` (launched and
#: failed: the outcome says how), ``preflight`` (SGLang's parser refused its flags: never launched),
#: ``skipped`` (refuted on this GPU architecture in the knowledge base; ``--retry-refuted`` runs it).
SweepCellStatus = Literal["works", "failed", "preflight", "skipped"]

HypothesisVerdict = Literal["confirmed", "refuted", "inconclusive"]
Priority = Literal["low", "medium", "high"]

ATTEMPT_ID = r"^A[0-9]+$"
HYPOTHESIS_ID = r"^H[0-9]+$"
#: ``DR-`` and Crockford base32 digits: ``DR-7K3FQ`` (drawn from the event id), ``DR-0003`` (older, sequential).
#: The one decision-id pattern: the models, the ledger, the store scan and the CLI all use it.
DECISION_ID_BODY = r"DR-[0-9A-HJKMNP-TV-Z]{4,}"
DECISION_ID = rf"^{DECISION_ID_BODY}$"
#: A whole string that is a decision id (``\Z``: ``"DR-0001\n"`` is none).
DECISION_ID_RE = re.compile(rf"{DECISION_ID_BODY}\Z")
SWEEP_ID = r"^SW-[0-9a-f]{8}(-[0-9]+)?$"


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def new_id() -> str:
    """A unique event id: 32 hex digits."""
    return uuid.uuid4().hex


class BaseEvent(Record):
    """Fields every event has."""

    v: int = SCHEMA_VERSION
    id: str = Field(default_factory=new_id)
    session: str
    ts: datetime = Field(default_factory=utcnow)
    provenance: Provenance | None = None

    @field_validator("ts")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        tz = value.tzinfo
        if tz is UTC or (type(tz) is _PydanticTz and not value.utcoffset()):
            # "Z" or +00:00 parsed by pydantic: its own zero-offset tzinfo is kept (it formats,
            # compares, hashes and serialises as UTC does); replacing it cost ~20% of validating a line
            return value
        if not value.utcoffset():  # naive, or another zero-offset tzinfo: the same instant, named UTC
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00:00+05:00 is before the first UTC instant
            raise ValueError("timestamp out of range") from None


# --- session ----------------------------------------------------------------------------------


class Session(BaseEvent):
    """The first line of every session: what the session is about."""

    kind: Literal["session"] = "session"
    title: str
    goal: str | None = None
    tags: list[str] = Field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    host: str | None = None
    logkit_version: str | None = None


# --- reasoning --------------------------------------------------------------------------------


class Hypothesis(BaseEvent):
    """A claim a later attempt will test: ``H3: flashinfer_trtllm MoE runs on SM120``."""

    kind: Literal["hypothesis"] = "hypothesis"
    short_id: str = Field(pattern=HYPOTHESIS_ID)
    text: str
    priority: Priority = "medium"
    tags: list[str] = Field(default_factory=list)


class Verdict(BaseEvent):
    """A hypothesis closed by evidence (``logkit hypothesis refute H3 --evidence A7``)."""

    kind: Literal["verdict"] = "verdict"
    hypothesis: str = Field(pattern=HYPOTHESIS_ID)
    verdict: HypothesisVerdict
    evidence: list[str] = Field(default_factory=list)
    because: str | None = None
    #: The event id of the earlier verdict on the same hypothesis this one replaces (absent on the
    #: first verdict, and on verdicts written before logkit recorded replacements).
    replaces: str | None = None


class Todo(BaseEvent):
    """A snapshot of a todo list."""

    kind: Literal["todo"] = "todo"
    items: list[TodoItem]
    source: str | None = None


class Decision(BaseEvent):
    """A decision record, citable across the whole knowledge base by its permanent id (``DR-7K3FQ``)."""

    kind: Literal["decision"] = "decision"
    decision_id: str = Field(pattern=DECISION_ID)
    title: str
    status: DecisionStatus = "accepted"
    context: str | None = None
    decision: str | None = None
    options: list[DecisionOption] = Field(default_factory=list)
    #: Attempt ids (``A7``) or cross-session references (``2026-11-14-glm5/A4``).
    evidence: list[str] = Field(default_factory=list)
    consequences: str | None = None
    supersedes: str | None = Field(default=None, pattern=DECISION_ID)
    tags: list[str] = Field(default_factory=list)


class Note(BaseEvent):
    """Free text worth keeping, optionally about attempts, hypotheses or decisions."""

    kind: Literal["note"] = "note"
    text: str
    refs: list[str] = Field(default_factory=list)


# --- capture ----------------------------------------------------------------------------------


class Attempt(BaseEvent):
    """One wrapped command, written when it starts (its outcome follows when it ends)."""

    kind: Literal["attempt"] = "attempt"
    short_id: str = Field(pattern=ATTEMPT_ID)
    argv: list[str]
    cwd: str | None = None
    role: AttemptRole = "command"
    started: datetime = Field(default_factory=utcnow)
    tests: list[str] = Field(default_factory=list)
    environment: Environment | None = None
    log: LogFile | None = None
    pid: int | None = None
    pgid: int | None = None
    #: pid of the logkit process recording it: used to tell a live recording from an abandoned one.
    recorder_pid: int | None = None
    recorder_host: str | None = None
    launch: LaunchConfig | None = None
    bench: BenchConfig | None = None
    label: str | None = None
    #: The model under test by name, when the argv names none (``--model-path`` wins where given).
    model: str | None = None


class AttemptEnvironment(BaseEvent):
    """The full environment of an attempt, once its background probes finished.

    ``logkit run`` writes the instant part (host, OS, Python, variables) on the attempt line and
    this event when git, nvidia-smi and the package probe are done; it supersedes
    ``attempt.environment`` for that attempt.
    """

    kind: Literal["environment"] = "environment"
    attempt: str = Field(pattern=ATTEMPT_ID)
    environment: Environment


class Outcome(BaseEvent):
    """How an attempt ended."""

    kind: Literal["outcome"] = "outcome"
    attempt: str = Field(pattern=ATTEMPT_ID)
    status: OutcomeStatus
    label: str | None = None
    signature: str | None = None
    ended: datetime = Field(default_factory=utcnow)
    duration_s: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    ready_at: datetime | None = None
    evidence: list[EvidenceLine] = Field(default_factory=list)
    tail: list[EvidenceLine] = Field(default_factory=list)
    timeline: list[Milestone] = Field(default_factory=list)
    log: LogFile | None = None
    survivors: list[Survivor] = Field(default_factory=list)
    #: Why the stored log is shorter than what the child printed (disk full, size limit), if it is.
    capture_truncated: str | None = None


class AttemptLaunch(BaseEvent):
    """SGLang's full parse of a launch's flags, run beside the launch.

    ``logkit run`` answered preflight from the cached parser spec; this ``launch`` supersedes
    ``attempt.launch``'s args (the fingerprint and diff are the attempt's). ``error``: SGLang
    refused what the cached spec accepted."""

    kind: Literal["launch_config"] = "launch_config"
    attempt: str = Field(pattern=ATTEMPT_ID)
    launch: LaunchConfig | None = None
    error: str | None = None
    #: The role the attempt turned out to have: ``launch`` when a command's output showed an SGLang
    #: server's own lines (a ``docker run``, a script); it supersedes ``attempt.role``.
    role: AttemptRole | None = None


class ServerInfo(BaseEvent):
    """What a live server reported about itself (``/server_info``), redacted."""

    kind: Literal["server_info"] = "server_info"
    attempt: str = Field(pattern=ATTEMPT_ID)
    version: str | None = None
    endpoint: str | None = None
    resolved: dict[str, Any] = Field(default_factory=dict)
    fingerprint: dict[str, Any] = Field(default_factory=dict)


class Smoke(BaseEvent):
    """A smoke-test prompt sent to a ready server and what came back."""

    kind: Literal["smoke"] = "smoke"
    attempt: str = Field(pattern=ATTEMPT_ID)
    prompt: str
    reply: str | None = None
    latency_s: float | None = None
    ok: bool
    reason: str | None = None


class Metric(BaseEvent):
    """One measured figure, named with SGLang's own JSONL keys (``output_throughput``)."""

    kind: Literal["metric"] = "metric"
    name: str
    #: Finite: a NaN or infinite figure is no measurement (and would chart and link to nothing).
    value: float = Field(allow_inf_nan=False)
    unit: str | None = None
    #: The attempt that measured it (a bench run), if any.
    attempt: str | None = Field(default=None, pattern=ATTEMPT_ID)
    #: The launch attempt it measured.
    server_attempt: str | None = Field(default=None, pattern=ATTEMPT_ID)
    labels: dict[str, Any] = Field(default_factory=dict)


# --- sweeps (logkit sweep) --------------------------------------------------------------------


class SweepCell(Record):
    """One configuration of a sweep: the base launch with one value per axis."""

    #: ``c1``, ``c2``, ... in the order the sweep runs them.
    id: str
    #: ``moe_runner_backend=flashinfer_cutlass`` (axes joined with ``, ``): what resuming matches on.
    key: str
    #: SGLang dest -> value.
    values: dict[str, Any] = Field(default_factory=dict)
    argv: list[str] = Field(default_factory=list)


class Sweep(BaseEvent):
    """A sweep started: the grid it will run (``logkit sweep SPEC.toml``)."""

    kind: Literal["sweep"] = "sweep"
    sweep: str = Field(pattern=SWEEP_ID)
    title: str
    #: sha256 of the spec's canonical form: rerunning the same spec resumes this sweep.
    spec_hash: str
    spec_path: str | None = None
    argv: list[str] = Field(default_factory=list)
    axes: dict[str, list[Any]] = Field(default_factory=dict)
    cells: list[SweepCell] = Field(default_factory=list)
    smoke: list[str] = Field(default_factory=list)
    bench_argv: list[str] = Field(default_factory=list)
    bench_axes: dict[str, list[Any]] = Field(default_factory=dict)
    #: A latency limit: the metric (SGLang's JSONL key, ``p99_tpot_ms``) and its ceiling.
    limit_metric: str | None = None
    limit_max: float | None = None
    budget_s: float | None = None
    arch: str | None = None
    sglang_version: str | None = None


class SweepPoint(Record):
    """One benchmark run of a working cell (one value of the bench axes)."""

    attempt: str = Field(pattern=ATTEMPT_ID)
    labels: dict[str, Any] = Field(default_factory=dict)
    status: str | None = None
    #: the median over the point's measured runs (one run: its figure)
    output_throughput: float | None = None
    #: every measured run's output throughput (``[bench] repeat``), in run order; empty for one run
    runs: list[float] = Field(default_factory=list)
    #: Output tokens per second per user (1000 / mean TPOT, else throughput / concurrency).
    per_user: float | None = None
    #: The sweep's limit metric as measured, and whether it is within the limit.
    latency: float | None = None
    within_limit: bool | None = None


class SweepCellResult(BaseEvent):
    """How one cell of a sweep ended; a cell without one runs again when the sweep resumes."""

    kind: Literal["sweep_cell"] = "sweep_cell"
    sweep: str = Field(pattern=SWEEP_ID)
    cell: str
    key: str
    status: SweepCellStatus
    #: The launch's outcome status (``arch_mismatch``, ``garbage``, ``ready``...), when it launched.
    outcome: str | None = None
    reason: str | None = None
    hypothesis: str | None = Field(default=None, pattern=HYPOTHESIS_ID)
    #: The launch attempt first, then its benchmark attempts.
    attempts: list[str] = Field(default_factory=list)
    #: ``SESSION/A2``: the earlier attempt that refuted this configuration (skipped cells).
    refuted_by: str | None = None
    points: list[SweepPoint] = Field(default_factory=list)
    duration_s: float | None = None


#: Every kind, once: the union and the registry are both made from it.
_KINDS = (Session, Hypothesis, Verdict, Todo, Decision, Note, Attempt, AttemptEnvironment, AttemptLaunch, Outcome,
          ServerInfo, Smoke, Metric, Sweep, SweepCellResult)
Event = Annotated[Union[_KINDS], Field(discriminator="kind")]  # noqa: UP007 - a Union of the tuple

EVENT_TYPES: dict[str, type[BaseEvent]] = {cls.model_fields["kind"].default: cls for cls in _KINDS}


@functools.cache
def event_adapter() -> TypeAdapter[Any]:
    """The TypeAdapter of the :data:`Event` union (built once, lazily)."""
    return TypeAdapter(Event)


def parse_event(data: dict[str, Any]) -> BaseEvent:
    """Validate one event dict (upgrading it first); raises pydantic's ValidationError."""
    return event_adapter().validate_python(upgrade(data))
