"""An upstream tool whose ``inputSchema.properties`` is a list (no valid schema) is
no crash in the gateway: a 2026-07-28 call to it through the gateway is served
(answered by the upstream, not an HTTP 500), its listing too, and a 2026-07-28
client leaves it out of list_tools (its ``x-mcp-header`` annotations cannot be
read), as the gateway does with such a tool of a 2026-07-28 upstream.  In process,
on each backend."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import pytest

from sansio_mcp.auth import HTTPCall
from sansio_mcp.runtime._oauth import fetch
from sansio_mcp_apps.gateway import parse_config

from .conftest import BACKENDS, serve_gateway

#: A stdio upstream at 2025-06-18 listing ``odd``, whose properties are a list.
ODD_SERVER = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    def send(result):
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)
    if method == "initialize":
        send({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
              "serverInfo": {"name": "odd", "version": "1"}})
    elif method == "server/discover":
        error = {"code": -32601, "message": "no such method"}
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}), flush=True)
    elif method == "tools/list":
        schema = {"type": "object", "properties": ["a", "b"]}
        send({"tools": [{"name": "odd", "inputSchema": schema}]})
    elif method == "tools/call":
        send({"content": [{"type": "text", "text": "called " + json.dumps(msg["params"])}]})
    elif method and rid is not None:
        send({})
"""
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


async def _scenario(backend: Any, adapters: str) -> tuple[list[Any], list[str]]:
    http_client = importlib.import_module(f"{adapters}.http_client")
    cmd = [sys.executable, "-c", ODD_SERVER]
    config = parse_config({"connectors": {"u": {"transport": "stdio", "cmd": cmd}}})
    replies: list[Any] = []
    async with backend.open_task_group() as group:
        _, url = await serve_gateway(backend, group, adapters, config)
        for request_id, method, params in (
            (1, "tools/call", {"name": "u.odd", "arguments": {"a": 1}}),
            (2, "tools/list", {}),
        ):
            body = {"jsonrpc": "2.0", "id": request_id, "method": method}
            body["params"] = {**params, "_meta": META}
            headers = {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": method,
            }
            if "name" in params:
                headers["mcp-name"] = params["name"]
            reply = await fetch(backend, HTTPCall("POST", url, headers, json.dumps(body).encode()))
            replies.append((reply.status, json.loads(reply.body)))
        async with http_client.open_http_client(url, mode="modern") as client:
            listed = [t["name"] for t in await client.list_tools()]
        group.cancel()
    return replies, listed


@pytest.mark.parametrize("adapters", [f"{name}_adapters" for name in BACKENDS])
def test_a_tool_whose_properties_are_a_list_is_no_crash(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    (called, listing), listed = backend.run(_scenario, backend, adapters)
    assert called[0] == 200, called  # was an HTTP 500
    assert called[1]["result"]["content"][0]["text"].startswith('called {"name": "odd"')
    assert listing[0] == 200
    assert [t["name"] for t in listing[1]["result"]["tools"]] == ["u.odd"]
    assert listed == []  # a client cannot read its parameters: it leaves it out
