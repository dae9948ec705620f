"""An HTTP upstream of a handshake revision that loses the gateway's session (it
answers 404): the gateway initializes a new session and sends the call again, and
the client sees nothing of it (in process, on Trio)."""

from __future__ import annotations

from functools import partial
from typing import Any

import trio

from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp.gateway import ConnectorConfig, parse_config
from sansio_mcp.runtime.example_server import build_server
from sansio_mcp.runtime.gateway import Gateway
from trio_adapters import BACKEND
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_router


def handshake_opener(connector: ConnectorConfig, **options: Any) -> Any:
    """The upstream opened at a handshake revision (it has sessions to lose)."""
    return open_http_client(connector.url, mode="legacy", **options)


async def test_lost_upstream_session_is_renewed(nursery: Any) -> None:
    upstream_server = build_server()
    machine = StreamableHTTPServer(upstream_server.create_session)
    upstream = await nursery.start(partial(serve_router, upstream_server, router=machine))
    url = f"http://127.0.0.1:{upstream}/mcp"
    gateway = Gateway(
        parse_config({"connectors": {"ex": {"transport": "http", "url": url}}}),
        BACKEND,
        handshake_opener,
    )
    nursery.start_soon(gateway.run)
    with trio.fail_after(10):
        while gateway.status()["ex"]["status"] != "ready":
            await trio.sleep(0.02)
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="modern") as client:
        first = await client.call_tool("ex.add", {"a": 1, "b": 1})
        assert first["structuredContent"] == {"sum": 2}
        (lost,) = machine.session_ids
        machine.end_session(lost)  # the upstream forgets the gateway's session: 404 from now
        with trio.fail_after(10):
            again = await client.call_tool("ex.add", {"a": 2, "b": 2})
        assert again["structuredContent"] == {"sum": 4}
        (renewed,) = machine.session_ids
        assert renewed != lost
    nursery.cancel_scope.cancel()
