"""``asyncio_adapters.asgi.MCPApp`` mounted in Starlette and served by uvicorn.

uvicorn runs in a thread of its own (its own asyncio loop) on 127.0.0.1:0;
our Trio and asyncio HTTP clients, and the raw HTTP helpers, talk to the
mount at ``/tools/mcp``.  Every server is stopped (``should_exit``) and its
thread joined before the test returns, so the directory's leak check sees
no socket left open.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
import trio
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from asyncio_adapters.asgi import MCPApp
from asyncio_adapters.http_client import open_http_client as open_asyncio_http_client
from examples.asgi_app import build_app
from sansio_mcp.runtime import ClientHandlers, Context, Server
from trio_adapters.http_client import open_http_client

from .helpers import (
    EXAMPLE_TOOLS,
    INITIALIZED,
    NEWEST_HANDSHAKE,
    POST_HEADERS,
    STATELESS,
    Answers,
    initialize,
    post,
    request,
    stateless_headers,
    stateless_request,
    texts,
)

BUDGET = 20
TARGET = "/tools/mcp"
QUESTIONS = ["first question?", "second question?"]
LIST = stateless_request("tools/list")


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}{TARGET}"


@contextmanager
def uvicorn_serving(app: Any, *, graceful: int | None = None) -> Iterator[int]:
    """Serve ``app`` with uvicorn on 127.0.0.1:0 in a thread; yields the port, then
    stops the server (``should_exit``) and joins the thread."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=graceful,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    threads_before = set(threading.enumerate())
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive(), "uvicorn did not start"
            assert time.monotonic() < deadline, "uvicorn did not start in time"
            time.sleep(0.01)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        assert not thread.is_alive(), "uvicorn did not stop"
    # Nothing left behind but Trio's idle to_thread workers (a cache it reuses).
    left = [t for t in set(threading.enumerate()) - threads_before if "trio" not in t.name.lower()]
    assert not left, left


def mounted(server: Server, **options: Any) -> tuple[Starlette, MCPApp]:
    mcp = MCPApp(server, **options)

    async def health(request: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(
        routes=[Route("/health", health), Mount("/tools", app=mcp)], lifespan=mcp.lifespan
    )
    return app, mcp


class ThreadProbe:
    """Like helpers.Probe, but with thread-safe events (the handler runs on
    uvicorn's asyncio loop, the test elsewhere)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.cancelled = False
        self.finished = False


def block_server(probe: ThreadProbe) -> Server:
    server = Server("asgi-probe", "1.0.0")

    @server.tool()
    async def block(ctx: Context, seconds: float = 60.0) -> str:
        """Wait ``seconds`` unless cancelled."""
        probe.started.set()
        try:
            await ctx.report_progress(0, 1, "started")
            await ctx.sleep(seconds)
            probe.finished = True
            return "finished"
        except BaseException:
            probe.cancelled = True
            raise
        finally:
            probe.stopped.set()

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return server


async def wait_thread_event(event: threading.Event, timeout: float = 10) -> None:
    assert await trio.to_thread.run_sync(event.wait, timeout), "timed out"


# Our clients through the mount -------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "expected"), [("legacy", NEWEST_HANDSHAKE), ("modern", STATELESS)]
)
async def test_trio_client_through_starlette_mount(mode: str, expected: str) -> None:
    answers = Answers()
    with uvicorn_serving(build_app()) as port:
        with trio.fail_after(BUDGET):
            health = await request(port, "GET", "/health")
            assert health.status == 200 and health.body == b"ok"
            async with open_http_client(
                url(port), mode=mode, handlers=answers.handlers()
            ) as client:
                assert client.protocol_version == expected
                assert {t["name"] for t in await client.list_tools()} == EXAMPLE_TOOLS
                added = await client.call_tool("add", {"a": 20, "b": 22})
                assert added["structuredContent"] == {"sum": 42}

                progress: list[tuple[float, float | None, str | None]] = []
                slow = await client.call_tool(
                    "slow",
                    {"seconds": 0.15, "steps": 3},
                    on_progress=lambda p, t, m: progress.append((p, t, m)),
                )
                assert texts(slow) == "done after 0.15 seconds in 3 steps"
                assert progress == [(i, 3, f"step {i} of 3") for i in (1, 2, 3)]

                # Legacy: server-to-client elicitation requests on the call's stream;
                # stateless: one MRTR round per question.
                rounds: list[Any] = []
                provide = client.session.provide_input

                def spy(request_id: Any, responses: dict[str, Any]) -> Any:
                    rounds.append(sorted(responses))
                    return provide(request_id, responses)

                client.session.provide_input = spy
                survey = await client.call_tool("survey", {"questions": QUESTIONS})
                assert survey["structuredContent"] == {
                    "answers": {q: f"answer to {q}" for q in QUESTIONS},
                    "completed": True,
                }
                assert answers.elicited == QUESTIONS
                assert len(rounds) == (len(QUESTIONS) if mode == "modern" else 0)


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_trio_client_cancellation_stops_the_handler(mode: str) -> None:
    probe = ThreadProbe()
    app, _ = mounted(block_server(probe))
    with uvicorn_serving(app) as port:
        with trio.fail_after(BUDGET):
            async with open_http_client(url(port), mode=mode) as client:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "block", {"seconds": 60})
                    await wait_thread_event(probe.started)
                    nursery.cancel_scope.cancel()
                await wait_thread_event(probe.stopped)
                assert probe.cancelled and not probe.finished
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


@pytest.mark.parametrize(
    ("mode", "expected"), [("legacy", NEWEST_HANDSHAKE), ("modern", STATELESS)]
)
def test_asyncio_client_through_starlette_mount(mode: str, expected: str) -> None:
    elicited: list[str] = []

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        elicited.append(params["message"])
        return {"action": "accept", "content": {"answer": f"answer to {params['message']}"}}

    probe = ThreadProbe()
    app, _ = mounted(block_server(probe))

    async def main(example_port: int, probe_port: int) -> None:
        async with asyncio.timeout(BUDGET):
            async with open_asyncio_http_client(
                url(example_port), mode=mode, handlers=ClientHandlers(elicitation=elicitation)
            ) as client:
                assert client.protocol_version == expected
                assert {t["name"] for t in await client.list_tools()} == EXAMPLE_TOOLS
                assert texts(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
                progress: list[float] = []
                slow = await client.call_tool(
                    "slow",
                    {"seconds": 0.1, "steps": 2},
                    on_progress=lambda p, t, m: progress.append(p),
                )
                assert texts(slow) == "done after 0.1 seconds in 2 steps"
                assert progress == [1, 2]
                survey = await client.call_tool("survey", {"questions": QUESTIONS})
                assert survey["structuredContent"]["completed"] is True
                assert elicited == QUESTIONS

            async with open_asyncio_http_client(url(probe_port), mode=mode) as client:
                call = asyncio.create_task(client.call_tool("block", {"seconds": 60}))
                await asyncio.to_thread(probe.started.wait, 10)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
                assert await asyncio.to_thread(probe.stopped.wait, 10)
                assert probe.cancelled and not probe.finished
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"

    with uvicorn_serving(build_app()) as example_port, uvicorn_serving(app) as probe_port:
        asyncio.run(main(example_port, probe_port))


# Raw HTTP through the mount ------------------------------------------------------------------


async def test_http_refusals_through_the_mount() -> None:
    app, _ = mounted(block_server(ThreadProbe()), max_body=1024)
    with uvicorn_serving(app) as port:
        with trio.fail_after(BUDGET):
            stateless = {**POST_HEADERS, **stateless_headers(LIST)}
            ok = await request(port, "POST", TARGET, stateless, LIST)
            assert ok.status == 200
            assert {t["name"] for t in ok.messages()[0]["result"]["tools"]} == {"block", "add"}

            bad_host = await request(port, "POST", TARGET, stateless, LIST, host="evil.example")
            assert bad_host.status == 403
            unknown = await post(
                port,
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                {"mcp-session-id": "no-such-session", "mcp-protocol-version": NEWEST_HANDSHAKE},
                target=TARGET,
            )
            assert unknown.status == 404
            for method in ("PUT", "PATCH"):
                refused = await request(port, method, TARGET, {}, b"")
                assert refused.status == 405
                assert refused.headers["allow"] == "POST, GET, DELETE"
            wrong_accept = await request(
                port, "POST", TARGET, {**stateless, "accept": "application/json"}, LIST
            )
            assert wrong_accept.status == 406
            wrong_type = await request(
                port, "POST", TARGET, {**stateless, "content-type": "text/plain"}, LIST
            )
            assert wrong_type.status == 415
            too_big = await request(port, "POST", TARGET, stateless, b"[" + b" " * 2000 + b"]")
            assert too_big.status == 413
            elsewhere = await request(port, "POST", "/tools/other", stateless, LIST)
            assert elsewhere.status == 404

            # A legacy session works through the mount, and DELETE ends it.
            opened = await post(port, initialize(), target=TARGET)
            assert opened.status == 200
            session = {
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": NEWEST_HANDSHAKE,
            }
            assert (await post(port, INITIALIZED, session, target=TARGET)).status == 202
            listed = await post(
                port, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session, target=TARGET
            )
            assert listed.status == 200 and listed.messages()[0]["id"] == 2
            assert (await request(port, "DELETE", TARGET, session)).status in (200, 204)
            gone = await post(
                port, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session, target=TARGET
            )
            assert gone.status == 404


async def test_lifespan_shutdown_cancels_running_handlers() -> None:
    """A handshake-era call keeps running while its client is connected; stopping
    uvicorn (lifespan shutdown -> MCPApp.aclose) cancels it."""
    probe = ThreadProbe()
    app, mcp = mounted(block_server(probe))
    with trio.fail_after(BUDGET):
        with uvicorn_serving(app, graceful=1) as port:
            opened = await post(port, initialize(), target=TARGET)
            session = {
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": NEWEST_HANDSHAKE,
            }
            assert (await post(port, INITIALIZED, session, target=TARGET)).status == 202
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "block", "arguments": {"seconds": 60}},
            }
            async with trio.open_nursery() as nursery:
                nursery.start_soon(partial(post, port, call, session, target=TARGET))
                await wait_thread_event(probe.started)
                assert not probe.stopped.is_set()
                nursery.cancel_scope.cancel()
            # Leaving the block stops uvicorn (and runs the lifespan shutdown).
        assert probe.stopped.is_set()
        assert probe.cancelled and not probe.finished
        assert mcp._group_task is None
