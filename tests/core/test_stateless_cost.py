"""What a stateless request reuses instead of recomputing (issue 37), and that
what it reuses follows changes to the server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sansio_mcp import LocalProtocolError, ServerSession, _http_headers
from sansio_mcp.http import HTTPRequest, StreamableHTTPServer
from sansio_mcp.runtime import Server

STATELESS = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def _schema(header: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": header}},
    }


def _call(machine: StreamableHTTPServer, header: str, request_id: int) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "t", "arguments": {"region": "eu"}, "_meta": META},
    }
    headers = {
        "host": "127.0.0.1",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "t",
        f"mcp-param-{header}": "eu",
    }
    exchange = machine.handle(HTTPRequest("POST", "/mcp", headers, json.dumps(body).encode()))
    exchange.disconnected()
    return exchange.status


def test_header_params_walked_once_per_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    schemas = {"t": _schema("Region")}
    machine = StreamableHTTPServer(ServerSession, tool_input_schema=schemas.get)
    walks = []
    real = _http_headers.x_mcp_header_problems

    def counting(schema: Any) -> list[str]:
        walks.append(schema)
        return real(schema)

    monkeypatch.setattr(_http_headers, "x_mcp_header_problems", counting)
    for i in range(3):
        assert _call(machine, "Region", i) != 400
    assert len(walks) == 1
    # The tool registered again, with another header: its new schema is walked.
    schemas["t"] = _schema("Zone")
    assert _call(machine, "Region", 10) == 400  # Mcp-Param-Zone is now required
    assert _call(machine, "Zone", 11) != 400
    assert len(walks) == 2
    # The tool removed: no header of it is required any more.
    del schemas["t"]
    assert _call(machine, "Other", 12) != 400
    assert machine.header_params._cache == {}


def test_session_capabilities_follow_the_server() -> None:
    server = Server("s")
    assert "prompts" not in server.create_session().capabilities

    @server.prompt()
    def hello() -> str:
        return "hi"

    first, second = server.create_session(), server.create_session()
    assert first.capabilities == server.capabilities
    assert "prompts" in first.capabilities
    # Each session's capabilities are its own objects.
    first.capabilities["prompts"]["listChanged"] = False
    assert second.capabilities["prompts"] == {"listChanged": True}
    assert server.create_session().capabilities["prompts"] == {"listChanged": True}
    server.logging = False
    assert "logging" not in server.create_session().capabilities
    server.logging = True
    assert "logging" in server.create_session().capabilities


def test_session_key_unique_and_stable() -> None:
    sessions = [ServerSession() for _ in range(50)]
    keys = {s.key for s in sessions}
    assert len(keys) == 50
    assert all(s.key == s.key for s in sessions)


def test_a_session_copy_has_the_settings_and_bookkeeping_of_its_own() -> None:
    template = ServerSession(
        capabilities={"tools": {"listChanged": True}},
        server_info={"name": "s", "version": "1"},
        instructions="read me",
        max_message_size=1234,
    )
    copy = template._fresh_copy()
    # Every attribute a built session has, a copy has too.
    assert set(vars(ServerSession())) <= set(vars(copy))
    assert (copy.capabilities, copy.info, copy.instructions, copy.max_message_size) == (
        template.capabilities,
        template.info,
        "read me",
        1234,
    )
    copy.capabilities["tools"]["listChanged"] = False
    copy.info["name"] = "other"
    assert template.capabilities["tools"] == {"listChanged": True}
    assert template.info["name"] == "s"
    # Nor does a change to the original reach a copy, made before or after it.
    second = template._fresh_copy()
    template.capabilities["tools"]["listChanged"] = "changed"
    template.capabilities["logging"] = {}
    assert second.capabilities == {"tools": {"listChanged": True}}
    assert copy.capabilities == {"tools": {"listChanged": False}}
    assert template._fresh_copy().capabilities["tools"] == {"listChanged": "changed"}
    for name in ("_events", "_outbox", "_requests", "subscriptions", "_listens"):
        assert getattr(copy, name) is not getattr(template, name), name
    # A used session is not copied.
    copy.receive_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    with pytest.raises(LocalProtocolError, match="only a fresh session is copied"):
        copy._fresh_copy()


def test_server_sessions_follow_its_name_and_instructions() -> None:
    server = Server("s", instructions="first")
    assert server.create_session().instructions == "first"
    server.instructions = "second"
    server.title = "Titled"
    session = server.create_session()
    assert (session.instructions, session.info["title"]) == ("second", "Titled")
    assert server.create_session(max_message_size=99).max_message_size == 99


def _named(name: str) -> dict[str, Any]:
    params = {"name": name, "_meta": META}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    ("tool", "header", "problem"),
    [
        ("echo", "echo", None),
        ("a\tb", "a\tb", None),  # a tab may be carried as it is
        ("caf\u00e9", "caf\u00e9", None),
        ("caf\u00e9", "=?base64?Y2Fmw6k=?=", None),
        # Looks like the body, but it is a sentinel: decoded, it does not match.
        ("=?base64?YQ==?=", "=?base64?YQ==?=", "does not match the request body"),
        ("a\nb", "a\nb", "contains invalid characters"),
        ("echo", "=?base64?!!?=", "is not base64 of UTF-8 text"),
        ("echo", "Echo", "does not match the request body"),
    ],
)
def test_header_fast_comparison_keeps_every_rule(
    tool: str, header: str, problem: str | None
) -> None:
    """A header equal to the body's string is taken at once only when nothing in it
    needs a check (no control character, no base64 sentinel)."""
    headers = {
        "MCP-Protocol-Version": STATELESS,  # any case
        "mcp-method": "tools/call",
        "Mcp-Name": header,
    }
    mismatch = _http_headers.validate_request_headers(headers, _named(tool))
    if problem is None:
        assert mismatch is None
    else:
        assert mismatch is not None and problem in mismatch.message
        assert mismatch.message.startswith("the Mcp-Name header")
    del headers["Mcp-Name"]
    missing = _http_headers.validate_request_headers(headers, _named(tool))
    assert missing is not None and missing.message == "the Mcp-Name header is required"
