"""MCP over WebSocket on Trio (subprotocol ``mcp``; not defined by any MCP
revision, interoperable with the official SDKs' convention)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Unpack

import trio

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
from ._runner import TrioRunner
from .client import Client, running
from .server import TrioContext

__all__ = ["open_ws_client", "serve_ws"]


async def serve_ws(
    server: Server,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[WebSocketServeOptions],
) -> None:
    """Serve ``server`` over WebSocket at ``ws://host:port/path``; each
    connection is one session.  Runs until cancelled.  A connection whose
    opening handshake is not done within ``handshake_timeout`` seconds is closed."""
    service, at = WebSocketServing.of(server, options)

    async def connection(stream: trio.SocketStream) -> None:
        def make_runner(session: ServerSession, framing: WebSocketFraming) -> TrioRunner:
            runner = partial(TrioRunner, session, stream, stream, framing=framing)
            return serving(server, TrioContext, runner)

        await service.connection(
            make_runner,
            partial(trio.aclose_forcefully, stream),
            TCPStream(stream, stream.socket),
            PRIMITIVES,
        )

    await serve_tcp(connection, at.host, at.port, task_status.started)


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
    address, config = WebSocketAddress.parse(url), ClientOptions.of(options)
    stream = await open_ws_stream(address)
    async with stream:
        runner = partial(TrioRunner, send_stream=stream, receive_stream=stream)
        async with open_websocket(address, config, runner, running, Client) as client:
            yield client
