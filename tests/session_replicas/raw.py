"""A raw HTTP/1.1 client on any runtime backend (h11 over the backend's TCP stream),
so that a test says which replica each request of a session goes to."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import h11

from sansio_mcp._sse import SSEParser
from sansio_mcp.runtime import Backend as RuntimeBackend

ACCEPT_BOTH = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


class Raw:
    """One HTTP/1.1 connection to ``127.0.0.1:port``."""

    def __init__(self, stream: Any, port: int) -> None:
        self.stream = stream
        self.port = port
        self.h11 = h11.Connection(h11.CLIENT)
        self._sse = SSEParser()

    @classmethod
    @asynccontextmanager
    async def connect(cls, backend: RuntimeBackend, port: int) -> AsyncIterator[Raw]:
        stream = await backend.open_tcp_stream("127.0.0.1", port)
        try:
            yield cls(stream, port)
        finally:
            await stream.aclose()

    async def send(
        self, method: str, headers: dict[str, str], body: Any = None, target: str = "/mcp"
    ) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        pairs = [("host", f"127.0.0.1:{self.port}"), *headers.items()]
        pairs.append(("content-length", str(len(data))))
        out = self.h11.send(h11.Request(method=method, target=target, headers=pairs)) or b""
        out += (self.h11.send(h11.Data(data=data)) or b"") if data else b""
        out += self.h11.send(h11.EndOfMessage()) or b""
        await self.stream.send_all(out)

    async def _next(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.stream.receive_some(65536))
                continue
            return event

    async def head(self) -> tuple[int, dict[str, str]]:
        while True:
            event = await self._next()
            if isinstance(event, h11.Response):
                return event.status_code, {k.decode(): v.decode() for k, v in event.headers}

    async def body(self) -> bytes:
        chunks = []
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return b"".join(chunks)

    async def next_message(self) -> Any:
        """The next JSON-RPC message of an SSE body (None at its end)."""
        while True:
            event = self._sse.next_event()
            if not isinstance(event, type):
                if event.data.strip():
                    return json.loads(event.data)
                continue
            got = await self._next()
            if not isinstance(got, h11.Data):
                return None
            self._sse.feed(bytes(got.data))


async def call(
    backend: RuntimeBackend,
    port: int,
    method: str,
    headers: dict[str, str],
    body: Any = None,
) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh connection: status, headers, whole body."""
    async with Raw.connect(backend, port) as raw:
        await raw.send(method, headers, body)
        status, head = await raw.head()
        return status, head, await raw.body()


def messages(head: dict[str, str], body: bytes) -> list[Any]:
    """The JSON-RPC messages of a response body (JSON, or SSE events)."""
    if "text/event-stream" in head.get("content-type", ""):
        parser = SSEParser()
        parser.feed(body)
        out = []
        while not isinstance(event := parser.next_event(), type):
            if event.data.strip():
                out.append(json.loads(event.data))
        return out
    return [json.loads(body)] if body.strip() else []
