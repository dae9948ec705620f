"""MCP over WebSocket, written once for every backend: a server's connection
(one session per connection, the connection cap, the keep-alive pings and their
pong deadline, the opening handshake's time limit, a broken connection kept from
taking the server down) and a client's (the opening and closing handshakes).
The adapter opens or accepts the connection and makes the session's runner over it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, TypeVar

import attrs

from .._json import DEFAULT_MAX_MESSAGE_SIZE
from .._server_session import ServerSession
from .._websocket import WebSocketAddress, WebSocketFraming
from ._backend import Backend, Connection
from ._client import ClientAPI
from ._client_options import ClientOptions
from ._host import HostBase
from ._http_service import DEFAULT_LIMITS, ConnectionGate, ServerLimits, refuse_connection
from ._open_client import run_client
from ._serve_options import Listening, WebSocketServeOptions
from ._server import Server

__all__ = ["ConnectionRunner", "WebSocketServing", "keep_websocket_alive", "open_websocket"]

C = TypeVar("C", bound=ClientAPI)

logger = logging.getLogger("sansio_mcp.websocket")


class ConnectionRunner(Protocol):
    """An adapter's session host over one connection (``TrioRunner``, ``AsyncioRunner``)."""

    backend: Backend

    async def run(self) -> None:
        """Read and dispatch until the peer closes its side."""
        ...

    async def flush(self) -> None: ...

    def _schedule_flush(self) -> None: ...


async def keep_websocket_alive(
    framing: WebSocketFraming,
    host: ConnectionRunner,
    interval: float,
    pong_timeout: float | None = None,
    abort: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Ping the peer after every ``interval`` seconds until the connection closes, so
    intermediaries do not drop an idle connection.  With ``pong_timeout``, a peer
    that has not answered a ping that many seconds after it was sent (a dead or
    stalled peer, which would hold its session for good) is closed with ``abort``."""
    backend = host.backend
    while not framing.closed:
        await backend.sleep(interval)
        framing.ping()
        if pong_timeout is None or abort is None:
            await host.flush()
            continue
        async with backend.move_on_after(pong_timeout):
            await host.flush()  # (a peer that reads nothing holds this up: under the deadline)
            await backend.sleep(pong_timeout)
        if framing.awaiting_pong and not framing.closed:
            logger.info("no pong within %g s; closing the WebSocket connection", pong_timeout)
            await abort()
            return


@attrs.frozen
class WebSocketServing:
    """What ``serve_ws`` serves (its keywords): sessions of ``server`` at ``path``;
    a connection whose opening handshake is not done within ``handshake_timeout``
    seconds is closed; ``ping_interval`` keeps idle connections open, and a peer
    that does not answer a ping within ``pong_timeout`` seconds is closed.  Of
    ``limits`` (the HTTP listeners' :class:`ServerLimits`) ``max_connections``
    counts: one more connection gets an immediate 503 with ``Retry-After``, as
    from the HTTP listeners."""

    server: Server
    path: str = "/mcp"
    allowed_hosts: Iterable[str] | None = None
    allowed_origins: Iterable[str] | None = None
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    ping_interval: float | None = 20.0
    handshake_timeout: float | None = 10.0
    pong_timeout: float | None = 15.0
    limits: ServerLimits = DEFAULT_LIMITS
    _gate: ConnectionGate = attrs.field(init=False, eq=False, repr=False)

    @_gate.default
    def _new_gate(self) -> ConnectionGate:
        return ConnectionGate(self.limits)

    @classmethod
    def of(
        cls, server: Server, options: WebSocketServeOptions
    ) -> tuple[WebSocketServing, Listening]:
        """``serve_ws``'s keywords as what it serves, and where it listens."""
        where = {k: v for k, v in options.items() if k in ("host", "port")}
        serving: dict[str, Any] = {k: v for k, v in options.items() if k not in where}
        return cls(server, **serving), Listening.of(where)

    async def connection(
        self,
        make_runner: Callable[[ServerSession, WebSocketFraming], ConnectionRunner],
        abort: Callable[[], Awaitable[None]],
        stream: Connection,
        backend: Backend,
    ) -> None:
        """Serve one accepted connection (``stream``): ``make_runner`` runs a session
        over it, ``abort`` closes it at once; beyond ``max_connections`` it is
        refused.  The listener closes it afterwards."""
        if not self._gate.enter():
            await refuse_connection(stream, backend, self.limits)
            return
        try:
            await self._serve(make_runner, abort)
        finally:
            self._gate.leave()

    async def _serve(
        self,
        make_runner: Callable[[ServerSession, WebSocketFraming], ConnectionRunner],
        abort: Callable[[], Awaitable[None]],
    ) -> None:
        server = self.server
        session = server.create_session()
        framing = WebSocketFraming(
            session,
            client=False,
            path=self.path,
            allowed_hosts=self.allowed_hosts,
            allowed_origins=self.allowed_origins,
            max_message_size=self.max_message_size,
        )
        runner = make_runner(session, framing)
        server.hub.add(session, runner._schedule_flush)
        try:
            async with runner.backend.open_task_group() as group:
                if self.ping_interval:
                    group.start_soon(
                        keep_websocket_alive,
                        framing,
                        runner,
                        self.ping_interval,
                        self.pong_timeout,
                        abort,
                    )
                if self.handshake_timeout is not None:
                    group.start_soon(self._close_unless_open, framing, runner, abort)
                await runner.run()
                group.cancel()
        except* OSError:
            pass  # the client went away
        except* Exception:
            # One broken connection must never take the server (and every other client) down.
            logger.exception("error while serving a WebSocket connection; closing it")
        finally:
            server.hub.remove(session)

    async def _close_unless_open(
        self,
        framing: WebSocketFraming,
        runner: ConnectionRunner,
        abort: Callable[[], Awaitable[None]],
    ) -> None:
        # A peer that never finishes its handshake must not hold a session for good.
        assert self.handshake_timeout is not None
        await runner.backend.sleep(self.handshake_timeout)
        if not framing.open:
            await abort()


R = TypeVar("R", bound=HostBase)


@asynccontextmanager
async def open_websocket(
    address: WebSocketAddress,
    config: ClientOptions,
    make_runner: Callable[..., R],
    running: Callable[[R], AbstractAsyncContextManager[Any]],
    client_class: type[C],
) -> AsyncIterator[C]:
    """``open_ws_client`` over a connection to ``address``: ``make_runner(session,
    framing=, **callbacks)`` runs the session over it, in ``running(runner)``.  On
    leaving, the closing handshake is sent (2 s at the most)."""
    session = config.new_session()
    framing = WebSocketFraming(
        session,
        client=True,
        host=address.netloc,
        target=address.target,
        max_message_size=config.max_message_size,
    )
    runner = make_runner(session, framing=framing, **config.handlers.host_callbacks())

    @asynccontextmanager
    async def opened() -> AsyncIterator[None]:
        async with running(runner):
            await runner.flush()  # the opening handshake
            yield

    async def close() -> None:
        framing.close(1000, "client done")
        async with runner.backend.move_on_after(2):
            await runner.flush()

    async with run_client(runner, session, config, client_class, opened, end=close) as client:
        yield client
