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
* :func:`check` (``logkit decision check``) names an id used by two sessions (only older, sequential
  ids really collide), accepted decisions that share a title (one decision recorded twice), a
  ledger line git could not merge, and ledger drift, each with the command or edit that fixes it
  (:class:`LedgerProblem`). :func:`renumber` gives one of two clashing records a longer form of its
  own id and records the move in the ledger (``moved to DR-...``), so the old id still resolves
  (the site writes a redirect or a disambiguation page for it).

Ids, the ledger file and reading the records (:func:`supersession`, the one answer to "which record
replaces which"; :func:`resolve`) live in :mod:`.ledger` and are re-exported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import BadInput, NotFound
from ..events import Decision, DecisionOption, new_id
from ..store import SessionHandle, Store, files
from .common import check_refs, now, provenance
from .ledger import (CONFLICT_MARKERS, aliases, append_ledger, decisions_by_id, known_ids, latest_per_session,
                     ledger_line, ledger_path, ledger_rows, normalize_id, permanent_id, refuse_unmerged, resolve,
                     resolve_longer, supersession)

__all__ = ["LedgerProblem", "aliases", "check", "decisions_by_id", "draft", "known_ids", "latest_per_session",
           "normalize_id", "parse_option", "permanent_id", "record", "renumber", "resolve", "supersession"]


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
    parsed += [DecisionOption(name=name, chosen=True) for name in sorted(chosen_set - {o.name for o in parsed})]
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


@dataclass(frozen=True)
class LedgerProblem:
    """One thing ``logkit decision check`` found, with the command or edit that fixes it."""

    where: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}\n  fix: {self.fix}"


def check(store: Store) -> list[LedgerProblem]:
    """Ids used by two sessions, an unresolved merge in the ledger, ledger drift."""
    problems: list[LedgerProblem] = []
    path = ledger_path(store)
    rows, bad = ledger_rows(store)
    for number, line in bad:
        if line.startswith(CONFLICT_MARKERS):
            problems.append(LedgerProblem(
                f"{path}:{number}", "unresolved git merge conflict marker",
                "keep the lines of both sides, delete the <<<<<<< ======= >>>>>>> markers, then rerun "
                "'logkit decision check' (sessions/.gitattributes merges the ledger without conflicts: commit it)"))
        else:
            shape = "DR-<id><TAB>session<TAB>title[<TAB>moved to DR-<id>]"
            problems.append(LedgerProblem(f"{path}:{number}", f"not '{shape}': {line[:80]!r}",
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
            users = ", ".join(f"{e.session} ({e.title!r})" for e in events)
            renumber_them = "; ".join(f"logkit decision renumber {s} {did}" for s in others)
            problems.append(LedgerProblem(did, f"used by {len(sessions)} sessions' decisions: {users}",
                                          f"the earliest ({keep.session}) keeps {did}; give the other a longer "
                                          f"form of its own id (the old id keeps resolving): {renumber_them}"))
        for sid in sessions if path.exists() else []:  # a store from before the ledger has none to drift
            if sid not in ledger.get(did, set()):
                problems.append(LedgerProblem(did, f"{sid} records {did} but {path.name} does not list it",
                                              f"append the line: {did}<TAB>{sid}<TAB>title"))
    problems += _shared_titles(by_id)
    for row in rows:
        where = f"{path}:{row.line}"
        if row.moved_to and row.moved_to not in by_id:
            problems.append(LedgerProblem(where, f"{row.id} moved to {row.moved_to}, which no session records",
                                          "copy the session in from the other host, or delete that line"))
        elif not row.moved_to and row.session not in {e.session for e in by_id.get(row.id, [])}:
            problems.append(LedgerProblem(where, f"{row.id} is listed for {row.session}, which has no such decision",
                                          "delete that line, or copy the session in from the other host"))
    return problems


def _shared_titles(by_id: dict[str, list[Decision]]) -> list[LedgerProblem]:
    """Accepted decisions (none supersedes them) that share a title: one decision recorded twice."""
    replaced = supersession(d for ds in by_id.values() for d in ds)
    titles: dict[str, list[Decision]] = {}
    for did, records in by_id.items():
        for d in latest_per_session(records).values():
            if d.status == "accepted" and did not in replaced:
                titles.setdefault(" ".join(d.title.split()).casefold(), []).append(d)
    problems = []
    for same in sorted((ds for ds in titles.values() if len(ds) > 1), key=lambda ds: min(d.ts for d in ds)):
        same.sort(key=lambda d: (d.ts, d.decision_id))
        keep, later = same[0], same[1:]
        listed = ", ".join(f"{d.decision_id} ({d.session}, {d.ts:%Y-%m-%d %H:%M})" for d in same)
        retire = "; ".join(f"logkit decide 'Duplicate of {keep.decision_id}' --status deprecated --supersedes "
                           f"{d.decision_id} --session {d.session}" for d in later)
        problems.append(LedgerProblem(", ".join(d.decision_id for d in same),
                                      f"{len(same)} accepted decisions share the title {keep.title!r}: {listed}",
                                      f"if they are one decision, retire the later record(s): {retire}; if they "
                                      "differ, supersede one with a record whose title says how"))
    return problems


def renumber(store: Store, session_id: str, decision_id: str) -> str:
    """Give a session's ``decision_id`` a longer form of its own id (the old one kept as moved); the new id."""
    handle = store.handle(session_id)
    found: dict[str, Any] = {}

    def transform(raw: bytes) -> bytes:
        chunks = raw.split(b"\n")
        target, own = None, {}
        for index, chunk in enumerate(chunks):
            data = files.decode(chunk) if files.may_hold(chunk, b'"decision_id"') else None
            if data is not None and data.get("kind") == "decision" and data.get("decision_id") == decision_id:
                target, own = index, data
        if target is None:
            raise NotFound(f"session {session_id} has no decision {decision_id}", fix="see 'logkit decision check'")
        found.update(new_id=permanent_id(str(own.get("id", "")), known_ids(store)), title=str(own.get("title", "")))
        own["decision_id"] = found["new_id"]
        chunks[target] = files.json_line(own)[:-1]
        for index, chunk in enumerate(chunks):  # supersedes references to the old id (a damaged line stays)
            data = files.decode(chunk) if index != target and files.may_hold(chunk, b'"supersedes"') else None
            if data is not None and data.get("supersedes") == decision_id:
                data["supersedes"] = found["new_id"]
                chunks[index] = files.json_line(data)[:-1]
        return b"\n".join(chunks)

    with store.locked():
        files.rewrite(handle.events_path, transform)
        new_id, title = found["new_id"], found["title"]
        path = ledger_path(store)
        old = re.compile(rf"^({re.escape(decision_id)}\t{re.escape(session_id)}\t[^\t\n]*)$".encode(), re.M)
        if path.exists() and old.search(path.read_bytes()):
            files.rewrite(path, lambda raw: old.sub(lambda m: m.group(1) + f"\tmoved to {new_id}".encode(), raw, count=1))
        else:
            append_ledger(store, ledger_line(decision_id, session_id, title, moved_to=new_id))
        append_ledger(store, ledger_line(new_id, session_id, title))
    return new_id
