"""The client's own ``_meta`` reaches the upstream through the gateway's tools/call,
and the keys each hop sets for itself do not: a fixture upstream built on this
library (``meta_echo_server.py``, at either era, over HTTP in process and over
stdio behind the command on each backend) says what ``_meta`` it received."""

from __future__ import annotations

import json
import sys
from functools import partial
from typing import Any

import httpx
import pytest
import trio

from sansio_mcp._stateless import end_to_end_meta, is_reserved_meta_key
from sansio_mcp._versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
)
from sansio_mcp_apps.gateway import parse_config
from sansio_mcp_apps.gateway.runtime import Gateway, transport_opener
from trio_adapters import BACKEND
from trio_adapters.http_server import serve_http, serve_router

from .conftest import BACKENDS, REPO, gateway
from .meta_echo_server import meta_echo_server

#: The client's own keys: each must reach the upstream unchanged.
OWN = {
    "com.example/tenant": {"id": 7, "tags": ["a", "b"]},
    "plain": "value",
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "tracestate": "vendor=x",
}
#: Keys of the client's hop (and other reserved ones): none may reach the upstream as sent.
HOP = {
    META_PROTOCOL_VERSION: "2026-07-28",
    META_CLIENT_CAPABILITIES: {"elicitation": {}},
    META_CLIENT_INFO: {"name": "the-end-client", "version": "9"},
    META_LOG_LEVEL: "debug",
    "io.modelcontextprotocol/related-task": {"taskId": "t-1"},
    "dev.mcp/future": 1,
    "progressToken": "the-clients-token",
}


@pytest.mark.parametrize(
    ("key", "reserved"),
    [
        ("io.modelcontextprotocol/protocolVersion", True),
        ("dev.mcp/anything", True),
        ("IO.ModelContextProtocol/x", True),
        ("com.example.mcp/x", False),  # the third label: not reserved (the spec's example)
        ("mcp/x", False),
        ("progressToken", False),
        ("traceparent", False),
        ("com.example/x", False),
    ],
)
def test_reserved_prefixes_are_those_the_spec_names(key: str, reserved: bool) -> None:
    assert is_reserved_meta_key(key) is reserved


def test_end_to_end_meta_keeps_the_clients_own_keys_only() -> None:
    assert end_to_end_meta({**OWN, **HOP}) == OWN
    assert end_to_end_meta(None) == {} and end_to_end_meta(["x"]) == {}


async def _call(url: str, era: str, tool: str = "up.meta") -> dict[str, Any]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if era == "modern":
        headers |= {
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": tool,
        }
        meta = {**OWN, **HOP}
    else:
        headers["mcp-protocol-version"] = "2025-06-18"
        meta = {**OWN, "progressToken": "the-clients-token"}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta},
    }
    async with httpx.AsyncClient(timeout=10) as http:
        async with http.stream("POST", url, json=body, headers=headers) as got:
            if got.headers["content-type"].startswith("application/json"):
                answer = json.loads(await got.aread())
            else:
                async for line in got.aiter_lines():
                    if line.startswith("data:") and json.loads(line[5:]).get("id") == 1:
                        answer = json.loads(line[5:])
                        break
    result = answer["result"]
    assert not result.get("isError"), result
    received: dict[str, Any] = json.loads(result["content"][0]["text"])
    return received


@pytest.mark.parametrize("upstream_era", ["modern", "handshake"])
@pytest.mark.parametrize("client_era", ["modern", "legacy"])
async def test_the_clients_own_meta_reaches_the_upstream(
    nursery: Any, upstream_era: str, client_era: str
) -> None:
    versions = ("2025-06-18",) if upstream_era == "handshake" else ()
    upstream = await nursery.start(serve_http, meta_echo_server(*versions))
    config = parse_config(
        {"connectors": {"up": {"transport": "http", "url": f"http://127.0.0.1:{upstream}/mcp"}}}
    )
    gateway = Gateway(config, BACKEND, transport_opener(BACKEND))
    nursery.start_soon(gateway.run)
    with trio.fail_after(10):
        while gateway.status()["up"]["status"] != "ready":
            await trio.sleep(0.02)
    port = await nursery.start(partial(serve_router, gateway.server, router=gateway.router()))
    received = await _call(f"http://127.0.0.1:{port}/mcp", client_era)
    _check(received, upstream_era)
    nursery.cancel_scope.cancel()


def _check(received: dict[str, Any], upstream_era: str) -> None:
    assert {k: received.get(k) for k in OWN} == OWN, received
    # Nothing of the client's hop went through: the gateway's own hop set what it needs.
    assert received.get("progressToken") != "the-clients-token"
    assert not {"io.modelcontextprotocol/related-task", "dev.mcp/future"} & set(received)
    if upstream_era == "modern":
        assert received[META_PROTOCOL_VERSION] == "2026-07-28"
        assert received[META_CLIENT_INFO]["name"] != "the-end-client"
        assert received.get(META_LOG_LEVEL) != "debug"
    else:
        assert not [k for k in received if is_reserved_meta_key(k)], received


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_command_passes_the_clients_meta_on(backend: str, tmp_path: Any) -> None:
    fixture = [sys.executable, str(REPO / "tests" / "gateway" / "meta_echo_server.py")]
    env = {"PYTHONPATH": str(REPO)}
    config = {
        "connectors": {
            "modern": {"transport": "stdio", "cmd": fixture, "env": env},
            "handshake": {"transport": "stdio", "cmd": [*fixture, "2025-06-18"], "env": env},
        }
    }
    with gateway(config, backend, tmp_path) as url:
        for client_era in ("modern", "legacy"):
            for upstream_era in ("modern", "handshake"):
                received = await _call(url, client_era, f"{upstream_era}.meta")
                _check(received, upstream_era)
