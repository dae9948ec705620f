"""Everything emitted in the stateless 2026-07-28 revision validates against its schema.

The schema is read from ``$MCP_SCHEMA_DIR/2026-07-28/schema.json`` (default
``../shared/mcp-schema`` next to the project root) and never copied here.  Each
test drives an in-memory stateless :class:`ClientSession` <-> :class:`ServerSession`
(most through a :class:`Server` whose ``handle`` answers the requests), then
checks every message either side emitted: against ``JSONRPCMessage``, the
request/notification definition its method names, the specific result
definition of the request it answers (``InputRequiredResult`` for interim MRTR
results) and, for errors, the 2026 error definitions.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from typing import Any

import pytest

from sansio_mcp import (
    CancelRequested,
    ErrorCode,
    MissingRequiredClientCapability,
    NotificationReceived,
    ProgressReceived,
    RequestFailed,
    ResponseReceived,
    ServerSession,
    SessionState,
)
from sansio_mcp._events import InputRequired, SubscriptionAcknowledged
from sansio_mcp._versions import (
    CACHEABLE_METHODS,
    HANDSHAKE_REVISIONS,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MRTR_METHODS,
    STATELESS_REVISIONS,
)
from sansio_mcp.runtime._server import Context, Server

from .helpers import (
    ELICIT_REQUEST,
    ELICIT_SCHEMA,
    ROOTS_REQUEST,
    SAMPLING_REQUEST,
    SERVER_CAPS,
    SERVER_INFO,
    STATELESS,
    Link,
    Schema,
    answers_for,
    discovered,
    lines,
    load_schema,
    meta,
    raw_notification,
    raw_request,
    run_handler,
    stateless_client,
    violations,
)

RESULT_DEFS = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
#: Error codes with a whole-message definition in 2026-07-28.
ERROR_MESSAGE_DEFS = {
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: "UnsupportedProtocolVersionError",
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: "MissingRequiredClientCapabilityError",
    ErrorCode.HEADER_MISMATCH: "HeaderMismatchError",
}
#: Error codes with a definition of the ``error`` object.
ERROR_OBJECT_DEFS = {
    ErrorCode.INVALID_PARAMS: "InvalidParamsError",
    ErrorCode.METHOD_NOT_FOUND: "MethodNotFoundError",
    ErrorCode.INVALID_REQUEST: "InvalidRequestError",
    ErrorCode.INTERNAL_ERROR: "InternalError",
    ErrorCode.PARSE_ERROR: "ParseError",
}


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_schema(STATELESS)


def check_conversation(
    schema: Schema, link: Link, raw_methods: dict[Any, str] | None = None
) -> Counter[str]:
    """Validate every message ``link`` recorded; return how often each definition was used.

    ``raw_methods`` names the methods of hand-written requests (by id) so their
    results can be checked too.
    """
    used: Counter[str] = Counter()

    def validate(name: str, instance: Any) -> None:
        schema.validate(name, instance)
        used[name] += 1

    methods: dict[Any, str] = dict(raw_methods or {})
    for sender, message in link.emitted:
        validate("JSONRPCMessage", message)
        if "method" in message:
            method = message["method"]
            assert method in schema.method_defs, f"{method} is not a {STATELESS} method"
            validate(schema.method_defs[method], message)
            if "id" in message:
                assert sender == "client", f"a {STATELESS} server sent a request: {message}"
                validate("ClientRequest", message)
                methods[message["id"]] = method
            else:
                validate(
                    "ServerNotification" if sender == "server" else "ClientNotification", message
                )
        elif "result" in message:
            assert sender == "server", message
            method = methods[message["id"]]
            result = message["result"]
            # Servers implementing 2026-07-28 MUST include resultType, and SHOULD serverInfo.
            assert result.get("resultType") in ("complete", "input_required"), message
            assert result["_meta"][META_SERVER_INFO]["name"], message
            validate("ServerResult", result)
            if result["resultType"] == "input_required":
                assert method in MRTR_METHODS, f"{method} may not return input_required"
                assert "inputRequests" in result or "requestState" in result, message
                assert "ttlMs" not in result and "cacheScope" not in result, message
                validate("InputRequiredResult", result)
            else:
                definition = RESULT_DEFS[method]
                validate(definition, result)
                if "ttlMs" in schema.defs[definition].get("required", ()):
                    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0, message
                    assert result["cacheScope"] in ("public", "private"), message
            response_def = f"{RESULT_DEFS[method]}Response"
            if response_def in schema.defs:
                validate(response_def, message)
        else:
            assert sender == "server", f"a {STATELESS} client sent a response: {message}"
            validate("JSONRPCErrorResponse", message)
            code = message["error"]["code"]
            assert code not in (-32002, -32042), f"{STATELESS} must not emit {code}: {message}"
            if code in ERROR_MESSAGE_DEFS:
                validate(ERROR_MESSAGE_DEFS[code], message)
            elif code in ERROR_OBJECT_DEFS:
                validate(ERROR_OBJECT_DEFS[code], message["error"])
    assert used["JSONRPCMessage"] == len(link.emitted)
    return used


# ----------------------------------------------------------------------------- app


def build_app(**options: Any) -> Server:
    app = Server(
        "modern-app",
        "1.2.3",
        title="Modern app",
        instructions="Every request stands alone.",
        state_key=b"k" * 32,
        **options,
    )

    @app.tool(description="Add two integers.")
    def add(a: int, b: int) -> dict:
        return {"sum": a + b}

    @app.tool(description="Ask the user, the model and the roots, one round each.")
    async def survey(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", ELICIT_SCHEMA)
        sample = await ctx.sample("Say hi", max_tokens=20)
        roots = await ctx.list_roots()
        return f"{answer['content']['name']}|{sample['content']['text']}|{roots[0]['uri']}"

    @app.tool(description="Needs the model.")
    async def think(ctx: Context) -> str:
        sample = await ctx.sample("Think", max_tokens=5)
        return str(sample["content"]["text"])

    @app.tool(description="Sends the user to a page.")
    async def visit(ctx: Context) -> str:
        result = await ctx.elicit_url("Log in", "https://example.com/login", "e-1")
        return str(result["action"])

    @app.tool(description="Reports progress and logs.")
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half way")
        await ctx.log("debug", "noise")
        await ctx.log("info", {"step": 1})
        await ctx.log("error", "bad", logger="worker")
        await ctx.report_progress(2, 2)
        return "done"

    @app.resource("file:///readme.txt", mime_type="text/plain", description="The readme")
    def readme() -> str:
        return "hello"

    @app.resource("file:///logo.png", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG\r\n"

    @app.resource_template(
        "file:///notes/{name}",
        mime_type="text/plain",
        completers={
            "name": lambda value, context: [n for n in ("alpha", "beta") if n.startswith(value)]
        },
    )
    def note(name: str) -> str:
        return f"note {name}"

    @app.prompt(
        description="Greets.",
        completers={"style": lambda value, context: ["formal", "casual"]},
    )
    def greet(style: str = "casual") -> str:
        return f"Say hello, {style}."

    @app.prompt(description="Asks first.")
    async def confirm(ctx: Context) -> list:
        answer = await ctx.elicit("Sure?", ELICIT_SCHEMA)
        text = f"confirmed by {answer['content']['name']}"
        return [{"role": "user", "content": {"type": "text", "text": text}}]

    return app


def app_link(app: Server | None = None, **client_options: Any) -> Link:
    app = app or build_app()
    return discovered(Link(stateless_client(**client_options), app.create_session(), app))


async def call(link: Link, method: str, params: dict | None = None, **kw: Any) -> list:
    rid = link.client.send_request(method, params, **kw)
    events = await link.serve()
    assert all(getattr(e, "request_id", rid) == rid for e in events), events
    return events


async def call_result(link: Link, method: str, params: dict | None = None, **kw: Any) -> dict:
    events = await call(link, method, params, **kw)
    done = [e for e in events if isinstance(e, ResponseReceived)]
    assert len(done) == 1, events
    return done[0].result


# --------------------------------------------------------------------------- tests


def test_the_schema_check_can_fail(schema: Schema) -> None:
    """The validators reject what the revision forbids (so passing means something)."""
    good = {
        "resultType": "complete",
        "tools": [],
        "ttlMs": 0,
        "cacheScope": "private",
    }
    assert schema.is_valid("ListToolsResult", good)
    assert not schema.is_valid("ListToolsResult", {k: v for k, v in good.items() if k != "ttlMs"})
    assert not schema.is_valid("Result", {"tools": []})  # no resultType
    assert not schema.is_valid(
        "CallToolRequest",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
    )  # no _meta
    assert not schema.is_valid(
        "UnsupportedProtocolVersionError",
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "no"}},
    )  # no data.supported / data.requested


def test_cacheable_methods_match_the_schema(schema: Schema) -> None:
    """The library's list of results that carry ttlMs/cacheScope is the schema's."""
    required = {
        method
        for method, definition in RESULT_DEFS.items()
        if "ttlMs" in schema.defs[definition].get("required", ())
    }
    assert required == set(CACHEABLE_METHODS)


def test_mrtr_methods_match_the_schema(schema: Schema) -> None:
    """Exactly the requests whose response may be an InputRequiredResult."""
    may_ask = set()
    for method, definition in RESULT_DEFS.items():
        response = schema.defs.get(f"{definition}Response")
        if response and "InputRequiredResult" in str(response["properties"]["result"]):
            may_ask.add(method)
    assert may_ask == set(MRTR_METHODS)


async def test_discover(schema: Schema) -> None:
    app = build_app()
    link = app_link(app)
    [request, response] = link.emitted
    assert request[1]["method"] == "server/discover"
    result = response[1]["result"]
    assert STATELESS in result["supportedVersions"]
    assert result["capabilities"] == app.capabilities
    assert result["instructions"] == "Every request stands alone."
    assert result["_meta"][META_SERVER_INFO] == app.info
    assert result["resultType"] == "complete"
    assert link.client.peer_info == app.info
    used = check_conversation(schema, link)
    assert used["DiscoverRequest"] == used["DiscoverResult"] == used["DiscoverResultResponse"] == 1


async def test_lists_reads_prompts_and_completion(schema: Schema) -> None:
    link = app_link()
    tools = await call_result(link, "tools/list")
    assert {t["name"] for t in tools["tools"]} == {"add", "survey", "think", "visit", "work"}
    prompts = await call_result(link, "prompts/list")
    assert {p["name"] for p in prompts["prompts"]} == {"greet", "confirm"}
    resources = await call_result(link, "resources/list")
    assert {r["uri"] for r in resources["resources"]} == {"file:///readme.txt", "file:///logo.png"}
    templates = await call_result(link, "resources/templates/list")
    assert templates["resourceTemplates"][0]["uriTemplate"] == "file:///notes/{name}"

    text = await call_result(link, "resources/read", {"uri": "file:///readme.txt"})
    assert text["contents"] == [
        {"uri": "file:///readme.txt", "mimeType": "text/plain", "text": "hello"}
    ]
    blob = await call_result(link, "resources/read", {"uri": "file:///logo.png"})
    assert base64.b64decode(blob["contents"][0]["blob"]) == b"\x89PNG\r\n"
    templated = await call_result(link, "resources/read", {"uri": "file:///notes/x"})
    assert templated["contents"][0]["text"] == "note x"

    prompt = await call_result(
        link, "prompts/get", {"name": "greet", "arguments": {"style": "formal"}}
    )
    assert prompt["messages"][0]["content"]["text"] == "Say hello, formal."

    completion = await call_result(
        link,
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "file:///notes/{name}"},
            "argument": {"name": "name", "value": "al"},
        },
    )
    assert completion["completion"]["values"] == ["alpha"]
    completion = await call_result(
        link,
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "style", "value": ""},
        },
    )
    assert completion["completion"]["values"] == ["formal", "casual"]

    used = check_conversation(schema, link)
    for name in (
        "ListToolsResult",
        "ListPromptsResult",
        "ListResourcesResult",
        "ListResourceTemplatesResult",
        "ReadResourceResult",
        "GetPromptResult",
        "CompleteResult",
        "ReadResourceRequest",
        "CompleteRequest",
        "GetPromptRequest",
    ):
        assert used[name] >= 1, name
    assert used["ReadResourceResult"] == 3
    # resources/read is immediately stale by default; lists are cacheable for a while.
    results = {m["id"]: m["result"] for s, m in link.emitted if "result" in m}
    reads = [r for r in results.values() if "contents" in r]
    assert all(r["ttlMs"] == 0 for r in reads)
    assert results[1]["ttlMs"] > 0 and results[1]["cacheScope"] == "private"


async def test_tools_call_complete(schema: Schema) -> None:
    link = app_link()
    result = await call_result(link, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result["structuredContent"] == {"sum": 5}
    assert result["isError"] is False
    assert "ttlMs" not in result  # tools/call results are not cacheable
    used = check_conversation(schema, link)
    assert used["CallToolResult"] == used["CallToolResultResponse"] == 1


async def test_tools_call_input_required_rounds(schema: Schema) -> None:
    """Elicitation, sampling and roots, one round each, answered and retried."""
    link = app_link()
    rid = link.client.send_request("tools/call", {"name": "survey", "arguments": {}})
    asked: list[str] = []
    states: list[str] = []
    for round_ in (1, 2, 3):
        [event] = await link.serve()
        assert isinstance(event, InputRequired), event
        assert (event.request_id, event.round) == (rid, round_)
        [(_key, request)] = event.input_requests.items()
        asked.append(request["method"])
        assert isinstance(event.request_state, str)
        states.append(event.request_state)
        retry_id = link.client.provide_input(rid, answers_for(event.input_requests))
        assert retry_id != rid
    [done] = await link.serve()
    assert isinstance(done, ResponseReceived) and done.request_id == rid
    assert done.result["content"][0]["text"] == "octocat|hello|file:///work"
    assert asked == ["elicitation/create", "sampling/createMessage", "roots/list"]

    sent = [m for m in link.sent_by("client") if m.get("method") == "tools/call"]
    assert len({m["id"] for m in sent}) == 4  # every retry has a new id
    assert "requestState" not in sent[0]["params"] and "inputResponses" not in sent[0]["params"]
    for retry, state in zip(sent[1:], states, strict=True):
        assert retry["params"]["requestState"] == state  # echoed exactly
        assert retry["params"]["name"] == "survey"
    used = check_conversation(schema, link)
    assert used["InputRequiredResult"] == 3
    assert used["CallToolRequest"] == 4
    assert link.client.pending_requests == frozenset()
    assert link.server.open_requests == frozenset()


async def test_input_required_every_kind_at_once_and_state_only(schema: Schema) -> None:
    """Several input requests in one result, then a requestState-only (load-shedding)
    round, on each method that may ask: tools/call, prompts/get, resources/read."""
    client = stateless_client()
    server = ServerSession(capabilities=SERVER_CAPS, server_info=SERVER_INFO)
    link = discovered(Link(client, server))
    for method, params in (
        ("tools/call", {"name": "t", "arguments": {"x": 1}}),
        ("prompts/get", {"name": "p"}),
        ("resources/read", {"uri": "file:///r"}),
    ):
        rid = client.send_request(method, params)
        [received] = link.c2s()
        requests = {"who": ELICIT_REQUEST, "model": SAMPLING_REQUEST, "where": ROOTS_REQUEST}
        server.respond(
            received.request_id,
            {"resultType": "input_required", "inputRequests": requests, "requestState": "s-1"},
        )
        [event] = link.s2c()
        assert isinstance(event, InputRequired) and event.input_requests == requests
        client.provide_input(rid, answers_for(requests))
        [retry] = link.c2s()
        assert retry.params["inputResponses"] == answers_for(requests)
        assert retry.params["requestState"] == "s-1"
        server.respond(retry.request_id, {"resultType": "input_required", "requestState": "s-2"})
        [event] = link.s2c()
        assert isinstance(event, InputRequired)
        assert (event.input_requests, event.request_state, event.round) == ({}, "s-2", 2)
        client.provide_input(rid, {})
        [again] = link.c2s()
        assert again.params["requestState"] == "s-2"
        final = {
            "tools/call": {"content": []},
            "prompts/get": {"messages": []},
            "resources/read": {"contents": []},
        }[method]
        server.respond(again.request_id, final)
        [done] = link.s2c()
        assert isinstance(done, ResponseReceived) and done.request_id == rid
    used = check_conversation(schema, link)
    assert used["InputRequiredResult"] == 6
    for name in ("CallToolResultResponse", "GetPromptResultResponse", "ReadResourceResultResponse"):
        assert used[name] == 3, name


async def test_prompts_get_input_required(schema: Schema) -> None:
    link = app_link()
    rid = link.client.send_request("prompts/get", {"name": "confirm"})
    [event] = await link.serve()
    assert isinstance(event, InputRequired) and event.method == "prompts/get"
    link.client.provide_input(rid, answers_for(event.input_requests))
    [done] = await link.serve()
    assert isinstance(done, ResponseReceived) and done.request_id == rid
    assert done.result["messages"][0]["content"]["text"] == "confirmed by octocat"
    used = check_conversation(schema, link)
    assert used["InputRequiredResult"] == 1 and used["GetPromptResult"] == 1


async def test_subscriptions(schema: Schema) -> None:
    link = app_link()
    client, server = link.client, link.server
    everything = client.send_request(
        "subscriptions/listen",
        {
            "notifications": {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourcesListChanged": True,
                "resourceSubscriptions": ["file:///readme.txt"],
            }
        },
    )
    tools_only = client.send_request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    prompts_only = client.send_request(
        "subscriptions/listen", {"notifications": {"promptsListChanged": True}}
    )
    events = await link.serve()
    assert events == [
        SubscriptionAcknowledged(
            everything,
            {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourcesListChanged": True,
                "resourceSubscriptions": ["file:///readme.txt"],
            },
        ),
        SubscriptionAcknowledged(tools_only, {"toolsListChanged": True}),
        SubscriptionAcknowledged(prompts_only, {"promptsListChanged": True}),
    ]
    assert server.open_subscriptions == {everything, tools_only, prompts_only}
    client.cancel(prompts_only)  # the client closes one (stdio: notifications/cancelled)
    assert link.c2s() == []
    assert server.open_subscriptions == {everything, tools_only}

    for kind in ("tools", "prompts", "resources"):
        assert server.send_list_changed(kind)
    assert server.send_resource_updated("file:///readme.txt")
    assert not server.send_resource_updated("file:///logo.png")  # nobody asked
    events = link.s2c()
    tagged = [(e.method, e.subscription_id) for e in events if isinstance(e, NotificationReceived)]
    assert tagged == [
        ("notifications/tools/list_changed", everything),
        ("notifications/tools/list_changed", tools_only),
        ("notifications/prompts/list_changed", everything),
        ("notifications/resources/list_changed", everything),
        ("notifications/resources/updated", everything),
    ]
    server.end_subscription(everything)
    server.end_subscription(tools_only)
    events = link.s2c()
    assert [(type(e), e.request_id) for e in events] == [
        (ResponseReceived, everything),
        (ResponseReceived, tools_only),
    ]
    assert events[0].result["_meta"][META_SUBSCRIPTION_ID] == everything
    assert client.pending_requests == frozenset() and server.open_subscriptions == frozenset()

    # Every server notification on a subscription carries its id, after the ack.
    acked: set[Any] = set()
    for sender, message in link.emitted:
        if sender == "server" and "method" in message:
            sub = message["params"]["_meta"][META_SUBSCRIPTION_ID]
            if message["method"] == "notifications/subscriptions/acknowledged":
                acked.add(sub)
            assert sub in acked, message
    used = check_conversation(schema, link)
    assert used["SubscriptionsListenRequest"] == 3
    assert used["SubscriptionsAcknowledgedNotification"] == 3
    assert used["CancelledNotification"] == 1
    assert used["SubscriptionsListenResult"] == used["SubscriptionsListenResultResponse"] == 2
    for name in (
        "ToolListChangedNotification",
        "PromptListChangedNotification",
        "ResourceListChangedNotification",
        "ResourceUpdatedNotification",
    ):
        assert used[name] >= 1, name


@pytest.mark.parametrize("log_level", [None, "info"])
async def test_progress_and_logging(schema: Schema, log_level: str | None) -> None:
    link = app_link(log_level=log_level)
    events = await call(link, "tools/call", {"name": "work", "arguments": {}}, progress=True)
    progress = [(e.progress, e.total, e.message) for e in events if isinstance(e, ProgressReceived)]
    assert progress == [(1, 2, "half way"), (2, 2, None)]
    logs = [e.params for e in events if isinstance(e, NotificationReceived)]
    if log_level is None:
        # No logLevel in _meta: the server MUST NOT send notifications/message.
        assert logs == []
    else:
        assert [(p["level"], p["data"]) for p in logs] == [("info", {"step": 1}), ("error", "bad")]
        assert logs[1]["logger"] == "worker"
    assert isinstance(events[-1], ResponseReceived)
    used = check_conversation(schema, link)
    assert used["ProgressNotification"] == 2
    assert used["LoggingMessageNotification"] == (0 if log_level is None else 2)


async def test_cancellation(schema: Schema) -> None:
    client = stateless_client()
    server = ServerSession(capabilities=SERVER_CAPS, server_info=SERVER_INFO)
    link = discovered(Link(client, server))
    rid = client.send_request("tools/call", {"name": "slow"})
    [received] = link.c2s()
    client.cancel(rid, "changed my mind")
    assert link.c2s() == [CancelRequested(received.request_id, "changed my mind")]
    server.respond(received.request_id, {"content": []})  # too late: dropped
    assert server.data_to_send() == b""
    assert client.pending_requests == frozenset() and server.open_requests == frozenset()
    used = check_conversation(schema, link)
    assert used["CancelledNotification"] == used["ClientNotification"] == 1


# --------------------------------------------------------------------------- errors


async def test_error_missing_and_malformed_meta(schema: Schema) -> None:
    """-32602 for a request without the required _meta (stateless-only server) or
    with a malformed one (dual-era server)."""
    stateless_only = ServerSession(capabilities=SERVER_CAPS, supported_versions=STATELESS_REVISIONS)
    link = Link(stateless_client(), stateless_only)
    events = link.raw_to_server(raw_request("a", "tools/list"))
    events += link.raw_to_server(raw_request("b", "tools/list", {"cursor": "x"}))
    assert len(violations(events)) == 2
    dual = ServerSession(capabilities=SERVER_CAPS)
    dual_link = Link(stateless_client(), dual)
    bad_metas = [
        {"io.modelcontextprotocol/protocolVersion": STATELESS},  # no clientCapabilities
        meta(capabilities=[]),  # not an object
        {**meta(), "io.modelcontextprotocol/protocolVersion": 2026},
        meta(**{"io.modelcontextprotocol/logLevel": "loud"}),
        meta(**{"io.modelcontextprotocol/clientInfo": {"name": "x"}}),  # no version
    ]
    for i, bad in enumerate(bad_metas):
        dual_link.raw_to_server(raw_request(f"m{i}", "tools/list", {"_meta": bad}))
    for one in (link, dual_link):
        one.s2c()
        errors = [m for s, m in one.emitted]
        assert errors and all(m["error"]["code"] == ErrorCode.INVALID_PARAMS for m in errors)
        used = check_conversation(schema, one)
        assert used["InvalidParamsError"] == len(errors)
    assert dual.state is SessionState.IDLE and dual.open_requests == frozenset()


async def test_error_unsupported_version(schema: Schema) -> None:
    server = ServerSession(capabilities=SERVER_CAPS)
    link = Link(stateless_client(), server)
    link.raw_to_server(raw_request("v", "tools/list", {"_meta": meta(version="2099-01-01")}))
    link.raw_to_server(raw_request("d", "server/discover", {"_meta": meta(version="2025-11-25")}))
    stateless_only = ServerSession(capabilities=SERVER_CAPS, supported_versions=STATELESS_REVISIONS)
    refusing = Link(stateless_client(), stateless_only)
    refusing.raw_to_server(
        raw_request(
            "i",
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        )
    )
    link.s2c()
    refusing.s2c()
    [(_, v), (_, d)] = link.emitted
    assert v["error"]["data"] == {
        "supported": [STATELESS],  # only what _meta may name, not the handshake versions
        "requested": "2099-01-01",
    }
    assert d["error"]["data"]["requested"] == "2025-11-25"  # a legacy version is not stateless
    [(_, i)] = refusing.emitted
    assert i["error"]["code"] == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
    assert i["error"]["data"] == {"supported": [STATELESS], "requested": "2025-11-25"}
    for one in (link, refusing):
        used = check_conversation(schema, one)
        assert used["UnsupportedProtocolVersionError"] == len(one.emitted)


async def test_error_missing_client_capability(schema: Schema) -> None:
    """An input request the client cannot answer becomes -32021, never input_required."""
    link = app_link(capabilities={"elicitation": {"form": {}}})
    events = await call(link, "tools/call", {"name": "think", "arguments": {}})
    [failed] = events
    assert isinstance(failed, RequestFailed)
    assert isinstance(failed.error, MissingRequiredClientCapability)
    assert failed.error.data == {"requiredCapabilities": {"sampling": {}}}
    events = await call(link, "tools/call", {"name": "visit", "arguments": {}})
    assert events[0].error.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    assert not [
        m for s, m in link.emitted if m.get("result", {}).get("resultType") == "input_required"
    ]
    used = check_conversation(schema, link)
    assert used["MissingRequiredClientCapabilityError"] == 2


async def test_error_method_not_found_and_invalid_params(schema: Schema) -> None:
    server = ServerSession(capabilities={"tools": {}}, server_info=SERVER_INFO)
    link = Link(stateless_client(), server)
    raw = {
        "ping": "ping",
        "set-level": "logging/setLevel",
        "prompts": "prompts/list",  # no prompts capability
        "unknown": "no/such/method",
    }
    for id_, method in raw.items():
        params: dict[str, Any] = {"_meta": meta()}
        if method == "logging/setLevel":
            params["level"] = "info"
        link.raw_to_server(raw_request(id_, method, params))
    link.raw_to_server(raw_request("bad", "tools/call", {"_meta": meta(), "name": 7}))
    link.s2c()
    codes = {m["id"]: m["error"]["code"] for s, m in link.emitted}
    assert codes == {
        **dict.fromkeys(raw, ErrorCode.METHOD_NOT_FOUND),
        "bad": ErrorCode.INVALID_PARAMS,
    }
    used = check_conversation(schema, link)
    assert used["MethodNotFoundError"] == 4 and used["InvalidParamsError"] == 1


async def test_server_errors_from_handlers(schema: Schema) -> None:
    """Unknown tool, unknown resource (-32602 in 2026, SEP-2164), tampered requestState."""
    link = app_link()
    events = await call(link, "tools/call", {"name": "nope", "arguments": {}})
    assert events[0].error.code == ErrorCode.INVALID_PARAMS
    events = await call(link, "resources/read", {"uri": "file:///missing"})
    assert events[0].error.code == ErrorCode.INVALID_PARAMS
    assert events[0].error.data == {"uri": "file:///missing"}
    events = await call(
        link, "tools/call", {"name": "survey", "arguments": {}, "requestState": "forged.token"}
    )
    assert events[0].error.code == ErrorCode.INVALID_PARAMS
    used = check_conversation(schema, link)
    assert used["InvalidParamsError"] == 3


async def test_dual_era_server_messages_stay_valid_per_era(schema: Schema) -> None:
    """A legacy handshake on the same server does not leak into stateless answers."""
    app = build_app()
    server = app.create_session()
    link = Link(stateless_client(), server, app)
    link.raw_to_server(
        raw_request(
            "init",
            "initialize",
            {
                "protocolVersion": HANDSHAKE_REVISIONS[-1],
                "capabilities": {},
                "clientInfo": {"name": "legacy", "version": "1"},
            },
        )
    )
    link.raw_to_server(raw_notification("notifications/initialized"))
    server.data_to_send()  # the legacy answer is not a 2026 message
    assert server.state is SessionState.READY
    discovered(link)
    result = await call_result(link, "tools/list")
    assert result["resultType"] == "complete" and result["_meta"][META_SERVER_INFO] == app.info
    check_conversation(schema, link)
    # ... and the handshake session's answers stay shaped for its own revision.
    [received] = link.raw_to_server(raw_request("legacy-1", "tools/list"))
    assert received.meta is None
    await run_handler(app, server, received, link.now)
    [answer] = [json.loads(c) for c in lines(server.data_to_send())]
    assert "resultType" not in answer["result"] and "ttlMs" not in answer["result"]
    assert "_meta" not in answer["result"]
    load_schema(HANDSHAKE_REVISIONS[-1]).validate("ListToolsResult", answer["result"])
