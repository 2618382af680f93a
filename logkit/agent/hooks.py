"""``logkit hook pre-launch`` and ``logkit hook todo``: a coding agent's tool call, checked or recorded.

Contract (Claude Code's hook protocol: the tool call as JSON on stdin; exit 0 goes on, exit 2 blocks
the call and the agent reads stderr, any other status is an error shown to the user that blocks
nothing):

* :func:`pre_launch` reads a PreToolUse call. A shell command (``tool_input.command``) that launches
  SGLang (:func:`logkit.capture.sglang.detect.detect` on each simple command of the line, through a
  ``logkit run`` wrapper) with a backend value the matrix says is ``refuted`` on this GPU
  architecture (:func:`logkit.reasoning.prelaunch.check_argv`, nothing run in the interpreter) is
  blocked: exit 2, the reason, the evidence and the fix on stderr; ``logkit run --yes`` is the
  user's override and passes. A launch not wrapped in ``logkit run`` gets a one-line suggestion to
  wrap it as ``additionalContext`` JSON on stdout (exit 0). Anything else: exit 0, nothing printed,
  nothing imported past the JSON parser unless the line names ``sglang``.
* :func:`todo` records a TodoWrite call (``tool_input.todos``, PostToolUse) as a todo snapshot of
  the current session, matched to hypotheses (:func:`logkit.reasoning.todo.record_items`).
* Input that is not such JSON raises :class:`~logkit.errors.BadInput` (exit 1: an error the user
  sees, never a block). A failure inside the check never blocks a launch either.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

from ..errors import BadInput

__all__ = ["HookAnswer", "launches", "pre_launch", "read_call", "todo", "unwrap"]

#: the most stdin a hook reads (a tool call is a few KiB; a TodoWrite list a few more)
MAX_INPUT = 4 * 1024 * 1024


class HookAnswer(NamedTuple):
    """What a hook prints and how it exits."""

    code: int = 0
    stdout: str = ""
    stderr: str = ""


def read_call(data: bytes, hook: str) -> dict[str, Any]:
    """The tool call of a hook's stdin, or :class:`BadInput` naming what is wrong and the fix."""
    fix = ("feed the hook the JSON the agent sends, e.g. "
           '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "..."}}')
    if len(data) > MAX_INPUT:
        raise BadInput(f"logkit hook {hook}: stdin holds {len(data)} bytes, more than a tool call", fix=fix)
    try:
        call = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadInput(f"logkit hook {hook}: stdin is not UTF-8 (byte {exc.start})", fix=fix) from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"logkit hook {hook}: stdin:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})", fix=fix) from None
    except RecursionError:
        raise BadInput(f"logkit hook {hook}: stdin is JSON nested too deeply to be a tool call", fix=fix) from None
    if not isinstance(call, dict) or not isinstance(call.get("tool_input", {}), dict):
        raise BadInput(f"logkit hook {hook}: stdin is not a tool call (an object with a tool_input object)", fix=fix)
    return call


# --- pre-launch ------------------------------------------------------------------------------


def _is_logkit(words: list[str]) -> int:
    """How many words name logkit at the head of ``words`` (``logkit``, ``python -m logkit``), or 0."""
    if words and os.path.basename(words[0]) == "logkit":
        return 1
    if len(words) > 2 and os.path.basename(words[0]).startswith("python") and words[1:3] == ["-m", "logkit"]:
        return 3
    return 0


def unwrap(words: list[str]) -> tuple[list[str], bool, bool]:
    """``(argv, wrapped, yes)``: the command ``logkit run [...] -- CMD`` runs, by its parser; others as they are."""
    from ..capture.sglang.detect import command_start

    start = command_start(words)  # `env X=1 logkit run ...`, `uv run logkit run ...`
    head = _is_logkit(words[start:])
    if not head:
        return words, False, False
    head += start
    import contextlib
    import io

    from ..cli import build_parser

    try:  # argparse's own complaint (or --help) is logkit run's to print when it runs, not the hook's
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = build_parser("run").parse_args(words[head:])
    except SystemExit:  # not a `logkit run` line (or a bad one: logkit itself will say so)
        return [], False, False
    if getattr(args, "command", None) != "run":
        return [], False, False
    argv = list(args.cmd)
    return (argv[1:] if argv[:1] == ["--"] else argv), True, bool(args.yes)


def launches(command: str) -> list[tuple[list[str], bool, bool]]:
    """Each ``(argv, wrapped, yes)`` of the simple commands of a shell line (see :func:`unwrap`)."""
    from ..capture.sglang.detect import commands

    return [unwrap(words) for words in commands(command)]


def _evidence(answer: dict[str, Any]) -> list[str]:
    lines = []
    for cell in answer["cells"]:
        if cell["state"] != "refuted":
            continue
        bad = cell["refuting"]
        counts = ", ".join(f"{n} {cat}" for cat, n in sorted(cell["counts"].items()))
        lines.append(f"logkit: {cell['warning']}")
        lines.append(f"  evidence: {bad['attempt']} ended {bad['status']}" + (f": {bad['label']}" if bad["label"] else "")
                     + f" ({counts} on {cell['arch']}; see logkit why, logkit status)")
    return lines


def pre_launch(data: bytes, sessions: str | None) -> HookAnswer:
    """The answer to a PreToolUse call (see the module contract)."""
    call = read_call(data, "pre-launch")
    command = call.get("tool_input", {}).get("command")
    if not isinstance(command, str) or "sglang" not in command:
        return HookAnswer()  # not a shell command, or one that launches no SGLang: the fast path
    from ..reasoning.prelaunch import check_argv

    blocked: list[str] = []
    unwrapped: list[str] = []
    for argv, wrapped, yes in launches(command):
        try:
            answer = check_argv(argv, sessions, run_parser=False) if argv else None
        except Exception as exc:  # noqa: BLE001 - a failing check never blocks a launch
            return HookAnswer(1, stderr=f"logkit: warning: the pre-launch check failed ({exc}); not blocking\n")
        if answer is None:
            continue
        if not wrapped:
            unwrapped.append(answer["command"])
        if answer["verdict"] == "refuted" and not yes:
            blocked += _evidence(answer)
            blocked.append("  fix: choose another value for the refuted backend, or, if something changed since "
                           "(a new SGLang, a fixed kernel), launch it recorded: logkit run --yes -- <the same command>")
    if blocked:
        return HookAnswer(2, stderr="\n".join(blocked) + "\n")
    if unwrapped:
        # the command is not repeated: shown redacted, it could not be run as shown
        hint = ("logkit: this SGLang launch is not recorded; run it as `logkit run -- <the same command>` so its "
                "outcome, log and configuration join the knowledge base")
        out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": hint}}
        return HookAnswer(0, stdout=json.dumps(out) + "\n")
    return HookAnswer()


# --- todo ------------------------------------------------------------------------------------


def todo(data: bytes, sessions: str | None) -> HookAnswer:
    """Record a TodoWrite call as a todo snapshot of the current session."""
    call = read_call(data, "todo")
    todos = call.get("tool_input", {}).get("todos")
    if todos is None:
        return HookAnswer()  # another tool's call: the hook's matcher was wider than TodoWrite
    from ..reasoning import todo as todomod
    from ..reasoning.common import open_store

    items = todomod.parse_data({"todos": todos}, "TodoWrite tool_input")
    tool = call.get("tool_name") or "TodoWrite"
    todomod.record_items(open_store(sessions).open(None), items, source=f"{tool} (logkit hook todo)")
    return HookAnswer()
