"""Connectors over the legacy HTTP+SSE transport and over WebSocket, beside one over
stdio, behind the gateway on each backend."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from trio_adapters.http_client import open_http_client

from .conftest import BACKENDS, EXAMPLE_TOOLS, example_http, example_stdio_connector, free_port
from .conftest import gateway as run_gateway

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("backend", BACKENDS)
async def test_sse_ws_and_stdio_connectors(backend: str, tmp_path: Path) -> None:
    sse, ws = free_port(), free_port()
    config = {
        "connectors": {
            "old": {"transport": "sse", "url": f"http://127.0.0.1:{sse}/sse"},
            "sock": {"transport": "ws", "url": f"ws://127.0.0.1:{ws}/mcp"},
            "pipe": example_stdio_connector(),
        }
    }
    with ExitStack() as stack:
        stack.enter_context(example_http(sse, "sse"))
        stack.enter_context(example_http(ws, "ws"))
        url = stack.enter_context(run_gateway(config, backend, tmp_path))
        async with open_http_client(url, mode="modern") as client:
            names = {t["name"] for t in await client.list_tools()}
            every = {f"{c}.{t}" for c in ("old", "sock", "pipe") for t in EXAMPLE_TOOLS}
            # The legacy SSE upstream (2025-11-25) lists approve_job as task-only: not
            # to a client that declared no tasks (docs/gateway.md, "Tasks").
            assert names == every - {"old.approve_job"}
            for connector, n in (("old", 1), ("sock", 2), ("pipe", 3)):
                added = await client.call_tool(f"{connector}.add", {"a": n, "b": n})
                assert added["structuredContent"] == {"sum": 2 * n}
