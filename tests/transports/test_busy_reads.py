"""What a client sends while its request is being answered is read only up to
``ServerLimits.max_read_ahead`` (issue "Hardening, second round", point 1): beyond
it the server stops reading, TCP holds the client back, and the server's buffers
stay bounded however much the client pushes, on an SSE GET stream, a POST answered
by a stream, and the legacy ``/sse`` stream.  The server keeps serving others.

Each runs on both backends over real sockets.  What the server buffered is counted
where it buffers: the bytes fed to the connection's HTTP parser.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
from collections.abc import Iterator
from contextlib import closing, contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp._http import HTTPRequest, HTTPServerConnection
from sansio_mcp.runtime._http_service import ServerLimits
from sansio_mcp_apps.example_server import build_server
from tests.parity.harness import serving

from .helpers import (
    INITIALIZED,
    POST_HEADERS,
    answer_head,
    initialize,
    split_at,
    stateless_headers,
    stateless_request,
)

BACKENDS = ["trio", "asyncio"]
READ_AHEAD = 16 * 1024
LIMITS = ServerLimits(max_read_ahead=READ_AHEAD, request_timeout=10, keep_alive_timeout=10)
#: Far more than loopback's socket buffers take: a push this big never stalls unless
#: the server stops reading.
PUSH_AT_MOST = 96 * 1024 * 1024
PATIENCE = 10.0


@pytest.fixture
def fed(monkeypatch: pytest.MonkeyPatch) -> dict[int, int]:
    """Bytes fed to each server-side HTTP parser (by the parser's id)."""
    counts: dict[int, int] = {}
    # Held for the test's length: an id is unique only while its object lives, and a
    # parser of an earlier connection, collected, could hand its id (and its count)
    # to the next one.
    parsers: list[HTTPServerConnection] = []
    receive = HTTPServerConnection.receive_data

    def counting(conn: HTTPServerConnection, data: bytes | bytearray) -> None:
        if id(conn) not in counts:
            parsers.append(conn)
        counts[id(conn)] = counts.get(id(conn), 0) + len(data)
        receive(conn, data)

    monkeypatch.setattr(HTTPServerConnection, "receive_data", counting)
    return counts


@contextmanager
def _connected(port: int) -> Iterator[socket.socket]:
    with closing(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)) as sock:
        yield sock


def _request(method: str, target: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _streaming(sock: socket.socket, request: bytes) -> None:
    """Send ``request`` and read until its answer's head (a stream) has come."""
    received = answer_head(sock, request)
    assert received.startswith(b"HTTP/1.1 200 "), received
    assert b"text/event-stream" in received.lower(), received


def _push_until_held(sock: socket.socket) -> int:
    """Push bytes (a pipelined request's, as far as the server can tell) until the
    server stops taking them; how many went out."""
    sock.setblocking(False)
    chunk = b"x" * (1024 * 1024)
    pushed = 0
    while pushed < PUSH_AT_MOST:
        try:
            pushed += sock.send(chunk)
        except BlockingIOError:
            _, writable, _ = select.select([], [sock], [], 1.0)
            if not writable:
                break  # held back: the server reads no more
    sock.setblocking(True)
    return pushed


def _open_session(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    with closing(connection):
        connection.request("POST", "/mcp", json.dumps(initialize()), POST_HEADERS)
        response = connection.getresponse()
        response.read()
        session = response.getheader("mcp-session-id")
        assert response.status == 200 and session
        headers = {**POST_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        connection.request("POST", "/mcp", json.dumps(INITIALIZED), headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 202
    return session


def _still_serving(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    with closing(connection):
        connection.request("POST", "/mcp", json.dumps(initialize(7)), POST_HEADERS)
        response = connection.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["id"] == 7


def _assert_held(fed: dict[int, int], pushed: int, request: bytes) -> None:
    # The pushing connection's parser got its request and read-ahead at the most.
    assert max(fed.values()) <= len(request) + READ_AHEAD
    assert pushed < PUSH_AT_MOST  # the push was held back, not read and dropped


def _push_on_a_stream(port: int, request: bytes, fed: dict[int, int]) -> None:
    """Push bytes behind ``request`` (answered by a stream) until held back; the
    server still answers another client meanwhile."""
    with _connected(port) as sock:
        _streaming(sock, request)
        pushed = _push_until_held(sock)
        _still_serving(port)
    _assert_held(fed, pushed, request)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bytes_pushed_on_an_sse_get_stream_stay_bounded(backend: str, fed: dict[int, int]) -> None:
    with serving(backend, "http", build_server(), limits=LIMITS) as port:
        session = _open_session(port)
        get = _request(
            "GET",
            "/mcp",
            {
                "Accept": "text/event-stream",
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": "2025-11-25",
            },
        )
        _push_on_a_stream(port, get, fed)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bytes_pushed_while_a_post_is_answered_stay_bounded(
    backend: str, fed: dict[int, int]
) -> None:
    call = stateless_request(
        "tools/call",
        {"name": "slow", "arguments": {"seconds": 30, "steps": 30}, "_meta": {}},
    )
    call["params"]["_meta"]["progressToken"] = "p"
    body = json.dumps(call).encode()
    post = _request("POST", "/mcp", {**POST_HEADERS, **stateless_headers(call)}, body)
    with serving(backend, "http", build_server(), limits=LIMITS) as port:
        _push_on_a_stream(port, post, fed)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bytes_pushed_on_the_legacy_sse_stream_stay_bounded(
    backend: str, fed: dict[int, int]
) -> None:
    get = _request("GET", "/sse", {"Accept": "text/event-stream"})
    with serving(backend, "sse", build_server(), limits=LIMITS) as port:
        with _connected(port) as sock:
            _streaming(sock, get)
            pushed = _push_until_held(sock)
            with _connected(port) as other:  # another client still gets its stream
                _streaming(other, get)
        _assert_held(fed, pushed, get)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pipelined_request_beyond_the_read_ahead_is_answered_after_the_stream(
    backend: str,
) -> None:
    """Holding the client back loses nothing: a pipelined request several times the
    read-ahead is read, and answered, once the answer before it is over."""
    call = stateless_request("tools/call", {"name": "slow", "arguments": {"seconds": 0.3}})
    call["params"]["_meta"]["progressToken"] = "p"
    first = _request(
        "POST", "/mcp", {**POST_HEADERS, **stateless_headers(call)}, json.dumps(call).encode()
    )
    padded = initialize(9)
    padded["params"]["clientInfo"]["description"] = "x" * (8 * READ_AHEAD)
    second = _request(
        "POST", "/mcp", {**POST_HEADERS, "Connection": "close"}, json.dumps(padded).encode()
    )
    with serving(backend, "http", build_server(), limits=LIMITS) as port, _connected(port) as sock:
        sock.sendall(first + second)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 200 ") == 2, received[:2000]
    assert b'"id":9' in received.replace(b" ", b"")


@given(
    rest=st.binary(max_size=3000),
    cuts=st.lists(st.integers(min_value=0), max_size=6),
    fast_path=st.booleans(),
)
def test_buffered_is_what_the_parser_holds_beyond_the_request(
    rest: bytes, cuts: list[int], fast_path: bool
) -> None:
    """What the read-ahead bound counts, on either engine: the bytes received and not
    yet taken into a request."""
    body = json.dumps(initialize()).encode()
    data = _request("POST", "/mcp", POST_HEADERS, body) + rest
    conn = HTTPServerConnection(fast_path=fast_path)
    for piece in split_at(data, cuts):
        conn.receive_data(piece)
    request = conn.next_request()
    assert isinstance(request, HTTPRequest) and request.body == body
    assert conn.buffered == len(rest)
