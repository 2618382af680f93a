"""logkit for the coding agents that do the bring-up: an MCP server and hooks.

* :mod:`.tools`: what each MCP tool answers, a thin call into the library the CLI calls (JSON-ready
  dicts, :class:`~logkit.errors.LogkitError` on bad input, every reply redacted).
* :mod:`.pages`: decision records and working configurations as Markdown, by id (the site's own
  page contexts and templates).
* :mod:`.server`: ``logkit mcp``, the Model Context Protocol server over stdio (the only module that
  imports the ``mcp`` SDK of the ``logkit[mcp]`` extra).
* :mod:`.hooks`: ``logkit hook pre-launch`` and ``logkit hook todo``, fed a coding agent's tool-call
  JSON on stdin (Claude Code's PreToolUse / PostToolUse hook input).
"""

__all__: list[str] = []
