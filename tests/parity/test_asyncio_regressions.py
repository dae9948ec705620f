"""Regression tests for asyncio adapter bugs the parity suite found.

These run the asyncio server in the test's own loop (the way an asyncio
application embeds it) and count that loop's tasks, which is how the bugs
showed: tasks that Trio's structure would have ended were left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from asyncio_adapters.http_server import serve_http
from asyncio_adapters.sse import serve_sse
from asyncio_adapters.websocket import serve_ws

from .harness import INITIALIZE, parity_server, run

SERVES: dict[str, Callable[..., Any]] = {"http": serve_http, "sse": serve_sse, "ws": serve_ws}


@asynccontextmanager
async def serving_here(transport: str) -> AsyncIterator[tuple[int, asyncio.Task[None]]]:
    started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(SERVES[transport](parity_server(), port=0, started=started))
    try:
        yield await started, task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def live_tasks() -> int:
    return len([t for t in asyncio.all_tasks() if not t.done()])


async def quiet_count() -> int:
    """The number of live tasks once it has stopped changing for a moment."""
    async with asyncio.timeout(5):
        last, same = live_tasks(), 0
        while same < 5:
            await asyncio.sleep(0.02)
            now = live_tasks()
            last, same = now, same + 1 if now == last else 0
    return last


async def settle(expected: int) -> None:
    async with asyncio.timeout(5):
        while live_tasks() != expected:
            await asyncio.sleep(0.01)


async def read_until(reader: asyncio.StreamReader, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = await reader.read(65536)
        assert chunk, f"the server closed before {marker!r}: {data!r}"
        data += chunk
    return data


def http_request(port: int, method: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {headers.pop('target')} HTTP/1.1", f"host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body:
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
def test_stopping_the_server_ends_open_connections(transport: str) -> None:
    """A connection still open when the server is cancelled is cancelled with it
    (``asyncio.start_server`` left its handler task running)."""

    async def body() -> None:
        async with serving_here(transport) as (port, _):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET ")  # a request that never completes
            await writer.drain()
            await asyncio.sleep(0.1)  # the server has accepted it
        # The server is gone and took the connection with it: the client sees EOF.
        async with asyncio.timeout(5):
            assert await reader.read() == b""
        writer.close()
        await writer.wait_closed()

    run("asyncio", body)  # fails with StrayTasks if a connection task outlived the server


def test_dropped_legacy_sse_stream_ends_its_task() -> None:
    """The client closes its GET /sse stream: the connection task ends at once
    (its writer was never woken to see the exchange finished)."""

    async def body() -> None:
        async with serving_here("sse") as (port, _):
            baseline = await quiet_count()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                http_request(port, "GET", {"target": "/sse", "accept": "text/event-stream"})
            )
            await read_until(reader, b"event: endpoint")
            assert live_tasks() > baseline
            writer.close()
            await writer.wait_closed()
            await settle(baseline)

    run("asyncio", body)


def test_dropped_streamable_http_get_stream_ends_its_task() -> None:
    async def body() -> None:
        async with serving_here("http") as (port, _):
            post = {
                "target": "/mcp",
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "connection": "close",
            }
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(http_request(port, "POST", post, json.dumps(INITIALIZE).encode()))
            head = (await reader.read()).decode()
            writer.close()
            await writer.wait_closed()
            session_id = next(
                line.split(":", 1)[1].strip()
                for line in head.split("\r\n")
                if line.lower().startswith("mcp-session-id:")
            )
            baseline = await quiet_count()  # the initialize connection is over
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            get = {
                "target": "/mcp",
                "accept": "text/event-stream",
                "mcp-session-id": session_id,
                "mcp-protocol-version": "2025-11-25",
            }
            writer.write(http_request(port, "GET", get))
            await read_until(reader, b"\r\n\r\n")
            assert live_tasks() > baseline
            writer.close()
            await writer.wait_closed()
            await settle(baseline)

    run("asyncio", body)
