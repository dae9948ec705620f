"""JSON or SSE for a request POST, sans-IO (the Streamable HTTP server machine
alone, the handler played by hand): the answer is plain ``application/json``
exactly when it was the request's first output and came before the adapter
committed the head; otherwise an SSE stream, opened with a priming event on a
2025-11-25 session.  Either way, whatever the timing, a client reads the same
messages in the same order.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp._http import HTTPResponseHead
from sansio_mcp._sse import SSEParser
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp._streamable_http_client import ResponseReader
from sansio_mcp._versions import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION
from sansio_mcp_apps.example_server import build_server

from .helpers import STATELESS, open_machine_session, post_request, received_request

ERAS = ("2025-11-25", "2025-06-18", STATELESS)


def session_headers(machine: StreamableHTTPServer, version: str) -> dict[str, str]:
    if version == STATELESS:
        return {"mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo"}
    return open_machine_session(machine, version)


@settings(max_examples=300, deadline=None)
@given(
    version=st.sampled_from(ERAS),
    notes=st.integers(min_value=0, max_value=3),
    commit_at=st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
    json_response=st.booleans(),
)
def test_json_exactly_when_the_answer_came_first(
    version: str, notes: int, commit_at: int | None, json_response: bool
) -> None:
    """``notes`` progress notifications, then the answer; the adapter commits the
    head before output number ``commit_at`` (or never: the answer came in time)."""
    machine = StreamableHTTPServer(build_server().create_session, json_response=json_response)
    headers = session_headers(machine, version)
    meta: dict[str, Any] = {"progressToken": "p"}
    if version == STATELESS:
        meta |= {
            META_PROTOCOL_VERSION: STATELESS,
            META_CLIENT_CAPABILITIES: {},
            META_CLIENT_INFO: {"name": "t", "version": "1"},
        }
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "x"}, "_meta": meta},
    }
    exchange = machine.handle(post_request(message, **headers))
    assert exchange.streaming and not exchange.head_ready and exchange.take() == b""
    session = exchange.session
    assert session is not None
    request = received_request(session)

    wire = b""
    committed = False
    outputs = [*(("note", n + 1) for n in range(notes)), ("answer", 0)]
    for index, (kind, step) in enumerate(outputs):
        if commit_at == index and not exchange.finished:
            exchange.commit_head()
            committed = True
        if kind == "note":
            session.send_progress(request.request_id, step)
        else:
            session.respond(request.request_id, {"content": [{"type": "text", "text": "x"}]})
        machine.flush(session)
        if exchange.head_ready and not committed and exchange.streaming:
            exchange.commit_head()  # what the adapter does once the head is ready
            committed = True
        wire += exchange.take()
    assert exchange.finished

    # JSON mode sends the notes elsewhere (the GET stream), so only a commit can stop it.
    committed_early = commit_at is not None and commit_at <= notes
    plain = not committed_early and (notes == 0 or json_response)
    assert exchange.streaming == (not plain)
    if plain:
        assert exchange.status == 200
        assert exchange.headers == {"content-type": "application/json"}
        assert json.loads(wire)["id"] == 7
        return
    content_type = exchange.headers["content-type"]
    head = HTTPResponseHead(exchange.status, exchange.headers)
    reader = ResponseReader(head, max_body=1 << 20)
    read = reader.feed(wire) + reader.finish()
    if json_response:
        assert content_type == "application/json"
        assert [m.get("id") for m in read] == [7]
        return
    assert content_type == "text/event-stream"
    assert [m.get("method") for m in read] == ["notifications/progress"] * notes + [None]
    assert read[-1]["id"] == 7
    parser = SSEParser()
    parser.feed(wire)
    events = []
    while not isinstance(event := parser.next_event(), type):
        events.append(event)
    primed = version >= "2025-11-25" and version != STATELESS
    assert (events[0].data == "" and events[0].id is not None) == primed
    if primed:
        assert events[0].retry is not None
    assert all((e.id is None) == (version == STATELESS) for e in events)
