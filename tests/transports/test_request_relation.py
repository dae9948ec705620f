"""A server request says which of our requests it came with, where the transport
tells: on a Streamable HTTP POST's response stream, that POST's request (by the id
``send_request`` gave it); on the GET stream, none; on stdio, nothing is told."""

from __future__ import annotations

from sansio_mcp._http import HTTPResponseHead
from sansio_mcp._streamable_http_client import ResponseHandler

from .helpers import ready_http_client, received_request

QUESTION = {
    "jsonrpc": "2.0",
    "method": "elicitation/create",
    "params": {"message": "sure?", "requestedSchema": {"type": "object", "properties": {}}},
}
SSE = HTTPResponseHead(200, {"content-type": "text/event-stream"})


def _sse(message: dict[str, object]) -> bytes:
    import json

    return f"data: {json.dumps(message)}\n\n".encode()


def test_a_question_on_a_post_stream_names_that_request() -> None:
    client, transport = ready_http_client({"elicitation": {}})
    call_id = client.send_request("tools/call", {"name": "t"})
    other_id = client.send_request("tools/call", {"name": "u"})
    call, other = client.messages_to_send()
    for request_id, message, question_id in ((call_id, call, "q1"), (other_id, other, "q2")):
        response = ResponseHandler(transport, message, max_body=1 << 20)
        response.on_head(SSE)
        response.on_body(_sse({**QUESTION, "id": question_id}))
        asked = received_request(client)
        assert (asked.request_id, asked.relation_known) == (question_id, True)
        assert asked.related_request == request_id


def test_a_question_on_the_get_stream_names_none() -> None:
    client, transport = ready_http_client({"elicitation": {}})
    client.send_request("tools/call", {"name": "t"})  # in flight, but not its stream
    client.messages_to_send()
    stream = ResponseHandler(transport, None, max_body=1 << 20)
    stream.on_head(SSE)
    stream.on_body(_sse({**QUESTION, "id": "q"}))
    asked = received_request(client)
    assert asked.relation_known and asked.related_request is None


def test_on_stdio_nothing_is_told() -> None:
    client, _ = ready_http_client({"elicitation": {}})
    client.send_request("tools/call", {"name": "t"})
    client.messages_to_send()
    client.receive_data(
        b'{"jsonrpc":"2.0","id":"q","method":"elicitation/create","params":'
        b'{"message":"sure?","requestedSchema":{"type":"object","properties":{}}}}\n'
    )
    asked = received_request(client)
    assert not asked.relation_known and asked.related_request is None
