"""A plain parse of a launch argv into a :class:`~logkit.events.LaunchConfig`, for when SGLang's
own parser (``capture/sglang/args.py``) is not there.

Contract: ``--flag value`` and ``--flag=value`` become ``args[flag_with_underscores] = value``; a flag
followed by another flag (or nothing) is ``True``. Nothing is resolved: ``parser="plain"``,
``unresolved=True``, ``non_default`` is what was given, and the fingerprint holds the given flags
whose name contains ``backend`` plus the model path, so the refuted-fingerprint check still works.
"""

from __future__ import annotations

from typing import Any

from ..events import LaunchConfig

__all__ = ["plain"]


def _start(argv: list[str]) -> int:
    for index, token in enumerate(argv):
        if token.startswith("--"):
            return index
    return len(argv)


def plain(argv: list[str]) -> LaunchConfig:
    """The flags of ``argv`` as given, unresolved."""
    given: dict[str, Any] = {}
    tokens = argv[_start(argv):]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.startswith("--"):
            continue
        name, sep, value = token[2:].partition("=")
        key = name.replace("-", "_")
        if sep:
            given[key] = value
        elif index < len(tokens) and not tokens[index].startswith("--"):
            given[key] = tokens[index]
            index += 1
        else:
            given[key] = True
    fingerprint = {k: v for k, v in given.items() if "backend" in k or k in ("model_path", "model")}
    host = given.get("host")
    port = given.get("port")
    return LaunchConfig(
        parser="plain", unresolved=True, args=dict(given), non_default=dict(given), fingerprint=fingerprint,
        host=str(host) if host else None, port=int(port) if isinstance(port, str) and port.isdecimal() else None,
    )
