"""An httpx transport whose bytes move through the :class:`Backend` and the core's
HTTP/1.1 machine, so that the a2a-sdk's JSON-RPC client (built on httpx) runs alike
on every backend: on Trio as on asyncio, with the backend's own TCP, TLS and time
limits, and without httpx's default transport, which picks its event loop itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from ..._http import ConnectionEnded, HTTPClientConnection, HTTPError, HTTPResponseHead
from ..._ndjson import NEED_DATA
from .._backend import Backend, ByteStream, TimedOut

__all__ = ["BackendTransport"]

#: The largest answer body taken from an agent (a card, a task with its artifacts).
DEFAULT_MAX_BODY = 32 * 1024 * 1024
_HOP_BY_HOP = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def _limit(request: httpx.Request, which: str) -> float | None:
    timeout = request.extensions.get("timeout") or {}
    value = timeout.get(which)
    return float(value) if value is not None else None


class _Body(httpx.AsyncByteStream):
    """An answer's body, read as the caller iterates (SSE streams included)."""

    def __init__(
        self,
        backend: Backend,
        stream: ByteStream,
        conn: HTTPClientConnection,
        request: httpx.Request,
        max_body: int,
    ) -> None:
        self._backend = backend
        self._stream = stream
        self._conn = conn
        self._request = request
        self._max_body = max_body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        while True:
            event = await _next_event(self._backend, self._stream, self._conn, self._request)
            if event is None:
                return
            if not isinstance(event, bytes):
                raise httpx.RemoteProtocolError("unexpected HTTP event", request=self._request)
            size += len(event)
            if size > self._max_body:
                raise httpx.RemoteProtocolError(
                    f"the agent's answer is over {self._max_body} bytes", request=self._request
                )
            yield event

    async def aclose(self) -> None:
        await self._stream.aclose()


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
    """One connection per request (``Connection: close``): agents are few and
    their calls are long, so keep-alive would buy little."""

    def __init__(self, backend: Backend, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.backend = backend
        self.max_body = max_body

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"not an http(s) URL: {url}", request=request)
        tls = url.scheme == "https"
        port = url.port or (443 if tls else 80)
        stream = await self._connect(request, url.host, port, tls)
        try:
            conn = HTTPClientConnection(request.headers.get("host") or url.host)
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
            # A compressed answer would need httpx's decoders on our bytes; ask for none.
            headers["accept-encoding"] = "identity"
            headers["connection"] = "close"
            body = await request.aread()
            target = url.raw_path.decode("ascii")
            wire = conn.send_request(
                request.method, target, headers, body if body or request.method != "GET" else None
            )
            try:
                await stream.send_all(wire)
            except OSError as exc:
                raise httpx.WriteError(f"the connection broke: {exc}", request=request) from exc
            head = await _next_event(self.backend, stream, conn, request)
            if not isinstance(head, HTTPResponseHead):
                raise httpx.RemoteProtocolError("no response head", request=request)
        except BaseException:
            await stream.aclose()
            raise
        return httpx.Response(
            head.status,
            headers=list(head.headers.items()),
            stream=_Body(self.backend, stream, conn, request, self.max_body),
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
