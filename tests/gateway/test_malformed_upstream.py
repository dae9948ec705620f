"""An upstream whose answer to a call cannot be read (NaN, invalid JSON, ...) fails
that call through the gateway at once, saying so, instead of after the gateway's
300 s call timeout.  In process, on each backend."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from sansio_mcp import MCPError
from sansio_mcp_apps.gateway import parse_config

from .conftest import BACKENDS, REPO, serve_gateway

SERVER = REPO / "tests" / "malformed_answer_server.py"


async def _scenario(backend: Any, adapters: str, fault: str) -> tuple[str, float]:
    http_client = importlib.import_module(f"{adapters}.http_client")
    cmd = [sys.executable, str(SERVER), fault]
    config = parse_config({"connectors": {"bad": {"transport": "stdio", "cmd": cmd}}})
    async with backend.open_task_group() as group:
        _, url = await serve_gateway(backend, group, adapters, config)
        started = backend.clock()
        async with http_client.open_http_client(url) as client:
            async with backend.fail_after(30):
                try:
                    await client.call_tool("bad.broken", {})
                except MCPError as exc:
                    message = exc.message
                else:
                    raise AssertionError("an unreadable answer passed for a result")
        seconds = backend.clock() - started
        group.cancel()
    return message, seconds


@pytest.mark.parametrize("fault", ["nan", "garbage"])
@pytest.mark.parametrize("adapters", [f"{name}_adapters" for name in BACKENDS])
def test_an_unreadable_upstream_answer_fails_the_call_at_once(adapters: str, fault: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    message, seconds = backend.run(_scenario, backend, adapters, fault)
    assert message.startswith("connector 'bad': the answer to tools/call was malformed: ")
    assert ("NaN is not valid JSON" if fault == "nan" else "Expecting value") in message
    assert seconds < 30
