"""``logkit why [LOGFILE]``: was this failure seen before, and what was decided about it?"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import add_json, command, one_line, print_json, print_text, store

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add this domain's command."""
    p = command(
        sub, "why", cmd_why, help="has this failure been seen before? (a log file or a pasted error)",
        description="Classify a log (or an error pasted on stdin), then list every attempt in the knowledge "
        "base that failed the same way (same signature; for other_crash the same normalised error), "
        "with its configuration and the decision records that cite it.")
    p.add_argument("logfile", metavar="LOGFILE", nargs="?", help="the log; omit it (or give -) to read stdin")
    p.add_argument("--config", metavar="MKDOCS_YML", help="for the decision links' site_url (default ./mkdocs.yml)")
    add_json(p)


def cmd_why(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..capture.sglang.outcomes import classify_file, classify_stream
    from ..reasoning.why import as_json, cite_links, seen_before

    if args.logfile in (None, "-"):
        if sys.stdin.isatty():
            print("paste the error, then Ctrl-D:", file=sys.stderr)
        verdict = classify_stream(sys.stdin.buffer)
    else:
        verdict = classify_file(args.logfile)
    st = store(args)
    report = seen_before(st, verdict, None if args.logfile in (None, "-") else Path(args.logfile))
    links = cite_links(st.root, report, Path(args.config) if args.config else None)
    if args.json:
        print_json(as_json(report, links))
        return 0
    print_text(f"{report.status}: {one_line(report.label)}" + (f"  [{report.key}]" if report.key else ""))
    for n, text in report.evidence[-6:]:
        print_text(f"  {n:>6}: {one_line(text[:160])}")
    if report.key is None:
        print_text("\nNot a failure logkit can compare (no signature, no error line).")
        return 0
    if report.itself:
        print_text(f"\nThis log is {', '.join(report.itself)}'s own (not counted as seen before).")
    print_text(f"\nSeen before: {len(report.same)} attempt(s) failed the same way" + (":" if report.same else "."))
    for m in report.same:
        _print_match(m, links)
    if report.same_class:
        print_text(f"\nSame class ({report.status}), from accounts with no log to compare:")
        for m in report.same_class:
            _print_match(m, links)
    return 0


def _print_match(m: Any, links: dict[str, str]) -> None:
    print_text(f"  {m.ref}  {m.status}  {m.when}  {(m.label or '')[:100]}")
    if m.config:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(m.config.items()))
        print_text(f"      config: {shown[:300]}")
    for did, title, status, chosen in m.decisions:
        print_text(f"      decided: {did} ({status}) {title}" + (f"; chosen: {', '.join(chosen)}" if chosen else ""))
        print_text(f"      cite: {links[did]}")
    if not m.decisions:
        print_text("      no decision cites it")
