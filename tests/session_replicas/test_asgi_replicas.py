"""Handshake sessions shared by two ``MCPApp`` replicas (the ASGI app, asyncio) on one
Redis: a session begun at A is adopted by B, and DELETE at B ends it at A too (the
apps driven with ASGI messages directly); a POST stream resumed at B follows A's
call live (the apps under uvicorn)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from asyncio_adapters import BACKEND
from asyncio_adapters.asgi import MCPApp
from sansio_mcp.runtime import handshake_session_store, open_stores
from sansio_mcp_apps.example_server import build_server
from tests.auth.test_http import Backend
from tests.session_replicas.raw import ACCEPT_BOTH
from tests.session_replicas.test_shared_replay import (
    kept,
    logged,
    next_event,
    noting_replica,
    opened,
    waiting_then_broken,
)
from tests.session_replicas.test_two_replicas import (
    INITIALIZE,
    VERSION,
    answer_of,
    open_session,
    request,
    tool_call,
)


async def asgi(
    app: MCPApp, method: str, headers: dict[str, str], body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    """One request to ``app``: status, headers, body."""
    data = json.dumps(body).encode() if body is not None else b""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.Event().wait()  # the client stays until the answer is over
        raise AssertionError("unreachable")

    answer: dict[str, Any] = {"body": b""}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            answer["body"] += message.get("body", b"")

    scope = {
        "type": "http",
        "method": method,
        "path": "/mcp",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)  # type: ignore[arg-type]
    return answer["status"], answer["headers"], answer["body"]


def test_two_asgi_apps_share_a_handshake_session(redis_url: str) -> None:
    async def main() -> None:
        namespace = f"asgi{time.monotonic_ns()}"
        async with (
            open_stores(redis_url, BACKEND, replica_id="A", namespace=namespace) as stores_a,
            open_stores(redis_url, BACKEND, replica_id="B", namespace=namespace) as stores_b,
        ):
            a = MCPApp(build_server(stores=stores_a))
            b = MCPApp(build_server(stores=stores_b))
            async with a.lifespan(), b.lifespan():
                status, head, _ = await asgi(a, "POST", ACCEPT_BOTH, INITIALIZE)
                assert status == 200
                headers = {
                    **ACCEPT_BOTH,
                    "mcp-session-id": head["mcp-session-id"],
                    "mcp-protocol-version": VERSION,
                }
                status, _, body = await asgi(b, "POST", headers, request(2, "tools/list"))
                assert status == 200, body
                assert b'"echo"' in body
                assert (await asgi(b, "DELETE", headers))[0] == 200
                deadline = time.monotonic() + 10
                while (await asgi(a, "POST", headers, request(3, "ping")))[0] != 404:
                    assert time.monotonic() < deadline, "A still serves the deleted session"
                    await asyncio.sleep(0.02)

    BACKEND.run(main)


def test_an_asgi_app_that_stops_writes_what_it_queued_for_the_store(redis_url: str) -> None:
    """The app's ``aclose`` (its lifespan's end) cancels the shared sessions' run loop,
    then writes what was still queued for the store, as a listener does when it stops."""

    async def main() -> None:
        namespace = f"asgistop{time.monotonic_ns()}"
        async with open_stores(redis_url, BACKEND, replica_id="A", namespace=namespace) as stores:
            app = MCPApp(build_server(stores=stores))
            async with app.lifespan():
                status, head, _ = await asgi(app, "POST", ACCEPT_BOTH, INITIALIZE)
                assert status == 200
                session_id = head["mcp-session-id"]
                shared = app.hosts.shared
                assert shared is not None
                # Queued just before the stop: the run loop, cancelled, leaves them undone.
                notes = [{"jsonrpc": "2.0", "method": f"notifications/n{i}"} for i in range(50)]
                for note in notes:
                    shared.server_message(session_id, note)
                shared.kept(session_id, "t.s0", 1, b"id: t.s0-1\n\n")
            store = handshake_session_store(stores)
            assert store is not None
            now = BACKEND.wall_clock()
            assert await store.events(session_id, "t.s0", now) == [(1, b"id: t.s0-1\n\n")]
            waiting = await store.take_backlog(session_id, now, shared.bounds)
            assert [json.loads(m)["method"] for m in waiting] == [n["method"] for n in notes]

    asyncio.run(main())


@asynccontextmanager
async def uvicorn_in_this_loop(app: MCPApp) -> AsyncIterator[int]:
    """``app`` served by uvicorn on 127.0.0.1:0 in the running loop (its stores are
    this loop's); yields the port, then stops the server and waits for it."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:
                assert not task.done(), "uvicorn did not start"
                await asyncio.sleep(0.01)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await task


def test_a_post_stream_followed_at_another_asgi_app_goes_on_live(redis_url: str) -> None:
    """As through the TCP listeners (test_shared_replay): a call's POST stream broken at
    app A and resumed at app B replays what Redis kept, then carries what the call
    says next at A, and its answer, live; then it ends.  The check is far off
    (``follow_check=`` passed to ``MCPApp``): only news from A brings them."""
    backend = Backend("asyncio")

    async def main() -> None:
        namespace = f"asgifollow{time.monotonic_ns()}"
        gate = f"g{time.monotonic_ns()}"
        async with (
            open_stores(redis_url, BACKEND, replica_id="A", namespace=namespace) as stores_a,
            open_stores(redis_url, BACKEND, replica_id="B", namespace=namespace) as stores_b,
        ):
            store = handshake_session_store(stores_b)
            assert store is not None
            app_a = MCPApp(noting_replica(stores_a), follow_check=60.0)
            app_b = MCPApp(noting_replica(stores_b), follow_check=60.0)
            assert app_b.router.replicas.follow_check == 60.0  # type: ignore[union-attr]
            async with uvicorn_in_this_loop(app_a) as a, uvicorn_in_this_loop(app_b) as b:
                headers = await open_session(backend, a)
                last = await waiting_then_broken(backend, a, headers, gate)
                await kept(backend, store, headers, last.rpartition("-")[0], 2)
                async with opened(backend, b, {**headers, "last-event-id": last}) as again:
                    opening = tool_call(3, "open_gate", {"gate": gate})
                    assert "open" in str(await answer_of(backend, a, headers, opening))
                    for expected in ("after-1", "after-2"):
                        assert logged((await next_event(backend, again))[1]) == expected
                    _, answer = await next_event(backend, again)
                    assert answer["id"] == 2 and "through" in str(answer["result"]), answer
                    assert await next_event(backend, again) == (None, None)

    asyncio.run(main())
