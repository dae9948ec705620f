"""Every outgoing message is JSON-encoded once, when it is queued: each transport
frames those bytes (NDJSON, SSE events, a JSON body, a WebSocket text frame)
instead of encoding the message again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import ClientSession, ServerSession, _json
from sansio_mcp._http import HTTPRequest
from sansio_mcp._legacy_sse import LegacySSEServer
from sansio_mcp._sse import format_sse_event, format_sse_message
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp._websocket import WebSocketFraming
from sansio_mcp_apps.example_server import build_server

from .helpers import (
    open_machine_session,
    post_request,
    received_request,
    sse_events,
    stateless_headers,
    stateless_request,
)
from .test_websocket import _GOOD_HANDSHAKE


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The values given to the one JSON encoder (``_json.dumps`` goes through it too)."""
    seen: list[Any] = []
    real = _json.encode

    def counting(obj: Any) -> bytes:
        seen.append(obj)
        return real(obj)

    monkeypatch.setattr(_json, "encode", counting)
    yield seen


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(value=JSON, event_id=st.none() | st.from_regex(r"[a-z0-9]{1,4}-[0-9]{1,4}", fullmatch=True))
def test_an_encoded_message_frames_as_the_text_event_did(value: Any, event_id: str | None) -> None:
    """Line breaks, U+2028 and non-ASCII text in a message change nothing: its SSE
    event is byte for byte the one made from its text."""
    framed = format_sse_message(_json.encode(value), event_id)
    assert framed == format_sse_event(_json.dumps(value), event="message", id=event_id)
    [event] = sse_events(framed)
    assert json.loads(event.data) == value


def test_a_request_and_a_notification_are_encoded_once(encodes: list[Any]) -> None:
    client = ClientSession(mode="legacy")
    client.initialize()
    [sent] = client.outgoing_to_send()
    assert len(encodes) == 1 and json.loads(sent.data) == sent.message
    server = ServerSession()
    server.send_notification(
        "notifications/progress", {"progressToken": 1, "progress": 1}, stateless=True
    )
    [sent] = server.outgoing_to_send()
    assert len(encodes) == 2 and json.loads(sent.data) == sent.message


def test_a_request_that_is_not_json_changes_nothing() -> None:
    """Refused as it is encoded: no id is used up, no state changes, nothing queued."""
    client = ClientSession(mode="legacy")
    with pytest.raises(Exception, match="cannot be sent as JSON"):
        client.send_request("ping", {"x": float("nan")})
    assert client.state.name == "IDLE" and not client.pending_requests
    assert client.send_request("ping") == 0 and len(client.outgoing_to_send()) == 1


def test_a_stateless_answer_is_encoded_once(encodes: list[Any]) -> None:
    machine = StreamableHTTPServer(build_server().create_session)
    message = stateless_request("tools/call", {"name": "echo", "arguments": {"message": "é\n"}})
    exchange = machine.handle(post_request(message, **stateless_headers(message)))
    assert exchange.session is not None
    request = received_request(exchange.session)
    encodes.clear()
    exchange.session.respond(request.request_id, {"content": [{"type": "text", "text": "é"}]})
    machine.flush(exchange.session)
    assert exchange.status == 200 and not exchange.streaming
    [answer] = encodes
    assert exchange.take() == _json.encode(answer)


def test_a_handshake_stream_frames_each_message_once(encodes: list[Any]) -> None:
    machine = StreamableHTTPServer(build_server().create_session)
    headers = open_machine_session(machine, "2025-11-25")
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "x"}, "_meta": {"progressToken": 1}},
    }
    exchange = machine.handle(post_request(call, **headers))
    assert exchange.session is not None
    request = received_request(exchange.session)
    exchange.commit_head()
    encodes.clear()
    exchange.session.send_progress(request.request_id, 1)
    exchange.session.respond(request.request_id, {"content": []})
    machine.flush(exchange.session)
    assert len(encodes) == 2
    events = [e for e in sse_events(exchange.take()) if e.data]
    assert [json.loads(e.data) for e in events] == encodes
    assert [e.id for e in events] == ["s0-1", "s0-2"]


def test_the_legacy_sse_stream_frames_each_message_once(encodes: list[Any]) -> None:
    machine = LegacySSEServer(build_server().create_session, new_session_id=lambda: "abc")
    stream = machine.handle(HTTPRequest("GET", "/sse", {"host": "localhost"}))
    stream.take()
    session = machine.session_for(HTTPRequest("POST", "/messages?session_id=abc", {}))
    assert session is not None
    encodes.clear()
    session.send_request("ping")
    machine.flush(session)
    [ping] = encodes
    assert stream.take() == b"event: message\ndata: " + _json.encode(ping) + b"\n\n"


def test_a_websocket_text_frame_carries_the_encoded_bytes(encodes: list[Any]) -> None:
    framing = WebSocketFraming(ServerSession(), client=False)
    framing.receive_data(_GOOD_HANDSHAKE)
    framing.data_to_send()
    encodes.clear()
    framing.session.send_request("ping")
    frame = framing.data_to_send()
    [ping] = encodes
    payload = _json.encode(ping)
    # A server's frame is unmasked: FIN + text opcode, the length, then the payload.
    assert frame == bytes([0x81, len(payload)]) + payload


def test_a_batch_answer_is_its_answers_bytes_joined(encodes: list[Any]) -> None:
    """Each answer of a 2025-03-26 batch is encoded as it comes; the batch that
    carries them is their bytes in a JSON array, not a second encoding."""
    server = ServerSession()
    server.receive_message(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "0"},
            },
        }
    )
    server.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.outgoing_to_send()
    encodes.clear()
    server.receive_message([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in (1, 2)])
    [batch] = server.outgoing_to_send()
    assert len(encodes) == 2
    assert batch.data == _json.encode(batch.message) and len(batch.message) == 2
