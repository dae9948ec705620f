"""The gateway (``sansio-mcp gateway``, each backend) in front of real upstreams:
server-everything and server-filesystem over stdio, our example server over
HTTP; our own client at both eras as the gateway's client."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from sansio_mcp import InvalidParams, MissingRequiredClientCapability
from sansio_mcp._versions import REVISIONS
from sansio_mcp_apps.gateway.runtime import META_MISSING_CONNECTORS
from sansio_mcp_testing.schemas import load_schema, missing_schema_message
from trio_adapters import ClientHandlers
from trio_adapters.http_client import open_http_client

from .conftest import API_KEY, EXAMPLE_TOOLS, Setup

pytestmark = pytest.mark.interop
AUTH = {"authorization": f"Bearer {API_KEY}"}
SURVEY = ["favourite colour?", "favourite number?"]


def _text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []))


async def _answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"answer": f"gw: {params['message']}"}}


@pytest.mark.parametrize("mode", ["modern", "legacy"])
async def test_aggregated_listing_and_calls(setup: Setup, mode: str) -> None:
    async with open_http_client(setup.url, headers=AUTH, mode=mode) as client:
        # Tools and tasks, in the client's era's form (docs/gateway.md, "Tasks").
        tasks: dict[str, Any] = (
            {"extensions": {"io.modelcontextprotocol/tasks": {}}}
            if mode == "modern"
            else {"tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}
        )
        assert client.server_capabilities == {"tools": {"listChanged": True}, **tasks}
        tools = {t["name"]: t for t in await client.list_tools()}
        example = {n.split(".", 1)[1] for n in tools if n.startswith("example.")}
        assert example == EXAMPLE_TOOLS
        assert "everything.echo" in tools and "everything.get-sum" not in tools
        assert tools["everything.echo"]["description"] == "Echo, through the gateway"
        assert {"files.read_text_file", "files.list_directory"} <= set(tools)
        # Same tool name on two connectors: both listed, each routed to its own.
        echoed = await client.call_tool("everything.echo", {"message": "hi"})
        assert _text(echoed) == "Echo: hi"
        echoed = await client.call_tool("example.echo", {"message": "hi"})
        assert _text(echoed) == "hi"
        added = await client.call_tool("example.add", {"a": 20, "b": 22})
        assert added["structuredContent"] == {"sum": 42}
        listing = await client.call_tool("files.list_directory", {"path": str(setup.files_root)})
        assert "hello.txt" in _text(listing)
        read = await client.call_tool(
            "files.read_text_file", {"path": str(setup.files_root / "hello.txt")}
        )
        assert _text(read) == "hello through the gateway\n"
        for name, named in [
            ("nowhere.echo", "unknown connector 'nowhere'"),
            ("example.nope", "unknown tool 'nope'"),
            ("everything.get-sum", "unknown tool 'get-sum'"),
        ]:
            with pytest.raises(InvalidParams, match=named):
                await client.call_tool(name, {})


@pytest.mark.parametrize("mode", ["modern", "legacy"])
async def test_schemas_are_the_upstreams_own(setup: Setup, mode: str) -> None:
    async with open_http_client(setup.url, headers=AUTH, mode=mode) as client:
        through = {t["name"]: t for t in await client.list_tools()}
    async with open_http_client(setup.example_url, mode=mode) as direct:
        upstream = await direct.list_tools()
    for tool in upstream:
        mine = through[f"example.{tool['name']}"]
        # The gateway relays no 2025-11-25 tasks: the tools' execution.taskSupport stays behind.
        tool.pop("execution", None)
        assert mine == {**tool, "name": f"example.{tool['name']}"}


async def test_stateless_listing_freshness(gateway_url: str) -> None:
    async with open_http_client(gateway_url, headers=AUTH, mode="modern") as client:
        result = await client.send_request("tools/list")
        assert result["cacheScope"] == "private" and result["ttlMs"] > 0
        assert META_MISSING_CONNECTORS not in result.get("_meta", {})
        discovered = await client.send_request("server/discover")
        assert discovered["ttlMs"] == 0 and discovered["cacheScope"] == "private"


async def test_mrtr_passes_through(gateway_url: str) -> None:
    handlers = ClientHandlers(elicitation=_answer)
    async with open_http_client(
        gateway_url, headers=AUTH, mode="modern", handlers=handlers
    ) as client:
        asked = await client.call_tool("example.elicit", {"question": "colour?"})
        assert asked["structuredContent"] == {"action": "accept", "answer": "gw: colour?"}
        survey = await client.call_tool("example.survey", {"questions": SURVEY})
        assert survey["structuredContent"] == {
            "answers": {q: f"gw: {q}" for q in SURVEY},
            "completed": True,
        }


async def test_handshake_client_is_asked_by_server_requests(gateway_url: str) -> None:
    handlers = ClientHandlers(elicitation=_answer)
    async with open_http_client(
        gateway_url, headers=AUTH, mode="legacy", handlers=handlers
    ) as client:
        survey = await client.call_tool("example.survey", {"questions": SURVEY})
        assert survey["structuredContent"] == {
            "answers": {q: f"gw: {q}" for q in SURVEY},
            "completed": True,
        }


@pytest.mark.parametrize("mode", ["modern", "legacy"])
async def test_missing_capability_is_32021(gateway_url: str, mode: str) -> None:
    async with open_http_client(gateway_url, headers=AUTH, mode=mode) as client:
        with pytest.raises(MissingRequiredClientCapability) as info:
            await client.call_tool("example.elicit", {"question": "colour?"})
        assert info.value.data == {"requiredCapabilities": {"elicitation": {}}}
        assert "elicitation" in info.value.message
        # The gateway's own error, not the upstream's: no connector prefix.
        assert not info.value.message.startswith("connector ")


async def test_wrong_or_missing_key_is_401(gateway_url: str) -> None:
    from sansio_mcp import HTTPStatusError

    for headers in ({}, {"authorization": "Bearer nope"}):
        with trio.fail_after(10), pytest.raises(HTTPStatusError) as info:
            async with open_http_client(gateway_url, headers=headers, mode="modern") as client:
                await client.list_tools()
        assert info.value.data["status"] == 401


@pytest.mark.parametrize("mode", ["modern", "legacy"])
async def test_progress_is_passed_on(setup: Setup, mode: str) -> None:
    progress: list[tuple[float, float | None]] = []
    async with open_http_client(setup.url, headers=AUTH, mode=mode) as client:
        done = await client.call_tool(
            "everything.trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            on_progress=lambda p, total, message: progress.append((p, total)),
        )
    assert "Steps: 3" in _text(done)
    assert progress == [(1, 3), (2, 3), (3, 3)]


def test_http_rules_at_the_door(setup: Setup) -> None:
    """Mcp-* headers checked against the body, Host checked, no GET stream, no session."""
    import httpx

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "example.add", "arguments": {"a": 1, "b": 2}, "_meta": meta},
    }
    headers = {
        **AUTH,
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
    }
    with httpx.Client(timeout=10) as http:
        good = http.post(setup.url, json=body, headers={**headers, "mcp-name": "example.add"})
        assert good.status_code == 200 and good.json()["result"]["structuredContent"] == {"sum": 3}
        assert "mcp-session-id" not in good.headers
        bad = http.post(setup.url, json=body, headers={**headers, "mcp-name": "example.echo"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == -32020
        foreign = http.post(
            setup.url,
            json=body,
            headers={**headers, "mcp-name": "example.add", "host": "evil.test"},
        )
        assert foreign.status_code == 403
        assert (
            http.get(setup.url, headers={**AUTH, "accept": "text/event-stream"}).status_code == 405
        )


async def _everything_form(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada", "color": "red", "email": "a@b.c"}}


async def test_a_handshake_upstream_asks_a_handshake_client(setup: Setup) -> None:
    """server-everything (a handshake-era upstream) sends elicitation/create mid-call:
    relayed to the handshake-era client of the one call in flight, and asked of a
    2026-07-28 client by MRTR, the upstream's call parked meanwhile (before, that
    client was refused)."""
    handlers = ClientHandlers(elicitation=_everything_form)
    async with open_http_client(
        setup.url, headers=AUTH, mode="legacy", handlers=handlers
    ) as client:
        done = await client.call_tool("everything.trigger-elicitation-request", {})
        assert "Ada" in _text(done) and not done.get("isError")
    async with open_http_client(
        setup.url, headers=AUTH, mode="modern", handlers=handlers
    ) as client:
        done = await client.call_tool("everything.trigger-elicitation-request", {})
        assert "Ada" in _text(done) and not done.get("isError")


async def test_answers_and_questions_fit_the_clients_revision(setup: Setup) -> None:
    """server-everything speaks 2025-11-25 with the gateway: a 2025-03-26 client gets
    its resource links as text, a 2025-06-18 client a form its revision can show (the
    multi-selects it cannot are left out), and -32021 for a URL it cannot open."""
    async with open_http_client(setup.url, headers=AUTH, protocol_version="2025-03-26") as client:
        links = await client.call_tool("everything.get-resource-links", {"count": 2})
    assert {c["type"] for c in links["content"]} <= REVISIONS["2025-03-26"].content_types
    assert "demo://resource/dynamic/text/2" in _text(links)

    asked: list[dict[str, Any]] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    handlers = ClientHandlers(elicitation=answer)
    async with open_http_client(
        setup.url, headers=AUTH, protocol_version="2025-06-18", handlers=handlers
    ) as client:
        done = await client.call_tool("everything.trigger-elicitation-request", {})
        assert "Ada" in _text(done) and not done.get("isError")
        with pytest.raises(MissingRequiredClientCapability) as info:
            await client.call_tool(
                "everything.trigger-url-elicitation", {"url": "https://example.com/"}
            )
    assert info.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    schema = load_schema("2025-06-18")
    assert schema is not None, missing_schema_message("2025-06-18")
    assert len(asked) == 1
    form = {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": asked[0]}
    assert schema.errors("ElicitRequest", form) == []


def test_a_url_elicitation_error_reaches_a_stateless_client_as_input_required(
    setup: Setup,
) -> None:
    """2026-07-28 may not emit -32042: the upstream's URL elicitation error becomes
    the same question by MRTR, or -32021 for a client without URL mode."""
    import httpx

    def call(elicitation: dict[str, Any], elicitation_id: str) -> dict[str, Any]:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": elicitation},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        }
        name = "everything.trigger-url-elicitation"
        arguments = {"url": "https://example.com/", "errorPath": True}
        arguments["elicitationId"] = elicitation_id
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta},
        }
        headers = {
            **AUTH,
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": name,
        }
        with httpx.Client(timeout=30) as http:
            answer = http.post(setup.url, json=body, headers=headers)
        if answer.headers["content-type"].startswith("text/event-stream"):
            data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
            return dict(json.loads(data[-1]))
        return dict(answer.json())

    # (Another id each time: server-everything takes the same one again as the retry.)
    asked = call({"url": {}}, "first")["result"]
    assert asked["resultType"] == "input_required"
    (question,) = asked["inputRequests"].values()
    assert question["method"] == "elicitation/create"
    assert question["params"]["mode"] == "url" and "elicitationId" not in question["params"]
    assert question["params"]["url"].startswith("https://")
    refused = call({"form": {}}, "second")["error"]
    assert refused["code"] == -32021
    assert refused["data"]["requiredCapabilities"] == {"elicitation": {"url": {}}}


@pytest.mark.parametrize("mode", ["modern", "legacy"])
async def test_an_upstream_error_names_its_connector(setup: Setup, mode: str) -> None:
    """The upstream's own error (its code and data untouched) says which connector
    gave it: the client called ``example.echo``, the upstream knows only ``echo``."""
    async with open_http_client(setup.url, headers=AUTH, mode=mode) as client:
        with pytest.raises(InvalidParams) as info:
            await client.call_tool("example.echo", {})
    assert info.value.message.startswith("connector 'example': ")
    assert "'message'" in info.value.message
