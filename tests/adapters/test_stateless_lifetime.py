"""A stateless request's session, host and driver go when the request does, by
reference counting: nothing of it waits for the collector (its host and driver refer
to each other until the host is released), on both backends."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import trio

from asyncio_adapters.asgi import MCPApp
from bench.stateless_e2e import BASE, MODERN, _body, _call
from sansio_mcp import ServerSession
from sansio_mcp.runtime import Server
from sansio_mcp_apps.example_server import build_server
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_http


def _recording(server: Server) -> list[weakref.ref[ServerSession]]:
    """Weak references to every session ``server`` makes from now on."""
    made: list[weakref.ref[ServerSession]] = []
    create = server.create_session

    def recorded(**options: Any) -> ServerSession:
        session = create(**options)
        made.append(weakref.ref(session))
        return session

    server.create_session = recorded  # type: ignore[method-assign]
    return made


@contextmanager
def _no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def test_trio_stateless_sessions_go_with_their_requests(nursery: Any) -> None:
    server = build_server()
    made = _recording(server)
    port = await nursery.start(partial(serve_http, server))
    with _no_collector():
        async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="modern") as client:
            before = len(made)
            for i in range(3):
                result = await client.call_tool("echo", {"message": f"m{i}"})
                assert not result.get("isError"), result
            await trio.testing.wait_all_tasks_blocked()
            served = made[before:]
            assert len(served) == 3
            # The connection's last exchange is still at hand until its next request.
            assert [ref() for ref in served[:-1]] == [None, None]
        await trio.testing.wait_all_tasks_blocked()
        assert served[-1]() is None
    nursery.cancel_scope.cancel()


def test_asyncio_stateless_sessions_go_with_their_requests() -> None:
    async def main() -> list[ServerSession | None]:
        server = build_server()
        made = _recording(server)
        app = MCPApp(server)
        headers = [
            *BASE,
            (b"mcp-protocol-version", MODERN.encode()),
            (b"mcp-method", b"tools/call"),
            (b"mcp-name", b"echo"),
        ]
        try:
            assert (await _call(app, headers, _body(0, True)))["status"] == 200
            with _no_collector():
                before = len(made)
                for i in range(1, 4):
                    reply = await _call(app, headers, _body(i, True))
                    assert reply["status"] == 200 and b'"m%d"' % i in reply["body"], reply
                await asyncio.sleep(0)
                return [ref() for ref in made[before:]]
        finally:
            await app.aclose()

    assert asyncio.run(main()) == [None, None, None]
