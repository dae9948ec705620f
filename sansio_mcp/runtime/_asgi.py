"""Streamable HTTP over ASGI, backend-neutral: an ASGI ``http`` request read into an
:class:`~sansio_mcp._http.HTTPRequest`, checked, routed and answered through the same
:func:`answer_exchange` and :class:`SessionHosts` as the TCP listener, its answer
written as ASGI messages; and the ``lifespan`` protocol.  The adapter's ASGI app
owns only the task group its session hosts run in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from .._http import HTTPRequest, header_dict
from ._auth import verify_request
from ._backend import Backend
from ._http_service import Router, SessionHosts, answer_exchange, route

__all__ = ["ASGIService", "Message", "Receive", "Scope", "Send", "serve_lifespan"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class ASGIService:
    """Answers ASGI ``http`` requests with ``router``'s exchanges, their sessions
    driven by ``hosts``; a body over ``max_body`` bytes gets a 413."""

    def __init__(
        self, router: Router, hosts: SessionHosts[Any], backend: Backend, max_body: int
    ) -> None:
        self.router = router
        self.hosts = hosts
        self.backend = backend
        self.max_body = max_body

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one ``http`` request."""
        backend = self.backend
        request = await self._request(scope, receive)
        if request is None:
            await _plain(send, 413, b"request body too large")
            return
        verdict = await verify_request(self.router, request, backend, self.hosts.server.stores)
        shared = self.hosts.shared
        if shared is not None:
            await shared.before(request, verdict)
        exchange = route(self.router, request, backend.clock(), backend.wall_clock(), verdict)
        if shared is not None:
            await shared.after(request, exchange)
        self.hosts.begin(exchange)
        try:
            if shared is not None:
                await shared.answering(exchange)

            async def until_gone() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass

            await answer_exchange(exchange, _ASGIWriter(send), until_gone, self.hosts, backend)
        finally:
            self.hosts.finish(exchange)

    async def _request(self, scope: Scope, receive: Receive) -> HTTPRequest | None:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            body += message.get("body", b"")
            if len(body) > self.max_body:
                return None
            if not message.get("more_body", False):
                break
        path = scope.get("path", "/")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        query = scope.get("query_string", b"").decode("latin-1")
        headers = header_dict(scope.get("headers", []))
        if "host" not in headers and scope.get("server"):
            host, port = scope["server"]
            headers["host"] = f"{host}:{port}"
        return HTTPRequest(
            method=scope["method"],
            target=path + (f"?{query}" if query else ""),
            headers=headers,
            body=bytes(body),
        )


async def serve_lifespan(
    receive: Receive,
    send: Send,
    startup: Callable[[], Awaitable[None]],
    shutdown: Callable[[], Awaitable[None]],
) -> None:
    """The ASGI ``lifespan`` protocol: ``startup`` before startup completes,
    ``shutdown`` before shutdown does."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await startup()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


class _ASGIWriter:
    """A :class:`~sansio_mcp.runtime._http_service.ResponseWriter` of ASGI messages."""

    def __init__(self, send: Send) -> None:
        self._send = send

    async def whole(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        length = (b"content-length", str(len(body)).encode())
        await self._send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*_encode(headers), length],
            }
        )
        await self._send({"type": "http.response.body", "body": body, "more_body": False})

    async def head(self, status: int, headers: Mapping[str, str]) -> None:
        await self._send(
            {"type": "http.response.start", "status": status, "headers": _encode(headers)}
        )

    async def body(self, chunk: bytes) -> None:
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def end(self) -> None:
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


def _encode(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in dict(headers).items()]


async def _plain(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
