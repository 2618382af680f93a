"""A session's ``events.jsonl`` for ``logkit run``, without pydantic (the run path must start fast).

Contract:

* Everything about the files (where the store and the current session are, ids, whole-line locked
  appends, reading lines with ``upgrade()`` applied, who counts as abandoned) is
  :mod:`logkit.files`, the layer the typed :mod:`logkit.store` uses too; so this writer and
  :class:`logkit.store.SessionHandle` writers can share a session.
* Events are plain dicts built by :func:`logkit.files.event` (checked against the models by
  ``tests/test_files.py``; ``tests/test_run_*`` validate everything ``logkit run`` writes).
* Bounded before the spawn, whatever the session's size: what the run needs (open attempts, the
  last launch, hypothesis ids, the next ``A<n>``) comes from the session's
  :class:`~logkit.capture.runindex.RunIndex`, which reads only what was appended since the last
  run (a big session without an index: only its end, and the whole file once the child runs).
* :meth:`Journal.open` reconciles cheaply: the open attempts of the index whose recorder is gone
  get an ``abandoned`` outcome (:func:`logkit.abandon.abandoned_outcome`; pydantic is imported on
  that rare path only, for those attempts only), decided again under the session lock. A damaged
  line never stops it (the command must run); it is skipped.
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
from .runindex import RunIndex

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
        self._index: RunIndex | None = None

    @property
    def index(self) -> RunIndex:
        """The session's run index, brought up to date (from the file's end only, for a big file
        without one) the first time it is asked for."""
        if self._index is None:
            self._index = RunIndex.load(self.events_path, self.root, self.id, partial=True)
        return self._index

    def complete_index(self) -> RunIndex:
        """The index of the whole file (read in full, in chunks, if only its end was), saved."""
        self.index.complete()
        return self.index

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
            journal._reconcile()
        except Exception as exc:  # noqa: BLE001 - a damaged store must never stop a launch
            print(f"logkit: warning: could not check {session_id} for abandoned attempts "
                  f"({type(exc).__name__}: {exc}); recording anyway", file=sys.stderr)
        return journal

    def lines(self) -> list[dict[str, Any]]:
        """Every usable line as an event dict at the current schema (no validation; reads the whole file)."""
        return files.dicts(self.events_path)

    def hypothesis_ids(self) -> list[str]:
        """The session's hypothesis short ids (``H3``), read without validation."""
        return list(self.complete_index().hyps)

    def reconcile(self, *, complete: bool = False) -> None:
        """Mark attempts whose recorder died as abandoned (with ``complete``, those anywhere in a big
        session without an index too: it is then indexed in full); never raises."""
        try:
            if complete:
                self.complete_index()
            self._reconcile()
        except Exception as exc:  # noqa: BLE001 - a damaged store must never stop a command
            print(f"logkit: warning: could not check {self.id} for abandoned attempts "
                  f"({type(exc).__name__}: {exc})", file=sys.stderr)

    def _reconcile(self) -> None:
        host = procs.hostname()
        gone = [a for a in self.index.open_attempts()
                if files.orphaned(a.get("recorder_pid"), a.get("recorder_host"), host)]
        if gone:
            self._abandon(gone, host)
        self.index.save()

    def _abandon(self, candidates: list[dict[str, Any]], host: str) -> None:
        """Write the ``abandoned`` outcome of each candidate still open and orphaned under the lock."""
        from pydantic import ValidationError  # the rare path: the models, for these attempts only

        from ..abandon import abandoned_outcome
        from ..events import Attempt
        from .redact import Redactor  # survivors' command lines may hold --api-key values

        scrub = Redactor().scrub
        written = []
        try:
            with self.transaction() as fd:
                self.index.update()  # under the lock: an outcome written meanwhile closes its attempt
                for data in candidates:
                    short = data.get("short_id")
                    if short not in self.index.open or not files.orphaned(data.get("recorder_pid"),
                                                                          data.get("recorder_host"), host):
                        continue  # finished meanwhile, or still being recorded
                    try:
                        attempt = Attempt.model_validate(data)
                    except (ValidationError, ValueError, RecursionError, OverflowError):
                        self.index.open.pop(str(short), None)  # the typed reader skips that line too
                        continue
                    outcome = abandoned_outcome(self.id, self.dir, attempt)
                    line = scrub(outcome.model_dump(mode="json", exclude_none=True))
                    files.write_line(fd, self._line(line), path=self.events_path, durable=True)
                    written.append((attempt, outcome))
                    with contextlib.suppress(OSError):
                        files.reserve_path(self.dir, attempt.short_id).unlink()
                self.index.update()
        except StoreError as exc:  # a full disk or a read-only store: say so, and record on
            print(f"logkit: warning: {self.id}: cannot mark abandoned attempts ({exc.message})", file=sys.stderr)
        for attempt, outcome in written:  # the user must hear of a group left running (GPU memory held)
            kill = f" (kill -9 -{attempt.pgid})" if outcome.survivors else ""
            print(f"logkit: warning: {self.id}/{outcome.attempt} marked abandoned: {outcome.label}{kill}",
                  file=sys.stderr)

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
            index = self.complete_index()  # under the lock: what was appended since (a whole file only once)
            number = index.max_a + 1
            event["short_id"] = f"A{number}"
            event["log"] = {"path": f"{files.LOGS_DIR}/A{number}.log"}
            self._create_log(event["log"]["path"])  # before the line: a recorder killed after it leaves a log
            files.write_line(fd, self._line(event), path=self.events_path)
            index.update()
            index.save()
        self._reserve(event["short_id"])
        return event

    def _create_log(self, rel: str) -> None:
        """Create the attempt's (empty) log file; a full disk is the recorder's problem to report."""
        with contextlib.suppress(OSError):
            self.logs_dir.mkdir(exist_ok=True)
            os.close(os.open(self.dir / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))

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
        """The session's last launch attempt (with its environment event merged), if any.

        From the index: two lines read. A big session without an index knows only the launches
        in its last :data:`~logkit.capture.runindex.TAIL_BYTES` (the config diff is then left out once).
        """
        found = self.index.last_launch()
        if found is None and self.index.ino == -1:
            self.index.update(partial=True)  # the index pointed at the wrong line: rebuilt, asked again
            found = self.index.last_launch()
        return found
