"""A server's side of a session host: its handlers' :class:`Context` and the request
handler that runs :class:`Server` on it (a client loads neither, nor the server)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .._events import RequestReceived
from .._server_session import ServerSession
from ._host import HostBase
from ._server import Context, Server

__all__ = ["HostContext", "serving"]

H = TypeVar("H")


class HostContext(Context):
    """A handler's :class:`Context` on a session host, which is its
    :class:`ContextHost`: requests to the client go through the host, output is
    flushed by it, sleeping is the backend's.  ``now`` (seconds since the epoch)
    dates the request's sealed state; without it, :attr:`wall_clock` tells it."""

    host: HostBase
    #: The wall clock (seconds since the epoch) of a subclass that reads it itself:
    #: an adapter's (the runtime reads no clock of its own).
    wall_clock: Callable[[], float] | None = None

    def __init__(self, host: HostBase, event: RequestReceived, *, now: float | None = None) -> None:
        session = host.session
        assert isinstance(session, ServerSession)
        if now is None:
            clock = self.wall_clock  # read once: a class's staticmethod, the slow way
            if clock is None:
                raise TypeError(
                    f"{type(self).__name__}: 'now' is required unless it has a wall_clock"
                )
            now = clock()
        # Context.__init__, inline (a context per request; a test holds the two alike): a
        # mixin between this class and Context in a subclass is not initialized here.
        self.request_id = event.request_id
        self.method = event.method
        self.params = event.params
        self.progress_token = event.progress_token
        self.session = session
        self.host = host
        self.meta = event.meta
        self.now = now
        self.auth = session.auth


def serving(
    server: Server,
    context: Callable[[H, RequestReceived], Context],
    make_host: Callable[..., H],
    *args: Any,
) -> H:
    """The host ``make_host(*args, handle_request=...)`` makes, answering its peer's
    requests with ``server``; each handler's context is ``context(host, event)``."""
    host: H

    def handle_request(event: RequestReceived) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        return server.begin(context(host, event))

    host = make_host(*args, handle_request=handle_request)
    return host
