"""The session store: ``<root>/<session-id>/events.jsonl`` plus ``<root>/<session-id>/logs/``.

Contract:

* ``events.jsonl`` is append-only, one JSON event per line. Writers take an exclusive ``flock`` on
  the file, make sure it ends in a newline (a writer killed mid-line leaves a torn line that must
  not swallow the next one), and write each line with a single ``write`` on an ``O_APPEND``
  descriptor. Outcome events are fsynced. So two logkit processes writing one session never
  interleave or tear each other's lines.
* Short ids (``A7``, ``H3``) are allocated under that lock; decision ids (``DR-0003``) under a lock
  on the whole store, by scanning every session.
* The reader never raises on a bad line: it validates each one and returns a :class:`Problem`
  naming ``file:line`` and the field, skipping the line. A torn last line is a problem too, and
  never loses the lines before it. ``strict=True`` turns problems into :class:`BadInput`.
* Opening a session for writing (:meth:`Store.open`) reconciles it: an attempt whose recording
  logkit is gone (SIGKILLed, machine rebooted) gets an ``abandoned`` outcome, with the pids of any
  of its process group still running, and says so on stderr (naming those pids), the one place
  the library prints: every command that opens a session must tell the user about a lost run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import procs
from .abandon import abandoned_outcome, recording_alive
from .errors import BadInput, NotFound, SchemaTooNew
from .events import (
    SCHEMA_VERSION,
    Attempt,
    BaseEvent,
    Outcome,
    Provenance,
    Session,
    fast_validate,
    parse_event,
)
from .lockfile import appending

__all__ = [
    "ENV_SESSIONS",
    "Problem",
    "ReadResult",
    "SessionHandle",
    "Store",
    "Txn",
    "slugify",
]

ENV_SESSIONS = "LOGKIT_SESSIONS"
EVENTS_FILE = "events.jsonl"
LOGS_DIR = "logs"
CURRENT_FILE = ".current"
STORE_LOCK = ".store.lock"

_SHORT_ID_RE = {
    "A": re.compile(rb'"short_id":\s*"A([0-9]+)"'),
    "H": re.compile(rb'"short_id":\s*"H([0-9]+)"'),
}
_DECISION_RE = re.compile(rb'"decision_id":\s*"DR-([0-9]+)"')
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def slugify(text: str, limit: int = 40) -> str:
    """A lowercase, hyphenated, filesystem-safe form of ``text``."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "session"


@dataclass(frozen=True)
class Problem:
    """A line of a session file that could not be used."""

    path: Path
    line: int
    message: str
    field: str | None = None
    torn: bool = False

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        what = f" field '{self.field}':" if self.field else ""
        return f"{where}:{what} {self.message}"


@dataclass
class ReadResult:
    """The events of one session that validated, and the problems of those that did not."""

    path: Path
    events: list[BaseEvent] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _dump(event: BaseEvent, scrub: Callable[[Any], Any] | None = None) -> bytes:
    data = event.model_dump(mode="json", exclude_none=True)
    if scrub is not None:
        data = scrub(data)
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _problem_from_validation(path: Path, line: int, err: ValidationError) -> Problem:
    first = err.errors()[0]
    loc = ".".join(str(part) for part in first.get("loc", ()))
    # The discriminated union puts the kind name first in the location: keep it, it helps.
    message = first.get("msg", "invalid")
    if first.get("type") == "union_tag_invalid":
        message += " (known kinds: see 'logkit schema --list')"
    elif first.get("type") == "extra_forbidden":
        message = "unknown field (written by a newer logkit, or a typo in a hand edit)"
    return Problem(path, line, message + "; fix or delete that line", field=loc or None)


_CURRENT_PREFIX = b'{"v":%d,' % SCHEMA_VERSION


def read_events(path: Path) -> ReadResult:
    """Read and validate every line of one ``events.jsonl``; never raises for bad content."""
    result = ReadResult(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        result.problems.append(Problem(path, 0, "file is missing"))
        return result
    except OSError as exc:
        result.problems.append(Problem(path, 0, f"cannot read: {exc.strerror}"))
        return result
    lines = raw.split(b"\n")
    ends_clean = raw.endswith(b"\n") or not raw
    if ends_clean:
        lines = lines[:-1]
    last = len(lines)
    seen: dict[str, int] = {}
    for number, chunk in enumerate(lines, start=1):
        if not chunk.strip():
            continue
        torn = number == last and not ends_clean
        if chunk.startswith(_CURRENT_PREFIX):
            # The common case, a line this logkit wrote: pydantic parses the JSON itself (twice as
            # fast). Anything it refuses takes the slow path below, which names the problem.
            try:
                event = fast_validate(chunk)
            except ValueError:
                pass
            else:
                clash = _clash(event, number, seen)
                if clash:
                    result.problems.append(Problem(path, number, clash + "; skipped (fix or delete that line)"))
                else:
                    result.events.append(event)
                continue
        try:
            data = json.loads(chunk)
        except (UnicodeDecodeError, ValueError) as exc:
            if torn:
                result.problems.append(
                    Problem(path, number, "torn last line (logkit was killed while writing it); skipped", torn=True)
                )
            else:
                result.problems.append(Problem(path, number, f"not valid JSON ({exc}); fix or delete that line"))
            continue
        if not isinstance(data, dict):
            result.problems.append(Problem(path, number, "an event must be a JSON object; fix or delete that line"))
            continue
        try:
            event = parse_event(data)
            clash = _clash(event, number, seen)
            if clash:
                result.problems.append(Problem(path, number, clash + "; skipped (fix or delete that line)"))
            else:
                result.events.append(event)
        except SchemaTooNew as exc:
            result.problems.append(Problem(path, number, f"{exc.message}; {exc.fix}", field="v"))
        except ValidationError as exc:
            result.problems.append(_problem_from_validation(path, number, exc))
        except ValueError as exc:
            result.problems.append(Problem(path, number, str(exc), field="v"))
    return result


def _clash(event: BaseEvent, number: int, seen: dict[str, int]) -> str | None:
    """Why ``event`` (on line ``number``) cannot join the events before it (a hand edit, a bad merge).

    ``seen`` maps the event ids and ``A7``/``H3`` short ids read so far to their lines; an event
    that joins is added to it.
    """
    fields = event.__dict__  # not getattr: pydantic's __getattr__ is slow for absent fields
    short = fields.get("short_id")
    if event.id in seen:
        return f"event id {event.id} repeats line {seen[event.id]}"
    if short is not None and short in seen:
        return f"{short} is already taken by line {seen[short]}"
    ref = fields.get("attempt") if event.kind != "verdict" else fields.get("hypothesis")
    if event.kind in ("outcome", "environment", "launch_config", "verdict") and isinstance(ref, str) and ref not in seen:
        return f"{event.kind} of {ref}, which no earlier line records"
    seen[event.id] = number
    if short is not None:
        seen[short] = number
    return None


class Txn:
    """What a writer may do while it holds a session's lock."""

    def __init__(self, handle: SessionHandle, fd: int) -> None:
        self.handle = handle
        self._fd = fd
        self._raw: bytes | None = None

    def raw(self) -> bytes:
        """The file's bytes as they are under the lock."""
        if self._raw is None:
            self._raw = self.handle.events_path.read_bytes()
        return self._raw

    def next_short_id(self, prefix: str) -> str:
        """The next free ``A<n>`` or ``H<n>`` of this session."""
        numbers = [int(m) for m in _SHORT_ID_RE[prefix].findall(self.raw())]
        return f"{prefix}{max(numbers, default=0) + 1}"

    def append(self, event: BaseEvent, *, durable: bool = False) -> None:
        """Append one event as one whole line."""
        data = _dump(event, self.handle.store.scrub)
        os.write(self._fd, data)
        if self._raw is not None:
            self._raw += data
        if durable:
            os.fsync(self._fd)


class SessionHandle:
    """One session directory."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.id = session_id
        self.dir = store.root / session_id
        self.events_path = self.dir / EVENTS_FILE
        self.logs_dir = self.dir / LOGS_DIR

    def __repr__(self) -> str:
        return f"SessionHandle({self.id!r})"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Txn]:
        """Hold the session's write lock; appends inside are atomic whole lines."""
        fix = f"check that {self.dir} exists and is writable, or set {ENV_SESSIONS}"
        with appending(self.events_path, fix=fix) as fd:
            yield Txn(self, fd)

    def append(self, event: BaseEvent, *, durable: bool = False) -> BaseEvent:
        """Append one ready-made event."""
        with self.transaction() as txn:
            txn.append(event, durable=durable)
        return event

    def append_new(self, build: Callable[[Txn], BaseEvent], *, durable: bool = False) -> BaseEvent:
        """Build an event under the lock (to allocate its short id) and append it."""
        with self.transaction() as txn:
            event = build(txn)
            txn.append(event, durable=durable)
        return event

    def read(self, *, strict: bool = False) -> ReadResult:
        """All events of the session; with ``strict`` a bad line raises :class:`BadInput`."""
        result = read_events(self.events_path)
        if strict and result.problems:
            raise BadInput(
                "\n".join(str(p) for p in result.problems),
                fix="fix or delete the lines named above (or rerun without --strict)",
            )
        return result

    def meta(self) -> Session | None:
        """The session event (the first ``session`` line), if readable."""
        for event in self.read().events:
            if isinstance(event, Session):
                return event
        return None

    def log_path(self, name: str) -> Path:
        """An absolute path for a log of this session (creating ``logs/``)."""
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        return self.logs_dir / name

    def relative(self, path: Path) -> str:
        """``path`` relative to the session directory, as stored in events."""
        return str(Path(path).resolve().relative_to(self.dir.resolve()))

    # -- reconciliation ------------------------------------------------------------------------

    def open_attempts(self, events: list[BaseEvent] | None = None) -> list[Attempt]:
        """Attempts that have no outcome yet."""
        events = self.read().events if events is None else events
        ended = {e.attempt for e in events if isinstance(e, Outcome)}
        return [e for e in events if isinstance(e, Attempt) and e.short_id not in ended]

    def reconcile(self) -> list[Outcome]:
        """Mark attempts whose recorder died as ``abandoned``; returns the outcomes written."""
        written: list[Outcome] = []
        candidates = self.open_attempts()
        if not candidates:
            return written
        host = procs.hostname()
        with self.transaction() as txn:
            # Re-read under the lock: another logkit may have just finished one of them.
            ended = {
                e.attempt
                for e in read_events(self.events_path).events
                if isinstance(e, Outcome)
            }
            for attempt in candidates:
                if attempt.short_id in ended:
                    continue
                if attempt.recorder_host not in (None, host):
                    continue  # recorded on another machine: cannot tell from here
                if attempt.recorder_pid and recording_alive(attempt.recorder_pid):
                    continue  # still being recorded
                outcome = abandoned_outcome(self.id, self.dir, attempt)
                txn.append(outcome, durable=True)
                written.append(outcome)
        for outcome in written:  # the user must hear of a group left running (GPU memory held)
            attempt = next(a for a in candidates if a.short_id == outcome.attempt)
            kill = f" (kill -9 -{attempt.pgid})" if outcome.survivors else ""
            print(f"logkit: warning: {self.id}/{outcome.attempt} marked abandoned: {outcome.label}{kill}",
                  file=sys.stderr)
        return written


class Store:
    """The sessions directory (``$LOGKIT_SESSIONS``, default ``./sessions``)."""

    def __init__(self, root: Path | str, *, scrub: Callable[[Any], Any] | None = None) -> None:
        self.root = Path(root)
        #: Applied to every event dict before it is written (the CLI plugs in the secret redactor,
        #: so a token typed into ``logkit hypothesis add`` never reaches disk either).
        self.scrub = scrub

    @classmethod
    def from_env(cls, override: str | None = None, *, scrub: Callable[[Any], Any] | None = None) -> Store:
        """The store named by ``override``, else ``$LOGKIT_SESSIONS``, else ``./sessions``."""
        return cls(override or os.environ.get(ENV_SESSIONS) or "sessions", scrub=scrub)

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def session_ids(self) -> list[str]:
        """Every session directory that holds an events file, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.parent.name for p in self.root.glob(f"*/{EVENTS_FILE}"))

    def handle(self, session_id: str) -> SessionHandle:
        """A handle without reconciliation (for readers)."""
        if not _SESSION_ID_RE.match(session_id):
            raise BadInput(
                f"{session_id!r} is not a valid session id",
                fix="use letters, digits, '.', '_' and '-' (see 'logkit session list')",
            )
        handle = SessionHandle(self, session_id)
        if not handle.events_path.exists():
            known = ", ".join(self.session_ids()[-5:]) or "none yet"
            raise NotFound(
                f"no session {session_id!r} in {self.root}",
                fix=f"pick one of: {known} (or 'logkit session start TITLE'; the store is ${ENV_SESSIONS})",
            )
        return handle

    def open(self, session_id: str | None = None) -> SessionHandle:
        """A session for writing: the named one or the current one, reconciled."""
        handle = self.handle(session_id or self.current_or_fail())
        handle.reconcile()
        return handle

    def create(
        self,
        title: str,
        *,
        goal: str | None = None,
        tags: list[str] | None = None,
        session_id: str | None = None,
        when: datetime | None = None,
        provenance: Provenance | None = None,
        make_current: bool = True,
    ) -> SessionHandle:
        """Start a new session ``YYYY-MM-DD-<slug>`` and (by default) make it current."""
        from . import __version__

        if not title.strip():
            raise BadInput("a session needs a title", fix='logkit session start "GLM-5 NVFP4 on 8x RTX PRO 6000"')
        when = when or datetime.now(UTC)
        # the id names a directory, URLs and pages: made from the title as it is stored (redacted)
        shown = self.scrub(title) if self.scrub is not None else title
        base = session_id or f"{when:%Y-%m-%d}-{slugify(shown)}"
        if not _SESSION_ID_RE.match(base):
            raise BadInput(f"{base!r} is not a valid session id", fix="use letters, digits, '.', '_' and '-'")
        self.root.mkdir(parents=True, exist_ok=True)
        candidate, n = base, 1
        while True:
            try:
                (self.root / candidate).mkdir()
                break
            except FileExistsError:
                if session_id:
                    raise BadInput(f"session {candidate!r} exists already", fix="choose another --id") from None
                n += 1
                candidate = f"{base}-{n}"
        handle = SessionHandle(self, candidate)
        handle.logs_dir.mkdir()
        handle.append(
            Session(
                session=candidate,
                ts=when,
                title=title,
                goal=goal,
                tags=list(tags or []),
                # a session rebuilt from a written account did not run here: its host is unknown
                host=None if provenance is not None and provenance.source == "reconstructed" else procs.hostname(),
                logkit_version=__version__,
                provenance=provenance,
            ),
            durable=True,
        )
        if make_current:
            self.set_current(candidate)
        return handle

    # -- the current-session pointer -----------------------------------------------------------

    def current(self) -> str | None:
        """The current session id, if one is set and still exists."""
        try:
            value = (self.root / CURRENT_FILE).read_text().strip()
        except OSError:
            return None
        if value and (self.root / value / EVENTS_FILE).exists():
            return value
        return None

    def current_or_fail(self) -> str:
        """The current session id, or a clear error saying how to get one."""
        value = self.current()
        if value is None:
            raise NotFound(
                f"no current session in {self.root}",
                fix='start one with: logkit session start "TITLE" (or pass --session ID)',
            )
        return value

    def set_current(self, session_id: str) -> None:
        """Point the current-session pointer at ``session_id``."""
        self.handle(session_id)
        tmp = self.root / f"{CURRENT_FILE}.{os.getpid()}"
        tmp.write_text(session_id + "\n")
        os.replace(tmp, self.root / CURRENT_FILE)

    # -- knowledge-base-wide ids ---------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock over the whole store (for ids unique across sessions)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / STORE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def decision_numbers(self) -> list[int]:
        """Every ``DR-<n>`` number used anywhere in the store."""
        numbers: list[int] = []
        for sid in self.session_ids():
            try:
                raw = (self.root / sid / EVENTS_FILE).read_bytes()
            except OSError:
                continue
            numbers.extend(int(m) for m in _DECISION_RE.findall(raw))
        return numbers

    def next_decision_id(self) -> str:
        """The next free decision id; call it inside :meth:`locked`."""
        return f"DR-{max(self.decision_numbers(), default=0) + 1:04d}"

    def read_all(self) -> dict[str, ReadResult]:
        """Every session's events and problems, by session id.

        Also names each decision that supersedes an id no session records (the decision is kept).
        """
        results = {sid: read_events(self.root / sid / EVENTS_FILE) for sid in self.session_ids()}
        known = {getattr(e, "decision_id", None) for r in results.values() for e in r.events}
        for result in results.values():
            for event in result.events:
                target = getattr(event, "supersedes", None)
                if event.kind == "decision" and target and target not in known:
                    raw = result.path.read_bytes().split(b"\n")
                    line = next((i for i, chunk in enumerate(raw, 1) if event.id.encode() in chunk), 0)
                    result.problems.append(Problem(
                        result.path, line, f"{event.decision_id} supersedes {target}, which no session records; "
                        "the decision is kept without that link (fix its 'supersedes', or restore the session "
                        f"that recorded {target})", field="supersedes"))
        return results


def dump_event(event: BaseEvent) -> dict[str, Any]:
    """The JSON-ready dict of an event, as written to disk."""
    return event.model_dump(mode="json", exclude_none=True)
