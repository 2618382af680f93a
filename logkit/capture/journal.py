"""A session's ``events.jsonl`` for ``logkit run``, without pydantic (the run path must start fast).

Contract:

* The files (store, current session, ids, whole-line locked appends, upgrades) are
  :mod:`logkit.store.files`, the layer :mod:`logkit.store` uses too: both writers can share a session.
  Events are plain dicts built by :func:`logkit.store.files.event`.
* Bounded before the spawn, whatever the session's size: what the run needs is a
  :class:`~logkit.capture.sessionview.SessionView`; :meth:`Journal.refresh_index` brings the index up
  to date in a thread once the child runs (a failure falls back to reading the file).
* Ids are allocated by :meth:`Journal.append_attempt` under the session lock, from the view caught up
  (a damaged line still claims its id), past any ``logs/A<n>.log`` there (created ``O_EXCL``).
* :meth:`Journal.open` gives the open attempts whose recorder is gone an ``abandoned`` outcome
  (:func:`logkit.store.reconcile.reconcile`); a damaged line never stops it.
* Room for the outcome: :meth:`append_attempt` sets aside :data:`RESERVE_BYTES` (``logs/.A7.reserve``),
  freed before the outcome is written; failing that a shortened outcome is tried (never a torn line).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from ..store import files
from ..errors import NotFound, StoreError
from ..store.lockfile import appending
from ..store.reconcile import reconcile
from .sessionview import SCAN_LIMIT, SessionView, refresh

__all__ = ["Journal", "REFRESH_BYTES", "REFRESH_DELAY_S", "RESERVE_BYTES"]

#: Disk space kept free for an attempt's outcome line while its log is written.
RESERVE_BYTES = 256 * 1024
#: A run refreshes the index (after the spawn) when it lacks more than this many bytes of the session.
REFRESH_BYTES = 256 * 1024
#: How long after the spawn that refresh begins (a launch's own start-up first).
REFRESH_DELAY_S = 1.0


class Journal:
    """One session directory, for the recorder."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.root = root
        self.id = session_id
        self.dir = root / session_id
        self.events_path = self.dir / files.EVENTS_FILE
        self.logs_dir = self.dir / files.LOGS_DIR
        self._refresher: tuple[threading.Thread, threading.Event, threading.Event, bool] | None = None

    @cached_property
    def view(self) -> SessionView:
        """What the run knows of the session (read the first time it is asked for)."""
        return SessionView.load(self.root, self.id, self.events_path)

    def refresh_index(self, *, launch: bool = False) -> None:
        """Refresh the index in a thread when it lacks more than :data:`REFRESH_BYTES` (anything, for a launch)."""
        view = self.view
        if self._refresher is not None or view.size <= SCAN_LIMIT or not view.behind:
            return
        needed = view.behind > REFRESH_BYTES
        if not (needed or launch):
            return
        go, skip = threading.Event(), threading.Event()

        def work() -> None:
            go.wait(REFRESH_DELAY_S)
            if not skip.is_set():
                refresh(self.root, self.id)

        self._refresher = (threading.Thread(target=work, daemon=True, name="logkit-index-refresh"), go, skip, needed)
        self._refresher[0].start()

    def close(self) -> None:
        """End the index refresh: done now if needed, else dropped if not begun; waited for (Ctrl-C stops waiting)."""
        if self._refresher is not None:
            thread, go, skip, needed = self._refresher
            if not needed:
                skip.set()
            go.set()
            with contextlib.suppress(KeyboardInterrupt):
                thread.join()

    @classmethod
    def open(cls, sessions: str | None, session_id: str | None) -> Journal:
        """The named or current session of the store, reconciled; clear errors otherwise."""
        root = files.root(sessions)
        if session_id is None:
            session_id = files.current(root)
            if session_id is None:
                raise files.no_current(root)
        files.check_session_id(session_id, fix="see 'logkit session list'")
        journal = cls(root, session_id)
        files.check_regular(journal.events_path)
        if not journal.events_path.exists():
            raise NotFound(f"no session {session_id!r} in {root}", fix="see 'logkit session list' (the store is $LOGKIT_SESSIONS)")
        journal.reconcile("; recording anyway")
        return journal

    def current(self) -> SessionView:
        """The view, caught up with every line appended so far (hypothesis ids, open attempts, last launch)."""
        self.view.catch_up()
        return self.view

    def reconcile(self, then: str = "") -> None:
        """Mark attempts whose recorder died as abandoned (:func:`logkit.store.reconcile.reconcile`); never raises."""
        reconcile(self.dir, self.id, lambda: self.current().open, scrub=_scrub, then=then)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[int]:
        """The session's write lock; yields the O_APPEND descriptor."""
        with appending(self.events_path, fix=f"check that {self.dir} is writable") as fd:
            yield fd

    def append(self, event: dict[str, Any], *, durable: bool = False) -> None:
        """Append one event as one whole line (or nothing, and :class:`StoreError`)."""
        with self.transaction() as fd:
            files.write_line(fd, files.json_line(event), path=self.events_path, durable=durable)

    def append_attempt(self, event: dict[str, Any]) -> dict[str, Any]:
        """Allocate the next ``A<n>`` under the lock, set it (and the log path), append, reserve room."""
        with self.transaction() as fd:
            view = self.view
            view.catch_up()  # under the lock: every line appended before this one
            number = view.max_a + 1
            while not self._create_log(f"{files.LOGS_DIR}/A{number}.log"):
                number += 1  # a log without its line (a recorder killed in between): never wiped, never reused
            event["short_id"] = f"A{number}"
            event["log"] = {"path": f"{files.LOGS_DIR}/A{number}.log"}
            files.write_line(fd, files.json_line(event), path=self.events_path)
            view.catch_up()
        self._reserve(event["short_id"])
        return event

    def _create_log(self, rel: str) -> bool:
        """Create the attempt's empty log before its line; False when it exists (a full disk: the recorder reports it)."""
        try:
            self.logs_dir.mkdir(exist_ok=True)
            os.close(os.open(self.dir / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return False
        except OSError:
            pass
        return True

    def _reserve(self, short_id: str) -> None:
        path = files.reserve_path(self.dir, short_id)
        try:
            self.logs_dir.mkdir(exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            return  # no room even for that: the outcome takes its chances
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(path)
        finally:
            os.close(fd)

    def append_outcome(self, outcome: dict[str, Any]) -> dict[str, Any]:
        """Free the attempt's reserve, append its outcome (fsynced; shortened if it must be, else :class:`StoreError`)."""
        with contextlib.suppress(OSError):
            files.reserve_path(self.dir, str(outcome.get("attempt"))).unlink()
        try:
            self.append(outcome, durable=True)
            return outcome
        except StoreError as exc:
            short = {k: v for k, v in outcome.items() if k not in ("tail", "evidence", "timeline", "survivors")}
            why = f"outcome shortened (no tail, evidence, timeline or survivors): {exc.message}"
            short["capture_truncated"] = "; ".join(filter(None, [outcome.get("capture_truncated"), why]))
            self.append(short, durable=True)
            return short


def _scrub(data: Any) -> Any:
    """The secret redactor (survivors' command lines may hold ``--api-key`` values), loaded on first use."""
    from .redact import Redactor

    return Redactor().scrub(data)
