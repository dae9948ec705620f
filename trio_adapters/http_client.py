"""The Trio MCP client over Streamable HTTP: ``open_http_client(url)``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Unpack

import trio

from sansio_mcp.runtime._client_options import HTTPClientOptions
from sansio_mcp.runtime._http_client import HTTPClientHost, LegacySSEClientHost
from sansio_mcp.runtime._open_client import open_http

from ._runner import TrioSessionHost
from .client import Client, hosted

__all__ = ["open_http_client"]


class _HTTPClientHost(HTTPClientHost, TrioSessionHost):
    """The runtime's Streamable HTTP client loops on a Trio session host."""

    def attach(self, nursery: trio.Nursery) -> None:
        super().attach(nursery)
        self.spawn_task(self.hold_connections)


class _SSEClientHost(LegacySSEClientHost, _HTTPClientHost):
    """The runtime's legacy HTTP+SSE client on this backend's HTTP client host."""


@asynccontextmanager
async def open_http_client(url: str, **options: Unpack[HTTPClientOptions]) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`.

    HTTP failures become typed errors of the request that met them:
    :class:`sansio_mcp.HTTPStatusError` (with ``data.status``), or
    :class:`sansio_mcp.ConnectionClosedError` when the server ended the session.
    """
    async with open_http(url, options, _HTTPClientHost, hosted, Client) as client:
        yield client
