"""Helpers shared by the command modules: the store, JSON and text output, sub-command groups.

Text that came from users or logs (titles, labels, notes, log lines) may hold terminal escapes:
colours, cursor moves, an OSC 52 clipboard write, a ``\\r`` that hides what came before.
:func:`terminal_safe` shows every control character (C0 but newline and tab, DEL, C1, and the
bidirectional overrides) as a visible escape such as ``\\x1b``; :func:`print_json` escapes the ones
JSON leaves raw. The stored events are unchanged.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["add_json", "command", "group", "one_line", "print_json", "print_text", "store", "terminal_safe"]

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_JSON_RAW = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # json.dumps escapes < 0x20 itself


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character shown as an escape (newlines and tabs kept)."""
    return _CONTROL.sub(_visible, text)


def one_line(text: str) -> str:
    """:func:`terminal_safe` with newlines and tabs escaped too: a title holding ``\\n`` prints no fake line."""
    return _CONTROL_ALL.sub(lambda m: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(m.group(0)) or _visible(m), text)


def print_text(text: str, file: Any = None) -> None:
    """Print user-derived text to a terminal: control characters neutralised."""
    print(terminal_safe(text), file=file or sys.stdout)


def store(args: argparse.Namespace) -> Store:
    """The store named by --sessions / $LOGKIT_SESSIONS / ./sessions."""
    from ..reasoning.common import open_store  # lazily: pydantic is not needed to start `logkit run`

    # every event a command writes is redacted, not only those `logkit run` records
    return open_store(getattr(args, "sessions", None))


def add_json(parser: argparse.ArgumentParser) -> None:
    """Add the scripting-output flag."""
    parser.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(_JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n")


def command(sub: Any, name: str, func: Callable[[argparse.Namespace], int], **kwargs: Any) -> Any:
    """A command run by ``func``: ``sub.add_parser(name, **kwargs)``."""
    parser = sub.add_parser(name, **kwargs)
    parser.set_defaults(func=func)
    return parser


def group(sub: Any, name: str, help_text: str) -> Any:
    """A command with sub-commands of its own (``logkit session start``)."""
    parser = sub.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(_parser=parser)
    return parser.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
