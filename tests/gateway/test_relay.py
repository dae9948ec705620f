"""A handshake-era upstream's own request (elicitation, sampling, roots) reaches the
client of the call it belongs to and no other: over Streamable HTTP the stream it
came on says which call that is; over stdio nothing does, and it is refused unless
one call alone may be the one (a call given up still counts: the upstream may be
working on it yet).  In process, on each backend."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import pytest

from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import ConnectorConfig, parse_config
from sansio_mcp_apps.gateway.runtime import transport_opener

from .conftest import BACKENDS, serve_gateway, serve_router_on

ADAPTERS = [f"{name}_adapters" for name in BACKENDS]

#: A stdio upstream at 2025-06-18 whose ``first`` call is never answered (it goes on
#: working, cancelled or not); on a ``second`` call it asks a question, which nothing
#: on stdio ties to either call, and answers ``second`` with what it got back.
QUESTIONING_SERVER = """
import json, sys
second = None
def send(obj):
    print(json.dumps(obj), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "questioning", "version": "1"}}})
    elif method in ("server/discover",):
        send({"jsonrpc": "2.0", "id": msg["id"],
              "error": {"code": -32601, "message": "no such method"}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    elif method == "tools/list":
        schema = {"type": "object"}
        tools = [{"name": "first", "inputSchema": schema},
                 {"name": "second", "inputSchema": schema}]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
    elif method == "tools/call" and msg["params"]["name"] == "second":
        second = msg["id"]
        send({"jsonrpc": "2.0", "id": "question", "method": "elicitation/create",
              "params": {"message": "continue the first call?",
                         "requestedSchema": {"type": "object", "properties": {}}}})
    elif "method" not in msg and msg.get("id") == "question":
        text = json.dumps(msg)
        send({"jsonrpc": "2.0", "id": second,
              "result": {"content": [{"type": "text", "text": text}]}})
"""


def _texts(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []))


async def _gone_call_scenario(backend: Any, adapters: str) -> tuple[list[Any], str]:
    http_client = importlib.import_module(f"{adapters}.http_client")
    handlers_type = importlib.import_module(adapters).ClientHandlers
    config = parse_config(
        {
            "connectors": {
                "q": {"transport": "stdio", "cmd": [sys.executable, "-c", QUESTIONING_SERVER]}
            },
            "api_keys": ["alice", "bob"],
        }
    )
    asked: list[Any] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {}}

    handlers = handlers_type(elicitation=answer)
    async with backend.open_task_group() as group:
        gateway, url = await serve_gateway(backend, group, adapters, config)
        upstream = gateway.upstreams["q"]

        async def alice() -> None:
            async with http_client.open_http_client(
                url, headers={"authorization": "Bearer alice"}, mode="legacy", handlers=handlers
            ) as client:
                await client.call_tool("q.first", {})

        async with backend.fail_after(15):
            async with backend.open_task_group() as calls:
                calls.start_soon(alice)
                while not upstream._in_flight:
                    await backend.sleep(0.01)
                calls.cancel()  # alice goes away: her call is gone, the upstream works on
            while upstream._in_flight:
                await backend.sleep(0.01)
            async with http_client.open_http_client(
                url, headers={"authorization": "Bearer bob"}, mode="legacy", handlers=handlers
            ) as client:
                result = await client.call_tool("q.second", {})
        group.cancel()
    return asked, _texts(result)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_question_of_a_gone_call_reaches_no_other_client(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    asked, got = backend.run(_gone_call_scenario, backend, adapters)
    assert asked == []  # bob was never asked alice's question
    upstream_got = json.loads(got)
    assert upstream_got["error"]["code"] == -32021
    assert "nothing says which call it belongs to" in upstream_got["error"]["message"]
    assert "given up" in upstream_got["error"]["message"]


async def _concurrent_scenario(backend: Any, adapters: str) -> dict[str, Any]:
    http_client = importlib.import_module(f"{adapters}.http_client")
    handlers_type = importlib.import_module(adapters).ClientHandlers

    def handshake_opener(connector: ConnectorConfig, **options: Any) -> Any:
        """The upstream at a handshake revision: it asks by requests of its own."""
        return http_client.open_http_client(connector.url, mode="legacy", **options)

    outcome: dict[str, Any] = {}

    async def ask_as(key: str, ready: Any, go: Any) -> None:
        asked: list[str] = []

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(params["message"])
            ready.set()
            await go.wait()  # both questions are out at once
            return {"action": "accept", "content": {"answer": f"{key} says yes"}}

        async with http_client.open_http_client(
            url,
            headers={"authorization": f"Bearer {key}"},
            mode="legacy",
            handlers=handlers_type(elicitation=answer),
        ) as client:
            result = await client.call_tool("ex.elicit", {"question": f"{key}?"})
        outcome[key] = (asked, result["structuredContent"])

    async with backend.open_task_group() as group:
        example = build_server()
        router = StreamableHTTPServer(example.create_session)
        upstream_port = await serve_router_on(backend, group, adapters, example, router)
        config = parse_config(
            {
                "connectors": {
                    "ex": {"transport": "http", "url": f"http://127.0.0.1:{upstream_port}/mcp"}
                },
                "api_keys": ["alice", "bob"],
                "relay_questions_to_handshake_clients": True,
            }
        )
        _, url = await serve_gateway(backend, group, adapters, config, handshake_opener)
        readies = [backend.new_signal(), backend.new_signal()]
        gos = [backend.new_signal(), backend.new_signal()]
        async with backend.fail_after(15):
            async with backend.open_task_group() as calls:
                calls.start_soon(ask_as, "alice", readies[0], gos[0])
                calls.start_soon(ask_as, "bob", readies[1], gos[1])
                for ready in readies:
                    await ready.wait()
                for go in gos:
                    go.set()
        group.cancel()
    return outcome


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_questions_of_concurrent_calls_reach_their_own_clients(adapters: str) -> None:
    # Over Streamable HTTP each question comes on its call's stream: two calls in
    # flight at once are each asked their own (before, both were refused).
    backend = importlib.import_module(adapters).BACKEND
    outcome = backend.run(_concurrent_scenario, backend, adapters)
    for key in ("alice", "bob"):
        asked, result = outcome[key]
        assert asked == [f"{key}?"]
        assert result == {"action": "accept", "answer": f"{key} says yes"}


def test_a_question_whose_call_is_known_goes_there_or_nowhere() -> None:
    # Where the transport says which call a question came with, only that call's
    # client is asked, whoever else is in flight; a question on no call's stream (the
    # GET stream), or on a call that is over, is refused.
    import trio

    from sansio_mcp import MCPError, RequestReceived
    from sansio_mcp_apps.gateway import MemoryStore
    from sansio_mcp_apps.gateway.runtime import Upstream, UpstreamSettings
    from trio_adapters import BACKEND

    config = parse_config({"connectors": {"ex": {"transport": "http", "url": "http://x/"}}})
    upstream = Upstream(
        config.connectors[0],
        BACKEND,
        MemoryStore(["ex"]),
        transport_opener(BACKEND),
        UpstreamSettings(),
        on_change=lambda _name: None,
        on_tried=lambda: None,
    )
    asked: list[str] = []

    def asker(name: str) -> Any:
        async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
            asked.append(name)
            return {"action": "decline"}

        return ask

    from sansio_mcp_apps.gateway.runtime._upstream import _Call

    mine, theirs = _Call(asker("mine")), _Call(asker("theirs"))
    upstream._in_flight[:] = [theirs, mine]
    owners = {7: mine}

    class Driver:
        def owner_of(self, request_id: Any) -> object:
            return owners.get(request_id)

    class Client:
        driver = Driver()

    upstream.client = Client()  # type: ignore[assignment]

    def question(related: Any) -> RequestReceived:
        return RequestReceived("q", "elicitation/create", {}, None, None, True, related)

    assert trio.run(upstream._relay, question(7)) == {"action": "decline"}
    assert asked == ["mine"]
    for related, why in ((None, "it came with no call"), (8, "the call it belongs to is over")):
        with pytest.raises(MCPError) as refused:
            trio.run(upstream._relay, question(related))
        assert refused.value.code == -32021 and why in refused.value.message
    assert asked == ["mine"]
