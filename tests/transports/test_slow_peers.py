"""Slow, idle and too many connections hold nothing for long (issue "Hardening",
point 3): a request's head and body have ``request_timeout`` (408, then close), a
kept-alive connection waits ``keep_alive_timeout`` for its next request (then closes
quietly), and a connection beyond ``max_connections`` gets an immediate 503 with
``Retry-After``.  An SSE stream in progress is under none of it.

Each runs on both backends over real sockets, with limits small enough to keep it short.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager

import pytest

from sansio_mcp.runtime._http_service import ServerLimits
from sansio_mcp_apps.example_server import build_server
from tests.parity.harness import serving

from .helpers import POST_HEADERS, answer_head, initialize

BACKENDS = ["trio", "asyncio"]
QUICK = ServerLimits(request_timeout=0.5, keep_alive_timeout=0.4, max_connections=50)
#: Far above every limit in QUICK: a connection still open after it was held without end.
PATIENCE = 5.0


@contextmanager
def _quick_http(backend: str) -> Iterator[int]:
    with serving(backend, "http", build_server(), limits=QUICK) as port:
        yield port


@contextmanager
def _connected(port: int) -> Iterator[socket.socket]:
    with closing(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)) as sock:
        yield sock


def _until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took."""
    start = time.monotonic()
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received, time.monotonic() - start


def _post_json(port: int) -> tuple[http.client.HTTPConnection, int]:
    """A kept-alive connection that has just been answered an ``initialize``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    connection.request("POST", "/mcp", json.dumps(initialize()), POST_HEADERS)
    response = connection.getresponse()
    response.read()
    return connection, response.status


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_head_sent_a_byte_at_a_time_is_cut_off_with_408(backend: str) -> None:
    with _quick_http(backend) as port, _connected(port) as sock:
        head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
        sock.sendall(head)
        start = time.monotonic()
        with pytest.raises(OSError):  # BrokenPipe / reset once the server gave up
            while time.monotonic() - start < PATIENCE:
                sock.sendall(b"a")  # slowloris: a byte at a time, never the blank line
                time.sleep(0.05)
        received, _ = _until_closed(sock) if _readable(sock) else (b"", 0.0)
        assert time.monotonic() - start < 2.5
        assert received == b"" or received.startswith(b"HTTP/1.1 408 ")


def _readable(sock: socket.socket) -> bool:
    try:
        sock.setblocking(False)
        return bool(sock.recv(1, socket.MSG_PEEK))
    except (BlockingIOError, OSError):
        return False
    finally:
        sock.setblocking(True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "partial_request",
    [
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: aaa",  # a head never finished
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{}",  # body short
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nab",
    ],
    ids=["head", "content-length", "chunk"],
)
def test_a_request_that_stops_short_gets_408_and_is_closed(
    backend: str, partial_request: bytes
) -> None:
    with _quick_http(backend) as port, _connected(port) as sock:
        sock.sendall(partial_request)
        received, waited = _until_closed(sock)
        assert received.startswith(b"HTTP/1.1 408 ")
        assert b"connection: close" in received.lower()
        assert 0.3 < waited < 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_busy_connection_outlives_its_idle_time_and_then_closes(backend: str) -> None:
    """The idle time counts from each answer: requests one after another for longer
    than ``keep_alive_timeout`` keep the connection, which closes once left idle
    (the timer that keeps the idle time is armed once and looks again when it fires)."""
    with _quick_http(backend) as port:
        connection, status = _post_json(port)
        with closing(connection):
            assert status == 200
            start, served = time.monotonic(), 0
            while time.monotonic() - start < 3 * QUICK.keep_alive_timeout:
                connection.request("POST", "/mcp", json.dumps(initialize(2)), POST_HEADERS)
                response = connection.getresponse()
                response.read()
                answered = time.monotonic()
                assert response.status == 200
                served += 1
            assert served > 1
            assert connection.sock is not None
            received, waited = _until_closed(connection.sock)
            assert received == b""
            # Counted from the last answer, not from the wait's start: a test thread held
            # up under load between the two could otherwise find the socket closed already.
            assert 0.2 < time.monotonic() - answered and waited < 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_idle_kept_alive_connection_is_closed_quietly(backend: str) -> None:
    with _quick_http(backend) as port:
        connection, status = _post_json(port)
        with closing(connection):
            assert status == 200
            # Within the idle time the connection serves its next request ...
            time.sleep(0.1)
            connection.request("POST", "/mcp", json.dumps(initialize(2)), POST_HEADERS)
            response = connection.getresponse()
            response.read()
            assert response.status == 200
            # ... past it, it is closed without a word.
            assert connection.sock is not None
            received, waited = _until_closed(connection.sock)
            assert received == b""
            assert 0.2 < waited < 2.0


def _refused_at_once(port: int, request: bytes) -> None:
    """A connection over the cap, ``request`` sent: a 503 with Retry-After, then the close."""
    with _connected(port) as refused:
        refused.sendall(request)
        received, waited = _until_closed(refused)
    assert received.startswith(b"HTTP/1.1 503 ")
    assert b"retry-after: 1\r\n" in received.lower()
    assert waited < 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_connection_over_the_cap_gets_503_at_once(backend: str) -> None:
    limits = ServerLimits(request_timeout=PATIENCE, keep_alive_timeout=PATIENCE, max_connections=3)
    with serving(backend, "http", build_server(), limits=limits) as port, ExitStack() as held:
        for _ in range(3):
            held.enter_context(_connected(port)).sendall(b"POST /mcp HTTP/1.1\r\n")  # and stop
        time.sleep(0.2)  # the server has accepted all three
        # A peer that sends its request at once still reads the 503 before the close.
        _refused_at_once(
            port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
        )
        held.close()  # the held connections go: a new one is served again
        deadline = time.monotonic() + PATIENCE
        while (status := _post_json(port)[1]) == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status == 200


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_sse_stream_outlives_the_request_timeout(backend: str) -> None:
    with serving(backend, "sse", build_server(), limits=QUICK) as port, _connected(port) as sock:
        sock.sendall(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        stream = b""
        while (found := re.search(rb"data: (/\S*session_id=\w+)", stream)) is None:
            stream += sock.recv(65536)
        endpoint = found.group(1)
        time.sleep(3 * QUICK.request_timeout)  # the stream stays open, quiet, past the limits
        poster = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
        with closing(poster):
            body = json.dumps(initialize())
            poster.request("POST", endpoint.decode(), body, {"Content-Type": "application/json"})
            response = poster.getresponse()
            response.read()
            assert response.status == 202
        answer = b""
        while b'"serverInfo"' not in answer:
            chunk = sock.recv(65536)
            assert chunk, "the SSE stream was closed"
            answer += chunk


def test_the_default_cap_leaves_descriptors_for_the_rest() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = ServerLimits().max_connections
    assert 1 <= cap <= 1000
    if soft != resource.RLIM_INFINITY:
        assert cap <= max(1, soft // 2)
    for wrong in (
        {"request_timeout": 0},
        {"keep_alive_timeout": -1},
        {"max_connections": 0},
        {"max_read_ahead": 0},
    ):
        with pytest.raises(ValueError):
            ServerLimits(**wrong)  # type: ignore[arg-type]


# WebSocket: the same cap, and a pong deadline (issue "Hardening, second round", point 5)

_WS_HANDSHAKE = (
    b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: mcp\r\n\r\n"
)


def _ws_opened(sock: socket.socket) -> None:
    """Open a WebSocket on ``sock`` (the server's 101 has come)."""
    received = answer_head(sock, _WS_HANDSHAKE)
    assert received.startswith(b"HTTP/1.1 101 "), received


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_websocket_connection_over_the_cap_gets_503_at_once(backend: str) -> None:
    limits = ServerLimits(max_connections=2)
    options = {"limits": limits, "ping_interval": None, "handshake_timeout": PATIENCE}
    with serving(backend, "ws", build_server(), **options) as port, ExitStack() as held:
        for _ in range(2):
            _ws_opened(held.enter_context(_connected(port)))
        _refused_at_once(port, _WS_HANDSHAKE)
        held.close()  # the held connections go: a new one is served again
        deadline = time.monotonic() + PATIENCE
        while True:
            with _connected(port) as sock:
                sock.sendall(_WS_HANDSHAKE)
                answer = sock.recv(65536)
            if not answer.startswith(b"HTTP/1.1 503 ") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert answer.startswith(b"HTTP/1.1 101 "), answer


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_websocket_peer_that_never_pongs_is_closed(backend: str) -> None:
    options = {"ping_interval": 0.2, "pong_timeout": 0.3}
    with serving(backend, "ws", build_server(), **options) as port, _connected(port) as sock:
        _ws_opened(sock)
        start = time.monotonic()
        received, closed = b"", False
        while not closed and time.monotonic() - start < PATIENCE:
            try:
                chunk = sock.recv(65536)  # pings come, and are never answered
            except ConnectionResetError:
                chunk = b""
            received += chunk
            closed = not chunk
        waited = time.monotonic() - start
    assert closed  # within PATIENCE, far past the ping and its deadline
    assert waited > 0.4
    assert received == b"" or received.startswith(b"\x89")  # (a ping frame)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_websocket_peer_that_answers_pings_stays(backend: str) -> None:
    import wsproto
    import wsproto.events as ws

    options = {"ping_interval": 0.1, "pong_timeout": 0.2}
    with serving(backend, "ws", build_server(), **options) as port, _connected(port) as sock:
        client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        sock.sendall(client.send(ws.Request(host="127.0.0.1", target="/mcp", subprotocols=["mcp"])))
        pongs = 0
        sock.settimeout(0.05)
        end = time.monotonic() + 10 * 0.3  # ten pong deadlines
        while time.monotonic() < end:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            assert data, "the server closed a connection that answered its pings"
            client.receive_data(data)
            for event in client.events():
                if isinstance(event, ws.Ping):
                    sock.sendall(client.send(event.response()))
                    pongs += 1
        assert pongs >= 3
