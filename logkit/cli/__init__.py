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

#: Command modules, in the order their commands appear in ``logkit --help``, with the top-level
#: commands each registers (tests/test_cli.py keeps this honest). ``logkit run`` builds only its own
#: module's parser: argparse for every command would cost its start-up ~15 ms.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "core": ("session", "schema"),
    "capture": ("run",),
    "sweep": ("sweep",),
    "sglang": ("classify", "import", "bench"),
    "why": ("why",),
    "inspect": ("show", "compare", "export"),
    "reason": ("hypothesis", "todo", "decide", "decision", "note", "status", "record"),
    "site": ("build", "serve", "cite"),
    "agents": ("mcp", "hook"),
    "demo": ("demo",),
}


def _command_of(argv: list[str]) -> str | None:
    """The top-level command named in ``argv`` (skipping global options), if any."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--sessions" or word.startswith("--sessions="):
            i += 2 if word == "--sessions" else 1
        elif word.startswith("-"):
            return None  # --help, --version, or a typo: the full parser answers
        else:
            return word
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``logkit`` argument parser (with ``only``, just the module owning that command)."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="logkit",
        description="Record SGLang launches and benchmarks as typed events; build a knowledge base from them.",
        epilog="The sessions directory is --sessions, else $LOGKIT_SESSIONS, else ./sessions.",
    )
    parser.add_argument("--version", action="version", version=f"logkit {__version__}")
    parser.add_argument("--sessions", metavar="DIR", help="sessions directory (default $LOGKIT_SESSIONS or ./sessions)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    owners = [m for m, commands in COMMAND_MODULES.items() if only in commands] if only else []
    for name in owners or COMMAND_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(sub)
    return parser


def _not_utf8(words: list[str]) -> LogkitError | None:
    """The error for a word before ``--`` that is not UTF-8 (it would reach events, ids, pages)."""
    from ..errors import BadInput

    for number, word in enumerate(words, start=1):
        if word == "--":
            return None
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            shown = word.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return BadInput(f"argument {number} ('{shown}') is not valid UTF-8; nothing was recorded",
                            fix="pass it as UTF-8 text (check the terminal's locale: LANG=C.UTF-8)")
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one logkit command; returns the exit status."""
    words = sys.argv[1:] if argv is None else argv
    refused = _not_utf8(words)
    if refused is not None:
        print(f"logkit: error: {refused}", file=sys.stderr)
        return refused.exit_code
    parser = build_parser(_command_of(words))
    args = parser.parse_args(words)
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
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback (what was recorded stays recorded)
        print("logkit: interrupted", file=sys.stderr)
        return 130
