"""The Trio MCP client over Streamable HTTP: ``open_http_client(url)``."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Unpack

import trio

from sansio_mcp import ClientSession
from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
from sansio_mcp.runtime._client import ClientHandlers
from sansio_mcp.runtime._client_options import ClientOptions, SessionOptions
from sansio_mcp.runtime._http_client import HTTPClientHost
from sansio_mcp.runtime._oauth import OAuthProvider

from ._runner import TrioSessionHost
from ._util import unwrap_single_exception
from .client import Client, start_client

__all__ = ["open_http_client"]


class _HTTPClientHost(HTTPClientHost, TrioSessionHost):
    """The runtime's Streamable HTTP client loops on a Trio session host."""

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
        TrioSessionHost.__init__(self, session, **handlers.host_callbacks())
        self.setup_http(transport, max_body=max_body, ssl_context=ssl_context, auth=auth)

    def attach(self, nursery: trio.Nursery) -> None:
        super().attach(nursery)
        nursery.start_soon(self.hold_connections)


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    max_body: int = 16 * 1024 * 1024,
    ssl_context: ssl.SSLContext | None = None,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`.

    HTTP failures become typed errors of the request that met them:
    :class:`sansio_mcp.HTTPStatusError` (with ``data.status``), or
    :class:`sansio_mcp.ConnectionClosedError` when the server ended the session.
    """
    config = ClientOptions.of(options)
    handlers, session = config.handlers, config.new_session()
    transport = StreamableHTTPClient(Endpoint.parse(url), session, headers=headers)
    host = _HTTPClientHost(
        session, transport, handlers, max_body=max_body, ssl_context=ssl_context, auth=config.auth
    )
    with unwrap_single_exception():
        async with trio.open_nursery() as nursery:
            host.attach(nursery)
            try:
                client = await start_client(host, session, handlers, config.initialize_timeout)
                yield client
                with trio.CancelScope(shield=True):
                    await host.end_session()
            finally:
                session.close()
                host.driver.process_events()
                nursery.cancel_scope.cancel()
