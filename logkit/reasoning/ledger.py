"""Permanent decision ids (``DR-7K3FQ``) and the ledger that lists every id ever handed out.

Contract:

* :func:`permanent_id` draws an id from a decision's own random event id: ``DR-`` and the first
  five Crockford base32 digits of it, lengthened while it clashes with an id in ``taken`` (the
  store's sessions and ledger: :func:`known_ids`, which brings the index up to date and queries its
  decisions; called under the store's lock, it sees a decision another process appended a moment
  ago). :func:`normalize_id` reads what a person typed.
* The ledger ``<sessions>/DECISIONS.tsv`` (tracked in git) has one line per id,
  ``DR-7K3FQ<TAB>session<TAB>title``, a 4th column ``moved to DR-...`` marking an id that moved
  (:func:`aliases`). :func:`append_ledger` writes ``<sessions>/.gitattributes`` beside it so git's
  ``union`` driver merges concurrent decisions without a conflict; :func:`refuse_unmerged` stops a
  write into a ledger with conflict markers left in it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..store import files, shared
from ..errors import BadInput, StoreError
from ..events import DECISION_ID_BODY, DECISION_ID_RE
from ..store import Store

__all__ = [
    "CONFLICT_MARKERS", "CROCKFORD", "LEDGER", "LedgerRow", "aliases", "append_ledger", "id_digits", "known_ids",
    "ledger_line", "ledger_path", "ledger_rows", "normalize_id", "permanent_id", "refuse_unmerged",
]

LEDGER = "DECISIONS.tsv"
LEDGER_HEADER = (
    "# logkit decision ledger: one line per decision id ever handed out, 'DR-<id><TAB>session<TAB>title'\n"
    "# (a 4th column 'moved to DR-<id>' marks an id that moved). Tracked in git; merged with git's union driver\n"
    "# (.gitattributes). After a merge, 'logkit decision check' confirms the ids are unique.\n"
)
#: Crockford's base32 alphabet: no I, L, O, U (read as 1, 1, 0 and never written).
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: Digits of a new id: 32**5, about 33.5 million.
SHORT = 5
_MOVED = re.compile(rf"^moved to ({DECISION_ID_BODY})$")
#: Lines git leaves in a file it could not merge.
CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")


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
    body = raw[3:].translate(str.maketrans({"I": "1", "L": "1", "O": "0"}))
    candidate = "DR-" + body
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
            raise BadInput(
                f"{ledger_path(store)}:{number}: unresolved git merge conflict in the decision ledger",
                fix="keep the lines of both sides, delete the markers, then run 'logkit decision check'",
            )


def known_ids(store: Store) -> set[str]:
    """Every decision id the store's sessions record (the index, refreshed) or its ledger ever listed."""
    from ..store.index import Index

    with Index(store.root) as index:
        index.refresh()
        with index.snapshot() as snap:
            ids = {row["decision_id"] for row in snap.decisions()}
    rows, _bad = ledger_rows(store)
    ids.update(r.id for r in rows)
    return ids


def aliases(store: Store) -> dict[str, list[tuple[str, str]]]:
    """Ids that moved (``logkit decision renumber``): old id -> [(session, the id it moved to)]."""
    rows, _bad = ledger_rows(store)
    moved: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        if row.moved_to:
            moved.setdefault(row.id, []).append((row.session, row.moved_to))
    return moved
