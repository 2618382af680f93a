"""Permanent decision ids (``DR-7K3FQ``), the ledger that lists every id ever handed out, and reading
the records.

Contract:

* :func:`permanent_id` draws an id from a decision's own random event id: ``DR-`` and the first
  five Crockford base32 digits of it, lengthened while it clashes with an id in ``taken`` (the
  store's sessions and ledger: :func:`known_ids`, which brings the index up to date; called under
  the store's lock, it sees a decision another process appended a moment ago). :func:`normalize_id`
  reads what a person typed.
* The ledger ``<sessions>/DECISIONS.tsv`` (tracked in git) has one line per id,
  ``DR-7K3FQ<TAB>session<TAB>title``, a 4th column ``moved to DR-...`` marking an id that moved
  (:func:`aliases`). :func:`append_ledger` writes ``<sessions>/.gitattributes`` beside it so git's
  ``union`` driver merges concurrent decisions without a conflict; :func:`refuse_unmerged` stops a
  write into a ledger with conflict markers left in it.
* :func:`decisions_by_id` reads the index's ``decisions`` table: every record grouped by id (more
  than one: a collision), in (session, line) order. :func:`supersession` is the one answer to
  "which record replaces which" (``supersedes`` is written once, on the newer record).
  :func:`resolve` accepts an id, a longer form of a record's own id (how two records that drew one
  short id stay reachable), or an id that moved.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput, NotFound, StoreError
from ..events import DECISION_ID_BODY, DECISION_ID_RE, Decision
from ..store import Store, files, shared

__all__ = ["CONFLICT_MARKERS", "CROCKFORD", "LEDGER", "LedgerRow", "Resolved", "aliases", "append_ledger",
           "decisions_by_id", "id_digits", "known_ids", "latest_per_session", "ledger_line", "ledger_path",
           "ledger_rows", "normalize_id", "permanent_id", "refuse_unmerged", "resolve", "resolve_longer",
           "supersession"]

LEDGER = "DECISIONS.tsv"
LEDGER_HEADER = (
    "# logkit decision ledger: one line per decision id ever handed out, 'DR-<id><TAB>session<TAB>title'\n"
    "# (a 4th column 'moved to DR-<id>' marks an id that moved). Tracked in git; merged with git's union driver\n"
    "# (.gitattributes). After a merge, 'logkit decision check' confirms the ids are unique.\n"
)
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # base32 without I, L, O, U (read as 1, 1, 0; never written)
SHORT = 5  # digits of a new id: 32**5, about 33.5 million
_MOVED = re.compile(rf"^moved to ({DECISION_ID_BODY})$")
CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")  # lines git leaves in a file it could not merge


def id_digits(event_id: str) -> str:
    """The Crockford base32 digits of an event id (hex ids read as they are, anything else hashed)."""
    text = event_id.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{8,}", text):
        text = hashlib.sha256(event_id.encode("utf-8")).hexdigest()
    bits = "".join(f"{int(c, 16):04b}" for c in text)
    bits += "0" * (-len(bits) % 5)
    return "".join(CROCKFORD[int(bits[i:i + 5], 2)] for i in range(0, len(bits), 5))


def permanent_id(event_id: str, taken: set[str] | frozenset[str] = frozenset(), length: int = SHORT) -> str:
    """``DR-`` and ``length`` base32 digits of ``event_id``, longer while in ``taken`` or all digits (old-style)."""
    digits = id_digits(event_id)
    for n in range(length, len(digits) + 1):
        candidate = "DR-" + digits[:n]
        if candidate not in taken and not digits[:n].isdigit():
            return candidate
    raise BadInput(f"event id {event_id!r} gives no free decision id", fix="record the decision again (a new event id)")


def normalize_id(text: str) -> str | None:
    """``dr-7k3fq``, ``DR-7K3FQ`` or ``DR-7K3FO`` -> ``DR-7K3FQ`` / ``DR-7K3F0``; None if not a decision id."""
    raw = text.strip().upper()
    if not raw.startswith("DR-"):
        return None
    candidate = "DR-" + raw[3:].translate(str.maketrans({"I": "1", "L": "1", "O": "0"}))
    return candidate if DECISION_ID_RE.match(candidate) else None


def ledger_path(store: Store) -> Path:
    """Where the store's decision ledger lives."""
    return store.root / LEDGER


def ledger_line(decision_id: str, session: str, title: str, moved_to: str | None = None) -> str:
    clean = re.sub(r"[\t\r\n]+", " ", title).strip()
    return f"{decision_id}\t{session}\t{clean}" + (f"\tmoved to {moved_to}" if moved_to else "") + "\n"


def append_ledger(store: Store, line: str) -> None:
    path = ledger_path(store)
    data = (LEDGER_HEADER if not path.exists() else "") + line
    try:
        files.check_regular(path)  # a FIFO named DECISIONS.tsv would block the writer
        files.append(path, data.encode("utf-8"), durable=True)
    except StoreError as exc:
        raise StoreError(f"{exc.message}; the decision was recorded in its session but not in {path.name}",
                         fix=f"{exc.fix}; then append the line: {line.strip()}") from exc
    shared.ensure_repo_files(store.root)


@dataclass(frozen=True)
class LedgerRow:
    line: int
    id: str
    session: str
    title: str
    moved_to: str | None


def ledger_rows(store: Store) -> tuple[list[LedgerRow], list[tuple[int, str]]]:
    """The ledger's rows, and its unreadable lines (line number, text)."""
    path = ledger_path(store)
    rows: list[LedgerRow] = []
    bad: list[tuple[int, str]] = []
    if not path.exists():
        return rows, bad
    files.check_regular(path)
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        moved = _MOVED.match(parts[3].strip()) if len(parts) > 3 else None
        if line.startswith(CONFLICT_MARKERS) or len(parts) < 3 or not DECISION_ID_RE.match(parts[0]) or (len(parts) > 3 and not moved):
            bad.append((number, line))
            continue
        rows.append(LedgerRow(number, parts[0], parts[1], parts[2], moved.group(1) if moved else None))
    return rows, bad


def refuse_unmerged(store: Store) -> None:
    _rows, bad = ledger_rows(store)
    for number, line in bad:
        if line.startswith(CONFLICT_MARKERS):
            raise BadInput(f"{ledger_path(store)}:{number}: unresolved git merge conflict in the decision ledger",
                           fix="keep the lines of both sides, delete the markers, then run 'logkit decision check'")


def known_ids(store: Store) -> set[str]:
    """Every decision id the store's sessions record (the index, refreshed) or its ledger ever listed."""
    rows, _bad = ledger_rows(store)
    return set(decisions_by_id(store)) | {r.id for r in rows}


def aliases(store: Store) -> dict[str, list[tuple[str, str]]]:
    """Ids that moved (``logkit decision renumber``): old id -> [(session, the id it moved to)]."""
    rows, _bad = ledger_rows(store)
    moved: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        if row.moved_to:
            moved.setdefault(row.id, []).append((row.session, row.moved_to))
    return moved


def decisions_by_id(store: Store) -> dict[str, list[Decision]]:
    """Every decision of the store by id (more than one: a collision), from the index, in (session, line) order."""
    from ..store.index import current

    with current(store.root) as snap:
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
    how: str  # "id", "longer" (a longer form of the record's id) or "moved" (an id that moved to this one)
    others: tuple[Decision, ...] = ()
    superseded_by: tuple[str, ...] = ()  # the decisions that replace the record (supersession()), none if it stands


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
