"""``logkit session ...`` and ``logkit schema``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import add_json, command, group, one_line, print_json, print_text, store

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the session and schema commands."""
    sessions = group(sub, "session", "start, list and show sessions")

    p = command(sessions, "start", cmd_session_start, help="start a new session and make it current")
    p.add_argument("title", help='what the session is about, e.g. "GLM-5 NVFP4 on 8x RTX PRO 6000"')
    p.add_argument("--goal", help="what would count as done")
    p.add_argument("--tag", action="append", default=[], dest="tags", help="a tag (repeatable)")
    p.add_argument("--id", dest="session_id", help="use this session id instead of DATE-slug")
    add_json(p)

    p = command(sessions, "list", cmd_session_list, help="list sessions")
    add_json(p)

    p = command(sessions, "show", cmd_session_show, help="show a session's events")
    p.add_argument("session_id", nargs="?", help="session id (default: the current session)")
    add_json(p)

    p = command(sessions, "use", cmd_session_use, help="make a session the current one")
    p.add_argument("session_id")

    p = command(sub, "schema", cmd_schema, help="print the JSON Schema of every event kind",
                description="print the JSON Schema of every event kind")
    p.add_argument("kind", nargs="?", help="only this kind (e.g. attempt)")
    p.add_argument("--list", action="store_true", help="list the event kinds")
    p.add_argument("--write", metavar="DIR", help="write schemas/<kind>.schema.json files into DIR")
    p.add_argument("--check", metavar="DIR", help="exit 1 if the files in DIR are stale")


def cmd_session_start(args: argparse.Namespace) -> int:
    handle = store(args).create(args.title, goal=args.goal, tags=args.tags, session_id=args.session_id)
    if args.json:
        print_json({"session": handle.id, "path": str(handle.dir)})
    else:
        print(f"started session {handle.id} ({handle.dir}); it is now current")
    return 0


def cmd_session_list(args: argparse.Namespace) -> int:
    from ..session_view import summaries

    st = store(args)
    rows = summaries(st.root)
    current = st.current()
    if args.json:
        print_json([{**row, "current": row["id"] == current} for row in rows])
        return 0
    if not rows:
        print(f"no sessions in {st.root}; start one with: logkit session start TITLE")
        return 0
    for row in rows:
        mark = "*" if row["id"] == current else " "
        print_text(f"{mark} {row['id']:<48} {row['attempts']:>4} attempts  {one_line(row['title'])}")
    return 0


def cmd_session_show(args: argparse.Namespace) -> int:
    from ..capture.journal import Journal
    from ..session_view import _line, render_rows, shown_events, to_json
    from ._common import _JSON_RAW

    st = store(args)
    handle = st.handle(args.session_id or st.current_or_fail())
    Journal(st.root, handle.id).reconcile()  # through the session view: no typed read
    # one line (or JSON element) per event is kept, never the events: bounded by the output itself
    shown: list[Any] = []
    take = (lambda e: shown.append(to_json(e))) if args.json else (lambda e: shown.append((e.ts, one_line(_line(e)))))
    for problem in shown_events(st.root, handle.id, take):
        print_text(f"logkit: warning: {problem}", file=sys.stderr)
    if args.json:
        text = "[\n" + ",\n".join(shown) + "\n]" if shown else "[]"
        sys.stdout.write(_JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n")
    else:
        print_text(render_rows(handle.id, shown))
    return 0


def cmd_session_use(args: argparse.Namespace) -> int:
    st = store(args)
    st.set_current(args.session_id)
    print(f"current session: {args.session_id}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .. import schema
    from ..errors import BadInput
    from ..events import EVENT_TYPES

    if args.list:
        for kind, cls in EVENT_TYPES.items():
            print(f"{kind:<12} {(cls.__doc__ or '').strip().splitlines()[0]}")
        return 0
    if args.write:
        for path in schema.write(Path(args.write)):
            print(path)
        return 0
    if args.check:
        stale = schema.stale(Path(args.check))
        if stale:
            print(f"stale schema files in {args.check}: {', '.join(stale)}", file=sys.stderr)
            print(f"  fix: logkit schema --write {args.check}", file=sys.stderr)
            return 1
        return 0
    schemas = schema.json_schemas()
    if args.kind:
        name = f"{args.kind}.schema.json"
        if name not in schemas:
            raise BadInput(f"unknown event kind {args.kind!r}", fix="one of: " + ", ".join(EVENT_TYPES))
        print_json(schemas[name])
    else:
        print_json(schemas)
    return 0
