"""An in-process gateway on Trio in front of the example server over HTTP: list-changed
hints are bounded (a burst of changes reaches a listening client as one or two hints,
not one per change), and the aggregated list is paginated."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from functools import partial
from typing import Any

import pytest
import trio

from sansio_mcp import ErrorCode, InvalidParams, MCPError, MissingRequiredClientCapability
from sansio_mcp.runtime import Context, Server
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import Backoff, parse_config
from sansio_mcp_apps.gateway.runtime import Gateway, UpstreamSettings, transport_opener
from trio_adapters import BACKEND, ClientHandlers
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_http, serve_router

from .conftest import EVERYTHING, EXAMPLE_TOOLS, REPO, free_port, node


async def _ready(gateway: Gateway) -> None:
    with trio.fail_after(10):
        while gateway.status()["ex"]["status"] != "ready":
            await trio.sleep(0.02)


async def _serve_gateway(nursery: Any, connectors: dict[str, Any], **config: Any) -> str:
    """A gateway over ``connectors`` (and ``config``'s other keys), ready; its endpoint URL."""
    parsed = parse_config({"connectors": connectors, **config})
    gateway = Gateway(parsed, BACKEND, transport_opener(BACKEND))
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    return f"http://127.0.0.1:{port}/mcp"


async def test_a_burst_of_changes_is_one_hint(nursery: Any) -> None:
    upstream = await nursery.start(serve_http, build_server())
    config = parse_config(
        {"connectors": {"ex": {"transport": "http", "url": f"http://127.0.0.1:{upstream}/mcp"}}}
    )
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND), hint_interval=0.3)
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="modern") as client:
        async with client.listen(tools_list_changed=True) as hints:
            await trio.sleep(0.4)  # past the interval of the hint the upstream's start gave
            for _ in range(100):
                gateway.tools_changed()
            got = []
            with trio.move_on_after(1.0):
                async for method, _params in hints:
                    got.append(method)
    assert got and set(got) == {"notifications/tools/list_changed"}
    assert len(got) <= 2, got  # 100 changes: the first hint at once, the rest in one more
    nursery.cancel_scope.cancel()


async def test_the_aggregated_list_is_paginated(nursery: Any) -> None:
    upstream = await nursery.start(serve_http, build_server())
    url = f"http://127.0.0.1:{upstream}/mcp"
    config = parse_config(
        {
            "connectors": {
                "ex": {"transport": "http", "url": url},
                "ex2": {"transport": "http", "url": url},
            }
        }
    )
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND), page_size=4)
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    for mode in ("modern", "legacy"):
        async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
            first = await client.send_request("tools/list")
            assert len(first["tools"]) == 4 and "nextCursor" in first
            every = [t["name"] for t in await client.list_tools()]
            # Sorted by connector, then tool: a cursor names where its page ended.
            expected = [
                f"{c}.{name}" for c in ("ex", "ex2") for name in sorted(build_server().tools)
            ]
            assert every == expected
            assert {n.split(".", 1)[1] for n in every} == EXAMPLE_TOOLS
            with trio.fail_after(5):
                try:
                    await client.send_request("tools/list", {"cursor": "not-a-cursor"})
                except InvalidParams as exc:
                    assert "cursor" in exc.message
                else:
                    raise AssertionError("a bad cursor was accepted")
    nursery.cancel_scope.cancel()


async def _stoppable_upstream(nursery: Any) -> tuple[int, trio.CancelScope]:
    """Our example server over HTTP in ``nursery``: its port, and the scope that stops it."""
    scope = trio.CancelScope()

    async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await serve_http(build_server(), task_status=task_status)

    return await nursery.start(serve), scope


async def test_a_connector_going_down_between_pages_skips_no_other_tool(nursery: Any) -> None:
    # Page 1 gives four of "a"'s tools; "a" goes down; the pages after still give every
    # tool of "b" (an offset cursor would have skipped b's first four).
    a, scope = await _stoppable_upstream(nursery)
    b = await nursery.start(serve_http, build_server())
    config = parse_config(
        {
            "connectors": {
                "a": {"transport": "http", "url": f"http://127.0.0.1:{a}/mcp"},
                "b": {"transport": "http", "url": f"http://127.0.0.1:{b}/mcp"},
            }
        }
    )
    settings = UpstreamSettings(ping_interval=60.0, backoff=Backoff(base=30.0))
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND), settings=settings, page_size=4)
    nursery.start_soon(gateway.run)
    with trio.fail_after(10):
        while any(s["status"] != "ready" for s in gateway.status().values()):
            await trio.sleep(0.02)
    await trio.sleep(0.2)  # a's listen stream open: its end tells the gateway at once
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="modern") as client:
        first = await client.send_request("tools/list")
        names = [t["name"] for t in first["tools"]]
        assert len(names) == 4 and all(n.startswith("a.") for n in names)
        scope.cancel()
        await _leaves_ready(gateway, "a", within=5)
        cursor = first["nextCursor"]
        while cursor is not None:
            page = await client.send_request("tools/list", {"cursor": cursor})
            names += [t["name"] for t in page["tools"]]
            cursor = page.get("nextCursor")
    assert len(names) == len(set(names))
    assert {f"b.{n}" for n in EXAMPLE_TOOLS} <= set(names), names
    nursery.cancel_scope.cancel()


async def test_a_connector_that_stays_down_gives_no_hints(
    nursery: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each failed reconnect leaves the catalog as it was: listeners hear nothing of it.
    # Seen in what reaches the hints (each catalog change, by connector), not in timing.
    changes: list[str | None] = []
    tools_changed = Gateway.tools_changed

    def recording(self: Gateway, connector: str | None = None) -> None:
        changes.append(connector)
        tools_changed(self, connector)

    monkeypatch.setattr(Gateway, "tools_changed", recording)
    upstream = await nursery.start(serve_http, build_server())
    dead = free_port()
    config = parse_config(
        {
            "connectors": {
                "ex": {"transport": "http", "url": f"http://127.0.0.1:{upstream}/mcp"},
                "dead": {"transport": "http", "url": f"http://127.0.0.1:{dead}/mcp"},
            }
        }
    )
    settings = UpstreamSettings(backoff=Backoff(base=0.01, cap=0.02))
    gateway = Gateway(
        config, BACKEND, transport_opener(BACKEND), settings=settings, hint_interval=0.01
    )
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    with trio.fail_after(60):  # generous: a loaded machine retries slowly
        while gateway.store.record("dead").attempts < 6:
            await trio.sleep(0.01)
        while not gateway.hints_sent:  # the hint that "ex" came went out
            await trio.sleep(0.01)
    assert "ex" in changes
    assert "dead" not in changes and None not in changes, changes
    assert gateway.hints_sent <= len(changes)  # no hint without a change
    nursery.cancel_scope.cancel()


async def _leaves_ready(gateway: Gateway, name: str, within: float) -> dict[str, Any]:
    with trio.fail_after(within):
        while gateway.status()[name]["status"] == "ready":
            await trio.sleep(0.02)
    return gateway.status()[name]


async def test_a_stdio_upstream_that_exits_is_missed_at_once(nursery: Any) -> None:
    # The child exits after 3 s; with pings a minute apart, only its end of the
    # pipe can tell the gateway, and the listing must say so at once.
    cmd = ["timeout", "3", sys.executable, "-m", "sansio_mcp_cli", "example-server"]
    config = parse_config(
        {"connectors": {"ex": {"transport": "stdio", "cmd": cmd, "env": {"PYTHONPATH": str(REPO)}}}}
    )
    settings = UpstreamSettings(ping_interval=60.0, backoff=Backoff(base=30.0))
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND), settings=settings)
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    status = await _leaves_ready(gateway, "ex", within=6)
    assert "closed" in status["error"]
    assert gateway.catalog().missing == ["ex"] and gateway.catalog().ttl_ms() == 0
    nursery.cancel_scope.cancel()


async def test_an_http_upstream_that_stops_is_missed_at_once(nursery: Any) -> None:
    # Its subscriptions/listen stream breaks when it stops: the gateway checks at once.
    upstream, upstream_scope = await _stoppable_upstream(nursery)
    url = f"http://127.0.0.1:{upstream}/mcp"
    config = parse_config({"connectors": {"ex": {"transport": "http", "url": url}}})
    settings = UpstreamSettings(ping_interval=60.0, backoff=Backoff(base=30.0))
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND), settings=settings)
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    await trio.sleep(0.2)  # its listen stream open
    upstream_scope.cancel()
    status = await _leaves_ready(gateway, "ex", within=3)
    assert "ping failed" in status["error"]
    assert gateway.catalog().missing == ["ex"]
    nursery.cancel_scope.cancel()


async def test_an_override_of_a_tool_the_upstream_lacks_is_warned_of(
    nursery: Any, caplog: pytest.LogCaptureFixture
) -> None:
    upstream = await nursery.start(serve_http, build_server())
    url = f"http://127.0.0.1:{upstream}/mcp"
    tools = {"ech": {"enabled": False}, "add": {"description": "Sum"}}
    config = parse_config({"connectors": {"ex": {"transport": "http", "url": url, "tools": tools}}})
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND))
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    warned = [r.getMessage() for r in caplog.records if r.name == "sansio_mcp_apps.gateway"]
    assert any("no tool named 'ech'" in m for m in warned), warned
    assert not any("'add'" in m for m in warned)
    assert "ex.echo" in {t["name"] for t in gateway.catalog().tools()}  # the typo left it on
    nursery.cancel_scope.cancel()


async def test_a_handshake_http_upstream_that_stops_is_missed_soon(nursery: Any) -> None:
    # server-everything speaks a handshake revision over Streamable HTTP: its session's
    # GET stream ending is the one sign it went away, and the gateway checks at once.
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    server = subprocess.Popen(
        [node(), str(EVERYTHING), "streamableHttp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        config = parse_config({"connectors": {"ev": {"transport": "http", "url": url}}})
        settings = UpstreamSettings(ping_interval=60.0, backoff=Backoff(base=0.2, cap=30.0))
        gateway = Gateway(config, BACKEND, transport_opener(BACKEND), settings=settings)
        nursery.start_soon(gateway.run)
        with trio.fail_after(30):
            while gateway.status()["ev"]["status"] != "ready":
                await trio.sleep(0.05)
        await trio.sleep(0.5)  # its GET stream open
        server.kill()
        status = await _leaves_ready(gateway, "ev", within=5)
        assert "ping failed" in status["error"], status
    finally:
        server.kill()
        server.wait()
    nursery.cancel_scope.cancel()


async def test_only_the_asker_can_answer_a_question(nursery: Any) -> None:
    # A handshake-era client is asked (elicitation) on its POST's stream, under an id
    # of the gateway's: another client, with another key, can neither guess that id
    # nor answer in its place.
    import httpx

    upstream = await nursery.start(serve_http, build_server())
    url = f"http://127.0.0.1:{upstream}/mcp"
    config = parse_config(
        {
            "connectors": {"ex": {"transport": "http", "url": url}},
            "api_keys": ["alice", "bob"],
            "relay_questions_to_handshake_clients": True,
        }
    )
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND))
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    endpoint = f"http://127.0.0.1:{port}/mcp"
    base = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    alice, bob = {**base, "authorization": "Bearer alice"}, {**base, "authorization": "Bearer bob"}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ex.elicit", "arguments": {"question": "Approve?"}},
    }
    ids, outcome = [], []
    async with httpx.AsyncClient(timeout=10) as http:
        for _ in range(2):
            async with http.stream("POST", endpoint, json=call, headers=alice) as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    message = json.loads(line[5:])
                    if message.get("method") == "elicitation/create":
                        ids.append(message["id"])
                        answer = {"jsonrpc": "2.0", "id": message["id"]}
                        accept = {"action": "accept", "content": {"answer": "yes"}}
                        forged = await http.post(
                            endpoint, json={**answer, "result": accept}, headers=bob
                        )
                        assert forged.status_code == 404
                        decline = {**answer, "result": {"action": "decline"}}
                        own = await http.post(endpoint, json=decline, headers=alice)
                        assert own.status_code == 202
                    elif message.get("id") == 1:
                        outcome.append(message["result"]["structuredContent"])
    assert outcome == [{"action": "decline"}] * 2  # alice's answers, not bob's
    first, second = ids
    assert len(first) >= 32 and first[:-8] != second[:-8]  # no counter to guess the next by
    nursery.cancel_scope.cancel()


#: A stdio "server" that completes the handshake, then never answers tools/list.
MUTE_SERVER = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "mute", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    elif msg.get("method") == "server/discover":
        error = {"code": -32601, "message": "no such method"}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}), flush=True)
"""


async def test_an_upstream_that_never_lists_is_retried(nursery: Any) -> None:
    config = parse_config(
        {"connectors": {"mute": {"transport": "stdio", "cmd": [sys.executable, "-c", MUTE_SERVER]}}}
    )
    settings = UpstreamSettings(list_timeout=0.5, backoff=Backoff(base=30.0))
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND), settings=settings)
    nursery.start_soon(gateway.run)
    with trio.fail_after(10):
        while gateway.status()["mute"]["status"] == "connecting":
            await trio.sleep(0.05)
    status = gateway.status()["mute"]
    assert status["status"] == "backoff" and "tools/list" in status["error"], status
    nursery.cancel_scope.cancel()


async def test_refused_probes_are_not_warnings(
    nursery: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Clients probe resources and prompts; the gateway answers -32601 and the client
    # learns: nothing there for an operator, so nothing at WARNING.
    import httpx

    upstream = await nursery.start(serve_http, build_server())
    url = f"http://127.0.0.1:{upstream}/mcp"
    endpoint = await _serve_gateway(nursery, {"ex": {"transport": "http", "url": url}})
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    caplog.set_level("DEBUG", logger="sansio_mcp")
    async with httpx.AsyncClient(timeout=10) as http:
        for method in ("resources/list", "prompts/list", "completion/complete"):
            stateless = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}
            got = await http.post(endpoint, json=body, headers=base | stateless)
            assert got.json()["error"]["code"] == -32601
            legacy = {"mcp-protocol-version": "2025-06-18"}
            body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": {}}
            got = await http.post(endpoint, json=body, headers=base | legacy)
            assert got.json()["error"]["code"] == -32601
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [m for m in loud if "protocol violation" in m], loud
    assert any("refused a request" in r.getMessage() for r in caplog.records)
    nursery.cancel_scope.cancel()


WEATHER = {"name": "get_weather", "inputSchema": {"type": "object"}}


async def test_tool_enabled_sampling_reaches_a_client_that_declared_it(nursery: Any) -> None:
    # The gateway's upstream client declares sampling.tools, so a 2026-07-28 upstream
    # asks; the gateway passes the question on to a client that can take it, and
    # tells any other it lacks sampling.tools (before: every client was told so).
    server = Server("sampler")

    @server.tool()
    async def weather(ctx: Context) -> str:
        """Ask the client's model, offering it a tool."""
        result = await ctx.sample("Weather in Paris?", max_tokens=5, tools=[WEATHER])
        return json.dumps(result.get("content"))

    upstream = await nursery.start(serve_http, server)
    url = f"http://127.0.0.1:{upstream}/mcp"
    endpoint = await _serve_gateway(
        nursery,
        {"ex": {"transport": "http", "url": url}},
        relay_questions_to_handshake_clients=True,
    )
    asked: list[dict[str, Any]] = []

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "sunny"}, "model": "m"}

    can = ClientHandlers(sampling=sample, sampling_tools=True)
    for version in ("2026-07-28", "2025-11-25"):
        # (A handshake client's declaration is not kept: relaying, it is taken to have one.)
        async with open_http_client(endpoint, protocol_version=version, handlers=can) as client:
            done = await client.call_tool("ex.weather", {})
        assert "sunny" in done["content"][0]["text"] and not done.get("isError"), version
    assert [a["tools"] for a in asked] == [[WEATHER]] * 2
    for version, handlers in [
        ("2026-07-28", ClientHandlers(sampling=sample)),
        ("2025-11-25", ClientHandlers()),  # it refuses: -32601
        ("2025-11-25", ClientHandlers(sampling=sample)),  # it refuses the tools: -32602
        ("2025-06-18", can),  # no such capability in its revision
    ]:
        async with open_http_client(
            endpoint, protocol_version=version, handlers=handlers
        ) as client:
            with pytest.raises(MissingRequiredClientCapability) as info:
                await client.call_tool("ex.weather", {})
        assert info.value.data["requiredCapabilities"] == {"sampling": {"tools": {}}}, version
    assert len(asked) == 2  # none of them was sent the tools
    nursery.cancel_scope.cancel()


#: A 2026-07-28 stdio upstream whose tool ``ask`` asks with params that are no
#: object, ``form`` with a form whose properties are no object, and whose tool
#: ``meta`` answers with a ``_meta`` that is no object.
BAD_ASKER = """
import json, sys
meta = {"io.modelcontextprotocol/serverInfo": {"name": "bad-asker", "version": "1"}}
fresh = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "_meta": meta}
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if "id" not in msg or method == "subscriptions/listen":
        continue
    if method == "server/discover":
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, **fresh}
    elif method == "tools/list":
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("ask", "form", "meta")]
        result = {"tools": tools, **fresh}
    elif msg["params"]["name"] == "meta":
        result = {"content": [], "resultType": "complete", "_meta": "oops"}
    else:
        params = "oops"
        if msg["params"]["name"] == "form":
            params = {"message": "m", "requestedSchema": {"type": "object", "properties": []}}
        asked = {"a": {"method": "elicitation/create", "params": params}}
        result = {"resultType": "input_required", "inputRequests": asked, "_meta": meta}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


async def test_an_upstream_sending_no_object_fails_a_call_not_the_gateway(
    nursery: Any,
) -> None:
    stdio = {"transport": "stdio", "cmd": [sys.executable, "-c", BAD_ASKER]}
    url = await _serve_gateway(nursery, {"ex": stdio})
    handlers = ClientHandlers(elicitation=lambda params: {"action": "decline"})
    # Twice each: the first must not have taken the gateway down (it did, for 2026-07-28).
    for version in ("2026-07-28", "2025-06-18", "2026-07-28", "2025-11-25"):
        async with open_http_client(url, protocol_version=version, handlers=handlers) as client:
            for tool, problem in [
                ("ex.ask", "params of input request 'a' must be an object"),
                ("ex.form", "requestedSchema needs an object 'properties'"),
            ]:
                with trio.fail_after(10), pytest.raises(MCPError) as info:
                    await client.call_tool(tool, {})
                # Passed through (2026-07-28), the gateway's session cannot send it; asked
                # on the client's behalf, the gateway finds the upstream's result invalid.
                assert info.value.code == ErrorCode.INTERNAL_ERROR, (version, tool)
                assert problem in info.value.message, (version, tool)
        async with open_http_client(url, protocol_version=version) as client:
            with trio.fail_after(10):
                done = await client.call_tool("ex.meta", {})
        assert "_meta" not in done or isinstance(done["_meta"], dict), version
    nursery.cancel_scope.cancel()


async def test_an_upstream_past_the_tool_limit_is_cut_and_its_status_says_so(
    nursery: Any,
) -> None:
    server = Server("many", page_size=5)
    for i in range(40):
        server.tool(f"t{i:02d}", description="a tool")(lambda: "ok")
    upstream = await nursery.start(serve_http, server)
    url = f"http://127.0.0.1:{upstream}/mcp"
    config = parse_config(
        {"connectors": {"ex": {"transport": "http", "url": url}}, "max_tools_per_connector": 7}
    )
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND))
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    assert gateway.status()["ex"]["warning"] == (
        "the upstream lists more than 7 tools: only the first 7 are offered "
        "(max_tools_per_connector)"
    )
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    async with open_http_client(f"http://127.0.0.1:{port}/mcp") as client:
        names = [t["name"] for t in await client.list_tools()]
    assert names == [f"ex.t{i:02d}" for i in range(7)]
    nursery.cancel_scope.cancel()
