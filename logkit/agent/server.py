"""``logkit mcp``: the knowledge base as a Model Context Protocol server over stdio.

Contract:

* The only module of logkit that imports the ``mcp`` SDK (the ``logkit[mcp]`` extra, its 2.x
  ``MCPServer`` API), inside :func:`build` only; nothing else imports this module.
* Each tool is one method of :class:`~logkit.agent.tools.Tools` (the library the CLI calls);
  launching servers is not a tool (``logkit run``, started through the agent's shell, records it).
* Resources: ``logkit://decisions/{decision_id}`` (a decision record) and
  ``logkit://configs/{config_id}`` (a working-configuration page), Markdown as the site shows them.
* A :class:`~logkit.errors.LogkitError` comes back as a tool (or resource; "not found" for
  :class:`~logkit.errors.NotFound`) error whose text is the CLI's, ``logkit: error: ...`` with its
  ``fix:``; anything else as ``logkit: error: internal error`` with the exception's type and
  message, never a traceback. Every reply passes :func:`~logkit.agent.tools.reply` (secrets
  redacted, no absolute path).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..errors import LogkitError, NotFound
from .tools import Tools, reply

__all__ = ["INSTRUCTIONS", "build", "serve"]

INSTRUCTIONS = (
    "logkit is the memory of SGLang bring-ups: every launch and benchmark recorded with its outcome, "
    "hypotheses, verdicts and decision records. Before launching SGLang, call check_launch; when a launch "
    "fails, call why with the error; record what you learn with add_hypothesis, record_verdict, note and "
    "draft_decision/record_decision. Launch servers through your shell as `logkit run -- python -m "
    "sglang.launch_server ...` so they are recorded."
)

#: tools that only read (the MCP read-only hint)
READ_ONLY = ("why", "check_launch", "working_configurations", "matrix", "status", "draft_decision", "cite")


def _guarded(tools: Tools, method: Callable[..., Any],
             raise_as: Callable[[BaseException, str], Exception]) -> Callable[..., Any]:
    """``method`` with its answer passed through :func:`reply` and its errors raised as ``raise_as``."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            answer = method(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure reaches the agent as a clean error
            text = str(exc) if isinstance(exc, LogkitError) else f"internal error ({type(exc).__name__}: {exc})"
            raise raise_as(exc, reply(f"logkit: error: {text}", tools.root)) from None
        return reply(answer, tools.root)

    return call


def build(sessions: str | None = None) -> Any:
    """The server (an ``mcp.server.mcpserver.MCPServer``) over ``sessions``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
    from mcp.types import ToolAnnotations

    from .. import __version__
    from .pages import config_markdown, decision_markdown

    tools = Tools(sessions)
    server = MCPServer(name="logkit", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for name in ("why", "check_launch", "working_configurations", "matrix", "status", "add_hypothesis",
                 "record_verdict", "import_todos", "note", "draft_decision", "record_decision", "cite"):
        method = getattr(tools, name)
        hints = ToolAnnotations(read_only_hint=name in READ_ONLY, destructive_hint=False, open_world_hint=False)
        server.add_tool(_guarded(tools, method, lambda _exc, text: ToolError(text)), name=name,
                        description=method.__doc__, annotations=hints)

    def resource_error(exc: BaseException, text: str) -> Exception:
        return ResourceNotFoundError(text) if isinstance(exc, NotFound) else ResourceError(text)

    decision = _guarded(tools, functools.partial(decision_markdown, tools.root), resource_error)
    config = _guarded(tools, functools.partial(config_markdown, tools.root), resource_error)

    @server.resource("logkit://decisions/{decision_id}", name="decision record", mime_type="text/markdown",
                     description="A decision record (DR-7K3FQ) as its site page shows it, in Markdown")
    def decision_resource(decision_id: str) -> str:
        return decision(decision_id)

    @server.resource("logkit://configs/{config_id}", name="working configurations", mime_type="text/markdown",
                     description="The working configurations of a model on a GPU (an id from working_configurations), "
                                 "in Markdown")
    def config_resource(config_id: str) -> str:
        return config(config_id)

    return server


def serve(sessions: str | None = None) -> None:
    """Serve over stdio until the client closes it."""
    build(sessions).run("stdio")
