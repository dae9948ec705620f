"""The A2A leg's connections to agents carry the socket options the MCP HTTP client's
do: TCP_NODELAY, and TCP_QUICKACK re-armed after each read.  Without the latter, an
agent that writes an answer's head and body apart with Nagle's algorithm on (as
uvicorn does) sends the body only once the head is ACKed, and on a kept-alive
connection Linux delays that ACK by 40 ms: a stall per call."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from sansio_mcp.runtime import TransportBackend
from sansio_mcp_apps.a2a.runtime._transport import BackendTransport

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="Linux only")


@contextmanager
def nagle_agent() -> Iterator[str]:
    """A loopback HTTP server on one kept-alive connection, Nagle on, that writes each
    answer's head and body in two sends; its URL (stopped after)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        sock.settimeout(5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        with sock:
            pending = b""
            while True:
                while b"\r\n\r\n" not in pending:
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    pending += data
                pending = pending.split(b"\r\n\r\n", 1)[1]  # GETs: no body
                sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
                sock.sendall(b"{}")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/card"
    finally:
        listener.close()
        thread.join(timeout=10)


def _socket_of(stream: Any) -> Any:
    """The OS socket under an adapter's TCP stream (Trio's, then asyncio's)."""
    sock = getattr(stream, "_socket", None)
    return sock if sock is not None else stream._writer.get_extra_info("socket")


def test_agent_calls_do_not_stall_on_delayed_acks(backend: TransportBackend) -> None:
    elapsed: list[float] = []
    nodelay: list[int] = []

    async def body() -> None:
        transport = BackendTransport(backend)
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(3):  # past the connection's first, quick ACKs
                assert (await client.get(url)).content == b"{}"
            started = time.monotonic()
            for _ in range(10):
                assert (await client.get(url)).content == b"{}"
            elapsed.append(time.monotonic() - started)
            conn = transport.pool.take(f"http://127.0.0.1:{httpx.URL(url).port}")
            assert conn is not None, "the connection was not kept alive"
            nodelay.append(
                _socket_of(conn.stream).getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            )
            await conn.stream.aclose()

    with nagle_agent() as url:
        backend.run(body)
    assert nodelay == [1]
    assert elapsed[0] < 0.3, f"10 calls took {elapsed[0]:.3f} s: stalled on delayed ACKs"
