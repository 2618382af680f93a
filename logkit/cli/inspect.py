"""``logkit show``, ``logkit compare`` and ``logkit export``: one attempt, two side by side, tidy tables."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ._common import add_json, command, print_json, print_text, store

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add this domain's commands."""
    p = command(sub, "show", cmd_show,
                help="one attempt whole: command, configuration, outcome, metrics, log tail",
                description="Show one attempt: its command, configuration, environment, outcome with its "
                "evidence lines, metrics, the verdicts and decisions citing it, its log and the log's tail.")
    p.add_argument("attempt", metavar="ATTEMPT", help="A3 (in the current session) or SESSION/A3")
    p.add_argument("--tail", type=int, default=20, metavar="N", help="lines of the log's end to print (default 20)")
    add_json(p)
    p = command(sub, "compare", cmd_compare,
                help="two attempts side by side: configuration diff, outcomes, metrics",
                description="Compare two attempts: what differs in their configuration (flags; the port and "
                "other run-specific values are not configuration), watched environment and versions, and "
                "their outcomes and metrics side by side.")
    p.add_argument("a", metavar="A", help="A3 or SESSION/A3")
    p.add_argument("b", metavar="B", help="A5 or SESSION/A5")
    add_json(p)
    p = command(sub, "export", cmd_export,
                help="tidy tables for pandas and notebooks: attempts, metrics, matrix cells",
                description="Write the knowledge base as one tidy table: one row per attempt, per metric "
                "or per matrix cell (backend value x architecture x model x versions), from the index.")
    p.add_argument("--what", choices=("attempts", "metrics", "matrix"), default="attempts",
                   help="the table (default attempts)")
    p.add_argument("--format", choices=("csv", "parquet", "jsonl"), default="csv", help="default csv")
    p.add_argument("--out", "-o", metavar="FILE", help="write here (default stdout; parquet needs a file)")


@contextlib.contextmanager
def _snapshot(args: argparse.Namespace) -> Iterator[tuple[Any, Any]]:
    from ..store.index import current

    st = store(args)
    with current(st.root) as snap:
        yield st, snap


def cmd_show(args: argparse.Namespace) -> int:
    from .. import attempt_view

    with _snapshot(args) as (st, snap):
        rec = attempt_view.load(snap, *attempt_view.resolve(args.attempt, st.current()))
        if args.json:
            print_json(attempt_view.show_json(rec, args.tail))
        else:
            print_text(attempt_view.show_text(rec, args.tail))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .. import attempt_view

    with _snapshot(args) as (st, snap):
        decisions = snap.decisions()
        a = attempt_view.load(snap, *attempt_view.resolve(args.a, st.current()), decisions=decisions)
        b = attempt_view.load(snap, *attempt_view.resolve(args.b, st.current()), decisions=decisions)
        c = attempt_view.compare(a, b)
    if args.json:
        print_json(c)
    else:
        print_text(attempt_view.compare_text(c))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .. import attempt_view
    from ..errors import BadInput

    if args.format == "parquet" and not args.out:
        raise BadInput("parquet is a binary file format, not for a terminal", fix="add --out FILE.parquet")
    from ..capture.redact import Redactor

    with _snapshot(args) as (_st, snap):
        rows = attempt_view.export_rows(snap, args.what)
        problems = snap.problems()
    # redacted as it was written, by the patterns of then (an older logkit's session, a teammate's): again
    redactor = Redactor()
    rows = [{k: redactor.text(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    for problem in problems:  # a line left out of the table is said, as `status` and `build` say it
        print(f"logkit: warning: {problem}", file=sys.stderr)
    import pandas as pd

    frame = pd.DataFrame(rows)
    out = Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise BadInput(f"{out.parent} is not a directory", fix="create it, or write --out elsewhere")
    if args.format == "parquet":
        try:
            frame.to_parquet(out, index=False)
        except ImportError as exc:
            raise BadInput("writing parquet needs pyarrow, which is not installed",
                           fix="pip install 'logkit[parquet]' (pyarrow), or use --format csv|jsonl") from exc
    else:
        text = frame.to_csv(index=False) if args.format == "csv" else (
            frame.to_json(orient="records", lines=True, force_ascii=False) if len(frame) else "")
        if out is None:
            sys.stdout.write(text)
            return 0
        out.write_text(text, encoding="utf-8")
    print(f"logkit: {len(frame)} {args.what} rows -> {out}", file=sys.stderr)
    return 0
