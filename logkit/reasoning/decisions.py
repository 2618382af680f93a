"""Decision records (``DR-0004``): ids unique across the knowledge base, also across git merges.

Contract:

* :func:`record` allocates the next id under :meth:`Store.locked` (a lock over the whole store,
  so two logkit processes on one host never hand out the same number), appends the ``decision``
  event to the session and appends ``DR-0004<TAB>session<TAB>title`` to the tracked ledger
  ``<sessions>/DECISIONS.tsv``, all under that lock.
* Two hosts cannot share a lock. The ledger is what makes their collision visible: both append a
  line after the same last line, so ``git merge`` stops with a conflict in ``DECISIONS.tsv``.
  Resolve it by keeping both sides' lines, then :func:`check` (``logkit decision check``) names
  every id used by two sessions and :func:`renumber` (``logkit decision renumber SESSION DR-0004``)
  gives one of them the next free id.
* :func:`parse_option` reads ``--option "NAME: why it lost (H2, A4)"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import files
from ..errors import BadInput, NotFound, StoreError
from ..events import Decision, DecisionOption
from ..store import SessionHandle, Store
from .common import check_refs, now, provenance

__all__ = ["LEDGER", "LedgerProblem", "check", "decisions_by_id", "ledger_path", "parse_option", "record", "renumber"]

LEDGER = "DECISIONS.tsv"
LEDGER_HEADER = (
    "# logkit decision ledger: one line per decision, 'DR-<n><TAB>session<TAB>title'. Tracked in git on purpose:\n"
    "# two hosts that hand out the same id collide here in a merge. Keep both lines, then run: logkit decision check\n"
)
_REF = files.REF_RE
_DR = files.DECISION_ID_RE
_CONFLICT = ("<<<<<<<", "=======", ">>>>>>>")


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


def _ledger_line(decision_id: str, session: str, title: str) -> str:
    clean = re.sub(r"[\t\r\n]+", " ", title).strip()
    return f"{decision_id}\t{session}\t{clean}\n"


def _append_ledger(store: Store, line: str) -> None:
    path = ledger_path(store)
    data = (LEDGER_HEADER if not path.exists() else "") + line
    try:
        files.append(path, data.encode("utf-8"), durable=True)
    except StoreError as exc:
        raise StoreError(f"{exc.message}; the decision was recorded in its session but not in {path.name}",
                         fix=f"{exc.fix}; then append the line: {line.strip()}") from exc


def _ledger_numbers(store: Store) -> list[int]:
    path = ledger_path(store)
    if not path.exists():
        return []
    found = re.findall(r"^DR-([0-9]+)\t", path.read_text(encoding="utf-8", errors="replace"), flags=re.M)
    return [int(n) for n in found]


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


def _next_id(store: Store) -> str:
    numbers = store.decision_numbers() + _ledger_numbers(store)
    return f"DR-{max(numbers, default=0) + 1:04d}"


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
) -> Decision:
    """Record a decision under the next free ``DR-<n>`` of the whole knowledge base."""
    if not title.strip():
        raise BadInput("a decision needs a title", fix='logkit decide "Use flashinfer_cutlass for MoE on SM120" ...')
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
    with store.locked():
        _refuse_unmerged(store)
        if supersedes is not None:
            if not _DR.match(supersedes):
                raise BadInput(f"--supersedes {supersedes!r} is not a decision id", fix="e.g. --supersedes DR-0002")
            if int(supersedes[3:]) not in store.decision_numbers():
                raise NotFound(f"no decision {supersedes} in {store.root}", fix="see 'logkit decision list'")
        event = Decision(
            session=handle.id,
            ts=when,
            decision_id=_next_id(store),
            title=title.strip(),
            status=status,  # type: ignore[arg-type]
            context=context,
            decision=decision,
            options=parsed,
            evidence=refs,
            consequences=consequences,
            supersedes=supersedes,
            tags=list(tags or []),
            provenance=prov,
        )
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
    """Every decision of the store, grouped by ``DR-<n>`` (more than one means a collision)."""
    found: dict[str, list[Decision]] = {}
    for sid, result in store.read_all().items():
        for event in result.events:
            if isinstance(event, Decision):
                found.setdefault(event.decision_id, []).append(event)
    return found


def check(store: Store) -> list[LedgerProblem]:
    """Duplicate decision ids across sessions, an unresolved merge in the ledger, ledger drift."""
    problems: list[LedgerProblem] = []
    path = ledger_path(store)
    ledger: dict[str, list[tuple[int, str]]] = {}
    if path.exists():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if line.startswith(_CONFLICT):
                problems.append(LedgerProblem(
                    f"{path}:{number}", "unresolved git merge conflict marker",
                    "keep the lines of both sides, delete the <<<<<<< ======= >>>>>>> markers, then rerun "
                    "'logkit decision check'",
                ))
                continue
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 3 or not _DR.match(parts[0]):
                problems.append(LedgerProblem(f"{path}:{number}", f"not 'DR-<n><TAB>session<TAB>title': {line[:80]!r}",
                                              "fix or delete that line (it is rebuilt by 'logkit decision renumber')"))
                continue
            ledger.setdefault(parts[0], []).append((number, parts[1]))
    by_id = decisions_by_id(store)
    for did, events in sorted(by_id.items()):
        sessions = sorted({e.session for e in events})
        if len(events) > 1:
            keep = min(events, key=lambda e: (e.ts, e.session))
            others = [e.session for e in events if e is not keep]
            problems.append(LedgerProblem(
                did, f"used by {len(events)} decisions: " + ", ".join(f"{e.session} ({e.title!r})" for e in events),
                "the earliest keeps its id; give the other one the next free id: "
                + "; ".join(f"logkit decision renumber {s} {did}" for s in others),
            ))
        listed = {s for _, s in ledger.get(did, [])}
        for sid in sessions:
            if sid not in listed:
                problems.append(LedgerProblem(did, f"{sid} records {did} but {path.name} does not list it",
                                              f"append the line: {did}<TAB>{sid}<TAB>title (or renumber it)"))
    for did, rows in sorted(ledger.items()):
        recorded = {e.session for e in by_id.get(did, [])}
        for number, sid in rows:
            if sid not in recorded:
                problems.append(LedgerProblem(f"{path}:{number}", f"{did} is listed for {sid}, which has no such decision",
                                              "delete that line, or copy the session in from the other host"))
    return problems


def renumber(store: Store, session_id: str, decision_id: str) -> str:
    """Give ``session_id``'s decision ``decision_id`` the next free id; returns the new id.

    Rewrites that session's ``decision`` line (and ``supersedes`` references to the old id inside
    the same session) and the ledger line, each by writing a new file and renaming it over the old
    one (:func:`logkit.files.rewrite`): a crash at any point leaves each file whole, old or new.
    Run it when nothing is recording into that session.
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
        new_id = _next_id(store)
        for index, chunk in enumerate(chunks):
            if index != target and not files.may_hold(chunk, b'"supersedes"'):
                continue
            data = files.decode(chunk)
            if data is None:
                continue  # a damaged line stays as it is
            if index == target:
                data["decision_id"] = new_id
                found.update(new_id=new_id, title=data.get("title", ""))
            elif data.get("supersedes") == decision_id:
                data["supersedes"] = new_id
            else:
                continue
            chunks[index] = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return b"\n".join(chunks)

    with store.locked():
        files.rewrite(handle.events_path, transform)
        new_id, title = found["new_id"], found["title"]
        path = ledger_path(store)
        old = re.compile(rf"^{re.escape(decision_id)}\t{re.escape(session_id)}\t".encode(), re.M)
        if path.exists() and old.search(path.read_bytes()):
            files.rewrite(path, lambda raw: old.sub(f"{new_id}\t{session_id}\t".encode(), raw, count=1))
        else:
            _append_ledger(store, _ledger_line(new_id, session_id, title))
    return new_id
