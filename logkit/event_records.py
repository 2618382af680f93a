"""The closed records events carry inside them: a todo item, a decision's option, what an attempt's
capture observed (environment, launch configuration, log, evidence lines, timeline).

Contract: each is a :class:`Record` (``extra="forbid"``, so a typo in a hand-edited file is caught)
with no ``kind``: it lives only inside an event of :mod:`logkit.events`, which owns the event kinds,
their vocabularies and ids, and re-exports every name here. Adding a field follows the rules in
:mod:`logkit.events` (an optional field needs no version bump; run ``logkit schema --write``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BenchConfig", "ConfigDiff", "DecisionOption", "Environment", "EvidenceLine", "GitInfo", "Gpu",
    "LaunchConfig", "LogFile", "Milestone", "Probe", "Provenance", "Record", "Survivor", "TodoItem",
]


class Record(BaseModel):
    """Base of every nested record: closed, so a typo in a hand-edited file is caught."""

    model_config = ConfigDict(extra="forbid")


class Provenance(Record):
    """Where an event's facts come from, when not from logkit watching it happen."""

    source: Literal["captured", "imported", "reconstructed"] = "captured"
    #: Free text: the file an import came from, or the written account a reconstruction follows.
    detail: str | None = None


class TodoItem(Record):
    """One item of a todo list, in the shape the agents' ``todowrite`` tool writes."""

    content: str
    status: str = "pending"
    priority: str | None = None
    #: The hypothesis this item was matched to, if any (shown, never guessed silently).
    hypothesis: str | None = None


class DecisionOption(Record):
    """An option a decision considered, and why it lost (empty ``why_not`` for the chosen one)."""

    name: str
    chosen: bool = False
    why_not: str | None = None
    hypotheses: list[str] = Field(default_factory=list)
    attempts: list[str] = Field(default_factory=list)


class LogFile(Record):
    """The raw log of an attempt, relative to the session directory."""

    path: str
    size: int | None = None
    sha256: str | None = None


class GitInfo(Record):
    """The git state of the attempt's working directory."""

    commit: str | None = None
    dirty: bool | None = None
    branch: str | None = None


class Gpu(Record):
    """One GPU as nvidia-smi reports it."""

    index: int
    name: str
    driver: str | None = None
    memory_mib: int | None = None
    compute_cap: str | None = None


class Probe(Record):
    """How one environment probe went: a probe that cannot run is recorded, never fatal."""

    ok: bool
    seconds: float | None = None
    error: str | None = None


class Environment(Record):
    """Where an attempt ran. Every value is redacted before it is stored."""

    host: str | None = None
    os: str | None = None
    python: str | None = None
    git: GitInfo | None = None
    env: dict[str, str] = Field(default_factory=dict)
    gpus: list[Gpu] = Field(default_factory=list)
    topology: str | None = None
    #: Versions from the wrapped command's own interpreter: sglang, sgl-kernel, flashinfer, ...
    packages: dict[str, str | None] = Field(default_factory=dict)
    torch_cuda: str | None = None
    device_capability: str | None = None
    interpreter: str | None = None
    probes: dict[str, Probe] = Field(default_factory=dict)


class ConfigDiff(Record):
    """What changed against the previous launch of the session."""

    against: str | None = None
    added: dict[str, Any] = Field(default_factory=dict)
    removed: dict[str, Any] = Field(default_factory=dict)
    #: flag -> [old, new]
    changed: dict[str, list[Any]] = Field(default_factory=dict)
    env_changed: dict[str, list[str | None]] = Field(default_factory=dict)
    packages_changed: dict[str, list[str | None]] = Field(default_factory=dict)


class LaunchConfig(Record):
    """An SGLang launch's configuration, parsed before launch."""

    #: ``sglang`` when SGLang's own parser resolved the flags, ``plain`` when it was not importable,
    #: ``printed`` when they were read from the ``server_args=ServerArgs(...)`` line the server printed.
    parser: Literal["sglang", "plain", "printed"] = "plain"
    sglang_version: str | None = None
    unresolved: bool = True
    args: dict[str, Any] = Field(default_factory=dict)
    non_default: dict[str, Any] = Field(default_factory=dict)
    fingerprint: dict[str, Any] = Field(default_factory=dict)
    host: str | None = None
    port: int | None = None
    diff: ConfigDiff | None = None


class BenchConfig(Record):
    """A benchmark client's target and workload."""

    host: str | None = None
    port: int | None = None
    base_url: str | None = None
    output_file: str | None = None
    labels: dict[str, Any] = Field(default_factory=dict)


class EvidenceLine(Record):
    """A line of an attempt's log, with its 1-based line number."""

    line: int
    text: str


class Milestone(Record):
    """A startup stage: weights loaded, KV cache allocated, CUDA graphs captured, ready."""

    stage: str
    at: datetime | None = None
    seconds: float | None = None
    line: int | None = None
    rank: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class Survivor(Record):
    """A process of the attempt's group still alive after it ended."""

    pid: int
    cmdline: str | None = None
