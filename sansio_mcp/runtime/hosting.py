"""What an adapter is built from: the session hosts, the HTTP, SSE, WebSocket and ASGI
services, the client openers and the options they take.

The Trio and asyncio adapters are made of these and nothing private; an adapter for
another event loop (or a transport of one's own) is too.  Each name's module is
imported when the name is first used, so an adapter pays only for the transports a
program uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._asgi import ASGIService, Receive, Scope, Send, serve_lifespan
    from ._backend import ConnectionHandler
    from ._client_options import ClientOptions, StdioChild, StdioOptions
    from ._host import Framing, HostContext, hosted, serving, start_client
    from ._http_service import RoutedOutput, Router, SessionHosts, streamable_http_router
    from ._open_client import HTTPOpeners, run_client
    from ._process import ChildProcess
    from ._serve_options import (
        HTTPServeOptions,
        RouterOptions,
        SSEServeOptions,
        WebSocketServeOptions,
        http_router,
        sse_router,
    )
    from ._transports import ClientOpeners, Listeners
    from ._ws_service import WebSocketServing, open_websocket

#: Each name's private module (imported on first use).
_HOME = {
    "ASGIService": "._asgi",
    "ChildProcess": "._process",
    "ClientOpeners": "._transports",
    "ClientOptions": "._client_options",
    "ConnectionHandler": "._backend",
    "Framing": "._host",
    "HostContext": "._host",
    "hosted": "._host",
    "http_router": "._serve_options",
    "HTTPOpeners": "._open_client",
    "HTTPServeOptions": "._serve_options",
    "Listeners": "._transports",
    "open_websocket": "._ws_service",
    "Receive": "._asgi",
    "RoutedOutput": "._http_service",
    "Router": "._http_service",
    "RouterOptions": "._serve_options",
    "run_client": "._open_client",
    "Scope": "._asgi",
    "Send": "._asgi",
    "serve_lifespan": "._asgi",
    "serving": "._host",
    "SessionHosts": "._http_service",
    "sse_router": "._serve_options",
    "SSEServeOptions": "._serve_options",
    "start_client": "._host",
    "StdioChild": "._client_options",
    "StdioOptions": "._client_options",
    "streamable_http_router": "._http_service",
    "WebSocketServeOptions": "._serve_options",
    "WebSocketServing": "._ws_service",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __package__), name)
    globals()[name] = value
    return value


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
    "serving",
    "SessionHosts",
    "sse_router",
    "SSEServeOptions",
    "start_client",
    "StdioChild",
    "StdioOptions",
    "streamable_http_router",
    "WebSocketServeOptions",
    "WebSocketServing",
]
