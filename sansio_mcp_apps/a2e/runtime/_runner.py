"""The bridge runner, backend-neutral: it feeds a :class:`~sansio_mcp_apps.a2e.BridgeHost`
and carries out what it queues.

Actions are executed synchronously, in the task that fed the host (no hop
through an action task); server output is written through each connection's
``flush_now`` (which sends what it can at once and leaves the rest to that
connection's writer); messages for the agent go to one synchronous sink (and a
tool call's ToolResult straight to an in-process agent's ``answer`` when it
takes it); the host's deadlines are one :class:`~sansio_mcp.runtime.Timer`, set
again only when the host arms a deadline earlier than the one it waits for
(:meth:`BridgeHost.deadline_added`).  The runner owns the policy: its task
group, a task per server connection (cancelled by the host's
:class:`DisconnectServer`), a server process's start, stderr and shutdown
order, and the shutdown of the whole.  Its :class:`~sansio_mcp.runtime.Backend`
gives it the primitives, and a :class:`BridgeLinks` of the adapter moves each
link's bytes with the adapter's own session hosts.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import attrs

from sansio_mcp import safe_environment
from sansio_mcp.http import Endpoint, StreamableHTTPClient
from sansio_mcp.runtime import (
    Backend,
    ClientHandlers,
    Driver,
    Process,
    Signal,
    TaskGroup,
    TimedOut,
    Timer,
    drain_stderr,
    stop_process,
)

from ...a2e._actions import ConnectServer, DisconnectServer, FlushServer, ToolAnswer
from ...a2e._config import BridgeConfig, parse_config
from ...a2e._host import BridgeHost
from ...a2e._messages import A2EMessage
from ._driver import BridgeDriver

R = TypeVar("R", bound="BridgeRunner")
H = TypeVar("H", bound="LinkHost")

__all__ = [
    "AgentSink",
    "AnswerSink",
    "BridgeLinks",
    "BridgeRunner",
    "Connection",
    "TransportRunner",
    "describe_failure",
    "direct_bridge",
]

logger = logging.getLogger("sansio_mcp_apps.a2e")

#: Where messages for the agent go: encode and write them, or hand them over.
AgentSink = Callable[[A2EMessage], None]
#: Connects to a server over one transport and moves its bytes until the
#: transport ends; returns why it ended.
TransportRunner = Callable[[ConnectServer, "Connection"], Awaitable[str]]
#: An in-process agent's way to take a tool call's ToolResult without the message:
#: ``answer(req_id, result)`` is True if it took it.
AnswerSink = Callable[[str, dict[str, Any]], bool]


@attrs.define(eq=False)
class Connection:
    """One server connection as a runner tracks it."""

    #: Send what the session queued, without waiting (set once the transport is up;
    #: what it returns is ignored).
    flush_now: Callable[[], object] | None = None
    #: Why the transport ended, once known (a process's exit code, say).
    reason: str = ""
    #: Torn down (or to be, as soon as its task starts).
    cancelled: bool = False
    #: The scope of the connection's task, once it runs.
    scope: TaskGroup | None = None

    def cancel(self) -> None:
        """Tear the transport down (cancel its task)."""
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()


class LinkHost(Protocol):
    """What :meth:`BridgeRunner.link_host` sets on an adapter's HTTP client host."""

    runs_timer: bool
    driver: Driver


class BridgeLinks(Protocol):
    """How an adapter moves a server link's bytes, with its own session hosts
    (each one's driver is :meth:`BridgeRunner.server_driver`).  Each runs until the
    link ends, sets ``connection.flush_now`` and calls
    :meth:`BridgeRunner.connection_opened` once the session can be written to,
    and returns why the link ended; cancellation tears it down."""

    async def stdio(
        self, runner: BridgeRunner, action: ConnectServer, connection: Connection, process: Process
    ) -> None:
        """The session over ``process``'s stdin and stdout (the runner started the
        process, drains its stderr and stops it)."""
        ...

    async def http(
        self, runner: BridgeRunner, action: ConnectServer, connection: Connection
    ) -> str:
        """Streamable HTTP."""
        ...

    async def sse(self, runner: BridgeRunner, action: ConnectServer, connection: Connection) -> str:
        """Legacy HTTP+SSE."""
        ...

    async def ws(self, runner: BridgeRunner, action: ConnectServer, connection: Connection) -> str:
        """WebSocket."""
        ...


class BridgeRunner:
    """Executes a :class:`BridgeHost`'s actions on ``backend``, the links' bytes moved
    by ``links``; ``clock`` gives the host its ``now`` (seconds since the epoch: it
    also stamps ``ts``).  :meth:`run` it, then attach an agent."""

    #: Where a connection's failure is logged (a subclass names its own module).
    log = logger
    #: What the event loop raises when connecting took too long (Trio adds its own).
    timeout_errors: tuple[type[BaseException], ...] = (TimedOut, TimeoutError)
    #: The event-loop primitives and the links' byte movers (an adapter's bridge
    #: class names its own).
    backend: Backend
    links: BridgeLinks

    def __init__(
        self,
        host: BridgeHost,
        *,
        clock: Callable[[], float] | None = None,
        shutdown_grace: float = 2.0,
        backend: Backend | None = None,
        links: BridgeLinks | None = None,
    ) -> None:
        self.host = host
        if backend is not None:
            self.backend = backend
        if links is not None:
            self.links = links
        backend = self.backend
        #: Gives the host its ``now``: the backend's wall clock unless told.
        self.clock = clock if clock is not None else backend.wall_clock
        #: How long a server process gets after its stdin closes, then after SIGTERM.
        self.shutdown_grace = shutdown_grace
        #: Set while :meth:`run` runs (it can open connections).
        self.running = False
        #: Set once :meth:`run` runs, and once it has stopped every server.
        self.started: Signal = backend.new_signal()
        self.stopped: Signal = backend.new_signal()
        self._group: TaskGroup | None = None
        self._timer: Timer | None = None
        self._connections: dict[int, Connection] = {}
        self._agent: AgentSink | None = None
        self._answer: AnswerSink | None = None
        self._armed = math.inf
        self._executing = False

    # Running -------------------------------------------------------------------------

    async def run(self, *, ready: Callable[[], object] | None = None) -> None:
        """Execute the host's actions until cancelled (``ready()`` once running);
        then stop every server."""
        backend = self.backend
        try:
            async with backend.open_task_group() as group:
                self._group = group
                self._timer = backend.start_timer(group, self._timer_due)
                self.running = True
                self.poke()
                self.wake_timer()
                self.started.set()
                if ready is not None:
                    ready()
                try:
                    await backend.sleep(math.inf)
                finally:
                    # Nothing new starts while the connection tasks stop their servers.
                    self.running = False
                    self._timer.cancel()
        finally:
            self.running = False
            self._group = None
            self.shutdown()
            self.stopped.set()

    def open_connection(self, action: ConnectServer) -> Connection:
        """Start the task that connects to a server and serves its transport."""
        assert self._group is not None
        connection = Connection()
        self._group.start_soon(self._connection, action, connection)
        return connection

    async def _connection(self, action: ConnectServer, connection: Connection) -> None:
        async with self.backend.open_task_group() as scope:
            connection.scope = scope
            if connection.cancelled:  # torn down before its task began
                scope.cancel()
            await self.serve_connection(action, connection)

    # Executing actions ---------------------------------------------------------------

    def now(self) -> float:
        return self.clock()

    def poke(self) -> None:
        """The host was fed something: carry out what it queued, now."""
        if not self.running or self._executing:
            return  # queued until running; or the loop below picks them up
        self._executing = True
        host = self.host
        try:
            while host.queued:
                for item in host.drain():
                    # The commonest first: this runs for every message.
                    if isinstance(item, FlushServer):
                        found = self._connections.get(item.connection)
                        if found is not None and found.flush_now is not None:
                            found.flush_now()
                    elif isinstance(item, ToolAnswer):
                        answer = self._answer
                        if answer is None or not answer(item.req_id, item.data):
                            self._to_agent(host.message_of(item))
                    elif isinstance(item, A2EMessage):
                        self._to_agent(item)
                    elif isinstance(item, ConnectServer):
                        self._connections[item.connection] = self.open_connection(item)
                    elif isinstance(item, DisconnectServer):
                        found = self._connections.get(item.connection)
                        if found is not None:
                            found.cancel()
        finally:
            self._executing = False
        deadline = host.deadline_added()
        if deadline is not None and deadline < self._armed:
            self._armed = deadline
            self.wake_timer()

    def _to_agent(self, message: A2EMessage) -> None:
        agent = self._agent
        if agent is None:
            logger.debug("no agent attached: dropped %s", message.type)
        else:
            agent(message)

    # The timer -------------------------------------------------------------------------

    def wake_timer(self) -> None:
        """The earliest deadline moved: set the timer to it."""
        if self._timer is not None:
            self._timer.set(self.timer_delay())

    def timer_delay(self) -> float:
        """Seconds until the host's next deadline (``math.inf``: none)."""
        self.host.deadline_added()  # all included below
        deadline = self.host.next_deadline()
        self._armed = math.inf if deadline is None else deadline
        return max(0.0, self._armed - self.clock())

    def _timer_due(self) -> None:
        self.host.handle_timer(self.clock())
        self.poke()
        self.wake_timer()

    # Server connections -----------------------------------------------------------------

    def server_driver(self, action: ConnectServer) -> BridgeDriver:
        """The driver for the session host of ``action``'s connection: every event
        of the session goes to the host, at once."""
        return BridgeDriver(action.session, self, action.connection)

    def http_transport(self, action: ConnectServer) -> StreamableHTTPClient:
        """The HTTP client side (Streamable HTTP, or legacy SSE's POSTs) of ``action``'s
        session, to the server's URL with its configured headers."""
        config = action.config
        return StreamableHTTPClient(
            Endpoint.parse(config.url), action.session, headers=config.http_headers
        )

    def link_host(self, cls: Callable[..., H], action: ConnectServer) -> H:
        """An adapter's HTTP (or legacy SSE) client host of class ``cls`` on ``action``'s
        session, every event to the bridge host; that host enforces the session's
        deadlines, so the client host runs no timer of its own (its attach still
        closes its kept-alive connections when it ends)."""
        host = cls(
            action.session,
            self.http_transport(action),
            ClientHandlers(),
            max_body=16 * 1024 * 1024,
            ssl_context=None,
        )
        host.runs_timer = False
        host.driver = self.server_driver(action)
        return host

    def transport_runner(self, transport: str) -> TransportRunner:
        """What connects to a server over ``transport`` (stdio, http, sse, ws)."""
        links = self.links
        if transport == "stdio":
            return self._run_stdio
        runners: dict[str, Callable[..., Awaitable[str]]] = {
            "http": links.http,
            "sse": links.sse,
            "ws": links.ws,
        }
        run = runners[transport]
        return lambda action, connection: run(self, action, connection)

    async def _run_stdio(self, action: ConnectServer, connection: Connection) -> str:
        """Start the server's process, serve its session over its pipes (the links'
        part) while logging its stderr, and stop it (stdin closed, then SIGTERM,
        then SIGKILL after :attr:`shutdown_grace`) however the link ended."""
        config, backend = action.config, self.backend
        env = safe_environment(os.environ, {k: str(v) for k, v in config.env.items()})
        process = await backend.open_process(config.cmd, env=env, cwd=config.cwd or None)
        try:
            async with backend.open_task_group() as group:
                name = f"{action.server_id}:{os.path.basename(config.cmd[0])}"
                group.start_soon(drain_stderr, process.stderr, name)
                await self.links.stdio(self, action, connection, process)
                group.cancel()
        finally:
            await stop_process(backend, process, grace=self.shutdown_grace)
            connection.reason = f"the server process exited (code {process.returncode})"
        return connection.reason

    async def serve_connection(self, action: ConnectServer, connection: Connection) -> None:
        """The body of a connection task: connect over the server's transport and
        serve it until it ends, then tell the host why.  Cancellation (the host's
        :class:`DisconnectServer`, or the bridge stopping) passes through: the host
        already knows why, unless the transport said more."""
        try:
            ended = await self.transport_runner(action.config.transport)(action, connection)
            connection.reason = connection.reason or ended
        except Exception as exc:  # any failure to connect or to keep going
            connection.reason = connection.reason or describe_failure(exc, self.timeout_errors)
            self.log.debug("server %s: %s", action.server_id, connection.reason)
        finally:
            self.connection_ended(action.connection)

    def connection_opened(self, conn: int) -> None:
        self.host.connection_opened(conn, self.clock())
        self.poke()

    def connection_ended(self, conn: int) -> None:
        """A connection task finished, for whatever reason."""
        found = self._connections.pop(conn, None)
        self.host.connection_lost(conn, found.reason if found else "", self.clock())
        self.poke()

    def connection(self, conn: int) -> Connection | None:
        return self._connections.get(conn)

    # The agent ------------------------------------------------------------------------------

    def attach_agent(self, sink: AgentSink | None, answer: AnswerSink | None = None) -> None:
        """Where messages for the agent go (None: nowhere, they are dropped), and
        where an in-process agent takes ToolResults without the message."""
        self._agent = sink
        self._answer = answer

    def connect_agent(self, sink: AgentSink, answer: AnswerSink | None = None) -> None:
        """An in-process agent arrives: messages for it go to ``sink`` (ToolResults
        to ``answer`` first, when given)."""
        self.host.agent_connected(self.clock())
        self.attach_agent(sink, answer)

    async def agent_send(self, message: A2EMessage) -> None:
        """An in-process agent's ``send``: the message is handled at once, in the
        caller's task (checked and copied first: :meth:`BridgeHost.receive_agent_message`)."""
        self.host.receive_agent_message(message, self.clock())
        self.poke()

    def agent_tool_call(
        self, req_id: str, tool_name: str, arguments: dict[str, Any], timeout: int, streaming: bool
    ) -> None:
        """An in-process agent's tool call, as its fields (see
        :meth:`BridgeHost.receive_tool_call`), handled at once in the caller's task."""
        self.host.receive_tool_call(
            req_id, tool_name, arguments, timeout, self.clock(), streaming=streaming
        )
        self.poke()

    def disconnect_agent(self) -> None:
        """The in-process agent is done: what servers asked of it is refused."""
        self.attach_agent(None)
        self.host.agent_disconnected(self.clock())
        self.poke()

    def shutdown(self) -> None:
        """Disconnect every server (their tasks, if any are left, are cancelled)."""
        self.host.close(self.clock())
        for action in self.host.drain():
            if isinstance(action, DisconnectServer):
                found = self._connections.get(action.connection)
                if found is not None:
                    found.cancel()


def describe_failure(
    exc: BaseException,
    timeout_errors: tuple[type[BaseException], ...] = (TimedOut, TimeoutError),
) -> str:
    """Why a server connection failed, as its status tells the agent."""
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the server: {exc.strerror}: {exc.filename!r}"
    if isinstance(exc, timeout_errors):
        return "connecting timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def direct_bridge(
    make: Callable[[BridgeHost], R],
    config: Mapping[str, Any] | BridgeConfig | None,
    host: BridgeHost | None,
) -> R:
    """The runner of an in-process bridge: ``host``, or one made from ``config``
    (what ``sansio-mcp bridge --config`` reads), with the config's servers registered."""
    settings = config if isinstance(config, BridgeConfig) else parse_config(config or {})
    runner = make(host or settings.new_host())
    for server in settings.servers:
        runner.host.register(server, runner.clock())
    return runner
