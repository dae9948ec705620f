"""Raw HTTP/1.1 requests on any runtime backend (the transports tests' :class:`RawHTTP`
over the backend's TCP stream), so that a test says which replica each request of a
session goes to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sansio_mcp.runtime import Backend as RuntimeBackend
from tests.transports.helpers import POST_HEADERS, RawHTTP, RawResponse

ACCEPT_BOTH = POST_HEADERS


@asynccontextmanager
async def connect(backend: RuntimeBackend, port: int) -> AsyncIterator[RawHTTP]:
    """One connection to ``127.0.0.1:port``, closed after the block."""
    stream = await backend.open_tcp_stream("127.0.0.1", port)
    try:
        yield RawHTTP(stream, port)  # type: ignore[arg-type]  # any byte stream will do
    finally:
        await stream.aclose()


async def call(
    backend: RuntimeBackend, port: int, method: str, headers: dict[str, str], body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh connection: status, headers, whole body."""
    async with connect(backend, port) as raw:
        await raw.send_request(method, "/mcp", headers, body)
        response = await raw.response()
        return response.status, response.headers, response.body


def messages(headers: dict[str, str], body: bytes) -> list[Any]:
    """The JSON-RPC messages of a response body (JSON, or SSE events)."""
    return RawResponse(200, headers, body).messages()
