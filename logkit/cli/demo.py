"""``logkit demo [DIR]``: a complete bring-up without a GPU, on stand-in servers."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import command

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the demo command."""
    p = command(sub, "demo", cmd_demo, help="a whole bring-up without a GPU, on stand-in servers (about a minute)",
                description="In a fresh DIR: a session, hypotheses, a sweep over stand-in SGLang servers that "
                "crash, print garbage, run out of memory and work, a benchmark, a decision and the built site, "
                "each step the real logkit command, printed as it runs. The stand-ins are logkit/demo/standin/.")
    p.add_argument("dir", nargs="?", default="logkit-demo", metavar="DIR",
                   help="a new or empty directory (default ./logkit-demo)")


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    return run_demo(Path(args.dir), say=lambda line: print(line, flush=True))
