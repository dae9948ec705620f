"""The asyncio MCP client over Streamable HTTP: ``open_http_client(url)`` (the
runtime's :class:`~sansio_mcp.runtime._open_client.HTTPOpeners` on this backend)."""

from __future__ import annotations

from sansio_mcp.runtime._open_client import HTTPOpeners

from ._backend import PRIMITIVES
from .client import Client

__all__ = ["open_http_client"]

OPENERS = HTTPOpeners(PRIMITIVES, Client)
open_http_client = OPENERS.http
_HTTPClientHost = OPENERS.http_host
_SSEClientHost = OPENERS.sse_host
