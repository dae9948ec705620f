"""Streamable HTTP, ours <-> ours: ``serve_http`` with ``open_http_client`` in
every mode, and raw HTTP (plain sockets + h11) wherever the status codes and
headers themselves are what is being tested.

One endpoint serves both eras: an ``initialize`` POST starts a handshake
session (``Mcp-Session-Id``); a POST whose ``_meta`` names 2026-07-28 is
served statelessly.  Every server runs on 127.0.0.1:0 inside the test and is
stopped at its end; every test body is bounded by ``BUDGET`` seconds.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
from typing import Any

import pytest
import trio

from sansio_mcp import HANDSHAKE_REVISIONS, MCPError
from sansio_mcp._streamable_http import Exchange, StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_http, serve_router

from .helpers import (
    COUNTER_URI,
    EXAMPLE_TOOLS,
    INITIALIZED,
    NEWEST_HANDSHAKE,
    POST_HEADERS,
    ROOT,
    STATELESS,
    Answers,
    Probe,
    RawHTTP,
    RecordingRouter,
    initialize,
    open_legacy_session,
    post,
    post_stateless,
    probe_server,
    raw_exchange,
    request,
    serving,
    stateless_headers,
    stateless_request,
    statuses,
    texts,
)

BUDGET = 20
QUESTIONS = ["first question?", "second question?", "third question?"]


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


def legacy_headers(session_id: str) -> dict[str, str]:
    return {"mcp-session-id": session_id, "mcp-protocol-version": NEWEST_HANDSHAKE}


def rpc(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def slow_call(request_id: int, *, seconds: float, steps: int) -> dict[str, Any]:
    """A call of the example server's ``slow`` tool that reports progress."""
    arguments = {"seconds": seconds, "steps": steps}
    params = {"name": "slow", "arguments": arguments, "_meta": {"progressToken": "p"}}
    return rpc(request_id, "tools/call", params)


def count_rounds(client: Any) -> list[list[str]]:
    """Record the keys of every MRTR round our client answers."""
    rounds: list[list[str]] = []
    session = client.session
    provide = session.provide_input

    def spy(request_id: Any, responses: dict[str, Any]) -> Any:
        rounds.append(sorted(responses))
        return provide(request_id, responses)

    session.provide_input = spy
    return rounds


# Our client, every mode ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("legacy", NEWEST_HANDSHAKE), ("modern", STATELESS), ("auto", STATELESS)],
)
async def test_tools_resources_prompts_and_progress(mode: str, expected: str) -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            async with open_http_client(url(port), mode=mode) as client:
                assert client.protocol_version == expected
                assert client.server_info["name"] == "sansio-mcp-example"
                assert {t["name"] for t in await client.list_tools()} == EXAMPLE_TOOLS

                echoed = await client.call_tool("echo", {"message": "héllo ☃ over HTTP"})
                assert texts(echoed) == "héllo ☃ over HTTP"
                added = await client.call_tool("add", {"a": 20, "b": 22})
                assert added["structuredContent"] == {"sum": 42}
                failed = await client.call_tool("fail", {"message": "nope"})
                assert failed["isError"] is True and texts(failed) == "nope"
                with pytest.raises(MCPError):
                    await client.call_tool("no-such-tool", {})

                # Progress travels as SSE events on the request's own response stream.
                progress: list[tuple[float, float | None, str | None]] = []
                slow = await client.call_tool(
                    "slow",
                    {"seconds": 0.15, "steps": 3},
                    on_progress=lambda p, t, m: progress.append((p, t, m)),
                )
                assert texts(slow) == "done after 0.15 seconds in 3 steps"
                assert progress == [(i, 3, f"step {i} of 3") for i in (1, 2, 3)]

                readme = await client.read_resource("example://readme")
                assert readme["contents"][0]["text"].startswith("# sansio-mcp example")
                prompt = await client.get_prompt("review", {"code": "x = 1"})
                assert "x = 1" in prompt["messages"][0]["content"]["text"]


@pytest.mark.parametrize("version", HANDSHAKE_REVISIONS)
async def test_every_handshake_revision(version: str) -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            async with open_http_client(url(port), protocol_version=version) as client:
                assert client.protocol_version == version
                added = await client.call_tool("add", {"a": 1, "b": 2})
                assert texts(added) == "3"


async def test_server_to_client_requests_on_a_handshake_session() -> None:
    """sample / elicit / list_roots ask the client with server-to-client requests,
    which arrive on the tools/call's SSE stream; no MRTR round is involved."""
    answers = Answers()
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            async with open_http_client(
                url(port), mode="legacy", handlers=answers.handlers()
            ) as client:
                rounds = count_rounds(client)
                sampled = await client.call_tool("sample", {"prompt": "6 x 7?"})
                assert texts(sampled) == "forty-two"
                assert answers.sampled == ["6 x 7?"]

                elicited = await client.call_tool("elicit", {"question": "colour?"})
                assert elicited["structuredContent"] == {
                    "action": "accept",
                    "answer": "answer to colour?",
                }
                roots = await client.call_tool("list_roots", {})
                assert roots["structuredContent"] == {"roots": [ROOT]}
                assert answers.roots_asked == 1

                survey = await client.call_tool("survey", {"questions": QUESTIONS})
                assert survey["structuredContent"]["completed"] is True
                assert answers.elicited == ["colour?", *QUESTIONS]
                assert rounds == []


async def test_mrtr_rounds_on_2026_07_28() -> None:
    """The same tools on a stateless request: every question is an input_required
    round answered with a new POST (survey: one round per question)."""
    answers = Answers()
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            async with open_http_client(
                url(port), mode="modern", handlers=answers.handlers()
            ) as client:
                rounds = count_rounds(client)
                survey = await client.call_tool("survey", {"questions": QUESTIONS})
                assert survey["structuredContent"] == {
                    "answers": {q: f"answer to {q}" for q in QUESTIONS},
                    "completed": True,
                }
                assert answers.elicited == QUESTIONS
                assert len(rounds) == len(QUESTIONS)
                assert all(len(keys) == 1 for keys in rounds)

                sampled = await client.call_tool("sample", {"prompt": "6 x 7?"})
                assert texts(sampled) == "forty-two"
                roots = await client.call_tool("list_roots", {})
                assert roots["structuredContent"] == {"roots": [ROOT]}
                assert len(rounds) == len(QUESTIONS) + 2


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_json_response_mode(mode: str) -> None:
    """``json_response=True``: answers are application/json; on a handshake session
    the server's requests to the client still arrive (on the GET stream)."""
    answers = Answers()
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server(), json_response=True) as port:
            async with open_http_client(url(port), mode=mode, handlers=answers.handlers()) as c:
                assert texts(await c.call_tool("add", {"a": 2, "b": 2})) == "4"
                assert texts(await c.call_tool("sample", {"prompt": "json?"})) == "forty-two"
                assert answers.sampled == ["json?"]
            response = await post_stateless(port, stateless_request("tools/list"))
            assert response.status == 200
            assert response.headers["content-type"] == "application/json"
            assert {t["name"] for t in response.json()["result"]["tools"]} == EXAMPLE_TOOLS


# Cancellation ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_client_cancellation_stops_the_handler(mode: str) -> None:
    """Cancelling a call stops the server's handler: on 2026-07-28 by closing the
    request's stream (no notifications/cancelled POST), on a handshake session by
    POSTing notifications/cancelled (answered 202)."""
    probe = Probe()
    server = probe_server(probe)
    router = RecordingRouter(StreamableHTTPServer(server.create_session))
    with trio.fail_after(BUDGET):
        async with serving(serve_router, server, router=router) as port:
            async with open_http_client(url(port), mode=mode) as client:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "block", {"seconds": 60})
                    await probe.started.wait()
                    nursery.cancel_scope.cancel()
                await probe.stopped.wait()
                assert probe.cancelled and not probe.finished
                # The client (and, on a handshake session, the session) carries on.
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
    cancels = router.posted("notifications/cancelled")
    assert cancels == ([] if mode == "modern" else [202])


async def test_closing_a_stateless_stream_cancels_its_handler_raw() -> None:
    probe = Probe()
    with trio.fail_after(BUDGET):
        async with serving(serve_http, probe_server(probe)) as port:
            message = stateless_request("tools/call", {"name": "block", "arguments": {}})
            async with RawHTTP.connect(port) as conn:
                await conn.send_request(
                    "POST", "/mcp", {**POST_HEADERS, **stateless_headers(message)}, message
                )
                status, headers = await conn.head()
                assert status == 200 and headers["content-type"] == "text/event-stream"
                await probe.started.wait()
            await probe.stopped.wait()
            assert probe.cancelled and not probe.finished


async def test_legacy_cancel_notification_and_disconnect_raw() -> None:
    """Handshake revisions: a dropped response stream is not a cancellation, a
    notifications/cancelled POST is, and DELETE stops what the session still runs."""
    probe = Probe()
    with trio.fail_after(BUDGET):
        async with serving(serve_http, probe_server(probe)) as port:
            session_id = await open_legacy_session(port)
            headers = {**POST_HEADERS, **legacy_headers(session_id)}
            call = rpc(7, "tools/call", {"name": "block", "arguments": {"seconds": 60}})

            async with RawHTTP.connect(port) as conn:  # 1. drop the stream mid-call
                await conn.send_request("POST", "/mcp", headers, call)
                assert (await conn.head())[0] == 200
                await probe.started.wait()
            with trio.move_on_after(0.3):
                await probe.stopped.wait()
            assert not probe.stopped.is_set(), "a disconnect cancelled a handshake-era request"

            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 7, "reason": "test"},
            }
            response = await post(port, cancel, legacy_headers(session_id))  # 2. cancel it
            assert response.status == 202 and response.body == b""
            await probe.stopped.wait()
            assert probe.cancelled

            probe.__init__()  # 3. DELETE ends the session and what it still runs
            async with RawHTTP.connect(port) as conn:
                await conn.send_request(
                    "POST", "/mcp", headers, rpc(8, "tools/call", call["params"])
                )
                assert (await conn.head())[0] == 200
                await probe.started.wait()
            deleted = await request(port, "DELETE", headers=legacy_headers(session_id))
            assert deleted.status == 200
            await probe.stopped.wait()
            assert probe.cancelled and not probe.finished


# listen() ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_listen_follows_resource_updates(mode: str) -> None:
    """``Client.listen``: subscriptions/listen on 2026-07-28, resources/subscribe plus
    the GET stream on a handshake session; another client's change is delivered."""
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            async with (
                open_http_client(url(port), mode=mode) as listener,
                open_http_client(url(port), mode=mode) as actor,
            ):
                async with listener.listen(resource_uris=[COUNTER_URI]) as subscription:
                    assert subscription.acknowledged_filter == {
                        "resourceSubscriptions": [COUNTER_URI]
                    }
                    for expected in ("1", "2"):
                        assert texts(await actor.call_tool("increment", {})) == expected
                        method, params = await subscription.__anext__()
                        assert method == "notifications/resources/updated"
                        assert params["uri"] == COUNTER_URI
                # Still usable after the subscription ended.
                assert texts(await listener.call_tool("add", {"a": 1, "b": 2})) == "3"


# Sessions, raw -----------------------------------------------------------------------------


async def test_session_lifecycle_raw() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            response = await post(port, initialize())
            assert response.status == 200
            assert response.headers["content-type"] == "application/json"
            session_id = response.headers["mcp-session-id"]
            assert len(session_id) >= 16 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
            assert response.json()["result"]["protocolVersion"] == NEWEST_HANDSHAKE

            headers = legacy_headers(session_id)
            initialized = await post(port, INITIALIZED, headers)
            assert initialized.status == 202 and initialized.body == b""

            missing = await post(port, rpc(2, "tools/list"))
            assert missing.status == 400
            assert missing.json()["error"]["code"] == -32600
            unknown = await post(port, rpc(2, "tools/list"), {"mcp-session-id": "f" * 32})
            assert unknown.status == 404
            unsupported = await post(
                port, rpc(2, "tools/list"), {**headers, "mcp-protocol-version": "1999-01-01"}
            )
            assert unsupported.status == 400
            batched = await post(port, [initialize(3)])
            assert batched.status == 400

            listed = await post(port, rpc(2, "tools/list"), headers)
            assert listed.status == 200
            # Answered before its head went out: plain JSON, no stream to resume.
            assert listed.headers["content-type"] == "application/json"
            assert {t["name"] for t in listed.json()["result"]["tools"]} == EXAMPLE_TOOLS

            no_accept = await request(
                port, "GET", headers={**headers, "accept": "application/json"}
            )
            assert no_accept.status == 406
            no_session = await request(port, "GET", headers={"accept": "text/event-stream"})
            assert no_session.status == 400

            assert (await request(port, "DELETE", headers=headers)).status == 200
            assert (await post(port, rpc(3, "tools/list"), headers)).status == 404
            assert (await request(port, "DELETE", headers=headers)).status == 404
            gone = await request(port, "GET", headers={**headers, "accept": "text/event-stream"})
            assert gone.status == 404


async def test_get_stream_delivers_server_initiated_messages() -> None:
    """A notification unrelated to any request of session A (another session changed
    a resource A subscribed to) arrives on A's GET stream; a second GET is 409."""
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            a = await open_legacy_session(port)
            b = await open_legacy_session(port)
            subscribe = rpc(2, "resources/subscribe", {"uri": COUNTER_URI})
            assert (await post(port, subscribe, legacy_headers(a))).messages()[0]["result"] == {}
            get_headers = {**legacy_headers(a), "accept": "text/event-stream"}
            async with RawHTTP.connect(port) as stream:
                await stream.send_request("GET", "/mcp", get_headers)
                status, headers = await stream.head()
                assert status == 200 and headers["content-type"] == "text/event-stream"
                second = await request(port, "GET", headers=get_headers)
                assert second.status == 409

                increment = rpc(3, "tools/call", {"name": "increment", "arguments": {}})
                answer = await post(port, increment, legacy_headers(b))
                assert [m.get("method") for m in answer.messages()] == [
                    "notifications/message",  # increment's own log line, on its own stream
                    None,
                ]
                event = await stream.next_data_event()
                assert event is not None and event.id == "get-1"
                assert event.event == "message"
                assert '"notifications/resources/updated"' in event.data


async def test_a_cancelled_request_closes_its_post_stream() -> None:
    """Handshake revisions: a request cancelled by notifications/cancelled gets no
    answer, so its SSE stream ends instead of staying open for good."""
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            session_id = await open_legacy_session(port)
            call = slow_call(5, seconds=30, steps=30)
            async with RawHTTP.connect(port) as conn:
                await conn.send_request(
                    "POST", "/mcp", {**POST_HEADERS, **legacy_headers(session_id)}, call
                )
                assert (await conn.head())[0] == 200
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 5, "reason": "enough"},
                }
                assert (await post(port, cancel, legacy_headers(session_id))).status == 202
                with trio.fail_after(5):
                    while (message := await conn.next_message()) is not None:
                        assert "result" not in message and "error" not in message


async def test_last_event_id_resumes_the_get_stream() -> None:
    """Reconnecting with Last-Event-ID replays what came after it, and new events
    continue the numbering (no id is reused)."""
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            a = await open_legacy_session(port)
            b = await open_legacy_session(port)
            await post(port, rpc(2, "resources/subscribe", {"uri": COUNTER_URI}), legacy_headers(a))
            get_headers = {**legacy_headers(a), "accept": "text/event-stream"}

            async def increment(request_id: int) -> None:
                call = rpc(request_id, "tools/call", {"name": "increment", "arguments": {}})
                assert (await post(port, call, legacy_headers(b))).status == 200

            async with RawHTTP.connect(port) as stream:
                await stream.send_request("GET", "/mcp", get_headers)
                assert (await stream.head())[0] == 200
                seen = []
                for request_id in (10, 11):
                    await increment(request_id)
                    event = await stream.next_data_event()
                    assert event is not None
                    seen.append(event.id)
                assert seen == ["get-1", "get-2"]

            # The client says it processed only get-1.
            async with RawHTTP.connect(port) as stream:
                await stream.send_request("GET", "/mcp", {**get_headers, "last-event-id": "get-1"})
                assert (await stream.head())[0] == 200
                replayed = await stream.next_data_event()
                assert replayed is not None and replayed.id == "get-2"
                await increment(12)
                fresh = await stream.next_data_event()
                assert fresh is not None and fresh.id == "get-3"


async def test_last_event_id_replays_a_finished_post_stream() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            session_id = await open_legacy_session(port)
            call = slow_call(5, seconds=0.05, steps=2)
            answered = await post(port, call, legacy_headers(session_id))
            events = [e for e in answered.events() if e.data]
            assert [e.id for e in events] == ["s0-1", "s0-2", "s0-3"]

            resumed = await request(
                port,
                "GET",
                headers={
                    **legacy_headers(session_id),
                    "accept": "text/event-stream",
                    "last-event-id": "s0-1",
                },
            )
            assert resumed.status == 200
            assert [(e.id, e.data) for e in resumed.events() if e.data] == [
                (e.id, e.data) for e in events[1:]
            ]


async def test_last_event_id_resumes_a_dropped_post_stream() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            session_id = await open_legacy_session(port)
            call = slow_call(5, seconds=0.4, steps=4)
            async with RawHTTP.connect(port) as conn:
                await conn.send_request(
                    "POST", "/mcp", {**POST_HEADERS, **legacy_headers(session_id)}, call
                )
                assert (await conn.head())[0] == 200
                first = await conn.next_data_event()
                assert first is not None and first.id == "s0-1"
            async with RawHTTP.connect(port) as stream:
                await stream.send_request(
                    "GET",
                    "/mcp",
                    {
                        **legacy_headers(session_id),
                        "accept": "text/event-stream",
                        "last-event-id": "s0-1",
                    },
                )
                assert (await stream.head())[0] == 200
                messages = []
                with trio.move_on_after(3):
                    while (message := await stream.next_message()) is not None:
                        messages.append(message)
                assert messages and messages[-1].get("id") == 5 and "result" in messages[-1]


# 2026-07-28 header and status rules, raw ---------------------------------------------------

ADD = stateless_request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
LIST = stateless_request("tools/list")


@pytest.mark.parametrize(
    ("message", "overrides", "status", "code"),
    [
        pytest.param(LIST, {"MCP_Protocol_Version": None}, 400, -32020, id="version-missing"),
        pytest.param(
            LIST, {"MCP_Protocol_Version": "2025-11-25"}, 400, -32020, id="version-mismatch"
        ),
        pytest.param(LIST, {"Mcp_Method": None}, 400, -32020, id="method-missing"),
        pytest.param(LIST, {"Mcp_Method": "prompts/list"}, 400, -32020, id="method-mismatch"),
        pytest.param(ADD, {"Mcp_Name": None}, 400, -32020, id="name-missing"),
        pytest.param(ADD, {"Mcp_Name": "echo"}, 400, -32020, id="name-mismatch"),
        pytest.param(ADD, {"Mcp_Name": "=?base64?!!!?="}, 400, -32020, id="name-bad-base64"),
        pytest.param(ADD, {"Mcp_Name": "=?base64?YWRk?="}, 200, None, id="name-base64-ok"),
        pytest.param(
            stateless_request("tools/list", version="2099-01-01"), {}, 400, -32022, id="unsupported"
        ),
        pytest.param(stateless_request("no/such/method"), {}, 404, -32601, id="unknown-method"),
        pytest.param(LIST, {}, 200, None, id="ok"),
    ],
)
async def test_stateless_header_rules(
    message: dict[str, Any], overrides: dict[str, str | None], status: int, code: int | None
) -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            response = await post_stateless(port, message, **overrides)
    assert response.status == status, response
    (answer,) = response.messages()
    assert answer["id"] == message["id"]
    if code is None:
        assert "result" in answer
    else:
        assert answer["error"]["code"] == code
        assert response.headers["content-type"] == "application/json"
    if code == -32022:
        assert answer["error"]["data"]["requested"] == "2099-01-01"
        assert STATELESS in answer["error"]["data"]["supported"]


async def test_stateless_missing_client_capability_is_400() -> None:
    """``elicit`` needs the elicitation capability; a request that does not declare
    it is refused with -32021 and HTTP 400, naming what is required."""
    message = stateless_request("tools/call", {"name": "elicit", "arguments": {"question": "q"}})
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            response = await post_stateless(port, message)
            with_capability = stateless_request(
                "tools/call",
                {"name": "elicit", "arguments": {"question": "q"}},
                capabilities={"elicitation": {"form": {}}},
            )
            asked = await post_stateless(port, with_capability)
    (answer,) = response.messages()
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"]["requiredCapabilities"] == {"elicitation": {}}
    assert response.status == 400
    # With the capability declared, the answer is an input_required round instead.
    assert asked.status == 200
    (interim,) = asked.messages()
    assert interim["result"]["resultType"] == "input_required"


async def test_stateless_malformed_meta_is_400_invalid_params() -> None:
    message = stateless_request("tools/list")
    del message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    no_meta = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            missing_field = await post_stateless(port, message)
            headers = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": "tools/list"}
            missing_meta = await post(port, no_meta, headers)
            # Without any 2026-07-28 marker it is a handshake-era request with no session.
            legacy = await post(port, no_meta)
    assert missing_field.status == 400
    assert missing_field.json()["error"]["code"] == -32602
    assert missing_meta.status == 400
    assert missing_meta.json()["error"]["code"] == -32602
    assert legacy.status == 400
    assert legacy.json()["error"]["code"] == -32600


async def test_stateless_only_server_refuses_old_client_traffic() -> None:
    server = build_server()
    server.supported_versions = (STATELESS,)
    with trio.fail_after(BUDGET):
        async with serving(serve_http, server) as port:
            assert (await post_stateless(port, LIST)).status == 200
            old = await post(port, initialize())
            get = await request(port, "GET", headers={"accept": "text/event-stream"})
            delete = await request(port, "DELETE", headers={"mcp-session-id": "x"})
    assert old.status == 400 and "mcp-session-id" not in old.headers
    assert get.status == 405 and delete.status == 405


# HTTP-level refusals, raw ------------------------------------------------------------------


async def test_http_status_codes() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server(), max_body=1024) as port:
            wrong_type = await request(
                port,
                "POST",
                headers={**POST_HEADERS, "content-type": "text/plain"},
                body=LIST,
            )
            assert wrong_type.status == 415
            wrong_accept = await request(
                port,
                "POST",
                headers={**POST_HEADERS, **stateless_headers(LIST), "accept": "application/json"},
                body=LIST,
            )
            assert wrong_accept.status == 406
            star_accept = await request(
                port,
                "POST",
                headers={**POST_HEADERS, **stateless_headers(LIST), "accept": "*/*"},
                body=LIST,
            )
            assert star_accept.status == 200
            for method in ("PUT", "PATCH", "OPTIONS"):
                refused = await request(port, method, headers={}, body=b"")
                assert refused.status == 405
                assert refused.headers["allow"] == "POST, GET, DELETE"
            garbage = await post(port, b"{not json")
            assert garbage.status == 400
            assert garbage.json()["error"]["code"] == -32700
            assert garbage.json()["id"] is None
            not_utf8 = await post(port, b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}')
            assert not_utf8.status == 400 and not_utf8.json()["error"]["code"] == -32700
            for not_a_message in (b"42", b"[]", b'"text"', b"[1, 2]"):
                answer = await post(port, not_a_message)
                assert answer.status == 400
                assert answer.json()["error"]["code"] == -32600
            elsewhere = await request(port, "POST", "/other", POST_HEADERS, LIST)
            assert elsewhere.status == 404

            # Over max_body: refused from the Content-Length, before the body is read...
            data = await raw_exchange(
                port,
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1025\r\n\r\n",
            )
            assert statuses(data) == [413]
            # ... or, chunked, as soon as the collected body passes the limit.
            chunk = b"x" * 1100
            data = await raw_exchange(
                port,
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(chunk) + chunk + b"\r\n",
            )
            assert statuses(data) == [413]
            # The server is still serving.
            assert (await post_stateless(port, LIST)).status == 200


async def test_dns_rebinding_protection() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            headers = {**POST_HEADERS, **stateless_headers(LIST)}

            async def status(host: str | None = None, origin: str | None = None) -> int:
                extra = {"origin": origin} if origin is not None else {}
                answer = await request(
                    port, "POST", headers={**headers, **extra}, body=LIST, host=host
                )
                if answer.status == 403:
                    assert answer.json()["error"]["code"] == -32600
                return answer.status

            assert await status() == 200
            assert await status(host=f"localhost:{port}") == 200
            assert await status(host=f"[::1]:{port}") == 200
            assert await status(host="evil.example") == 403
            assert await status(host=f"evil.example:{port}") == 403
            assert await status(origin="http://evil.example") == 403
            assert await status(origin="null") == 403
            assert await status(origin=f"http://localhost:{port}") == 200
            assert await status(origin=f"http://127.0.0.1:{port}") == 200
            evil_get = await request(
                port, "GET", headers={"accept": "text/event-stream"}, host="evil.example"
            )
            assert evil_get.status == 403

        async with serving(
            serve_http,
            build_server(),
            allowed_hosts=["mcp.example"],
            allowed_origins=["https://app.example"],
        ) as port:
            headers = {**POST_HEADERS, **stateless_headers(LIST)}
            named = await request(
                port, "POST", headers=headers, body=LIST, host=f"mcp.example:{port}"
            )
            assert named.status == 200
            loopback = await request(port, "POST", headers=headers, body=LIST)
            assert loopback.status == 403  # the allow-list replaces the loopback default
            allowed = await request(
                port,
                "POST",
                headers={**headers, "origin": "https://app.example"},
                body=LIST,
                host="mcp.example",
            )
            assert allowed.status == 200
            other = await request(
                port,
                "POST",
                headers={**headers, "origin": "http://mcp.example"},
                body=LIST,
                host="mcp.example",
            )
            assert other.status == 403


# Load and disconnects ----------------------------------------------------------------------


async def test_fifty_concurrent_clients() -> None:
    server = build_server()
    machine = StreamableHTTPServer(server.create_session)
    results: dict[int, str] = {}

    async def one(port: int, index: int) -> None:
        mode = ("legacy", "modern", "auto")[index % 3]
        async with open_http_client(url(port), mode=mode) as client:
            added = await client.call_tool("add", {"a": index, "b": 1000})
            echoed = await client.call_tool("echo", {"message": f"client {index}"})
            assert texts(echoed) == f"client {index}"
            results[index] = texts(added)

    with trio.fail_after(60):
        async with serving(serve_router, server, router=machine) as port:
            async with trio.open_nursery() as nursery:
                for index in range(50):
                    nursery.start_soon(one, port, index)
            # Every handshake session was DELETEd by its client on the way out.
            assert machine.sessions.ids == frozenset()
    assert results == {i: str(i + 1000) for i in range(50)}


async def test_client_disconnecting_mid_stream(caplog: pytest.LogCaptureFixture) -> None:
    """Clients that vanish mid-response (both eras, POST and GET streams) leave the
    server healthy: nothing is logged above INFO and later requests succeed."""
    caplog.set_level(logging.WARNING)
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            session_id = await open_legacy_session(port)
            slow = {"name": "slow", "arguments": {"seconds": 0.3, "steps": 3}}
            legacy = rpc(9, "tools/call", {**slow, "_meta": {"progressToken": 1}})
            stateless = stateless_request("tools/call", slow)
            stateless["params"]["_meta"]["progressToken"] = 1
            for message, headers in [
                (legacy, {**POST_HEADERS, **legacy_headers(session_id)}),
                (stateless, {**POST_HEADERS, **stateless_headers(stateless)}),
            ]:
                async with RawHTTP.connect(port) as conn:
                    await conn.send_request("POST", "/mcp", headers, message)
                    assert (await conn.head())[0] == 200
                    progress = await conn.next_message()
                    assert progress["method"] == "notifications/progress"
                    # Hard close (RST) rather than a polite FIN.
                    conn.stream.socket.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
            async with RawHTTP.connect(port) as conn:
                await conn.send_request(
                    "GET", "/mcp", {**legacy_headers(session_id), "accept": "text/event-stream"}
                )
                assert (await conn.head())[0] == 200
            await trio.sleep(0.5)  # let the abandoned legacy handler finish into the void
            # The same session, and new ones, still work.
            listed = await post(port, rpc(10, "tools/list"), legacy_headers(session_id))
            assert listed.status == 200
            assert (await post_stateless(port, LIST)).status == 200
            async with open_http_client(url(port)) as client:
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_keep_alive_reuses_one_connection() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_http, build_server()) as port:
            async with RawHTTP.connect(port) as conn:
                for request_id in range(1, 6):
                    message = stateless_request(
                        "tools/call",
                        {"name": "add", "arguments": {"a": request_id, "b": 0}},
                        request_id=request_id,
                    )
                    await conn.send_request(
                        "POST", "/mcp", {**POST_HEADERS, **stateless_headers(message)}, message
                    )
                    answer = await conn.response()
                    assert answer.status == 200
                    assert answer.messages()[-1]["id"] == request_id
                    conn.reuse()


class LegacyOnly:
    """A router answering every 2026-07-28 POST as the TypeScript SDK v1 does: HTTP
    400 with an id-less JSON-RPC error (it cannot tell which request it refused)."""

    def __init__(self, inner: StreamableHTTPServer) -> None:
        self.inner = inner

    def handle(self, request: Any) -> Any:
        if request.method == "POST" and b"io.modelcontextprotocol/protocolVersion" in request.body:
            error = {"code": -32000, "message": "Bad Request: Server not initialized"}
            body = json.dumps({"jsonrpc": "2.0", "error": error, "id": None}).encode()
            return Exchange(400, {"content-type": "application/json"}, body)
        return self.inner.handle(request)

    def flush(self, session: Any) -> None:
        self.inner.flush(session)

    def owns(self, session: Any) -> bool:
        return self.inner.owns(session)


async def test_auto_falls_back_when_discover_is_refused_without_an_id() -> None:
    """Regression: an id-less 400 error to server/discover used to leave the probe
    unanswered until initialize_timeout; now it fails at once and auto mode falls
    back to the handshake."""
    server = build_server()
    router = LegacyOnly(StreamableHTTPServer(server.create_session))
    with trio.fail_after(5):
        async with serving(serve_router, server, router=router) as port:
            async with open_http_client(url(port), mode="auto") as client:
                assert client.protocol_version == NEWEST_HANDSHAKE
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
            # A pinned 2026-07-28 client gets the refusal as a typed error instead of hanging.
            with pytest.raises(MCPError) as refused:
                async with open_http_client(url(port), mode="modern", initialize_timeout=3) as c:
                    await c.call_tool("add", {"a": 1, "b": 1})
            assert refused.value.data["status"] == 400


async def test_a_listen_stream_that_breaks_ends_the_subscription(nursery: Any) -> None:
    # A 2026-07-28 stream is never resumed: when the server goes away, the
    # subscription says so (and a request on it fails) instead of waiting forever.
    scope = trio.CancelScope()

    async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await serve_http(build_server(), task_status=task_status)

    port = await nursery.start(serve)
    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="modern") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            scope.cancel()
            with trio.fail_after(5), pytest.raises(MCPError, match="stream ended"):
                async for _ in subscription:
                    pass
