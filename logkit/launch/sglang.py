"""SGLang's own flag parser, called in the command's interpreter, and its cache.

Contract:

* :func:`probe` runs ``_argscript.py --probe`` in ``python`` (tens of ms).
* :func:`cached_spec` returns the parser's options from ``$XDG_CACHE_HOME/logkit/sglang-parser/``
  (default ``~/.cache``), one entry per interpreter path, valid while the interpreter's mtime, the
  sglang version and the probe's ``stamps`` are unchanged (checked with ``stat``: a warm launch runs
  nothing before the child starts). A damaged, foreign or mismatched cache file is rebuilt, never
  trusted; a cache that cannot be written is skipped.
* :func:`full_parse` runs SGLang's parser itself (imports SGLang: ~3 s), with ``spec=True`` the
  spec too. :class:`Background` runs the same parse as a niced child beside the launch.
* :func:`quick_parse` parses flags with an argparse parser rebuilt from the spec, in logkit's own
  process: SGLang's names, aliases, prefix abbreviations, ``int``/``float`` types, choices,
  required flags and SGLang's message on refusal (values of other types stay strings).
  :func:`suggest` names the nearest valid choice or flag: ``did you mean flashinfer_cutlass?``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from ._argscript import _Parser, _Refused  # the one refusing parser, also run inside the command's interpreter

__all__ = ["Background", "cache_dir", "cached_spec", "forget", "full_parse", "probe", "quick_parse", "store_spec",
           "suggest"]

SCRIPT = Path(__file__).with_name("_argscript.py")
TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 10.0
CACHE_FORMAT = 1  # bumped when the spec's shape changes: older cache files are then rebuilt
_TYPES: dict[str, Any] = {"int": int, "float": float, "str": str}


def cache_dir(env: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/logkit/sglang-parser`` (``~/.cache`` without it)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return Path(base) / "logkit" / "sglang-parser"


def probe(python: str, timeout: float = PROBE_TIMEOUT_S) -> dict[str, Any] | None:
    """The sglang version, ``server_args.py`` mtime and package versions in ``python``; None if it cannot run."""
    try:
        proc = subprocess.run([python, "-I", str(SCRIPT), "--probe"], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired, ValueError):  # ValueError: output that is not UTF-8
        return None
    return _decode(proc.stdout)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _path(python: str, env: dict[str, str] | None = None) -> Path:
    digest = hashlib.sha256(python.encode()).hexdigest()[:24]
    return cache_dir(env) / f"{digest}.json"


def _valid(spec: Any) -> bool:
    if not isinstance(spec, dict) or not isinstance(spec.get("actions"), list) or not spec["actions"]:
        return False
    return all(isinstance(a, dict) and isinstance(a.get("opts"), list) and a["opts"]
               and all(isinstance(o, str) and o.startswith("-") for o in a["opts"])
               and isinstance(a.get("dest"), str) and isinstance(a.get("action"), str)
               and (a.get("choices") is None or isinstance(a["choices"], list)) for a in spec["actions"]) \
        and isinstance(spec.get("prog"), str) and isinstance(spec.get("defaults"), dict)


def cached_spec(python: str, probed: dict[str, Any] | None = None,
                env: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(spec, probe)`` cached for ``python`` (see the contract), or None; with ``probed`` its version must match."""
    try:
        data = json.loads(_path(python, env).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    seen = data.get("probe") if isinstance(data, dict) else None
    if (not isinstance(seen, dict) or data.get("format") != CACHE_FORMAT or data.get("python") != python
            or not seen.get("version") or not isinstance(seen.get("stamps"), dict)
            or data.get("python_mtime") != _mtime(python) or not _valid(data.get("spec"))
            or any(_mtime(path) != stamp for path, stamp in seen["stamps"].items())  # upgraded or reinstalled
            or (probed is not None
                and (probed.get("version"), probed.get("stamp")) != (seen["version"], seen.get("stamp")))):
        return None
    return data["spec"], seen


def store_spec(python: str, probed: dict[str, Any], spec: dict[str, Any], env: dict[str, str] | None = None) -> None:
    """Write ``spec`` to the cache (atomically); a cache that cannot be written is skipped."""
    if not probed.get("version") or not _valid(spec) or _mtime(python) is None:
        return
    path = _path(python, env)
    entry = {"format": CACHE_FORMAT, "python": python, "python_mtime": _mtime(python),
             "probe": {k: probed.get(k) for k in ("version", "stamp", "stamps", "packages")}, "spec": spec}
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entry), encoding="utf-8")
        os.replace(tmp, path)


def forget(python: str, env: dict[str, str] | None = None) -> None:
    """Drop ``python``'s cache entry (the full parse saw another SGLang than the cache)."""
    with contextlib.suppress(OSError):
        _path(python, env).unlink()


def _request(flags: list[str], spec: bool) -> str:
    return json.dumps({"flags": flags, "spec": spec})


def _decode(stdout: str) -> dict[str, Any] | None:
    line = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    try:
        data = json.loads(line) if line.startswith("{") else None
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("spec"), dict):
        data["spec"]["defaults"] = data.get("defaults") or {}
    return data if isinstance(data, dict) else None


def full_parse(flags: list[str], python: str, *, spec: bool = False, timeout: float = TIMEOUT_S) -> dict[str, Any] | None:
    """SGLang's own parse of ``flags`` in ``python`` (see ``_argscript.py``); None if it could not run."""
    try:
        proc = subprocess.run([python, "-I", str(SCRIPT)], input=_request(flags, spec), capture_output=True,
                              text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return _decode(proc.stdout)


def _nice() -> None:  # pragma: no cover - runs in the forked child
    with contextlib.suppress(OSError):
        os.nice(5)


class Background:
    """SGLang's full parse running beside the launch (niced, so the server's start-up comes first)."""

    def __init__(self, flags: list[str], python: str, expect_version: str | None = None) -> None:
        self.python = python
        self.expect_version = expect_version
        self.proc: subprocess.Popen[str] | None = None
        self._result: dict[str, Any] | None = None
        self._done = False
        try:
            self.proc = subprocess.Popen([python, "-I", str(SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, preexec_fn=_nice)
            assert self.proc.stdin is not None
            self.proc.stdin.write(_request(flags, False))  # small: well under a pipe's buffer
            self.proc.stdin.close()
            self.proc.stdin = None  # closed: communicate() must not flush it
        except (OSError, ValueError):
            self.proc = None

    def result(self, timeout: float = TIMEOUT_S) -> dict[str, Any] | None:
        """The parse's output (waits up to ``timeout``); None when it failed or timed out."""
        if self._done or self.proc is None:
            return self._result
        try:
            out, _ = self.proc.communicate(timeout=timeout)
            self._result = _decode(out)
            seen = (self._result or {}).get("version")
            if self.expect_version and seen and seen != self.expect_version:
                forget(self.python)  # the cache described another SGLang: the next launch rebuilds it
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.cancel()
        self._done = True
        return self._result

    def cancel(self) -> None:
        """Stop the parse (logkit is ending before it finished)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._done = True


#: argparse actions of the kinds rebuilt as they are (``_argscript.KINDS``); help and version store a switch
_ACTIONS: dict[str, Any] = {"store_true": "store_true", "help": "store_true", "version": "store_true",
                            "count": "count", "store_false": "store_false",
                            "boolean_optional": argparse.BooleanOptionalAction}


def _build(spec: dict[str, Any]) -> _Parser:
    parser = _Parser(prog=spec["prog"], add_help=False, argument_default=argparse.SUPPRESS)
    for a in spec["actions"]:
        kw: dict[str, Any] = {"dest": a["dest"], "default": argparse.SUPPRESS}
        kind = a["action"]
        if kind in _ACTIONS:
            kw["action"] = _ACTIONS[kind]
        elif kind in ("store_const", "append_const"):
            kw.update(action=kind, const=a.get("const"))
        elif a.get("nargs") == 0:  # a custom flag without a value (SGLang's deprecated switches)
            kw.update(action="store_const", const=True if a.get("const") is None else a["const"])
        else:
            kw.update(action="append" if kind == "append" else "store", type=_TYPES.get(a.get("type"), str),
                      required=bool(a.get("required")))
            if a.get("nargs") is not None:
                kw["nargs"] = a["nargs"]
            if a.get("choices") is not None and a.get("type") in _TYPES:
                kw["choices"] = a["choices"]
        parser.add_argument(*a["opts"], **kw)
    return parser


def quick_parse(flags: list[str], spec: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """``(given, None)``: the flags given, by SGLang's names and types; or ``(None, SGLang's message)``."""
    try:
        return vars(_build(spec).parse_args(flags)), None
    except _Refused as exc:
        return None, str(exc)


_CHOICE = re.compile(r"argument ([^:]+): invalid choice: '([^']*)'")
_UNKNOWN = re.compile(r"unrecognized arguments: (\S+)")


def suggest(message: str, spec: dict[str, Any] | None) -> str | None:
    """``did you mean flashinfer_cutlass?`` for a refused value or flag, from the spec; None if nothing is near."""
    if not spec:
        return None
    import difflib  # only when refusing

    m = _CHOICE.search(message)
    if m:
        names = set(m.group(1).split("/"))
        for a in spec["actions"]:
            if names & set(a["opts"]) and a.get("choices"):
                close = difflib.get_close_matches(m.group(2), [str(c) for c in a["choices"]], n=1, cutoff=0.6)
                return f"did you mean {close[0]}?" if close else None
        return None
    m = _UNKNOWN.search(message)
    if m:
        word = m.group(1).split("=")[0]
        opts = [o for a in spec["actions"] for o in a["opts"] if o.startswith("--")]
        close = difflib.get_close_matches(word, opts, n=1, cutoff=0.6)
        return f"did you mean {close[0]}?" if close else None
    return None
