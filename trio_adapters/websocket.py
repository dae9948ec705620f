"""MCP over WebSocket on Trio (subprotocol ``mcp``; not defined by any MCP
revision, interoperable with the official SDKs' convention)."""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from typing import Any, Unpack

import trio

from sansio_mcp import RequestReceived
from sansio_mcp._websocket import WebSocketAddress, WebSocketFraming
from sansio_mcp.runtime._client_options import ClientOptions, SessionOptions
from sansio_mcp.runtime._host import keep_websocket_alive
from sansio_mcp.runtime._server import Server

from ._runner import TrioRunner
from ._util import unwrap_single_exception
from .client import Client, start_client
from .server import TrioContext

__all__ = ["open_ws_client", "serve_ws"]

logger = logging.getLogger("trio_adapters.websocket")


async def _close_unless_open(
    framing: WebSocketFraming, stream: trio.abc.Stream, timeout: float
) -> None:
    # A peer that never finishes its handshake must not hold a session for good.
    await trio.sleep(timeout)
    if not framing.open:
        await trio.aclose_forcefully(stream)


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
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` over WebSocket at ``ws://host:port/path``; each
    connection is one session.  Runs until cancelled.  A connection whose
    opening handshake is not done within ``handshake_timeout`` seconds is closed."""

    async def connection(stream: trio.abc.Stream) -> None:
        session = server.create_session()
        framing = WebSocketFraming(
            session,
            client=False,
            path=path,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_message_size=max_message_size,
        )
        runner: TrioRunner

        def handle_request(event: RequestReceived) -> dict[str, Any] | Awaitable[dict[str, Any]]:
            return server.begin(TrioContext(runner, event))

        runner = TrioRunner(session, stream, stream, handle_request=handle_request, framing=framing)
        server.hub.add(session, runner._schedule_flush)
        try:
            async with trio.open_nursery() as nursery:
                if ping_interval:
                    nursery.start_soon(keep_websocket_alive, framing, runner, ping_interval)
                if handshake_timeout is not None:
                    nursery.start_soon(_close_unless_open, framing, stream, handshake_timeout)
                await runner.run()
                nursery.cancel_scope.cancel()
        except* (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away
        except* Exception:
            # One broken connection must never take the server (and every other client) down.
            logger.exception("error while serving a WebSocket connection; closing it")
        finally:
            server.hub.remove(session)
            await stream.aclose()

    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(connection, listeners)


async def open_ws_stream(address: WebSocketAddress) -> trio.abc.Stream:
    """The TCP (or, for ``wss://``, TLS) stream a WebSocket client speaks over."""
    stream: trio.abc.Stream = await trio.open_tcp_stream(address.hostname, address.port)
    if address.tls:
        stream = trio.SSLStream(
            stream, ssl.create_default_context(), server_hostname=address.hostname
        )
    return stream


@asynccontextmanager
async def open_ws_client(
    url: str,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect to ``ws://host:port/path`` and yield an initialized :class:`Client`."""
    address = WebSocketAddress.parse(url)
    config = ClientOptions.of(options)
    handlers, session = config.handlers, config.new_session()
    stream = await open_ws_stream(address)
    framing = WebSocketFraming(
        session,
        client=True,
        host=address.netloc,
        target=address.target,
        max_message_size=config.max_message_size,
    )

    runner = TrioRunner(
        session,
        stream,
        stream,
        **handlers.host_callbacks(),
        framing=framing,
    )
    async with stream:
        with unwrap_single_exception():
            async with trio.open_nursery() as nursery:
                try:
                    await nursery.start(runner.run)
                    await runner.flush()  # the opening handshake
                    client = await start_client(
                        runner, session, handlers, config.initialize_timeout
                    )
                    yield client
                    framing.close(1000, "client done")
                    with trio.CancelScope(shield=True), trio.move_on_after(2):
                        await runner.flush()
                finally:
                    nursery.cancel_scope.cancel()
