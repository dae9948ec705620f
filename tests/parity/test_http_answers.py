"""How both HTTP servers answer a request POST: plain ``application/json`` (one
body with a Content-Length) when the answer was ready before the head went out,
an SSE stream when there was something to stream first or the answer took a
while; for a 2025-11-25 session the stream opens with its priming event.
Raw requests with ``http.client`` from the test thread; the server on either
backend in a thread of its own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sansio_mcp._sse import SSEEvent, SSEParser
from sansio_mcp._versions import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION

from .harness import BACKEND_NAMES, INITIALIZE, POST_HEADERS, parity_server, raw_request, serving

STATELESS = "2026-07-28"


def raw_post(port: int, headers: dict[str, str], body: Any) -> tuple[int, dict[str, str], bytes]:
    return raw_request(port, "POST", "/mcp", headers, body)


def events(body: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    parser.feed(body)
    parser.feed(b"")
    out = []
    while not isinstance(event := parser.next_event(), type):
        out.append(event)
    return out


def call(request_id: int, tool: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def open_session(port: int, version: str) -> dict[str, str]:
    initialize = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    status, headers, body = raw_post(port, POST_HEADERS, initialize)
    assert status == 200 and headers["content-type"] == "application/json", body
    session = {
        **POST_HEADERS,
        "mcp-session-id": headers["mcp-session-id"],
        "mcp-protocol-version": version,
    }
    status, _, _ = raw_post(
        port, session, {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert status == 202
    return session


def assert_plain_json(answer: tuple[int, dict[str, str], bytes]) -> Any:
    status, headers, body = answer
    assert status == 200 and headers["content-type"] == "application/json", answer
    assert headers["content-length"] == str(len(body)) and "transfer-encoding" not in headers
    return json.loads(body)


def assert_sse(answer: tuple[int, dict[str, str], bytes]) -> list[SSEEvent]:
    status, headers, body = answer
    assert status == 200 and headers["content-type"] == "text/event-stream", answer
    return events(body)


@pytest.mark.parametrize("server_backend", BACKEND_NAMES)
def test_handshake_session_answers(server_backend: str) -> None:
    with serving(server_backend, "http", parity_server()) as port:
        session = open_session(port, "2025-11-25")

        quick = assert_plain_json(raw_post(port, session, call(2, "echo", {"message": "hi"})))
        assert quick["id"] == 2 and quick["result"]["content"][0]["text"] == "hi"

        progress = call(3, "slow", {"seconds": 0.1, "steps": 2}, progressToken="p")
        streamed = assert_sse(raw_post(port, session, progress))
        priming, *rest = streamed
        assert priming.id and priming.data == "" and priming.retry is not None
        messages = [json.loads(e.data) for e in rest]
        assert [m.get("method") for m in messages] == [
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        assert messages[-1]["id"] == 3 and all(e.id for e in rest)

        # Nothing to say before an answer that takes longer than the wait for it.
        silent = assert_sse(raw_post(port, session, call(4, "slow", {"seconds": 0.3, "steps": 1})))
        assert [e.data == "" for e in silent] == [True, False]
        assert json.loads(silent[1].data)["id"] == 4


@pytest.mark.parametrize("server_backend", BACKEND_NAMES)
def test_older_sessions_and_batches(server_backend: str) -> None:
    with serving(server_backend, "http", parity_server()) as port:
        older = open_session(port, "2025-06-18")
        streamed = assert_sse(
            raw_post(port, older, call(2, "slow", {"seconds": 0.05, "steps": 1}, progressToken=1))
        )
        assert all(e.data for e in streamed)  # no priming event before 2025-11-25

        batching = open_session(port, "2025-03-26")
        batch = [call(5, "echo", {"message": "a"}), call(6, "echo", {"message": "b"})]
        answers = assert_plain_json(raw_post(port, batching, batch))
        assert sorted(a["id"] for a in answers) == [5, 6]


def stateless_call(request_id: int, tool: str, arguments: dict[str, Any], **meta: Any) -> Any:
    message = call(
        request_id,
        tool,
        arguments,
        **{
            META_PROTOCOL_VERSION: STATELESS,
            META_CLIENT_CAPABILITIES: {},
            META_CLIENT_INFO: {"name": "raw-parity-client", "version": "0"},
            **meta,
        },
    )
    headers = {
        **POST_HEADERS,
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    return headers, message


@pytest.mark.parametrize("server_backend", BACKEND_NAMES)
def test_stateless_answers(server_backend: str) -> None:
    with serving(server_backend, "http", parity_server()) as port:
        quick = assert_plain_json(raw_post(port, *stateless_call(7, "echo", {"message": "yo"})))
        assert quick["id"] == 7 and quick["result"]["content"][0]["text"] == "yo"

        slow = stateless_call(8, "slow", {"seconds": 0.05, "steps": 1}, progressToken="t")
        streamed = assert_sse(raw_post(port, *slow))
        assert [json.loads(e.data).get("method") for e in streamed] == [
            "notifications/progress",
            None,
        ]
        assert all(e.id is None for e in streamed)  # no resumption on 2026-07-28
