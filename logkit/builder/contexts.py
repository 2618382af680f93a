"""Stage 4 output: one typed context per page template; templates see nothing else.

Contract: every field is plain data (str, numbers, datetimes, lists of these dataclasses). Strings
are the user's raw text: templates escape them (the engine's ``finalize`` escapes every output).
``href`` fields are paths from the docs root to a generated page (``sessions/<id>/index.md#A4``);
the render stage makes them relative to the page that links them. No DataFrame or event object
reaches a template.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["AliasPage", "AliasTarget", "AttemptRef", "BestRow", "ChartCtx", "DecisionPage", "DecisionRow",
           "DecisionsIndex", "Entry", "EvidenceCtx", "HomePage", "HypRef", "Line", "MetricRow", "MetricsIndex",
           "MetricsPage", "OptionCtx", "Page", "SessionPage", "SessionPart", "SessionRow", "SessionsIndex"]


@dataclass
class Page:
    """Where a page goes and what it is called."""

    #: path of the Markdown file under the docs directory, e.g. ``decisions/DR-0003/index.md``
    path: str
    #: the page title (raw text; escaped for the HTML title by the render stage)
    title: str
    #: the template that renders it, e.g. ``decision.md.j2``
    template: str
    #: Material tags of the page (status of a decision, GPU architecture...)
    tags: list[str] = field(default_factory=list)
    #: keep the page's text out of the search index (Material's ``search: exclude``): pages nobody
    #: searches (metrics tables, moved-decision stubs, the later parts of a long session)
    no_search: bool = False


@dataclass
class Line:
    """A log line with its 1-based number in the attempt's log."""

    number: int
    text: str


@dataclass
class AttemptRef:
    """A link to one attempt and the gist of how it ended."""

    #: ``<session>/<A7>``
    ref: str
    #: link target: the attempt's anchor on its session page
    href: str
    #: short status word (``ready``, ``oom``, ... or ``running`` when no outcome was recorded)
    status: str
    #: outcome label, e.g. ``CUDA out of memory during CUDA graph capture``
    label: str | None = None
    #: when it started
    started: datetime | None = None
    #: what the attempt was, as its ``--label`` named it (e.g. ``MoE: flashinfer_trtllm``)
    name: str | None = None


@dataclass
class HypRef:
    """A hypothesis and its verdict."""

    id: str
    text: str
    href: str
    #: ``confirmed`` / ``refuted`` / ``inconclusive`` / ``open``
    verdict: str = "open"
    because: str | None = None
    evidence: list[AttemptRef] = field(default_factory=list)


@dataclass
class DecisionRow:
    """One decision in a list."""

    id: str
    title: str
    #: the status shown: ``superseded`` when a later record supersedes it, else the recorded one
    status: str
    date: datetime
    href: str
    session: str
    superseded_by: list[str] = field(default_factory=list)


@dataclass
class MetricRow:
    """One figure: name, value, unit and the concurrency it was measured at."""

    name: str
    value: float
    unit: str | None = None
    concurrency: float | None = None


@dataclass
class EvidenceCtx:
    """An attempt cited as evidence, with its log excerpt."""

    attempt: AttemptRef
    signature: str | None = None
    metrics: list[MetricRow] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    #: the log file, relative to the session directory, and its published copy (None: not on disk)
    log: str | None = None
    log_href: str | None = None


@dataclass
class OptionCtx:
    """An option a decision considered."""

    name: str
    chosen: bool
    why_not: str | None = None
    hypotheses: list[HypRef] = field(default_factory=list)
    attempts: list[AttemptRef] = field(default_factory=list)


@dataclass
class DecisionPage:
    """``decisions/DR-0003/``: a MADR-like record."""

    page: Page
    row: DecisionRow
    #: the status as recorded in the event (differs from ``row.status`` when superseded later)
    recorded_status: str
    context: str | None
    decision: str | None
    consequences: str | None
    options: list[OptionCtx]
    evidence: list[EvidenceCtx]
    #: references that name no attempt of the knowledge base (shown, not linked)
    unresolved: list[str]
    supersedes: DecisionRow | None
    superseded_by: list[DecisionRow]
    tags: list[str]
    #: e.g. ``reconstructed from a written account: seeds/000.txt``; None when captured live
    provenance: str | None
    session_href: str
    session_title: str
    #: the other records this page's id also names (an older id two sessions used, or one that moved)
    also: list[AliasTarget] = field(default_factory=list)


@dataclass
class AliasTarget:
    """A decision record an old or shared id leads to."""

    #: the record's own id now
    id: str
    title: str
    session: str
    href: str


@dataclass
class AliasPage:
    """``decisions/DR-0004/`` for an id that moved: a redirect to its one record, or a list of them."""

    page: Page
    id: str
    targets: list[AliasTarget]


@dataclass
class DecisionsIndex:
    """``decisions/``: every decision grouped by status."""

    page: Page
    #: status -> rows, in the closed list's order (proposed, accepted, superseded, deprecated)
    by_status: dict[str, list[DecisionRow]]
    counts: dict[str, int]


@dataclass
class BestRow:
    """The best measured configuration of one model on one GPU at one workload."""

    model: str
    gpu: str
    metric: str
    value: float
    unit: str | None
    concurrency: float | None
    config_href: str
    attempt: AttemptRef
    #: the workload the figure was measured at (``concurrency 1``, ``workload not recorded``)
    workload: str = ""


@dataclass
class HomePage:
    """The home page: coverage, counts, latest decisions, best configurations."""

    page: Page
    counts: dict[str, int]
    models: list[str]
    #: (GPU label, architecture) pairs
    gpus: list[tuple[str, str]]
    sglang_versions: list[str]
    first: datetime | None
    last: datetime | None
    latest_decisions: list[DecisionRow]
    best: list[BestRow]
    #: provenance source -> number of sessions with events of that source
    sources: dict[str, int]
    problems: list[str]


@dataclass
class Entry:
    """One item of a session's story; ``kind`` picks the partial that renders it."""

    kind: str
    ts: datetime
    anchor: str | None = None
    title: str = ""
    text: str | None = None
    provenance: str | None = None
    attempt: AttemptRef | None = None
    command: str | None = None
    backends: list[tuple[str, str]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    diff: list[DiffRow] = field(default_factory=list)
    diff_against: str | None = None
    lines: list[Line] = field(default_factory=list)
    #: the attempt's figures pivoted: column names, then (concurrency, values) rows
    metric_names: list[str] = field(default_factory=list)
    metric_rows: list[tuple[str, list[str]]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    #: todo items (status, content, hypothesis) and what changed since the previous snapshot
    items: list[tuple[str, str, str | None]] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)
    #: an attempt's raw log: (its file relative to the session directory, the published copy's href)
    log: tuple[str, str] | None = None


@dataclass
class SessionPart:
    """One part of a session's story that is split over several pages (see ``paths.PART_ATTEMPTS``)."""

    #: 1 for the session page itself
    number: int
    href: str
    #: the first and last attempt it shows (``A201``, ``A400``), None for a part of no attempt
    first: str | None
    last: str | None
    #: when its first and last entries happened
    start: datetime | None
    end: datetime | None
    #: how many entries (attempts, hypotheses, notes...) it shows
    entries: int


@dataclass
class SessionPage:
    """``sessions/<id>/`` (and ``part-<n>/``, each part's story only, when it has more than
    ``paths.PART_ATTEMPTS`` attempts): the story of one session in time order."""

    page: Page
    id: str
    title: str
    goal: str | None
    tags: list[str]
    started: datetime | None
    host: str | None
    provenance: list[str]
    counts: dict[str, int]
    entries: list[Entry]
    problems: list[str]
    #: which part this page is (1: the session page) and every part, when the story is split
    part: int = 1
    parts: list[SessionPart] = field(default_factory=list)
    #: on part 1 of a split story: (anchor, title, text) of every hypothesis (``#H3`` resolves there)
    hypotheses: list[tuple[str, str, str]] = field(default_factory=list)
    #: attempts per part (``paths.PART_ATTEMPTS``): part 1 sends an old ``#A777`` link to its part
    part_attempts: int = 0


@dataclass
class SessionRow:
    """A line of the session index."""

    id: str
    title: str
    started: datetime | None
    attempts: int
    ready: int
    decisions: int
    source: str
    href: str


@dataclass
class SessionsIndex:
    """``sessions/``."""

    page: Page
    rows: list[SessionRow]


@dataclass
class ChartCtx:
    """A chart rendered to SVG at build time, and its numbers as a table."""

    title: str
    #: the SVG file, from the docs root; None when the figures are too few to chart (table only)
    src: str | None
    alt: str
    headers: list[str]
    rows: list[list[str]]
    #: why there is no chart, e.g. ``one measurement per configuration``
    note: str | None = None


@dataclass
class MetricsPage:
    """``metrics/<model>-<gpu>/``."""

    page: Page
    model: str
    gpu: str
    charts: list[ChartCtx]
    #: series name in the charts (``C1``) -> the full configuration it stands for
    key: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class MetricsIndex:
    """``metrics/``."""

    page: Page
    rows: list[tuple[str, str, int, str]]
