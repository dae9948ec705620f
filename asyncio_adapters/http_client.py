"""The asyncio MCP client over Streamable HTTP: ``open_http_client(url)``
(same semantics as :mod:`trio_adapters.http_client`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Unpack

from sansio_mcp.runtime._client_options import HTTPClientOptions
from sansio_mcp.runtime._http_client import HTTPClientHost, LegacySSEClientHost
from sansio_mcp.runtime._open_client import open_http

from ._runner import AsyncioSessionHost
from .client import Client, hosted

__all__ = ["open_http_client"]


class _HTTPClientHost(HTTPClientHost, AsyncioSessionHost):
    """The runtime's Streamable HTTP client loops on an asyncio session host."""

    def attach(self, group: asyncio.TaskGroup) -> None:
        super().attach(group)
        self.spawn_task(self.hold_connections)


class _SSEClientHost(LegacySSEClientHost, _HTTPClientHost):
    """The runtime's legacy HTTP+SSE client on this backend's HTTP client host."""


@asynccontextmanager
async def open_http_client(url: str, **options: Unpack[HTTPClientOptions]) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`."""
    async with open_http(url, options, _HTTPClientHost, hosted, Client) as client:
        yield client
