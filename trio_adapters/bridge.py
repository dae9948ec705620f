"""The A2E MCP bridge on Trio: it moves bytes; :class:`~sansio_mcp.a2e.BridgeHost` decides.

:class:`TrioBridge` executes the host's actions: it opens each server's
transport (stdio, Streamable HTTP, legacy HTTP+SSE, WebSocket) with the
library's own Trio hosts, feeds the host what arrives, sends what it queues,
and runs its timer.  The agent side is :func:`serve_agent_stream` (NDJSON on
a byte stream, stdio) or :func:`serve_agent_ws` (one message per WebSocket
text frame).
"""

from __future__ import annotations

import logging
import math
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import attrs
import trio

from sansio_mcp._client import ClientHandlers
from sansio_mcp._session import ClientSession
from sansio_mcp._stdio import safe_environment
from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
from sansio_mcp._websocket import WebSocketFraming
from sansio_mcp.a2e import (
    A2EMessage,
    A2EWebSocket,
    BridgeHost,
    ConnectServer,
    DisconnectServer,
    FlushServer,
    SendToAgent,
    encode,
    encode_line,
)
from sansio_mcp.a2e._driver import BridgeDriver, refuse_requests

from ._process import PIPE, drain_stderr, stop_process
from ._runner import TrioRunner
from .http_client import _HTTPClientHost
from .sse import _SSEClientHost

__all__ = ["TrioBridge", "serve_agent_stream", "serve_agent_ws"]

logger = logging.getLogger("trio_adapters.bridge")

_READ_SIZE = 65536


# Wiring the library's Trio hosts to the bridge ----------------------------------------------


class _StreamRunner(TrioRunner):
    """A session over a byte stream (stdio, WebSocket); the host owns its timer."""

    def __init__(
        self,
        session: ClientSession,
        send: Any,
        receive: Any,
        pump: Callable[[], None],
        framing: Any = None,
    ) -> None:
        super().__init__(session, send, receive, handle_request=refuse_requests, framing=framing)
        self.driver = BridgeDriver(session, pump)

    def attach(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery


class _HTTPHost(_HTTPClientHost):
    def __init__(
        self, session: ClientSession, transport: StreamableHTTPClient, pump: Callable[[], None]
    ) -> None:
        super().__init__(
            session, transport, ClientHandlers(), max_body=16 * 1024 * 1024, ssl_context=None
        )
        self.driver = BridgeDriver(session, pump)

    def attach(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery


class _SSEHost(_SSEClientHost):
    def __init__(
        self, session: ClientSession, transport: StreamableHTTPClient, pump: Callable[[], None]
    ) -> None:
        super().__init__(
            session, transport, ClientHandlers(), max_body=16 * 1024 * 1024, ssl_context=None
        )
        self.driver = BridgeDriver(session, pump)

    def attach(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery


@attrs.define(eq=False)
class _Connection:
    scope: trio.CancelScope
    flush: Callable[[], Awaitable[None]] | None = None
    #: Why the transport ended, once known (a process's exit code, say).
    reason: str = ""


# The bridge ---------------------------------------------------------------------------------------


class TrioBridge:
    """Runs a :class:`BridgeHost` on Trio.

    Start :meth:`run` in a nursery (``await nursery.start(bridge.run)``),
    attach an agent with :func:`serve_agent_stream` or :func:`serve_agent_ws`.
    ``clock`` gives the host its ``now`` (seconds since the epoch).
    """

    def __init__(
        self,
        host: BridgeHost,
        *,
        clock: Callable[[], float] = time.time,
        shutdown_grace: float = 2.0,
    ) -> None:
        self.host = host
        self.clock = clock
        self.shutdown_grace = shutdown_grace
        self._nursery: trio.Nursery | None = None
        self._kick = trio.Event()
        self._timer_changed = trio.Event()
        self._connections: dict[int, _Connection] = {}
        self._agent_out_send, self._agent_out_receive = trio.open_memory_channel[A2EMessage](
            math.inf
        )
        self._agent_writer: Callable[[A2EMessage], Awaitable[None]] | None = None
        self._agent_ready = trio.Event()
        self.stopped = trio.Event()

    # Host calls (each is followed by a kick) --------------------------------------------

    def poke(self) -> None:
        """The host was fed something: execute what it queued, re-arm its timer."""
        self._kick.set()
        self._timer_changed.set()

    def now(self) -> float:
        return self.clock()

    # Running ---------------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Execute the host's actions until cancelled; then stop every server."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._action_loop)
                nursery.start_soon(self._timer_loop)
                nursery.start_soon(self._agent_write_loop)
                self.poke()
                task_status.started()
                await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await self._shutdown()
            self.stopped.set()

    async def _shutdown(self) -> None:
        self.host.close(self.clock())
        self.host.actions()  # disconnects: the connection tasks were cancelled with the nursery

    async def _action_loop(self) -> None:
        assert self._nursery is not None
        while True:
            await self._kick.wait()
            self._kick = trio.Event()
            for action in self.host.actions():
                if isinstance(action, SendToAgent):
                    self._agent_out_send.send_nowait(action.message)
                elif isinstance(action, ConnectServer):
                    connection = _Connection(trio.CancelScope())
                    self._connections[action.connection] = connection
                    self._nursery.start_soon(self._connection, action, connection)
                elif isinstance(action, FlushServer):
                    found = self._connections.get(action.connection)
                    if found is not None and found.flush is not None:
                        self._nursery.start_soon(found.flush)
                elif isinstance(action, DisconnectServer):
                    found = self._connections.get(action.connection)
                    if found is not None:
                        found.scope.cancel()
            self._timer_changed.set()

    async def _timer_loop(self) -> None:
        while True:
            deadline = self.host.next_deadline()
            delay = math.inf if deadline is None else max(0.0, deadline - self.clock())
            with trio.move_on_after(delay):
                await self._timer_changed.wait()
                self._timer_changed = trio.Event()
                continue
            self.host.handle_timer(self.clock())
            self.poke()

    async def _agent_write_loop(self) -> None:
        async for message in self._agent_out_receive:
            writer = self._agent_writer
            if writer is None:
                logger.debug("no agent attached: dropped %s", message.type)
                continue
            try:
                await writer(message)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                logger.debug("the agent is gone: dropped %s", message.type)

    async def agent_output_sent(self, *, timeout: float) -> None:
        """Wait (at most ``timeout``) until what was queued for the agent has gone out."""
        with trio.move_on_after(timeout):
            await trio.sleep(0)
            while self._agent_out_receive.statistics().current_buffer_used or self._kick.is_set():
                await trio.sleep(0.01)

    def attach_agent(self, writer: Callable[[A2EMessage], Awaitable[None]] | None) -> None:
        """Where messages for the agent go (None: nowhere, they are dropped)."""
        self._agent_writer = writer

    # Servers ---------------------------------------------------------------------------

    def _input(self, conn: int) -> Callable[[], None]:
        def pump() -> None:
            self.host.connection_input(conn, self.clock())
            self.poke()

        return pump

    def _opened(self, conn: int) -> None:
        self.host.connection_opened(conn, self.clock())
        self.poke()

    async def _connection(self, action: ConnectServer, connection: _Connection) -> None:
        conn = action.connection
        try:
            with connection.scope:
                transport = action.config.transport
                opener = {
                    "stdio": self._run_stdio,
                    "http": self._run_http,
                    "sse": self._run_sse,
                    "ws": self._run_ws,
                }[transport]
                ended = await opener(action, connection)
                connection.reason = connection.reason or ended
        except Exception as exc:  # any failure to connect or to keep going
            connection.reason = connection.reason or _describe(exc)
            logger.debug("server %s: %s", action.server_id, connection.reason)
        finally:
            self._connections.pop(conn, None)
            # Cancelled by the host (it already knows why), unless the transport said more.
            self.host.connection_lost(conn, connection.reason, self.clock())
            self.poke()

    async def _run_stdio(self, action: ConnectServer, connection: _Connection) -> str:
        config = action.config
        env = safe_environment(os.environ, {k: str(v) for k, v in config.env.items()})
        process = await trio.lowlevel.open_process(
            list(config.cmd),
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            env=env,
            cwd=config.cwd or None,
            start_new_session=os.name != "nt",
        )
        try:
            assert process.stdin and process.stdout and process.stderr
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    drain_stderr,
                    process.stderr,
                    f"{action.server_id}:{os.path.basename(config.cmd[0])}",
                )
                runner = _StreamRunner(
                    action.session, process.stdin, process.stdout, self._input(action.connection)
                )
                connection.flush = runner.flush
                await nursery.start(runner.run)
                self._opened(action.connection)
                await runner.wait_closed()
                nursery.cancel_scope.cancel()
        finally:
            await stop_process(process, grace=self.shutdown_grace)
            connection.reason = f"the server process exited (code {process.returncode})"
        return connection.reason

    async def _run_http(self, action: ConnectServer, connection: _Connection) -> str:
        config = action.config
        transport = StreamableHTTPClient(
            Endpoint.parse(config.url),
            action.session,
            headers={str(k): str(v) for k, v in config.headers.items()},
        )
        host = _HTTPHost(action.session, transport, self._input(action.connection))
        async with trio.open_nursery() as nursery:
            host.attach(nursery)
            connection.flush = host.flush
            self._opened(action.connection)
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await host.end_session()
                nursery.cancel_scope.cancel()
        return "closed"  # pragma: no cover - sleep_forever only ends by cancellation

    async def _run_sse(self, action: ConnectServer, connection: _Connection) -> str:
        config = action.config
        transport = StreamableHTTPClient(
            Endpoint.parse(config.url),
            action.session,
            headers={str(k): str(v) for k, v in config.headers.items()},
        )
        host = _SSEHost(action.session, transport, self._input(action.connection))
        ended = trio.Event()
        async with trio.open_nursery() as nursery:
            host.attach(nursery)
            connection.flush = host.flush

            async def stream(ready: trio.Event) -> None:
                try:
                    await host.run_stream(config.url, ready)
                finally:
                    ended.set()

            ready = trio.Event()
            nursery.start_soon(stream, ready)
            with trio.fail_after(min(config.timeout, self.host.connect_timeout)):
                await ready.wait()
            self._opened(action.connection)
            await ended.wait()
            nursery.cancel_scope.cancel()
        return "the SSE stream ended"

    async def _run_ws(self, action: ConnectServer, connection: _Connection) -> str:
        parts = urlsplit(action.config.url)
        assert parts.hostname is not None
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        stream: trio.abc.Stream = await trio.open_tcp_stream(parts.hostname, port)
        if parts.scheme == "wss":
            stream = trio.SSLStream(
                stream, ssl.create_default_context(), server_hostname=parts.hostname
            )
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        framing = WebSocketFraming(action.session, client=True, host=parts.netloc, target=target)
        runner = _StreamRunner(
            action.session, stream, stream, self._input(action.connection), framing=framing
        )
        async with stream:
            async with trio.open_nursery() as nursery:
                connection.flush = runner.flush
                await nursery.start(runner.run)
                await runner.flush()  # the opening handshake
                self._opened(action.connection)
                try:
                    await runner.wait_closed()
                finally:
                    framing.close(1000, "the bridge is done with this server")
                    with trio.CancelScope(shield=True), trio.move_on_after(1):
                        await runner.flush()
                    nursery.cancel_scope.cancel()
        reason = framing.close_reason
        return f"the WebSocket closed ({reason[0]} {reason[1]})" if reason else "closed"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the server: {exc.strerror}: {exc.filename!r}"
    if isinstance(exc, trio.TooSlowError):
        return "connecting timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# The agent side ----------------------------------------------------------------------------------


async def serve_agent_stream(
    bridge: TrioBridge,
    send_stream: trio.abc.SendStream,
    receive_stream: trio.abc.ReceiveStream,
) -> None:
    """Serve one agent over an NDJSON byte stream (stdio) until its input ends."""
    host = bridge.host
    lock = trio.Lock()

    async def write(message: A2EMessage) -> None:
        async with lock:
            await send_stream.send_all(encode_line(message))

    host.agent_connected(bridge.now())
    bridge.attach_agent(write)
    try:
        while True:
            try:
                data = await receive_stream.receive_some(_READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            host.receive_agent_data(data, bridge.now())
            bridge.poke()
            if not data:
                break
        await bridge.agent_output_sent(timeout=1.0)
    finally:
        bridge.attach_agent(None)


async def serve_agent_ws(
    bridge: TrioBridge,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    path: str = "/a2e",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve agents over WebSocket at ``ws://host:port/path``, one at a time
    (a second concurrent agent is refused with HTTP 409).  Runs until cancelled."""
    busy = False

    async def connection(stream: trio.abc.Stream) -> None:
        nonlocal busy
        framing = A2EWebSocket(
            client=False, path=path, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
        )
        if busy:
            framing.refuse_with = 409
        lock = trio.Lock()
        mine = False

        async def flush() -> None:
            async with lock:
                data = framing.data_to_send()
                if data:
                    await stream.send_all(data)

        async def write(message: A2EMessage) -> None:
            framing.send_text(encode(message))
            await flush()

        def release() -> None:
            # Before the close reply goes out: the next agent may connect at once.
            nonlocal busy, mine
            if mine:
                busy = mine = False
                bridge.attach_agent(None)
                bridge.host.agent_disconnected(bridge.now())
                bridge.poke()

        try:
            while not framing.closed:
                data = await stream.receive_some(_READ_SIZE)
                texts = framing.receive_data(data)
                if framing.open and not mine and framing.refused is None and not busy:
                    busy = mine = True
                    bridge.host.agent_connected(bridge.now())
                    bridge.attach_agent(write)
                for text in texts:
                    bridge.host.receive_agent_text(text, bridge.now())
                bridge.poke()
                if framing.closed:
                    release()
                await flush()
                if not data:
                    break
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            release()
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                try:
                    await flush()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass
                await stream.aclose()

    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(connection, listeners)
