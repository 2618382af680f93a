"""``logkit hypothesis|todo|decide|decision|note|status|record``: recording the reasoning.

Each handler parses, imports its implementation from :mod:`logkit.reasoning` lazily, makes one
library call and prints. Every command takes ``--session ID`` (default: the current session) and
``--at TIME`` (default ``$LOGKIT_NOW``, else now) so generated sessions are reproducible, and
``--reconstructed "ACCOUNT"`` marks an event as reconstructed from a written account.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from ._common import add_json, command, group, one_line, print_json, print_text, store

__all__ = ["register"]

PRIORITIES = ("low", "medium", "high")


def _common(p: argparse.ArgumentParser, *, reconstructed_required: bool = False) -> None:
    p.add_argument("--session", dest="session_id", metavar="ID", help="session id (default: the current session)")
    p.add_argument("--at", metavar="TIME", help="timestamp, ISO 8601 (default $LOGKIT_NOW, else now)")
    p.add_argument(
        "--reconstructed", metavar="ACCOUNT", required=reconstructed_required,
        help='mark the event as reconstructed from a written account, e.g. "seed 000: msg 5976"',
    )


def register(sub: Any) -> None:
    """Add the reasoning commands."""
    hyp = group(sub, "hypothesis", "add, close and list the hypotheses of a session")
    p = command(hyp, "add", cmd_hypothesis_add, help="record a hypothesis; prints its id (H3)")
    p.add_argument("text", help='the claim, e.g. "flashinfer_trtllm MoE runs on SM120"')
    p.add_argument("--priority", choices=PRIORITIES, default="medium")
    p.add_argument("--tag", action="append", default=[], dest="tags", help="a tag (repeatable)")
    _common(p)
    add_json(p)
    for verb, verdict in (("confirm", "confirmed"), ("refute", "refuted"), ("inconclusive", "inconclusive")):
        p = hyp.add_parser(verb, help=f"close a hypothesis as {verdict}, citing the attempts that show it")
        p.add_argument("hypothesis", help="H3")
        p.add_argument("--evidence", action="append", default=[], metavar="A7[,A9]", help="attempt ids (repeatable)")
        p.add_argument("--because", help="why, in a sentence")
        _common(p)
        add_json(p)
        p.set_defaults(func=cmd_hypothesis_close, verdict=verdict)
    p = command(hyp, "list", cmd_hypothesis_list, help="list hypotheses with their verdicts")
    p.add_argument("--session", dest="session_id", metavar="ID")
    add_json(p)

    todo = group(sub, "todo", "import todo-list snapshots")
    p = command(todo, "import", cmd_todo_import,
                help='import a todowrite JSON file ({"todos": [...]} or a list) as a snapshot')
    p.add_argument("file")
    p.add_argument("--source", help="what to record as the snapshot's source (default: the file path)")
    _common(p)
    add_json(p)

    p = command(sub, "decide", cmd_decide, help="record a decision; prints its permanent id (DR-7K3FQ)",
                description='record a decision and print its permanent id (DR-7K3FQ: drawn from the record itself, '
                'never renumbered, safe to cite at once). Options: --option "NAME: why it lost (H2, A4)"; mark the '
                'winner(s) with --chosen NAME.')
    p.add_argument("title", nargs="?", help='e.g. "Use flashinfer_cutlass for MoE on SM120"')
    p.add_argument("--from-sweep", metavar="SW-ID",
                   help="propose a decision from a sweep (options = its cells, evidence = their attempts): writes a "
                   "draft to edit, recorded by --from-file")
    p.add_argument("--write", metavar="FILE", help="where --from-sweep writes its draft (default decision-SW-ID.toml)")
    p.add_argument("--from-file", metavar="FILE", help="record the decision of an (edited) --from-sweep draft")
    p.add_argument("--context", help="the situation that called for a decision")
    p.add_argument("--decision", help="what was decided, in a sentence")
    p.add_argument("--option", action="append", default=[], dest="options", metavar="'NAME: WHY (H2, A4)'",
                   help="an option considered and why it lost; trailing (H2, A4) cites evidence (repeatable)")
    p.add_argument("--chosen", action="append", default=[], metavar="NAME", help="the option(s) chosen (repeatable)")
    p.add_argument("--evidence", action="append", default=[], metavar="A7[,A9]", help="attempt ids (repeatable)")
    p.add_argument("--consequences", help="what follows from it")
    p.add_argument("--supersedes", metavar="DR-7K3FQ", help="the decision this one replaces")
    p.add_argument("--id", dest="decision_id", metavar="DR-0001",
                   help="keep the id a reconstructed record already has (needs --reconstructed)")
    p.add_argument("--status", choices=("proposed", "accepted", "superseded", "deprecated"), default="accepted")
    p.add_argument("--tag", action="append", default=[], dest="tags")
    _common(p)
    add_json(p)

    dec = group(sub, "decision", "list and check decision ids across the knowledge base")
    p = command(dec, "list", cmd_decision_list, help="every decision of the store")
    add_json(p)
    p = command(dec, "check", cmd_decision_check,
                help="find decision ids used twice (after a git merge) and ledger drift; exit 1 if any")
    add_json(p)
    p = command(dec, "renumber", cmd_decision_renumber, help="give one of two records sharing an id a longer form "
                "of its own id (the old id keeps resolving)")
    p.add_argument("session_id")
    p.add_argument("decision_id", help="DR-0004")

    p = command(sub, "note", cmd_note, help="record a note", description="record a note")
    p.add_argument("text")
    p.add_argument("--ref", action="append", default=[], dest="refs", help="A7, H3 or DR-0002 it is about (repeatable)")
    _common(p)

    p = command(sub, "status", cmd_status,
                help="the current session: open hypotheses, last attempts, running servers",
                description="the current session: open hypotheses, last attempts, running servers")
    p.add_argument("--session", dest="session_id", metavar="ID")
    p.add_argument("--last", type=int, default=5, help="how many attempts to show (default 5)")
    add_json(p)

    rec = group(sub, "record", "record a session, attempt or metric without running anything (reconstructions)")
    p = command(rec, "session", cmd_record_session, help="start a session reconstructed from a written account")
    p.add_argument("title")
    p.add_argument("--id", dest="new_id", help="session id (default DATE-slug)")
    p.add_argument("--goal")
    p.add_argument("--tag", action="append", default=[], dest="tags")
    p.add_argument("--at", metavar="TIME")
    p.add_argument("--reconstructed", metavar="ACCOUNT", required=True)
    add_json(p)

    p = command(rec, "attempt", cmd_record_attempt,
                help="record an attempt (and its outcome) that an account describes")
    p.add_argument("--cmd", required=True, help="the command line as the account gives it (shell-quoted)")
    p.add_argument("--role", choices=("launch", "bench", "smoke", "command"), help="default: from the command")
    p.add_argument("--status", required=True,
                   help="how it ended (an outcome status: ready, arch_mismatch, nan, garbage, ...)")
    p.add_argument("--label", help="what the attempt was, in the account's words")
    p.add_argument("--result", help="how it ended, in the account's words (the outcome label)")
    p.add_argument("--evidence-text", action="append", default=[], help="words the account quotes (repeatable)")
    p.add_argument("--tests", action="append", default=[], metavar="H3", help="hypotheses it tests (repeatable)")
    p.add_argument("--model", help="the model by name, when the command names none (e.g. GLM-5-NVFP4)")
    p.add_argument("--gpu", help='GPU name, e.g. "NVIDIA RTX PRO 6000 Blackwell"')
    p.add_argument("--compute-cap", help="e.g. 12.0")
    p.add_argument("--count", type=int, default=1, help="how many such GPUs")
    p.add_argument("--first-index", type=int, default=0, help="index of the first GPU (default 0)")
    p.add_argument("--package", action="append", default=[], metavar="NAME=VERSION")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--duration", type=float, help="seconds it ran, if the account says")
    _common(p, reconstructed_required=True)
    add_json(p)

    p = command(rec, "metric", cmd_record_metric, help="record a figure an account gives")
    p.add_argument("name", help="SGLang's key, e.g. output_throughput")
    p.add_argument("value", type=float)
    p.add_argument("--attempt", required=True, help="the attempt it belongs to (a launch or a bench)")
    p.add_argument("--unit", help="e.g. tok/s")
    p.add_argument("--label", action="append", default=[], dest="labels", metavar="KEY=VALUE")
    _common(p, reconstructed_required=True)
    add_json(p)


# --- helpers ----------------------------------------------------------------------------------


def _handle(args: argparse.Namespace) -> Any:
    return store(args).open(args.session_id)


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    from ..errors import BadInput

    out: dict[str, str] = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{flag} {value!r} is not KEY=VALUE", fix=f"e.g. {flag} max_concurrency=64")
        out[key.strip()] = val.strip()
    return out


def _by(ids: list[str]) -> str:
    return f" by {', '.join(ids)}" if ids else ""


def _typed(values: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, val in values.items():
        try:
            out[key] = int(val)
        except ValueError:
            out[key] = val
    return out


# --- handlers ---------------------------------------------------------------------------------


def cmd_hypothesis_add(args: argparse.Namespace) -> int:
    from ..reasoning import hypotheses

    event = hypotheses.add(_handle(args), args.text, priority=args.priority, tags=args.tags, at=args.at,
                           reconstructed=args.reconstructed)
    print_json({"id": event.short_id, "session": event.session}) if args.json else print(event.short_id)
    return 0


def cmd_hypothesis_close(args: argparse.Namespace) -> int:
    from ..reasoning import hypotheses
    from ..reasoning.common import split_ids

    event, earlier = hypotheses.close(_handle(args), args.hypothesis, args.verdict, evidence=split_ids(args.evidence),
                                      because=args.because, at=args.at, reconstructed=args.reconstructed)
    replaces = {"id": earlier.id, "verdict": earlier.verdict, "evidence": earlier.evidence} if earlier else None
    if args.json:
        print_json({"hypothesis": event.hypothesis, "verdict": event.verdict, "evidence": event.evidence,
                    "replaces": replaces})
    else:
        # how the earlier verdict is named: "confirmed by A2 on 2026-11-14 09:00"
        was = "" if earlier is None else (
            f" (replaces {earlier.verdict}{_by(earlier.evidence)} on {earlier.ts:%Y-%m-%d %H:%M})")
        print(f"{event.hypothesis} {event.verdict}{_by(event.evidence)}{was}")
    return 0


def cmd_hypothesis_list(args: argparse.Namespace) -> int:
    from ..reasoning.hypotheses import states

    st = store(args)
    handle = st.handle(args.session_id or st.current_or_fail())
    rows = [s.as_dict() for s in states(handle.read().events)]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no hypotheses in {handle.id}; add one with: logkit hypothesis add TEXT")
    for r in rows:
        was = f" (was {r['replaces']['verdict']}{_by(r['replaces']['evidence'])})" if r["replaces"] else ""
        text = one_line(r["text"])
        print_text(f"{r['id']:<4} {r['status']:<12} [{r['priority']}] {text}{_by(r['evidence'])}{was}")
    return 0


def cmd_todo_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..reasoning import todo

    path = Path(args.file)
    event, matches = todo.record_items(_handle(args), todo.parse(path), source=args.source or str(path), at=args.at,
                                       reconstructed=args.reconstructed)
    if args.json:
        print_json({"items": len(event.items), "matches": [m.__dict__ for m in matches]})
        return 0
    print(f"imported {len(event.items)} todo items into {event.session}:")
    for m, item in zip(matches, event.items, strict=True):
        target = f"-> {m.hypothesis} ({m.reason})" if m.hypothesis else f"   {m.reason}"
        print(f"  {m.index}. [{item.status}] {item.content}\n       {target}")
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..reasoning import decisions
    from ..reasoning.common import split_ids
    from ..sweep import decide

    if args.from_file:
        event = decide.accept(store(args), Path(args.from_file))
    elif args.from_sweep:
        path = decide.propose(store(args), args.from_sweep, Path(args.write or f"decision-{args.from_sweep}.toml"))
        print(path.read_text(encoding="utf-8"), end="")
        print(f"logkit: draft written to {path}; edit it, then record it: logkit decide --from-file {path}",
              file=sys.stderr)
        return 0
    elif not args.title:
        from ..errors import BadInput

        raise BadInput("a decision needs a title", fix='logkit decide "Use flashinfer_cutlass for MoE on SM120" ... '
                       "(or --from-sweep SW-ID)")
    else:
        event = decisions.record(
            _handle(args), args.title, context=args.context, decision=args.decision, options=args.options,
            chosen=args.chosen, evidence=split_ids(args.evidence), consequences=args.consequences,
            supersedes=args.supersedes, status=args.status, tags=args.tags, at=args.at,
            reconstructed=args.reconstructed, decision_id=args.decision_id,
        )
    print_json({"id": event.decision_id, "session": event.session}) if args.json else print(event.decision_id)
    return 0


def cmd_decision_list(args: argparse.Namespace) -> int:
    from ..reasoning.decisions import decisions_by_id, latest_per_session, supersession

    by_id = decisions_by_id(store(args))
    replaced = supersession(e for events in by_id.values() for e in events)
    rows = []
    for did, events in sorted(by_id.items(), key=lambda item: min(e.ts for e in item[1])):
        for sid, e in latest_per_session(events).items():
            later = replaced.get(did, [])
            rows.append({"id": did, "session": sid, "title": e.title, "status": "superseded" if later else e.status,
                         "recorded_status": e.status, "superseded_by": later})
    if args.json:
        print_json(rows)
    for r in rows if not args.json else []:
        status = r["status"] + _by(r["superseded_by"])
        print_text(f"{r['id']:<9} {r['session']:<44} [{status}] {one_line(r['title'])}")
    return 0


def cmd_decision_check(args: argparse.Namespace) -> int:
    from ..reasoning.decisions import check

    problems = check(store(args))
    if args.json:
        print_json([p.__dict__ for p in problems])
    else:
        print("\n".join(map(str, problems)) or "decision ids are unique and the ledger matches the sessions")
    return 1 if problems else 0


def cmd_decision_renumber(args: argparse.Namespace) -> int:
    from ..reasoning.decisions import renumber

    new_id = renumber(store(args), args.session_id, args.decision_id)
    print(f"{args.session_id}: {args.decision_id} is now {new_id} ({args.decision_id} still resolves); "
          "commit the session and sessions/DECISIONS.tsv")
    return 0


def cmd_note(args: argparse.Namespace) -> int:
    from ..reasoning import notes

    event = notes.record(_handle(args), args.text, refs=args.refs, at=args.at, reconstructed=args.reconstructed)
    print(f"noted in {event.session}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..reasoning.status import current_status, render

    data, problems = current_status(store(args), args.session_id, last=args.last)
    for problem in problems:
        print_text(f"logkit: warning: {problem}", file=sys.stderr)
    print_json(data) if args.json else print_text(render(_one_line_fields(data)))
    return 0


def _one_line_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The status with what users typed (titles, texts, labels) on one line each (a newline shown as ``\\n``)."""
    out = dict(data, title=one_line(data["title"]) if data.get("title") else data.get("title"))
    for key, field in (("hypotheses", "text"), ("attempts", "label"), ("decisions", "title"), ("todo", "content")):
        out[key] = [dict(row, **{field: one_line(row[field])}) if isinstance(row.get(field), str) else row
                    for row in data.get(key) or []]
    return out


def cmd_record_session(args: argparse.Namespace) -> int:
    from ..reasoning import record

    handle = record.session(store(args), args.title, session_id=args.new_id, goal=args.goal, tags=args.tags,
                            at=args.at, reconstructed=args.reconstructed)
    print_json({"session": handle.id}) if args.json else print(handle.id)
    return 0


def _role(argv: list[str]) -> str:
    """What ``logkit run`` would call this command line: capture.sglang.detect, the one reader of an argv."""
    from ..capture.sglang.detect import detect

    target = detect(argv)
    return target.kind if target is not None else "command"


def parse_launch(argv: list[str]) -> Any:
    """A reconstructed launch's config (:func:`logkit.launch.config.given_only`): the flags given, none resolved."""
    from ..capture.sglang.detect import detect
    from ..events import LaunchConfig
    from ..launch.config import given_only

    target = detect(argv)
    flags = list(target.args) if target is not None else argv[1:]
    return LaunchConfig.model_validate(given_only(flags))


def cmd_record_attempt(args: argparse.Namespace) -> int:
    from ..errors import BadInput
    from ..reasoning import record
    from ..reasoning.common import split_ids

    try:
        argv = shlex.split(args.cmd)
    except ValueError as exc:
        raise BadInput(f"--cmd {args.cmd!r}: {exc}", fix="quote it as a shell command line") from None
    role = args.role or _role(argv)
    env = record.environment(
        gpu=args.gpu, compute_cap=args.compute_cap, count=args.count, first_index=args.first_index,
        packages=_pairs(args.package, "--package"), env=_pairs(args.env, "--env"),
    )
    attempt, outcome = record.attempt(
        _handle(args), argv, role=role, status=args.status, label=args.label, outcome_label=args.result,
        evidence_text=args.evidence_text, tests=split_ids(args.tests), environment=env,
        launch=parse_launch(argv) if role == "launch" else None, at=args.at, duration_s=args.duration,
        reconstructed=args.reconstructed, model=args.model,
    )
    status = outcome.status if outcome else None
    print_json({"id": attempt.short_id, "status": status}) if args.json else print(attempt.short_id)
    return 0


def cmd_record_metric(args: argparse.Namespace) -> int:
    from ..reasoning import record

    event = record.metric(_handle(args), args.name, args.value, attempt_id=args.attempt, unit=args.unit,
                          labels=_typed(_pairs(args.labels, "--label")), at=args.at, reconstructed=args.reconstructed)
    print_json({"metric": event.name, "value": event.value}) if args.json else print(f"{event.name} = {event.value:g}")
    return 0
