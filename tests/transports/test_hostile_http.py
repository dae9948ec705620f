"""Hostile HTTP: malformed requests over raw sockets get the right status (or a
clean close) and the server keeps serving; and a Hypothesis property that no
byte string makes the sans-IO HTTP layer raise anything but typed results."""

from __future__ import annotations

import json
import secrets
import time

import h11
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sansio_mcp._http import ConnectionEnded, HTTPError, HTTPRequest, HTTPServerConnection
from sansio_mcp._legacy_sse import LegacySSEServer
from sansio_mcp._ndjson import NEED_DATA
from sansio_mcp._streamable_http import Exchange, StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from trio_adapters.http_server import serve_http, serve_router

from .helpers import (
    INITIALIZED,
    initialize,
    post_stateless,
    raw_exchange,
    serving,
    split_at,
    stateless_headers,
    stateless_request,
    statuses,
)

BUDGET = 20
MAX_BODY = 4096
LIST = stateless_request("tools/list")
BODY = json.dumps(LIST).encode()


def head(extra: bytes = b"", *, length: int | None = len(BODY), close: bool = True) -> bytes:
    """A request head for ``BODY`` (tools/list, 2026-07-28), with extra header lines."""
    lines = [
        b"POST /mcp HTTP/1.1",
        b"Host: 127.0.0.1",
        b"Content-Type: application/json",
        b"Accept: application/json, text/event-stream",
        b"MCP-Protocol-Version: 2026-07-28",
        b"Mcp-Method: tools/list",
    ]
    if close:
        lines.append(b"Connection: close")
    if length is not None:
        lines.append(b"Content-Length: %d" % length)
    return b"\r\n".join(lines) + b"\r\n" + extra + b"\r\n"


GOOD = head() + BODY


async def still_serving(port: int) -> None:
    answer = await post_stateless(port, LIST)
    assert answer.status == 200, answer
    assert answer.messages()[-1]["result"]["tools"]


@pytest.mark.parametrize(
    ("data", "expected", "half_close"),
    [
        pytest.param(GOOD, [200], False, id="baseline"),
        pytest.param(
            head(b"Transfer-Encoding: chunked\r\n", length=None) + b"ZZZ\r\nabc\r\n0\r\n\r\n",
            [400],
            False,
            id="bad-chunk-size",
        ),
        pytest.param(
            head(b"Transfer-Encoding: chunked\r\n", length=None) + b"5\r\nabcdefgh\r\n0\r\n\r\n",
            [400],
            False,
            id="chunk-longer-than-declared",
        ),
        pytest.param(
            head(b"Transfer-Encoding: gzip\r\n", length=None) + BODY, [501], False, id="gzip-te"
        ),
        pytest.param(head() + BODY[:20], [400], True, id="truncated-body-then-close"),
        pytest.param(head()[:40], [400], True, id="truncated-head-then-close"),
        pytest.param(
            head(b"Content-Length: 7\r\n") + BODY, [400], False, id="conflicting-content-length"
        ),
        pytest.param(
            head(b"Content-Length: abc\r\n", length=None) + BODY, [400], False, id="cl-not-a-number"
        ),
        pytest.param(
            head(b"Content-Length: -1\r\n", length=None) + BODY, [400], False, id="cl-negative"
        ),
        pytest.param(
            # A Content-Length shorter than the body: the JSON is cut (-32700), and the
            # rest is read as the next request on the connection (and refused).
            head(length=len(BODY) - 5, close=False) + BODY + b"\r\n\r\n",
            [400, 400],
            False,
            id="cl-too-short",
        ),
        pytest.param(
            # A head still incomplete past the 64 KiB limit (one huge header line) ...
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 70_000,
            [431],
            False,
            id="oversized-header",
        ),
        pytest.param(
            # ... or very many small ones.
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + b"".join(b"X-H%d: v\r\n" % i for i in range(7000)),
            [431],
            False,
            id="too-many-headers",
        ),
        pytest.param(
            # ... or a whole head over the limit in one write (it was accepted).
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 130_000 + b"\r\n\r\n",
            [431],
            False,
            id="oversized-header-in-one-write",
        ),
        pytest.param(b"\x00\xff\xfe garbage \x01\r\n\r\n", [400], False, id="garbage"),
        pytest.param(b"\r\n" * 10 + b"\x16\x03\x01\x02\x00\x01\x00", [400], True, id="tls-hello"),
        pytest.param(b"GE T /mcp HTTP/1.1\r\nHost: x\r\n\r\n", [400], False, id="bad-method"),
        pytest.param(
            b"POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", [400], False, id="no-host"
        ),
        pytest.param(
            b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            [405],
            False,
            id="head-request",
        ),
        pytest.param(head(b"Bad Header: x\r\n") + BODY, [400], False, id="space-in-name"),
        pytest.param(head(b"X-A: a\x00b\r\n") + BODY, [400], False, id="nul-in-value"),
        pytest.param(
            b"POST /m\x7fcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [400], False, id="ctl-in-target"
        ),
        pytest.param(
            head(b"Content-Length: 99999999999999999999\r\n", length=None),
            [413],
            False,
            id="absurd-content-length",
        ),
        pytest.param(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", [403, 400], False, id="http2-preface"),
    ],
)
async def test_malformed_request(data: bytes, expected: list[int], half_close: bool) -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server(), max_body=MAX_BODY) as port:
            received = await raw_exchange(port, data, shutdown=half_close)
            assert statuses(received) == expected, received[:300]
            if expected and expected[-1] >= 400:
                assert b"connection: close" in received.lower()
            await still_serving(port)


async def test_a_lone_surrogate_in_a_mirrored_name_is_a_400_not_a_crash() -> None:
    """A JSON "\\ud800" escape in a tool name has no UTF-8 form, so no Mcp-Name header
    can mirror it: the request is refused (-32020 header mismatch) and the server
    goes on serving (it used to die of a UnicodeEncodeError)."""
    message = stateless_request("tools/call", {"name": "echo\ud800", "arguments": {}})
    body = json.dumps(message).encode()  # ensure_ascii: the name travels as "\\ud800"
    assert b"echo\\ud800" in body
    data = head(length=len(body)).replace(b"Mcp-Method: tools/list", b"Mcp-Method: tools/call")
    data = data.replace(b"\r\n\r\n", b"\r\nMcp-Name: =?base64?ZWNobw==?=\r\n\r\n") + body
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server(), max_body=MAX_BODY) as port:
            received = await raw_exchange(port, data)
            assert statuses(received) == [400], received[:300]
            assert b"-32020" in received and b"Mcp-Name" in received
            await still_serving(port)


class _FaultyRouter:
    """A real router with a fault planted on one path, standing for a bug a request
    might meet inside the transport machine."""

    def __init__(self, inner: StreamableHTTPServer) -> None:
        self.inner = inner

    def handle(self, request: HTTPRequest, now: float | None = None) -> Exchange:
        if request.path == "/boom":
            raise RuntimeError("planted fault")
        return self.inner.handle(request, now)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


async def test_a_fault_in_one_request_is_a_500_and_the_server_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = build_server()
    router = _FaultyRouter(StreamableHTTPServer(server.create_session))
    data = GOOD.replace(b"POST /mcp ", b"POST /boom ", 1)
    with trio.fail_after(BUDGET):
        async with serving(serve_router, server, router=router) as port:
            received = await raw_exchange(port, data)
            assert statuses(received) == [500], received[:300]
            await still_serving(port)
    assert any("planted fault" in str(r.exc_info) for r in caplog.records if r.exc_info)


async def test_pipelined_requests_are_answered_in_order() -> None:
    """Several requests in one write: each is answered, in order, on the connection,
    including after a streaming (SSE) response."""
    messages = [
        stateless_request(
            "tools/call", {"name": "echo", "arguments": {"message": f"m{i}"}}, request_id=i
        )
        for i in range(1, 5)
    ]
    data = b""
    for index, message in enumerate(messages):
        body = json.dumps(message).encode()
        headers = {**stateless_headers(message)}
        lines = [
            b"POST /mcp HTTP/1.1",
            b"Host: 127.0.0.1",
            b"Content-Type: application/json",
            b"Accept: application/json, text/event-stream",
            *(f"{k}: {v}".encode() for k, v in headers.items()),
            b"Content-Length: %d" % len(body),
        ]
        if index == len(messages) - 1:
            lines.append(b"Connection: close")
        data += b"\r\n".join(lines) + b"\r\n\r\n" + body
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            received = await raw_exchange(port, data)
            assert statuses(received) == [200, 200, 200, 200]
            order = [received.index(f'"text":"m{i}"'.encode()) for i in range(1, 5)]
            assert order == sorted(order)
            await still_serving(port)


async def test_slow_client_dribbling_bytes() -> None:
    """A request sent one byte at a time still gets its answer, and a dribbling (or
    idle) client does not hold up anyone else."""
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            async with trio.open_nursery() as nursery:
                idle = await trio.open_tcp_stream("127.0.0.1", port)
                nursery.start_soon(idle.send_all, b"POST /mcp HTTP/1.1\r\nHost: 127.0")
                started = time.monotonic()
                await still_serving(port)  # while the idle connection hangs half-sent
                assert time.monotonic() - started < 2
                pieces = [GOOD[i : i + 1] for i in range(len(GOOD))]
                received = await raw_exchange(port, pieces, pause=0.001)
                assert statuses(received) == [200]
                await idle.aclose()
            await still_serving(port)


async def test_request_after_client_reset_mid_request() -> None:
    """Connections that die mid-head or mid-body (RST) are cleaned up quietly."""
    import socket
    import struct

    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            for cut in (10, len(head()) - 5, len(head()) + 10):
                stream = await trio.open_tcp_stream("127.0.0.1", port)
                await stream.send_all(GOOD[:cut])
                stream.socket.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                await stream.aclose()
            await still_serving(port)


# The property -----------------------------------------------------------------------------

_TYPED = (HTTPRequest, HTTPError, ConnectionEnded)


def _drive(machine: StreamableHTTPServer | LegacySSEServer, chunks: list[bytes]) -> None:
    """Feed ``chunks`` to an HTTPServerConnection as the adapter does, answering every
    request through ``machine``; only typed results may come out."""
    conn = HTTPServerConnection(max_body=MAX_BODY, max_headers=8192)
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
        while True:
            event = conn.next_request()
            if event is NEED_DATA:
                break
            assert isinstance(event, _TYPED), event
            if isinstance(event, HTTPError):
                assert 400 <= event.status < 600
                assert isinstance(conn.send_error_response(event.status, event.reason), bytes)
                return
            if isinstance(event, ConnectionEnded):
                return
            exchange = machine.handle(event)
            assert isinstance(exchange, Exchange)
            assert 200 <= exchange.status < 600
            headers = dict(exchange.headers)
            if exchange.streaming:
                out = conn.send_head(exchange.status, headers) + conn.send_body(exchange.take())
                exchange.disconnected()  # nobody drives the session here: drop it
                out += conn.end()
            else:
                out = conn.send_response(exchange.status, headers, exchange.take())
            assert out.startswith(b"HTTP/1.1 ")
            if not conn.start_next():
                return


_header_names = st.sampled_from(
    [
        "content-type",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "origin",
        "last-event-id",
        "transfer-encoding",
        "connection",
    ]
)
_header_values = st.one_of(
    st.sampled_from(
        [
            "application/json",
            "text/event-stream",
            "application/json, text/event-stream",
            "*/*",
            "2026-07-28",
            "2025-11-25",
            "tools/list",
            "tools/call",
            "add",
            "=?base64?YWRk?=",
            "http://localhost",
            "http://evil.example",
            "get-1",
            "s0-1",
            "chunked",
            "close",
        ]
    ),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20),
)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_bodies = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda message: json.dumps(message).encode(),
        st.one_of(
            st.just(initialize()),
            st.just(INITIALIZED),
            st.just(LIST),
            st.just(
                stateless_request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            ),
            st.builds(
                lambda method, params, request_id: {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": method,
                    "params": params,
                },
                st.sampled_from(["initialize", "tools/list", "tools/call", "server/discover", "x"]),
                _json_values,
                st.one_of(st.integers(), st.text(max_size=5), st.none()),
            ),
            _json_values,
        ),
    ),
)


@st.composite
def _requests(draw: st.DrawFn, targets: tuple[str, ...] = ("/mcp",)) -> bytes:
    """Mostly well-formed MCP requests with a few parts drawn at random."""
    method = draw(st.sampled_from(["POST"] * 6 + ["GET", "DELETE", "PUT", "HEAD", "OPTIONS"]))
    target = draw(st.sampled_from(list(targets) * 6 + ["/mcp?x=1", "/", "/other", "*"]))
    body = draw(_bodies)
    headers = {
        "host": draw(st.sampled_from(["127.0.0.1"] * 6 + ["localhost:8000", "evil.example", ""])),
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    try:
        message = json.loads(body)
        headers.update({k.lower(): v for k, v in stateless_headers(message).items()})
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    if draw(st.booleans()):
        headers["mcp-session-id"] = draw(st.sampled_from(sorted(_SESSIONS)) | _header_values)
    for name, value in draw(st.lists(st.tuples(_header_names, _header_values), max_size=4)):
        if name != "transfer-encoding":
            headers[name] = value
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    stream=st.one_of(
        st.binary(max_size=400),
        st.lists(_requests(), min_size=1, max_size=3).map(b"".join),
        st.tuples(_requests(), st.binary(max_size=50)).map(lambda t: t[0] + t[1]),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=4),
)
def test_arbitrary_bytes_only_give_typed_results(stream: bytes, cuts: list[int]) -> None:
    machine = _machine()
    try:
        _drive(machine, split_at(stream, cuts))
    except h11.LocalProtocolError as exc:  # pragma: no cover - reported as a failure
        pytest.fail(f"the HTTP layer produced an invalid response: {exc}")


_SERVER = build_server()
_SESSIONS = {"0" * 32, "1" * 32}


def _machine() -> StreamableHTTPServer:
    """A machine with two live handshake sessions whose ids the strategy knows."""
    ids = iter(sorted(_SESSIONS))
    machine = StreamableHTTPServer(
        _SERVER.create_session, new_session_id=lambda: next(ids, None) or secrets.token_hex(16)
    )
    for _ in _SESSIONS:
        exchange = machine.handle(
            HTTPRequest(
                "POST",
                "/mcp",
                {
                    "host": "127.0.0.1",
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                },
                json.dumps(initialize()).encode(),
            )
        )
        assert exchange.status == 200
    assert machine.sessions.ids == _SESSIONS
    return machine


_SSE_SESSION = "2" * 32
_SSE_TARGETS = ("/sse", f"/messages?session_id={_SSE_SESSION}", "/messages?session_id=nope")


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    stream=st.one_of(
        st.binary(max_size=400),
        st.lists(_requests(_SSE_TARGETS), min_size=1, max_size=3).map(b"".join),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=4),
)
def test_arbitrary_bytes_legacy_sse_machine(stream: bytes, cuts: list[int]) -> None:
    """The same property for the legacy HTTP+SSE machine, with one stream open."""
    ids = iter([_SSE_SESSION])
    machine = LegacySSEServer(
        _SERVER.create_session, new_session_id=lambda: next(ids, None) or secrets.token_hex(16)
    )
    opened = machine.handle(HTTPRequest("GET", "/sse", {"host": "127.0.0.1"}))
    assert opened.status == 200 and _SSE_SESSION.encode() in opened.take()
    _drive(machine, split_at(stream, cuts))
