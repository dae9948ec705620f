"""Over HTTP, an answer to one of our requests that cannot be read (NaN, invalid
JSON, ...) ends that request at once with the same precise error as on stdio, in a
JSON body, an SSE event of a POST's stream, or the legacy HTTP+SSE stream (which goes
on): not as a failed connection."""

from __future__ import annotations

import pytest

from sansio_mcp import NEED_DATA, ClientSession, RequestFailed, ResponseReceived
from sansio_mcp._errors import HTTPStatusError
from sansio_mcp._http import HTTPResponseHead
from sansio_mcp._legacy_sse import LegacySSEStream
from sansio_mcp._streamable_http_client import ResponseHandler

from .helpers import ready_http_client

BAD = {
    "nan": b'{"jsonrpc":"2.0","id":%d,"result":{"n":NaN}}',
    "deep": b'{"jsonrpc":"2.0","id":%d,"result":' + b"[" * 80 + b"]" * 80 + b"}",
    "cut": b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"te',
}
WHY = {"nan": "NaN is not valid JSON", "deep": "nests deeper", "cut": "invalid JSON"}


def _ended(client: ClientSession) -> list[RequestFailed | ResponseReceived]:
    events = []
    while (event := client.next_event()) is not NEED_DATA:
        if isinstance(event, (RequestFailed, ResponseReceived)):
            events.append(event)
    return events


def _malformed(failed: RequestFailed, fault: str) -> bool:
    return (
        not isinstance(failed.error, HTTPStatusError)
        and failed.error.message.startswith("the answer to tools/call was malformed: ")
        and WHY[fault] in failed.error.message
    )


@pytest.mark.parametrize("fault", sorted(BAD))
def test_in_a_json_body(fault: str) -> None:
    client, transport = ready_http_client()
    call = client.send_request("tools/call", {"name": "t"})
    [message] = client.messages_to_send()
    response = ResponseHandler(transport, message, max_body=1 << 20)
    response.on_head(HTTPResponseHead(200, {"content-type": "application/json"}))
    response.on_body(BAD[fault] % call)
    response.on_end()
    [failed] = _ended(client)
    assert isinstance(failed, RequestFailed) and failed.request_id == call
    assert _malformed(failed, fault), failed.error


@pytest.mark.parametrize("fault", sorted(BAD))
def test_in_an_sse_event_of_a_post_stream(fault: str) -> None:
    client, transport = ready_http_client()
    call = client.send_request("tools/call", {"name": "t"})
    [message] = client.messages_to_send()
    response = ResponseHandler(transport, message, max_body=1 << 20)
    response.on_head(HTTPResponseHead(200, {"content-type": "text/event-stream"}))
    response.on_body(b"data: " + BAD[fault] % call + b"\n\n")
    [failed] = _ended(client)
    assert isinstance(failed, RequestFailed) and failed.request_id == call
    assert _malformed(failed, fault), failed.error


@pytest.mark.parametrize("fault", sorted(BAD))
def test_on_the_legacy_stream_which_goes_on(fault: str) -> None:
    client, transport = ready_http_client()
    stream = LegacySSEStream("http://127.0.0.1:8000/sse", transport)
    stream.on_head(HTTPResponseHead(200, {"content-type": "text/event-stream"}))
    stream.on_body(b"event: endpoint\ndata: /messages?session_id=1\n\n")
    call = client.send_request("tools/call", {"name": "t"})
    other = client.send_request("tools/list")
    client.messages_to_send()
    stream.on_body(b"data: " + BAD[fault] % call + b"\n\n")
    good = b'{"jsonrpc":"2.0","id":%d,"result":{"tools":[]}}' % other
    stream.on_body(b"data: " + good + b"\n\n")
    failed, listed = _ended(client)
    assert isinstance(failed, RequestFailed) and _malformed(failed, fault), failed
    assert isinstance(listed, ResponseReceived) and listed.request_id == other
