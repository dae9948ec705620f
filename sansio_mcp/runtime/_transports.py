"""Which transport a command line's server or URL means, written once: an
adapter's backend names its openers and listeners, and this picks one."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar

from ._client import ClientAPI
from ._server import Server

__all__ = ["ClientOpener", "Listener", "TransportTable", "stop_signals"]

#: ``open_*_client(target, **options)``: a stdio command, or a URL.
ClientOpener = Callable[..., AbstractAsyncContextManager[ClientAPI]]
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


class TransportTable:
    """``connect`` and ``serve`` of a :class:`~sansio_mcp.runtime.TransportBackend`,
    over the adapter's openers and listeners (class attributes) and one
    primitive, :meth:`serve_network` (start a listener, report its port)."""

    open_stdio_client: ClientOpener
    open_http_client: ClientOpener
    open_sse_client: ClientOpener
    open_ws_client: ClientOpener
    serve_stdio: Callable[[Server], Awaitable[None]]
    #: The network listeners by transport name: ``http``, ``sse``, ``ws``.
    listeners: ClassVar[dict[str, Listener]]

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        """A client for a stdio command, or a URL: ``ws://`` is WebSocket, a
        ``transport`` of ``sse`` the legacy HTTP+SSE, anything else Streamable HTTP."""
        if url is None:
            return type(self).open_stdio_client(command, **options)
        if url.startswith(("ws://", "wss://")):
            return type(self).open_ws_client(url, **options)
        if transport == "sse":
            return type(self).open_sse_client(url, **options)
        return type(self).open_http_client(url, **options)

    async def serve(
        self,
        server: Server,
        transport: str,
        host: str,
        port: int,
        *,
        on_bound: Callable[[int], None] | None = None,
    ) -> None:
        """Serve on ``transport`` (stdio, http, sse, ws) until cancelled."""
        if transport == "stdio":
            await type(self).serve_stdio(server)
            return
        await self.serve_network(self.listeners[transport], server, host, port, on_bound)

    async def until_stopped(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``fn(*args)`` until it returns or a stop signal (:func:`stop_signals`) ends it.

        A serving command stopped this way shuts down cleanly and exits 0.
        """
        raise NotImplementedError

    async def serve_network(
        self,
        listener: Listener,
        server: Server,
        host: str,
        port: int,
        on_bound: Callable[[int], None] | None,
    ) -> None:
        """Run ``listener`` until cancelled, telling ``on_bound`` its port once bound."""
        raise NotImplementedError
