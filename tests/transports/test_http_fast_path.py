"""The HTTP fast path against h11 itself, differentially.

:class:`HTTPServerConnection` and :class:`HTTPClientConnection` parse and write
common messages without h11 (the fast path, ``sansio_mcp._http_fast``) and hand
anything else to h11.  Here the same bytes (requests or responses, well formed
or not, split anywhere, pipelined, cut short) go through a connection on the
fast path and through one with the fast path switched off (``fast_path=False``:
h11 from the start); every result, every error and every byte written must be
the same.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import h11
import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sansio_mcp._http import (
    ConnectionEnded,
    HTTPClientConnection,
    HTTPError,
    HTTPRequest,
    HTTPResponseHead,
    HTTPServerConnection,
)
from sansio_mcp._http_pool import ConnectionPool
from sansio_mcp._ndjson import NEED_DATA

from .helpers import split_at

MAX_BODY = 4096
MAX_HEADERS = 2048
_DIFFERENTIAL = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# Pieces of messages, the usual and the odd ----------------------------------------------

_names = st.sampled_from(
    [
        b"Host",
        b"host",
        b"Content-Type",
        b"accept",
        b"mcp-session-id",
        b"Connection",
        b"connection",
        b"Content-Length",
        b"content-length",
        b"Transfer-Encoding",
        b"Expect",
        b"Upgrade",
        b"X-Thing",
        b"Bad Name",
        b"",
        b"x\x00y",
    ]
)
_values = st.one_of(
    st.sampled_from(
        [
            b"application/json",
            b"application/json, text/event-stream",
            b"close",
            b"keep-alive",
            b"Keep-Alive, Close",
            b"upgrade",
            b"chunked",
            b"gzip, chunked",
            b"100-continue",
            b"websocket",
            b"5",
            b"0",
            b"5, 5",
            b"5, 6",
            b"-1",
            b"99999999999999999999999",
            b"",
            b"  padded  ",
            b"caf\xe9",
            b"tab\there",
            b"ctl\x01char",
            b"127.0.0.1:8000",
        ]
    ),
    st.binary(max_size=12),
)
_line_ends = st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\n"])


@st.composite
def _header_block(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        name, value = draw(_names), draw(_values)
        separator = draw(st.sampled_from([b": ", b":", b" : ", b":\t"]))
        lines.append(name + separator + value + draw(_line_ends))
        if draw(st.integers(min_value=0, max_value=12)) == 0:
            lines.append(b" folded continuation" + draw(_line_ends))
    return b"".join(lines)


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from([b"POST", b"GET", b"DELETE", b"HEAD", b"PUT", b"P@ST"]))
    target = draw(st.sampled_from([b"/mcp", b"/mcp?x=1", b"*", b"http://h/mcp", b"/a b", b""]))
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0"]))
    body = draw(st.binary(max_size=20))
    host = draw(st.sampled_from([b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\r\n", b""]))
    framing = draw(st.sampled_from(["length", "length", "none", "chunked", "wrong"]))
    if framing == "length":
        frame = b"Content-Length: %d\r\n" % len(body)
    elif framing == "chunked":
        frame = b"Transfer-Encoding: chunked\r\n"
        body = (b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)) if body else b"0\r\n\r\n"
    elif framing == "wrong":
        frame = b"Content-Length: %d\r\n" % (len(body) + draw(st.integers(-3, 3)))
    else:
        frame, body = b"", b""
    head = method + b" " + target + b" " + version + draw(_line_ends)
    return head + host + frame + draw(_header_block()) + draw(_line_ends) + body


_clean_names = st.sampled_from(
    [b"Content-Type", b"accept", b"mcp-session-id", b"Connection", b"X-Thing", b"x-a"]
)
_clean_values = st.sampled_from(
    [
        b"application/json",
        b"a, b",
        b"close",
        b"keep-alive",
        b"Keep-Alive, Close",
        b"",
        b"  padded  ",
        b"caf\xe9",
        b"tab\there",
        b"0123456789abcdef",
    ]
)


@st.composite
def _clean_messages(draw: st.DrawFn, first_line: bytes, body_ok: bool = True) -> bytes:
    """Well-formed messages with a Content-Length: the fast path's own ground."""
    body = draw(st.binary(max_size=20)) if body_ok else b""
    lines = [first_line]
    if first_line.startswith((b"POST", b"GET", b"DELETE", b"PUT")):
        lines.append(b"Host: 127.0.0.1:8000\r\n")
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        separator = draw(st.sampled_from([b": ", b":", b":\t"]))
        lines.append(draw(_clean_names) + separator + draw(_clean_values) + b"\r\n")
    lines.insert(draw(st.integers(1, len(lines))), b"Content-Length: %d\r\n" % len(body))
    return b"".join(lines) + b"\r\n" + body


_clean_requests = st.sampled_from(
    [b"POST /mcp HTTP/1.1\r\n", b"GET /mcp HTTP/1.1\r\n", b"DELETE /mcp?x=1 HTTP/1.1\r\n"]
).flatmap(_clean_messages)

_request_streams = st.one_of(
    st.lists(_clean_requests, min_size=1, max_size=3).map(b"".join),
    st.lists(st.one_of(_clean_requests, _requests()), min_size=1, max_size=3).map(b"".join),
    st.lists(_requests(), min_size=1, max_size=3).map(b"".join),
    st.tuples(_requests(), st.binary(max_size=30)).map(lambda t: t[0] + t[1]),
    st.binary(max_size=120),
)

# How the server answers each request it reads.
_answers = st.sampled_from(["json", "stream", "close", "empty-202", "keep-alive"])


def _respond(conn: HTTPServerConnection, answer: str) -> bytes:
    if answer == "json":
        return conn.send_response(200, {"content-type": "application/json"}, b'{"ok":1}')
    if answer == "close":
        return conn.send_response(400, [("content-type", "text/plain"), ("connection", "close")])
    if answer == "empty-202":
        return conn.send_response(202, {})
    if answer == "keep-alive":
        return conn.send_response(200, [("Connection", "keep-alive, x-other")], b"x")
    out = conn.send_head(200, {"content-type": "text/event-stream", "cache-control": "no-cache"})
    return out + conn.send_body(b"data: 1\n\n") + conn.send_body(b"") + conn.end()


def _drive_server(
    conn: HTTPServerConnection, chunks: list[bytes], answers: list[str], eof: bool
) -> list[Any]:
    """What the adapters do: read requests, answer each, reuse while allowed."""
    seen: list[Any] = []
    answer = iter(answers * 4)
    for chunk in [*chunks, *([b""] if eof else [])]:
        conn.receive_data(chunk)
        while True:
            event = conn.next_request()
            if event is NEED_DATA:
                break
            seen.append(event)
            if isinstance(event, HTTPError):
                seen.append(conn.send_error_response(event.status, event.reason))
                return seen
            if isinstance(event, ConnectionEnded):
                return seen
            assert isinstance(event, HTTPRequest)
            try:
                seen.append(_respond(conn, next(answer)))
            except h11.LocalProtocolError as exc:
                seen.append(("refused", str(exc)))
                return seen
            reusable = conn.start_next()
            seen.append(("reuse", reusable))
            if not reusable:
                return seen
    return seen


def _h11_server() -> HTTPServerConnection:
    return HTTPServerConnection(max_body=MAX_BODY, max_headers=MAX_HEADERS, fast_path=False)


@_DIFFERENTIAL
@given(
    stream=_request_streams,
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=4),
    answers=st.lists(_answers, min_size=1, max_size=3),
    eof=st.booleans(),
)
@example(
    stream=b"POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    cuts=[],
    answers=["keep-alive"],
    eof=False,
)
@example(
    stream=b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
    cuts=[],
    answers=["json"],
    eof=True,
)
@example(stream=b"HEAD /mcp HTTP/1.1\r\nHost: x\r\n\r\n", cuts=[], answers=["json"], eof=True)
@example(
    stream=b"POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab",
    cuts=[5],
    answers=["stream"],
    eof=False,
)
@example(
    stream=b"POST /mcp HTTP/1.1\nHost: x\nContent-Length: 2\n\nab",
    cuts=[],
    answers=["json"],
    eof=True,
)
@example(
    stream=b"GET /mcp HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n",
    cuts=[],
    answers=["json"],
    eof=False,
)
@example(
    stream=b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\nGET /mcp HTTP/1.1\r\nHost: y\r\n\r\n",
    cuts=[7, 40],
    answers=["stream", "close"],
    eof=True,
)
@example(
    stream=b"GET /mcp HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 3000 + b"\r\n\r\n",
    cuts=[1000],
    answers=["json"],
    eof=False,
)
@example(
    stream=b"GET /mcp HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 3000,
    cuts=[],
    answers=["json"],
    eof=False,
)
@example(
    stream=b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n",
    cuts=[],
    answers=["json"],
    eof=False,
)
def test_server_side_matches_h11(
    stream: bytes, cuts: list[int], answers: list[str], eof: bool
) -> None:
    chunks = split_at(stream, cuts)
    fast = _drive_server(
        HTTPServerConnection(max_body=MAX_BODY, max_headers=MAX_HEADERS), chunks, answers, eof
    )
    reference = _drive_server(_h11_server(), chunks, answers, eof)
    assert fast == reference


def test_the_common_request_takes_the_fast_path() -> None:
    """(Otherwise the differential test above would compare h11 with itself.)"""
    conn = HTTPServerConnection()
    conn.receive_data(
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    request = conn.next_request()
    assert isinstance(request, HTTPRequest) and request.body == b"{}"
    assert conn.send_response(200, {"content-type": "application/json"}, b"{}").startswith(
        b"HTTP/1.1 200 \r\n"
    )
    assert conn.start_next() and conn._h11 is None
    client = HTTPClientConnection("x")
    client.send_request("POST", "/mcp", {"content-type": "application/json"}, b"{}")
    client.receive_data(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
    assert isinstance(client.next_event(), HTTPResponseHead)
    assert client.next_event() == b"{}" and client.next_event() is None
    assert client.start_next() and client._h11 is None


def test_the_fast_path_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per connection (``fast_path=False``), or for every connection made after
    ``USE_FAST_PATH`` is set to False; a pool passes its choice on."""
    import sansio_mcp._http as http
    from sansio_mcp._http_pool import ConnectionPool

    assert HTTPServerConnection(fast_path=False)._h11 is not None
    assert HTTPClientConnection("x", fast_path=False)._h11 is not None
    assert ConnectionPool[object](fast_path=False).opened("o", "x", object()).http._h11
    monkeypatch.setattr(http, "USE_FAST_PATH", False)
    assert HTTPServerConnection()._h11 is not None
    assert HTTPClientConnection("x")._h11 is not None
    assert HTTPServerConnection(fast_path=True)._h11 is None


# The client side -------------------------------------------------------------------------


@st.composite
def _responses(draw: st.DrawFn) -> bytes:
    status = draw(st.sampled_from([b"200", b"202", b"204", b"304", b"404", b"100", b"2x0"]))
    reason = draw(st.sampled_from([b" OK", b" ", b"", b" Not Found", b" caf\xe9"]))
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.0"]))
    body = draw(st.binary(max_size=20))
    framing = draw(st.sampled_from(["length", "length", "chunked", "none", "wrong"]))
    if framing == "length":
        frame = b"content-length: %d\r\n" % len(body)
    elif framing == "chunked":
        frame = b"transfer-encoding: chunked\r\n"
        ext = draw(st.sampled_from([b"", b";name=value", b" "]))
        trailer = draw(st.sampled_from([b"", b"X-Trailer: 1\r\n"]))
        data = b"%x%s\r\n%s\r\n" % (len(body), ext, body) if body else b""
        body = data + b"0\r\n" + trailer + b"\r\n"
    elif framing == "wrong":
        frame = b"content-length: %d\r\n" % (len(body) + draw(st.integers(-3, 3)))
    else:
        frame = b""
    head = version + b" " + status + reason + draw(_line_ends)
    return head + frame + draw(_header_block()) + draw(_line_ends) + body


_clean_responses = st.sampled_from(
    [b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 202 \r\n", b"HTTP/1.1 404 Not Found\r\n"]
).flatmap(_clean_messages)


def _drive_client(
    conn: HTTPClientConnection, chunks: list[bytes], eof: bool, rounds: int
) -> list[Any]:
    seen: list[Any] = []
    pending = [*chunks, *([b""] if eof else [])]
    for _ in range(rounds):
        try:
            seen.append(conn.send_request("POST", "/mcp", {"accept": "application/json"}, b"{}"))
        except h11.LocalProtocolError as exc:
            seen.append(("refused", str(exc)))
            return seen
        body = b""
        while pending:
            conn.receive_data(pending.pop(0))
            while True:
                event = conn.next_event()
                if event is NEED_DATA:
                    break
                if isinstance(event, bytes):
                    body += event  # how a body is cut into pieces may differ
                    continue
                seen.append(body)
                body = b""
                seen.append(event)
                if not isinstance(event, HTTPResponseHead):
                    break
            if seen and (seen[-1] is None or isinstance(seen[-1], (HTTPError, ConnectionEnded))):
                break
        seen.append(body)
        reusable = conn.start_next()
        seen.append(("reuse", reusable))
        if not reusable:
            break
    return seen


def _h11_client() -> HTTPClientConnection:
    return HTTPClientConnection("127.0.0.1:8000", max_headers=MAX_HEADERS, fast_path=False)


@_DIFFERENTIAL
@given(
    stream=st.one_of(
        st.lists(_clean_responses, min_size=1, max_size=2).map(b"".join),
        st.lists(st.one_of(_clean_responses, _responses()), min_size=1, max_size=2).map(b"".join),
        st.binary(max_size=80),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=4),
    eof=st.booleans(),
)
@example(
    stream=b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
    cuts=[],
    eof=False,
)
@example(
    stream=b"HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\nHTTP/1.1 200 \r\n",
    cuts=[],
    eof=True,
)
@example(
    stream=b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2;x=y\r\nab\r\n0\r\nT: 1\r\n\r\n",
    cuts=[30, 44],
    eof=False,
)
@example(
    stream=b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\nx", cuts=[], eof=False
)
@example(stream=b"HTTP/1.0 200 OK\r\n\r\nuntil the end", cuts=[], eof=True)
@example(stream=b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nshort", cuts=[], eof=True)
@example(stream=b"", cuts=[], eof=True)
def test_client_side_matches_h11(stream: bytes, cuts: list[int], eof: bool) -> None:
    chunks = split_at(stream, cuts)
    fast = _drive_client(
        HTTPClientConnection("127.0.0.1:8000", max_headers=MAX_HEADERS), chunks, eof, 2
    )
    assert fast == _drive_client(_h11_client(), chunks, eof, 2)


@pytest.mark.parametrize(
    "headers",
    [
        {"accept": "application/json"},
        {"x-custom": "caf\xe9"},
        {"x-bad": "line\r\nbreak"},
        {"bad name": "x"},
        {"connection": "close"},
        {"content-length": "5"},
        {"host": "other"},
        {"x-trailing": "space "},
        {"transfer-encoding": "chunked"},
        {"expect": "100-continue"},
        {"x-control": "a\x01b"},  # (h11 allows control characters but NUL)
        {"x-nul": "a\x00b"},
        {"content-length": "07"},  # the same length, other digits: conflicting to h11
    ],
)
def test_requests_are_written_as_h11_writes_them(headers: dict[str, str]) -> None:
    def written(conn: HTTPClientConnection) -> Any:
        try:
            return conn.send_request("POST", "/mcp?x=1", headers, b'{"a":1}')
        except h11.LocalProtocolError as exc:
            return ("refused", type(exc))

    assert written(HTTPClientConnection("h:1")) == written(_h11_client_for("h:1"))


def _h11_client_for(host: str) -> HTTPClientConnection:
    return HTTPClientConnection(host, fast_path=False)


# Work per message, and the state after a misuse ---------------------------------------------


def test_a_head_is_parsed_once_however_its_body_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large head with a body arriving in small pieces must not be parsed again
    for every piece (that made one slow client cost the server seconds of CPU)."""
    import sansio_mcp._http_fast as fast_path

    parsed = []
    original = fast_path._parse_fields
    monkeypatch.setattr(
        fast_path, "_parse_fields", lambda *args: parsed.append(1) or original(*args)
    )
    lines = b"".join(b"x-%d: v\r\n" % n for n in range(2000))
    body = b"b" * 20_000
    head = b"POST /mcp HTTP/1.1\r\nHost: x\r\n" + lines + b"Content-Length: %d\r\n\r\n" % len(body)
    conn = HTTPServerConnection(max_body=len(body), max_headers=len(head) + 1)
    conn.receive_data(head)
    assert conn.next_request() is NEED_DATA
    for start in range(0, len(body), 100):
        conn.receive_data(body[start : start + 100])
        event = conn.next_request()
    assert isinstance(event, HTTPRequest) and event.body == body
    assert len(parsed) == 1


def test_a_repeated_head_is_matched_once_and_each_request_gets_its_own_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client repeats its head on every request: the second time it is taken from
    the memo, not matched again, with the same headers in a dict of its own (one
    request's handler changing its headers changes no other request's)."""
    import sansio_mcp._http_fast as fast_path

    monkeypatch.setattr(fast_path, "_HEAD_MEMO", {})
    matched = []
    original = fast_path._parse_text
    monkeypatch.setattr(fast_path, "_parse_text", lambda text: matched.append(1) or original(text))
    message = (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nMcp-Session-Id: abc\r\n"
        b"Connection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"
    )
    conn = HTTPServerConnection()
    requests = []
    for _ in range(3):
        conn.receive_data(message)
        request = conn.next_request()
        assert isinstance(request, HTTPRequest) and request.body == b"{}"
        requests.append(request)
        request.headers["x-changed"] = "by the handler"
        conn.send_response(200, {}, b"ok")
        assert conn.start_next()
    assert len(matched) == 1
    fresh = HTTPServerConnection(fast_path=False)
    fresh.receive_data(message)
    expected = fresh.next_request()
    assert isinstance(expected, HTTPRequest)
    for request in requests:
        assert {k: v for k, v in request.headers.items() if k != "x-changed"} == expected.headers
    assert len({id(request.headers) for request in requests}) == 3


def test_the_head_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct heads (a session id each) only make misses: the memo is emptied when
    full, and a head over HEAD_MEMO_TEXT_MAX is never kept; every request is still
    read as h11 reads it."""
    import sansio_mcp._http_fast as fast_path

    memo: dict[str, Any] = {}
    monkeypatch.setattr(fast_path, "_HEAD_MEMO", memo)
    monkeypatch.setattr(fast_path, "HEAD_MEMO_MAX", 4)
    for n in range(10):
        conn = HTTPServerConnection()
        conn.receive_data(b"GET /mcp HTTP/1.1\r\nHost: x\r\nMcp-Session-Id: s%d\r\n\r\n" % n)
        request = conn.next_request()
        assert isinstance(request, HTTPRequest)
        assert request.headers["mcp-session-id"] == f"s{n}"
        assert len(memo) <= 4
    memo.clear()
    long_value = b"v" * fast_path.HEAD_MEMO_TEXT_MAX
    conn = HTTPServerConnection(max_headers=1 << 16)
    conn.receive_data(b"GET /mcp HTTP/1.1\r\nHost: x\r\nX-Long: %s\r\n\r\n" % long_value)
    request = conn.next_request()
    assert isinstance(request, HTTPRequest) and request.headers["x-long"] == long_value.decode()
    assert memo == {}


@pytest.mark.parametrize("side", ["server", "client"])
def test_a_head_arriving_byte_by_byte_is_searched_in_linear_time(
    side: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sansio_mcp._http_fast as fast_path

    scanned = [0]
    original = fast_path._head_end

    def counting(buf: bytearray, max_headers: int, searched: int) -> Any:
        scanned[0] += len(buf) - searched
        return original(buf, max_headers, searched)

    monkeypatch.setattr(fast_path, "_head_end", counting)
    lines = b"".join(b"x-%d: v\r\n" % n for n in range(1000))
    conn: HTTPServerConnection | HTTPClientConnection
    if side == "server":
        conn = HTTPServerConnection(max_headers=1 << 20)
        message = b"GET /mcp HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n"
        step = conn.next_request
    else:
        client = HTTPClientConnection("x", max_headers=1 << 20)
        client.send_request("GET", "/mcp", {})
        conn, step = client, client.next_event
        message = b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 0\r\n\r\n"
    for byte in range(len(message)):
        conn.receive_data(message[byte : byte + 1])
        event = step()
    assert isinstance(event, HTTPRequest | HTTPResponseHead)
    assert scanned[0] <= 2 * len(message)


def test_a_response_broken_by_its_sender_stays_broken() -> None:
    """After a send that breaks the protocol nothing more can be sent and the
    connection is not reused, on the fast path as in h11 (its ERROR state)."""
    for conn in (HTTPServerConnection(), _h11_server()):
        conn.receive_data(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
        assert isinstance(conn.next_request(), HTTPRequest)
        conn.send_head(200, {"content-length": "2"})
        with pytest.raises(h11.LocalProtocolError):
            conn.send_body(b"abc")
        with pytest.raises(h11.LocalProtocolError):
            conn.send_body(b"ab")
            conn.end()
        assert not conn.can_reuse and not conn.start_next()


def test_a_connection_is_not_reused_once_closed_or_ended() -> None:
    for conn in (HTTPServerConnection(), _h11_server()):
        conn.receive_data(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
        assert isinstance(conn.next_request(), HTTPRequest)
        conn.send_response(200, {}, b"ok")
        conn.receive_data(b"")  # the client is gone
        assert isinstance(conn.next_request(), ConnectionEnded) or not conn.can_reuse
        assert not conn.start_next()
    for conn in (HTTPServerConnection(), _h11_server()):
        conn.receive_data(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
        assert isinstance(conn.next_request(), HTTPRequest)
        conn.send_response(200, {}, b"ok")
        conn.close()
        assert not conn.can_reuse
    for client in (HTTPClientConnection("x"), _h11_client()):
        client.send_request("GET", "/mcp", {})
        client.receive_data(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        assert isinstance(client.next_event(), HTTPResponseHead)
        assert client.next_event() is None
        client.receive_data(b"")  # the server closed the idle connection
        assert isinstance(client.next_event(), ConnectionEnded)
        assert not client.can_reuse


# Chunked responses (what Node/Express servers send) --------------------------------------


_extensions = st.sampled_from([b"", b"", b";a=b", b";x", b" ", b"\t ", b';q="a b"', b"; y=1 \t"])
_trailers = st.sampled_from(
    [
        b"",
        b"",
        b"X-T: 1\r\n",
        b"X-T: 1\r\nY: two words \r\n",
        b"X: a\r\n b\r\n",
        b"X: 1\n",
        b"X: ctl\x01\r\n",
        b"Content-Length: 5\r\n",
        b"Content-Length: 5\r\nContent-Length: 05\r\n",
        b"Content-Length: x\r\n",
        b"Transfer-Encoding: gzip\r\n",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        b" starts folded\r\n",
        b"Bad Name: 1\r\n",
        b"X: bare\rcr\r\n",
    ]
)


@st.composite
def _chunked_messages(draw: st.DrawFn, first_lines: list[bytes]) -> bytes:
    """Chunked messages, well formed (sizes in either case, with leading zeros,
    extensions, trailers) but for what the trailer section may hold."""
    lines = [draw(st.sampled_from(first_lines))]
    if lines[0].startswith(b"POST"):
        lines.append(b"Host: 127.0.0.1:8000\r\n")
    for _ in range(draw(st.integers(0, 2))):
        lines.append(draw(_clean_names) + b": " + draw(_clean_values) + b"\r\n")
    coding = draw(st.sampled_from([b"chunked", b"chunked", b"Chunked", b"CHUNKED"]))
    lines.insert(draw(st.integers(1, len(lines))), b"Transfer-Encoding: " + coding + b"\r\n")
    body = []
    for data in draw(st.lists(st.binary(min_size=1, max_size=40), max_size=4)):
        size = b"0" * draw(st.integers(0, 2)) + b"%x" % len(data)
        size = size.upper() if draw(st.booleans()) else size
        body.append(size + draw(_extensions) + b"\r\n" + data + b"\r\n")
    last = b"0" * draw(st.integers(1, 3)) + draw(_extensions) + b"\r\n"
    end = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n"]))
    return b"".join(lines) + b"\r\n" + b"".join(body) + last + draw(_trailers) + end


_chunked_responses = _chunked_messages(
    [b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 202 Accepted\r\n", b"HTTP/1.1 404 \r\n"]
)
_chunked_requests = _chunked_messages([b"POST /mcp HTTP/1.1\r\n", b"POST /mcp?x=1 HTTP/1.1\r\n"])


@st.composite
def _damaged(draw: st.DrawFn, stream: bytes) -> bytes:
    """``stream`` cut short, or with bytes replaced or inserted somewhere."""
    at = draw(st.integers(0, len(stream)))
    how = draw(st.sampled_from(["cut", "replace", "insert"]))
    if how == "cut":
        return stream[:at]
    junk = draw(st.sampled_from([b"x", b"\r", b"\n", b"\r\n", b"g", b";", b" ", b"0", b"\x00"]))
    return stream[:at] + junk + stream[at + (len(junk) if how == "replace" else 0) :]


def _byte_by_byte(stream: bytes) -> list[bytes]:
    return [stream[i : i + 1] for i in range(len(stream))]


@st.composite
def _arrivals(draw: st.DrawFn, messages: st.SearchStrategy[bytes]) -> tuple[list[bytes], bool]:
    """How one or two ``messages`` arrive, whole or damaged (and whether they were):
    cut anywhere, or byte by byte."""
    stream = draw(st.lists(messages, min_size=1, max_size=2).map(b"".join))
    damaged = draw(st.booleans())
    if damaged:
        stream = draw(_damaged(stream))
    if draw(st.booleans()):
        return _byte_by_byte(stream), damaged
    return split_at(stream, draw(st.lists(st.integers(0, 400), max_size=6))), damaged


_CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"


@_DIFFERENTIAL
@given(arrival=_arrivals(_chunked_responses), eof=st.booleans())
@example(
    arrival=(split_at(_CHUNKED_HEAD + b"5;" + b"x" * 3000 + b"\r\n", [1000]), False), eof=False
)
@example(arrival=([_CHUNKED_HEAD + b"0\r\nX: " + b"a" * 3000], False), eof=True)
def test_chunked_responses_match_h11(arrival: tuple[list[bytes], bool], eof: bool) -> None:
    """Same status, headers, body bytes, end (or error, at the same point) and reuse
    as h11, however the bytes arrive; well formed, the connection stays fast."""
    chunks, damaged = arrival
    conn = HTTPClientConnection("127.0.0.1:8000", max_headers=MAX_HEADERS)
    fast = _drive_client(conn, chunks, eof, 2)
    assert fast == _drive_client(_h11_client(), chunks, eof, 2)
    if not damaged and not eof:  # (an end where a head is due goes to h11, chunked or not)
        assert conn._h11 is None


# A notification's 202 and a tools/call answer from server-everything (Express), verbatim
# but for the session id and the date.
_EXPRESS_202 = (
    b"HTTP/1.1 202 Accepted\r\nX-Powered-By: Express\r\nmcp-session-id: 9c32\r\n"
    b"Date: Tue, 01 Dec 2026 22:00:00 GMT\r\nConnection: keep-alive\r\n"
    b"Keep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
)
_EVENT = b'event: message\nid: c922\ndata: {"result":{"content":[]},"jsonrpc":"2.0","id":2}\n\n'
_EXPRESS_200 = (
    b"HTTP/1.1 200 OK\r\nX-Powered-By: Express\r\ncontent-type: text/event-stream\r\n"
    b"cache-control: no-cache\r\nmcp-session-id: 9c32\r\nDate: Tue, 01 Dec 2026 22:00:00 GMT\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(_EVENT), _EVENT)
)
_BROKEN_CHUNKED = [
    b"zz\r\n",  # a size that is not hex
    b"-5\r\n",
    b"5\r\nhelloXX",  # no CRLF after the data
    b"5\r\nhello\rX",
    b"5\r\nhello\n\r\n",
    b"1" * 21 + b"\r\n",  # more digits than h11 takes
    b"5;" + b"x" * 3000,  # a size line over the limit, still incomplete
    b"0\r\nX: " + b"a" * 3000,  # a trailer section over the limit, still incomplete
    b"0\r\n continuation\r\n\r\n",
    b"0\r\nBad Name: 1\r\n\r\n",
    b"0\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"0\r\nTransfer-Encoding: gzip\r\n\r\n",
]


@pytest.mark.parametrize("response", [_EXPRESS_202, _EXPRESS_200])
def test_a_real_chunked_response_split_anywhere_matches_h11(response: bytes) -> None:
    """Every single split point, and byte by byte: same events as h11, and the
    connection stays on the fast path and is reused."""
    splits = [[response[:at], response[at:]] for at in range(len(response) + 1)]
    for chunks in [*splits, _byte_by_byte(response)]:
        chunks = [c for c in chunks if c]
        conn = HTTPClientConnection("127.0.0.1:8000", max_headers=MAX_HEADERS)
        fast = _drive_client(conn, chunks, False, 1)
        assert fast == _drive_client(_h11_client(), chunks, False, 1)
        assert fast[-1] == ("reuse", True) and conn._h11 is None


@pytest.mark.parametrize("body", _BROKEN_CHUNKED)
@pytest.mark.parametrize("split", ["whole", "byte by byte"])
def test_a_broken_chunked_body_fails_as_in_h11(body: bytes, split: str) -> None:
    """A 502 with h11's own message, at the same point, and the connection is not
    reused; the fast path does not hand such a body to h11."""
    stream = _EXPRESS_200.split(b"\r\n\r\n")[0] + b"\r\n\r\n" + body
    chunks = [stream] if split == "whole" else _byte_by_byte(stream)
    conn = HTTPClientConnection("127.0.0.1:8000", max_headers=MAX_HEADERS)
    fast = _drive_client(conn, chunks, True, 2)
    assert fast == _drive_client(_h11_client(), chunks, True, 2)
    error = fast[-3]
    assert isinstance(error, HTTPError) and error.status == 502, fast
    assert error.reason.startswith("malformed HTTP response: ")
    assert fast[-1] == ("reuse", False) and conn._h11 is None
    assert conn.next_event() == HTTPError(
        502, "malformed HTTP response: Can't receive data when peer state is ERROR"
    )


def test_a_chunked_stream_is_delivered_chunk_by_chunk() -> None:
    """A GET stream that stays open: each chunk's data comes out as it arrives (a
    chunk cut in two, in two pieces), not at the end."""
    conn = HTTPClientConnection("x")
    conn.send_request("GET", "/mcp", {"accept": "text/event-stream"})
    conn.receive_data(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"Transfer-Encoding: chunked\r\n\r\n")
    assert isinstance(conn.next_event(), HTTPResponseHead)
    assert conn.next_event() is NEED_DATA
    for n in range(20):
        event = b"event: message\ndata: %d\n\n" % n
        conn.receive_data(b"%x\r\n%s" % (len(event), event[:5]))
        assert conn.next_event() == event[:5]
        assert conn.next_event() is NEED_DATA
        conn.receive_data(event[5:] + b"\r\n")
        assert conn.next_event() == event[5:]
        assert conn.next_event() is NEED_DATA
    conn.receive_data(b"0\r\n\r\n")
    assert conn.next_event() is None
    assert conn.start_next() and conn._h11 is None


def test_chunked_responses_keep_the_connection_alive() -> None:
    """The exchanges of an Express session: each answer chunked, the connection reused
    on the fast path throughout, until an answer says Connection: close."""
    conn = HTTPClientConnection("x")
    close = _EXPRESS_200.replace(b"Transfer-Encoding", b"Connection: close\r\nTransfer-Encoding")
    for response, reusable in [
        (_EXPRESS_200, True),
        (_EXPRESS_202, True),
        (_EXPRESS_200, True),
        (close, False),
    ]:
        conn.send_request("POST", "/mcp", {"accept": "application/json"}, b"{}")
        conn.receive_data(response)
        events = [conn.next_event() for _ in range(2 if response == _EXPRESS_202 else 3)]
        assert isinstance(events[0], HTTPResponseHead) and events[-1] is None
        assert b"".join(e for e in events if isinstance(e, bytes)) == (
            b"" if response == _EXPRESS_202 else _EVENT
        )
        assert conn.start_next() is reusable and conn._h11 is None


def test_only_plain_chunked_framing_stays_fast() -> None:
    """Another coding, two Transfer-Encoding headers, or one with a Content-Length:
    h11 takes over (and decides), on either side."""
    for extra in [
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
    ]:
        conn = HTTPClientConnection("x")
        conn.send_request("GET", "/mcp", {})
        conn.receive_data(b"HTTP/1.1 200 OK\r\n" + extra + b"\r\n3\r\nabc\r\n0\r\n\r\n")
        conn.next_event()
        assert conn._h11 is not None
        server = HTTPServerConnection()
        server.receive_data(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n2\r\n{}\r\n0\r\n\r\n"
        )
        server.next_request()
        assert server._h11 is not None
    server = HTTPServerConnection()
    server.receive_data(b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert server.next_request() is NEED_DATA
    server.receive_data(b"2\r\n{}\r\n0\r\n\r\n")
    request = server.next_request()
    assert isinstance(request, HTTPRequest) and request.body == b"{}"
    assert server._h11 is None


@pytest.mark.interop
async def test_a_session_with_server_everything_stays_on_the_fast_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """server-everything (TS SDK, Express) answers every POST after initialize with a
    chunked body: no connection of the session is handed to h11, and the calls share
    a kept-alive connection."""
    from trio_adapters.http_client import open_http_client

    from .helpers import texts
    from .test_http_interop import BUDGET, server_everything

    handed_over: list[HTTPClientConnection] = []
    fall_back = HTTPClientConnection._fall_back
    opened: list[object] = []
    pool_opened = ConnectionPool.opened

    def recording_fall_back(conn: HTTPClientConnection) -> None:
        handed_over.append(conn)
        fall_back(conn)

    def recording_opened(pool: ConnectionPool[Any], *args: Any) -> Any:
        opened.append(args)
        return pool_opened(pool, *args)

    monkeypatch.setattr(HTTPClientConnection, "_fall_back", recording_fall_back)
    monkeypatch.setattr(ConnectionPool, "opened", recording_opened)
    with server_everything("streamableHttp", tmp_path) as port, trio.fail_after(BUDGET):
        async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
            assert "echo" in {t["name"] for t in await client.list_tools()}
            for n in range(100):
                echoed = await client.call_tool("echo", {"message": f"hi {n}"})
                assert texts(echoed) == f"Echo: hi {n}"
    assert handed_over == []
    assert 1 <= len(opened) <= 3  # one for the calls (and any stream), not one a call


def test_a_chunk_size_line_costs_linear_time() -> None:
    """h11's pattern for a size line backtracks quadratically ("5;", blanks, a bare
    LF: seconds for 60,000 tabs); the fast path's, the same language, does not.  A
    short one is refused as h11 refuses it."""
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    short = head + b"5;" + b"\t" * 500 + b"\n\r\n"
    assert _drive_client(HTTPClientConnection("127.0.0.1:8000"), [short], False, 1) == (
        _drive_client(_h11_client(), [short], False, 1)
    )
    conn = HTTPClientConnection("x")
    conn.send_request("GET", "/mcp", {})
    conn.receive_data(head + b"5;" + b"\t" * 60_000 + b"\n\r\n")
    assert isinstance(conn.next_event(), HTTPResponseHead)
    started = time.process_time()
    error = conn.next_event()
    assert isinstance(error, HTTPError) and "illegal chunk header" in error.reason
    assert time.process_time() - started < 0.5  # (h11's pattern: 5 s or more here)


@pytest.mark.parametrize("fast_path", [True, False])
def test_h11_reads_a_chunk_size_line_in_linear_time_too(fast_path: bool) -> None:
    """A client must not make a server spend seconds on one line, on the fast path or
    on h11 (after a hand-over, or with the fast path off: our h11 connections read
    size lines with the fast path's pattern)."""
    conn = HTTPServerConnection(fast_path=fast_path)
    conn.receive_data(b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    conn.receive_data(b"5;" + b"\t" * 60_000 + b"\n\r\n")
    started = time.process_time()
    error = conn.next_request()
    assert time.process_time() - started < 0.5
    assert isinstance(error, HTTPError) and error.status == 400
    assert error.reason.startswith("illegal chunk header: bytearray(b'5;\\t")
    conn = HTTPServerConnection(fast_path=fast_path)
    conn.receive_data(
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;x=y \r\nhello\r\n0\r\n\r\n"
    )
    request = conn.next_request()
    assert isinstance(request, HTTPRequest) and request.body == b"hello"


_CHUNKED_POST = b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


@_DIFFERENTIAL
@given(
    arrival=_arrivals(_chunked_requests),
    answers=st.lists(_answers, min_size=1, max_size=2),
    eof=st.booleans(),
)
@example(
    arrival=(
        split_at(
            _CHUNKED_POST + (b"bb8\r\n" + b"a" * 3000 + b"\r\n") * 2 + b"0\r\n\r\n",
            [100, 2000, 3100, 5000],
        ),
        False,
    ),
    answers=["json"],
    eof=False,
)
@example(
    arrival=(split_at(_CHUNKED_POST + b"5;" + b"x" * 3000, [1000]), False),
    answers=["json"],
    eof=False,
)
def test_chunked_requests_match_h11(
    arrival: tuple[list[bytes], bool], answers: list[str], eof: bool
) -> None:
    """The server side: same requests (or errors, with h11's status and message, at
    the same point; a body over the limit a 413 at the piece that crosses it), same
    responses and reuse as h11; well formed, the connection stays fast."""
    chunks, damaged = arrival
    conn = HTTPServerConnection(max_body=MAX_BODY, max_headers=MAX_HEADERS)
    fast = _drive_server(conn, chunks, answers, eof)
    assert fast == _drive_server(_h11_server(), chunks, answers, eof)
    if not damaged:
        assert conn._h11 is None


def test_a_broken_chunked_request_ends_the_reading() -> None:
    """Once a chunked request is refused as malformed nothing more is read from the
    connection, on the fast path as in h11 (its ERROR state), the answer sent or not."""
    for conn in (HTTPServerConnection(), _h11_server()):
        conn.receive_data(_CHUNKED_POST + b"zz\r\n")
        error = conn.next_request()
        assert isinstance(error, HTTPError) and error.status == 400
        assert conn.send_error_response(error.status, error.reason).startswith(b"HTTP/1.1 400")
        conn.receive_data(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        assert conn.next_request() == HTTPError(400, "Can't receive data when peer state is ERROR")
        assert not conn.start_next()


def test_importing_our_packages_leaves_h11_as_it_was() -> None:
    """Our linear size-line pattern is ours alone: every attribute of every h11 module
    is the same object after importing every package of ours (and using an h11
    connection of ours) as before."""
    script = """
import sys, h11, importlib, pkgutil
names = ["h11"] + ["h11." + m.name for m in pkgutil.iter_modules(h11.__path__)]
modules = [importlib.import_module(name) for name in names]
before = {m.__name__: dict(vars(m)) for m in modules}
import sansio_mcp, sansio_mcp.runtime, trio_adapters, asyncio_adapters, sansio_mcp_cli
import sansio_mcp._http_fast, sansio_mcp_apps.gateway.runtime, sansio_mcp_apps.a2a.runtime
from sansio_mcp._http import HTTPServerConnection
conn = HTTPServerConnection(fast_path=False)
conn.receive_data(b"POST / HTTP/1.1\\r\\nHost: x\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n")
conn.receive_data(b"1\\r\\na\\r\\n0\\r\\n\\r\\n")
assert conn.next_request().body == b"a"
changed = [
    f"{name}.{attr}"
    for name, attrs in before.items()
    for attr in set(attrs) | set(vars(sys.modules[name]))
    if attrs.get(attr, before) is not vars(sys.modules[name]).get(attr, before)
]
print(changed)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


_RESPONSE_HEADER_NAMES = st.sampled_from(
    [
        "content-type",
        "Mcp-Session-Id",
        "x-custom",
        "bad name",
        "caf\xe9",
        "connection",
        "Content-Length",
        "host",
        "transfer-encoding",
        "upgrade",
        "expect",
    ]
)
_RESPONSE_HEADER_VALUES = st.one_of(
    st.sampled_from(
        ["application/json", "close", "keep-alive", "chunked", "5", "07", "x, y", "caf\xe9"]
    ),
    st.text(st.sampled_from("ab \t\r\n\x00\x01,\xe9\u20ac"), max_size=6),
)


@_DIFFERENTIAL
@given(
    status=st.sampled_from([200, 202, 204, 304, 404, 100, 1000]),
    headers=st.dictionaries(_RESPONSE_HEADER_NAMES, _RESPONSE_HEADER_VALUES, max_size=4),
    body=st.sampled_from([b"", b"{}", b'{"jsonrpc":"2.0"}']),
    close=st.booleans(),
)
@example(status=200, headers={"x-custom": "a\r\nb"}, body=b"{}", close=False)
@example(status=200, headers={"content-type": "text/plain"}, body=b"x", close=True)
def test_whole_responses_are_written_as_h11_writes_them(
    status: int, headers: dict[str, str], body: bytes, close: bool
) -> None:
    """A whole response whose header lines were checked before (remembered) is written,
    or refused, exactly as h11 writes or refuses it, the connection left alike."""
    request = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
    request += b"Connection: close\r\n\r\n" if close else b"\r\n"

    def written(conn: HTTPServerConnection) -> Any:
        conn.receive_data(request)
        assert isinstance(conn.next_request(), HTTPRequest)
        try:
            out: Any = conn.send_response(status, headers, body)
        except (h11.LocalProtocolError, UnicodeEncodeError) as exc:
            out = ("refused", type(exc))
        return out, conn.can_reuse

    for _ in range(2):  # the second time, from what the first remembered
        assert written(HTTPServerConnection()) == written(_h11_server())
