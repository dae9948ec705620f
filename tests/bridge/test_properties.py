"""Translation properties (Hypothesis), checked against the MCP JSON schemas:

* every A2E request the agent can make becomes a schema-valid MCP message;
* every schema-valid MCP result becomes a valid A2E response (it survives the
  A2E codec, and carries what the MCP result said);
* round trips keep what both sides can express.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sansio_mcp_apps.a2e import (
    MESSAGE_TYPES,
    A2EMessage,
    ElicitRequest,
    ElicitResponse,
    MCPPromptGetRequest,
    MCPPromptGetResponse,
    MCPPromptListRequest,
    MCPPromptListResponse,
    MCPResourceListRequest,
    MCPResourceListResponse,
    MCPResourceReadRequest,
    MCPResourceReadResponse,
    MCPResourceSubscribeRequest,
    MCPRootsListRequest,
    MCPRootsListResponse,
    MCPSamplingRequest,
    MCPSamplingResponse,
    ToolCallRequest,
    ToolCallResponse,
    ToolListRequest,
    ToolListResponse,
    decode,
    decode_text,
    encode,
    to_obj,
)
from sansio_mcp_apps.a2e._fields import kind_of
from sansio_mcp_apps.a2e._translate import sampling_request_from_mcp, sampling_result_from_a2e

from .helpers import FakeServer, Harness, load_schema

REVISIONS = ("2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28")
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# JSON values ---------------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=10,
)
json_objects = st.dictionaries(names, json_values, max_size=4)
uris = st.builds(
    lambda scheme, path: f"{scheme}://{path}",
    st.sampled_from(["file", "mem", "https", "demo"]),
    st.text(
        st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="{}#?"),
        min_size=1,
        max_size=20,
    ),
)
b64 = st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode())


def _bridge(revision: str, server: FakeServer) -> Harness:
    harness = Harness(elicitation=True)
    harness.add_server("srv", server)
    reply = harness.register("s", "srv", protocol_version=revision)
    assert reply.ok, reply  # type: ignore[attr-defined]
    return harness


def _new_messages(server: FakeServer, before: int) -> list[dict[str, Any]]:
    return server.received[before:]


# A2E requests -> schema-valid MCP messages ------------------------------------------------

a2e_requests = st.one_of(
    st.builds(lambda a: ("call", a), json_objects),
    st.builds(lambda u: ("read", u), uris),
    st.builds(lambda u: ("subscribe", u), uris),
    st.builds(lambda a: ("prompt", a), json_objects),
    st.just(("resources", None)),
    st.just(("prompts", None)),
)


@pytest.mark.parametrize("revision", REVISIONS)
@SETTINGS
@given(requests=st.lists(a2e_requests, min_size=1, max_size=4))
def test_every_a2e_request_becomes_a_schema_valid_mcp_message(
    revision: str, requests: list[tuple[str, Any]]
) -> None:
    schema = load_schema(revision)
    server = FakeServer(
        tools=[{"name": "t", "inputSchema": {"type": "object"}}],
        resources=[{"uri": f"mem://{i}", "name": str(i)} for i in range(3)],
        templates=[{"uriTemplate": "{+uri}", "name": "any"}],
        prompts=[{"name": "p", "arguments": [{"name": "a"}]}],
        page_size=2,
        versions=(revision,),
    )
    h = _bridge(revision, server)
    for kind, value in requests:
        before = len(server.received)
        if kind == "call":
            reply = h.request(ToolCallRequest, tool_name="s__t", arguments=value)
            assert isinstance(reply, ToolCallResponse)
        elif kind == "read":
            assert isinstance(h.request(MCPResourceReadRequest, uri=value), MCPResourceReadResponse)
        elif kind == "subscribe":
            h.request(MCPResourceSubscribeRequest, uri=value)
        elif kind == "prompt":
            assert isinstance(
                h.request(MCPPromptGetRequest, name="p", arguments=value), MCPPromptGetResponse
            )
        elif kind == "resources":
            first = h.request(MCPResourceListRequest)
            assert isinstance(first, MCPResourceListResponse)
            h.request(MCPResourceListRequest, cursor=first.next_cursor)
        else:
            assert isinstance(h.request(MCPPromptListRequest), MCPPromptListResponse)
        sent = _new_messages(server, before)
        assert sent, kind
        for message in sent:
            if "method" in message:
                schema.check_message(message)


# The agent's answers -> schema-valid MCP results ----------------------------------------------

text_blocks = st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=30))
image_blocks = st.builds(
    lambda d, m: {"type": "image", "data": d, "mimeType": m},
    b64,
    st.sampled_from(["image/png", "image/jpeg"]),
)
sample_answers = st.fixed_dictionaries(
    {
        "content": text_blocks | image_blocks,
        "model": st.text(max_size=10),
        "stop_reason": st.sampled_from(["", "endTurn", "maxTokens", "stopSequence", "custom"]),
        "role": st.sampled_from(["assistant", "user"]),
    }
)


@pytest.mark.parametrize("revision", REVISIONS[:3])  # 2026-07-28 asks through MRTR (e2e)
@SETTINGS
@given(
    answer=sample_answers,
    roots=st.lists(
        st.builds(lambda p, n: {"uri": f"file:///{p}", "name": n}, names, st.text(max_size=5)),
        max_size=3,
    ),
)
def test_agent_answers_become_schema_valid_mcp_results(
    revision: str, answer: dict[str, Any], roots: list[dict[str, Any]]
) -> None:
    schema = load_schema(revision)
    server = FakeServer(tools=[], versions=(revision,))
    h = _bridge(revision, server)
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
        "maxTokens": 5,
    }
    wire = h.server_push("s", lambda s: s.send_request("sampling/createMessage", params))
    request = h.of_type(MCPSamplingRequest)[-1]
    h.send(MCPSamplingResponse(req_id=request.id, **answer))
    roots_wire = h.server_push("s", lambda s: s.send_request("roots/list"))
    ask = h.of_type(MCPRootsListRequest)[-1]
    h.send(MCPRootsListResponse(req_id=ask.id, roots=roots))
    h._flush(h.conn_of("s"))
    responses = {m.get("id"): m for m in server.received if "result" in m or "error" in m}
    result = responses[wire]["result"]
    assert not schema.errors("CreateMessageResult", result), result
    assert result["content"] == answer["content"] and result["role"] == answer["role"]
    assert result.get("stopReason", "") == answer["stop_reason"]
    roots_result = responses[roots_wire]["result"]
    assert not schema.errors("ListRootsResult", roots_result)
    assert [r["uri"] for r in roots_result["roots"]] == [r["uri"] for r in roots]
    if revision >= "2025-06-18":
        elicit_params = {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}
        elicit_wire = h.server_push(
            "s", lambda s: s.send_request("elicitation/create", elicit_params)
        )
        question = h.of_type(ElicitRequest)[-1]
        h.send(ElicitResponse(req_id=question.id, action="accept", content={"name": "x"}))
        h._flush(h.conn_of("s"))
        answer_obj = next(m for m in server.received if m.get("id") == elicit_wire)
        assert not schema.errors("ElicitResult", answer_obj["result"])


# Schema-valid MCP results -> valid A2E responses --------------------------------------------

annotations = st.fixed_dictionaries(
    {},
    optional={
        "audience": st.lists(st.sampled_from(["user", "assistant"]), max_size=2, unique=True),
        "priority": st.floats(0, 1),
    },
)
content_blocks = st.one_of(
    text_blocks,
    image_blocks,
    st.builds(lambda d: {"type": "audio", "data": d, "mimeType": "audio/wav"}, b64),
    st.builds(lambda u, n: {"type": "resource_link", "uri": u, "name": n}, uris, names),
    st.builds(
        lambda u, t: {"type": "resource", "resource": {"uri": u, "text": t}},
        uris,
        st.text(max_size=10),
    ),
    st.builds(
        lambda u, b: {"type": "resource", "resource": {"uri": u, "blob": b, "mimeType": "x/y"}},
        uris,
        b64,
    ),
    st.builds(
        lambda t, a: {"type": "text", "text": t, "annotations": a}, st.text(max_size=5), annotations
    ),
)
call_results = st.fixed_dictionaries(
    {"content": st.lists(content_blocks, max_size=4)},
    optional={
        "isError": st.booleans(),
        "structuredContent": json_objects,
        "_meta": json_objects,
    },
)
resource_contents = st.one_of(
    st.builds(lambda u, t: {"uri": u, "text": t}, uris, st.text(max_size=20)),
    st.builds(
        lambda u, t, m: {"uri": u, "text": t, "mimeType": m},
        uris,
        st.text(max_size=20),
        st.sampled_from(["text/markdown", "application/json"]),
    ),
    st.builds(lambda u, b: {"uri": u, "blob": b}, uris, b64),
    st.builds(lambda u, b: {"uri": u, "blob": b, "mimeType": "image/png"}, uris, b64),
)
prompt_messages = st.builds(
    lambda role, block: {"role": role, "content": block},
    st.sampled_from(["user", "assistant"]),
    content_blocks,
)
property_schemas = st.dictionaries(
    names,
    st.sampled_from(
        [
            {"type": "string"},
            {"type": "integer", "minimum": 0},
            {"type": "array", "items": {"type": "number"}},
            {"type": "object", "properties": {"x": {"type": "boolean"}}},
            {"type": ["string", "null"], "description": "maybe"},
            {"enum": ["a", "b"]},
        ]
    ),
    max_size=4,
)
mcp_tools = st.builds(
    lambda name, props, desc, ann: {
        "name": name,
        "description": desc,
        "inputSchema": {"type": "object", "properties": props, "required": sorted(props)[:1]},
        **({"annotations": ann} if ann else {}),
    },
    st.text(st.characters(min_codepoint=0x30, max_codepoint=0x7A), min_size=1, max_size=10),
    property_schemas,
    st.text(max_size=20),
    st.fixed_dictionaries(
        {}, optional={"idempotentHint": st.booleans(), "readOnlyHint": st.booleans()}
    ),
)


def _valid(schema: Any, name: str, value: Any) -> bool:
    return schema.is_valid(name, value)


@pytest.mark.parametrize("revision", ("2025-06-18", "2025-11-25"))
@SETTINGS
@given(
    result=call_results,
    contents=st.lists(resource_contents, min_size=1, max_size=3),
    messages=st.lists(prompt_messages, max_size=3),
    description=st.none() | st.text(max_size=10),
)
def test_every_schema_valid_mcp_result_becomes_a_valid_a2e_response(
    revision: str,
    result: dict[str, Any],
    contents: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    description: str | None,
) -> None:
    schema = load_schema(revision)
    assume(_valid(schema, "CallToolResult", result))
    read_result = {"contents": contents}
    assume(_valid(schema, "ReadResourceResult", read_result))
    prompt_result: dict[str, Any] = {"messages": messages}
    if description is not None:
        prompt_result["description"] = description
    assume(_valid(schema, "GetPromptResult", prompt_result))
    server = FakeServer(
        tools=[{"name": "t", "inputSchema": {"type": "object"}}],
        resources=[{"uri": "mem://r", "name": "r"}],
        prompts=[{"name": "p"}],
        versions=(revision,),
    )
    server.handlers["tools/call"] = lambda s, e: result
    server.handlers["resources/read"] = lambda s, e: read_result
    server.handlers["prompts/get"] = lambda s, e: prompt_result
    h = _bridge(revision, server)
    call = h.request(ToolCallRequest, tool_name="s__t", arguments={})
    assert isinstance(call, ToolCallResponse)  # the harness checked it survives the codec
    data = call.data
    assert data["success"] is (result.get("isError") is not True)
    assert data["data"]["content"] == result["content"]
    assert data["data"].get("structuredContent") == result.get("structuredContent")
    assert data["error_code"] == ("" if data["success"] else "tool_error")
    read = h.request(MCPResourceReadRequest, uri="mem://r")
    assert isinstance(read, MCPResourceReadResponse) and read.error == ""
    for got, original in zip(read.contents, contents, strict=True):
        assert got["uri"] == original["uri"]
        if "blob" in original:
            assert (got["type"], got["blob"]) == ("blob", original["blob"])
        else:
            assert (got["type"], got["text"]) == ("text", original["text"])
        assert got["mime_type"] == original.get("mimeType", "text/plain")  # the spec's default
    prompt = h.request(MCPPromptGetRequest, name="p")
    assert isinstance(prompt, MCPPromptGetResponse)
    assert prompt.messages == messages and prompt.description == (description or "")


@pytest.mark.parametrize("revision", ("2024-11-05", "2025-11-25"))
@SETTINGS
@given(
    tools=st.lists(mcp_tools, max_size=5, unique_by=lambda t: t["name"]),
    resources=st.lists(
        st.builds(
            lambda u, n, m: {"uri": u, "name": n, **({"mimeType": m} if m else {})},
            uris,
            names,
            st.sampled_from(["", "text/plain"]),
        ),
        max_size=4,
        unique_by=lambda r: r["uri"],
    ),
)
def test_listed_tools_and_resources_carry_over(
    revision: str, tools: list[dict[str, Any]], resources: list[dict[str, Any]]
) -> None:
    schema = load_schema(revision)
    assume(_valid(schema, "ListToolsResult", {"tools": tools}))
    assume(_valid(schema, "ListResourcesResult", {"resources": resources}))
    server = FakeServer(tools=tools, resources=resources, page_size=2, versions=(revision,))
    h = _bridge(revision, server)
    listed = h.request(ToolListRequest)
    assert isinstance(listed, ToolListResponse)
    assert [d["name"] for d in listed.tools] == [f"s__{t['name']}" for t in tools]
    for definition, original in zip(listed.tools, tools, strict=True):
        assert definition["input_schema"] == original["inputSchema"]
        assert definition["description"] == original["description"]
        assert {p["name"] for p in definition["input_parameters"]} == set(
            original["inputSchema"]["properties"]
        )
    got: list[dict[str, Any]] = []
    cursor = ""
    for _ in range(10):
        page = h.request(MCPResourceListRequest, cursor=cursor)
        assert isinstance(page, MCPResourceListResponse)
        got += page.resources
        cursor = page.next_cursor
        if not cursor:
            break
    assert [(r["uri"], r["name"], r["mime_type"]) for r in got] == [
        (r["uri"], r["name"], r.get("mimeType", "")) for r in resources
    ]


# Round trips -----------------------------------------------------------------------------------

sampling_params = st.fixed_dictionaries(
    {
        "messages": st.lists(
            st.builds(
                lambda r, b: {"role": r, "content": b},
                st.sampled_from(["user", "assistant"]),
                text_blocks | image_blocks,
            ),
            min_size=1,
            max_size=3,
        ),
        "maxTokens": st.integers(1, 10_000),
    },
    optional={
        "systemPrompt": st.text(max_size=10),
        "temperature": st.floats(0, 2),
        "stopSequences": st.lists(st.text(max_size=3), max_size=2),
        "includeContext": st.sampled_from(["none", "thisServer", "allServers"]),
        "modelPreferences": st.fixed_dictionaries({}, optional={"speedPriority": st.floats(0, 1)}),
        "metadata": json_objects,
    },
)


@pytest.mark.parametrize("revision", ("2025-06-18", "2025-11-25"))
@SETTINGS
@given(params=sampling_params, answer=sample_answers)
def test_sampling_round_trip(revision: str, params: dict[str, Any], answer: dict[str, Any]) -> None:
    schema = load_schema(revision)
    request_obj = {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": params}
    assume(_valid(schema, "CreateMessageRequest", request_obj))
    request = sampling_request_from_mcp(params, server_id="s", mcp_request_id="7", id="i", ts=1.0)
    again = decode_text(encode(request))
    assert again == request
    assert request.messages == params["messages"]
    assert request.max_tokens == params["maxTokens"]
    assert request.system_prompt == params.get("systemPrompt", "")
    assert request.temperature == params.get("temperature", 1.0)
    assert request.stop_sequences == params.get("stopSequences", [])
    assert request.include_context == params.get("includeContext", "none")
    assert request.model_preferences == params.get("modelPreferences", {})
    assert request.metadata == params.get("metadata", {})
    response = MCPSamplingResponse(req_id=request.id, **answer)
    result = sampling_result_from_a2e(decode_text(encode(response)))  # type: ignore[arg-type]
    assert not schema.errors("CreateMessageResult", result)
    back = MCPSamplingResponse(
        role=result["role"],
        content=result["content"],
        model=result["model"],
        stop_reason=result.get("stopReason", ""),
    )
    assert (back.role, back.content, back.model, back.stop_reason) == (
        response.role,
        response.content,
        response.model,
        response.stop_reason,
    )


def _values_for(kind: str) -> st.SearchStrategy[Any]:
    return {
        "str": st.text(max_size=10),
        "float": st.floats(allow_nan=False, allow_infinity=False),
        "int": st.integers(-(2**53), 2**53),
        "bool": st.booleans(),
        "dict": json_objects,
        "list[dict]": st.lists(json_objects, max_size=2),
        "list[str]": st.lists(st.text(max_size=5), max_size=3),
        "any": json_values,
    }[kind]


@st.composite
def any_message(draw: st.DrawFn) -> A2EMessage:
    cls = draw(st.sampled_from(sorted(MESSAGE_TYPES.values(), key=lambda c: c.TYPE)))
    values: dict[str, Any] = {}
    for field in attrs.fields(cls):
        kind = kind_of(field)
        if kind is None or field.name in ("type", "version"):
            continue
        if field.name == "id":
            values["id"] = draw(st.text(min_size=1, max_size=8))
        elif draw(st.booleans()):
            values[field.name] = draw(_values_for(kind))
    extra = draw(
        st.dictionaries(
            st.text(min_size=1, max_size=6).filter(lambda k: k not in attrs.fields_dict(cls)),
            json_values,
            max_size=2,
        )
    )
    return cls(**values, extra=extra)


@settings(max_examples=300, deadline=None)
@given(any_message())
def test_every_message_survives_the_codec(message: A2EMessage) -> None:
    text = encode(message)
    assert "\n" not in text
    assert decode_text(text) == message
    assert decode(json.loads(text)) == message
    assert list(to_obj(message))[:4] == ["type", "id", "version", "ts"]
