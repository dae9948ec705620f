"""Handshake sessions shared by replicas (issue 33): a 2025-11-25 session begun on
replica A is served by replica B, request after request, with the state in Redis;
a question B asks is answered through A, a notification made on B reaches the GET
stream held by A, and DELETE on one ends the session on both.  Two replicas in one
process, each with its own Redis connection, on both backends."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from redis_service import RedisService

from sansio_mcp.auth import ResourceServer, StaticTokenVerifier
from sansio_mcp.runtime import Context, Server, Stores, open_stores
from sansio_mcp_apps.example_server import build_server
from tests.auth.test_http import Backend
from tests.session_replicas.raw import ACCEPT_BOTH, call, connect, messages

VERSION = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {"elicitation": {}, "sampling": {}},
        "clientInfo": {"name": "replica-test", "version": "0"},
    },
}


def replica(stores: Stores | None, auth: ResourceServer | None = None) -> Server:
    """The example server, plus ``announce`` (tells its clients the tool list changed)."""
    server = build_server()
    server.stores = stores
    server.auth = auth

    @server.tool()
    async def announce(ctx: Context) -> str:
        """Say that the tool list changed."""
        await ctx.list_changed("tools")
        return "announced"

    return server


@asynccontextmanager
async def two_ports(
    backend: Backend,
    redis_url: str,
    auth: ResourceServer | None = None,
    build: Callable[[Stores, ResourceServer | None], Server] = replica,
    namespace: str | None = None,
) -> AsyncIterator[tuple[int, int]]:
    """Replicas A and B (``build``'s servers) sharing one Redis (each its own
    connection, keys and channels under ``namespace``, default a fresh one), served
    over HTTP."""
    namespace = namespace or f"hs{time.monotonic_ns()}"
    async with AsyncExitStack() as stack:
        ports = []
        for name in "AB":
            stores = await stack.enter_async_context(
                open_stores(redis_url, backend.backend, replica_id=name, namespace=namespace)
            )
            ports.append(await stack.enter_async_context(backend.serve_http(build(stores, auth))))
        yield ports[0], ports[1]


@asynccontextmanager
async def get_stream(backend: Backend, port: int, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The session's GET stream at ``port``, open."""
    async with connect(backend.backend, port) as stream:
        await stream.send_request("GET", "/mcp", {**headers, "accept": "text/event-stream"})
        assert (await stream.head())[0] == 200
        yield stream


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def tool_call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": name, "arguments": arguments})


async def open_session(
    backend: Backend, port: int, extra: dict[str, str] | None = None, version: str = VERSION
) -> dict[str, str]:
    """initialize at ``port`` (protocol ``version``): the headers of the session's
    later requests."""
    headers = {**ACCEPT_BOTH, **(extra or {})}
    initialize = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    status, head, body = await call(backend.backend, port, "POST", headers, initialize)
    assert status == 200, body
    assert messages(head, body)[0]["result"]["protocolVersion"] == version
    return {
        **headers,
        "mcp-session-id": head["mcp-session-id"],
        "mcp-protocol-version": version,
    }


async def answer_of(backend: Backend, port: int, headers: dict[str, str], body: Any) -> Any:
    status, head, data = await call(backend.backend, port, "POST", headers, body)
    assert status == 200, (status, data)
    return messages(head, data)[-1]


async def ask_through(
    backend: Backend,
    asked: int,
    answering: int,
    headers: dict[str, str],
    call_: dict[str, Any],
    reply: dict[str, Any],
) -> Any:
    """``call_`` POSTed to ``asked``; the question on its stream answered with ``reply``
    POSTed to ``answering``; the call's result."""
    async with connect(backend.backend, asked) as stream:
        await stream.send_request("POST", "/mcp", headers, call_)
        status, _ = await stream.head()
        assert status == 200
        question = await stream.next_message()
        assert "method" in question and "id" in question, question
        status, _, body = await call(
            backend.backend,
            answering,
            "POST",
            headers,
            {"jsonrpc": "2.0", "id": question["id"], "result": reply},
        )
        assert status == 202, body
        answer = await stream.next_message()
        assert answer["id"] == call_["id"], answer
        return question, answer


def test_a_session_begun_on_a_is_served_by_b(backend: Backend, redis_url: str) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_url) as (a, b):
            headers = await open_session(backend, a)
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            status, _, _ = await call(backend.backend, b, "POST", headers, note)
            assert status == 202
            listed = await answer_of(backend, b, headers, request(2, "tools/list"))
            assert "echo" in {t["name"] for t in listed["result"]["tools"]}
            echoed = await answer_of(backend, b, headers, tool_call(3, "echo", {"message": "hi"}))
            assert echoed["result"]["content"][0]["text"] == "hi"
            # And back on A, which began it.
            added = await answer_of(backend, a, headers, tool_call(4, "add", {"a": 1, "b": 2}))
            assert "3" in added["result"]["content"][0]["text"], added

    backend.run(main)


def test_a_question_asked_on_one_replica_is_answered_through_the_other(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_url) as (a, b):
            headers = await open_session(backend, a)
            elicit = tool_call(2, "elicit", {"question": "colour?"})
            accept = {"action": "accept", "content": {"answer": "blue"}}
            question, answer = await ask_through(backend, b, a, headers, elicit, accept)
            assert question["method"] == "elicitation/create"
            assert answer["result"]["content"][0]["text"] == "blue"
            # The other way round, a second time: the session's copy on A asks.
            sample = tool_call(3, "sample", {"prompt": "2+2?"})
            reply = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}
            question, answer = await ask_through(backend, a, b, headers, sample, reply)
            assert question["method"] == "sampling/createMessage"
            assert answer["result"]["content"][0]["text"] == "4"

    backend.run(main)


def test_a_notification_made_on_b_reaches_the_get_stream_held_by_a(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_url) as (a, b):
            headers = await open_session(backend, a)
            async with get_stream(backend, a, headers) as stream:
                done = await answer_of(backend, b, headers, tool_call(2, "announce", {}))
                assert done["result"]["content"][0]["text"] == "announced"
                async with backend.backend.fail_after(10):
                    notice = await stream.next_message()
                assert notice["method"] == "notifications/tools/list_changed"

    backend.run(main)


def test_delete_on_one_replica_ends_the_session_on_every_replica(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_url) as (a, b):
            headers = await open_session(backend, a)
            # B holds a copy now, and A holds a GET stream: both end.
            await answer_of(backend, b, headers, request(2, "tools/list"))
            async with get_stream(backend, a, headers) as stream:
                status, _, _ = await call(backend.backend, b, "DELETE", headers)
                assert status == 200
                async with backend.backend.fail_after(10):
                    assert await stream.next_message() is None  # A ended its stream
            for port in (a, b):
                status, _, body = await call(
                    backend.backend, port, "POST", headers, request(3, "tools/list")
                )
                assert status == 404, body
            # An id no replica gave out: 404 everywhere, as without replicas.
            unknown = {**headers, "mcp-session-id": "0" * 32}
            status, _, _ = await call(backend.backend, b, "POST", unknown, request(4, "tools/list"))
            assert status == 404

    backend.run(main)


def test_a_request_cancelled_through_a_stops_on_b(backend: Backend, redis_url: str) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_url) as (a, b):
            headers = await open_session(backend, a)
            async with connect(backend.backend, b) as stream:
                slow = tool_call(2, "slow", {"seconds": 30, "steps": 30})
                slow["params"]["_meta"] = {"progressToken": "p"}
                await stream.send_request("POST", "/mcp", headers, slow)
                assert (await stream.head())[0] == 200
                progress = await stream.next_message()  # it runs on B
                assert progress["method"] == "notifications/progress", progress
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 2, "reason": "enough"},
                }
                status, _, _ = await call(backend.backend, a, "POST", headers, cancel)
                assert status == 202
                # B stopped the tool and ended the stream without an answer.
                async with backend.backend.fail_after(10):
                    while (message := await stream.next_message()) is not None:
                        assert message.get("method") == "notifications/progress", message

    backend.run(main)


def test_a_session_is_found_at_another_replica_only_for_its_principal(
    backend: Backend, redis_url: str
) -> None:
    verifier = StaticTokenVerifier({"alice": {"mcp"}, "bob": {"mcp"}})
    auth = ResourceServer("", ["http://as.example"], verifier, required_scopes=["mcp"])

    async def main() -> None:
        async with two_ports(backend, redis_url, auth) as (a, b):
            alice = await open_session(backend, a, {"authorization": "Bearer alice"})
            bob = {**alice, "authorization": "Bearer bob"}
            status, _, _ = await call(backend.backend, b, "POST", bob, request(2, "tools/list"))
            assert status == 404  # bob's request does not adopt alice's session
            listed = await answer_of(backend, b, alice, request(3, "tools/list"))
            assert "echo" in {t["name"] for t in listed["result"]["tools"]}
            status, _, _ = await call(backend.backend, b, "POST", bob, request(4, "tools/list"))
            assert status == 404  # nor does the copy B now holds answer him

    backend.run(main)


def test_with_redis_down_a_session_is_served_by_its_replica_alone_until_it_is_back(
    backend: Backend, redis_service: RedisService
) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_service.url) as (a, b):
            redis_service.stop()
            async with backend.backend.fail_after(10):
                alone = await open_session(backend, a)
                listed = await answer_of(backend, a, alone, request(2, "tools/list"))
                assert "echo" in {t["name"] for t in listed["result"]["tools"]}
                status, _, _ = await call(backend.backend, b, "POST", alone, request(3, "ping"))
                assert status == 404
            redis_service.start()
            # Back: the session begun meanwhile is written at its next request, and
            # found by B from then on.
            await answer_of(backend, a, alone, request(5, "ping"))
            assert (await answer_of(backend, b, alone, request(6, "ping")))["result"] == {}
            shared = await open_session(backend, a)
            pong = await answer_of(backend, b, shared, request(4, "ping"))
            assert pong["result"] == {}

    backend.run(main)
    redis_service.stop()  # the restarted server is the test's own: gone before the leak check
