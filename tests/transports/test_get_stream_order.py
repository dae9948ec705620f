"""The Streamable HTTP client's GET stream goes before its requests (conformance
``sse-retry``): a request waits for the GET stream's response head, on the client's
own clock, for up to ``GET_STREAM_HEAD_WAIT`` after the GET went out, so a server
that answers promptly always sees the GET stream first, however loaded the machine;
only a server that holds back the head that long lets the requests go anyway.

The clock is frozen and moved by the test (Trio's ``MockClock``; on asyncio a ``time``
set on the loop instance, which its timers follow): nothing here waits on real time.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
import trio
import trio.testing

import asyncio_adapters
import trio_adapters
from sansio_mcp._streamable_http_client import GET_STREAM_HEAD_WAIT, RoundTrip

#: Real-time bound on each busy wait (a safety net: the test itself moves no real time).
_REAL_LIMIT = 20.0


class HeadHoldingServer:
    """A minimal 2025-11-25 MCP server on a loopback port (one thread per
    connection) whose GET stream's head is sent only when :attr:`release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.got_get = threading.Event()
        self.seen: list[str] = []
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []

    def _read_request(self, conn: socket.socket, buffer: bytearray) -> tuple[str, bytes] | None:
        while b"\r\n\r\n" not in buffer:
            data = conn.recv(65536)
            if not data:
                return None
            buffer += data
        head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            data = conn.recv(65536)
            if not data:
                return None
            rest += data
        buffer[:] = rest[length:]
        return lines[0].split(" ")[0], rest[:length]

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._serve_requests(conn)
        except OSError:  # the connection shut by running()'s teardown
            if not self._stop.is_set():
                raise

    def _serve_requests(self, conn: socket.socket) -> None:
        buffer = bytearray()
        with conn:
            while (request := self._read_request(conn, buffer)) is not None:
                method, body = request
                if method == "GET":
                    self.seen.append("GET")
                    self.got_get.set()
                    self.release.wait(_REAL_LIMIT)
                    self.seen.append("GET head")
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                        b"cache-control: no-cache\r\n\r\n"
                    )
                    self._stop.wait(_REAL_LIMIT)
                    return
                if method == "DELETE":
                    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    continue
                message = json.loads(body)
                self.seen.append(message["method"])
                if "id" not in message:
                    conn.sendall(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                    continue
                result: dict[str, Any] = {"tools": []}
                if message["method"] == "initialize":
                    result = {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "head-holding", "version": "1"},
                    }
                answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"mcp-session-id: s-1\r\n"
                    + f"content-length: {len(answer)}\r\n\r\n".encode()
                    + answer.encode()
                )

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if self._stop.is_set():
                conn.close()
                return
            self._conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    @contextmanager
    def running(self) -> Iterator[HeadHoldingServer]:
        acceptor = threading.Thread(target=self._accept, daemon=True)
        acceptor.start()
        try:
            yield self
        finally:
            self._stop.set()
            self.release.set()
            socket.create_connection(("127.0.0.1", self.port)).close()  # wakes accept()
            acceptor.join(_REAL_LIMIT)
            self._listener.close()
            for conn in self._conns:
                with suppress(OSError):  # (already shut by its peer)
                    conn.shutdown(socket.SHUT_RDWR)  # wakes a thread reading it
            for thread in self._threads:
                thread.join(_REAL_LIMIT)
            for conn in self._conns:
                conn.close()  # (its thread closed it already, unless it hung)


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each request the client starts sending (its connection taken), by JSON-RPC
    method (``GET`` for a GET): logged on the client, as it happens."""
    log: list[str] = []
    attempt = RoundTrip.attempt

    def logged(self: RoundTrip[Any]) -> bool:
        going = attempt(self)
        if going:
            log.append(json.loads(self.body)["method"] if self.body else self.method)
        return going

    monkeypatch.setattr(RoundTrip, "attempt", logged)
    return log


async def _busy_until(predicate: Callable[[], bool], pause: Callable[[], Awaitable[None]]) -> None:
    """Yield to the loop (its I/O polled, its frozen clock unmoved) until ``predicate``."""
    limit = time.monotonic() + _REAL_LIMIT
    while not predicate():
        assert time.monotonic() < limit, "gave up waiting"
        await pause()


async def _scenario(
    backend: Any,
    server: HeadHoldingServer,
    attempts: list[str],
    jump: Callable[[float], None],
    settle: Callable[[], Awaitable[None]],
    pause: Callable[[], Awaitable[None]],
    spawn: Callable[[Callable[[], Awaitable[None]]], Any],
    wait: float | None,
) -> list[Any]:
    listed: list[Any] = []
    url = f"http://127.0.0.1:{server.port}/mcp"
    options = {} if wait is None else {"get_stream_head_wait": wait}
    bound = GET_STREAM_HEAD_WAIT if wait is None else wait
    async with backend.connect([], url, "http", mode="handshake", **options) as client:
        await _busy_until(server.got_get.is_set, pause)

        async def list_tools() -> None:
            listed.append(await client.list_tools())

        done = spawn(list_tools)
        await settle()
        # Far longer than a loaded machine's scheduling delays: the request still waits.
        jump(bound - 0.5)
        await settle()
        assert "tools/list" not in attempts, attempts
        # Past the bound, a server holding back its head no longer holds up requests.
        jump(0.51)
        await _busy_until(lambda: "tools/list" in attempts, pause)
        server.release.set()
        await done()
    return listed


def _check_order(seen: list[str], attempts: list[str]) -> None:
    # The server reads each connection in a thread of its own, so ``seen`` orders only
    # what the client waited for: the answer to initialize before anything else, and
    # the GET (the scenario waits for the server to have it) before tools/list. The
    # notification, on another connection, may be read at any point after initialize.
    assert seen[0] == "initialize"
    assert seen.index("GET") < seen.index("tools/list")
    assert sorted(seen) == sorted(
        ["initialize", "notifications/initialized", "GET", "GET head", "tools/list"]
    )
    assert attempts[:4] == ["initialize", "notifications/initialized", "GET", "tools/list"]


#: The default wait (5 s), and one given to ``open_http_client``.
WAITS = [None, 30.0]


@pytest.mark.parametrize("wait", WAITS)
def test_requests_wait_for_the_get_streams_head_on_trio(
    attempts: list[str], wait: float | None
) -> None:
    clock = trio.testing.MockClock()

    async def main() -> list[Any]:
        async with trio.open_nursery() as nursery:
            finished = trio.Event()

            def spawn(fn: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
                async def task() -> None:
                    await fn()
                    finished.set()

                nursery.start_soon(task)
                return finished.wait

            return await _scenario(
                trio_adapters.BACKEND,
                server,
                attempts,
                clock.jump,
                trio.testing.wait_all_tasks_blocked,
                lambda: trio.sleep(0),
                spawn,
                wait,
            )

    with HeadHoldingServer().running() as server:
        listed = trio.run(main, clock=clock)
    assert listed == [[]]
    _check_order(server.seen, attempts)


@pytest.mark.parametrize("wait", WAITS)
def test_requests_wait_for_the_get_streams_head_on_asyncio(
    attempts: list[str], wait: float | None
) -> None:
    frozen = [time.monotonic()]

    def jump(seconds: float) -> None:
        frozen[0] += seconds

    async def settle() -> None:
        for _ in range(50):
            await asyncio.sleep(0)

    def spawn(fn: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        task = asyncio.ensure_future(fn())

        async def done() -> None:
            await task

        return done

    loop = asyncio.new_event_loop()
    loop.time = lambda: frozen[0]  # type: ignore[method-assign]
    with HeadHoldingServer().running() as server:
        try:
            listed = loop.run_until_complete(
                _scenario(
                    asyncio_adapters.BACKEND,
                    server,
                    attempts,
                    jump,
                    settle,
                    lambda: asyncio.sleep(0),
                    spawn,
                    wait,
                )
            )
        finally:
            loop.close()
    assert listed == [[]]
    _check_order(server.seen, attempts)


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize("wait", [-1.0, math.inf, math.nan, True, "5", 10**400])
def test_a_get_stream_head_wait_out_of_range_is_a_value_error(backend: str, wait: Any) -> None:
    adapter = trio_adapters if backend == "trio" else asyncio_adapters

    async def main() -> None:
        url = "http://127.0.0.1:9/mcp"  # never reached: refused before connecting
        with pytest.raises(ValueError, match=r"^get_stream_head_wait must be a finite number"):
            async with adapter.BACKEND.connect([], url, "http", get_stream_head_wait=wait):
                pass

    if backend == "trio":
        trio.run(main)
    else:
        asyncio.run(main())
