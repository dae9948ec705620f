"""List-changed hints are bounded: a burst of changes reaches a listening client as
one or two hints, not one per change (an in-process gateway, on Trio, in front of
the example server over HTTP)."""

from __future__ import annotations

from functools import partial
from typing import Any

import trio

from sansio_mcp.gateway import parse_config
from sansio_mcp.runtime.example_server import build_server
from sansio_mcp.runtime.gateway import Gateway, transport_opener
from trio_adapters import BACKEND
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_http, serve_router


async def _ready(gateway: Gateway) -> None:
    with trio.fail_after(10):
        while gateway.status()["ex"]["status"] != "ready":
            await trio.sleep(0.02)


async def test_a_burst_of_changes_is_one_hint(nursery: Any) -> None:
    upstream = await nursery.start(serve_http, build_server())
    config = parse_config(
        {"connectors": {"ex": {"transport": "http", "url": f"http://127.0.0.1:{upstream}/mcp"}}}
    )
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND), hint_interval=0.3)
    nursery.start_soon(gateway.run)
    await _ready(gateway)
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="modern") as client:
        async with client.listen(tools_list_changed=True) as hints:
            await trio.sleep(0.4)  # past the interval of the hint the upstream's start gave
            for _ in range(100):
                gateway.tools_changed()
            got = []
            with trio.move_on_after(1.0):
                async for method, _params in hints:
                    got.append(method)
    assert got and set(got) == {"notifications/tools/list_changed"}
    assert len(got) <= 2, got  # 100 changes: the first hint at once, the rest in one more
    nursery.cancel_scope.cancel()
