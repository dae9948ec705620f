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
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any, Unpack

from sansio_mcp import ServerSession
from sansio_mcp.runtime import Server, TaskGroup, shared_sessions
from sansio_mcp.runtime.hosting import (
    ASGIService,
    Receive,
    Scope,
    Send,
    SessionHosts,
    SessionOptions,
    serve_lifespan,
    streamable_http_router,
)

from ._backend import PRIMITIVES
from .http_server import _HTTPSessionHost
from .server import AsyncioContext

__all__ = ["MCPApp"]


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
        **bounds: Unpack[SessionOptions],
    ) -> None:
        self.server = server
        self.max_body = max_body
        self.router = streamable_http_router(
            server,
            endpoint=endpoint,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            json_response=json_response,
            **bounds,
        )
        self._group: TaskGroup | None = None
        self._group_task: asyncio.Task[None] | None = None
        self._group_ready = asyncio.Event()

        def make_host(session: ServerSession) -> Any:
            raise AssertionError("no session host before the app's task group starts")

        # Its hosts' maker is set as the app's task group starts (see _run_group).
        self.hosts = SessionHosts(server, self.router, make_host)
        # With a shared store (``server.stores``, open while the app serves), replicas
        # share handshake sessions.
        self.hosts.shared = shared_sessions(self.router, self.hosts, server.stores, PRIMITIVES)
        self._service = ASGIService(self.router, self.hosts, PRIMITIVES, max_body)

    # Lifetime -------------------------------------------------------------------

    async def _ensure_group(self) -> None:
        if self._group_task is None:
            self._group_task = asyncio.create_task(self._run_group())
        await self._group_ready.wait()

    async def _run_group(self) -> None:
        async with PRIMITIVES.open_task_group() as group:
            self._group = group
            self.hosts.make_host = _HTTPSessionHost.factory(
                group, self.router, self.server, AsyncioContext
            )
            if self.hosts.shared is not None:
                await self.hosts.shared.ready()
                group.start_soon(self.hosts.shared.run)
            self._group_ready.set()
            await asyncio.Event().wait()  # until aclose() cancels us

    async def aclose(self) -> None:
        """Cancel every handler task and stop the app's task group; with replicas, then
        write what is still queued for the store (:meth:`SharedSessions.flush`, as a
        listener does when it stops)."""
        if self._group_task is not None:
            self._group_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._group_task
            self._group_task = None
            self._group = None
            self._group_ready = asyncio.Event()
            if self.hosts.shared is not None:
                await self.hosts.shared.flush()

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
            await serve_lifespan(receive, send, self._ensure_group, self.aclose)
        elif scope["type"] == "http":
            await self._ensure_group()
            await self._service.http(scope, receive, send)
