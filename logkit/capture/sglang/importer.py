"""``logkit import LOGFILE --cmd "..."``: add a log written without logkit to a session as an attempt.

Contract: the log is streamed in blocks (bounded memory), redacted (plus the secret values of the
command's flags), hashed, classified, copied into the session's ``logs/`` and recorded as an
``Attempt`` + ``Outcome`` with ``provenance.source = "imported"`` (the original is never modified).
The launch config comes from the command (:func:`logkit.launch.config.given_only`), or, for a command
whose log shows an SGLang server's own lines, from the flags the server printed.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from datetime import UTC, datetime
from pathlib import Path

from ...errors import BadInput
from ...events import Attempt, LaunchConfig, LogFile, Outcome, Provenance
from ...launch.config import given_only, printed_config
from ...store import Store
from ..redact import Redactor
from .detect import detect
from .outcomes import Classifier, blocks, check_log_path
from .timeline import Timeline

__all__ = ["import_log"]


def import_log(store: Store, path: str | Path, cmd: str, session_id: str | None = None) -> tuple[Attempt, Outcome]:
    """Record ``path`` as an imported attempt of ``session_id`` (default: the current session)."""
    src = Path(path)
    check_log_path(src)
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise BadInput(f"--cmd {cmd!r}: {exc}", fix="quote the command as you would in a shell") from exc
    if not argv:
        raise BadInput("--cmd is empty", fix='pass the command that wrote the log: --cmd "python -m sglang.launch_server ..."')
    handle = store.open(session_id)
    redactor = Redactor.for_run({}, argv)
    clf = Classifier()
    timeline = Timeline()
    digest = hashlib.sha256()
    size = 0
    tmp = handle.log_path(f".import-{os.getpid()}-{src.name}.part")
    try:
        with src.open("rb") as fh, tmp.open("wb") as out:
            for chunk, first in blocks(fh):
                clean = redactor.stream(chunk)  # a private-key block across two blocks too
                out.write(clean)
                digest.update(clean)
                size += len(clean)
                clf.feed(clean, first)
                timeline.feed(clean, first)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BadInput(f"{src}: cannot read the log: {exc.strerror}", fix="check the path") from exc
    decision = clf.decide(finished=False)
    target = detect(argv)
    launch = None
    role = "command"
    if target is not None:
        role = target.kind
        if target.kind == "launch":
            launch = LaunchConfig.model_validate(given_only(target.args))
    elif clf.server_line is not None:  # an SGLang server's own lines: a launch (as `logkit run` records one)
        role = "launch"
        printed = printed_config(clf.server_args) if clf.server_args else None
        launch = LaunchConfig.model_validate(printed) if printed else None
    mtime = datetime.fromtimestamp(os.stat(src).st_mtime, UTC)
    stamped = [m.at for m in timeline.milestones if m.at is not None]
    started = min(stamped) if stamped else mtime
    prov = Provenance(source="imported", detail=str(src.resolve()))

    def build(txn) -> Attempt:  # type: ignore[no-untyped-def]
        short = txn.next_short_id("A")
        dest = handle.log_path(f"{short}-imported.log")
        os.replace(tmp, dest)
        log = LogFile(path=handle.relative(dest), size=size, sha256=digest.hexdigest())
        return Attempt(session=handle.id, short_id=short, argv=redactor.argv(argv), role=role, started=started,
                       log=log, launch=launch, provenance=prov, label=f"imported from {src.name}")

    try:
        attempt = handle.append_new(build)
    finally:
        tmp.unlink(missing_ok=True)
    assert isinstance(attempt, Attempt)
    ready_at = next((m.at for m in timeline.milestones if m.stage == "ready"), None) if decision.ready else None
    outcome = Outcome(session=handle.id, attempt=attempt.short_id, status=decision.status, label=decision.label,
                      signature=decision.signature, ended=mtime, ready_at=ready_at, evidence=decision.evidence,
                      timeline=timeline.with_seconds(started), log=attempt.log, provenance=prov)
    handle.append(outcome, durable=True)
    return attempt, outcome
