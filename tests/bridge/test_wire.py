"""The A2E wire: the spec's message table, its wire examples (verbatim), and the
strict codec."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from sansio_mcp_apps import a2e
from sansio_mcp_apps.a2e import (
    A2EError,
    A2EErrorCode,
    A2EFramer,
    DecodeError,
    MCPErrorCode,
    MCPPromptGetRequest,
    MCPPromptGetResponse,
    MCPResourceListRequest,
    MCPResourceListResponse,
    MCPServerConfig,
    MCPServerRegisterRequest,
    MCPServerRegisterResponse,
    decode,
    decode_text,
    encode,
    encode_line,
    to_obj,
)

from .helpers import FakeServer, Harness, text, tool

# The spec's wire examples, verbatim.
REGISTER_REQ = '{"type":"mcp/server/register/req","id":"r1s2t3","version":"1.0","ts":1716123456.789,"config":{"server_id":"fs","name":"filesystem","transport":"stdio","cmd":["npx","-y","@modelcontextprotocol/server-filesystem","/tmp"],"cwd":"","env":{},"url":"","headers":{},"timeout":300,"auto_reconnect":true,"tool_allow_list":[],"resource_allow_list":[]}}'  # noqa: E501
REGISTER_RESP = '{"type":"mcp/server/register/resp","id":"u4v5w6","version":"1.0","ts":1716123457.200,"req_id":"r1s2t3","ok":true,"server":{"server_id":"fs","name":"filesystem","transport":"stdio","status":"ready","tools_count":5,"resources_count":0,"prompts_count":0},"error":""}'  # noqa: E501
RESOURCE_LIST_REQ = '{"type":"mcp/resource/list/req","id":"x7y8z9","version":"1.0","ts":1716123458.100,"server_id":"","cursor":""}'  # noqa: E501
PROMPT_GET_REQ = '{"type":"mcp/prompt/get/req","id":"a0b1c2","version":"1.0","ts":1716123459.100,"name":"code_review","arguments":{"language":"python"},"server_id":"reviewer"}'  # noqa: E501

E = ("type", "id", "version", "ts")

#: The spec's tables: type -> (class name, {field: default}) beyond the envelope.
SPEC: dict[str, tuple[str, dict[str, Any]]] = {
    "mcp/server/list/req": ("MCPServerListRequest", {"status_filter": ""}),
    "mcp/server/list/resp": ("MCPServerListResponse", {"req_id": "", "servers": []}),
    "mcp/server/register/req": ("MCPServerRegisterRequest", {"config": {}}),
    "mcp/server/register/resp": (
        "MCPServerRegisterResponse",
        {"req_id": "", "ok": False, "server": {}, "error": ""},
    ),
    "mcp/server/unregister/req": ("MCPServerUnregisterRequest", {"server_id": ""}),
    "mcp/server/unregister/resp": (
        "MCPServerUnregisterResponse",
        {"req_id": "", "ok": False, "server_id": ""},
    ),
    "mcp/server/push": ("MCPServerPush", {"server_id": "", "method": "", "params": {}}),
    "mcp/resource/list/req": ("MCPResourceListRequest", {"server_id": "", "cursor": ""}),
    "mcp/resource/list/resp": (
        "MCPResourceListResponse",
        {"req_id": "", "resources": [], "next_cursor": ""},
    ),
    "mcp/resource/read/req": ("MCPResourceReadRequest", {"uri": "", "server_id": ""}),
    "mcp/resource/read/resp": (
        "MCPResourceReadResponse",
        {"req_id": "", "contents": [], "server_id": "", "error": ""},
    ),
    "mcp/resource/subscribe/req": ("MCPResourceSubscribeRequest", {"uri": "", "server_id": ""}),
    "mcp/resource/subscribe/resp": (
        "MCPResourceSubscribeResponse",
        {"req_id": "", "ok": False, "error": ""},
    ),
    "mcp/prompt/list/req": ("MCPPromptListRequest", {"server_id": "", "cursor": ""}),
    "mcp/prompt/list/resp": (
        "MCPPromptListResponse",
        {"req_id": "", "prompts": [], "next_cursor": ""},
    ),
    "mcp/prompt/get/req": (
        "MCPPromptGetRequest",
        {"name": "", "arguments": {}, "server_id": ""},
    ),
    "mcp/prompt/get/resp": (
        "MCPPromptGetResponse",
        {"req_id": "", "description": "", "messages": [], "server_id": "", "error": ""},
    ),
    "mcp/sample/req": (
        "MCPSamplingRequest",
        {
            "server_id": "",
            "mcp_request_id": "",
            "messages": [],
            "model_preferences": {},
            "system_prompt": "",
            "include_context": "none",
            "temperature": 1.0,
            "max_tokens": 1024,
            "stop_sequences": [],
            "metadata": {},
        },
    ),
    "mcp/sample/resp": (
        "MCPSamplingResponse",
        {
            "req_id": "",
            "server_id": "",
            "mcp_request_id": "",
            "role": "assistant",
            "content": {},
            "model": "",
            "stop_reason": "",
            "error": "",
        },
    ),
    "mcp/root/list/req": ("MCPRootsListRequest", {"server_id": "", "mcp_request_id": ""}),
    "mcp/root/list/resp": (
        "MCPRootsListResponse",
        {"req_id": "", "server_id": "", "mcp_request_id": "", "roots": []},
    ),
}


def test_all_21_mcp_types_exist_in_spec_order() -> None:
    assert a2e.MCP_MESSAGE_TYPES == list(SPEC)
    assert len(a2e.MCP_MESSAGE_TYPES) == 21


@pytest.mark.parametrize("type_name", list(SPEC))
def test_message_fields_and_defaults_are_the_specs(type_name: str) -> None:
    class_name, fields = SPEC[type_name]
    cls = getattr(a2e, class_name)
    assert cls is a2e.MESSAGE_TYPES[type_name]
    message = cls()
    obj = to_obj(message)
    assert list(obj)[:4] == list(E)
    assert obj["type"] == type_name
    assert obj["version"] == "1.0"
    assert isinstance(obj["id"], str) and len(obj["id"]) == 32  # uuid4 hex
    assert obj["ts"] == 0.0  # the core reads no clock: the sender stamps it
    assert {k: v for k, v in obj.items() if k not in E} == fields
    assert attrs.fields_dict(cls)["type"].default == type_name
    # two messages never share an id
    assert cls().id != message.id


def test_core_tool_messages_have_the_reference_shapes() -> None:
    assert {k: v for k, v in to_obj(a2e.ToolListRequest()).items() if k not in E} == {
        "filter_kind": "",
        "filter_tags": [],
        "query": "",
        "include_deferred": False,
    }
    assert {k: v for k, v in to_obj(a2e.ToolCallRequest()).items() if k not in E} == {
        "session_id": "",
        "tool_name": "",
        "arguments": {},
        "correlation_id": "",
        "streaming": False,
        # The reference's 30 is replaced by 0, "none of its own": the server's
        # configured timeout applies (the spec's MCPServerConfig.timeout).
        "timeout": 0,
    }
    assert set(to_obj(a2e.ToolCallResponse())) - set(E) == {"req_id", "data", "created_at"}
    assert set(to_obj(a2e.ToolEvent())) - set(E) == {"kind", "req_id", "data", "seq"}
    assert set(to_obj(A2EError())) - set(E) == {
        "req_id",
        "code",
        "message",
        "detail",
        "retryable",
        "capability_name",
    }
    assert to_obj(a2e.Pong(req_id="x"))["req_id"] == "x"


def test_models_have_the_specs_fields() -> None:
    assert set(MCPServerConfig().to_dict()) == {
        "server_id",
        "name",
        "transport",
        "cmd",
        "cwd",
        "env",
        "url",
        "headers",
        "timeout",
        "auto_reconnect",
        "tool_allow_list",
        "resource_allow_list",
    }
    config = MCPServerConfig()
    assert (config.transport, config.timeout, config.auto_reconnect) == ("stdio", 300, True)
    assert set(a2e.MCPServerInfo().to_dict()) == {
        "server_id",
        "name",
        "transport",
        "status",
        "mcp_version",
        "server_name",
        "server_version",
        "tools_count",
        "resources_count",
        "prompts_count",
        "last_ping_ms",
        "error",
        "connected_at",
    }
    assert set(a2e.MCPResource().to_dict()) == {
        "uri",
        "name",
        "description",
        "mime_type",
        "server_id",
        "annotations",
    }
    assert a2e.MCPResourceContent().to_dict() == {
        "uri": "",
        "mime_type": "text/plain",
        "text": "",
        "blob": "",
        "type": "text",
    }
    assert set(a2e.MCPPrompt().to_dict()) == {"name", "description", "server_id", "arguments"}
    assert set(a2e.MCPPromptMessage().to_dict()) == {"role", "content"}
    assert set(a2e.MCPRoot(uri="file:///x").to_dict()) == {"uri", "name"}
    assert [s.value for s in a2e.MCPServerStatus] == [
        "connecting",
        "ready",
        "error",
        "disconnected",
    ]
    assert [t.value for t in a2e.MCPTransport] == ["stdio", "sse", "ws", "http"]


def test_error_codes_and_their_retryable_flags() -> None:
    assert {c.value: c.retryable for c in MCPErrorCode} == {
        "mcp_server_not_found": False,
        "mcp_server_unavailable": True,
        "mcp_tool_not_found": False,
        "mcp_resource_not_found": False,
        "mcp_prompt_not_found": False,
        "mcp_transport_error": True,
        "mcp_protocol_error": False,
        "mcp_sampling_refused": False,
        "mcp_capability_missing": False,
    }
    assert MCPErrorCode.MCP_SERVER_NOT_FOUND.name == "MCP_SERVER_NOT_FOUND"


# The wire examples --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        (REGISTER_REQ, MCPServerRegisterRequest),
        (REGISTER_RESP, MCPServerRegisterResponse),
        (RESOURCE_LIST_REQ, MCPResourceListRequest),
        (PROMPT_GET_REQ, MCPPromptGetRequest),
    ],
)
def test_wire_examples_decode_and_reencode(line: str, cls: type[Any]) -> None:
    message = decode_text(line)
    assert isinstance(message, cls)
    original = json.loads(line)
    again = json.loads(encode(message))
    # every field the example gives comes back as given; absent ones take defaults
    assert {k: again[k] for k in original} == original
    assert decode_text(encode(message)) == message
    assert encode_line(message).endswith(b"\n") and encode_line(message).count(b"\n") == 1


def test_wire_example_register_config_reads_as_the_model() -> None:
    message = decode_text(REGISTER_REQ)
    assert isinstance(message, MCPServerRegisterRequest)
    config = MCPServerConfig.from_dict(message.config)
    assert config.server_id == "fs"
    assert config.cmd == ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    assert config.problems() == []


def _filesystem_like() -> FakeServer:
    return FakeServer(
        tools=[tool(n) for n in ("read_file", "write_file", "list_dir", "search", "info")],
        name="secure-filesystem-server",
    )


def test_wire_example_register_is_answered_as_the_spec_shows() -> None:
    harness = Harness()
    harness.add_server("npx", _filesystem_like())
    replies = harness.send_line(REGISTER_REQ.encode() + b"\n")
    assert len(replies) == 1
    reply = replies[0]
    assert isinstance(reply, MCPServerRegisterResponse)
    example = json.loads(REGISTER_RESP)
    got = to_obj(reply)
    assert got["req_id"] == example["req_id"] == "r1s2t3"
    assert got["ok"] is True and got["error"] == ""
    # the example's server fields, exactly; ours adds the rest of MCPServerInfo
    assert {k: got["server"][k] for k in example["server"]} == example["server"]
    assert got["server"]["server_name"] == "secure-filesystem-server"
    assert got["server"]["mcp_version"] == "2025-11-25"


def test_wire_example_resource_list_is_answered() -> None:
    harness = Harness()
    harness.add_server(
        "docs",
        FakeServer(resources=[{"uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"}]),
    )
    harness.register("docs", "docs")
    reply = harness.send_line(RESOURCE_LIST_REQ.encode() + b"\n")[0]
    assert isinstance(reply, MCPResourceListResponse)
    assert reply.req_id == "x7y8z9"
    assert reply.resources == [
        {
            "uri": "file:///a.txt",
            "name": "a",
            "description": "",
            "mime_type": "text/plain",
            "server_id": "docs",
            "annotations": {},
        }
    ]
    assert reply.next_cursor == ""


def test_wire_example_prompt_get_is_answered() -> None:
    harness = Harness()
    reviewer = FakeServer(
        prompts=[
            {
                "name": "code_review",
                "description": "Review code",
                "arguments": [{"name": "language", "required": True}],
            }
        ]
    )

    def get(server: FakeServer, event: Any) -> dict[str, Any]:
        language = event.params["arguments"]["language"]
        return {
            "description": "Review code",
            "messages": [{"role": "user", "content": text(f"Review this {language} code")}],
        }

    reviewer.handlers["prompts/get"] = get
    harness.add_server("reviewer-cmd", reviewer)
    harness.register("reviewer", "reviewer-cmd")
    reply = harness.send_line(PROMPT_GET_REQ.encode() + b"\r\n")[0]
    assert isinstance(reply, MCPPromptGetResponse)
    assert reply.req_id == "a0b1c2"
    assert reply.server_id == "reviewer"
    assert reply.description == "Review code"
    assert reply.messages == [
        {"role": "user", "content": {"type": "text", "text": "Review this python code"}}
    ]
    assert reply.error == ""
    sent = [m for m in reviewer.received if m.get("method") == "prompts/get"]
    assert sent[0]["params"] == {"name": "code_review", "arguments": {"language": "python"}}


# The codec ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", A2EErrorCode.PARSE_ERROR),
        (b'"a string"', A2EErrorCode.INVALID_MESSAGE),
        (b"[1, 2]", A2EErrorCode.INVALID_MESSAGE),
        (b'{"id": "x"}', A2EErrorCode.INVALID_MESSAGE),
        (b'{"type": 7, "id": "x"}', A2EErrorCode.INVALID_MESSAGE),
        (b'{"type": "ping"}', A2EErrorCode.INVALID_MESSAGE),
        (b'{"type": "ping", "id": ""}', A2EErrorCode.INVALID_MESSAGE),
        (b'{"type": "mcp/call_tool/req", "id": "x"}', A2EErrorCode.INVALID_MESSAGE),
        (b'{"type": "ping", "id": "x", "version": "2.0"}', A2EErrorCode.VERSION_MISMATCH),
        (b'{"type": "ping", "id": "x", "ts": "now"}', A2EErrorCode.SCHEMA_VIOLATION),
        (
            b'{"type": "mcp/server/list/req", "id": "x", "status_filter": null}',
            A2EErrorCode.SCHEMA_VIOLATION,
        ),
        (b'{"type": "tool/call/req", "id": "x", "tool_name": "t"}', A2EErrorCode.SCHEMA_VIOLATION),
        (
            b'{"type": "tool/call/req", "id": "x", "tool_name": "t", "arguments": {}, '
            b'"timeout": true}',
            A2EErrorCode.SCHEMA_VIOLATION,
        ),
        (
            b'{"type": "mcp/sample/resp", "id": "x", "content": []}',
            A2EErrorCode.SCHEMA_VIOLATION,
        ),
        (
            b'{"type": "mcp/resource/list/resp", "id": "x", "resources": [1]}',
            A2EErrorCode.SCHEMA_VIOLATION,
        ),
    ],
)
def test_malformed_input_is_a_precise_error_never_an_exception(raw: bytes, code: str) -> None:
    result = decode_text(raw)
    assert isinstance(result, DecodeError)
    assert result.code == code
    harness = Harness()
    replies = harness.send_line(raw + b"\n")
    assert len(replies) == 1 and isinstance(replies[0], A2EError)
    assert replies[0].code == code
    assert replies[0].retryable is False
    if b'"id": "x"' in raw and code != A2EErrorCode.PARSE_ERROR:
        assert replies[0].req_id == "x"


def test_schema_violation_names_the_field() -> None:
    result = decode({"type": "mcp/resource/read/req", "id": "q", "uri": 5})
    assert isinstance(result, DecodeError)
    assert result.detail == {
        "type": "mcp/resource/read/req",
        "field": "uri",
        "expected": "a string",
        "got": "integer",
    }


def test_unknown_type_is_invalid_message_with_its_type() -> None:
    result = decode({"type": "mcp/connect", "id": "q"})
    assert isinstance(result, DecodeError)
    assert (result.code, result.detail) == ("invalid_message", {"type": "mcp/connect"})


def test_unknown_fields_are_kept_and_written_back() -> None:
    raw = {
        "type": "mcp/resource/read/req",
        "id": "q",
        "uri": "file:///x",
        "x-trace": {"span": 7},
        "priority": 2,
    }
    message = decode(raw)
    assert isinstance(message, a2e.MCPResourceReadRequest)
    assert message.extra == {"x-trace": {"span": 7}, "priority": 2}
    out = to_obj(message)
    assert out["x-trace"] == {"span": 7} and out["priority"] == 2
    assert out["version"] == "1.0" and out["ts"] == 0.0  # tolerant: filled in


def test_integral_floats_are_ints_and_ints_are_floats() -> None:
    message = decode(
        {"type": "tool/call/req", "id": "q", "tool_name": "t", "arguments": {}, "timeout": 5.0}
    )
    assert isinstance(message, a2e.ToolCallRequest) and message.timeout == 5
    message2 = decode({"type": "ping", "id": "q", "ts": 17})
    assert isinstance(message2, a2e.Ping) and message2.ts == 17.0 and isinstance(message2.ts, float)
    bad = decode(
        {"type": "tool/call/req", "id": "q", "tool_name": "t", "arguments": {}, "timeout": 5.5}
    )
    assert isinstance(bad, DecodeError)


def test_host_to_agent_types_from_the_agent_are_refused() -> None:
    harness = Harness()
    replies = harness.send({"type": "mcp/server/push", "id": "p1", "server_id": "x", "method": "m"})
    assert isinstance(replies[0], A2EError)
    assert replies[0].code == "invalid_message" and replies[0].req_id == "p1"


def test_framer_handles_chunks_crlf_blank_lines_and_eof() -> None:
    framer = A2EFramer()
    stream = (
        b'{"type":"ping","id":"a"}\r\n\n  \n{"type":"ping",'
        + b'"id":"b"}\n{"type":"ping","id":"c"}'
    )
    got: list[Any] = []
    for i in range(0, len(stream), 5):
        got += framer.feed(stream[i : i + 5])
    got += framer.feed(b"")
    assert [m.id for m in got] == ["a", "b", "c"]


def test_oversized_line_is_an_error_and_the_stream_goes_on() -> None:
    framer = A2EFramer(max_message_size=100)
    got = framer.feed(b'{"type":"ping","id":"' + b"x" * 200 + b'"}\n{"type":"ping","id":"ok"}\n')
    assert isinstance(got[0], DecodeError) and got[0].code == "invalid_message"
    assert got[1].id == "ok"


def test_ping_gets_pong() -> None:
    harness = Harness()
    reply = harness.request(a2e.Ping)
    assert isinstance(reply, a2e.Pong)
    assert reply.ts == harness.now  # stamped with the injected clock


def test_message_constructed_with_wrong_type_is_refused() -> None:
    with pytest.raises(ValueError):
        a2e.Ping(type="pong")
