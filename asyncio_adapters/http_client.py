"""The asyncio MCP client over Streamable HTTP: ``open_http_client(url)``
(same semantics as :mod:`trio_adapters.http_client`)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Unpack

from sansio_mcp import ClientSession
from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
from sansio_mcp.runtime._client import ClientHandlers
from sansio_mcp.runtime._client_options import ClientOptions, SessionOptions
from sansio_mcp.runtime._http_client import HTTPClientHost
from sansio_mcp.runtime._oauth import OAuthProvider

from ._runner import AsyncioSessionHost, shielded
from .client import Client, run_client

__all__ = ["open_http_client"]


class _HTTPClientHost(HTTPClientHost, AsyncioSessionHost):
    """The runtime's Streamable HTTP client loops on an asyncio session host."""

    def __init__(
        self,
        session: ClientSession,
        transport: StreamableHTTPClient,
        handlers: ClientHandlers,
        *,
        max_body: int,
        ssl_context: ssl.SSLContext | None,
        auth: OAuthProvider | None = None,
    ) -> None:
        AsyncioSessionHost.__init__(self, session, **handlers.host_callbacks())
        self.setup_http(transport, max_body=max_body, ssl_context=ssl_context, auth=auth)

    def attach(self, group: asyncio.TaskGroup) -> None:
        super().attach(group)
        self.start(self.hold_connections())


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    max_body: int = 16 * 1024 * 1024,
    ssl_context: ssl.SSLContext | None = None,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`."""
    config = ClientOptions.of(options)
    handlers, session = config.handlers, config.new_session()
    transport = StreamableHTTPClient(Endpoint.parse(url), session, headers=headers)
    host = _HTTPClientHost(
        session, transport, handlers, max_body=max_body, ssl_context=ssl_context, auth=config.auth
    )
    async with run_client(host, session, handlers, config.initialize_timeout) as client:
        yield client
        await shielded(host.end_session)
