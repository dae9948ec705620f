"""The asyncio MCP client over Streamable HTTP: ``open_http_client(url)``
(same semantics as :mod:`trio_adapters.http_client`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Unpack

from sansio_mcp.runtime._backend import Backend
from sansio_mcp.runtime._client_options import HTTPClientOptions
from sansio_mcp.runtime._open_client import (
    HTTPClientSessionHost,
    SSEClientSessionHost,
    open_http,
)

from ._backend import PRIMITIVES
from .client import Client, hosted

__all__ = ["open_http_client"]


class _HTTPClientHost(HTTPClientSessionHost):
    """The runtime's Streamable HTTP client host on asyncio."""

    backend: Backend = PRIMITIVES


class _SSEClientHost(SSEClientSessionHost):
    """The runtime's legacy HTTP+SSE client host on asyncio."""

    backend: Backend = PRIMITIVES


@asynccontextmanager
async def open_http_client(url: str, **options: Unpack[HTTPClientOptions]) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`."""
    async with open_http(url, options, _HTTPClientHost, hosted, Client) as client:
        yield client
