"""Stage 4 output for the knowledge pages: the contexts of the working-configuration, matrix,
negative-result and signature pages (:mod:`.pages_configs` and :mod:`.pages_signatures` make them).
The contract is :mod:`logkit.builder.contexts`'."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: contexts imports this module
    from .contexts import AttemptRef, HypRef, Line, Page

__all__ = ["CellCtx", "ConfigCtx", "ConfigPage", "ConfigRow", "ConfigsIndex", "DiffRow", "MatrixPage",
           "MatrixRow", "MatrixTable", "NegativePage", "SignaturePage", "SignatureRow", "SignaturesIndex",
           "UnexplainedRow"]


@dataclass
class ConfigCtx:
    """One working configuration (one launch fingerprint) of a model on a GPU."""

    #: stable anchor: ``cfg-<fingerprint hash>``
    anchor: str
    #: backend axes and values, e.g. ``moe_runner_backend=flashinfer_cutlass``
    backends: list[tuple[str, str]]
    command: str
    #: version name -> the distinct versions it has worked with
    holds_for: dict[str, list[str]]
    #: concurrency -> throughput / ttft / itl (columns in ``metric_names``)
    metric_names: list[str]
    metric_rows: list[tuple[str, list[str]]]
    last_verified: datetime
    attempts: list[AttemptRef]
    stale_by: AttemptRef | None = None
    #: the full configuration (SGLang's resolved defaults included), flag -> value, when recorded
    full: list[tuple[str, str]] = field(default_factory=list)
    #: the section heading: the backend values, plus the chosen values (``key=value``, ``key not set``)
    #: that tell it apart from another configuration of the page with the same backend values
    heading: str = ""


@dataclass
class ConfigPage:
    """``configs/<model>-<gpu>-<sglang>/``."""

    page: Page
    model: str
    gpu: str
    arch: str
    sglang: str
    configs: list[ConfigCtx]
    metrics_href: str | None


@dataclass
class ConfigRow:
    """A line of the configurations index."""

    model: str
    gpu: str
    arch: str
    sglang: str
    count: int
    stale: int
    best: str
    href: str


@dataclass
class ConfigsIndex:
    """``configs/``."""

    page: Page
    rows: list[ConfigRow]


@dataclass
class CellCtx:
    """A cell of the compatibility matrix."""

    category: str
    text: str
    href: str | None = None
    #: evidence gist: signature label, versions, date
    detail: str | None = None


@dataclass
class MatrixRow:
    """Backend axis=value and its cells, one per architecture."""

    axis: str
    value: str
    cells: list[CellCtx]


@dataclass
class MatrixTable:
    """The matrix of one model."""

    model: str
    archs: list[str]
    rows: list[MatrixRow]


@dataclass
class MatrixPage:
    """``backends/``: backend value x GPU architecture x model."""

    page: Page
    tables: list[MatrixTable]
    legend: list[tuple[str, str]]
    negatives: list[tuple[str, str, str]]


@dataclass
class NegativePage:
    """``backends/<axis>-<value>-<arch>-<model>/``: a negative result."""

    page: Page
    axis: str
    value: str
    arch: str
    model: str
    category: str
    tried: list[tuple[AttemptRef, str]]
    signatures: list[tuple[str, str]]
    excerpt: list[Line]
    excerpt_from: AttemptRef | None
    reproduce: str
    refuted_on: dict[str, list[str]]
    hypotheses: list[HypRef]
    options: list[tuple[str, str, str, str]]
    retry_when: list[str]
    #: architectures other than ``arch`` where the same value worked
    worked_elsewhere: list[str]
    #: for ``slow``: both figures and the one-value comparison they come from
    compared: str | None = None


@dataclass
class SignatureRow:
    """A line of the signature index."""

    signature: str
    label: str | None
    count: int
    archs: str
    cleared: int
    href: str


@dataclass
class UnexplainedRow:
    """Failures no signature explains (``other_crash``) that share one normalised error line."""

    #: the error line with numbers, paths, addresses and ids masked (logkit.errorlines)
    template: str
    count: int
    #: the attempts, latest last
    attempts: list[AttemptRef]


@dataclass
class SignaturesIndex:
    """``signatures/``."""

    page: Page
    rows: list[SignatureRow]
    #: unexplained failures grouped by template, most frequent first (a repeat earns a signature row)
    unexplained: list[UnexplainedRow] = field(default_factory=list)


@dataclass
class DiffRow:
    """One changed setting between two attempts."""

    key: str
    old: str | None
    new: str | None


@dataclass
class SignaturePage:
    """``signatures/<slug>/``: a failure signature and who hit it."""

    page: Page
    signature: str
    label: str | None
    #: (attempt, backends text, gpu, arch, versions text)
    hits: list[tuple[AttemptRef, str, str, str, str]]
    excerpt: list[Line]
    excerpt_from: AttemptRef | None
    #: (failed attempt, the next attempt that worked, what changed)
    cleared: list[tuple[AttemptRef, AttemptRef, list[DiffRow]]]
    #: how many attempts hit it in all (``hits`` holds the latest of them)
    total: int = 0
    #: every architecture it was hit on
    archs: list[str] = field(default_factory=list)
    #: how many failures something cleared in all
    cleared_total: int = 0
