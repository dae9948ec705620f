"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on Trio: the
listener and the service are the runtime's (:func:`serve_router`, :class:`HTTPService`)."""

from __future__ import annotations

from typing import Any, Unpack

import trio

from sansio_mcp.runtime import Server, ServerLimits, hosting
from sansio_mcp.runtime.hosting import (
    HTTPServeOptions,
    RoutedOutput,
    Router,
    RouterOptions,
    http_router,
)

from ._backend import PRIMITIVES, serve_tcp
from ._runner import TrioSessionHost
from .server import TrioContext

__all__ = ["Router", "ServerLimits", "serve_http", "serve_router", "serve_tcp"]


class _HTTPSessionHost(RoutedOutput, TrioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""


async def serve_http(
    server: Server,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[HTTPServeOptions],
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/endpoint``.

    ``task_status.started`` reports the bound port (useful with ``port=0``);
    ``limits`` bounds slow, idle and too many connections.  Runs until cancelled.
    """
    router, listening = http_router(server, options)
    await serve_router(server, router, task_status=task_status, **listening)


async def serve_router(
    server: Server,
    router: Router,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[RouterOptions],
) -> None:
    """Serve any HTTP transport machine over TCP under ``limits``; reports the bound port."""
    hosts = (_HTTPSessionHost, TrioContext)
    await hosting.serve_router(server, router, PRIMITIVES, *hosts, options, task_status.started)
