"""``logkit mcp`` and ``logkit hook``: logkit for the coding agents that do the bring-up."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import command, group

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the agent commands."""
    p = command(
        sub, "mcp", cmd_mcp, help="serve the knowledge base to coding agents (Model Context Protocol over stdio)",
        description="Serve the knowledge base over stdio as a Model Context Protocol server: tools (why, "
        "check_launch, working_configurations, matrix, status, add_hypothesis, record_verdict, import_todos, "
        "note, draft_decision, record_decision, cite) and resources (logkit://decisions/ID, logkit://configs/ID). "
        "Needs the mcp extra: pip install 'logkit[mcp]'. Setup: docs/agents.md.")

    hook = group(sub, "hook", "hooks for coding agents (Claude Code's hook JSON on stdin)")
    p = hook.add_parser(
        "pre-launch", help="block an SGLang launch whose configuration is refuted on this GPU (PreToolUse)",
        description="Read a PreToolUse tool call (JSON) on stdin. A shell command launching SGLang with a backend "
        "value refuted on this GPU architecture exits 2 with the reason and the evidence on stderr (the agent reads "
        "them; the launch does not happen); a launch not wrapped in `logkit run` gets a one-line suggestion; "
        "anything else exits 0 silently. Bad input exits 1 (an error that blocks nothing).")
    p.set_defaults(func=cmd_hook, hook="pre-launch")
    p = hook.add_parser(
        "todo", help="record a TodoWrite call as a todo snapshot of the current session (PostToolUse)",
        description="Read a TodoWrite tool call (JSON) on stdin and record its todos as a snapshot of the current "
        "session, matched to hypotheses as `logkit todo import` does. Bad input exits 1.")
    p.set_defaults(func=cmd_hook, hook="todo")


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..errors import BadInput

    try:
        from ..agent.server import serve
        import mcp  # noqa: F401 - the extra, checked before anything is served
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "mcp":
            raise
        raise BadInput("logkit mcp needs the Model Context Protocol SDK, which is not installed here",
                       fix="pip install 'logkit[mcp]' (requirements/mcp.txt pins it)") from None
    serve(args.sessions)
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from ..agent import hooks

    run = hooks.pre_launch if args.hook == "pre-launch" else hooks.todo
    try:
        answer = run(sys.stdin.buffer.read(), args.sessions)
    except Exception as exc:  # noqa: BLE001 - a hook never blocks the agent by crashing
        from ..errors import LogkitError

        if isinstance(exc, LogkitError):
            exc.exit_code = 1  # for a hook, 2 blocks the agent's tool call: bad input must not
            raise
        print(f"logkit: error: logkit hook {args.hook} failed ({type(exc).__name__}: {exc}); nothing blocked",
              file=sys.stderr)
        return 1
    sys.stdout.write(answer.stdout)
    sys.stderr.write(answer.stderr)
    return answer.code
