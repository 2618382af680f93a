"""A session's ``events.jsonl`` for ``logkit run``, without pydantic (the run path must start fast).

Contract:

* Everything about the files (where the store and the current session are, ids, whole-line locked
  appends, reading lines with ``upgrade()`` applied, who counts as abandoned) is
  :mod:`logkit.files`, the layer the typed :mod:`logkit.store` uses too; so this writer and
  :class:`logkit.store.SessionHandle` writers can share a session.
* Events are plain dicts built by :func:`logkit.files.event` (checked against the models by
  ``tests/test_files.py``; ``tests/test_run_*`` validate everything ``logkit run`` writes).
* :meth:`Journal.open` reconciles cheaply: it scans the lines with ``json`` and hands over to the
  full :meth:`logkit.store.SessionHandle.reconcile` (pydantic) only when an open attempt's
  recorder is gone. A damaged line never stops it (the command must run); it is skipped.
* Room for the outcome: :meth:`append_attempt` sets aside :data:`RESERVE_BYTES` next to the log
  (``logs/.A7.reserve``) and :meth:`append_outcome` frees it before writing, so a log that fills
  the disk still ends in a whole outcome line. Should even that not fit, a shortened outcome (no
  tail, evidence or timeline) is tried, and failing that nothing is written (never a torn line).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import files, procs
from ..errors import NotFound, StoreError
from ..lockfile import appending

__all__ = ["Journal", "RESERVE_BYTES"]

#: Disk space kept free for an attempt's outcome line while its log is written.
RESERVE_BYTES = 256 * 1024


class Journal:
    """One session directory, for the recorder."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.root = root
        self.id = session_id
        self.dir = root / session_id
        self.events_path = self.dir / files.EVENTS_FILE
        self.logs_dir = self.dir / files.LOGS_DIR

    @classmethod
    def open(cls, sessions: str | None, session_id: str | None) -> Journal:
        """The named or current session of the store, reconciled; clear errors otherwise."""
        root = files.root(sessions)
        if session_id is None:
            session_id = files.current(root)
            if session_id is None:
                raise NotFound(
                    f"no current session in {root}",
                    fix='start one with: logkit session start "TITLE" (or pass --session ID)',
                )
        files.check_session_id(session_id, fix="see 'logkit session list'")
        journal = cls(root, session_id)
        if not journal.events_path.exists():
            raise NotFound(f"no session {session_id!r} in {root}", fix="see 'logkit session list' (the store is $LOGKIT_SESSIONS)")
        try:
            journal.reconcile()
        except Exception as exc:  # noqa: BLE001 - a damaged store must never stop a launch
            print(f"logkit: warning: could not check {session_id} for abandoned attempts "
                  f"({type(exc).__name__}: {exc}); recording anyway", file=sys.stderr)
        return journal

    def lines(self) -> list[dict[str, Any]]:
        """Every usable line as an event dict at the current schema (no validation)."""
        return files.dicts(self.events_path)

    def hypothesis_ids(self) -> list[str]:
        """The session's hypothesis short ids (``H3``), read without validation."""
        return [str(e.get("short_id")) for e in self.lines() if e.get("kind") == "hypothesis"]

    def reconcile(self) -> None:
        """Mark attempts whose recorder died as abandoned (delegating to the store when needed)."""
        host = procs.hostname()
        for attempt in files.open_attempts(self.lines()):
            if files.orphaned(attempt.get("recorder_pid"), attempt.get("recorder_host"), host):
                from ..store import Store  # the rare path: full models
                from .redact import Redactor  # survivors' command lines may hold --api-key values

                Store(self.root, scrub=Redactor().scrub).handle(self.id).reconcile()
                return

    @contextlib.contextmanager
    def transaction(self) -> Iterator[int]:
        """The session's write lock; yields the O_APPEND descriptor."""
        with appending(self.events_path, fix=f"check that {self.dir} is writable") as fd:
            yield fd

    @staticmethod
    def _line(event: dict[str, Any]) -> bytes:
        return (json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()

    def append(self, event: dict[str, Any], *, durable: bool = False) -> None:
        """Append one event as one whole line (or nothing, and :class:`StoreError`)."""
        with self.transaction() as fd:
            files.write_line(fd, self._line(event), path=self.events_path, durable=durable)

    def append_attempt(self, event: dict[str, Any]) -> dict[str, Any]:
        """Allocate the next ``A<n>`` under the lock, set it (and the log path), append, reserve room."""
        with self.transaction() as fd:
            number = max(files.short_numbers(self.events_path.read_bytes(), "A"), default=0) + 1
            event["short_id"] = f"A{number}"
            event["log"] = {"path": f"{files.LOGS_DIR}/A{number}.log"}
            files.write_line(fd, self._line(event), path=self.events_path)
        self._reserve(event["short_id"])
        return event

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
        """Free the attempt's reserve and append its outcome, fsynced; shortened if it must be.

        Returns the outcome as written; raises :class:`StoreError` when not even the short form fits.
        """
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

    def last_launch(self) -> dict[str, Any] | None:
        """The session's last launch attempt (with its environment event merged), if any."""
        lines = self.lines()
        launches = [e for e in lines if e.get("kind") == "attempt" and e.get("role") == "launch"]
        if not launches:
            return None
        last = dict(launches[-1])
        for event in lines:
            if event.get("kind") == "environment" and event.get("attempt") == last.get("short_id"):
                last["environment"] = event.get("environment")
        return last
