"""An answer to one of our requests that cannot be read (not JSON, a NaN or an
infinity, a number beyond a float, nesting beyond the limit, cut short) fails that
request at once, naming what was wrong, instead of leaving it to wait for ever; the
session goes on.  Its id is read from the message's top-level members only (never
an ``id`` nested in its result), as for an answer over the size limit."""

from __future__ import annotations

import json
from typing import Any

from helpers import drain, line, make_pair, out, pump
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import ClientSession, RequestFailed, ResponseReceived
from sansio_mcp._ndjson import message_identity

#: What makes the answer unreadable, and what the error then says.
FAULTS: dict[str, tuple[str, str]] = {
    "nan": ('{"n":NaN}', "NaN is not valid JSON"),
    "infinity": ('{"n":Infinity}', "Infinity is not valid JSON"),
    "minus-infinity": ('{"n":-Infinity}', "-Infinity is not valid JSON"),
    "huge-number": ('{"n":1e999}', "beyond the range of a float"),
    "deep": ('{"n":' + "[" * 80 + "]" * 80 + "}", "nests deeper than 64 levels"),
    "garbage": ('{"n":tru}', "invalid JSON"),
    "cut-short": ('{"content":[{"type":"text","text":"he', "invalid JSON"),
}


def _answer(request_id: Any, fault: str, id_first: bool, decoy: bool, spaces: str) -> bytes:
    """An answer to ``request_id`` whose result holds ``fault`` (and, with
    ``decoy``, an ``id`` of another request nested in it)."""
    result, _ = FAULTS[fault]
    if decoy and not result.endswith('"he'):
        result = '{"id":' + json.dumps(request_id + 1) + ',"inner":' + result + "}"
    member = f'"id"{spaces}:{spaces}{json.dumps(request_id)}'
    if fault == "cut-short" or not id_first:
        # The id after the fault, where there is an after (a cut answer has none).
        if fault == "cut-short":
            return f'{{"jsonrpc":"2.0",{member},"result":{result}'.encode()
        return f'{{"jsonrpc":"2.0","result":{result},{member}}}'.encode()
    return f'{{"jsonrpc":"2.0",{member},"result":{result}}}'.encode()


@settings(max_examples=300, deadline=None)
@given(
    fault=st.sampled_from(sorted(FAULTS)),
    id_first=st.booleans(),
    decoy=st.booleans(),
    spaces=st.sampled_from(["", " ", "\t "]),
    as_text=st.booleans(),
)
def test_an_unreadable_answer_fails_its_request_at_once(
    fault: str, id_first: bool, decoy: bool, spaces: str, as_text: bool
) -> None:
    client, server = make_pair("2025-06-18")
    mine = client.send_request("tools/call", {"name": "t"})
    other = client.send_request("tools/list")
    pump(client, server)
    drain(server)
    answer = _answer(mine, fault, id_first, decoy, spaces)
    if as_text:  # an HTTP body, a WebSocket message
        client.receive_text(answer)
    else:  # a line on stdio
        client.receive_data(answer + b"\n")
    [failed] = [e for e in drain(client) if isinstance(e, RequestFailed)]
    assert failed.request_id == mine
    assert failed.error.message.startswith("the answer to tools/call was malformed: ")
    assert FAULTS[fault][1] in failed.error.message
    assert out(client) == []  # an answer is not answered back
    # The other request is still waiting, and its answer still comes through.
    assert client.pending_requests == {other}
    client.receive_data(line({"jsonrpc": "2.0", "id": other, "result": {"tools": []}}))
    assert [type(e) for e in drain(client)] == [ResponseReceived]


@settings(max_examples=200, deadline=None)
@given(fault=st.sampled_from(sorted(FAULTS)), as_text=st.booleans())
def test_an_unreadable_request_is_answered_and_ends_nothing(fault: str, as_text: bool) -> None:
    # A request of the peer's (it names a method) that cannot be read is answered
    # with the parse error, as before; none of ours ends, whatever its id.
    client, _ = make_pair("2025-06-18")
    mine = client.send_request("tools/call", {"name": "t"})
    client.data_to_send()
    params, why = FAULTS[fault]
    text = f'{{"jsonrpc":"2.0","id":{mine},"method":"roots/list","params":{params}'
    text += "" if fault == "cut-short" else "}"
    if as_text:
        client.receive_text(text.encode())
    else:
        client.receive_data(text.encode() + b"\n")
    assert not [e for e in drain(client) if isinstance(e, RequestFailed)]
    [refusal] = out(client)
    assert refusal["error"]["code"] == -32700 and why in refusal["error"]["message"]
    assert client.pending_requests == {mine}


def test_an_unreadable_answer_to_no_request_of_ours_is_only_reported() -> None:
    client = ClientSession()
    client.initialize()
    client.data_to_send()
    client.receive_data(b'{"jsonrpc":"2.0","id":99,"result":{"n":NaN}}\n')
    assert not [e for e in drain(client) if isinstance(e, RequestFailed)]
    assert [a["error"]["code"] for a in out(client)] == [-32700]


@settings(max_examples=500, deadline=None)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["id", "method", "x", 'i"d']), inner, max_size=3)
        ),
        max_leaves=10,
    ),
    request_id=st.integers(-(2**40), 2**40) | st.text(max_size=8),
    method=st.booleans(),
)
def test_identity_reads_top_level_members_only(value: Any, request_id: Any, method: bool) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "result": {"nested": value}, "id": request_id}
    if method:
        message["method"] = "x"
    text = json.dumps(message).encode()
    assert message_identity(text) == (request_id, method)
    # Cut anywhere after its id, it still shows it.
    assert message_identity(text[: text.rindex(b'"id"') + 4 + len(json.dumps(request_id)) + 2])[
        0
    ] == (request_id)
