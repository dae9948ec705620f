"""What an adapter is built from: the session hosts, the HTTP, SSE, WebSocket and ASGI
services, the client openers and the options they take.

The Trio and asyncio adapters are made of these and nothing private; an adapter for
another event loop (or a transport of one's own) is too.  Each name's module is
imported when the name is first used, so an adapter pays only for the transports a
program uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util import imported_when_called, lazy_names

if TYPE_CHECKING:
    from ._asgi import ASGIService, Receive, Scope, Send, serve_lifespan
    from ._backend import ConnectionHandler
    from ._client_options import ClientOptions, StdioChild, StdioOptions
    from ._host import Framing, hosted, start_client
    from ._http_openers import HTTPOpeners
    from ._http_service import (
        RoutedOutput,
        Router,
        SessionHosts,
        SessionOptions,
        SingleRequestHost,
        streamable_http_router,
    )
    from ._listeners import serve_router
    from ._open_client import run_client
    from ._process import ChildProcess
    from ._serve_options import (
        HTTPServeOptions,
        RouterOptions,
        SSEServeOptions,
        WebSocketServeOptions,
        http_router,
        sse_router,
    )
    from ._serving import HostContext, serving
    from ._transports import ClientOpeners, Listeners
    from ._ws_service import WebSocketServing, open_websocket

# Each name is imported from its private module when first used.
lazy_names(
    __name__,
    {
        "._asgi": (
            "ASGIService",
            "Receive",
            "Scope",
            "Send",
            "serve_lifespan",
        ),
        "._backend": ("ConnectionHandler",),
        "._client_options": (
            "ClientOptions",
            "StdioChild",
            "StdioOptions",
        ),
        "._host": (
            "Framing",
            "hosted",
            "start_client",
        ),
        "._serving": ("HostContext", "serving"),
        "._http_service": (
            "RoutedOutput",
            "Router",
            "SessionHosts",
            "SessionOptions",
            "SingleRequestHost",
            "streamable_http_router",
        ),
        "._http_openers": ("HTTPOpeners",),
        "._listeners": ("serve_router",),
        "._open_client": ("run_client",),
        "._process": ("ChildProcess",),
        "._serve_options": (
            "http_router",
            "HTTPServeOptions",
            "RouterOptions",
            "sse_router",
            "SSEServeOptions",
            "WebSocketServeOptions",
        ),
        "._transports": (
            "ClientOpeners",
            "Listeners",
        ),
        "._ws_service": (
            "open_websocket",
            "WebSocketServing",
        ),
    },
)


__all__ = [
    "ASGIService",
    "ChildProcess",
    "ClientOpeners",
    "ClientOptions",
    "ConnectionHandler",
    "Framing",
    "HostContext",
    "hosted",
    "http_router",
    "HTTPOpeners",
    "HTTPServeOptions",
    "imported_when_called",
    "Listeners",
    "open_websocket",
    "Receive",
    "RoutedOutput",
    "Router",
    "RouterOptions",
    "run_client",
    "Scope",
    "Send",
    "serve_lifespan",
    "serve_router",
    "serving",
    "SessionHosts",
    "SessionOptions",
    "SingleRequestHost",
    "sse_router",
    "SSEServeOptions",
    "start_client",
    "StdioChild",
    "StdioOptions",
    "streamable_http_router",
    "WebSocketServeOptions",
    "WebSocketServing",
]
