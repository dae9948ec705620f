"""Backend-neutral bookkeeping of an HTTP MCP service: which session host
drives which session, and when a finished stateless request's session can be
dropped.  The Trio and asyncio HTTP servers share it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .._http import HTTPRequest
from .._legacy_sse import LegacySSEServer
from .._server_session import ServerSession
from .._streamable_http import Exchange, StreamableHTTPServer
from ._driver import Driver
from ._server import Server

__all__ = [
    "RoutedOutput",
    "Router",
    "SessionHost",
    "SessionHosts",
    "legacy_sse_router",
    "streamable_http_router",
]


class Router(Protocol):
    """What an HTTP service needs of a transport machine (Streamable HTTP, legacy SSE)."""

    def handle(self, request: HTTPRequest) -> Exchange: ...

    def flush(self, session: ServerSession) -> None: ...

    def owns(self, session: ServerSession) -> bool: ...


class SessionHost(Protocol):
    """What an adapter's session host offers the service."""

    driver: Driver

    def _schedule_flush(self) -> None: ...

    def cancel_all_handlers(self) -> None: ...


H = TypeVar("H", bound=SessionHost)


class SessionHosts(Generic[H]):
    """One host per live session; a stateless request's host lives as long as its exchange."""

    def __init__(
        self, server: Server, router: Router, make_host: Callable[[ServerSession], H]
    ) -> None:
        self.server = server
        self.router = router
        self._make_host = make_host
        self._hosts: dict[int, H] = {}

    def __len__(self) -> int:
        return len(self._hosts)

    def host_for(self, session: ServerSession) -> H:
        host = self._hosts.get(id(session))
        if host is None:
            host = self._make_host(session)
            self._hosts[id(session)] = host
            self.server.hub.add(session, host._schedule_flush)
        return host

    def begin(self, exchange: Exchange) -> H | None:
        """Drive what the request fed into its session (handlers start here)."""
        if exchange.session is None:
            return None
        host = self.host_for(exchange.session)
        host.driver.process_events()
        self.router.flush(exchange.session)
        return host

    def disconnected(self, exchange: Exchange) -> None:
        """The client went away mid-response."""
        exchange.disconnected()
        session = exchange.session
        if session is not None and id(session) in self._hosts:
            self._hosts[id(session)].driver.process_events()

    def finish(self, exchange: Exchange) -> None:
        """The response is over: drop a stateless request's host and session."""
        session = exchange.session
        if session is None or not exchange.finished or self.router.owns(session):
            return
        host = self._hosts.pop(id(session), None)
        self.server.hub.remove(session)
        if host is not None:
            host.cancel_all_handlers()


class RoutedOutput:
    """Mixed into a session host (before it) whose session is served over HTTP:
    its output is routed to the exchanges, which never blocks, so it is done at
    once rather than in a task.  The host sets ``router``."""

    router: Router

    if TYPE_CHECKING:
        session: ServerSession | Any

    def _schedule_flush(self) -> None:
        assert isinstance(self.session, ServerSession)
        self.router.flush(self.session)

    async def flush(self) -> None:
        self._schedule_flush()


def streamable_http_router(
    server: Server,
    *,
    endpoint: str,
    allowed_hosts: Iterable[str] | None,
    allowed_origins: Iterable[str] | None,
    json_response: bool,
) -> StreamableHTTPServer:
    """The Streamable HTTP machine for ``server`` (``serve_http`` on every backend)."""
    return StreamableHTTPServer(
        server.create_session,
        endpoint=endpoint,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        json_response=json_response,
        tool_input_schema=lambda name: (
            tool.input_schema if (tool := server.tools.get(name)) else None
        ),
    )


def legacy_sse_router(
    server: Server,
    *,
    sse_path: str,
    message_path: str,
    allowed_hosts: Iterable[str] | None,
    allowed_origins: Iterable[str] | None,
) -> LegacySSEServer:
    """The legacy HTTP+SSE machine for ``server`` (``serve_sse`` on every backend)."""
    return LegacySSEServer(
        server.create_session,
        sse_path=sse_path,
        message_path=message_path,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
