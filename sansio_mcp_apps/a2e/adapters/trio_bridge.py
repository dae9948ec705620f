"""The A2E MCP bridge on Trio: it moves bytes; :class:`~sansio_mcp_apps.a2e.BridgeHost` decides.

:class:`TrioBridge` executes the host's actions (the shared rules are
:class:`~sansio_mcp_apps.a2e.BridgeRunner`'s): it opens each server's transport
(stdio, Streamable HTTP, legacy HTTP+SSE, WebSocket) with the library's own
Trio hosts, feeds the host what arrives, sends what it queues, and runs its
timer.  The agent side is :func:`serve_agent_stream` (NDJSON on a byte
stream, stdio), :func:`serve_agent_ws` (one message per WebSocket text
frame), or an agent in this process (:meth:`TrioBridge.connect_agent`, used
by :func:`sansio_mcp_apps.a2e.adapters.trio_client.open_a2e_direct`).
"""

from __future__ import annotations

import logging
from typing import Any, Unpack

import trio

from sansio_mcp import ClientSession
from sansio_mcp.runtime import TimedOut
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
from trio_adapters import BACKEND, PipeStream, TrioRunner
from trio_adapters.http_client import HTTPClientHost
from trio_adapters.sse import SSEClientHost
from trio_adapters.websocket import open_ws_stream

__all__ = ["TrioBridge", "serve_agent_stream", "serve_agent_ws"]

logger = logging.getLogger("sansio_mcp_apps.a2e.adapters.trio_bridge")


# Wiring the library's Trio hosts to the bridge ----------------------------------------------


class _StreamRunner(TrioRunner):
    """A session over a byte stream (stdio, WebSocket) whose deadlines the bridge
    host enforces (so it runs no timer of its own); every event goes to the host."""

    runs_timer = False

    def __init__(
        self,
        session: ClientSession,
        send: Any,
        receive: Any,
        driver: BridgeDriver,
        framing: Any = None,
    ) -> None:
        super().__init__(session, send, receive, handle_request=refuse_requests, framing=framing)
        self.driver = driver

    async def flush_all(self, *, timeout: float = 10.0) -> None:
        """Send what is queued and wait (at most ``timeout``) until it has gone out."""
        with trio.move_on_after(timeout):
            await self.flush()


class _Links(HTTPLinks):
    """The bridge's server links on Trio: the library's own Trio hosts move the bytes."""

    http_host = HTTPClientHost
    sse_host = SSEClientHost

    async def stdio(
        self, runner: BridgeRunner, action: ConnectServer, connection: Connection, process: Any
    ) -> None:
        pipes = process.native
        link = _StreamRunner(
            action.session, pipes.stdin, pipes.stdout, runner.server_driver(action)
        )
        async with trio.open_nursery() as nursery:
            connection.flush_now = link.pipe_output.schedule
            await nursery.start(link.run)
            runner.connection_opened(action.connection)
            await link.wait_closed()
            nursery.cancel_scope.cancel()

    async def ws(self, runner: BridgeRunner, action: ConnectServer, connection: Connection) -> str:
        stream = await open_ws_stream(WebSocketAddress.parse(action.config.url))
        framing = WebSocketFraming.client_to(
            action.session, action.config.url, action.config.http_headers
        )
        link = _StreamRunner(
            action.session, stream, stream, runner.server_driver(action), framing=framing
        )
        async with stream:
            async with trio.open_nursery() as nursery:
                connection.flush_now = link.pipe_output.schedule
                await nursery.start(link.run)
                await link.flush_all()  # the opening handshake
                runner.connection_opened(action.connection)
                try:
                    await link.wait_closed()
                finally:
                    framing.close(1000, "the bridge is done with this server")
                    with trio.CancelScope(shield=True):
                        await link.flush_all(timeout=1)
                    nursery.cancel_scope.cancel()
        reason = framing.close_reason
        return f"the WebSocket closed ({reason[0]} {reason[1]})" if reason else "closed"


class TrioBridge(BridgeRunner):
    """Runs a :class:`BridgeHost` on Trio.

    Start :meth:`run` in a nursery (``await nursery.start(bridge.run)``),
    attach an agent with :func:`serve_agent_stream`, :func:`serve_agent_ws`
    or :meth:`connect_agent`.  ``clock`` gives the host its ``now`` (seconds
    since the epoch).
    """

    log = logger
    timeout_errors = (TimedOut, trio.TooSlowError)

    backend = BACKEND
    links = _Links()

    async def run(  # type: ignore[override]
        self, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Execute the host's actions until cancelled; then stop every server."""
        await super().run(ready=task_status.started)


# The agent side ----------------------------------------------------------------------------------


async def serve_agent_stream(
    bridge: TrioBridge,
    send_stream: trio.abc.SendStream,
    receive_stream: trio.abc.ReceiveStream,
) -> None:
    """Serve one agent over an NDJSON byte stream (stdio) until its input ends."""
    stream = PipeStream(send_stream, receive_stream)
    await serve_agent_pipes(bridge, stream, stream)


async def serve_agent_ws(
    bridge: TrioBridge,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[AgentServeOptions],
) -> None:
    """Serve agents over WebSocket at ``ws://host:port/path`` (by default
    ``127.0.0.1``, any free port, ``/a2e``), one at a time (a second concurrent agent
    is refused with HTTP 409), until cancelled; ``task_status.started`` gets the port."""
    await _serve_agent_ws(bridge, task_status.started, **options)
