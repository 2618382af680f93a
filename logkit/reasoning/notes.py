"""``logkit note``: a note in a session, about the attempts, hypotheses or decisions it names.

Contract: :func:`record` appends one ``note`` event after checking every ref: ``A7``/``H3`` (or
``SESSION/A4``) must exist (:func:`~logkit.reasoning.common.check_refs`), a ``DR-`` id must resolve
(:func:`~logkit.reasoning.decisions.resolve`); a typo raises instead of leaving a dangling ref.
"""

from __future__ import annotations

from ..errors import BadInput
from ..events import Note
from ..store import SessionHandle
from .common import check_refs, now, provenance

__all__ = ["record"]


def record(handle: SessionHandle, text: str, *, refs: list[str] | None = None, at: str | None = None,
           reconstructed: str | None = None) -> Note:
    """Append a note to ``handle``'s session, its refs checked first (a typo would dangle)."""
    from .decisions import normalize_id, resolve

    if not text.strip():
        raise BadInput("a note needs its text", fix='logkit note "cutlass MoE: 1.8x the throughput of triton" --ref A7')
    refs = list(refs or [])
    events = None
    for ref in refs:
        if ref.upper().startswith("DR-"):
            resolve(handle.store, ref)  # NotFound names the ids there are
            continue
        if normalize_id(ref) is None and not ref.rpartition("/")[2][:1] in ("A", "H"):
            raise BadInput(f"--ref {ref!r} is not an attempt, hypothesis or decision id",
                           fix="e.g. --ref A7, --ref H3, --ref DR-7K3FQ")
        events = events if events is not None else handle.read().events
        check_refs(handle, events, [ref])
    event = Note(session=handle.id, ts=now(at), text=text, refs=refs, provenance=provenance(reconstructed))
    handle.append(event)
    return event
