"""Tasks through the gateway (docs/gateway.md, "Tasks"): a task-capable upstream tool
runs as a task for a client that declares tasks, in the client's form (2026-07-28's
extension, or 2025-11-25's core tasks), under an id of the gateway's own bound to the
client's principal; ``tasks/*`` reach the owning connector; task-only tools are not
listed to a client that cannot run them.  In process, on each backend, the example
server (2026-07-28) upstream."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from sansio_mcp import InvalidParams, MCPError
from sansio_mcp.http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import parse_config

from .conftest import BACKENDS, serve_gateway, serve_router_on

ADAPTERS = [f"{name}_adapters" for name in BACKENDS]
ALICE = {"authorization": "Bearer alice"}
BOB = {"authorization": "Bearer bob"}


def _approve(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"approve": True}}


#: A 2026-07-28 upstream lists no taskSupport: the connector's config says it.
TASK_TOOLS = {"approve_job": {"task_support": "required"}, "long_job": {"task_support": "optional"}}


async def _with_gateway(
    backend: Any, adapters: str, scenario: Any, tools: Any = TASK_TOOLS, **config: Any
) -> Any:
    """Run ``scenario(gateway, url, client)`` (``client(headers, **options)`` opens a
    client of the gateway) against a gateway whose one connector, ``ex``, is the
    example server over Streamable HTTP; API keys ``alice`` and ``bob``."""
    http_client = importlib.import_module(f"{adapters}.http_client")
    handlers_type = importlib.import_module(adapters).ClientHandlers

    def client(
        headers: dict[str, str], *, version: str, tasks: bool = True, **handlers: Any
    ) -> Any:
        return http_client.open_http_client(
            url,
            headers=headers,
            protocol_version=version,
            handlers=handlers_type(tasks=tasks, **handlers),
        )

    async with backend.open_task_group() as group:
        example = build_server()
        router = StreamableHTTPServer(example.create_session)
        port = await serve_router_on(backend, group, adapters, example, router)
        parsed = parse_config(
            {
                "connectors": {
                    "ex": {
                        "transport": "http",
                        "url": f"http://127.0.0.1:{port}/mcp",
                        "tools": tools,
                    }
                },
                "api_keys": ["alice", "bob"],
                **config,
            }
        )
        gateway, url = await serve_gateway(backend, group, adapters, parsed)
        async with backend.fail_after(30):
            outcome = await scenario(gateway, url, client)
        group.cancel()
    return outcome


async def _approval(backend: Any, adapters: str, version: str) -> Any:
    statuses: list[str] = []

    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        async with client(ALICE, version=version, elicitation=_approve) as alice:
            task = await alice.call_tool("ex.approve_job", {"job": "deploy"}, task=True)
            result = await task.result(on_status=lambda t: statuses.append(t["status"]))
            routes = gateway.server.task_routes
            (route,) = routes._routes.values()
        return task.task_id, route, result, statuses

    return await _with_gateway(
        backend, adapters, scenario, relay_questions_to_handshake_clients=True
    )


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_task_asks_is_answered_and_completes(adapters: str, version: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    task_id, route, result, statuses = backend.run(_approval, backend, adapters, version)
    assert result["content"][0]["text"] == "deploy: done"
    assert statuses[0] in ("working", "input_required") and statuses[-1] == "completed"
    if version == "2026-07-28":  # (2025-11-25: tasks/result waits out the question)
        assert "input_required" in statuses
    # The client's id is the gateway's own: it names no connector, no upstream id.
    assert task_id.startswith("gwt-") and route.upstream_id not in task_id
    assert route.connector == "ex" and "ex" not in task_id.lower().replace("gwt-", "")[:0]
    assert route.principal == "api_keys[0]"
