"""The command line: the only package that imports argparse.

Each command parses its flags, imports its implementation inside the handler, makes one library
call and prints. Commands are grouped by domain, one module each; a module exposes
``register(subparsers)``. :func:`main` is the one place that turns a :class:`LogkitError` into a
message and an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import LogkitError

__all__ = ["build_parser", "main"]

#: Command modules, in the order their commands appear in ``logkit --help``.
COMMAND_MODULES = ("core", "capture", "sglang", "reason", "site")


def build_parser() -> argparse.ArgumentParser:
    """The full ``logkit`` argument parser."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="logkit",
        description="Record SGLang launches and benchmarks as typed events; build a knowledge base from them.",
        epilog="The sessions directory is --sessions, else $LOGKIT_SESSIONS, else ./sessions.",
    )
    parser.add_argument("--version", action="version", version=f"logkit {__version__}")
    parser.add_argument("--sessions", metavar="DIR", help="sessions directory (default $LOGKIT_SESSIONS or ./sessions)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one logkit command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if handler is None:
        # `logkit` or `logkit hypothesis` with no sub-command: show the relevant help.
        (getattr(args, "_parser", None) or parser).print_help(sys.stderr)
        return 2
    try:
        return int(handler(args) or 0)
    except LogkitError as exc:
        print(f"logkit: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
