"""A launch config from an argv: the one builder used by ``logkit run``, ``logkit import`` and
``logkit record attempt --reconstructed``.

Contract:

* :func:`for_run` (the runner, in the command's own interpreter): with the parser's spec cached, an
  in-process :func:`~.sglang.quick_parse` that refuses what SGLang would, leaving a
  :class:`~.sglang.Background` full parse to start once preflight passed; without, one full parse
  (seconds) that caches the spec; without SGLang, a plain parse (``parser="plain"``, ``unresolved``).
* :func:`for_check` (the pre-launch check): the runner's, or without running the interpreter the
  cached spec's quick parse, else a plain parse.
* :func:`given_only` (imported logs, reconstructed accounts): only the flags given, named and typed
  by the SGLang installed beside logkit (``unresolved``); flags SGLang refuses are kept as given.
* :func:`printed_config` (a launch seen only through its output): the ``server_args=ServerArgs(...)``
  line's values (``parser="printed"``), fingerprinted by those that differ from the installed
  SGLang's defaults (all of them with no SGLang here).
* Every path fingerprints by one rule (:func:`~.flags.fingerprint` of the flags given, typed by the
  spec), so a captured, an imported and a reconstructed attempt of one argv share it. Configs are
  plain dicts shaped like :class:`~logkit.events.LaunchConfig` (no pydantic here).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from . import flags as fl
from . import sglang as sg

__all__ = ["NO_MODEL", "Parsed", "for_check", "for_run", "from_full", "given_only", "plain_config", "printed_args",
           "printed_config", "spec_for", "start_background", "valid_port"]

#: Fed to SGLang's parser when a record gives no model path (the parser requires one) and dropped again.
NO_MODEL = "<model path not given>"


class Parsed:
    """A launch config (dict), or the reason SGLang refuses the flags, and what else the parse learnt."""

    __slots__ = ("config", "error", "packages", "background", "notes", "quick")

    def __init__(self, config: dict[str, Any], error: str | None = None, packages: dict[str, str] | None = None,
                 notes: list[str] | None = None, quick: bool = False) -> None:
        self.config, self.error, self.packages = config, error, packages
        self.notes = [] if notes is None else notes
        self.quick = quick  # the cached spec answered: SGLang's full parse has not run yet
        self.background: sg.Background | None = None  # that full parse, running beside the launch


def valid_port(value: Any) -> int | None:
    """A port number from a parsed flag value, or None when it names no port ("abc", "²", nan, 1e309, -1)."""
    try:
        port = int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError, OverflowError):
        return None
    return port if port is not None and 0 <= port <= 65535 else None


def _config(parser: str, version: str | None, unresolved: bool, args: dict[str, Any], non_default: dict[str, Any],
            given: dict[str, Any]) -> dict[str, Any]:
    host = args.get("host")
    return {"parser": parser, "sglang_version": version, "unresolved": unresolved, "args": args,
            "non_default": non_default, "fingerprint": fl.fingerprint(given),
            "host": str(host) if host is not None else None, "port": valid_port(args.get("port"))}


def plain_config(flag_words: list[str], version: str | None = None) -> dict[str, Any]:
    """The flags as given, unresolved (no SGLang to ask, or SGLang refused them)."""
    given = fl.plain_parse(flag_words)
    return _config("plain", version, True, given, dict(given), given)


def _from_spec(given: dict[str, Any], spec: dict[str, Any], version: str | None) -> dict[str, Any]:
    defaults = spec.get("defaults") or {}
    args = {**{k: v for k, v in defaults.items() if k != "help"}, **given}
    non_default = {k: v for k, v in args.items() if k not in defaults or v != defaults[k]}
    return _config("sglang", version, False, args, non_default, given)


def from_full(result: dict[str, Any], flag_words: list[str], spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The config of SGLang's full parse (``_argscript.py`` output), fingerprinted by the one rule."""
    if not result.get("ok"):
        return None
    args, defaults = result.get("args") or {}, result.get("defaults") or {}
    given = {k: args[k] for k in result.get("given") or [] if k in args}
    if spec is not None:  # the fingerprint's values typed exactly as the quick parse types them
        quick, _ = sg.quick_parse(flag_words, {**spec, "actions": _optional(spec)})
        if quick is not None:
            given = quick
    non_default = {k: v for k, v in args.items() if k in defaults and v != defaults[k]}
    return _config("sglang", result.get("version"), False, args, non_default, given)


def _optional(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**a, "required": False} for a in spec["actions"]]


def _refusal(error: str, spec: dict[str, Any] | None) -> str:
    hint = sg.suggest(error, spec)
    return f"{error}; {hint}" if hint else error


def for_run(flag_words: list[str], python: str | None) -> Parsed:
    """The config of a launch about to run with ``python`` (see the module contract)."""
    if not python:
        return Parsed(plain_config(flag_words), notes=[_NO_SGLANG])
    hit = sg.cached_spec(python)
    if hit is not None:  # warm: nothing runs in the interpreter before the child starts
        spec, seen = hit
        version, packages = seen["version"], seen.get("packages")
        given, error = sg.quick_parse(flag_words, spec)
        if error is not None:
            return Parsed(plain_config(flag_words, version), _refusal(error, spec), packages)
        # the full parse is started by the caller once preflight passed: start_background
        return Parsed(_from_spec(given or {}, spec, version), None, packages, quick=True)
    probed = sg.probe(python)
    if not probed or not probed.get("version"):
        return Parsed(plain_config(flag_words), packages=(probed or {}).get("packages"), notes=[_NO_SGLANG])
    version, packages = probed["version"], probed.get("packages")
    result = sg.full_parse(flag_words, python, spec=True)
    if result is None or str(result.get("error") or "").startswith("import:") or not result.get("defaults"):
        why = (result or {}).get("error") or "it did not answer"
        return Parsed(plain_config(flag_words, version), packages=packages,
                      notes=[f"SGLang's parser could not run in the command's interpreter ({why}): flags recorded as given (unresolved)"])
    spec = result.get("spec")
    if spec is not None:
        sg.store_spec(python, probed, spec)
    if not result.get("ok"):
        return Parsed(plain_config(flag_words, version), _refusal(str(result.get("error")), spec), packages)
    config = from_full(result, flag_words, spec)
    assert config is not None
    return Parsed(config, None, packages)


_NO_SGLANG = "SGLang is not importable in the command's interpreter: flags recorded as given (unresolved)"


def for_check(flag_words: list[str], python: str | None, *, run_parser: bool = True) -> Parsed:
    """:func:`for_run`'s config, nothing started beside it; without ``run_parser`` nothing runs in ``python``."""
    if not run_parser and (not python or sg.cached_spec(python) is None):
        return Parsed(plain_config(flag_words), notes=[_NOT_PARSED])
    return for_run(flag_words, python)


_NOT_PARSED = "SGLang's parser has not run for this interpreter yet: flags compared as given (unresolved)"


def start_background(parsed: Parsed, flag_words: list[str], python: str) -> None:
    """Start SGLang's full parse beside the launch when the cached spec answered (no-op otherwise)."""
    if parsed.quick and parsed.background is None:
        parsed.background = sg.Background(flag_words, python, parsed.config.get("sglang_version"))


def spec_for(python: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(spec, sglang version)`` of SGLang's parser in ``python`` (cached, else one full parse), or ``(None, None)``."""
    hit = sg.cached_spec(python)
    if hit is not None:
        return hit[0], hit[1]["version"]
    probed = sg.probe(python)
    if not probed or not probed.get("version"):
        return None, None
    result = sg.full_parse(["--model-path", NO_MODEL], python, spec=True)
    spec = (result or {}).get("spec")
    if spec is not None:
        sg.store_spec(python, probed, spec)
    return spec, probed["version"]


def given_only(flag_words: list[str]) -> dict[str, Any]:
    """A config of only the flags given, named and typed by the installed SGLang (see the contract)."""
    spec, _version = spec_for(sys.executable)  # the SGLang installed beside logkit
    given = None
    if spec is not None:
        given, _error = sg.quick_parse(flag_words, {**spec, "actions": _optional(spec)})
    if given is None:
        return plain_config(flag_words)
    return _config("sglang", None, True, dict(given), dict(given), given)


def printed_args(line: str) -> dict[str, Any] | None:
    """The literal fields of a printed ``ServerArgs(...)`` repr (one cut off is left out), or None without one."""
    import ast
    import re

    start = line.find("ServerArgs(")
    if start < 0:
        return None
    body = line[start + len("ServerArgs("):].rstrip()
    with contextlib.suppress(SyntaxError, AssertionError, RecursionError, MemoryError):
        call = ast.parse("f(" + body.removesuffix(")") + ")", mode="eval").body
        assert isinstance(call, ast.Call)
        out: dict[str, Any] = {}
        for kw in call.keywords:
            try:
                out[str(kw.arg)] = ast.literal_eval(kw.value)
            except ValueError:
                continue
        return out
    # A line cut short (a pasted excerpt): take each `name=value` that parses on its own.
    out = {}
    marks = list(re.finditer(r"(?:^|, )([A-Za-z_]\w*)=", body))
    for m, nxt in zip(marks, [*marks[1:], None], strict=False):
        raw = body[m.end(): nxt.start() if nxt else len(body)]
        try:
            out[m.group(1)] = ast.literal_eval(raw.removesuffix(")") if nxt is None else raw)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            continue
    return out or None


def printed_config(line: str, *, defaults: bool = True) -> dict[str, Any] | None:
    """A config from a printed ``ServerArgs(...)`` line, or None; ``defaults=False`` keeps every field, unresolved."""
    args = printed_args(line)
    if args is None:
        return None
    spec = spec_for(sys.executable)[0] if defaults else None  # the SGLang installed beside logkit: its defaults
    known = {k: v for k, v in ((spec or {}).get("defaults") or {}).items() if k != "help"}
    non_default = {k: v for k, v in args.items() if k not in known or v != known[k]}  # no defaults: all
    return _config("printed", None, not known, args, non_default, non_default)
