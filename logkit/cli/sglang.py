"""Commands of the sglang domain: ``logkit classify``, ``logkit import``, ``logkit bench parse``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import add_json, command, group, one_line, print_json, print_text, store

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add this domain's commands."""
    p = command(sub, "classify", cmd_classify, help="classify an SGLang log written without logkit",
                description="Classify how an SGLang launch ended, from its log file alone.")
    p.add_argument("logfile", metavar="LOGFILE")
    add_json(p)

    p = command(sub, "import", cmd_import, help="add an old SGLang log to a session as an attempt",
                description="Copy LOGFILE (redacted) into the session's logs/ and record it as an "
                "attempt with its classified outcome (provenance: imported).")
    p.add_argument("logfile", metavar="LOGFILE")
    p.add_argument("--cmd", required=True, help='the command that wrote the log: "python -m sglang.launch_server ..."')
    p.add_argument("--session", metavar="ID", help="the session (default: the current one)")
    add_json(p)

    bench = group(sub, "bench", "SGLang benchmark results")
    p = command(bench, "parse", cmd_bench_parse, help="parse a saved bench output or JSONL record",
                description="Parse sglang.benchmark.serving's --output-file JSONL or its printed "
                "'Serving Benchmark Result' block.")
    p.add_argument("file", metavar="FILE")
    add_json(p)


def cmd_classify(args: argparse.Namespace) -> int:
    from ..capture.sglang.outcomes import classify_file

    d = classify_file(args.logfile)
    data = {"status": d.status, "label": d.label, "signature": d.signature,
            "evidence": [e.model_dump() for e in d.evidence], "ready": d.ready}
    if args.json:
        print_json(data)
        return 0
    print_text(f"{d.status}: {d.label}" + (" (was ready)" if d.ready and d.status != "ready" else ""))
    for e in d.evidence[-8:]:
        print_text(f"  {e.line:>6}: {one_line(e.text[:160])}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ..capture.sglang.importer import import_log

    attempt, outcome = import_log(store(args), args.logfile, args.cmd, args.session)
    if args.json:
        print_json({"attempt": attempt.model_dump(mode="json", exclude_none=True),
                    "outcome": outcome.model_dump(mode="json", exclude_none=True)})
        return 0
    print_text(f"{attempt.session}/{attempt.short_id}: {outcome.status}: {outcome.label} (log {attempt.log.path if attempt.log else '-'})")
    return 0


def cmd_bench_parse(args: argparse.Namespace) -> int:
    from ..capture.sglang.bench import parse_file

    r = parse_file(args.file)
    if args.json:
        print_json({"metrics": r.metrics, "labels": r.labels})
        return 0
    for k, v in r.labels.items():
        print(f"{k}: {v}")
    for k, v in r.metrics.items():
        print(f"{k:<36} {v:g}")
    sys.stdout.flush()
    return 0
