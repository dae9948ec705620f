"""The body every ``open_*_client`` shares, written once: the host runs for
exactly as long as the client, the session starts (after the transport is
ready, where it must be), the client is handed out, and the session is ended
and closed the same way on every transport and backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, Generic, TypeVar, Unpack

from .._client_session import ClientSession
from .._errors import ConnectionClosedError
from .._streamable_http_client import Endpoint, StreamableHTTPClient
from .._util import unwrap_single_exception
from ._backend import Backend, Signal, TaskGroup
from ._client import ClientAPI
from ._client_options import ClientOptions, HTTPClientOptions, SSEClientOptions
from ._host import HostBase, hosted, start_client
from ._http_client import HTTPClientHost, LegacySSEClientHost

__all__ = [
    "HTTPClientSessionHost",
    "HTTPOpeners",
    "SSEClientSessionHost",
    "open_http",
    "run_client",
]

C = TypeVar("C", bound=ClientAPI)
H = TypeVar("H", bound=HTTPClientHost)


class HTTPClientSessionHost(HTTPClientHost, HostBase):
    """The Streamable HTTP client's session host (each adapter's subclass names
    its backend); attached, it also holds the kept-alive connections."""

    def attach(self, group: TaskGroup) -> None:
        super().attach(group)
        self.spawn_task(self.hold_connections)


class SSEClientSessionHost(LegacySSEClientHost, HTTPClientSessionHost):
    """The legacy HTTP+SSE client's session host."""


@asynccontextmanager
async def run_client(
    host: HostBase,
    session: ClientSession,
    config: ClientOptions,
    client_class: type[C],
    hosted: Callable[[], AbstractAsyncContextManager[Any]],
    *,
    ready: Signal | None = None,
    end: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[C]:
    """Yield a started client of ``session`` on ``host``.

    ``hosted()`` is the adapter's block in which the host's tasks run (leaving it
    cancels them); ``ready``, if given, must be set (within ``initialize_timeout``)
    before the session may start, as the legacy SSE stream naming its POST
    endpoint; ``end``, run shielded when the caller is done, says goodbye (an
    HTTP session's DELETE, a WebSocket's closing handshake).  Errors leave as
    themselves, not as a task group's group of one."""
    with unwrap_single_exception():
        async with hosted():
            try:
                if ready is not None:
                    await _wait_ready(host, ready, config.initialize_timeout)
                    if host.driver.closed:
                        raise ConnectionClosedError(
                            message="the connection ended before the session could start"
                        )
                client = await start_client(
                    host, session, config.handlers, config.initialize_timeout, client_class
                )
                yield client
                if end is not None:
                    await host.shielded(end)
            finally:
                session.close()
                host.driver.process_events()


async def _wait_ready(host: HostBase, ready: Signal, limit: float | None) -> None:
    if limit is None:
        await ready.wait()
        return
    async with host.backend.fail_after(limit):
        await ready.wait()


@asynccontextmanager
async def open_http(
    url: str,
    options: HTTPClientOptions | SSEClientOptions,
    host_class: type[H],
    hosted: Callable[[H], AbstractAsyncContextManager[Any]],
    client_class: type[C],
    *,
    legacy_sse: bool = False,
) -> AsyncIterator[C]:
    """``open_http_client`` (or, with ``legacy_sse``, ``open_sse_client``) on the
    adapter's ``host_class``, its tasks run in ``hosted(host)``."""
    rest: dict[str, Any] = dict(options)
    headers = rest.pop("headers", None)
    max_body = rest.pop("max_body", 16 * 1024 * 1024)
    ssl_context = rest.pop("ssl_context", None)
    config = ClientOptions.of(rest)  # type: ignore[arg-type]
    if legacy_sse:
        config = config.handshake_only()
    session = config.new_session()
    transport = StreamableHTTPClient(Endpoint.parse(url), session, headers=headers)
    host = host_class(
        session,
        transport,
        config.handlers,
        max_body=max_body,
        ssl_context=ssl_context,
        auth=config.auth,
    )
    assert isinstance(host, HostBase)
    if not legacy_sse:
        async with run_client(
            host, session, config, client_class, partial(hosted, host), end=host.end_session
        ) as client:
            yield client
        return
    assert isinstance(host, LegacySSEClientHost)
    ready = host.new_signal()

    @asynccontextmanager
    async def reading() -> AsyncIterator[None]:
        async with hosted(host):
            host.spawn_task(host.run_stream, url, ready)
            yield

    async with run_client(host, session, config, client_class, reading, ready=ready) as client:
        yield client


class HTTPOpeners(Generic[C]):
    """A backend's ``open_http_client`` and ``open_sse_client`` (its modules name
    them ``open_http_client = openers.http`` and so on) for its ``client`` class,
    and its HTTP client host classes (:attr:`http_host`, :attr:`sse_host`)."""

    def __init__(self, backend: Backend, client: type[C]) -> None:
        class HTTPHost(HTTPClientSessionHost):
            """The Streamable HTTP client's session host on this backend."""

        class SSEHost(SSEClientSessionHost):
            """The legacy HTTP+SSE client's session host on this backend."""

        HTTPHost.backend = SSEHost.backend = backend
        self.http_host: type[HTTPClientSessionHost] = HTTPHost
        self.sse_host: type[SSEClientSessionHost] = SSEHost
        self._client = client

    def http(
        self, url: str, **options: Unpack[HTTPClientOptions]
    ) -> AbstractAsyncContextManager[C]:
        """Connect to a Streamable HTTP endpoint and yield a started client.

        HTTP failures become typed errors of the request that met them:
        :class:`sansio_mcp.HTTPStatusError` (with ``data.status``), or
        :class:`sansio_mcp.ConnectionClosedError` when the server ended the session.
        """
        return open_http(url, options, self.http_host, hosted, self._client)

    def sse(self, url: str, **options: Unpack[SSEClientOptions]) -> AbstractAsyncContextManager[C]:
        """Connect to a legacy HTTP+SSE server (``url`` is its SSE endpoint)."""
        return open_http(url, options, self.sse_host, hosted, self._client, legacy_sse=True)
