"""The network listener's body, written once: an HTTP router served over the
backend's TCP listener (:func:`serve_router`).  Each adapter's public ``serve_*``
names its host and context classes and reports the bound port its own way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._server_session import ServerSession
from ._backend import Backend, OnBound
from ._http_service import HTTPService, RoutedOutput, Router
from ._serve_options import Listening, RouterOptions
from ._server import Server

__all__ = ["serve_router"]


async def serve_router(
    server: Server,
    router: Router,
    backend: Backend,
    host_class: type[RoutedOutput],
    context: Callable[..., Any],
    options: RouterOptions,
    on_bound: OnBound,
) -> None:
    """Serve ``router`` (any HTTP transport machine) over TCP under the options'
    ``limits`` until cancelled; each session is driven by a ``host_class`` host whose
    handlers see ``context(host, event)``; ``on_bound`` gets the bound port."""
    at = Listening.of(options)
    async with backend.open_task_group() as group:
        make_host: Callable[[ServerSession], Any] = host_class.factory(
            group, router, server, context
        )
        service = HTTPService(server, router, make_host, backend, at.max_body, at.limits)
        if service.shared is not None:
            await service.shared.ready()
            group.start_soon(service.shared.run)
        try:
            await backend.serve_tcp(service.connection, at.host, at.port, on_bound=on_bound)
        finally:
            if service.shared is not None:
                await service.shared.flush()
