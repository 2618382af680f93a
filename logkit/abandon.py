"""What an attempt looks like after the logkit recording it died: the ``abandoned`` outcome.

The store writes it when a later command opens the session (:func:`logkit.store.reconcile.reconcile`): the log
as far as it got (size, sha256, last lines, as the recorder would have written them) and the
processes of the attempt's group still running, so GPU memory held by an orphaned server is named.

A ``log.path`` comes from ``events.jsonl``, which arrives through git and merges: it is read only
when it resolves (symbolic links followed) inside the session's directory (:func:`confined_log`);
otherwise the outcome names the path and says it was not read.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from . import procs
from .events import Attempt, EvidenceLine, LogFile, Outcome, Provenance, Survivor

__all__ = ["abandoned_outcome", "confined_log"]


def confined_log(session_dir: Path, rel: str) -> Path | None:
    """The log file ``rel`` names if it lies inside ``session_dir`` (no absolute path, ``..``, link out); else None."""
    if not rel or "\x00" in rel or Path(rel).is_absolute():
        return None
    try:
        root = session_dir.resolve()
        path = (root / rel).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return path if path != root and path.is_relative_to(root) else None


def abandoned_outcome(session_id: str, session_dir: Path, attempt: Attempt) -> Outcome:
    """The ``abandoned`` outcome of an attempt whose recorder is gone: log digest, tail, survivors."""
    survivors = []
    if attempt.pgid and attempt.recorder_host in (None, procs.hostname()):
        survivors = [Survivor(pid=p, cmdline=procs.cmdline(p)) for p in procs.group_members(attempt.pgid)]
    log = None
    tail: list[EvidenceLine] = []
    outside = False
    if attempt.log is not None:
        path = confined_log(session_dir, attempt.log.path)
        outside = path is None
        log = LogFile(path=attempt.log.path)
        if path is not None and path.is_file():
            with open(path, "rb") as fh:
                digest = hashlib.file_digest(fh, "sha256")
                log = LogFile(path=attempt.log.path, size=fh.tell(), sha256=digest.hexdigest())  # tell(): bytes hashed
            tail = _tail(path)
    now = datetime.now(UTC)
    label = "logkit stopped recording before the command ended (killed or crashed)"
    if outside:
        label += f"; its log path {attempt.log.path!r} is outside the session directory: not read"
    if survivors:
        pids = ", ".join(str(s.pid) for s in survivors)
        label += f"; {len(survivors)} process(es) of its group still running: {pids}"
    return Outcome(session=session_id, attempt=attempt.short_id, status="abandoned", label=label, ended=now,
                   duration_s=(now - attempt.started).total_seconds(), log=log, tail=tail, survivors=survivors,
                   provenance=Provenance(source="captured", detail="marked abandoned by a later logkit command"))


def _tail(path: Path) -> list[EvidenceLine]:
    """The log's last lines, as the recorder would have written them (:func:`~logkit.capture.recorder.tail_lines`)."""
    from .capture.recorder import TAIL_BYTES, tail_lines
    from .logfiles import tail

    chunk = tail(path, TAIL_BYTES)
    with open(path, "rb") as fh:
        total = sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))
        cut = fh.tell() > TAIL_BYTES
    last = total if chunk.endswith(b"\n") else total + 1
    return [EvidenceLine(**row) for row in tail_lines(chunk, last, cut=cut)]
