"""An ASGI application serving a :class:`sansio_mcp.Server` over Streamable
HTTP, for Starlette/FastAPI mounts and ASGI servers (uvicorn, hypercorn).

It is the same core machine as :func:`asyncio_adapters.http_server.serve_http`;
only the byte moving differs (ASGI messages instead of a socket)::

    from starlette.applications import Starlette
    from starlette.routing import Mount
    from asyncio_adapters.asgi import MCPApp

    mcp = MCPApp(server)                       # serves at <mount>/mcp
    app = Starlette(routes=[Mount("/tools", app=mcp)], lifespan=mcp.lifespan)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from sansio_mcp import ServerSession
from sansio_mcp._http import HTTPRequest, header_dict
from sansio_mcp._streamable_http import Exchange
from sansio_mcp.runtime._auth import verify_request
from sansio_mcp.runtime._backend import TaskGroup
from sansio_mcp.runtime._http_service import (
    SessionHosts,
    answer_exchange,
    route,
    streamable_http_router,
)
from sansio_mcp.runtime._server import Server

from ._backend import PRIMITIVES
from .http_server import _HTTPSessionHost
from .server import AsyncioContext

__all__ = ["MCPApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class MCPApp:
    """An ASGI app for one MCP server (both eras on one endpoint).

    Handler tasks live in a task group the app owns: started on the first
    request (or by :meth:`lifespan`), ended by :meth:`aclose` or lifespan
    shutdown.  DNS-rebinding protection is on: pass ``allowed_hosts`` /
    ``allowed_origins`` when serving other names than loopback.
    """

    def __init__(
        self,
        server: Server,
        *,
        endpoint: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        json_response: bool = False,
        max_body: int = 4 * 1024 * 1024,
    ) -> None:
        self.server = server
        self.max_body = max_body
        self.router = streamable_http_router(
            server,
            endpoint=endpoint,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            json_response=json_response,
        )
        self._group: TaskGroup | None = None
        self._group_task: asyncio.Task[None] | None = None
        self._group_ready = asyncio.Event()

        def make_host(session: ServerSession) -> Any:
            assert self._group is not None
            return _HTTPSessionHost.attached(
                self._group, self.router, server, AsyncioContext, session
            )

        self.hosts = SessionHosts(server, self.router, make_host)

    # Lifetime -------------------------------------------------------------------

    async def _ensure_group(self) -> None:
        if self._group_task is None:
            self._group_task = asyncio.create_task(self._run_group())
        await self._group_ready.wait()

    async def _run_group(self) -> None:
        async with PRIMITIVES.open_task_group() as group:
            self._group = group
            self._group_ready.set()
            await asyncio.Event().wait()  # until aclose() cancels us

    async def aclose(self) -> None:
        """Cancel every handler task and stop the app's task group."""
        if self._group_task is not None:
            self._group_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._group_task
            self._group_task = None
            self._group = None
            self._group_ready = asyncio.Event()

    @asynccontextmanager
    async def lifespan(self, app: Any = None) -> AsyncIterator[None]:
        """A Starlette/FastAPI ``lifespan`` that starts and stops the app cleanly."""
        await self._ensure_group()
        try:
            yield
        finally:
            await self.aclose()

    # ASGI ---------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._asgi_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        await self._ensure_group()
        request = await self._request(scope, receive)
        if request is None:
            await _plain(send, 413, b"request body too large")
            return
        verdict = await verify_request(self.router, request, PRIMITIVES)
        exchange = route(self.router, request, PRIMITIVES.clock(), PRIMITIVES.wall_clock(), verdict)
        self.hosts.begin(exchange)
        try:
            await self._respond(exchange, receive, send)
        finally:
            self.hosts.finish(exchange)

    async def _asgi_lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self._ensure_group()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

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

    async def _respond(self, exchange: Exchange, receive: Receive, send: Send) -> None:
        async def until_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        await answer_exchange(exchange, _ASGIWriter(send), until_gone, self.hosts, PRIMITIVES)


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
