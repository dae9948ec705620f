"""The asyncio MCP client over Streamable HTTP: ``open_http_client(url)`` (the
runtime's :class:`~sansio_mcp.runtime.hosting.HTTPOpeners` on this backend)."""

from __future__ import annotations

from sansio_mcp.runtime.hosting import HTTPOpeners

from ._backend import PRIMITIVES
from .client import Client

__all__ = ["HTTPClientHost", "open_http_client"]

OPENERS = HTTPOpeners(PRIMITIVES, Client)
open_http_client = OPENERS.http
#: The session host of one Streamable HTTP client connection on this backend (what
#: ``open_http_client`` drives; an application opening its own links builds one).
HTTPClientHost = OPENERS.http_host
