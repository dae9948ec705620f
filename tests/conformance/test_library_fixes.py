"""The library behaviours the official conformance suite called for, pinned
without Node: each test drives the sans-IO machines directly.

* MRTR input keys and several input requests in one round (input-required-result-*)
* a stateless POST whose ``_meta`` lacks the version: 400 / -32602 with its id (server-stateless)
* -32021 raised by a handler is an HTTP 400 while no output was sent (server-stateless)
* ``Mcp-Param-*`` headers checked against the tool's ``x-mcp-header`` parameters
  (http-custom-header-server-validation)
* 2025-11-25 POST streams open with a priming event carrying ``retry`` (server-sse-polling)
* a client retries once when -32022 lists the very version it sent (request-metadata)
* a client mirrors ``x-mcp-header`` parameters and drops invalid tools (http-custom-headers,
  http-invalid-tool-headers)
* a client resumes a POST stream that ended unanswered (sse-retry)
"""

from __future__ import annotations

import json
from typing import Any

from sansio_mcp import (
    NEED_DATA,
    ClientSession,
    Event,
    MCPError,
    RequestReceived,
    ServerSession,
    Session,
    SessionState,
)
from sansio_mcp._events import RequestFailed
from sansio_mcp._http import HTTPRequest, HTTPResponseHead
from sansio_mcp._stateless import parse_request_meta
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp._streamable_http_client import Endpoint, ResponseHandler, StreamableHTTPClient
from sansio_mcp._versions import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from sansio_mcp.runtime._server import Context, Server
from tests.stateless.helpers import HarnessHost

STATELESS = "2026-07-28"
HOST = {"host": "127.0.0.1:8000"}
POST_HEADERS = {
    **HOST,
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}
REGION_SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
}


def drain(session: Session) -> list[Event]:
    events: list[Event] = []
    while (event := session.next_event()) is not NEED_DATA:
        events.append(event)  # type: ignore[arg-type]
    return events


async def run_handler(app: Server, session: ServerSession, event: Any, now: float) -> None:
    """Answer a request as the adapters do: its result, or the MCPError raised."""
    try:
        result = await app.handle(Context.for_request(event, session, now=now, host=HarnessHost()))
    except MCPError as error:
        session.respond_error(event.request_id, error)
    else:
        session.respond(event.request_id, result)


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {META_PROTOCOL_VERSION: STATELESS, META_CLIENT_CAPABILITIES: capabilities or {}}


def build_app() -> Server:
    app = Server("fixes", "1.0")

    @app.tool()
    async def named(ctx: Context) -> str:
        """One input request under a key of our choosing."""
        answer = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="user"
        )
        return f"hello {answer['content']['name']}"

    @app.tool()
    async def several(ctx: Context) -> str:
        """Two input requests in one round."""
        answers = await ctx.request_many(
            {
                "roots": {"method": "roots/list", "params": {}},
                "model": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                        "maxTokens": 5,
                    },
                },
            }
        )
        return f"{len(answers['roots']['roots'])} {answers['model']['content']['text']}"

    @app.tool()
    async def needs_sampling(ctx: Context) -> str:
        """Asks the model, so it needs the sampling capability."""
        await ctx.sample("hi", max_tokens=5)
        return "sampled"

    @app.tool(input_schema=REGION_SCHEMA)
    def regional(region: str) -> str:
        """Its region travels in Mcp-Param-Region too."""
        return region

    return app


async def call(app: Server, name: str, **extra: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": {}, "_meta": meta({"sampling": {}, "roots": {}}), **extra}
    event = RequestReceived(1, "tools/call", params, None, parse_request_meta(params))
    return await app.handle(
        Context.for_request(event, app.create_session(), now=1000.0, host=HarnessHost())
    )


async def test_input_requests_use_the_keys_given() -> None:
    app = build_app()
    first = await call(app, "named")
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["user"]
    answer = {"action": "accept", "content": {"name": "Ada"}}
    done = await call(app, "named", inputResponses={"user": answer})
    assert done["content"][0]["text"] == "hello Ada"


async def test_request_many_asks_for_everything_in_one_round() -> None:
    app = build_app()
    first = await call(app, "several")
    assert sorted(first["inputRequests"]) == ["model", "roots"]
    assert isinstance(first["requestState"], str)
    responses = {
        "roots": {"roots": [{"uri": "file:///a"}]},
        "model": {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"},
    }
    done = await call(app, "several", inputResponses=responses, requestState=first["requestState"])
    assert done["content"][0]["text"] == "1 yo"


def post(message: dict[str, Any], **headers: str) -> HTTPRequest:
    return HTTPRequest("POST", "/mcp", {**POST_HEADERS, **headers}, json.dumps(message).encode())


def stateless_post(
    request_id: int, method: str, params: dict[str, Any], **headers: str
) -> HTTPRequest:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    standard = {"mcp-protocol-version": STATELESS, "mcp-method": method}
    if "name" in params:
        standard["mcp-name"] = params["name"]
    return post(message, **{**standard, **headers})


def test_stateless_request_without_version_in_meta_is_invalid_params() -> None:
    machine = StreamableHTTPServer(build_app().create_session)
    exchange = machine.handle(
        post(
            {"jsonrpc": "2.0", "id": 101, "method": "server/discover", "params": {}},
            **{"mcp-protocol-version": STATELESS, "mcp-method": "server/discover"},
        )
    )
    assert exchange.status == 400
    body = json.loads(exchange.take())
    assert body["id"] == 101 and body["error"]["code"] == -32602


async def test_missing_capability_from_a_handler_is_http_400() -> None:
    app = build_app()
    machine = StreamableHTTPServer(app.create_session)
    params = {"name": "needs_sampling", "arguments": {}, "_meta": meta()}
    exchange = machine.handle(stateless_post(7, "tools/call", params))
    assert exchange.streaming and not exchange.head_ready
    session = exchange.session
    assert session is not None
    [event] = drain(session)
    await run_handler(app, session, event, 1000.0)
    machine.flush(session)
    assert not exchange.streaming and exchange.finished
    assert exchange.status == 400
    body = json.loads(exchange.take())
    assert body["id"] == 7 and body["error"]["code"] == -32021
    assert body["error"]["data"]["requiredCapabilities"] == {"sampling": {}}


async def test_a_committed_head_keeps_its_status() -> None:
    app = build_app()
    machine = StreamableHTTPServer(app.create_session)
    params = {"name": "needs_sampling", "arguments": {}, "_meta": meta()}
    exchange = machine.handle(stateless_post(8, "tools/call", params))
    exchange.commit_head()  # the adapter's grace period ran out: the head went out
    session = exchange.session
    assert session is not None
    [event] = drain(session)
    await run_handler(app, session, event, 1000.0)
    machine.flush(session)
    assert exchange.streaming and exchange.status == 200
    assert b"-32021" in exchange.take()


def test_custom_param_headers_are_checked_against_the_tool() -> None:
    app = build_app()
    machine = StreamableHTTPServer(
        app.create_session,
        tool_input_schema=lambda name: app.tools[name].input_schema if name in app.tools else None,
    )
    params = {"name": "regional", "arguments": {"region": "Hello"}, "_meta": meta()}
    cases = {
        "Hello": 200,
        "=?base64?SGVsbG8=?=": 200,
        "=?base64?SGVsbG8?=": 400,  # bad padding
        "=?base64?SGVs!!!bG8=?=": 400,  # not base64
        "Goodbye": 400,
    }
    for value, status in cases.items():
        exchange = machine.handle(
            stateless_post(9, "tools/call", params, **{"mcp-param-region": value})
        )
        assert exchange.status == status, value
        if status == 400:
            assert json.loads(exchange.take())["error"]["code"] == -32020
    missing = machine.handle(stateless_post(10, "tools/call", params))
    assert missing.status == 400


def open_session(machine: StreamableHTTPServer, version: str) -> str:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    session_id = machine.handle(post(initialize)).headers["mcp-session-id"]
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": version}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert machine.handle(post(initialized, **headers)).status == 202
    return session_id


def test_post_streams_open_with_a_priming_event_from_2025_11_25() -> None:
    machine = StreamableHTTPServer(build_app().create_session)
    for version, primed in (("2025-11-25", True), ("2025-06-18", False)):
        session_id = open_session(machine, version)
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        headers = {"mcp-session-id": session_id, "mcp-protocol-version": version}
        exchange = machine.handle(post(listing, **headers))
        # Until the head goes out the answer may still become plain JSON: no event yet.
        assert not exchange.head_ready and exchange.take() == b""
        exchange.commit_head()  # the adapter's grace period ran out: an SSE stream opens
        first = exchange.take()
        if primed:
            assert first == b"id: s0-0\nretry: 1000\ndata: \n\n"
        else:
            assert first == b""


def discover_error(request_id: Any) -> dict[str, Any]:
    data = {"supported": [STATELESS], "requested": STATELESS}
    error = {"code": -32022, "message": "unsupported", "data": data}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def test_client_retries_once_when_refused_the_version_it_sent() -> None:
    client = ClientSession(mode="modern")
    client.start()
    [first] = client.messages_to_send()
    client.receive_message(discover_error(first["id"]))
    [retry] = client.messages_to_send()
    assert retry["method"] == "server/discover" and retry["id"] != first["id"]
    assert retry["params"]["_meta"][META_PROTOCOL_VERSION] == STATELESS
    client.receive_message(discover_error(retry["id"]))
    assert client.messages_to_send() == []
    assert any(isinstance(e, RequestFailed) for e in drain(client))


def stateless_transport() -> tuple[ClientSession, StreamableHTTPClient]:
    client = ClientSession(mode="modern")
    transport = StreamableHTTPClient(Endpoint.parse("http://127.0.0.1:8000/mcp"), client)
    client.start()
    [discover] = client.messages_to_send()
    result = {
        "supportedVersions": [STATELESS],
        "capabilities": {"tools": {}},
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
    }
    transport.deliver([{"jsonrpc": "2.0", "id": discover["id"], "result": result}])
    assert client.state is SessionState.STATELESS
    drain(client)
    return client, transport


def test_client_mirrors_x_mcp_header_parameters_of_listed_tools() -> None:
    client, transport = stateless_transport()
    client.send_request("tools/list", {})
    [listing] = client.messages_to_send()
    transport.post_headers(listing)
    bad = {
        "type": "object",
        "properties": {"value": {"type": "string", "x-mcp-header": "My Region"}},
    }
    tools = [
        {"name": "regional", "inputSchema": REGION_SCHEMA},
        {"name": "broken", "inputSchema": bad},
    ]
    result = {"tools": tools, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    transport.deliver([{"jsonrpc": "2.0", "id": listing["id"], "result": result}])
    assert set(transport.tool_schemas) == {"regional"}
    client.send_request("tools/call", {"name": "regional", "arguments": {"region": " eu "}})
    [tool_call] = client.messages_to_send()
    headers = transport.post_headers(tool_call)
    assert headers["mcp-param-region"] == "=?base64?IGV1IA==?="
    assert headers["mcp-name"] == "regional"


def test_a_post_stream_that_ends_unanswered_is_resumed() -> None:
    client = ClientSession(mode="legacy", protocol_version="2025-11-25")
    transport = StreamableHTTPClient(Endpoint.parse("http://127.0.0.1:8000/mcp"), client)
    client.start()
    [initialize] = client.messages_to_send()
    result = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    }
    transport.deliver([{"jsonrpc": "2.0", "id": initialize["id"], "result": result}])
    transport.session_id = "abc"
    client.messages_to_send()  # notifications/initialized
    client.send_request("tools/list")
    [listing] = client.messages_to_send()
    response = ResponseHandler(transport, listing, max_body=1 << 20)
    head = HTTPResponseHead(200, {"content-type": "text/event-stream"})
    response.on_head(head)
    response.on_body(b"id: e-1\nretry: 250\ndata: \n\n")
    response.on_end()
    assert response.needs_resume and response.last_event_id == "e-1"
    assert transport.retry_delay == 0.25
    headers = transport.resume_headers("e-1")
    assert headers["last-event-id"] == "e-1" and headers["mcp-session-id"] == "abc"
    # Once the answer arrived (on the resumed stream), nothing is left to resume.
    resumed = ResponseHandler(transport, listing, max_body=1 << 20)
    resumed.on_head(head)
    answer = {"jsonrpc": "2.0", "id": listing["id"], "result": {"tools": []}}
    resumed.on_body(b"id: e-2\ndata: " + json.dumps(answer).encode() + b"\n\n")
    assert not resumed.needs_resume
