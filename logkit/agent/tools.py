"""What each tool of ``logkit mcp`` answers: a thin call into the library the CLI calls.

Contract:

* :class:`Tools` holds the sessions directory (``--sessions``, else ``$LOGKIT_SESSIONS``, else
  ./sessions) and opens the store per call (:func:`~logkit.reasoning.common.open_store`: every event
  written is redacted), so what another process recorded meanwhile is seen.
* Each method makes the call the matching CLI command makes (named in its docstring, the tool's
  description) and returns a JSON-ready dict; the writers write to the current session unless given
  one; ``draft_decision`` checks a decision as ``logkit decide`` would and writes nothing.
* Bad input raises :class:`~logkit.errors.LogkitError` with the CLI's "fix:" text. :func:`reply` is
  the one way an answer or an error leaves: secrets redacted
  (:meth:`~logkit.capture.redact.Redactor.scrub`), absolute paths shown relative to the sessions
  directory's parent (``sessions/...``) or the home directory (``~/...``).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

__all__ = ["DRAFT_FIELDS", "Tools", "reply"]

#: what a decision draft holds (the arguments of ``logkit decide``)
DRAFT_FIELDS = ("title", "context", "decision", "options", "chosen", "evidence", "consequences", "supersedes",
                "status", "tags")


class Tools:
    """The MCP tools over one sessions directory."""

    def __init__(self, sessions: str | None = None) -> None:
        from ..store.files import root

        self.root = root(sessions)
        self.sessions = str(self.root)

    def _store(self) -> Any:
        from ..reasoning.common import open_store

        return open_store(self.sessions)

    def _handle(self, session: str | None) -> Any:
        return self._store().open(session)

    # --- reading -------------------------------------------------------------------------------

    def why(self, text: str) -> dict[str, Any]:
        """``logkit why`` of a pasted error or log excerpt."""
        from ..capture.sglang.outcomes import classify_stream
        from ..reasoning.why import as_json, cite_links, seen_before

        verdict = classify_stream(io.BytesIO(text.encode("utf-8", "surrogateescape")))
        report = seen_before(self._store(), verdict, None)
        return as_json(report, cite_links(self.root, report))

    def check_launch(self, argv: list[str] | str, arch: str | None = None) -> dict[str, Any]:
        """The pre-launch check of each SGLang launch in ``argv`` (a list of words, or a shell line)."""
        from ..errors import BadInput
        from ..reasoning.prelaunch import VERDICTS, check_argv
        from .hooks import launches, unwrap

        if isinstance(argv, str):
            found = launches(argv)
        elif isinstance(argv, list) and all(isinstance(w, str) for w in argv) and argv:
            found = [unwrap(list(argv))]
        else:
            raise BadInput("check_launch needs the command: a list of words or a shell line",
                           fix='e.g. ["python", "-m", "sglang.launch_server", "--model-path", "M", '
                               '"--moe-runner-backend", "flashinfer_trtllm"]')
        answers = []
        for words, wrapped, yes in found:
            answer = check_argv(words, self.sessions, arch=arch) if words else None
            if answer is not None:
                answers.append({**answer, "wrapped_in_logkit_run": wrapped, "yes": yes})
        verdicts = [a["verdict"] for a in answers]
        return {"launches": answers,
                "verdict": next((v for v in VERDICTS if v in verdicts), None) if answers else "not_a_launch"}

    def working_configurations(self, model: str | None = None, gpu: str | None = None) -> dict[str, Any]:
        """The working-configuration pages of the site, as data (``model``, ``gpu``: a part of the name)."""
        from .pages import working_configurations

        pages = working_configurations(self.root, model, gpu)
        return {"pages": pages, "resources": [f"logkit://configs/{p['id']}" for p in pages]}

    def matrix(self, backend: str | None = None, arch: str | None = None) -> dict[str, Any]:
        """The site's backend matrix cells (``backend``: an axis or value, or a part of one)."""
        from .pages import matrix_cells

        return {"cells": matrix_cells(self.root, backend, arch)}

    def status(self, session: str | None = None, last: int = 5) -> dict[str, Any]:
        """``logkit status --json``: open hypotheses, todo, last attempts, proposals, decisions."""
        from ..reasoning.status import current_status

        data, problems = current_status(self._store(), session, last=last)
        return {**data, "problems": problems}

    def cite(self, decision_id: str) -> dict[str, Any]:
        """``logkit cite``: the Markdown link to a decision record."""
        from ..builder.cite import cite

        notes: list[str] = []
        link = cite(self.root, decision_id, warn=notes.append)
        return {"link": link, "notes": notes, "resource": f"logkit://decisions/{decision_id.strip()}"}

    # --- writing -------------------------------------------------------------------------------

    def add_hypothesis(self, text: str, priority: str = "medium", tags: list[str] | None = None,
                       session: str | None = None) -> dict[str, Any]:
        """``logkit hypothesis add``."""
        from ..reasoning import hypotheses

        event = hypotheses.add(self._handle(session), text, priority=priority, tags=tags or [])
        return {"id": event.short_id, "session": event.session}

    def record_verdict(self, hypothesis: str, verdict: str, evidence: list[str] | None = None,
                       because: str | None = None, session: str | None = None) -> dict[str, Any]:
        """``logkit hypothesis confirm|refute|inconclusive``."""
        from ..reasoning import hypotheses
        from ..reasoning.common import split_ids

        event, earlier = hypotheses.close(self._handle(session), hypothesis, verdict, evidence=split_ids(evidence),
                                          because=because)
        replaces = {"id": earlier.id, "verdict": earlier.verdict, "evidence": earlier.evidence} if earlier else None
        return {"hypothesis": event.hypothesis, "verdict": event.verdict, "evidence": event.evidence,
                "replaces": replaces}

    def import_todos(self, todos: Any, session: str | None = None) -> dict[str, Any]:
        """``logkit todo import`` of a todowrite list (``{"todos": [...]}``, a list, or its JSON text)."""
        import json

        from ..errors import BadInput
        from ..reasoning import todo

        if isinstance(todos, str):
            try:
                todos = json.loads(todos)
            except json.JSONDecodeError as exc:
                raise BadInput(f"todos:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})",
                               fix='give {"todos": [{"content": "...", "status": "pending"}]}') from None
        items = todo.parse_data(todos, "todos")
        event, matches = todo.record_items(self._handle(session), items, source="todowrite (logkit mcp)")
        return {"session": event.session, "items": len(event.items), "matches": [m.__dict__ for m in matches]}

    def note(self, text: str, refs: list[str] | None = None, session: str | None = None) -> dict[str, Any]:
        """``logkit note``."""
        from ..reasoning import notes

        event = notes.record(self._handle(session), text, refs=refs or [])
        return {"session": event.session, "noted": event.text, "refs": event.refs}

    def draft_decision(self, title: str, context: str | None = None, decision: str | None = None,
                       options: list[str] | None = None, chosen: list[str] | None = None,
                       evidence: list[str] | None = None, consequences: str | None = None,
                       supersedes: str | None = None, status: str = "accepted", tags: list[str] | None = None,
                       session: str | None = None) -> dict[str, Any]:
        """``logkit decide``'s checks, nothing written: the record it would be, and the draft for ``record_decision``."""
        from ..reasoning import decisions
        from ..reasoning.common import split_ids

        fields = {"title": title, "context": context, "decision": decision, "options": list(options or []),
                  "chosen": list(chosen or []), "evidence": split_ids(evidence), "consequences": consequences,
                  "supersedes": supersedes, "status": status, "tags": list(tags or [])}
        handle = self._handle(session)
        event = decisions.draft(handle, **fields)
        preview = event.model_dump(mode="json", exclude={"id", "ts", "kind", "provenance"}, exclude_none=True)
        return {"draft": {**fields, "session": handle.id}, "preview": preview, "written": False,
                "next": "record it with record_decision(draft); the id is drawn again when it is written"}

    def record_decision(self, draft: dict[str, Any]) -> dict[str, Any]:
        """``logkit decide`` of a draft (as ``draft_decision`` returned it, edited or not)."""
        from ..errors import BadInput
        from ..reasoning import decisions

        if not isinstance(draft, dict) or not isinstance(draft.get("title"), str):
            raise BadInput("record_decision needs the draft draft_decision returned (an object with a title)",
                           fix="call draft_decision first and pass its 'draft' as it is (or edited)")
        unknown = set(draft) - {*DRAFT_FIELDS, "session"}
        if unknown:
            raise BadInput(f"the draft has unknown field(s) {', '.join(sorted(unknown))}",
                           fix=f"use only: {', '.join(DRAFT_FIELDS)}, session")
        fields = {k: draft[k] for k in DRAFT_FIELDS if k in draft and draft[k] is not None}
        event = decisions.record(self._handle(draft.get("session")), fields.pop("title"), **fields)
        return {"id": event.decision_id, "session": event.session, "resource": f"logkit://decisions/{event.decision_id}"}


def reply(value: Any, root: Path) -> Any:
    """``value`` as it may leave for an agent: secrets redacted, absolute paths made relative (see the contract)."""
    from ..capture.redact import Redactor

    prefixes = [(str(root.resolve().parent) + os.sep, "")]  # (absolute prefix, shown as), longest first
    home = os.path.expanduser("~")
    if home and home != os.sep:
        prefixes.append((home.rstrip(os.sep) + os.sep, "~" + os.sep))
    prefixes.sort(key=lambda p: len(p[0]), reverse=True)

    def relative(item: Any) -> Any:
        if isinstance(item, str):
            for prefix, shown in prefixes:
                item = item.replace(prefix, shown)
            return item
        if isinstance(item, dict):
            return {k: relative(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [relative(v) for v in item]
        return item

    return relative(Redactor().scrub(value))
