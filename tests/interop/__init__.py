"""Interop tests against third-party MCP peers."""
