"""MCP over WebSocket on asyncio (subprotocol ``mcp``; same semantics as
:mod:`trio_adapters.websocket`)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Unpack

from sansio_mcp import ServerSession
from sansio_mcp.runtime import Server, SessionOptions
from sansio_mcp.runtime.hosting import (
    ClientOptions,
    WebSocketServeOptions,
    WebSocketServing,
    open_websocket,
    serving,
)
from sansio_mcp.websocket import WebSocketAddress, WebSocketFraming

from ._backend import PRIMITIVES, TCPStream, serve_tcp
from ._runner import AsyncioRunner
from .client import Client, close_writer, running
from .http_server import reporter
from .server import AsyncioContext

__all__ = ["open_ws_client", "serve_ws"]


async def serve_ws(
    server: Server,
    *,
    started: asyncio.Future[int] | None = None,
    **options: Unpack[WebSocketServeOptions],
) -> None:
    """Serve ``server`` over WebSocket at ``ws://host:port/path`` until cancelled;
    ``started`` (if given) receives the bound port.  A connection whose opening
    handshake is not done within ``handshake_timeout`` seconds is closed."""
    service, at = WebSocketServing.of(server, options)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def make_runner(session: ServerSession, framing: WebSocketFraming) -> AsyncioRunner:
            runner = partial(AsyncioRunner, session, reader, writer, framing=framing)
            return serving(server, AsyncioContext, runner)

        async def abort() -> None:
            writer.transport.abort()

        await service.connection(make_runner, abort, TCPStream(reader, writer), PRIMITIVES)

    async with PRIMITIVES.open_task_group() as group:
        await serve_tcp(group, connection, at.host, at.port, reporter(started))


@asynccontextmanager
async def open_ws_client(
    url: str,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect to ``ws://host:port/path`` and yield an initialized :class:`Client`."""
    address, config = WebSocketAddress.parse(url), ClientOptions.of(options)
    context = ssl.create_default_context() if address.tls else None
    reader, writer = await asyncio.open_connection(address.hostname, address.port, ssl=context)
    try:
        runner = partial(AsyncioRunner, reader=reader, writer=writer)
        async with open_websocket(address, config, runner, running, Client) as client:
            yield client
    finally:
        await close_writer(writer)
