"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on asyncio: the
listener and the service are the runtime's (:func:`serve_router`, :class:`HTTPService`)."""

from __future__ import annotations

import asyncio
from typing import Unpack

from sansio_mcp.runtime import OnBound, Server, ServerLimits, hosting
from sansio_mcp.runtime.hosting import (
    HTTPServeOptions,
    RoutedOutput,
    Router,
    RouterOptions,
    http_router,
)

from ._backend import PRIMITIVES, serve_tcp
from ._runner import AsyncioSessionHost
from .server import AsyncioContext

__all__ = ["ServerLimits", "serve_http", "serve_router", "serve_tcp"]


class _HTTPSessionHost(RoutedOutput, AsyncioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""


def reporter(started: asyncio.Future[int] | None) -> OnBound:
    """``started.set_result``: a public ``started`` future as a listener's ``on_bound``."""
    return None if started is None else started.set_result


async def serve_router(
    server: Server,
    router: Router,
    *,
    started: asyncio.Future[int] | None = None,
    **options: Unpack[RouterOptions],
) -> None:
    """Serve any HTTP transport machine over TCP under ``limits`` until cancelled;
    ``started`` (if given) receives the bound port."""
    hosts = (_HTTPSessionHost, AsyncioContext)
    await hosting.serve_router(server, router, PRIMITIVES, *hosts, options, reporter(started))


async def serve_http(
    server: Server,
    *,
    started: asyncio.Future[int] | None = None,
    **options: Unpack[HTTPServeOptions],
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/endpoint`` until cancelled;
    ``limits`` bounds slow, idle and too many connections."""
    router, listening = http_router(server, options)
    await serve_router(server, router, started=started, **listening)
