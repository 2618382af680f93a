"""The seam between the generic recorder (``logkit run``) and what understands a command (SGLang).

The runner (``capture/runner.py``) knows processes, logs and events; it knows nothing about SGLang.
Before spawning it asks every :class:`Planner` in turn for a :class:`Plan` for the argv; the first
plan wins. A plan can fix the attempt's role, attach a launch or bench config, rewrite the argv
(add ``--output-file``), refuse the launch (preflight), and supplies a :class:`Watcher` that sees
the output and the clock and finally says how the attempt ended.

Speed contract: :meth:`Watcher.feed` is called on the recorder's hot path with chunks of complete
lines (up to ~1 MiB). Scan a chunk with compiled regexes over the whole chunk (``finditer``), not a
Python loop per line, and count lines with ``bytes.count(b"\\n")``. Anything slow (HTTP probes, a
smoke prompt) belongs in :meth:`Watcher.tick` or a thread of the watcher's own.

Threads: :meth:`Watcher.started` and :meth:`Watcher.finished` run on the runner's main thread;
:meth:`Watcher.feed` and :meth:`Watcher.tick` run, in order, on the recorder thread
(``capture/recorder.py``), so the main thread keeps echoing output and forwarding signals while a
watcher works. ``WatchContext.emit`` and ``request_stop`` may be called from any thread.

Options the runner passes (``WatchContext.options`` and the planner's ``options``):
``previous_launch`` (the session's last launch :class:`~logkit.events.Attempt`, its ``environment``
event merged in, or None), ``hang_timeout`` (seconds or None), ``smoke`` (list of prompts),
``smoke_only``, ``preflight`` (False with ``--no-preflight``), ``session_dir``, ``grace``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: importing the models (pydantic) would slow `logkit run -- true`
    from ..events import Attempt, BaseEvent, BenchConfig, EvidenceLine, LaunchConfig, Milestone

__all__ = ["ExitInfo", "Plan", "Planner", "Verdict", "Watcher", "WatchContext"]


@dataclass
class ExitInfo:
    """How the child process ended, as the runner saw it."""

    exit_code: int | None
    signal: int | None
    #: True when logkit itself sent the stop (user's Ctrl-C, SIGTERM, SIGHUP, --hang-timeout).
    stopped_by_logkit: bool = False
    #: The signal logkit received and forwarded, if any.
    forwarded_signal: int | None = None
    duration_s: float = 0.0
    lines: int = 0
    tail: list[EvidenceLine] = field(default_factory=list)
    #: Why logkit stopped the child, when it did: "SIGINT received", or a watcher's request_stop reason.
    stop_reason: str | None = None
    #: True when logkit had to SIGKILL the group after --grace.
    escalated: bool = False


@dataclass
class Verdict:
    """A watcher's say on the outcome. ``None`` fields leave the runner's generic answer."""

    status: str | None = None
    label: str | None = None
    signature: str | None = None
    evidence: list[EvidenceLine] = field(default_factory=list)
    timeline: list[Milestone] = field(default_factory=list)
    ready_at: Any = None  # datetime | None


@dataclass
class WatchContext:
    """What a watcher may use while the attempt runs."""

    attempt: Attempt
    #: Append an event to the attempt's session (thread-safe: the store locks).
    emit: Callable[[BaseEvent], None]
    #: Ask the runner to stop the child's process group (used by --hang-timeout, --smoke-only).
    request_stop: Callable[[str], None]
    #: Free-form options from the command line (hang_timeout, smoke prompts, smoke_only, ...).
    options: dict[str, Any] = field(default_factory=dict)


class Watcher(Protocol):
    """Sees one attempt's output and decides its outcome."""

    def started(self, ctx: WatchContext) -> None:
        """The child is running; ``ctx.attempt`` has been written."""

    def feed(self, chunk: bytes, first_line: int) -> None:
        """Complete lines of redacted output; ``first_line`` is the 1-based number of the first."""

    def tick(self, now: float) -> None:
        """Called about twice a second from the recorder while the child runs."""

    def finished(self, exit_info: ExitInfo) -> Verdict:
        """The child has ended (or logkit stopped it); say how the attempt ended."""


@dataclass
class Plan:
    """What a planner decided for an argv before launch."""

    role: str = "command"
    argv: list[str] | None = None  # rewritten argv, or None to keep it
    launch: LaunchConfig | None = None
    bench: BenchConfig | None = None
    watcher: Watcher | None = None
    #: Set to refuse the launch: the message says why and names the fix (preflight).
    refuse: str | None = None
    #: Printed to stderr before launch (warnings, the config diff).
    notes: list[str] = field(default_factory=list)


class Planner(Protocol):
    """Looks at an argv and returns a plan, or None when it does not recognise the command."""

    def __call__(self, argv: list[str], env: dict[str, str], options: dict[str, Any]) -> Plan | None: ...
