"""Keeping decision ids unique: ``logkit decision check`` and ``logkit decision renumber``.

Contract:

* :func:`check` names an id used by two sessions (only older, sequential ids really collide),
  accepted decisions that share a title (one decision recorded twice), a ledger line git could not
  merge, and ledger drift, each with the command or edit that fixes it (:class:`LedgerProblem`).
* :func:`renumber` gives one of two clashing records a longer form of its own id and records the
  move in the ledger (``moved to DR-...``), so the old id still resolves (the site writes a
  redirect or a disambiguation page for it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..store import files
from ..errors import NotFound
from ..events import Decision
from ..store import Store
from .ledger import (
    CONFLICT_MARKERS,
    append_ledger,
    known_ids,
    ledger_line,
    ledger_path,
    ledger_rows,
    permanent_id,
)
from .lookup import decisions_by_id, latest_per_session, supersession

__all__ = ["LedgerProblem", "check", "renumber"]


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
        for d in latest_per_session(records).values():
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
