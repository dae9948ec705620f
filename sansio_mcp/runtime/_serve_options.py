"""The keywords of every network ``serve_*``, written once with their defaults.

Each adapter's ``serve_http``, ``serve_sse``, ``serve_router`` and ``serve_ws``
takes these (``**options: Unpack[...]``) beside its own way of reporting the
bound port (Trio's ``task_status``, asyncio's ``started``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

import attrs

from .._legacy_sse import LegacySSEServer
from .._streamable_http import StreamableHTTPServer
from ..auth._router import ProtectedRouter
from ._http_service import (
    DEFAULT_LIMITS,
    ServerLimits,
    SessionOptions,
    legacy_sse_router,
    streamable_http_router,
)
from ._server import Server

__all__ = [
    "HTTPServeOptions",
    "Listening",
    "ListenOptions",
    "RouterOptions",
    "SSEServeOptions",
    "WebSocketServeOptions",
    "http_router",
    "sse_router",
]


class ListenOptions(TypedDict, total=False):
    """Where a listener listens: ``host`` (127.0.0.1) and ``port`` (0: any free one)."""

    host: str
    port: int


class RouterOptions(ListenOptions, total=False):
    """``serve_router``'s keywords: a request body's limit (``max_body``, 4 MiB) and
    the connection :class:`ServerLimits` (``limits``)."""

    max_body: int
    limits: ServerLimits


class HTTPServeOptions(RouterOptions, SessionOptions, total=False):
    """``serve_http``'s keywords: the ``endpoint`` (``/mcp``), the DNS-rebinding
    guard's ``allowed_hosts`` / ``allowed_origins`` (loopback names when None),
    ``json_response`` (plain JSON answers instead of SSE streams), and the machine's
    bounds (:class:`SessionOptions`: sessions, their idle time, replay, unread bytes)."""

    endpoint: str
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None
    json_response: bool


class SSEServeOptions(RouterOptions, total=False):
    """``serve_sse``'s keywords: the GET stream's ``sse_path`` (``/sse``), the POST
    ``message_path`` (``/messages``), and the DNS-rebinding guard's lists."""

    sse_path: str
    message_path: str
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None


class WebSocketServeOptions(ListenOptions, total=False):
    """``serve_ws``'s keywords (see :class:`~sansio_mcp.runtime._ws_service.WebSocketServing`)."""

    path: str
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None
    max_message_size: int
    ping_interval: float | None
    handshake_timeout: float | None
    pong_timeout: float | None
    limits: ServerLimits


@attrs.frozen
class Listening:
    """:class:`RouterOptions` with their defaults."""

    host: str = "127.0.0.1"
    port: int = 0
    max_body: int = 4 * 1024 * 1024
    limits: ServerLimits = DEFAULT_LIMITS

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> Listening:
        """These options (a TypeError names one it does not know, as a call would)."""
        return cls(**options)


_LISTENING = frozenset(attrs.fields_dict(Listening))


def _split(options: Mapping[str, Any]) -> tuple[dict[str, Any], RouterOptions]:
    """The transport machine's keywords, and the listener's."""
    machine = {key: value for key, value in options.items() if key not in _LISTENING}
    listening = {key: value for key, value in options.items() if key in _LISTENING}
    return machine, RouterOptions(**listening)  # type: ignore[typeddict-item]


def http_router(
    server: Server, options: HTTPServeOptions
) -> tuple[StreamableHTTPServer | ProtectedRouter, RouterOptions]:
    """``serve_http``'s Streamable HTTP machine, and what ``serve_router`` takes."""
    machine, listening = _split(options)
    return streamable_http_router(server, **machine), listening


def sse_router(
    server: Server, options: SSEServeOptions
) -> tuple[LegacySSEServer | ProtectedRouter, RouterOptions]:
    """``serve_sse``'s legacy HTTP+SSE machine, and what ``serve_router`` takes."""
    machine, listening = _split(options)
    return legacy_sse_router(server, **machine), listening
