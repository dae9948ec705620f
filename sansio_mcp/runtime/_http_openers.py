"""The Streamable HTTP and legacy HTTP+SSE clients' openers for every backend
(:class:`HTTPOpeners`): their session hosts, run by :func:`run_client`.  A program
that never opens an HTTP client never imports this (nor h11)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, Generic, TypeVar, Unpack

from .._streamable_http_client import Endpoint, StreamableHTTPClient
from ._backend import Backend, TaskGroup
from ._client import ClientAPI
from ._client_options import ClientOptions, HTTPClientOptions, SSEClientOptions
from ._host import HostBase, hosted
from ._http_client import HTTPClientHost, LegacySSEClientHost
from ._open_client import run_client

__all__ = ["HTTPClientSessionHost", "HTTPOpeners", "SSEClientSessionHost", "open_http"]

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
    head_wait = rest.pop("get_stream_head_wait", None)
    config = ClientOptions.of(rest)  # type: ignore[arg-type]
    if legacy_sse:
        config = config.handshake_only()
    session = config.new_session()
    transport = StreamableHTTPClient(Endpoint.parse(url), session, headers=headers)
    if head_wait is not None:
        transport.get_stream_head_wait = head_wait  # (checked there)
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
