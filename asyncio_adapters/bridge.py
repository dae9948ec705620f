"""The A2E MCP bridge on asyncio: the same :class:`~sansio_mcp.a2e.BridgeHost`
as on Trio, with asyncio moving the bytes.

:class:`AsyncioBridge` executes the host's actions over stdio, Streamable
HTTP, legacy HTTP+SSE and WebSocket (the library's own asyncio hosts);
:func:`serve_agent_stream` and :func:`serve_agent_ws` attach the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any
from urllib.parse import urlsplit

import attrs

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

from ._process import drain_stderr, stop_process
from ._runner import AsyncioRunner, shielded
from .http_client import _HTTPClientHost
from .sse import _SSEClientHost

__all__ = ["AsyncioBridge", "serve_agent_stream", "serve_agent_ws"]

logger = logging.getLogger("asyncio_adapters.bridge")

_READ_SIZE = 65536


class _StreamRunner(AsyncioRunner):
    """A session over a stream (stdio, WebSocket); the host owns its timer."""

    def __init__(
        self,
        session: ClientSession,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pump: Callable[[], None],
        framing: Any = None,
    ) -> None:
        super().__init__(session, reader, writer, handle_request=refuse_requests, framing=framing)
        self.driver = BridgeDriver(session, pump)

    def attach(self, group: asyncio.TaskGroup) -> None:
        self._group = group


class _HTTPHost(_HTTPClientHost):
    def __init__(
        self, session: ClientSession, transport: StreamableHTTPClient, pump: Callable[[], None]
    ) -> None:
        super().__init__(
            session, transport, ClientHandlers(), max_body=16 * 1024 * 1024, ssl_context=None
        )
        self.driver = BridgeDriver(session, pump)

    def attach(self, group: asyncio.TaskGroup) -> None:
        self._group = group


class _SSEHost(_SSEClientHost):
    def __init__(
        self, session: ClientSession, transport: StreamableHTTPClient, pump: Callable[[], None]
    ) -> None:
        super().__init__(
            session, transport, ClientHandlers(), max_body=16 * 1024 * 1024, ssl_context=None
        )
        self.driver = BridgeDriver(session, pump)

    def attach(self, group: asyncio.TaskGroup) -> None:
        self._group = group


@attrs.define(eq=False)
class _Connection:
    task: asyncio.Task[None] | None = None
    flush: Callable[[], Coroutine[Any, Any, None]] | None = None
    reason: str = ""
    cancelled_early: bool = False


class AsyncioBridge:
    """Runs a :class:`BridgeHost` on asyncio: ``await bridge.run()`` until cancelled."""

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
        self._kick = asyncio.Event()
        self._timer_changed = asyncio.Event()
        self._connections: dict[int, _Connection] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._agent_out: asyncio.Queue[A2EMessage] = asyncio.Queue()
        self._agent_writer: Callable[[A2EMessage], Awaitable[None]] | None = None
        self.started = asyncio.Event()

    def poke(self) -> None:
        self._kick.set()
        self._timer_changed.set()

    def now(self) -> float:
        return self.clock()

    def attach_agent(self, writer: Callable[[A2EMessage], Awaitable[None]] | None) -> None:
        self._agent_writer = writer

    async def agent_output_sent(self, *, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await asyncio.sleep(0)
                while not self._agent_out.empty() or self._kick.is_set():
                    await asyncio.sleep(0.01)

    def _start(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run(self) -> None:
        """Execute the host's actions until cancelled; then stop every server."""
        loops = [
            self._start(self._action_loop()),
            self._start(self._timer_loop()),
            self._start(self._agent_write_loop()),
        ]
        self.poke()
        self.started.set()
        try:
            await asyncio.gather(*loops)
        finally:
            for task in list(self._tasks):
                task.cancel()
            pending = [t for t in self._tasks if not t.done()]
            if pending:
                await shielded(lambda: _wait_all(pending))
            self.host.close(self.clock())
            self.host.actions()

    async def _action_loop(self) -> None:
        while True:
            await self._kick.wait()
            self._kick.clear()
            for action in self.host.actions():
                if isinstance(action, SendToAgent):
                    self._agent_out.put_nowait(action.message)
                elif isinstance(action, ConnectServer):
                    connection = _Connection()
                    self._connections[action.connection] = connection
                    connection.task = self._start(self._connection(action, connection))
                elif isinstance(action, FlushServer):
                    found = self._connections.get(action.connection)
                    if found is not None and found.flush is not None:
                        self._start(found.flush())
                elif isinstance(action, DisconnectServer):
                    found = self._connections.get(action.connection)
                    if found is not None and found.task is not None:
                        found.task.cancel()
            self._timer_changed.set()

    async def _timer_loop(self) -> None:
        while True:
            deadline = self.host.next_deadline()
            delay = None if deadline is None else max(0.0, deadline - self.clock())
            try:
                async with asyncio.timeout(delay):
                    await self._timer_changed.wait()
                self._timer_changed.clear()
                continue
            except TimeoutError:
                pass
            self.host.handle_timer(self.clock())
            self.poke()

    async def _agent_write_loop(self) -> None:
        while True:
            message = await self._agent_out.get()
            writer = self._agent_writer
            if writer is None:
                logger.debug("no agent attached: dropped %s", message.type)
                continue
            try:
                await writer(message)
            except (ConnectionError, OSError):
                logger.debug("the agent is gone: dropped %s", message.type)

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
            opener = {
                "stdio": self._run_stdio,
                "http": self._run_http,
                "sse": self._run_sse,
                "ws": self._run_ws,
            }[action.config.transport]
            ended = await opener(action, connection)
            connection.reason = connection.reason or ended
        except asyncio.CancelledError:
            pass  # the host asked for it (or the bridge is stopping)
        except Exception as exc:
            connection.reason = connection.reason or _describe(exc)
            logger.debug("server %s: %s", action.server_id, connection.reason)
        finally:
            self._connections.pop(conn, None)
            self.host.connection_lost(conn, connection.reason, self.clock())
            self.poke()

    async def _run_stdio(self, action: ConnectServer, connection: _Connection) -> str:
        config = action.config
        env = safe_environment(os.environ, {k: str(v) for k, v in config.env.items()})
        process = await asyncio.create_subprocess_exec(
            *config.cmd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=config.cwd or None,
            start_new_session=os.name != "nt",
        )
        assert process.stdin and process.stdout and process.stderr
        name = f"{action.server_id}:{os.path.basename(config.cmd[0])}"
        drainer = asyncio.ensure_future(drain_stderr(process.stderr, name))
        runner = _StreamRunner(
            action.session, process.stdout, process.stdin, self._input(action.connection)
        )
        run = asyncio.ensure_future(runner.run())
        try:
            connection.flush = runner.flush
            await runner.started.wait()
            self._opened(action.connection)
            await run
        finally:
            run.cancel()
            await shielded(lambda: _finish_process(process, run, drainer, self.shutdown_grace))
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
        async with asyncio.TaskGroup() as group:
            host.attach(group)
            connection.flush = host.flush
            self._opened(action.connection)
            try:
                await asyncio.Event().wait()
            finally:
                await shielded(host.end_session)
                host.stop()
        return "closed"  # pragma: no cover - only cancellation ends it

    async def _run_sse(self, action: ConnectServer, connection: _Connection) -> str:
        config = action.config
        transport = StreamableHTTPClient(
            Endpoint.parse(config.url),
            action.session,
            headers={str(k): str(v) for k, v in config.headers.items()},
        )
        host = _SSEHost(action.session, transport, self._input(action.connection))
        async with asyncio.TaskGroup() as group:
            host.attach(group)
            connection.flush = host.flush
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
                self._opened(action.connection)
                await stream
            finally:
                host.stop()
        return "the SSE stream ended"

    async def _run_ws(self, action: ConnectServer, connection: _Connection) -> str:
        parts = urlsplit(action.config.url)
        assert parts.hostname is not None
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        ssl_context: Any = True if parts.scheme == "wss" else None
        reader, writer = await asyncio.open_connection(parts.hostname, port, ssl=ssl_context)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        framing = WebSocketFraming(action.session, client=True, host=parts.netloc, target=target)
        runner = _StreamRunner(
            action.session, reader, writer, self._input(action.connection), framing=framing
        )
        run = asyncio.ensure_future(runner.run())
        try:
            connection.flush = runner.flush
            await runner.started.wait()
            await runner.flush()  # the opening handshake
            self._opened(action.connection)
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
    process: asyncio.subprocess.Process,
    run: asyncio.Task[Any],
    drainer: asyncio.Task[Any],
    grace: float,
) -> None:
    with contextlib.suppress(BaseException):
        await run
    await stop_process(process, grace=grace)
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(drainer, 2)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the server: {exc.strerror}: {exc.filename!r}"
    if isinstance(exc, TimeoutError):
        return "connecting timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# The agent side ----------------------------------------------------------------------------------


async def serve_agent_stream(
    bridge: AsyncioBridge, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Serve one agent over an NDJSON stream (stdio) until its input ends."""
    host = bridge.host
    lock = asyncio.Lock()

    async def write(message: A2EMessage) -> None:
        async with lock:
            writer.write(encode_line(message))
            await writer.drain()

    host.agent_connected(bridge.now())
    bridge.attach_agent(write)
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
        await bridge.agent_output_sent(timeout=1.0)
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
    state = {"busy": False}

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framing = A2EWebSocket(
            client=False, path=path, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
        )
        if state["busy"]:
            framing.refuse_with = 409
        lock = asyncio.Lock()
        mine = {"on": False}

        async def flush() -> None:
            async with lock:
                data = framing.data_to_send()
                if data and not writer.is_closing():
                    writer.write(data)
                    await writer.drain()

        async def write(message: A2EMessage) -> None:
            framing.send_text(encode(message))
            await flush()

        def release() -> None:
            if mine["on"]:
                mine["on"] = state["busy"] = False
                bridge.attach_agent(None)
                bridge.host.agent_disconnected(bridge.now())
                bridge.poke()

        try:
            while not framing.closed:
                data = await reader.read(_READ_SIZE)
                texts = framing.receive_data(data)
                if (
                    framing.open
                    and not mine["on"]
                    and framing.refused is None
                    and not state["busy"]
                ):
                    mine["on"] = state["busy"] = True
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
        except (ConnectionError, OSError):
            pass
        finally:
            release()
            with contextlib.suppress(Exception):
                await flush()
            writer.close()

    server = await asyncio.start_server(connection, host, port)
    if started is not None:
        started.set_result(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()
