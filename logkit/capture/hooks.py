"""The seam between the generic recorder (``logkit run``) and what understands a command (SGLang).

The runner knows processes, logs and events, nothing about SGLang. Before spawning it asks every
:class:`Planner` for a :class:`Plan` for the argv (the first wins): the role, a launch or bench
config, a rewritten argv, a refusal (preflight), and a :class:`Watcher` that sees the output and the
clock and finally says how the attempt ended.

Speed: :meth:`Watcher.feed` is on the recorder's hot path (chunks of complete lines, up to ~1 MiB):
no Python loop per line; anything slow belongs in a thread of its own. Threads: ``started`` and
``finished`` run on the main thread, ``feed`` and ``tick`` in order on the recorder thread;
``WatchContext.emit`` and ``request_stop`` may be called from any thread. Options: ``previous_launch``
(a dict, its environment merged in), ``hang_timeout``, ``smoke``, ``smoke_only``, ``preflight``,
``session_dir``, ``grace``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ._slotted import Slotted

if TYPE_CHECKING:  # annotations only: importing the models (pydantic) would slow `logkit run -- true`
    from ..events import Attempt, BaseEvent, BenchConfig, EvidenceLine, LaunchConfig, Milestone

__all__ = ["ExitInfo", "Plan", "Planner", "WatchContext", "WatchResult", "Watcher"]


class ExitInfo(Slotted):
    """How the child process ended, as the runner saw it."""

    __slots__ = ("exit_code", "signal", "stopped_by_logkit", "lines", "stop_reason", "escalated")

    exit_code: int | None
    signal: int | None
    stopped_by_logkit: bool  # logkit sent the stop (a forwarded Ctrl-C, SIGTERM, SIGHUP, --hang-timeout)
    lines: int
    stop_reason: str | None  # "SIGINT received", or a watcher's request_stop reason
    escalated: bool  # logkit had to SIGKILL the group after --grace

    _defaults = {"stopped_by_logkit": False, "lines": 0, "stop_reason": None, "escalated": False}


class WatchResult(Slotted):
    """A watcher's say on the outcome. ``None`` fields leave the runner's generic answer."""

    __slots__ = ("status", "label", "signature", "evidence", "timeline", "ready_at")

    status: str | None
    label: str | None
    signature: str | None
    evidence: list[EvidenceLine]
    timeline: list[Milestone]
    ready_at: Any  # datetime | None

    _defaults = {"status": None, "label": None, "signature": None, "evidence": [], "timeline": [], "ready_at": None}


class WatchContext(Slotted):
    """What a watcher may use while the attempt runs."""

    __slots__ = ("record", "emit", "request_stop", "options", "_attempt")

    record: dict[str, Any]  # the attempt line as written: what a watcher reads before it needs the model
    emit: Callable[[BaseEvent], None]  # append an event to the session (thread-safe)
    request_stop: Callable[[str], None]  # ask the runner to stop the child's process group
    options: dict[str, Any]  # from the command line (hang_timeout, smoke prompts, smoke_only, ...)

    def __init__(self, attempt: Attempt | dict[str, Any], emit: Callable[[BaseEvent], None],
                 request_stop: Callable[[str], None], options: dict[str, Any] | None = None) -> None:
        self._attempt = None if isinstance(attempt, dict) else attempt
        self.record = attempt if isinstance(attempt, dict) else attempt.model_dump(mode="json")
        self.emit = emit
        self.request_stop = request_stop
        self.options = {} if options is None else options

    @property
    def attempt(self) -> Attempt:
        """The attempt as the event model, validated on first use (a plain command's watcher may never need pydantic)."""
        if self._attempt is None:
            from ..events import Attempt

            self._attempt = Attempt.model_validate(self.record)
        return self._attempt


class Watcher(Protocol):
    """Sees one attempt's output and decides its outcome."""

    def started(self, ctx: WatchContext) -> None:
        """The child is running; ``ctx.attempt`` has been written."""

    def feed(self, chunk: bytes, first_line: int) -> None:
        """Complete lines of redacted output; ``first_line`` is the 1-based number of the first."""

    def tick(self, now: float) -> None:
        """Called about twice a second from the recorder while the child runs."""

    def finished(self, exit_info: ExitInfo) -> WatchResult:
        """The child has ended (or logkit stopped it); say how the attempt ended."""


class Plan(Slotted):
    """What a planner decided for an argv before launch."""

    __slots__ = ("role", "argv", "launch", "bench", "watcher", "refuse", "notes")

    role: str
    argv: list[str] | None  # rewritten argv, or None to keep it
    launch: LaunchConfig | dict[str, Any] | None  # a plain dict from logkit.launch (no pydantic)
    bench: BenchConfig | None
    watcher: Watcher | None
    refuse: str | None  # set to refuse the launch: why, and the fix (preflight)
    notes: list[str]  # printed to stderr before launch (warnings, the config diff)

    _defaults = {"role": "command", "argv": None, "launch": None, "bench": None, "watcher": None, "refuse": None,
                 "notes": []}


class Planner(Protocol):
    """Looks at an argv and returns a plan, or None when it does not recognise the command."""

    def __call__(self, argv: list[str], env: dict[str, str], options: dict[str, Any]) -> Plan | None: ...
