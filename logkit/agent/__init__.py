"""logkit for the coding agents that do the bring-up: the MCP server (:mod:`.server`, its tools in
:mod:`.tools`, its Markdown pages in :mod:`.pages`) and the tool-call hooks (:mod:`.hooks`)."""

__all__: list[str] = []
