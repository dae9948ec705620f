"""The A2E MCP bridge on asyncio: the same :class:`~sansio_mcp_apps.a2e.BridgeHost`
as on Trio, with asyncio moving the bytes.

:class:`AsyncioBridge` executes the host's actions (the shared rules are
:class:`~sansio_mcp_apps.a2e.BridgeRunner`'s) over stdio, Streamable HTTP, legacy
HTTP+SSE and WebSocket (the library's own asyncio hosts);
:func:`serve_agent_stream` and :func:`serve_agent_ws` attach the agent, and
:meth:`AsyncioBridge.connect_agent` an agent in this process (used by
:func:`sansio_mcp_apps.a2e.adapters.asyncio_client.open_a2e_direct`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Unpack

from asyncio_adapters import BACKEND, AsyncioRunner, PipeStream
from asyncio_adapters.http_client import HTTPClientHost
from asyncio_adapters.sse import SSEClientHost
from sansio_mcp import ClientSession
from sansio_mcp.websocket import WebSocketAddress, WebSocketFraming
from sansio_mcp_apps.a2e import (
    ConnectServer,
)
from sansio_mcp_apps.a2e.runtime._agents import (
    AgentServeOptions,
    serve_agent_pipes,
)
from sansio_mcp_apps.a2e.runtime._agents import serve_agent_ws as _serve_agent_ws
from sansio_mcp_apps.a2e.runtime._driver import BridgeDriver, refuse_requests
from sansio_mcp_apps.a2e.runtime._links import HTTPLinks
from sansio_mcp_apps.a2e.runtime._runner import BridgeRunner, Connection

__all__ = ["AsyncioBridge", "serve_agent_stream", "serve_agent_ws"]

logger = logging.getLogger("sansio_mcp_apps.a2e.adapters.asyncio_bridge")


class _StreamRunner(AsyncioRunner):
    """A session over a stream (stdio, WebSocket) whose deadlines the bridge host
    enforces (so it runs no timer of its own); every event goes to the host."""

    runs_timer = False

    def __init__(
        self,
        session: ClientSession,
        reader: asyncio.StreamReader | None,
        writer: asyncio.StreamWriter,
        driver: BridgeDriver,
        framing: Any = None,
    ) -> None:
        super().__init__(session, reader, writer, handle_request=refuse_requests, framing=framing)
        self.driver = driver


async def _serve_link(
    runner: BridgeRunner,
    action: ConnectServer,
    connection: Connection,
    link: _StreamRunner,
    run: asyncio.Task[Any],
) -> None:
    connection.flush_now = link.transport_output.schedule
    await link.started.wait()
    await link.flush()  # a WebSocket's opening handshake
    runner.connection_opened(action.connection)
    await run


class _Links(HTTPLinks):
    """The bridge's server links on asyncio: the library's own asyncio hosts move the bytes."""

    http_host = HTTPClientHost
    sse_host = SSEClientHost

    async def stdio(
        self, runner: BridgeRunner, action: ConnectServer, connection: Connection, process: Any
    ) -> None:
        # The server's output is handed to its session by a protocol, as it arrives
        # (no reader task to wake for every message), as the stdio client's is.
        child = process.native
        link = _StreamRunner(action.session, None, child.writer, runner.server_driver(action))
        run = asyncio.ensure_future(link.run(connect_input=child.connect_output))
        try:
            await _serve_link(runner, action, connection, link, run)
        finally:
            run.cancel()
            await asyncio.wait([run])  # the session closed; the runner stops the process

    async def ws(self, runner: BridgeRunner, action: ConnectServer, connection: Connection) -> str:
        address = WebSocketAddress.parse(action.config.url)
        ssl_context: Any = True if address.tls else None
        reader, writer = await asyncio.open_connection(
            address.hostname, address.port, ssl=ssl_context
        )
        framing = WebSocketFraming.client_to(
            action.session, action.config.url, action.config.http_headers
        )
        link = _StreamRunner(
            action.session, reader, writer, runner.server_driver(action), framing=framing
        )
        run = asyncio.ensure_future(link.run())
        try:
            await _serve_link(runner, action, connection, link, run)
        finally:
            framing.close(1000, "the bridge is done with this server")
            with contextlib.suppress(Exception):
                await BACKEND.shielded(link.flush)
            run.cancel()
            with contextlib.suppress(BaseException):
                await run
            writer.close()
        reason = framing.close_reason
        return f"the WebSocket closed ({reason[0]} {reason[1]})" if reason else "closed"


class AsyncioBridge(BridgeRunner):
    """Runs a :class:`BridgeHost` on asyncio: ``await bridge.run()`` until cancelled
    (``await bridge.started.wait()`` for it to be running)."""

    log = logger

    backend = BACKEND
    links = _Links()


# The agent side ----------------------------------------------------------------------------------


async def serve_agent_stream(
    bridge: AsyncioBridge, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Serve one agent over an NDJSON stream (stdio) until its input ends."""
    stream = PipeStream(writer, reader)
    await serve_agent_pipes(bridge, stream, stream)


async def serve_agent_ws(
    bridge: AsyncioBridge,
    *,
    started: asyncio.Future[int] | None = None,
    **options: Unpack[AgentServeOptions],
) -> None:
    """Serve agents over WebSocket at ``ws://host:port/path`` (by default
    ``127.0.0.1``, any free port, ``/a2e``), one at a time (a second concurrent agent
    is refused with HTTP 409), until cancelled; ``started`` (if given) gets the port."""
    await _serve_agent_ws(bridge, None if started is None else started.set_result, **options)
