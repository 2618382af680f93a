"""Run INSIDE the wrapped command's interpreter: SGLang's own flag parser, and what keys its cache.

Standard library only besides SGLang, so it runs in any venv; never starts anything.

* ``python -I _argscript.py --probe`` prints ``{"python", "version", "stamp", "packages",
  "stamps"}``: the sglang version, the mtime of its ``srt/server_args.py`` (found without importing
  sglang), the versions of the kernel-deciding packages, and ``stamps``: the mtimes of their
  ``.dist-info`` directories and of ``server_args.py`` (logkit ``stat`` s them to know its cache holds).
* ``python -I _argscript.py`` reads a JSON list of flags on stdin (or ``{"flags": [...], "spec":
  true}``) and prints ``{"ok", "version", "args", "defaults", "given", "error", "packages"}``:
  SGLang's full parse, ``given`` the dests of the flags on the command line; with ``"spec"`` also
  the parser's options (names, dest, nargs, type, choices, default, action kind) that logkit
  caches to refuse invalid flags on later launches without importing SGLang.
"""

import argparse
import json
import os
import sys

PACKAGES = ("sglang", "sgl-kernel", "sglang-kernel", "flashinfer-python", "flashinfer-cubin", "torch", "triton",
            "transformers", "deep-gemm", "nvidia-nccl-cu12", "nvidia-nccl-cu13")
#: argparse action classes -> the kind logkit rebuilds (checked in order: subclasses first).
KINDS = (("BooleanOptionalAction", "boolean_optional"), ("_StoreTrueAction", "store_true"),
         ("_StoreFalseAction", "store_false"), ("_StoreConstAction", "store_const"),
         ("_AppendConstAction", "append_const"), ("_AppendAction", "append"), ("_CountAction", "count"),
         ("_HelpAction", "help"), ("_VersionAction", "version"), ("_StoreAction", "store"))
TYPES = {int: "int", float: "float", str: "str", None: "str"}


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # noqa: D102 - argparse hook
        raise _Refused(f"{self.prog}: error: {message}")


def _packages(stamps=None):
    from importlib import metadata

    out = {}
    for name in PACKAGES:
        try:
            dist = metadata.distribution(name)
            out[name] = dist.version
        except Exception:  # noqa: BLE001 - not installed
            continue
        where = getattr(dist, "_path", None)  # the .dist-info directory: replaced when the package is
        if stamps is not None and where is not None:  # upgraded, so its mtime keys logkit's cache
            try:
                stamps[str(where)] = os.stat(where).st_mtime_ns
            except OSError:
                pass
    return out


def probe():
    import importlib.util

    stamps = {}
    out = {"python": sys.executable, "version": None, "stamp": None, "packages": _packages(stamps), "stamps": stamps}
    out["version"] = out["packages"].get("sglang")
    try:
        spec = importlib.util.find_spec("sglang")
    except Exception:  # noqa: BLE001 - a broken install: no cache
        spec = None
    if spec is not None and spec.origin:
        where = os.path.join(os.path.dirname(spec.origin), "srt", "server_args.py")
        try:
            out["stamp"] = stamps[where] = os.stat(where).st_mtime_ns
        except OSError:
            out["stamp"] = None
    elif spec is None:
        out["version"] = None
    print(json.dumps(out))


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def _kind(action):
    names = {cls.__name__ for cls in type(action).__mro__}
    return next((kind for cls_name, kind in KINDS if cls_name in names), "custom")


def _spec(parser):
    actions = []
    for a in parser._actions:
        if not a.option_strings:
            continue
        choices = None
        if a.choices is not None:
            try:
                choices = [_jsonable(c) for c in a.choices]
            except TypeError:
                choices = None
        actions.append({
            "opts": list(a.option_strings), "dest": a.dest, "action": _kind(a),
            "nargs": a.nargs if a.nargs is None or isinstance(a.nargs, (int, str)) else str(a.nargs),
            "const": _jsonable(a.const), "default": _jsonable(a.default), "choices": choices,
            "type": TYPES.get(a.type, "other"), "required": bool(a.required),
        })
    return {"prog": parser.prog, "actions": actions}


def main():
    request = json.load(sys.stdin)
    if isinstance(request, list):
        request = {"flags": request}
    flags = request.get("flags") or []
    out = {"ok": False, "version": None, "args": {}, "defaults": {}, "given": [], "error": None,
           "packages": _packages()}
    try:
        import sglang

        out["version"] = getattr(sglang, "__version__", None)
        from sglang.srt.server_args import ServerArgs
    except BaseException as exc:  # noqa: BLE001 - report, never crash
        out["error"] = f"import: {type(exc).__name__}: {exc}"
        print(json.dumps(out, default=str))
        return
    parser = _Parser(prog="launch_server.py")
    ServerArgs.add_cli_args(parser)
    out["defaults"] = {a.dest: a.default for a in parser._actions if a.dest != "help"}
    if request.get("spec"):
        out["spec"] = _spec(parser)
    try:
        ns = parser.parse_args(flags)
    except _Refused as exc:
        out["error"] = str(exc)
    except SystemExit as exc:  # --help or --version inside the flags
        out["error"] = f"exit {exc.code}"
    else:
        out["ok"] = True
        out["args"] = vars(ns)
        # The flags given: parse again with every default suppressed (custom actions run as they would).
        bare = _Parser(prog="launch_server.py", argument_default=argparse.SUPPRESS)
        ServerArgs.add_cli_args(bare)
        for action in bare._actions:
            action.default = argparse.SUPPRESS
        try:
            out["given"] = sorted(vars(bare.parse_args(flags)))
        except (_Refused, SystemExit):
            out["given"] = []
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe"]:
        probe()
    else:
        main()
