"""Which transport a command line's server or URL means, written once: an
adapter's backend names its openers and listeners, and this picks one."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

# For annotations only: a server's table loads no client, a client's no server.
if TYPE_CHECKING:
    from ._client import ClientAPI
    from ._server import Server

__all__ = [
    "ClientOpener",
    "ClientOpeners",
    "Listener",
    "Listeners",
    "TransportTable",
    "stop_signals",
]

#: ``open_*_client(target, **options)``: a stdio command, or a URL.
ClientOpener = Callable[..., "AbstractAsyncContextManager[ClientAPI]"]
#: ``serve_*(server, host=, port=, ...)`` of a network transport.
Listener = Callable[..., Awaitable[None]]


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop a serving command: SIGTERM, and SIGINT unless it was ignored.

    A process started with SIGINT ignored (a shell's background job, ``nohup``) was asked
    not to be interrupted from the keyboard; SIGTERM still stops it.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return (signal.SIGTERM,)
    return (signal.SIGTERM, signal.SIGINT)


@attrs.frozen
class ClientOpeners:
    """An adapter's ``open_*_client`` functions."""

    stdio: ClientOpener
    http: ClientOpener
    sse: ClientOpener
    ws: ClientOpener


@attrs.frozen
class Listeners:
    """An adapter's ``serve_*`` functions, and the keyword by which its network
    listeners report their bound port (``task_status`` on Trio, ``started`` on asyncio)."""

    stdio: Callable[[Server], Awaitable[None]]
    http: Listener
    sse: Listener
    ws: Listener
    reports_bound_by: str


class _BoundPort:
    """What a listener reports its bound port to, as Trio's ``task_status``
    (``started``) or an asyncio future (``set_result``)."""

    def __init__(self, on_bound: Callable[[int], None] | None) -> None:
        self._on_bound = on_bound

    def started(self, port: int) -> None:
        if self._on_bound is not None:
            self._on_bound(port)

    set_result = started


class TransportTable:
    """``connect`` and ``serve`` of a :class:`~sansio_mcp.runtime.TransportBackend`,
    over the adapter's openers and listeners (class attributes); the adapter adds
    ``until_stopped`` (its event loop's signal handling)."""

    clients: ClassVar[ClientOpeners]
    servers: ClassVar[Listeners]

    @property
    def listeners(self) -> dict[str, Listener]:
        """The network listeners by transport name: ``http``, ``sse``, ``ws``."""
        servers = self.servers
        return {"http": servers.http, "sse": servers.sse, "ws": servers.ws}

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        """A client for a stdio command, or a URL: ``ws://`` is WebSocket, a
        ``transport`` of ``sse`` the legacy HTTP+SSE, anything else Streamable HTTP."""
        if url is None:
            return self.clients.stdio(command, **options)
        if url.startswith(("ws://", "wss://")):
            return self.clients.ws(url, **options)
        if transport == "sse":
            return self.clients.sse(url, **options)
        return self.clients.http(url, **options)

    async def serve(
        self,
        server: Server,
        transport: str,
        host: str,
        port: int,
        *,
        on_bound: Callable[[int], None] | None = None,
    ) -> None:
        """Serve on ``transport`` (stdio, http, sse, ws) until cancelled; ``on_bound``
        gets the port a network listener bound."""
        if transport == "stdio":
            await self.servers.stdio(server)
            return
        await self.serve_network(getattr(self.servers, transport), server, host, port, on_bound)

    async def serve_network(
        self,
        listener: Listener,
        server: Server,
        host: str,
        port: int,
        on_bound: Callable[[int], None] | None,
    ) -> None:
        """Run ``listener`` (this adapter's ``serve_*``, or a partial of its
        ``serve_router``) until cancelled, telling ``on_bound`` its port once bound."""
        report = {self.servers.reports_bound_by: _BoundPort(on_bound)}
        await listener(server, host=host, port=port, **report)
