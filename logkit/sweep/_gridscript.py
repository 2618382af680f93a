"""Run INSIDE the launch command's interpreter: SGLang's own parser, once for a whole sweep.

Reads ``{"choices": [flag, ...], "cells": [[flags...], ...]}`` on stdin; prints one JSON object:
``{"version", "error", "flags": {flag: {"dest", "choices", "bool"}}, "defaults", "cells": [{"ok",
"error", "args"}]}``. ``flags`` describes every flag named in ``choices`` (the option string as
given, without dashes). Imports only ``sglang.srt.server_args``; standard library besides SGLang.
"""

import argparse
import json
import sys


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # noqa: D102 - argparse hook
        raise _Refused(f"{self.prog}: error: {message}")


def main():
    req = json.load(sys.stdin)
    out = {"version": None, "error": None, "flags": {}, "defaults": {}, "cells": []}
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
    by_option = {opt: a for a in parser._actions for opt in a.option_strings}
    out["defaults"] = {a.dest: a.default for a in parser._actions if a.dest != "help"}
    for flag in req.get("choices", []):
        action = by_option.get("--" + flag)
        if action is None:
            out["flags"][flag] = None
            continue
        out["flags"][flag] = {"dest": action.dest, "choices": list(action.choices) if action.choices else None,
                              "bool": action.nargs == 0}
    for flags in req.get("cells", []):
        cell = {"ok": False, "error": None, "args": {}}
        try:
            cell["args"] = vars(parser.parse_args(flags))
            cell["ok"] = True
        except _Refused as exc:
            cell["error"] = str(exc)
        except SystemExit as exc:
            cell["error"] = f"exit {exc.code}"
        out["cells"].append(cell)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
