"""Every opener and listener of both adapters takes its keywords through the
runtime's option types: an unknown keyword is a TypeError naming it, raised
before a port is bound or a process started, and the known ones still apply."""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import sys
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import trio

import asyncio_adapters.http_client
import asyncio_adapters.http_server
import asyncio_adapters.sse
import asyncio_adapters.websocket
import trio_adapters.http_client
import trio_adapters.http_server
import trio_adapters.sse
import trio_adapters.websocket
from asyncio_adapters.asgi import MCPApp
from sansio_mcp.http import StreamableHTTPServer
from sansio_mcp.runtime._http_service import streamable_http_router
from sansio_mcp_apps.example_server import build_server
from tests.parity.harness import serving

from .helpers import POST_HEADERS, initialize

ADAPTERS = {"trio": trio_adapters, "asyncio": asyncio_adapters}


def _run(backend: str, fn: Callable[[], Awaitable[Any]]) -> None:
    if backend == "trio":
        trio.run(fn)
    else:
        asyncio.run(fn())  # type: ignore[arg-type]


def _listeners(adapter: Any) -> dict[str, Callable[..., Awaitable[None]]]:
    server = build_server()
    router = streamable_http_router(server)
    return {
        "serve_http": lambda **kw: adapter.http_server.serve_http(server, **kw),
        "serve_router": lambda **kw: adapter.http_server.serve_router(server, router, **kw),
        "serve_sse": lambda **kw: adapter.sse.serve_sse(server, **kw),
        "serve_ws": lambda **kw: adapter.websocket.serve_ws(server, **kw),
    }


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize("name", ["serve_http", "serve_router", "serve_sse", "serve_ws"])
def test_a_listener_refuses_an_unknown_keyword(backend: str, name: str) -> None:
    listener = _listeners(ADAPTERS[backend])[name]

    async def main() -> None:
        with pytest.raises(TypeError, match="bogus"):
            await listener(port=0, bogus=1)

    _run(backend, main)


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize("opener", ["open_http_client", "open_sse_client", "open_ws_client"])
def test_a_network_opener_refuses_an_unknown_keyword(backend: str, opener: str) -> None:
    adapter = ADAPTERS[backend]
    module = {
        "open_http_client": adapter.http_client,
        "open_sse_client": adapter.sse,
        "open_ws_client": adapter.websocket,
    }[opener]
    # Port 9 (discard) on loopback: nothing listens there; a connection tried first
    # would fail with an OSError instead.
    url = ("ws" if opener == "open_ws_client" else "http") + "://127.0.0.1:9/mcp"

    async def main() -> None:
        with pytest.raises(TypeError, match="bogus"):
            async with getattr(module, opener)(url, bogus=1):
                pass

    _run(backend, main)


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_the_stdio_opener_refuses_an_unknown_keyword_before_starting_the_child(
    backend: str, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]

    async def main() -> None:
        with pytest.raises(TypeError, match="bogus"):
            async with ADAPTERS[backend].open_stdio_client(command, bogus=1):
                pass

    _run(backend, main)
    assert not marker.exists()


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_the_stdio_opener_refuses_an_empty_command(backend: str) -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="empty"):
            async with ADAPTERS[backend].open_stdio_client([]):
                pass

    _run(backend, main)


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_the_known_keywords_still_apply(backend: str) -> None:
    """A listener's ``endpoint`` reaches its machine; a client's ``headers`` and
    session keywords are taken beside each other."""
    adapter = ADAPTERS[backend]
    server = build_server()

    async def call(port: int) -> list[dict[str, Any]]:
        url = f"http://127.0.0.1:{port}/elsewhere"
        async with adapter.http_client.open_http_client(
            url, headers={"x-test": "1"}, mode="legacy"
        ) as client:
            return await client.list_tools()

    if backend == "trio":

        async def trio_main() -> None:
            async with trio.open_nursery() as nursery:
                port = await nursery.start(
                    lambda task_status: adapter.http_server.serve_http(
                        server, endpoint="/elsewhere", json_response=True, task_status=task_status
                    )
                )
                listed = await call(port)
                nursery.cancel_scope.cancel()
            assert [tool["name"] for tool in listed]

        trio.run(trio_main)
        return

    async def asyncio_main() -> None:
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(
            adapter.http_server.serve_http(
                server, endpoint="/elsewhere", json_response=True, started=started
            )
        )
        try:
            listed = await call(await started)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert [tool["name"] for tool in listed]

    asyncio.run(asyncio_main())


def _post(port: int, message: dict[str, Any], session_id: str | None = None) -> tuple[int, str]:
    """POST ``message`` on a connection of its own: the status and ``Mcp-Session-Id``."""
    headers = dict(POST_HEADERS)
    if session_id is not None:
        headers["mcp-session-id"] = session_id
        headers["mcp-protocol-version"] = "2025-11-25"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    with closing(connection):
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("mcp-session-id") or ""


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_serve_http_takes_the_machines_session_bounds(backend: str) -> None:
    """``max_sessions=1``: a second ``initialize`` ends the first, quiet session, whose
    next request is then unknown (404); by default both live on."""
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    for bounds, first_after in (({"max_sessions": 1}, 404), ({}, 200)):
        with serving(backend, "http", build_server(), **bounds) as port:
            status, first = _post(port, initialize(1))
            assert status == 200 and first
            assert _post(port, initialize(2))[0] == 200
            assert _post(port, ping, first)[0] == first_after


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("max_sessions", 0),
        ("max_sessions", 2.5),
        ("max_unread", -1),
        ("replay_memory", -1),
        ("replay_streams", True),
        ("session_idle_timeout", 0),
        ("session_idle_timeout", math.inf),
        ("retry_interval", -0.5),
        ("retry_interval", "1"),
        ("replay_bytes", 0),
        ("follow_check", math.nan),
        ("max_queue", 0),
        ("max_queue", 2.0),
        ("max_queue", True),
        ("stop_grace", -1),
        ("stop_grace", math.inf),
        ("stop_grace", "2"),
        ("stop_grace", 10**400),  # past a float's range: no number of seconds
        ("follow_check", 10**400),
        ("max_queue", 10**400),  # past any container's size
        ("replay_bytes", 10**400),
    ],
)
def test_a_session_bound_out_of_range_is_a_value_error_naming_it(keyword: str, value: Any) -> None:
    with pytest.raises(ValueError, match=keyword):
        streamable_http_router(build_server(), **{keyword: value})


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_serve_http_refuses_a_bound_out_of_range_before_binding(backend: str) -> None:
    serve = ADAPTERS[backend].http_server.serve_http

    async def main() -> None:
        with pytest.raises(ValueError, match="max_sessions"):
            await serve(build_server(), port=0, max_sessions=0)
        with pytest.raises(ValueError, match="stop_grace"):
            await serve(build_server(), port=0, stop_grace=-1.0)

    _run(backend, main)


def test_every_session_bound_reaches_the_router() -> None:
    bounds: dict[str, Any] = {
        "max_sessions": 7,
        "session_idle_timeout": None,
        "replay_memory": 3,
        "replay_streams": 2,
        "max_unread": 4096,
        "retry_interval": None,
        "replay_bytes": 1234,
        "follow_check": 2.5,
        "max_queue": 5,
        "stop_grace": 0,
    }
    for router in (
        streamable_http_router(build_server(), **bounds),
        MCPApp(build_server(), **bounds).router,
    ):
        assert isinstance(router, StreamableHTTPServer)
        sessions = router.sessions
        assert (sessions.max_sessions, sessions.idle_timeout) == (7, None)
        assert (sessions.replay_memory, sessions.replay_streams) == (3, 2)
        assert (router.max_unread, router.retry_interval) == (4096, None)
        assert (router.replicas.replay_bytes, router.replicas.follow_check) == (1234, 2.5)
        assert (router.replicas.max_queue, router.replicas.stop_grace) == (5, 0.0)
