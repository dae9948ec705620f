"""The bridge host, sans-IO: scripted MCP servers over real NDJSON bytes, a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from sansio_mcp import MCPError
from sansio_mcp_apps.a2e import (
    A2EError,
    BridgeHost,
    ConnectServer,
    DisconnectServer,
    ElicitRequest,
    ElicitResponse,
    HandshakeRequest,
    HandshakeResponse,
    MCPPromptGetRequest,
    MCPPromptGetResponse,
    MCPPromptListRequest,
    MCPPromptListResponse,
    MCPResourceListRequest,
    MCPResourceListResponse,
    MCPResourceReadRequest,
    MCPResourceReadResponse,
    MCPResourceSubscribeRequest,
    MCPResourceSubscribeResponse,
    MCPRootsListRequest,
    MCPRootsListResponse,
    MCPSamplingRequest,
    MCPSamplingResponse,
    MCPServerListRequest,
    MCPServerListResponse,
    MCPServerPush,
    MCPServerRegisterRequest,
    MCPServerRegisterResponse,
    MCPServerUnregisterRequest,
    MCPServerUnregisterResponse,
    ToolCallRequest,
    ToolCallResponse,
    ToolEvent,
    ToolListRequest,
)

from .helpers import FakeServer, Harness, text, tool

# Registration and status ---------------------------------------------------------------


def test_register_fills_server_info_from_the_handshake() -> None:
    h = Harness()
    h.add_server(
        "srv", FakeServer(tools=[tool("a"), tool("b")], resources=[], prompts=[], name="s")
    )
    reply = h.register("one", "srv", name="first")
    assert isinstance(reply, MCPServerRegisterResponse) and reply.ok and reply.error == ""
    info = reply.server
    assert info["server_id"] == "one" and info["name"] == "first"
    assert info["status"] == "ready" and info["transport"] == "stdio"
    assert (info["server_name"], info["server_version"]) == ("s", "9.9")
    assert info["mcp_version"] == "2025-11-25"
    assert (info["tools_count"], info["resources_count"], info["prompts_count"]) == (2, 0, 0)
    assert info["connected_at"] == h.now and info["error"] == ""


def test_register_goes_through_connecting() -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[]))
    h.hold_connect.add("srv")
    h.send(
        {"type": "mcp/server/register/req", "id": "r", "config": {"server_id": "x", "cmd": ["srv"]}}
    )
    listing = h.request(MCPServerListRequest)
    assert isinstance(listing, MCPServerListResponse)
    assert [s["status"] for s in listing.servers] == ["connecting"]
    h.hold_connect.clear()
    action = h.pending_connects.pop()
    h._connect(action)
    h.run()
    assert h.reply_to("r").ok  # type: ignore[attr-defined]
    assert h.host.server_info("x").status == "ready"  # type: ignore[union-attr]


def test_server_id_is_auto_hex8_when_absent() -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[]))
    reply = h.request(MCPServerRegisterRequest, config={"cmd": ["srv"]})
    server_id = reply.server["server_id"]  # type: ignore[attr-defined]
    assert len(server_id) == 8 and int(server_id, 16) >= 0


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"server_id": "a__b", "cmd": ["srv"]}, "config.server_id"),
        ({"server_id": "ends_", "cmd": ["srv"]}, "config.server_id"),
        ({"server_id": "has space", "cmd": ["srv"]}, "config.server_id"),
        ({"server_id": "x", "transport": "carrier-pigeon", "cmd": ["srv"]}, "config.transport"),
        ({"server_id": "x", "cmd": []}, "config.cmd"),
        ({"server_id": "x", "transport": "http", "url": "ftp://h/"}, "config.url"),
        ({"server_id": "x", "transport": "ws", "url": "http://h/"}, "config.url"),
        ({"server_id": "x", "cmd": ["srv"], "timeout": 0}, "config.timeout"),
        ({"server_id": "x", "cmd": "srv"}, "config.cmd"),
        ({"server_id": "x", "cmd": ["srv"], "env": {"A": 1}}, "config.env"),
        ({"server_id": "x", "cmd": ["srv"], "protocol_version": "1999"}, "config.protocol_version"),
        (
            {
                "server_id": "x",
                "transport": "sse",
                "url": "http://h/sse",
                "protocol_version": "modern",
            },
            "config.protocol_version",
        ),
    ],
)
def test_invalid_configs_are_refused(config: dict[str, Any], field: str) -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[]))
    reply = h.request(MCPServerRegisterRequest, config=config)
    assert isinstance(reply, MCPServerRegisterResponse)
    assert not reply.ok and field in str(reply.extra.get("detail")) + reply.error
    assert reply.extra["error_code"] == "schema_violation"
    assert h.host.server_infos() == []
    assert not [a for a in h.actions_seen if isinstance(a, ConnectServer)]


def test_duplicate_server_ids_are_refused() -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[]))
    assert h.register("dup", "srv").ok  # type: ignore[attr-defined]
    reply = h.register("dup", "srv")
    assert isinstance(reply, MCPServerRegisterResponse) and not reply.ok
    assert "already registered" in reply.error
    assert len(h.host.server_infos()) == 1


def test_registration_that_cannot_connect_fails_and_is_not_kept() -> None:
    h = Harness()
    reply = h.register("nope", "no-such-binary")
    assert isinstance(reply, MCPServerRegisterResponse) and not reply.ok
    assert reply.extra["error_code"] == "mcp_transport_error" and reply.extra["retryable"]
    assert reply.server["status"] == "error" and "no-such-binary" in reply.server["error"]
    assert h.host.server_infos() == []


def test_registration_with_no_common_version_is_a_protocol_error() -> None:
    h = Harness()
    h.add_server("old", FakeServer(tools=[], versions=("2024-11-05",)))
    reply = h.register("old", "old", protocol_version="2025-06-18")
    assert isinstance(reply, MCPServerRegisterResponse) and not reply.ok
    assert reply.extra["error_code"] == "mcp_protocol_error"
    assert any(isinstance(a, DisconnectServer) for a in h.actions_seen)


def test_auto_mode_falls_back_to_the_handshake_on_a_legacy_server() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("t")]))
    reply = h.register("s", "srv")
    assert reply.server["mcp_version"] == "2025-11-25"  # type: ignore[attr-defined]
    assert fake.received[0]["method"] == "server/discover"
    assert "initialize" in [m.get("method") for m in fake.received]


def test_list_servers_with_a_status_filter() -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[]))
    h.register("a", "srv")
    h.register("b", "srv")
    h.kill("b")
    ready = h.request(MCPServerListRequest, status_filter="ready")
    assert [s["server_id"] for s in ready.servers] == ["a"]  # type: ignore[attr-defined]
    down = h.request(MCPServerListRequest, status_filter="disconnected")
    assert [s["server_id"] for s in down.servers] == ["b"]  # type: ignore[attr-defined]
    bad = h.request(MCPServerListRequest, status_filter="sleepy")
    assert isinstance(bad, A2EError) and bad.code == "schema_violation"


def test_unregister_removes_the_server_and_its_tools() -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[tool("t")]))
    h.register("s", "srv")
    assert len(h.request(ToolListRequest).tools) == 1  # type: ignore[attr-defined]
    reply = h.request(MCPServerUnregisterRequest, server_id="s")
    assert isinstance(reply, MCPServerUnregisterResponse) and reply.ok and reply.server_id == "s"
    assert h.request(ToolListRequest).tools == []  # type: ignore[attr-defined]
    assert h.host.server_infos() == []
    assert isinstance(h.actions_seen[-1], DisconnectServer) or any(
        isinstance(a, DisconnectServer) for a in h.actions_seen
    )
    again = h.request(MCPServerUnregisterRequest, server_id="s")
    assert isinstance(again, MCPServerUnregisterResponse) and not again.ok
    assert again.extra["error_code"] == "mcp_server_not_found"


def test_unregister_fails_pending_calls() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("hang")]))
    fake.handlers["tools/call"] = lambda server, event: None
    h.register("s", "srv")
    h.send(ToolCallRequest(id="c1", tool_name="s__hang", arguments={}))
    h.request(MCPServerUnregisterRequest, server_id="s")
    result = h.reply_to("c1")
    assert isinstance(result, ToolCallResponse)
    assert result.data["success"] is False and result.data["error_code"] == "mcp_transport_error"


# Tools -------------------------------------------------------------------------------------


def test_tools_are_namespaced_with_source_mcp_and_schemas() -> None:
    h = Harness()
    schema = {
        "properties": {
            "path": {"type": "string", "description": "where"},
            "n": {"type": ["integer", "null"]},
        },
        "required": ["path"],
    }
    fake = FakeServer(
        tools=[
            {
                **tool("read", **schema),
                "outputSchema": {"type": "object"},
                "annotations": {"idempotentHint": True},
            },
            tool("write"),
            tool("x"),
        ],
        page_size=2,
    )
    h.add_server("srv", fake)
    h.register("fs", "srv")
    tools = h.request(ToolListRequest).tools  # type: ignore[attr-defined]
    assert [t["name"] for t in tools] == ["fs__read", "fs__write", "fs__x"]  # across pages
    read = tools[0]
    assert read["source"] == "mcp" and read["server_id"] == "fs" and read["mcp_name"] == "read"
    assert read["input_schema"] == {"type": "object", **schema}
    assert read["output_schema"] == {"type": "object"}
    assert read["idempotent"] is True
    assert read["tags"] == ["mcp", "fs", "read"]
    assert read["input_parameters"] == [
        {
            "name": "path",
            "type": "string",
            "description": "where",
            "required": True,
            "enum": [],
            "properties": {},
        },
        {
            "name": "n",
            "type": "integer|null",
            "description": "",
            "required": False,
            "enum": [],
            "properties": {},
        },
    ]


def test_tool_list_filters() -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[tool("alpha"), tool("beta")]))
    h.register("s", "srv")
    names = lambda **f: [t["name"] for t in h.request(ToolListRequest, **f).tools]  # type: ignore[attr-defined]  # noqa: E731
    assert names(query="ALP") == ["s__alpha"]
    assert names(filter_tags=["mcp", "beta"]) == ["s__beta"]
    assert names(filter_kind="mcp") == ["s__alpha", "s__beta"]
    assert names(filter_kind="builtin") == []


def test_tool_allow_list_is_enforced_on_listing_and_calling() -> None:
    h = Harness()
    fake = h.add_server(
        "srv", FakeServer(tools=[tool("read_file"), tool("read_dir"), tool("delete")])
    )
    reply = h.register("fs", "srv", tool_allow_list=["read_*"])
    assert reply.server["tools_count"] == 2  # type: ignore[attr-defined]
    names = [t["name"] for t in h.request(ToolListRequest).tools]  # type: ignore[attr-defined]
    assert names == ["fs__read_file", "fs__read_dir"]
    denied = h.request(ToolCallRequest, tool_name="fs__delete", arguments={})
    assert isinstance(denied, ToolCallResponse)
    assert denied.data["error_code"] == "mcp_tool_not_found"
    assert "allow_list" in denied.data["error"]
    assert not [m for m in fake.received if m.get("method") == "tools/call"]


def test_tool_call_success_error_and_duration() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("add"), tool("boom")]))

    def call(server: FakeServer, event: Any) -> Any:
        if event.params["name"] == "boom":
            return {"content": [text("it broke")], "isError": True}
        a, b = event.params["arguments"]["a"], event.params["arguments"]["b"]
        return {"content": [text(str(a + b))], "structuredContent": {"sum": a + b}}

    fake.handlers["tools/call"] = call
    h.register("m", "srv")
    ok = h.request(ToolCallRequest, tool_name="m__add", arguments={"a": 1, "b": 2})
    assert isinstance(ok, ToolCallResponse)
    assert ok.data == {
        "success": True,
        "tool_name": "m__add",
        "data": {"content": [text("3")], "structuredContent": {"sum": 3}},
        "summary": "3",
        "truncated": False,
        "exit_code": None,
        "error": "",
        "error_code": "",
        "duration_ms": 0.0,
        "events": [],
    }
    assert ok.created_at == h.now
    call_sent = next(m for m in fake.received if m.get("method") == "tools/call")
    assert call_sent["params"]["name"] == "add"  # the MCP name, not the namespaced one
    assert call_sent["params"]["arguments"] == {"a": 1, "b": 2}
    bad = h.request(ToolCallRequest, tool_name="m__boom", arguments={})
    assert bad.data["success"] is False  # type: ignore[attr-defined]
    assert (bad.data["error"], bad.data["error_code"]) == ("it broke", "tool_error")  # type: ignore[attr-defined]


def test_tool_call_mcp_error_is_a_protocol_error() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("t")]))
    fake.handlers["tools/call"] = lambda s, e: MCPError(-32602, "bad arguments")
    h.register("m", "srv")
    reply = h.request(ToolCallRequest, tool_name="m__t", arguments={})
    assert reply.data["error_code"] == "mcp_protocol_error"  # type: ignore[attr-defined]
    assert reply.data["detail"]["mcp_error"]["code"] == -32602  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["nope__t", "plain", "m__missing", "__t", "m__"])
def test_unknown_tools(name: str) -> None:
    h = Harness()
    h.add_server("srv", FakeServer(tools=[tool("t")]))
    h.register("m", "srv")
    reply = h.request(ToolCallRequest, tool_name=name, arguments={})
    assert isinstance(reply, ToolCallResponse)
    assert reply.data["error_code"] == "mcp_tool_not_found"
    assert reply.data["retryable"] is False


def test_tool_call_times_out_per_server_timeout() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("hang")]))
    fake.handlers["tools/call"] = lambda s, e: None
    h.register("m", "srv", timeout=5)
    h.send(ToolCallRequest(id="c", tool_name="m__hang", arguments={}, timeout=30))
    assert h.host.next_deadline() == h.now + 5  # min(call timeout, server timeout)
    h.advance(5)
    reply = h.reply_to("c")
    assert isinstance(reply, ToolCallResponse)
    assert reply.data["error_code"] == "timeout" and reply.data["retryable"] is True
    assert reply.data["duration_ms"] == 5000.0
    assert any(m.get("method") == "notifications/cancelled" for m in fake.received)


def test_progress_of_a_streaming_call_becomes_tool_events_and_pushes() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("slow")]))
    fake.handlers["tools/call"] = lambda s, e: None
    h.register("m", "srv")
    h.send(ToolCallRequest(id="c", tool_name="m__slow", arguments={}, streaming=True))
    held = fake.held[0]
    assert held.progress_token is not None
    conn = h.conn_of("m")
    for step in (1, 2):
        fake.session.send_progress(held.request_id, step, 2, f"step {step}")  # type: ignore[union-attr]
        h._flush(conn)
        h.run()
    h.answer_held("m", {"content": [text("done")]})
    events = h.of_type(ToolEvent)
    assert [(e.req_id, e.kind, e.seq, e.data["progress"]) for e in events] == [
        ("c", "progress", 1, 1),
        ("c", "progress", 2, 2),
    ]
    assert events[0].data == {"progress": 1, "total": 2, "message": "step 1", "server_id": "m"}
    pushes = [p for p in h.of_type(MCPServerPush) if p.method == "notifications/progress"]
    assert len(pushes) == 2 and pushes[0].params["progress"] == 1
    assert h.reply_to("c").data["success"] is True  # type: ignore[attr-defined]


def test_a_call_that_is_not_streaming_asks_for_no_progress() -> None:
    """Without ``streaming`` the agent wants no events, so the server is not asked for
    progress (no ``_meta.progressToken``): it reports none, and there is no event or push."""
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("slow")]))
    fake.handlers["tools/call"] = lambda s, e: None
    h.register("m", "srv")
    h.send(ToolCallRequest(id="c", tool_name="m__slow", arguments={"x": 1}))
    held = fake.held[0]
    assert held.progress_token is None
    sent = next(m for m in fake.received if m.get("method") == "tools/call")
    assert sent["params"] == {"name": "slow", "arguments": {"x": 1}}
    h.answer_held("m", {"content": [text("done")]})
    assert h.reply_to("c").data["success"] is True  # type: ignore[attr-defined]
    assert not h.of_type(ToolEvent)
    assert not [p for p in h.of_type(MCPServerPush) if p.method == "notifications/progress"]


def test_tools_list_changed_resyncs_and_is_pushed() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("a")]))
    h.register("m", "srv")
    fake.tools.append(tool("b"))
    h.server_push("m", lambda s: s.send_list_changed("tools"))
    assert [p.method for p in h.of_type(MCPServerPush)] == ["notifications/tools/list_changed"]
    names = [t["name"] for t in h.request(ToolListRequest).tools]  # type: ignore[attr-defined]
    assert names == ["m__a", "m__b"]
    assert h.host.server_info("m").tools_count == 2  # type: ignore[union-attr]


def test_resources_and_prompts_list_changed_update_counts() -> None:
    h = Harness()
    fake = h.add_server("srv", FakeServer(resources=[], prompts=[]))
    h.register("m", "srv")
    fake.resources.append({"uri": "mem://1", "name": "one"})
    fake.prompts.append({"name": "p"})
    h.server_push("m", lambda s: s.send_list_changed("resources"))
    h.server_push("m", lambda s: s.send_list_changed("prompts"))
    info = h.host.server_info("m")
    assert (info.resources_count, info.prompts_count) == (1, 1)  # type: ignore[union-attr]


def test_notifications_are_pushed() -> None:
    h = Harness()
    h.add_server(
        "srv",
        FakeServer(
            resources=[{"uri": "mem://r", "name": "r"}],
            capabilities={"logging": {}, "resources": {"subscribe": True}},
        ),
    )
    h.register("m", "srv")
    h.request(MCPResourceSubscribeRequest, uri="mem://r")
    h.server_push("m", lambda s: s.send_log_message("warning", {"x": 1}, logger="l"))
    h.server_push("m", lambda s: s.send_resource_updated("mem://r"))
    pushes = h.of_type(MCPServerPush)
    assert [(p.server_id, p.method) for p in pushes] == [
        ("m", "notifications/message"),
        ("m", "notifications/resources/updated"),
    ]
    assert pushes[0].params == {"level": "warning", "data": {"x": 1}, "logger": "l"}


# Resources ---------------------------------------------------------------------------------


def _two_resource_servers(h: Harness) -> tuple[FakeServer, FakeServer]:
    one = h.add_server(
        "one",
        FakeServer(
            resources=[{"uri": f"one://{i}", "name": f"r{i}"} for i in range(5)],
            templates=[{"uriTemplate": "one://t/{id}", "name": "t"}],
            page_size=2,
        ),
    )
    two = h.add_server(
        "two",
        FakeServer(resources=[{"uri": "two://x", "name": "x", "annotations": {"priority": 1}}]),
    )
    h.register("a", "one")
    h.register("b", "two")
    return one, two


def test_resource_listing_pages_through_servers_with_an_opaque_cursor() -> None:
    h = Harness()
    _two_resource_servers(h)
    pages: list[list[str]] = []
    cursor = ""
    for _ in range(10):
        reply = h.request(MCPResourceListRequest, cursor=cursor)
        assert isinstance(reply, MCPResourceListResponse)
        pages.append([r["uri"] for r in reply.resources])
        cursor = reply.next_cursor
        if not cursor:
            break
        assert "one://" not in cursor  # opaque
    assert pages == [
        ["one://0", "one://1"],
        ["one://2", "one://3"],
        ["one://4", "one://t/{id}", "two://x"],
    ]
    listing = h.request(MCPResourceListRequest, server_id="b")
    assert listing.resources == [  # type: ignore[attr-defined]
        {
            "uri": "two://x",
            "name": "x",
            "description": "",
            "mime_type": "",
            "server_id": "b",
            "annotations": {"priority": 1},
        }
    ]


def test_resource_templates_are_marked() -> None:
    h = Harness()
    _two_resource_servers(h)
    everything = []
    cursor = ""
    while True:
        reply = h.request(MCPResourceListRequest, server_id="a", cursor=cursor)
        everything += reply.resources  # type: ignore[attr-defined]
        cursor = reply.next_cursor  # type: ignore[attr-defined]
        if not cursor:
            break
    template = [r for r in everything if "uri_template" in r]
    assert template == [
        {
            "uri": "one://t/{id}",
            "name": "t",
            "description": "",
            "mime_type": "",
            "server_id": "a",
            "annotations": {},
            "uri_template": "one://t/{id}",
        }
    ]


@pytest.mark.parametrize("cursor", ["garbage", "WyJ4Il0", "e30"])
def test_foreign_cursors_are_refused(cursor: str) -> None:
    h = Harness()
    _two_resource_servers(h)
    reply = h.request(MCPResourceListRequest, cursor=cursor)
    assert isinstance(reply, A2EError) and reply.code == "schema_violation"


def test_cursor_of_a_removed_server_and_scope_mismatch() -> None:
    h = Harness()
    _two_resource_servers(h)
    first = h.request(MCPResourceListRequest)
    cursor = first.next_cursor  # type: ignore[attr-defined]
    mismatch = h.request(MCPResourceListRequest, cursor=cursor, server_id="b")
    assert isinstance(mismatch, A2EError) and mismatch.code == "schema_violation"
    h.request(MCPServerUnregisterRequest, server_id="a")
    gone = h.request(MCPResourceListRequest, cursor=cursor)
    assert isinstance(gone, A2EError) and gone.code == "mcp_server_not_found"


def test_listing_skips_unavailable_servers_and_says_so() -> None:
    h = Harness()
    _two_resource_servers(h)
    h.kill("a")
    reply = h.request(MCPResourceListRequest)
    assert [r["uri"] for r in reply.resources] == ["two://x"]  # type: ignore[attr-defined]
    assert reply.extra["skipped_servers"] == ["a"]
    one = h.request(MCPResourceListRequest, server_id="a")
    assert isinstance(one, A2EError) and one.code == "mcp_server_unavailable" and one.retryable
    unknown = h.request(MCPResourceListRequest, server_id="zz")
    assert isinstance(unknown, A2EError) and unknown.code == "mcp_server_not_found"


def test_read_is_routed_by_uri_and_by_template() -> None:
    h = Harness()
    one, _two = _two_resource_servers(h)
    reply = h.request(MCPResourceReadRequest, uri="two://x")
    assert isinstance(reply, MCPResourceReadResponse) and reply.server_id == "b"
    assert reply.contents == [
        {"uri": "two://x", "mime_type": "text/plain", "text": "hi", "blob": "", "type": "text"}
    ]
    templated = h.request(MCPResourceReadRequest, uri="one://t/42")
    assert templated.server_id == "a"  # type: ignore[attr-defined]
    assert [m["params"]["uri"] for m in one.received if m.get("method") == "resources/read"] == [
        "one://t/42"
    ]


def test_unknown_and_ambiguous_uris_are_not_found_never_the_first_server() -> None:
    h = Harness()
    first = h.add_server("x", FakeServer(resources=[{"uri": "same://r", "name": "r"}]))
    second = h.add_server("y", FakeServer(resources=[{"uri": "same://r", "name": "r"}]))
    h.register("x", "x")
    h.register("y", "y")
    for uri, candidates in (("same://r", ["x", "y"]), ("other://r", [])):
        reply = h.request(MCPResourceReadRequest, uri=uri)
        assert isinstance(reply, MCPResourceReadResponse)
        assert reply.extra["error_code"] == "mcp_resource_not_found"
        assert reply.extra["detail"]["candidates"] == candidates
        assert reply.contents == [] and reply.error
    reads = [m for s in (first, second) for m in s.received if m.get("method") == "resources/read"]
    assert reads == []
    hinted = h.request(MCPResourceReadRequest, uri="same://r", server_id="y")
    assert hinted.server_id == "y" and hinted.error == ""  # type: ignore[attr-defined]
    missing = h.request(MCPResourceReadRequest, uri="same://r", server_id="zz")
    assert missing.extra["error_code"] == "mcp_server_not_found"


def test_server_resource_not_found_maps_to_the_code() -> None:
    h = Harness()
    fake = h.add_server("x", FakeServer(resources=[{"uri": "m://gone", "name": "g"}]))
    fake.handlers["resources/read"] = lambda s, e: MCPError(-32002, "Resource not found")
    h.register("x", "x")
    reply = h.request(MCPResourceReadRequest, uri="m://gone")
    assert reply.extra["error_code"] == "mcp_resource_not_found"
    assert reply.error == "Resource not found"  # type: ignore[attr-defined]


def test_resource_allow_list_applies_to_listing_reading_subscribing_by_uri() -> None:
    h = Harness()
    fake = h.add_server(
        "x",
        FakeServer(
            resources=[
                {"uri": "file:///pub/a", "name": "secret-name-does-not-matter"},
                {"uri": "file:///priv/b", "name": "pub"},
            ],
            templates=[{"uriTemplate": "file:///priv/{x}", "name": "t"}],
        ),
    )
    reply = h.register("x", "x", resource_allow_list=["file:///pub/*"])
    assert reply.server["resources_count"] == 1  # type: ignore[attr-defined]
    listed = h.request(MCPResourceListRequest).resources  # type: ignore[attr-defined]
    assert [r["uri"] for r in listed] == ["file:///pub/a"]
    for cls in (MCPResourceReadRequest, MCPResourceSubscribeRequest):
        denied = h.request(cls, uri="file:///priv/b", server_id="x")
        assert denied.extra["error_code"] == "mcp_resource_not_found"
    assert h.request(MCPResourceReadRequest, uri="file:///pub/a").error == ""  # type: ignore[attr-defined]
    assert not [m for m in fake.received if m.get("params", {}).get("uri") == "file:///priv/b"]


def test_subscribe_on_a_handshake_server() -> None:
    h = Harness()
    fake = h.add_server("x", FakeServer(resources=[{"uri": "m://c", "name": "c"}]))
    h.register("x", "x")
    reply = h.request(MCPResourceSubscribeRequest, uri="m://c")
    assert isinstance(reply, MCPResourceSubscribeResponse) and reply.ok and reply.error == ""
    assert fake.subscribed == ["m://c"]
    h.server_push("x", lambda s: s.send_resource_updated("m://c"))
    push = h.of_type(MCPServerPush)[-1]
    assert (push.method, push.params) == ("notifications/resources/updated", {"uri": "m://c"})


def test_subscribe_without_the_capability() -> None:
    h = Harness()
    h.add_server(
        "x",
        FakeServer(resources=[{"uri": "m://c", "name": "c"}], capabilities={"resources": {}}),
    )
    h.register("x", "x")
    reply = h.request(MCPResourceSubscribeRequest, uri="m://c")
    assert isinstance(reply, MCPResourceSubscribeResponse) and not reply.ok
    assert reply.extra["error_code"] == "mcp_capability_missing"


def test_subscriptions_are_renewed_after_a_reconnect() -> None:
    h = Harness()
    fake = h.add_server("x", FakeServer(resources=[{"uri": "m://c", "name": "c"}]))
    h.register("x", "x")
    h.request(MCPResourceSubscribeRequest, uri="m://c")
    h.kill("x")
    h.advance_to_deadline()
    assert h.host.server_info("x").status == "ready"  # type: ignore[union-attr]
    assert fake.subscribed == ["m://c", "m://c"]


# Prompts -----------------------------------------------------------------------------------


def test_prompts_are_listed_across_servers_and_routed_by_name() -> None:
    h = Harness()
    a = h.add_server(
        "a",
        FakeServer(
            prompts=[
                {
                    "name": "review",
                    "description": "r",
                    "arguments": [{"name": "code", "required": True}],
                },
                {"name": "shared"},
            ]
        ),
    )
    h.add_server("b", FakeServer(prompts=[{"name": "shared"}, {"name": "haiku"}]))
    h.register("pa", "a")
    h.register("pb", "b")
    listing = h.request(MCPPromptListRequest)
    assert isinstance(listing, MCPPromptListResponse) and listing.next_cursor == ""
    assert [(p["server_id"], p["name"]) for p in listing.prompts] == [
        ("pa", "review"),
        ("pa", "shared"),
        ("pb", "shared"),
        ("pb", "haiku"),
    ]
    assert listing.prompts[0]["arguments"] == [
        {"name": "code", "description": "", "required": True}
    ]
    reply = h.request(
        MCPPromptGetRequest, name="review", arguments={"code": "x", "n": 3, "f": None}
    )
    assert isinstance(reply, MCPPromptGetResponse) and reply.server_id == "pa"
    assert reply.messages == [{"role": "user", "content": text("prompt review")}]
    sent = next(m for m in a.received if m.get("method") == "prompts/get")["params"]
    assert sent == {"name": "review", "arguments": {"code": "x", "n": "3", "f": "null"}}
    ambiguous = h.request(MCPPromptGetRequest, name="shared")
    assert ambiguous.extra["error_code"] == "mcp_prompt_not_found"
    assert ambiguous.extra["detail"]["candidates"] == ["pa", "pb"]
    routed = h.request(MCPPromptGetRequest, name="shared", server_id="pb")
    assert routed.server_id == "pb" and routed.error == ""  # type: ignore[attr-defined]
    unknown = h.request(MCPPromptGetRequest, name="nope")
    assert unknown.extra["error_code"] == "mcp_prompt_not_found"
    unknown_on = h.request(MCPPromptGetRequest, name="nope", server_id="pa")
    assert unknown_on.extra["error_code"] == "mcp_prompt_not_found"
    only_server = h.request(MCPPromptListRequest, server_id="pb")
    assert [p["name"] for p in only_server.prompts] == ["shared", "haiku"]  # type: ignore[attr-defined]


# Sampling, roots, elicitation ------------------------------------------------------------


def _sampling_server(h: Harness) -> FakeServer:
    fake = h.add_server("x", FakeServer(tools=[tool("ask")]))
    fake.handlers["tools/call"] = lambda s, e: None
    h.register("x", "x")
    return fake


CREATE = {
    "messages": [{"role": "user", "content": text("hi")}],
    "maxTokens": 50,
    "systemPrompt": "be brief",
    "temperature": 0.2,
    "stopSequences": ["\n"],
    "includeContext": "thisServer",
    "modelPreferences": {"hints": [{"name": "claude"}]},
    "metadata": {"k": "v"},
}


def test_sampling_goes_to_the_agent_and_back() -> None:
    h = Harness()
    fake = _sampling_server(h)
    wire_id = h.server_push("x", lambda s: s.send_request("sampling/createMessage", CREATE))
    request = h.of_type(MCPSamplingRequest)[-1]
    assert (request.server_id, request.mcp_request_id) == ("x", str(wire_id))
    assert request.messages == CREATE["messages"]
    assert (request.max_tokens, request.temperature, request.system_prompt) == (50, 0.2, "be brief")
    assert request.stop_sequences == ["\n"] and request.include_context == "thisServer"
    assert request.model_preferences == CREATE["modelPreferences"] and request.metadata == {
        "k": "v"
    }
    h.send(
        MCPSamplingResponse(
            req_id=request.id,
            server_id="x",
            mcp_request_id=request.mcp_request_id,
            content=text("hello"),
            model="m1",
            stop_reason="endTurn",
        )
    )
    h._flush(h.conn_of("x"))
    assert fake.answers[wire_id] == {
        "role": "assistant",
        "content": text("hello"),
        "model": "m1",
        "stopReason": "endTurn",
    }


@pytest.mark.parametrize("how", ["error-field", "a2e-error"])
def test_sampling_refused(how: str) -> None:
    h = Harness()
    fake = _sampling_server(h)
    wire_id = h.server_push("x", lambda s: s.send_request("sampling/createMessage", CREATE))
    request = h.of_type(MCPSamplingRequest)[-1]
    if how == "error-field":
        h.send(MCPSamplingResponse(req_id=request.id, error="no LLM calls for you"))
    else:
        h.send(A2EError(req_id=request.id, code="unauthorized", message="no"))
    h._flush(h.conn_of("x"))
    error = fake.answers[wire_id]
    assert isinstance(error, MCPError) and error.code == -1
    assert "refused" in error.message


def test_sample_response_routed_by_server_and_mcp_id_without_req_id() -> None:
    h = Harness()
    fake = _sampling_server(h)
    wire_id = h.server_push("x", lambda s: s.send_request("sampling/createMessage", CREATE))
    request = h.of_type(MCPSamplingRequest)[-1]
    h.send(
        MCPSamplingResponse(
            server_id="x", mcp_request_id=request.mcp_request_id, content=text("ok")
        )
    )
    h._flush(h.conn_of("x"))
    assert fake.answers[wire_id]["content"] == text("ok")


def test_invalid_and_late_sample_responses() -> None:
    h = Harness()
    fake = _sampling_server(h)
    wire_id = h.server_push("x", lambda s: s.send_request("sampling/createMessage", CREATE))
    request = h.of_type(MCPSamplingRequest)[-1]
    replies = h.send(MCPSamplingResponse(req_id=request.id, content={"type": "video"}))
    assert isinstance(replies[-1], A2EError) and replies[-1].code == "schema_violation"
    h._flush(h.conn_of("x"))
    assert isinstance(fake.answers[wire_id], MCPError)
    late = h.send(MCPSamplingResponse(req_id=request.id, content=text("too late")))
    assert isinstance(late[-1], A2EError) and late[-1].code == "invalid_message"


def test_sampling_request_expires_after_the_server_timeout() -> None:
    h = Harness()
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x", timeout=7)
    wire_id = h.server_push("x", lambda s: s.send_request("sampling/createMessage", CREATE))
    h.advance(7)
    h._flush(h.conn_of("x"))
    assert isinstance(fake.answers[wire_id], MCPError)


def test_agent_disconnect_refuses_pending_requests() -> None:
    h = Harness()
    fake = _sampling_server(h)
    wire_id = h.server_push("x", lambda s: s.send_request("sampling/createMessage", CREATE))
    h.host.receive_agent_data(b"", h.now)
    h.run()
    assert isinstance(fake.answers[wire_id], MCPError)
    second = h.server_push("x", lambda s: s.send_request("sampling/createMessage", CREATE))
    assert isinstance(fake.answers[second], MCPError)  # refused at once: no agent


def test_configured_roots_are_answered_at_once() -> None:
    h = Harness(roots=[{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}])
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x")
    init = next(m for m in fake.received if m.get("method") == "initialize")
    assert init["params"]["capabilities"]["roots"] == {"listChanged": True}
    assert "sampling" in init["params"]["capabilities"]
    assert "elicitation" not in init["params"]["capabilities"]
    before = len(h.inbox)
    wire_id = h.server_push("x", lambda s: s.send_request("roots/list"))
    assert len(h.inbox) == before  # the agent was not asked
    assert fake.answers[wire_id] == {
        "roots": [{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]
    }


def test_without_configured_roots_the_agent_is_asked() -> None:
    h = Harness()
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x")
    wire_id = h.server_push("x", lambda s: s.send_request("roots/list"))
    ask = h.of_type(MCPRootsListRequest)[-1]
    assert (ask.server_id, ask.mcp_request_id) == ("x", str(wire_id))
    h.send(
        MCPRootsListResponse(
            req_id=ask.id,
            server_id="x",
            mcp_request_id=ask.mcp_request_id,
            roots=[{"uri": "file:///agent", "name": "mine"}],
        )
    )
    h._flush(h.conn_of("x"))
    assert fake.answers[wire_id] == {"roots": [{"uri": "file:///agent", "name": "mine"}]}


def test_agent_sets_roots_unsolicited_and_servers_are_told() -> None:
    h = Harness()
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x")
    h.send(MCPRootsListResponse(roots=[{"uri": "file:///new"}]))
    h._flush(h.conn_of("x"))
    assert fake.received[-1] == {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
    wire_id = h.server_push("x", lambda s: s.send_request("roots/list"))
    assert fake.answers[wire_id] == {"roots": [{"uri": "file:///new"}]}
    bad = h.send(MCPRootsListResponse(roots=[{"uri": "http://not-a-file"}]))
    assert isinstance(bad[-1], A2EError) and bad[-1].code == "schema_violation"


def test_roots_must_be_file_uris() -> None:
    with pytest.raises(ValueError):
        BridgeHost(roots=[{"uri": "https://example.com"}])


def test_elicitation_is_off_unless_enabled() -> None:
    h = Harness()
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x")
    with pytest.raises(Exception, match="elicitation"):
        fake.session.send_request(  # type: ignore[union-attr]
            "elicitation/create",
            {"message": "?", "requestedSchema": {"type": "object", "properties": {}}},
        )


def test_elicitation_through_the_extension_pair() -> None:
    h = Harness(elicitation=True)
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x")
    params = {
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    first = h.server_push("x", lambda s: s.send_request("elicitation/create", params))
    ask = h.of_type(ElicitRequest)[-1]
    assert ask.server_id == "x" and ask.params == params and ask.type == "x-mcp/elicit/req"
    h.send(ElicitResponse(req_id=ask.id, action="accept", content={"name": "Ada"}))
    second = h.server_push("x", lambda s: s.send_request("elicitation/create", params))
    h.send(
        ElicitResponse(req_id=h.of_type(ElicitRequest)[-1].id, action="decline", content={"x": 1})
    )
    h._flush(h.conn_of("x"))
    assert fake.answers[first] == {"action": "accept", "content": {"name": "Ada"}}
    assert fake.answers[second] == {"action": "decline"}


# Connection loss, reconnect, ping ------------------------------------------------------------


def test_a_dying_server_fails_pending_calls_then_reconnects_and_resyncs() -> None:
    h = Harness(reconnect_base=1.0)
    fake = h.add_server("x", FakeServer(tools=[tool("hang")]))
    fake.handlers["tools/call"] = lambda s, e: None
    h.register("x", "x")
    h.send(ToolCallRequest(id="c", tool_name="x__hang", arguments={}))
    h.kill("x", "the server process exited (code -9)")
    reply = h.reply_to("c")
    assert isinstance(reply, ToolCallResponse)
    assert reply.data["error_code"] == "mcp_transport_error" and reply.data["retryable"] is True
    info = h.host.server_info("x")
    assert info.status == "disconnected" and "code -9" in info.error  # type: ignore[union-attr]
    # While it is down its tools stay listed, and calls say: try again later.
    assert [t["name"] for t in h.request(ToolListRequest).tools] == ["x__hang"]  # type: ignore[attr-defined]
    down = h.request(ToolCallRequest, tool_name="x__hang", arguments={})
    assert down.data["error_code"] == "mcp_server_unavailable" and down.data["retryable"]  # type: ignore[attr-defined]
    fake.tools.append(tool("fresh"))
    killed_at = h.now
    deadline = h.advance_to_deadline()
    assert 0.5 <= deadline - killed_at <= 1.0  # base 1 s, "equal jitter"
    assert h.host.server_info("x").status == "ready"  # type: ignore[union-attr]
    assert fake.connections == 2
    names = [t["name"] for t in h.request(ToolListRequest).tools]  # type: ignore[attr-defined]
    assert names == ["x__hang", "x__fresh"]


def test_reconnect_backoff_is_exponential_with_jitter() -> None:
    h = Harness(reconnect_base=1.0, reconnect_max=8.0)
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x")
    fake.refuse = True
    h.kill("x")
    delays = []
    for _ in range(6):
        before = h.now
        deadline = h.host.next_deadline()
        assert deadline is not None
        delays.append(deadline - before)
        h.advance_to_deadline()
        assert h.host.server_info("x").status == "error"  # type: ignore[union-attr]
    for attempt, delay in enumerate(delays):
        full = min(8.0, 2.0**attempt)
        assert full / 2 <= delay <= full, (attempt, delay)
    fake.refuse = False
    h.advance_to_deadline()
    assert h.host.server_info("x").status == "ready"  # type: ignore[union-attr]
    h.kill("x")
    assert h.host.next_deadline() - h.now <= 1.0  # type: ignore[operator]  # reset after success


def test_no_reconnect_when_auto_reconnect_is_off() -> None:
    h = Harness()
    h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x", auto_reconnect=False)
    h.kill("x")
    assert h.host.next_deadline() is None
    assert h.host.server_info("x").status == "disconnected"  # type: ignore[union-attr]


def test_config_servers_are_kept_and_retried_when_the_first_connect_fails() -> None:
    h = Harness(reconnect_base=1.0)
    fake = h.add_server("x", FakeServer(tools=[tool("t")]))
    fake.refuse = True
    h.host.register({"server_id": "cfg", "cmd": ["x"]}, h.now)
    h.run()
    assert h.host.server_info("cfg").status == "error"  # type: ignore[union-attr]
    fake.refuse = False
    h.advance_to_deadline()
    assert h.host.server_info("cfg").status == "ready"  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        h.host.register({"server_id": "cfg", "cmd": ["x"]}, h.now)


def test_a_connection_that_never_opens_times_out() -> None:
    h = Harness(connect_timeout=3.0)
    h.add_server("x", FakeServer(tools=[]))
    h.hold_connect.add("x")
    h.send(
        {"type": "mcp/server/register/req", "id": "r", "config": {"server_id": "x", "cmd": ["x"]}}
    )
    assert h.host.next_deadline() == h.now + 3.0
    h.advance(3.0)
    reply = h.reply_to("r")
    assert isinstance(reply, MCPServerRegisterResponse) and not reply.ok
    assert any(isinstance(a, DisconnectServer) for a in h.actions_seen)


def test_ping_measures_latency_and_a_silent_server_is_dropped() -> None:
    h = Harness(ping_interval=10.0, ping_timeout=2.0, reconnect_base=1.0)
    fake = h.add_server("x", FakeServer(tools=[]))
    h.register("x", "x")
    h.advance(10.0)
    assert [m["method"] for m in fake.received if m.get("method") == "ping"] == ["ping"]
    assert h.host.server_info("x").last_ping_ms == 0.0  # type: ignore[union-attr]
    # Now the server stops answering anything (pings are answered by the core: hold output).
    conn = h.conn_of("x")
    h.links.pop(conn)  # nothing reaches it any more
    h.advance(10.0)
    h.advance(2.0)
    info = h.host.server_info("x")
    assert info.status == "error" and "ping" in info.error  # type: ignore[union-attr]


def test_host_close_disconnects_everything() -> None:
    h = Harness()
    h.add_server("x", FakeServer(tools=[]))
    h.register("a", "x")
    h.register("b", "x")
    h.host.close(h.now)
    h.run()
    assert {a.server_id for a in h.actions_seen if isinstance(a, DisconnectServer)} == {"a", "b"}
    assert h.host.server_infos() == []


def test_the_a2e_handshake_accepts_mcp_and_tools() -> None:
    h = Harness(elicitation=True)
    reply = h.request(HandshakeRequest, agent_id="agent-1", agent_caps=["mcp", "memory"])
    assert isinstance(reply, HandshakeResponse) and reply.ok and reply.session_id
    assert reply.accepted_caps == [
        {"capability": "mcp", "enabled": True, "metadata": {"elicitation": "x-mcp/elicit"}},
        {"capability": "memory", "enabled": False, "metadata": {}},
    ]
    refused = h.request(HandshakeRequest, agent_caps=["memory"])
    assert isinstance(refused, HandshakeResponse) and not refused.ok and refused.reason
