"""The session store: ``<root>/<session-id>/events.jsonl`` plus ``<root>/<session-id>/logs/``.

Contract:

* ``events.jsonl`` is append-only, one JSON event per line, written under
  :func:`logkit.store.lockfile.appending` (two writers never interleave or tear each other's
  lines). Outcome events are fsynced.
* Short ids (``A7``, ``H3``) are allocated under that lock; decision ids are permanent, drawn from
  the decision's own random id and checked unique under a lock on the whole store
  (:mod:`logkit.reasoning.decisions`).
* Reading is :mod:`logkit.store.reader`'s (it never raises on a bad line: each becomes a
  :class:`~logkit.store.reader.Problem` naming ``file:line``); :meth:`SessionHandle.read` with
  ``strict=True`` turns problems into :class:`BadInput`.
* Opening a session for writing (:meth:`Store.open`) reconciles it: an attempt whose recording
  logkit is gone (SIGKILLed, machine rebooted) gets an ``abandoned`` outcome, with the pids of any
  of its process group still running, and says so on stderr (naming those pids), the one place
  the library prints: every command that opens a session must tell the user about a lost run.
  The rule is :func:`logkit.store.reconcile.reconcile`'s (``logkit run``'s journal calls it too).
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import procs
from . import files, shared
from ..errors import BadInput, NotFound, StoreError
from ..events import BaseEvent, Outcome, Provenance, Session
from .files import ENV_SESSIONS, EVENTS_FILE, LOGS_DIR
from .lockfile import appending
from .reader import ReadResult, cross_check, read_events
from .reconcile import reconcile

__all__ = [
    "ENV_SESSIONS",
    "SessionHandle",
    "Store",
    "Txn",
    "slugify",
]


def slugify(text: str, limit: int = 40) -> str:
    """A lowercase, hyphenated, filesystem-safe form of ``text``, cut at a word boundary."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(slug) > limit:
        cut = slug[: limit + 1]
        slug = cut.rsplit("-", 1)[0] if "-" in cut else slug[:limit]
    return slug.rstrip("-") or "session"


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
        return f"{prefix}{max(files.short_numbers(self.raw(), prefix), default=0) + 1}"

    def append(self, event: BaseEvent, *, durable: bool = False) -> None:
        """Append one event as one whole line (or nothing, and :class:`StoreError`)."""
        data = event.model_dump(mode="json", exclude_none=True)
        scrub = self.handle.store.scrub
        data = files.json_line(scrub(data) if scrub is not None else data)
        files.write_line(self._fd, data, path=self.handle.events_path, durable=durable)
        if self._raw is not None:
            self._raw += data


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

    def reconcile(self) -> list[Outcome]:
        """Mark attempts whose recorder died as ``abandoned`` (:func:`logkit.store.reconcile.reconcile`)."""
        return reconcile(self.dir, self.id, self._open_attempts, scrub=self.store.scrub)

    def _open_attempts(self) -> dict[str, dict[str, Any]]:
        """Short id -> attempt dict, for the attempts no outcome line names (read without validation)."""
        found = files.dicts(self.events_path, keep=lambda line: b'"attempt' in line)
        return {str(a.get("short_id")): a for a in files.open_attempts(found)}


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
        return cls(files.root(override), scrub=scrub)

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def session_ids(self) -> list[str]:
        """Every session directory that holds an events file, sorted."""
        return files.session_ids(self.root)

    def handle(self, session_id: str) -> SessionHandle:
        """A handle without reconciliation (for readers)."""
        files.check_session_id(session_id)
        handle = SessionHandle(self, session_id)
        files.check_regular(handle.events_path)
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
        """Start a session ``YYYY-MM-DD-<slug>-<host tag>`` (hosts never clash) and by default make it current."""
        if not title.strip():
            raise BadInput("a session needs a title", fix='logkit session start "GLM-5 NVFP4 on 8x RTX PRO 6000"')
        when = when or datetime.now(UTC)
        # the id names a directory, URLs and pages: made from the title as it is stored (redacted)
        shown = self.scrub(title) if self.scrub is not None else title
        base = session_id or f"{when:%Y-%m-%d}-{slugify(shown)}-{shared.host_tag()}"
        files.check_session_id(base, fix="use letters, digits, '.', '_' and '-'")
        fix = f"check that {self.root} is a writable directory with free space (or set ${ENV_SESSIONS})"
        candidate, n = base, 1
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            shared.ensure_repo_files(self.root)
            while True:
                try:
                    (self.root / candidate).mkdir()
                    break
                except FileExistsError:
                    if session_id:
                        raise BadInput(f"session {candidate!r} exists already", fix="choose another --id") from None
                    n += 1
                    candidate = f"{base}-{n}"
        except OSError as exc:
            raise StoreError(f"cannot create a session in {self.root}: {exc.strerror}", fix=fix) from exc
        handle = SessionHandle(self, candidate)
        try:
            handle.logs_dir.mkdir()
            handle.append(self._session_event(candidate, title, goal, tags, when, provenance), durable=True)
        except (OSError, StoreError) as exc:  # a full disk: leave no empty session behind
            shutil.rmtree(handle.dir, ignore_errors=True)
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot create {handle.dir}: {exc.strerror}", fix=fix) from exc
        if make_current:
            self.set_current(candidate)
        return handle

    @staticmethod
    def _session_event(candidate: str, title: str, goal: str | None, tags: list[str] | None, when: datetime,
                       provenance: Provenance | None) -> Session:
        from .. import __version__

        return Session(
            session=candidate,
            ts=when,
            title=title,
            goal=goal,
            tags=list(tags or []),
            # a session rebuilt from a written account did not run here: its host is unknown
            host=None if provenance is not None and provenance.source == "reconstructed" else procs.hostname(),
            logkit_version=__version__,
            provenance=provenance,
        )

    # -- the current-session pointer -----------------------------------------------------------

    def current(self) -> str | None:
        """The current session id, if one is set and still exists."""
        return files.current(self.root)

    def current_or_fail(self) -> str:
        """The current session id, or a clear error saying how to get one."""
        value = self.current()
        if value is None:
            raise files.no_current(self.root)
        return value

    def set_current(self, session_id: str) -> None:
        """Point the current-session pointer at ``session_id``."""
        self.handle(session_id)
        files.set_current(self.root, session_id)

    # -- knowledge-base-wide ids ---------------------------------------------------------------

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """An exclusive lock over the whole store (for ids unique across sessions)."""
        return files.store_lock(self.root)

    def read_all(self) -> dict[str, ReadResult]:
        """Every session's events and problems by id, with the references across sessions checked."""
        results = {sid: read_events(self.root / sid / EVENTS_FILE) for sid in self.session_ids()}
        return cross_check(results)
