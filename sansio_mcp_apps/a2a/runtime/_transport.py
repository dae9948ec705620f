"""An httpx transport whose bytes move through the :class:`Backend` and the core's
HTTP/1.1 machine and keep-alive pool, so that the a2a-sdk's JSON-RPC client (built on
httpx) runs alike on every backend: on Trio as on asyncio, with the backend's own TCP,
TLS and time limits, and without httpx's default transport, which picks its event loop
itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from sansio_mcp import NEED_DATA
from sansio_mcp.http import (
    ConnectionEnded,
    ConnectionPool,
    HTTPClientConnection,
    HTTPError,
    HTTPResponseHead,
    PooledConnection,
)
from sansio_mcp.runtime import Backend, ByteStream, TimedOut

__all__ = ["BackendTransport"]

#: The largest answer body taken from an agent (a card, a task with its artifacts).
DEFAULT_MAX_BODY = 32 * 1024 * 1024
_HOP_BY_HOP = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive"})


def _limit(request: httpx.Request, which: str) -> float | None:
    timeout = request.extensions.get("timeout") or {}
    value = timeout.get(which)
    return float(value) if value is not None else None


class _Body(httpx.AsyncByteStream):
    """An answer's body, read as the caller iterates (SSE streams included); once it
    was read to its end, closing it gives the connection back to the pool."""

    def __init__(
        self,
        transport: BackendTransport,
        conn: PooledConnection[ByteStream],
        request: httpx.Request,
    ) -> None:
        self._transport = transport
        self._conn = conn
        self._request = request
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        limit = self._transport.max_body
        while True:
            event = await _next_event(
                self._transport.backend, self._conn.stream, self._conn.http, self._request
            )
            if event is None:
                self._complete = True
                return
            if not isinstance(event, bytes):
                raise httpx.RemoteProtocolError("unexpected HTTP event", request=self._request)
            size += len(event)
            if size > limit:
                raise httpx.RemoteProtocolError(
                    f"the agent's answer is over {limit} bytes", request=self._request
                )
            yield event

    async def aclose(self) -> None:
        if not (self._complete and self._transport.pool.release(self._conn)):
            await self._conn.stream.aclose()


async def _next_event(
    backend: Backend, stream: ByteStream, conn: HTTPClientConnection, request: httpx.Request
) -> Any:
    """The connection's next event (head, body bytes, None at the end), reading as needed."""
    read_limit = _limit(request, "read")
    while True:
        event = conn.next_event()
        if event is not NEED_DATA:
            break
        try:
            if read_limit is None:
                data = await stream.receive_some()
            else:
                async with backend.fail_after(read_limit):
                    data = await stream.receive_some()
        except TimedOut:
            raise httpx.ReadTimeout(
                f"no answer from the agent within {read_limit:g} s", request=request
            ) from None
        except OSError as exc:
            raise httpx.ReadError(f"the connection broke: {exc}", request=request) from exc
        if not data:
            raise httpx.RemoteProtocolError(
                "the agent closed the connection before its answer was complete", request=request
            )
        conn.receive_data(data)
    if isinstance(event, HTTPError):
        raise httpx.RemoteProtocolError(event.reason, request=request)
    if isinstance(event, ConnectionEnded):
        raise httpx.RemoteProtocolError("the agent closed the connection", request=request)
    return event


class BackendTransport(httpx.AsyncBaseTransport):
    """Keeps a few connections per agent alive (:class:`ConnectionPool`): the bridge
    polls, and a TLS handshake per poll would cost more than the poll."""

    def __init__(
        self, backend: Backend, *, max_body: int = DEFAULT_MAX_BODY, max_idle: int = 4
    ) -> None:
        self.backend = backend
        self.max_body = max_body
        self.pool: ConnectionPool[ByteStream] = ConnectionPool(max_idle=max_idle)

    async def aclose(self) -> None:
        for stream in self.pool.close():
            await stream.aclose()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"not an http(s) URL: {url}", request=request)
        tls = url.scheme == "https"
        port = url.port or (443 if tls else 80)
        origin = f"{url.scheme}://{url.host}:{port}"
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        # A compressed answer would need httpx's decoders on our bytes; ask for none.
        headers["accept-encoding"] = "identity"
        body = await request.aread()
        target = url.raw_path.decode("ascii")
        while True:
            conn = self.pool.take(origin)
            if conn is None:
                stream = await self._connect(request, url.host, port, tls)
                conn = self.pool.opened(origin, request.headers.get("host") or url.host, stream)
            wire = conn.http.send_request(
                request.method, target, headers, body if body or request.method != "GET" else None
            )
            try:
                try:
                    await conn.stream.send_all(wire)
                except OSError as exc:
                    raise httpx.WriteError(f"the connection broke: {exc}", request=request) from exc
                head = await _next_event(self.backend, conn.stream, conn.http, request)
            except httpx.TransportError:
                await conn.stream.aclose()
                if conn.http.may_retry:
                    continue  # a kept connection the agent had closed: once more, afresh
                raise
            except BaseException:
                await conn.stream.aclose()
                raise
            if not isinstance(head, HTTPResponseHead):
                await conn.stream.aclose()
                raise httpx.RemoteProtocolError("no response head", request=request)
            return httpx.Response(
                head.status,
                headers=list(head.headers.items()),
                stream=_Body(self, conn, request),
                request=request,
            )

    async def _connect(self, request: httpx.Request, host: str, port: int, tls: bool) -> ByteStream:
        connect_limit = _limit(request, "connect") or 30.0
        try:
            async with self.backend.fail_after(connect_limit):
                return await self.backend.open_tcp_stream(host, port, tls=tls)
        except TimedOut:
            raise httpx.ConnectTimeout(
                f"could not connect to {host}:{port} within {connect_limit:g} s", request=request
            ) from None
        except OSError as exc:
            raise httpx.ConnectError(
                f"could not connect to {host}:{port}: {exc}", request=request
            ) from exc
