"""Decision records: permanent ids (``DR-7K3FQ``) that never change, also across hosts and git merges.

Contract:

* A decision's id is drawn from its own random event id: ``DR-`` and the first five Crockford
  base32 digits of it (:func:`permanent_id`), lengthened at creation while it clashes with an id
  already in the store or its ledger. It is printed once and never changes: there is no counter to
  coordinate between hosts, so two hosts that decide at once get different ids (a clash between
  them is a 1 in 33 million chance per pair, and even then each record stays reachable by a
  longer prefix of its own id, which :func:`resolve` accepts).
* Ids handed out by older logkit versions (``DR-0001``, sequential) stay what they are: they were
  published, so they are those records' permanent ids. ``logkit decide --id DR-0001`` keeps an id
  a reconstructed record already has.
* :func:`record` appends the ``decision`` event and the ledger line
  ``DR-7K3FQ<TAB>session<TAB>title`` (``<sessions>/DECISIONS.tsv``, tracked in git) under
  :meth:`Store.locked`. The ledger lists every id ever handed out; ``<sessions>/.gitattributes``
  (written next to it) merges it with git's ``union`` driver, so concurrent decisions merge
  without a conflict.
* :func:`record` refuses a decision whose title and body (context, decision, options, evidence,
  consequences, supersedes) an existing record already has: one draft recorded twice.
* :func:`supersession` is the one answer to "which record replaces which" (``supersedes`` is
  written once, on the newer record); ``decision list`` and the site both read it.
* :func:`check` names an id used by two sessions (only older, sequential ids really collide),
  accepted decisions that share a title, and ledger drift; :func:`renumber` gives one of two clashing records a longer form of its own id and
  records the move in the ledger (``moved to DR-...``), so the old id still resolves
  (:func:`aliases`; the site writes a redirect or a disambiguation page for it).
* :func:`parse_option` reads ``--option "NAME: why it lost (H2, A4)"``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import files
from ..errors import BadInput, NotFound, StoreError
from ..events import DECISION_ID_BODY, DECISION_ID_RE, Decision, DecisionOption, new_id
from ..store import EVENTS_FILE, SessionHandle, Store
from .common import check_refs, now, provenance

__all__ = [
    "CROCKFORD", "LEDGER", "LedgerProblem", "Resolved", "aliases", "check", "decisions_by_id", "known_ids",
    "ledger_path", "normalize_id", "parse_option", "permanent_id", "record", "renumber", "resolve", "supersession",
]

LEDGER = "DECISIONS.tsv"
LEDGER_HEADER = (
    "# logkit decision ledger: one line per decision id ever handed out, 'DR-<id><TAB>session<TAB>title'\n"
    "# (a 4th column 'moved to DR-<id>' marks an id that moved). Tracked in git; merged with git's union driver\n"
    "# (.gitattributes). After a merge, 'logkit decision check' confirms the ids are unique.\n"
)
GITATTRIBUTES = "DECISIONS.tsv merge=union\n"
#: Crockford's base32 alphabet: no I, L, O, U (read as 1, 1, 0 and never written).
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: Digits of a new id: 32**5, about 33.5 million.
SHORT = 5
_REF = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[AH][0-9]+$")
_DR_BYTES = re.compile(rb'"decision_id":\s*"(' + DECISION_ID_BODY.encode() + rb')"')
_MOVED = re.compile(rf"^moved to ({DECISION_ID_BODY})$")
_CONFLICT = ("<<<<<<<", "=======", ">>>>>>>")


def _digits(event_id: str) -> str:
    """The Crockford base32 digits of an event id (hex ids read as they are, anything else hashed)."""
    text = event_id.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{8,}", text):
        text = hashlib.sha256(event_id.encode("utf-8")).hexdigest()
    bits = "".join(f"{int(c, 16):04b}" for c in text)
    bits += "0" * (-len(bits) % 5)
    return "".join(CROCKFORD[int(bits[i:i + 5], 2)] for i in range(0, len(bits), 5))


def permanent_id(event_id: str, taken: set[str] | frozenset[str] = frozenset(), length: int = SHORT) -> str:
    """``DR-`` and the first ``length`` base32 digits of ``event_id``, longer while in ``taken``.

    An all-digit draw is lengthened too, so a new id never looks like an old sequential one.
    """
    digits = _digits(event_id)
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


def parse_option(text: str, chosen: set[str] | None = None) -> DecisionOption:
    """``"flashinfer_trtllm: SM100-only kernels (H2, A4)"`` -> an option that lost, citing H2 and A4."""
    name, sep, why = text.partition(":")
    name, why = name.strip(), why.strip()
    if not name:
        raise BadInput(f"--option {text!r} has no name", fix='--option "flashinfer_trtllm: SM100-only kernels (H2, A4)"')
    hypotheses: list[str] = []
    attempts: list[str] = []
    tail = re.search(r"\(([^()]*)\)\s*$", why)
    if tail:
        refs = [r.strip() for r in tail.group(1).split(",") if r.strip()]
        if refs and all(_REF.match(r) for r in refs):
            hypotheses = [r for r in refs if r.rpartition("/")[2].startswith("H")]
            attempts = [r for r in refs if r.rpartition("/")[2].startswith("A")]
            why = why[: tail.start()].rstrip()
    is_chosen = name in (chosen or set())
    return DecisionOption(
        name=name,
        chosen=is_chosen,
        why_not=None if is_chosen else (why or None),
        hypotheses=hypotheses,
        attempts=attempts,
    )


def _ledger_line(decision_id: str, session: str, title: str, moved_to: str | None = None) -> str:
    clean = re.sub(r"[\t\r\n]+", " ", title).strip()
    return f"{decision_id}\t{session}\t{clean}" + (f"\tmoved to {moved_to}" if moved_to else "") + "\n"


def _append_ledger(store: Store, line: str) -> None:
    path = ledger_path(store)
    data = (LEDGER_HEADER if not path.exists() else "") + line
    try:
        files.append(path, data.encode("utf-8"), durable=True)
    except StoreError as exc:
        raise StoreError(f"{exc.message}; the decision was recorded in its session but not in {path.name}",
                         fix=f"{exc.fix}; then append the line: {line.strip()}") from exc
    attributes = store.root / ".gitattributes"
    if not attributes.exists():
        attributes.write_text(GITATTRIBUTES, encoding="utf-8")


@dataclass(frozen=True)
class _Row:
    line: int
    id: str
    session: str
    title: str
    moved_to: str | None


def _ledger_rows(store: Store) -> tuple[list[_Row], list[tuple[int, str]]]:
    """The ledger's rows, and its unreadable lines (line number, text)."""
    path = ledger_path(store)
    rows: list[_Row] = []
    bad: list[tuple[int, str]] = []
    if not path.exists():
        return rows, bad
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        moved = _MOVED.match(parts[3].strip()) if len(parts) > 3 else None
        if line.startswith(_CONFLICT) or len(parts) < 3 or not DECISION_ID_RE.match(parts[0]) or (len(parts) > 3 and not moved):
            bad.append((number, line))
            continue
        rows.append(_Row(number, parts[0], parts[1], parts[2], moved.group(1) if moved else None))
    return rows, bad


def _refuse_unmerged(store: Store) -> None:
    path = ledger_path(store)
    if not path.exists():
        return
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if line.startswith(_CONFLICT):
            raise BadInput(
                f"{path}:{number}: unresolved git merge conflict in the decision ledger",
                fix="keep the lines of both sides, delete the markers, then run 'logkit decision check'",
            )


def supersession(records: Iterable[Decision]) -> dict[str, list[str]]:
    """Which record replaces which: decision id -> the ids whose ``supersedes`` names it, sorted
    (a record naming its own id replaces nothing)."""
    by: dict[str, set[str]] = {}
    for d in records:
        if d.supersedes and d.supersedes != d.decision_id:
            by.setdefault(d.supersedes, set()).add(d.decision_id)
    return {did: sorted(ids) for did, ids in by.items()}


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


def known_ids(store: Store) -> set[str]:
    """Every decision id the store's sessions record or its ledger ever listed (no validation)."""
    ids: set[str] = set()
    for sid in store.session_ids():
        try:
            raw = (store.root / sid / EVENTS_FILE).read_bytes()
        except OSError:
            continue
        ids.update(m.decode("ascii") for m in _DR_BYTES.findall(raw))
    rows, _bad = _ledger_rows(store)
    ids.update(r.id for r in rows)
    return ids


def record(
    handle: SessionHandle,
    title: str,
    *,
    context: str | None = None,
    decision: str | None = None,
    options: list[str] | None = None,
    chosen: list[str] | None = None,
    evidence: list[str] | None = None,
    consequences: str | None = None,
    supersedes: str | None = None,
    status: str = "accepted",
    tags: list[str] | None = None,
    at: str | None = None,
    reconstructed: str | None = None,
    decision_id: str | None = None,
) -> Decision:
    """Record a decision under a permanent id drawn from its own event id (or ``decision_id``)."""
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
    wanted = None
    if decision_id is not None:
        wanted = normalize_id(decision_id)
        if wanted is None:
            raise BadInput(f"--id {decision_id!r} is not a decision id", fix="e.g. --id DR-0001")
    target = None
    if supersedes is not None:
        target = normalize_id(supersedes)
        if target is None:
            raise BadInput(f"--supersedes {supersedes!r} is not a decision id", fix="e.g. --supersedes DR-7K3FQ")
    with store.locked():
        _refuse_unmerged(store)
        taken = known_ids(store)
        if target is not None and target not in taken:
            target = _resolve_longer(store, target) or target
            if target not in taken:
                raise NotFound(f"no decision {supersedes} in {store.root}", fix="see 'logkit decision list'")
        if wanted is not None and wanted in taken:
            raise BadInput(f"--id {wanted} is taken in {store.root}", fix="see 'logkit decision list'")
        event_id = new_id()
        event = Decision(
            id=event_id,
            session=handle.id,
            ts=when,
            decision_id=wanted or permanent_id(event_id, taken),
            title=title.strip(),
            status=status,  # type: ignore[arg-type]
            context=context,
            decision=decision,
            options=parsed,
            evidence=refs,
            consequences=consequences,
            supersedes=target,
            tags=list(tags or []),
            provenance=prov,
        )
        _refuse_duplicate(store, event)
        handle.append(event, durable=True)
        title_shown = store.scrub(event.title) if store.scrub is not None else event.title  # as events.jsonl has it
        _append_ledger(store, _ledger_line(event.decision_id, handle.id, title_shown))
    return event


@dataclass(frozen=True)
class LedgerProblem:
    """One thing ``logkit decision check`` found, with the command or edit that fixes it."""

    where: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}\n  fix: {self.fix}"


def decisions_by_id(store: Store) -> dict[str, list[Decision]]:
    """Every decision of the store, grouped by id (more than one means a collision), from the index's
    ``decisions`` table (:mod:`logkit.store.index`), in (session, line) order."""
    from ..store.index import Index

    with Index(store.root) as index:
        index.refresh()
        with index.snapshot() as snap:
            rows = snap.decisions()
    found: dict[str, list[Decision]] = {}
    for row in rows:  # validated at ingest: the model is made again from the stored event, not checked anew
        found.setdefault(row["decision_id"], []).append(Decision.model_validate(row["event"]))
    return found


def aliases(store: Store) -> dict[str, list[tuple[str, str]]]:
    """Ids that moved (``logkit decision renumber``): old id -> [(session, the id it moved to)]."""
    rows, _bad = _ledger_rows(store)
    moved: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        if row.moved_to:
            moved.setdefault(row.id, []).append((row.session, row.moved_to))
    return moved


def _longer_matches(decisions: list[Decision], cited: str) -> list[Decision]:
    """The records whose own event id spells ``cited`` (a longer form of their permanent id)."""
    body = cited[3:]
    return [d for d in decisions if len(body) > len(d.decision_id) - 3 and _digits(d.id).startswith(body)
            and body.startswith(d.decision_id[3:])]


def _resolve_longer(store: Store, cited: str) -> str | None:
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


def resolve(store: Store, text: str) -> Resolved:
    """The decision ``text`` names: its id, a longer form of it, or an id that moved to it."""
    cited = normalize_id(text)
    if cited is None:
        raise BadInput(f"{text!r} is not a decision id", fix="decision ids look like DR-7K3FQ (or DR-0003 for older ones)")
    by_id = decisions_by_id(store)
    everything = [d for ds in by_id.values() for d in ds]

    def latest(records: list[Decision]) -> Decision:
        return max(records, key=lambda d: d.ts)

    if cited in by_id:
        records = by_id[cited]
        first = min(records, key=lambda d: (d.ts, d.session)).session  # the earliest session keeps a shared id
        sessions = sorted({d.session for d in records} - {first})
        others = tuple(latest([d for d in records if d.session == s]) for s in sessions)
        return Resolved(latest([d for d in records if d.session == first]), cited, "id", others)
    longer = _longer_matches(everything, cited)
    if len(longer) == 1:
        return Resolved(longer[0], cited, "longer")
    moved = aliases(store).get(cited, [])
    targets = [latest(by_id[new]) for _sid, new in moved if new in by_id]
    if targets:
        return Resolved(targets[0], cited, "moved", tuple(targets[1:]))
    known = sorted(by_id)
    raise NotFound(f"no decision {cited} in {store.root}",
                   fix="pick one of: " + (", ".join(known[-8:]) or "none recorded yet") + " (logkit decision list)")


def check(store: Store) -> list[LedgerProblem]:
    """Ids used by two sessions, an unresolved merge in the ledger, ledger drift."""
    problems: list[LedgerProblem] = []
    path = ledger_path(store)
    rows, bad = _ledger_rows(store)
    for number, line in bad:
        if line.startswith(_CONFLICT):
            problems.append(LedgerProblem(
                f"{path}:{number}", "unresolved git merge conflict marker",
                "keep the lines of both sides, delete the <<<<<<< ======= >>>>>>> markers, then rerun "
                "'logkit decision check' (sessions/.gitattributes merges the ledger without conflicts: commit it)",
            ))
        else:
            problems.append(LedgerProblem(f"{path}:{number}",
                                          f"not 'DR-<id><TAB>session<TAB>title[<TAB>moved to DR-<id>]': {line[:80]!r}",
                                          "fix or delete that line"))
    ledger: dict[str, set[str]] = {}
    for row in rows:
        ledger.setdefault(row.id, set()).add(row.session)
    by_id = decisions_by_id(store)
    for did, events in sorted(by_id.items()):
        sessions = sorted({e.session for e in events})
        if len(sessions) > 1:
            keep = min(events, key=lambda e: (e.ts, e.session))
            others = sorted({e.session for e in events if e.session != keep.session})
            problems.append(LedgerProblem(
                did, f"used by {len(sessions)} sessions' decisions: " + ", ".join(f"{e.session} ({e.title!r})" for e in events),
                f"the earliest ({keep.session}) keeps {did}; give the other a longer form of its own id (the old id "
                "keeps resolving): " + "; ".join(f"logkit decision renumber {s} {did}" for s in others),
            ))
        for sid in sessions if path.exists() else []:  # a store from before the ledger has none to drift
            if sid not in ledger.get(did, set()):
                problems.append(LedgerProblem(did, f"{sid} records {did} but {path.name} does not list it",
                                              f"append the line: {did}<TAB>{sid}<TAB>title"))
    problems += _shared_titles(by_id)
    for row in rows:
        if row.moved_to:
            if row.moved_to not in by_id:
                problems.append(LedgerProblem(f"{path}:{row.line}", f"{row.id} moved to {row.moved_to}, which no session records",
                                              "copy the session in from the other host, or delete that line"))
            continue
        if row.session not in {e.session for e in by_id.get(row.id, [])}:
            problems.append(LedgerProblem(f"{path}:{row.line}", f"{row.id} is listed for {row.session}, which has no such decision",
                                          "delete that line, or copy the session in from the other host"))
    return problems


def _shared_titles(by_id: dict[str, list[Decision]]) -> list[LedgerProblem]:
    """Accepted decisions (none supersedes them) that share a title: one decision recorded twice."""
    replaced = supersession(d for ds in by_id.values() for d in ds)
    titles: dict[str, list[Decision]] = {}
    for did, records in by_id.items():
        for sid in dict.fromkeys(d.session for d in records):
            d = max((x for x in records if x.session == sid), key=lambda x: x.ts)
            if d.status == "accepted" and did not in replaced:
                titles.setdefault(" ".join(d.title.split()).casefold(), []).append(d)
    problems = []
    for same in sorted((ds for ds in titles.values() if len(ds) > 1), key=lambda ds: min(d.ts for d in ds)):
        same.sort(key=lambda d: (d.ts, d.decision_id))
        keep, later = same[0], same[1:]
        problems.append(LedgerProblem(
            ", ".join(d.decision_id for d in same),
            f"{len(same)} accepted decisions share the title {keep.title!r}: "
            + ", ".join(f"{d.decision_id} ({d.session}, {d.ts:%Y-%m-%d %H:%M})" for d in same),
            "if they are one decision, retire the later record(s): "
            + "; ".join(f"logkit decide 'Duplicate of {keep.decision_id}' --status deprecated --supersedes "
                        f"{d.decision_id} --session {d.session}" for d in later)
            + "; if they differ, supersede one with a record whose title says how"))
    return problems


def renumber(store: Store, session_id: str, decision_id: str) -> str:
    """Give ``session_id``'s decision ``decision_id`` a longer form of its own id; returns the new id.

    The fix for an id two sessions use. Rewrites that session's ``decision`` line (and
    ``supersedes`` references to the old id inside the same session) and the ledger, each by
    writing a new file and renaming it over the old one (:func:`logkit.files.rewrite`): a crash at
    any point leaves each file whole, old or new. The ledger keeps the old line, marked
    ``moved to``, so the old id still resolves. Run it when nothing is recording into that session.
    """
    handle = store.handle(session_id)
    found: dict[str, Any] = {}

    def transform(raw: bytes) -> bytes:
        chunks = raw.split(b"\n")
        target = None
        for index, chunk in enumerate(chunks):
            if not files.may_hold(chunk, b'"decision_id"'):
                continue
            data = files.decode(chunk)
            if data is not None and data.get("kind") == "decision" and data.get("decision_id") == decision_id:
                target = index
        if target is None:
            raise NotFound(f"session {session_id} has no decision {decision_id}", fix="see 'logkit decision check'")
        for index, chunk in enumerate(chunks):
            if index != target and not files.may_hold(chunk, b'"supersedes"'):
                continue
            data = files.decode(chunk)
            if data is None:
                continue  # a damaged line stays as it is
            if index == target:
                found.update(new_id=permanent_id(str(data.get("id", "")), known_ids(store)),
                             title=str(data.get("title", "")))
                data["decision_id"] = found["new_id"]
            elif data.get("supersedes") == decision_id and found:
                data["supersedes"] = found["new_id"]
            else:
                continue
            chunks[index] = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if found:  # supersedes lines before the decision's own line
            for index, chunk in enumerate(chunks[:target]):
                if not files.may_hold(chunk, b'"supersedes"'):
                    continue
                data = files.decode(chunk)
                if data is not None and data.get("supersedes") == decision_id:
                    data["supersedes"] = found["new_id"]
                    chunks[index] = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return b"\n".join(chunks)

    with store.locked():
        files.rewrite(handle.events_path, transform)
        new_id, title = found["new_id"], found["title"]
        path = ledger_path(store)
        old = re.compile(rf"^({re.escape(decision_id)}\t{re.escape(session_id)}\t[^\t\n]*)$".encode(), re.M)
        if path.exists() and old.search(path.read_bytes()):
            files.rewrite(path, lambda raw: old.sub(lambda m: m.group(1) + f"\tmoved to {new_id}".encode(), raw, count=1))
        else:
            _append_ledger(store, _ledger_line(decision_id, session_id, title, moved_to=new_id))
        _append_ledger(store, _ledger_line(new_id, session_id, title))
    return new_id
