"""Regression tests for the defects verified in the reference A2E SDK
(``../shared/reference/a2e-a2a-gateways.md`` §1.6-1.7): none of them may
happen here.  End-to-end ones (stderr draining, reconnect, stdout purity)
are in test_e2e.py and test_faults.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp_apps.a2e import (
    MESSAGE_TYPES,
    A2EError,
    A2EErrorCode,
    MCPErrorCode,
    MCPPromptGetRequest,
    MCPPromptGetResponse,
    MCPResourceListRequest,
    MCPResourceListResponse,
    MCPResourceReadRequest,
    MCPResourceReadResponse,
    MCPSamplingResponse,
    MCPServerRegisterResponse,
    MCPServerUnregisterRequest,
    MCPServerUnregisterResponse,
    ToolCallRequest,
    ToolCallResponse,
    ToolListRequest,
    decode_text,
    to_obj,
)

from .helpers import FakeServer, Harness, text, tool

ALL_CODES = {c.value for c in MCPErrorCode} | {c.value for c in A2EErrorCode}


def test_defect_1_register_reports_ok_and_the_server_info() -> None:
    """Reference: ``MCPServerRegisterResponse(info=...)`` dropped the info, ``ok`` stayed False."""
    h = Harness()
    h.add_server("srv", FakeServer(tools=[tool("t")]))
    reply = h.register("s", "srv")
    assert isinstance(reply, MCPServerRegisterResponse)
    assert reply.ok is True
    assert reply.server["server_id"] == "s" and reply.server["tools_count"] == 1
    assert "info" not in to_obj(reply)


def test_defect_1_unregister_reports_ok() -> None:
    """Reference: ``MCPServerUnregisterResponse(success=ok)``: ``ok`` was always False."""
    h = Harness()
    h.add_server("srv", FakeServer(tools=[]))
    h.register("s", "srv")
    reply = h.request(MCPServerUnregisterRequest, server_id="s")
    assert isinstance(reply, MCPServerUnregisterResponse)
    assert reply.ok is True and "success" not in to_obj(reply)


def test_defect_1_resource_list_uses_next_cursor() -> None:
    """Reference: ``MCPResourceListResponse(cursor=...)``: the field is ``next_cursor``."""
    h = Harness()
    h.add_server(
        "srv",
        FakeServer(resources=[{"uri": f"m://{i}", "name": str(i)} for i in range(3)], page_size=1),
    )
    h.register("s", "srv")
    reply = h.request(MCPResourceListRequest)
    assert isinstance(reply, MCPResourceListResponse)
    assert reply.next_cursor and "cursor" not in to_obj(reply)
    assert [r["uri"] for r in reply.resources] == ["m://0"]


def test_defect_2_sample_response_type_is_resp() -> None:
    """Reference: ``MCPSamplingResponse.type`` defaulted to ``mcp/sample/req``."""
    assert MCPSamplingResponse().type == "mcp/sample/resp"
    assert MESSAGE_TYPES["mcp/sample/resp"] is MCPSamplingResponse
    decoded = decode_text(
        '{"type":"mcp/sample/resp","id":"a","req_id":"b","server_id":"s",'
        '"mcp_request_id":"1","role":"assistant","content":{}}'
    )
    assert isinstance(decoded, MCPSamplingResponse)


def test_defect_3_read_and_prompt_get_answer_their_request() -> None:
    """Reference: the handlers read ``msg.req_id`` off a *request* and raised
    AttributeError, reported as ``mcp_transport_error``."""
    h = Harness()
    h.add_server(
        "srv", FakeServer(resources=[{"uri": "m://r", "name": "r"}], prompts=[{"name": "p"}])
    )
    h.register("s", "srv")
    read = h.request(MCPResourceReadRequest, uri="m://r")
    assert isinstance(read, MCPResourceReadResponse) and read.error == ""
    assert read.contents[0]["text"] == "hi"
    prompt = h.request(MCPPromptGetRequest, name="p")
    assert isinstance(prompt, MCPPromptGetResponse) and prompt.error == ""
    assert prompt.messages == [{"role": "user", "content": text("prompt p")}]


def test_defect_4_tool_results_are_returned_with_tool_name_and_duration() -> None:
    """Reference: ToolResult built without ``tool_name`` (ValidationError on every
    success) and with a non-existent ``output`` field; the timeout path had no
    ``duration_ms``."""
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("ok"), tool("hang")]))

    def call(server: FakeServer, event: Any) -> Any:
        if event.params["name"] == "hang":
            return None
        return {"content": [text("result text")], "structuredContent": {"v": 1}}

    fake.handlers["tools/call"] = call
    h.register("s", "srv", timeout=2)
    reply = h.request(ToolCallRequest, tool_name="s__ok", arguments={})
    assert isinstance(reply, ToolCallResponse)
    result = reply.data
    assert result["tool_name"] == "s__ok" and result["success"] is True
    assert result["data"] == {"content": [text("result text")], "structuredContent": {"v": 1}}
    assert "output" not in result and isinstance(result["duration_ms"], float)
    h.send(ToolCallRequest(id="slow", tool_name="s__hang", arguments={}))
    h.advance(2)
    timed_out = h.reply_to("slow")
    assert isinstance(timed_out, ToolCallResponse)
    assert timed_out.data["tool_name"] == "s__hang"
    assert timed_out.data["duration_ms"] == 2000.0 and timed_out.data["error_code"] == "timeout"


def test_defect_5_tool_schemas_reach_the_agent() -> None:
    """Reference: ToolDefinition had no schema field: ``input_schema`` was dropped."""
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "minLength": 1}},
        "required": ["q"],
        "additionalProperties": False,
    }
    h = Harness()
    h.add_server("srv", FakeServer(tools=[{"name": "search", "inputSchema": schema}]))
    h.register("s", "srv")
    (definition,) = h.request(ToolListRequest).tools  # type: ignore[attr-defined]
    assert definition["input_schema"] == schema
    assert definition["source"] == "mcp"  # a real field, not just a tag


def test_defect_6_unknown_types_get_an_error_with_a_code_that_exists() -> None:
    """Reference: ``A2EErrorCode.UNKNOWN_TYPE`` / ``INTERNAL_ERROR`` do not exist, so
    an unknown type raised AttributeError instead of answering."""
    h = Harness()
    replies = h.send_line(b'{"type":"mcp/call_tool/req","id":"old-name"}\n')
    assert len(replies) == 1 and isinstance(replies[0], A2EError)
    assert replies[0].code in ALL_CODES and replies[0].req_id == "old-name"


def test_the_tool_registry_is_wired_end_to_end() -> None:
    """Reference: nothing connected the MCP gateway's registry to ``tool/list`` and
    ``tool/call``; here one ``tool/call/req`` reaches the MCP server."""
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("t")]))
    h.register("s", "srv")
    assert [t["name"] for t in h.request(ToolListRequest).tools] == ["s__t"]  # type: ignore[attr-defined]
    h.request(ToolCallRequest, tool_name="s__t", arguments={"k": 1})
    (sent,) = [m["params"] for m in fake.received if m.get("method") == "tools/call"]
    assert (sent["name"], sent["arguments"]) == ("t", {"k": 1})


@pytest.mark.parametrize("era", ["handshake", "legacy"])
def test_the_handshake_negotiates_instead_of_hard_coding_2024_11_05(era: str) -> None:
    """Reference: ``protocolVersion: "2024-11-05"`` always.  ``legacy`` is the
    deprecated spelling of ``handshake``."""
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[]))
    reply = h.register("s", "srv", protocol_version=era)
    init = next(m for m in fake.received if m.get("method") == "initialize")
    assert init["params"]["protocolVersion"] == "2025-11-25"
    assert reply.server["mcp_version"] == "2025-11-25"  # type: ignore[attr-defined]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_types = st.sampled_from([*MESSAGE_TYPES, "mcp/nope", ""])
_fields = st.sampled_from(
    [
        "config",
        "server_id",
        "uri",
        "cursor",
        "name",
        "arguments",
        "tool_name",
        "req_id",
        "roots",
        "content",
        "error",
        "status_filter",
        "timeout",
        "action",
        "mcp_request_id",
        "version",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"type": _types, "id": st.text(min_size=0, max_size=4)},
            optional={"x": st.dictionaries(_fields, _json, max_size=4)},
        ),
        max_size=6,
    )
)
def test_no_input_makes_the_host_raise_and_every_code_exists(
    messages: list[dict[str, Any]],
) -> None:
    """Whatever an agent sends, the host answers with messages (never an exception),
    and every error code it uses is one the spec defines."""
    h = Harness()
    h.add_server("srv", FakeServer(tools=[tool("t")], resources=[{"uri": "m://r", "name": "r"}]))
    h.register("s", "srv")
    for raw in messages:
        extra = raw.pop("x", {})
        h.send({**extra, **raw})
    for message in h.inbox:
        if isinstance(message, A2EError):
            assert message.code in ALL_CODES
        code = message.extra.get("error_code") or (
            message.data.get("error_code") if isinstance(message, ToolCallResponse) else ""
        )
        assert not code or code in ALL_CODES
