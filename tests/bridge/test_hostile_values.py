"""The bridge against values and timings that broke it once: numbers beyond any
float, a malformed tool schema, a list that changed while the first sync ran,
a stale sampling answer after a reconnect, and an agent that leaves with calls
in flight.  Each is answered precisely; nothing is lost, leaked or left waiting.
(The in-memory harness of tests/bridge/helpers.py, on a fake clock.)"""

from __future__ import annotations

import json
from typing import Any

from sansio_mcp_apps.a2e import (
    DecodeError,
    MCPSamplingRequest,
    MCPSamplingResponse,
    ToolCallRequest,
    ToolListRequest,
    decode_text,
)

from .helpers import FakeServer, Harness, tool


def test_a_number_beyond_any_float_is_a_schema_violation_not_a_crash() -> None:
    item = decode_text('{"type":"ping","id":"x","ts":' + "1" * 400 + "}")
    assert isinstance(item, DecodeError) and item.code == "schema_violation"
    harness = Harness()
    harness.add_server("srv", FakeServer(tools=[tool("t")]))
    refused = harness.register("s", "srv", timeout=10**400)
    assert not refused.ok and refused.extra["error_code"] == "schema_violation"
    harness.register("s", "srv")
    answer = harness.request(ToolCallRequest, tool_name="s__t", arguments={}, timeout=10**400)
    assert answer.data["success"]  # the server's own limit holds


def test_a_servers_request_the_bridge_cannot_translate_is_still_answered() -> None:
    harness = Harness()
    fake = harness.add_server("srv", FakeServer(tools=[tool("t")]))
    harness.register("s", "srv")
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
        "temperature": 10**400,  # valid JSON, beyond any float: the default is used
    }
    request_id = harness.server_push(
        "s", lambda session: session.send_request("sampling/createMessage", params)
    )
    [asked] = harness.of_type(MCPSamplingRequest)
    assert asked.temperature == 1.0
    harness.send(
        MCPSamplingResponse(
            id="a",
            ts=harness.now,
            req_id=asked.id,
            content={"type": "text", "text": "ok"},
            model="m",
        )
    )
    assert fake.answers[request_id]["content"]["text"] == "ok"


def test_one_servers_malformed_schema_does_not_break_the_tool_list() -> None:
    harness = Harness()
    harness.add_server("good", FakeServer(tools=[tool("fine")]))
    bad = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"a": {}}, "required": [["a"]]},
    }
    harness.add_server("bad", FakeServer(tools=[bad]))
    harness.register("g", "good")
    harness.register("b", "bad")
    listed = harness.request(ToolListRequest)
    assert {t["name"] for t in listed.tools} == {"g__fine", "b__t"}


def test_a_list_that_changes_while_the_first_sync_runs_is_read_again() -> None:
    harness = Harness()
    fake = harness.add_server("srv", FakeServer(tools=[tool("old")], prompts=[]))
    fake.handlers["prompts/list"] = lambda server, event: None  # the sync waits for prompts
    harness.send(
        {
            "type": "mcp/server/register/req",
            "id": "r1",
            "config": {"server_id": "s", "cmd": ["srv"]},
        }
    )
    fake.tools = [tool("new")]
    harness.server_push(
        "s", lambda session: session.send_notification("notifications/tools/list_changed")
    )
    harness.answer_held("s", {"prompts": []})
    assert harness.reply_to("r1").ok
    assert [t["name"] for t in harness.request(ToolListRequest).tools] == ["s__new"]


def test_a_stale_sampling_answer_does_not_answer_the_next_sessions_request() -> None:
    harness = Harness()
    harness.add_server("srv", FakeServer(tools=[tool("t")]))
    harness.register("s", "srv")
    params: dict[str, Any] = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Q1"}}],
        "maxTokens": 5,
    }
    harness.server_push("s", lambda session: session.send_request("sampling/createMessage", params))
    old = harness.of_type(MCPSamplingRequest)[-1]
    harness.kill("s")
    harness.advance(60)  # reconnected: the new session numbers its requests from 0 again
    fake = harness.servers["srv"]
    params["messages"][0]["content"]["text"] = "Q2"
    new_id = harness.server_push(
        "s", lambda session: session.send_request("sampling/createMessage", params)
    )
    new = harness.of_type(MCPSamplingRequest)[-1]
    assert new.mcp_request_id == old.mcp_request_id
    late = MCPSamplingResponse(
        id="late",
        ts=harness.now,
        req_id=old.id,
        server_id="s",
        mcp_request_id=old.mcp_request_id,
        content={"type": "text", "text": "answer to Q1"},
    )
    replies = harness.send(late)
    assert [getattr(r, "code", None) for r in replies] == ["invalid_message"]
    assert new_id not in fake.answers


def test_an_agent_that_leaves_has_its_calls_cancelled_and_their_answers_dropped() -> None:
    harness = Harness()
    fake = harness.add_server("srv", FakeServer(tools=[tool("slow")]))
    harness.register("s", "srv")
    fake.handlers["tools/call"] = lambda server, event: None  # the server holds the call
    harness.send(
        ToolCallRequest(id="A-1", ts=harness.now, tool_name="s__slow", arguments={"who": "A"})
    )
    harness.host.agent_disconnected(harness.now)
    harness.run()
    cancels = [m for m in fake.received if m.get("method") == "notifications/cancelled"]
    assert len(cancels) == 1
    assert not any(link.calls for link in harness.host._links.values())
    harness.host.agent_connected(harness.now)
    assert not [m for m in harness.inbox if getattr(m, "req_id", "") == "A-1"]


def test_a_result_as_deep_as_mcp_allows_reaches_the_agent_readable() -> None:
    """The A2E envelope adds a level to what a server sent: a result at MCP's own
    nesting limit must still decode on the agent's side."""
    from sansio_mcp import _json
    from sansio_mcp_apps.a2e import ToolCallResponse, encode

    nested: Any = 0
    for _ in range(61):  # the JSON-RPC message around it is then 64 deep: the limit
        nested = [nested]
    result = {"content": [], "structuredContent": {"v": nested}}
    assert _json.nesting_depth(json.dumps({"jsonrpc": "2.0", "id": 1, "result": result})) == 64
    harness = Harness()
    fake = harness.add_server("srv", FakeServer(tools=[tool("deep")]))
    harness.register("s", "srv")
    fake.handlers["tools/call"] = lambda server, event: result
    harness.send(ToolCallRequest(id="c", ts=harness.now, tool_name="s__deep", arguments={}))
    [answer] = [m for m in harness.inbox if getattr(m, "req_id", "") == "c"]
    assert isinstance(decode_text(encode(answer)), ToolCallResponse)


def test_a_server_request_the_bridge_fails_on_is_answered_not_left_waiting(
    monkeypatch: Any,
) -> None:
    """Whatever goes wrong in the bridge's own code while it handles a server's
    request, the request gets -32603 (else the server would wait for good)."""
    import sansio_mcp_apps.a2e._agent_asks as host_module
    from sansio_mcp import MCPError

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the bridge")

    harness = Harness()
    fake = harness.add_server("srv", FakeServer(tools=[tool("t")]))
    harness.register("s", "srv")
    monkeypatch.setattr(host_module, "sampling_request_from_mcp", broken)
    params = {"messages": [], "maxTokens": 5}
    try:
        harness.server_push("s", lambda s: s.send_request("sampling/createMessage", params))
    except AssertionError:
        pass  # the harness refuses to go on once the bridge recorded a failure
    harness.host.internal_errors.clear()
    harness.run()
    [answer] = fake.answers.values()
    assert isinstance(answer, MCPError) and answer.code == -32603
