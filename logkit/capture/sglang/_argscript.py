"""Run INSIDE the wrapped command's interpreter: parse SGLang flags with SGLang's own parser.

Reads a JSON list of flags on stdin, prints one JSON object on stdout:
``{"ok", "version", "args", "defaults", "error", "packages"}`` (installed versions of the
packages that decide kernels, read with importlib.metadata, for the config diff). Imports only ``sglang.srt.server_args`` (and
argparse); never starts anything. Standard library only besides SGLang, so it runs in any venv.
"""

import argparse
import json
import sys


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # noqa: D102 - argparse hook
        raise _Refused(f"{self.prog}: error: {message}")


PACKAGES = ("sglang", "sgl-kernel", "sglang-kernel", "flashinfer-python", "flashinfer-cubin", "torch", "triton",
            "transformers", "deep-gemm", "nvidia-nccl-cu12", "nvidia-nccl-cu13")


def _packages():
    from importlib import metadata

    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except Exception:  # noqa: BLE001 - not installed
            continue
    return out


def main():
    flags = json.load(sys.stdin)
    out = {"ok": False, "version": None, "args": {}, "defaults": {}, "error": None, "packages": _packages()}
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
    try:
        ns = parser.parse_args(flags)
    except _Refused as exc:
        out["error"] = str(exc)
    except SystemExit as exc:  # --help or --version inside the flags
        out["error"] = f"exit {exc.code}"
    else:
        out["ok"] = True
        out["args"] = vars(ns)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
