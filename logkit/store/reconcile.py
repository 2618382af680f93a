"""The one rule for an attempt whose recorder is gone: it gets an ``abandoned`` outcome.

Contract (the owner of the rule; :meth:`logkit.store.SessionHandle.reconcile` and
:meth:`logkit.capture.journal.Journal.reconcile` both call :func:`reconcile`):

* An attempt is *open* while no outcome line names it (:func:`logkit.store.files.open_attempts`: a
  line that decodes as JSON counts, even one the models refuse, because its recorder did end it; the
  reader names that line as a problem, an invented abandonment would not be true). The caller says
  which attempts are open (``open_now``: short id -> attempt dict), cheaply and without pydantic.
* An open attempt is *orphaned* when :func:`logkit.store.files.orphaned` says so (recorded on this
  host, its logkit gone or its pid reused). Only then is anything else done.
* Under the session lock, ``open_now`` is asked again (another logkit may just have ended one),
  the attempt is validated (a line the models refuse is skipped, as every typed reader skips it),
  its outcome is :func:`logkit.abandon.abandoned_outcome`, passed through ``scrub`` (survivors'
  command lines and the log tail may hold secrets), written fsynced, and its disk reserve freed.
* It never raises: a damaged or read-only store must not stop the command that opened the session;
  it says so on stderr (ending with ``then``), and names every abandoned attempt whose process group
  still runs (GPU memory held) with the ``kill`` that frees it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import procs
from ..errors import StoreError
from . import files
from .lockfile import appending

if TYPE_CHECKING:
    from ..events import Outcome

__all__ = ["reconcile"]


def reconcile(session_dir: Path, session_id: str, open_now: Callable[[], Mapping[str, dict[str, Any]]], *,
              scrub: Callable[[Any], Any] | None = None, then: str = "") -> list[Outcome]:
    """Give every open attempt whose recorder is gone an ``abandoned`` outcome; the outcomes written."""
    try:
        host = procs.hostname()
        gone = [a for a in open_now().values() if files.orphaned(a.get("recorder_pid"), a.get("recorder_host"), host)]
        return _abandon(session_dir, session_id, open_now, gone, host, scrub) if gone else []
    except Exception as exc:  # noqa: BLE001 - a damaged store must never stop a command
        print(f"logkit: warning: could not check {session_id} for abandoned attempts "
              f"({type(exc).__name__}: {exc}){then}", file=sys.stderr)
        return []


def _abandon(session_dir: Path, session_id: str, open_now: Callable[[], Mapping[str, dict[str, Any]]],
             candidates: list[dict[str, Any]], host: str, scrub: Callable[[Any], Any] | None) -> list[Outcome]:
    """Write the ``abandoned`` outcome of each candidate still open and orphaned under the lock."""
    from pydantic import ValidationError  # the rare path: the models, for these attempts only

    from ..abandon import abandoned_outcome
    from ..events import Attempt

    path = session_dir / files.EVENTS_FILE
    written: list[tuple[Attempt, Outcome]] = []
    try:
        with appending(path, fix=f"check that {session_dir} is writable") as fd:
            still_open = open_now()  # under the lock: an outcome written meanwhile closes its attempt
            for data in candidates:
                short = data.get("short_id")
                if short not in still_open or not files.orphaned(data.get("recorder_pid"), data.get("recorder_host"),
                                                                 host):
                    continue  # finished meanwhile, or still being recorded
                try:
                    attempt = Attempt.model_validate(data)
                except (ValidationError, ValueError, RecursionError, OverflowError):
                    continue  # the typed readers skip that line too
                outcome = abandoned_outcome(session_id, session_dir, attempt)
                line = outcome.model_dump(mode="json", exclude_none=True)
                files.write_line(fd, files.json_line(scrub(line) if scrub is not None else line), path=path,
                                 durable=True)
                written.append((attempt, outcome))
                with contextlib.suppress(OSError):
                    files.reserve_path(session_dir, attempt.short_id).unlink()
    except StoreError as exc:  # a full disk or a read-only store: say so, and let the command go on
        print(f"logkit: warning: {session_id}: cannot mark abandoned attempts ({exc.message})", file=sys.stderr)
    for attempt, outcome in written:  # the user must hear of a group left running (GPU memory held)
        kill = f" (kill -9 -{attempt.pgid})" if outcome.survivors else ""
        print(f"logkit: warning: {session_id}/{outcome.attempt} marked abandoned: {outcome.label}{kill}",
              file=sys.stderr)
    return [outcome for _attempt, outcome in written]
