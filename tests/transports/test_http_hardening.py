"""Streamable HTTP refuses at once what has nowhere to go: a batch on a revision without
batches, and a "request" whose id no request may have (issue 17, points 5 and 6).

Checked on the pure machine, then black-box against ``sansio-mcp example-server`` on
both backends with plain ``http.client``.
"""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp_cli.example_server import build_server

from .helpers import INITIALIZED, POST_HEADERS, initialize, open_machine_session, post_request
from .test_cli_transports import example_server

BAD_IDS = [{"a": 1}, [1], True, 1.5, None]


def _machine() -> StreamableHTTPServer:
    return StreamableHTTPServer(build_server().create_session)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_a_batch_on_a_revision_without_batches_is_400(version: str) -> None:
    machine = _machine()
    headers = open_machine_session(machine, version)
    batch = [
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 6, "method": "ping"},
    ]
    exchange = machine.handle(post_request(batch, **headers))
    assert exchange.status == 400
    body = json.loads(exchange.take())
    assert body["error"]["code"] == -32600 and version in body["error"]["message"]
    # The session goes on.
    single = machine.handle(post_request({"jsonrpc": "2.0", "id": 7, "method": "ping"}, **headers))
    assert single.status == 200


def test_a_batch_on_2025_03_26_is_still_served() -> None:
    machine = _machine()
    headers = open_machine_session(machine, "2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 6, "method": "ping"},
    ]
    assert machine.handle(post_request(batch, **headers)).status == 200


@pytest.mark.parametrize("bad_id", BAD_IDS, ids=lambda v: type(v).__name__)
def test_a_request_id_no_request_may_have_is_400(bad_id: Any) -> None:
    machine = _machine()
    headers = open_machine_session(machine, "2025-11-25")
    message = {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}
    exchange = machine.handle(post_request(message, **headers))
    assert exchange.status == 400
    body = json.loads(exchange.take())
    assert body["id"] is None and body["error"]["code"] == -32600
    assert "request id must be a string or an integer" in body["error"]["message"]


def _post(port: int, message: Any, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/mcp", json.dumps(message), {**POST_HEADERS, **headers})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_both_refusals_from_a_running_server(backend: str) -> None:
    with example_server("http", backend) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        status, head, _ = _post(port, initialize(version="2025-06-18"), {})
        assert status == 200
        headers = {"mcp-session-id": head["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        assert _post(port, INITIALIZED, headers)[0] == 202
        batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
        status, _, body = _post(port, batch, headers)
        assert status == 400 and json.loads(body)["error"]["code"] == -32600
        for bad_id in BAD_IDS:
            message = {"jsonrpc": "2.0", "id": bad_id, "method": "ping"}
            status, _, body = _post(port, message, headers)
            assert status == 400 and json.loads(body)["error"]["code"] == -32600, bad_id
        status, _, body = _post(port, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers)
        assert status == 200 and b'"result"' in body


# One header limit, whatever the chunking (point 8) ---------------------------------------

LIMIT = 4096


def _head_of(size: int) -> bytes:
    start = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nX-Pad: "
    return start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"


def _first_event(pieces: list[bytes], fast_path: bool) -> Any:
    from sansio_mcp._http import HTTPServerConnection
    from sansio_mcp._ndjson import NEED_DATA

    connection = HTTPServerConnection(max_headers=LIMIT, fast_path=fast_path)
    for piece in pieces:
        connection.receive_data(piece)
        event = connection.next_request()
        if event is not NEED_DATA:
            return event
    return NEED_DATA


@settings(max_examples=60, deadline=None)
@given(
    size=st.sampled_from([LIMIT - 200, LIMIT - 1, LIMIT + 1, LIMIT + 300, 3 * LIMIT]),
    cuts=st.lists(st.integers(min_value=1, max_value=3 * LIMIT), max_size=6),
    fast_path=st.booleans(),
)
def test_the_header_limit_does_not_depend_on_chunking(
    size: int, cuts: list[int], fast_path: bool
) -> None:
    from sansio_mcp._http import HTTPError, HTTPRequest

    data = _head_of(size)
    points = sorted({c for c in cuts if c < len(data)})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    event = _first_event(pieces, fast_path)
    # h11 counts a head still arriving a little differently at the edge; away from it the
    # verdict is the same, however the bytes came.
    if size <= LIMIT - 100:
        assert isinstance(event, HTTPRequest), event
    elif size > LIMIT + 100:
        assert isinstance(event, HTTPError) and event.status == 431, event
    else:
        assert isinstance(event, HTTPRequest | HTTPError)
