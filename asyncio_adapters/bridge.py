"""The A2E MCP bridge on asyncio: the same :class:`~sansio_mcp.a2e.BridgeHost`
as on Trio, with asyncio moving the bytes.

:class:`AsyncioBridge` executes the host's actions (the shared rules are
:class:`~sansio_mcp.a2e.BridgeRunner`'s) over stdio, Streamable HTTP, legacy
HTTP+SSE and WebSocket (the library's own asyncio hosts);
:func:`serve_agent_stream` and :func:`serve_agent_ws` attach the agent, and
:meth:`AsyncioBridge.connect_agent` an agent in this process (used by
:func:`asyncio_adapters.a2e_client.open_a2e_direct`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from sansio_mcp._client_session import ClientSession
from sansio_mcp._stdio import safe_environment
from sansio_mcp._streamable_http_client import StreamableHTTPClient
from sansio_mcp._websocket import WebSocketAddress, WebSocketFraming
from sansio_mcp.a2e import (
    A2EMessage,
    A2EWebSocket,
    BridgeHost,
    ConnectServer,
    encode,
    encode_line,
)
from sansio_mcp.runtime._client import ClientHandlers
from sansio_mcp.runtime.a2e._driver import BridgeDriver, refuse_requests
from sansio_mcp.runtime.a2e._runner import BridgeRunner, Connection, WebSocketAgents

from ._backend import read_in_small_chunks
from ._process import Child, drain_stderr, start_child, stop_process
from ._runner import AsyncioRunner, shielded
from .http_client import _HTTPClientHost
from .sse import _SSEClientHost

__all__ = ["AsyncioBridge", "serve_agent_stream", "serve_agent_ws"]

logger = logging.getLogger("asyncio_adapters.bridge")

_READ_SIZE = 65536


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


class _HTTPHost(_HTTPClientHost):
    # The bridge host enforces the session's deadlines; the host's own attach still
    # closes its kept-alive connections when it ends.
    runs_timer = False

    def __init__(
        self, session: ClientSession, transport: StreamableHTTPClient, driver: BridgeDriver
    ) -> None:
        super().__init__(
            session, transport, ClientHandlers(), max_body=16 * 1024 * 1024, ssl_context=None
        )
        self.driver = driver

    def flush_soon(self) -> None:
        # Its flush only starts one task per queued message: start it from a task.
        self.start(self.flush())


class _SSEHost(_SSEClientHost):
    # The bridge host enforces the session's deadlines; the host's own attach still
    # closes its kept-alive connections when it ends.
    runs_timer = False

    def __init__(
        self, session: ClientSession, transport: StreamableHTTPClient, driver: BridgeDriver
    ) -> None:
        super().__init__(
            session, transport, ClientHandlers(), max_body=16 * 1024 * 1024, ssl_context=None
        )
        self.driver = driver

    def flush_soon(self) -> None:
        self.start(self.flush())


class AsyncioBridge(BridgeRunner):
    """Runs a :class:`BridgeHost` on asyncio: ``await bridge.run()`` until cancelled."""

    log = logger

    def __init__(
        self,
        host: BridgeHost,
        *,
        clock: Callable[[], float] = time.time,
        shutdown_grace: float = 2.0,
    ) -> None:
        super().__init__(host, clock=clock)
        self.shutdown_grace = shutdown_grace
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self.started = asyncio.Event()

    def _start(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run(self) -> None:
        """Execute the host's actions until cancelled; then stop every server."""
        self.running = True
        self.wake_timer()
        self.poke()
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.running = False
            if self._timer is not None:
                self._timer.cancel()
            for task in list(self._tasks):
                task.cancel()
            pending = [t for t in self._tasks if not t.done()]
            if pending:
                # Each connection task stops its server on the way out.
                await shielded(lambda: _wait_all(pending))
            self.shutdown()

    # The timer: a loop callback, no task ----------------------------------------------

    def wake_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.running:
            return
        delay = self.timer_delay()
        if delay != math.inf:
            self._timer = asyncio.get_running_loop().call_later(delay, self._timer_due)

    def _timer_due(self) -> None:
        self._timer = None
        self.timer_fired()
        if self._timer is None:
            self.wake_timer()

    # Servers ---------------------------------------------------------------------------

    def open_connection(self, action: ConnectServer) -> Connection:
        connection = Connection(lambda: None)
        task = self._start(self._connection(action, connection))

        def cancel() -> None:
            task.cancel()

        connection.cancel = cancel
        return connection

    async def _connection(self, action: ConnectServer, connection: Connection) -> None:
        try:
            await self.serve_connection(action, connection)
        except asyncio.CancelledError:
            pass  # the host asked for it (or the bridge is stopping)

    async def _run_stdio(self, action: ConnectServer, connection: Connection) -> str:
        config = action.config
        env = safe_environment(os.environ, {k: str(v) for k, v in config.env.items()})
        # The server's output is handed to its session by a protocol, as it arrives
        # (no reader task to wake for every message), as the stdio client's is.
        child = await start_child(config.cmd, env=env, cwd=config.cwd or None)
        process = child.process
        assert process.stderr
        name = f"{action.server_id}:{os.path.basename(config.cmd[0])}"
        drainer = asyncio.ensure_future(drain_stderr(process.stderr, name))
        runner = _StreamRunner(action.session, None, child.writer, self.server_driver(action))
        run = asyncio.ensure_future(runner.run(connect_input=child.connect_output))
        try:
            connection.flush_now = runner._schedule_flush
            await runner.started.wait()
            self.connection_opened(action.connection)
            await run
        finally:
            run.cancel()
            await shielded(lambda: _finish_process(child, run, drainer, self.shutdown_grace))
            connection.reason = f"the server process exited (code {process.returncode})"
        return connection.reason

    async def _run_http(self, action: ConnectServer, connection: Connection) -> str:
        transport = self.http_transport(action)
        host = _HTTPHost(action.session, transport, self.server_driver(action))
        async with asyncio.TaskGroup() as group:
            host.attach(group)
            connection.flush_now = host.flush_soon
            self.connection_opened(action.connection)
            try:
                await asyncio.Event().wait()
            finally:
                await shielded(host.end_session)
                host.stop()
        return "closed"  # pragma: no cover - only cancellation ends it

    async def _run_sse(self, action: ConnectServer, connection: Connection) -> str:
        config = action.config
        transport = self.http_transport(action)
        host = _SSEHost(action.session, transport, self.server_driver(action))
        async with asyncio.TaskGroup() as group:
            host.attach(group)
            connection.flush_now = host.flush_soon
            ready = asyncio.Event()
            stream = host.start(host.run_stream(config.url, ready))
            try:
                async with asyncio.timeout(min(config.timeout, self.host.connect_timeout)):
                    await asyncio.wait(
                        [stream, asyncio.ensure_future(ready.wait())],
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                if stream.done():
                    stream.result()  # raises what ended it
                    return "the SSE stream ended"
                self.connection_opened(action.connection)
                await stream
            finally:
                host.stop()
        return "the SSE stream ended"

    async def _run_ws(self, action: ConnectServer, connection: Connection) -> str:
        address = WebSocketAddress.parse(action.config.url)
        ssl_context: Any = True if address.tls else None
        reader, writer = await asyncio.open_connection(
            address.hostname, address.port, ssl=ssl_context
        )
        framing = WebSocketFraming.client_to(
            action.session, action.config.url, action.config.http_headers
        )
        runner = _StreamRunner(
            action.session,
            reader,
            writer,
            self.server_driver(action),
            framing=framing,
        )
        run = asyncio.ensure_future(runner.run())
        try:
            connection.flush_now = runner._schedule_flush
            await runner.started.wait()
            await runner.flush()  # the opening handshake
            self.connection_opened(action.connection)
            await run
        finally:
            framing.close(1000, "the bridge is done with this server")
            with contextlib.suppress(Exception):
                await shielded(runner.flush)
            run.cancel()
            with contextlib.suppress(BaseException):
                await run
            writer.close()
        reason = framing.close_reason
        return f"the WebSocket closed ({reason[0]} {reason[1]})" if reason else "closed"


async def _wait_all(tasks: list[asyncio.Task[Any]]) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)


async def _finish_process(
    child: Child, run: asyncio.Task[Any], drainer: asyncio.Task[Any], grace: float
) -> None:
    with contextlib.suppress(BaseException):
        await run
    await stop_process(child.process, grace=grace, stdin=child.stdin)
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(drainer, 2)


# The agent side ----------------------------------------------------------------------------------


async def serve_agent_stream(
    bridge: AsyncioBridge, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Serve one agent over an NDJSON stream (stdio) until its input ends."""
    host = bridge.host

    def send(message: A2EMessage) -> None:
        if not writer.is_closing():
            writer.write(encode_line(message))

    host.agent_connected(bridge.now())
    bridge.attach_agent(send)
    try:
        while True:
            try:
                data = await reader.read(_READ_SIZE)
            except (ConnectionError, OSError):
                data = b""
            host.receive_agent_data(data, bridge.now())
            bridge.poke()
            if not data:
                break
            if writer.transport.get_write_buffer_size() > _READ_SIZE:
                with contextlib.suppress(ConnectionError, OSError):
                    await writer.drain()
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            await asyncio.wait_for(writer.drain(), 1.0)
    finally:
        bridge.attach_agent(None)


async def serve_agent_ws(
    bridge: AsyncioBridge,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    path: str = "/a2e",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    started: asyncio.Future[int] | None = None,
) -> None:
    """Serve agents over WebSocket, one at a time (HTTP 409 for a second). Runs until cancelled."""
    agents = WebSocketAgents(bridge)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        read_in_small_chunks(writer.transport)
        framing = A2EWebSocket(
            client=False, path=path, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
        )

        def write_now() -> None:
            data = framing.data_to_send()
            if data and not writer.is_closing():
                writer.write(data)

        async def flush() -> None:
            write_now()
            if not writer.is_closing():
                await writer.drain()

        def send(message: A2EMessage) -> None:
            framing.send_text(encode(message))
            write_now()

        agent = agents.connection(framing, send)
        try:
            while not framing.closed:
                data = await reader.read(_READ_SIZE)
                agent.received(data)
                await flush()
                if not data:
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            agent.release()
            with contextlib.suppress(Exception):
                await flush()
            writer.close()

    server = await asyncio.start_server(connection, host, port)
    if started is not None:
        started.set_result(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()
