"""Reading decision records: every record by id, which record replaces which, what a cited id names.

Contract:

* :func:`decisions_by_id` reads the index's ``decisions`` table (:mod:`logkit.store.index`): every
  record of the store grouped by id (more than one means a collision), in (session, line) order.
* :func:`supersession` is the one answer to "which record replaces which" (``supersedes`` is
  written once, on the newer record); ``decision list``, ``decision check`` and the site read it.
* :func:`resolve` accepts an id, a longer form of a record's own id (how two records that drew one
  short id stay reachable), or an id that moved (:func:`logkit.reasoning.ledger.aliases`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import BadInput, NotFound
from ..events import Decision
from ..store import Store
from .ledger import aliases, id_digits, normalize_id

__all__ = ["Resolved", "decisions_by_id", "latest_per_session", "resolve", "resolve_longer", "supersession"]


def decisions_by_id(store: Store) -> dict[str, list[Decision]]:
    """Every decision of the store by id (more than one: a collision), from the index, in (session, line) order."""
    from ..store.index import Index

    with Index(store.root) as index:
        index.refresh()
        with index.snapshot() as snap:
            rows = snap.decisions()
    found: dict[str, list[Decision]] = {}
    for row in rows:  # validated at ingest: the model is made again from the stored event, not checked anew
        found.setdefault(row["decision_id"], []).append(Decision.model_validate(row["event"]))
    return found


def supersession(records: Iterable[Decision]) -> dict[str, list[str]]:
    """Decision id -> the sorted ids whose ``supersedes`` names it (a record naming its own id replaces nothing)."""
    by: dict[str, set[str]] = {}
    for d in records:
        if d.supersedes and d.supersedes != d.decision_id:
            by.setdefault(d.supersedes, set()).add(d.decision_id)
    return {did: sorted(ids) for did, ids in by.items()}


def latest_per_session(records: Iterable[Decision]) -> dict[str, Decision]:
    """The latest of one id's records in each session (sessions in the order they first appear)."""
    out: dict[str, Decision] = {}
    for d in records:
        if d.session not in out or d.ts > out[d.session].ts:
            out[d.session] = d
    return out


def _longer_matches(decisions: list[Decision], cited: str) -> list[Decision]:
    """The records whose own event id spells ``cited`` (a longer form of their permanent id)."""
    body = cited[3:]
    return [d for d in decisions if len(body) > len(d.decision_id) - 3 and id_digits(d.id).startswith(body)
            and body.startswith(d.decision_id[3:])]


def resolve_longer(store: Store, cited: str) -> str | None:
    """The one record whose own id ``cited`` is a longer form of, if exactly one."""
    found = _longer_matches([d for ds in decisions_by_id(store).values() for d in ds], cited)
    return found[0].decision_id if len(found) == 1 else None


@dataclass(frozen=True)
class Resolved:
    """What a cited id names: the record, how it was found, and the other records it could mean."""

    decision: Decision
    cited: str
    #: "id", "longer" (a longer form of the record's id) or "moved" (an id that moved to this one)
    how: str
    others: tuple[Decision, ...] = ()
    #: the decisions that replace the record (:func:`supersession`), none when it stands
    superseded_by: tuple[str, ...] = ()


def resolve(store: Store, text: str) -> Resolved:
    """The decision ``text`` names: its id, a longer form of it, or an id that moved to it."""
    cited = normalize_id(text)
    if cited is None:
        raise BadInput(f"{text!r} is not a decision id", fix="decision ids look like DR-7K3FQ (or DR-0003 for older ones)")
    by_id = decisions_by_id(store)
    everything = [d for ds in by_id.values() for d in ds]
    later = supersession(everything)

    def found(record: Decision, how: str, others: tuple[Decision, ...] = ()) -> Resolved:
        return Resolved(record, cited, how, others, tuple(later.get(record.decision_id, ())))

    if cited in by_id:
        first = min(by_id[cited], key=lambda d: (d.ts, d.session)).session  # the earliest session keeps a shared id
        latest = latest_per_session(by_id[cited])
        return found(latest[first], "id", tuple(latest[s] for s in sorted(set(latest) - {first})))
    longer = _longer_matches(everything, cited)
    if len(longer) == 1:
        return found(longer[0], "longer")
    moved = aliases(store).get(cited, [])
    targets = [max(by_id[new], key=lambda d: d.ts) for _sid, new in moved if new in by_id]
    if targets:
        return found(targets[0], "moved", tuple(targets[1:]))
    known = sorted(by_id)
    raise NotFound(f"no decision {cited} in {store.root}",
                   fix="pick one of: " + (", ".join(known[-8:]) or "none recorded yet") + " (logkit decision list)")
