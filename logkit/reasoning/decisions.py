"""Decision records: permanent ids (``DR-7K3FQ``) that never change, also across hosts and git merges.

Contract:

* A decision's id is drawn from its own random event id (:func:`permanent_id`, :mod:`.ledger`): no
  counter is shared between hosts; a clash (1 in 33 million per pair) leaves each record reachable
  by a longer prefix of its own id (:func:`resolve`). Older sequential ids (``DR-0001``) stay;
  ``logkit decide --id DR-0001`` keeps the id a reconstructed record already has.
* :func:`record` appends the ``decision`` event and its ledger line under :meth:`Store.locked`;
  :func:`draft` is the record it would write, checked alike, nothing written. Both refuse a decision
  whose title and body an existing record already has (one draft recorded twice).
* :func:`parse_option` reads ``--option "NAME: why it lost (H2, A4)"``.

The rest is re-exported here: ids and the ledger in :mod:`.ledger`; reading, :func:`supersession`
(the one answer to "which record replaces which") and :func:`resolve` in :mod:`.lookup`;
:func:`check` and :func:`renumber` in :mod:`.ledgercheck`.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import BadInput, NotFound
from ..events import Decision, DecisionOption, new_id
from ..store import SessionHandle, Store, files
from .common import check_refs, now, provenance
from .ledger import aliases, append_ledger, known_ids, ledger_line, normalize_id, permanent_id, refuse_unmerged
from .ledgercheck import check, renumber
from .lookup import decisions_by_id, resolve, resolve_longer, supersession

__all__ = ["aliases", "check", "decisions_by_id", "draft", "known_ids", "normalize_id", "parse_option",
           "permanent_id", "record", "renumber", "resolve", "supersession"]


def parse_option(text: str, chosen: set[str] | None = None) -> DecisionOption:
    """``"flashinfer_trtllm: SM100-only kernels (H2, A4)"`` -> an option that lost, citing H2 and A4."""
    name, _, why = text.partition(":")
    name, why = name.strip(), why.strip()
    if not name:
        raise BadInput(f"--option {text!r} has no name", fix='--option "flashinfer_trtllm: SM100-only kernels (H2, A4)"')
    hypotheses: list[str] = []
    attempts: list[str] = []
    tail = re.search(r"\(([^()]*)\)\s*$", why)
    if tail:
        refs = [r.strip() for r in tail.group(1).split(",") if r.strip()]
        if refs and all(files.REF_RE.match(r) for r in refs):
            hypotheses = [r for r in refs if r.rpartition("/")[2].startswith("H")]
            attempts = [r for r in refs if r.rpartition("/")[2].startswith("A")]
            why = why[: tail.start()].rstrip()
    is_chosen = name in (chosen or set())
    return DecisionOption(name=name, chosen=is_chosen, why_not=None if is_chosen else (why or None),
                          hypotheses=hypotheses, attempts=attempts)


def _body(d: Decision) -> tuple[Any, ...]:
    """What makes two records one decision: the title and everything but status, tags and provenance."""
    return (d.title, d.context, d.decision, [o.model_dump() for o in d.options], d.evidence, d.consequences,
            d.supersedes)


def _refuse_duplicate(store: Store, event: Decision) -> None:
    """Refuse ``event`` when a record of the store has its title and body (one draft recorded twice)."""
    body = _body(event)
    for did, records in sorted(decisions_by_id(store).items()):
        for d in records:
            if _body(d) == body:
                raise BadInput(
                    f"{did} ({d.session}) already records this decision: the same title {d.title!r} and body",
                    fix=f"nothing to record if it is the same decision; to replace it, record the new one with "
                    f"--supersedes {did}; otherwise edit the title or body so they say what differs")


def draft(handle: SessionHandle, title: str, *, context: str | None = None, decision: str | None = None,
          options: list[str] | None = None, chosen: list[str] | None = None, evidence: list[str] | None = None,
          consequences: str | None = None, supersedes: str | None = None, status: str = "accepted",
          tags: list[str] | None = None, at: str | None = None, reconstructed: str | None = None,
          decision_id: str | None = None) -> Decision:
    """The decision :func:`record` would write, checked alike, nothing written (its id drawn again then)."""
    if not title.strip():
        raise BadInput("a decision needs a title", fix='logkit decide "Use flashinfer_cutlass for MoE on SM120" ...')
    if decision_id is not None and reconstructed is None:
        raise BadInput(f"--id {decision_id} keeps the id a reconstructed record already has",
                       fix="drop --id (a new decision draws its own permanent id), or add --reconstructed ACCOUNT")
    chosen_set = {c.strip() for c in chosen or [] if c.strip()}
    parsed = [parse_option(o, chosen_set) for o in options or []]
    names = [o.name for o in parsed]
    for name in sorted(chosen_set - set(names)):
        parsed.append(DecisionOption(name=name, chosen=True))
    events = handle.read().events
    refs = list(evidence or [])
    check_refs(handle, events, refs, allow="A")
    for option in parsed:
        check_refs(handle, events, option.hypotheses, allow="H")
        check_refs(handle, events, option.attempts, allow="A")
    store = handle.store
    when, prov = now(at), provenance(reconstructed)

    def read_id(flag: str, text: str | None, example: str) -> str | None:
        found = None if text is None else normalize_id(text)
        if text is not None and found is None:
            raise BadInput(f"{flag} {text!r} is not a decision id", fix=f"e.g. {flag} {example}")
        return found

    wanted, target = read_id("--id", decision_id, "DR-0001"), read_id("--supersedes", supersedes, "DR-7K3FQ")
    refuse_unmerged(store)
    taken = known_ids(store)
    if target is not None and target not in taken:
        target = resolve_longer(store, target) or target
        if target not in taken:
            raise NotFound(f"no decision {supersedes} in {store.root}", fix="see 'logkit decision list'")
    if wanted is not None and wanted in taken:
        raise BadInput(f"--id {wanted} is taken in {store.root}", fix="see 'logkit decision list'")
    event_id = new_id()
    event = Decision(id=event_id, session=handle.id, ts=when, decision_id=wanted or permanent_id(event_id, taken),
                     title=title.strip(), status=status, context=context, decision=decision,  # type: ignore[arg-type]
                     options=parsed, evidence=refs, consequences=consequences, supersedes=target,
                     tags=list(tags or []), provenance=prov)
    _refuse_duplicate(store, event)
    return event


def record(handle: SessionHandle, title: str, **fields: Any) -> Decision:
    """Record a decision under a permanent id drawn from its event id; ``fields``: :func:`draft`'s."""
    store = handle.store
    with store.locked():
        event = draft(handle, title, **fields)  # checked, and its id drawn, under the lock
        handle.append(event, durable=True)
        title_shown = store.scrub(event.title) if store.scrub is not None else event.title  # as events.jsonl has it
        append_ledger(store, ledger_line(event.decision_id, handle.id, title_shown))
    return event
