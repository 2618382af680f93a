"""A session's ``events.jsonl`` for ``logkit run``, without pydantic (the run path must start fast).

Contract:

* Writes follow :mod:`logkit.store`'s protocol exactly: an exclusive ``flock`` on the events file,
  a newline first if the file ends in a torn line, one ``write`` per whole line on an ``O_APPEND``
  descriptor, fsync when ``durable``. So this writer and :class:`logkit.store.SessionHandle`
  writers can share a session.
* Events are plain dicts shaped like :mod:`logkit.events` models (``None`` values dropped);
  ``tests/test_run_*`` validate everything ``logkit run`` writes with the models.
* :meth:`Journal.open` reconciles cheaply: it scans the lines with ``json`` and hands over to the
  full :meth:`logkit.store.SessionHandle.reconcile` (pydantic) only when an open attempt's
  recorder is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import procs
from ..errors import BadInput, NotFound
from ..lockfile import appending

__all__ = ["EVENT_VERSION", "Journal", "new_event", "utc"]

#: Must equal ``logkit.events.SCHEMA_VERSION`` (a test checks).
EVENT_VERSION = 1
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_ATTEMPT_RE = re.compile(rb'"short_id":\s*"A([0-9]+)"')


def utc(ts: datetime | None = None) -> str:
    """An ISO-8601 UTC timestamp as the models write it."""
    return (ts or datetime.now(UTC)).isoformat().replace("+00:00", "Z")


#: Mappings whose None values mean something ("not installed") and are kept.
_KEEP_NONE = frozenset({"packages"})


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v if k in _KEEP_NONE else _drop_none(v)) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def new_event(kind: str, session: str, **fields: Any) -> dict[str, Any]:
    """An event dict with the fields every event has."""
    return {"v": EVENT_VERSION, "id": os.urandom(16).hex(), "session": session, "ts": utc(), "kind": kind, **fields}


class Journal:
    """One session directory, for the recorder."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.root = root
        self.id = session_id
        self.dir = root / session_id
        self.events_path = self.dir / "events.jsonl"
        self.logs_dir = self.dir / "logs"

    @classmethod
    def open(cls, sessions: str | None, session_id: str | None) -> Journal:
        """The named or current session of the store, reconciled; clear errors otherwise."""
        root = Path(sessions or os.environ.get("LOGKIT_SESSIONS") or "sessions")
        if session_id is None:
            try:
                session_id = (root / ".current").read_text().strip() or None
            except OSError:
                session_id = None
            if session_id is None or not (root / session_id / "events.jsonl").exists():
                raise NotFound(
                    f"no current session in {root}",
                    fix='start one with: logkit session start "TITLE" (or pass --session ID)',
                )
        if not _SESSION_ID_RE.match(session_id):
            raise BadInput(f"{session_id!r} is not a valid session id", fix="see 'logkit session list'")
        journal = cls(root, session_id)
        if not journal.events_path.exists():
            raise NotFound(f"no session {session_id!r} in {root}", fix="see 'logkit session list' (the store is $LOGKIT_SESSIONS)")
        journal.reconcile()
        return journal

    def lines(self) -> list[dict[str, Any]]:
        """Every line that parses as a JSON object (no validation)."""
        out: list[dict[str, Any]] = []
        try:
            raw = self.events_path.read_bytes()
        except OSError:
            return out
        for chunk in raw.split(b"\n"):
            if not chunk.strip():
                continue
            try:
                data = json.loads(chunk)
            except ValueError:
                continue
            if isinstance(data, dict):
                out.append(data)
        return out

    def hypothesis_ids(self) -> list[str]:
        """The session's hypothesis short ids (``H3``), read without validation."""
        return [str(e.get("short_id")) for e in self.lines() if e.get("kind") == "hypothesis"]

    def reconcile(self) -> None:
        """Mark attempts whose recorder died as abandoned (delegating to the store when needed)."""
        lines = self.lines()
        ended = {e.get("attempt") for e in lines if e.get("kind") == "outcome"}
        host = procs.hostname()
        for event in lines:
            if event.get("kind") != "attempt" or event.get("short_id") in ended:
                continue
            if event.get("recorder_host") not in (None, host):
                continue
            pid = event.get("recorder_pid")
            if pid and procs.alive(pid) and "logkit" in (procs.cmdline(pid) or ""):
                continue
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
        return (json.dumps(_drop_none(event), ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()

    def append(self, event: dict[str, Any], *, durable: bool = False) -> None:
        """Append one event as one whole line."""
        with self.transaction() as fd:
            os.write(fd, self._line(event))
            if durable:
                os.fsync(fd)

    def append_attempt(self, event: dict[str, Any]) -> dict[str, Any]:
        """Allocate the next ``A<n>`` under the lock, set it (and the log path) and append."""
        with self.transaction() as fd:
            raw = self.events_path.read_bytes()
            number = max((int(m) for m in _ATTEMPT_RE.findall(raw)), default=0) + 1
            event["short_id"] = f"A{number}"
            event["log"] = {"path": f"logs/A{number}.log"}
            os.write(fd, self._line(event))
        return event

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
