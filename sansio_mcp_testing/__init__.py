"""sansio-mcp testing toolkit: Hypothesis strategies for MCP messages and tool
arguments, a property-based checker for third-party MCP servers, reports, and
a pytest plugin.  Install with ``pip install 'sansio-mcp[testing]'``."""

__all__: list[str] = []
