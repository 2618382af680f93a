"""Helpers shared by the command modules: the store, JSON output, sub-command groups."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["add_json", "group", "print_json", "store"]


def store(args: argparse.Namespace) -> Store:
    """The store named by --sessions / $LOGKIT_SESSIONS / ./sessions."""
    from ..capture.redact import Redactor
    from ..store import Store  # lazily: pydantic is not needed to start `logkit run`

    # every event a command writes is redacted, not only those `logkit run` records
    return Store.from_env(getattr(args, "sessions", None), scrub=Redactor().scrub)


def add_json(parser: argparse.ArgumentParser) -> None:
    """Add the scripting-output flag."""
    parser.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def group(sub: Any, name: str, help_text: str) -> Any:
    """A command with sub-commands of its own (``logkit session start``)."""
    parser = sub.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(_parser=parser)
    return parser.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
