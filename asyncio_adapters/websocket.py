"""MCP over WebSocket on asyncio (subprotocol ``mcp``; same semantics as
:mod:`trio_adapters.websocket`)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from typing import Any, Unpack

from sansio_mcp import RequestReceived
from sansio_mcp._websocket import WebSocketAddress, WebSocketFraming
from sansio_mcp.runtime._client_options import ClientOptions, SessionOptions
from sansio_mcp.runtime._host import keep_websocket_alive
from sansio_mcp.runtime._server import Server

from ._runner import AsyncioRunner, shielded
from .client import Client, run_client
from .http_server import serve_tcp
from .server import AsyncioContext

__all__ = ["open_ws_client", "serve_ws"]


async def serve_ws(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    path: str = "/mcp",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    max_message_size: int = 8 * 1024 * 1024,
    ping_interval: float | None = 20.0,
    handshake_timeout: float | None = 10.0,
    started: asyncio.Future[int] | None = None,
) -> None:
    """Serve ``server`` over WebSocket at ``ws://host:port/path`` until cancelled;
    ``started`` (if given) receives the bound port.  A connection whose opening
    handshake is not done within ``handshake_timeout`` seconds is closed."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = server.create_session()
        framing = WebSocketFraming(
            session,
            client=False,
            path=path,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_message_size=max_message_size,
        )
        runner: AsyncioRunner

        def handle_request(event: RequestReceived) -> dict[str, Any] | Awaitable[dict[str, Any]]:
            return server.begin(AsyncioContext(runner, event))

        runner = AsyncioRunner(
            session, reader, writer, handle_request=handle_request, framing=framing
        )
        server.hub.add(session, runner._schedule_flush)
        keepalive = (
            asyncio.create_task(keep_websocket_alive(framing, runner, ping_interval))
            if ping_interval
            else None
        )
        deadline = (
            asyncio.get_running_loop().call_later(
                handshake_timeout, lambda: None if framing.open else writer.transport.abort()
            )
            if handshake_timeout is not None
            else None
        )
        try:
            await runner.run()
        finally:
            server.hub.remove(session)
            if keepalive is not None:
                keepalive.cancel()
            if deadline is not None:
                deadline.cancel()
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async with asyncio.TaskGroup() as group:
        await serve_tcp(group, connection, host, port, started)


@asynccontextmanager
async def open_ws_client(
    url: str,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect to ``ws://host:port/path`` and yield an initialized :class:`Client`."""
    address = WebSocketAddress.parse(url)
    config = ClientOptions.of(options)
    handlers, session = config.handlers, config.new_session()
    context = ssl.create_default_context() if address.tls else None
    reader, writer = await asyncio.open_connection(address.hostname, address.port, ssl=context)
    framing = WebSocketFraming(
        session,
        client=True,
        host=address.netloc,
        target=address.target,
        max_message_size=config.max_message_size,
    )

    runner = AsyncioRunner(
        session,
        reader,
        writer,
        **handlers.host_callbacks(),
        framing=framing,
    )
    try:
        async with run_client(
            runner, session, handlers, config.initialize_timeout, runner._read_loop
        ) as client:
            yield client
            framing.close(1000, "client done")
            await shielded(runner.flush)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()
