"""An HTTP upstream of a handshake revision that loses the gateway's session (it
answers 404): the gateway initializes a new session and sends the call again, and
the client sees nothing of it.  In process, on each backend."""

from __future__ import annotations

import importlib
import logging
from typing import Any

import pytest

from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import ConnectorConfig, parse_config
from sansio_mcp_apps.gateway.runtime import Gateway

from .conftest import BACKENDS, serve_router_on


async def _scenario(backend: Any, adapters: str) -> tuple[int, int]:
    http_client = importlib.import_module(f"{adapters}.http_client")

    def handshake_opener(connector: ConnectorConfig, **options: Any) -> Any:
        """The upstream opened at a handshake revision (it has sessions to lose)."""
        return http_client.open_http_client(connector.url, mode="legacy", **options)

    async def serve(server: Any, router: Any) -> int:
        return await serve_router_on(backend, group, adapters, server, router)

    upstream_server = build_server()
    machine = StreamableHTTPServer(upstream_server.create_session)
    async with backend.open_task_group() as group:
        upstream = await serve(upstream_server, machine)
        url = f"http://127.0.0.1:{upstream}/mcp"
        config = parse_config({"connectors": {"ex": {"transport": "http", "url": url}}})
        gateway = Gateway(config, backend, handshake_opener)
        group.start_soon(gateway.run)
        port = await serve(gateway.server, gateway.router())
        async with http_client.open_http_client(
            f"http://127.0.0.1:{port}/mcp", mode="modern"
        ) as client:
            first = await client.call_tool("ex.add", {"a": 1, "b": 1})
            (lost,) = machine.sessions.ids
            machine.sessions.end(lost)  # the upstream forgets the gateway's session: 404 now
            async with backend.fail_after(10):
                again = await client.call_tool("ex.add", {"a": 2, "b": 2})
            (renewed,) = machine.sessions.ids
            assert renewed != lost
        group.cancel()
    return first["structuredContent"]["sum"], again["structuredContent"]["sum"]


@pytest.mark.parametrize("adapters", [f"{name}_adapters" for name in BACKENDS])
def test_lost_upstream_session_is_renewed(adapters: str, caplog: pytest.LogCaptureFixture) -> None:
    backend = importlib.import_module(adapters).BACKEND
    with caplog.at_level(logging.WARNING, logger="sansio_mcp_apps.gateway"):
        assert backend.run(_scenario, backend, adapters) == (2, 4)
    assert "HTTP 404" in caplog.text  # the call met the 404, and the gateway renewed it
