"""Tasks through the gateway (docs/gateway.md, "Tasks"): a task-capable upstream tool
runs as a task for a client that declares tasks, in the client's form (2026-07-28's
extension, or 2025-11-25's core tasks), under an id of the gateway's own bound to the
client's principal; ``tasks/*`` reach the owning connector; task-only tools are not
listed to a client that cannot run them.  In process, on each backend, with the example
server (2026-07-28) upstream; and through the ``sansio-mcp gateway`` command (each
backend) with server-everything (2025-11-25 tasks) upstream and the TypeScript SDK
client."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from sansio_mcp import InvalidParams, MCPError
from sansio_mcp.http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import parse_config

from .conftest import API_KEY, BACKENDS, Setup, serve_gateway, serve_router_on
from .test_sdk_clients import _ts_client

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


async def _cancel(backend: Any, adapters: str, version: str) -> Any:
    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        async with client(ALICE, version=version) as alice:
            task = await alice.call_tool("ex.long_job", {"seconds": 1, "steps": 20}, task=True)
            await task.cancel()
            final = await task.wait()
        return task.task_id, final

    return await _with_gateway(backend, adapters, scenario)


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_task_is_cancelled_upstream(adapters: str, version: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    task_id, final = backend.run(_cancel, backend, adapters, version)
    assert final["status"] == "cancelled" and final["taskId"] == task_id


async def _strangers(backend: Any, adapters: str, version: str) -> Any:
    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        refusals: dict[tuple[str, str], Any] = {}
        async with client(ALICE, version=version) as alice:
            task = await alice.call_tool("ex.long_job", {"seconds": 1, "steps": 20}, task=True)
            async with client(BOB, version=version) as bob:
                for who, task_id in (("bob", task.task_id), ("unknown", "gwt-" + "A" * 32)):
                    for method in ("tasks/get", "tasks/cancel"):
                        try:
                            await bob.send_request(method, {"taskId": task_id})
                        except MCPError as exc:
                            refusals[who, method] = (exc.code, exc.message.replace(task_id, "ID"))
            got = await task.refresh()  # still alice's, untouched
            await task.cancel()
        return got, refusals

    return await _with_gateway(backend, adapters, scenario)


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("adapters", ADAPTERS)
def test_another_principals_task_is_as_unknown_as_none(adapters: str, version: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    got, refusals = backend.run(_strangers, backend, adapters, version)
    assert got["status"] == "working"
    assert set(refusals) == {
        (who, m) for who in ("bob", "unknown") for m in ("tasks/get", "tasks/cancel")
    }
    assert len(set(refusals.values())) == 1  # bob learns nothing an unknown id would not say
    assert next(iter(refusals.values()))[0] == InvalidParams.code


async def _listings(backend: Any, adapters: str, tools: Any) -> Any:
    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        listed: dict[tuple[str, bool], Any] = {}
        for version, tasks in (
            ("2026-07-28", True),
            ("2026-07-28", False),
            ("2025-11-25", True),
            ("2025-06-18", False),
        ):
            async with client(ALICE, version=version, tasks=tasks) as c:
                listed[version, tasks] = {
                    t["name"]: (t.get("execution") or {}).get("taskSupport")
                    for t in await c.list_tools()
                    if t["name"] in ("ex.approve_job", "ex.long_job")
                }
        async with client(ALICE, version="2026-07-28", tasks=False) as plain:
            ran = await plain.call_tool("ex.long_job", {"seconds": 0, "steps": 1})
        return listed, ran

    return await _with_gateway(backend, adapters, scenario, tools=tools)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_task_only_tools_are_listed_to_clients_that_run_tasks(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    listed, ran = backend.run(_listings, backend, adapters, TASK_TOOLS)
    both = {"ex.approve_job": "required", "ex.long_job": "optional"}
    assert listed["2026-07-28", True] == both
    assert listed["2025-11-25", True] == both
    assert listed["2026-07-28", False] == {"ex.long_job": "optional"}
    assert listed["2025-06-18", False] == {"ex.long_job": "optional"}
    # An optional one runs as a plain call for a client without tasks.
    assert ran["content"][0]["text"].startswith("long job done")
    assert ran.get("resultType") == "complete"


async def _learned(backend: Any, adapters: str) -> Any:
    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        async with client(ALICE, version="2026-07-28", tasks=False) as plain:
            before = {t["name"] for t in await plain.list_tools()}
            try:
                await plain.call_tool("ex.approve_job", {"job": "x"})
            except MCPError as exc:
                refusal = exc.code
        async with client(ALICE, version="2026-07-28", tasks=False) as plain:  # (uncached)
            after = {t["name"] for t in await plain.list_tools()}
        async with client(ALICE, version="2025-11-25") as core:
            listed = {t["name"]: t.get("execution") for t in await core.list_tools()}
            result = await core.call_tool("ex.approve_job", {"job": "x"}, task=True)
        return before, refusal, after, listed["ex.approve_job"], result.task_id

    return await _with_gateway(backend, adapters, scenario, tools={})


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_tool_refused_but_as_a_task_is_listed_so_from_then_on(adapters: str) -> None:
    """A 2026-07-28 upstream lists no taskSupport: its first task-only refusal tells."""
    backend = importlib.import_module(adapters).BACKEND
    before, refusal, after, execution, task_id = backend.run(_learned, backend, adapters)
    assert "ex.approve_job" in before and refusal == -32021
    assert "ex.approve_job" not in after and "ex.long_job" in after
    assert execution == {"taskSupport": "required"}
    assert task_id.startswith("gwt-")  # the 2025-11-25 client now asks for a task


async def _bounded(backend: Any, adapters: str) -> Any:
    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        async with client(ALICE, version="2026-07-28") as alice:
            first = await alice.call_tool("ex.long_job", {"seconds": 1, "steps": 20}, task=True)
            try:
                await alice.call_tool("ex.long_job", {"seconds": 1}, task=True)
            except MCPError as exc:
                refused = exc
            async with client(BOB, version="2026-07-28") as bob:
                other = await bob.call_tool("ex.long_job", {"seconds": 1, "steps": 20}, task=True)
                await other.cancel()
            await first.cancel()
        return refused

    return await _with_gateway(backend, adapters, scenario, max_tasks_per_principal=1)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_tasks_per_principal_are_bounded(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    refused = backend.run(_bounded, backend, adapters)
    assert refused.code == -32603
    assert refused.data == {"limit": "max_per_principal", "max": 1}


TS_TASKS_CLIENT = Path(__file__).with_name("ts_tasks_client.mjs")


@pytest.mark.interop
def test_the_typescript_sdk_runs_tasks_through_the_gateway(setup: Setup) -> None:
    """The TypeScript SDK v1 client's 2025-11-25 tasks (the Python SDK ``mcp`` 2.3
    has no client side of tasks at either revision, nor has the TypeScript SDK v2
    client a task API): approve_job asks while tasks/result waits, and completes;
    long_job is cancelled; an id the gateway never made is refused.  The gateway
    (the ``sansio-mcp gateway`` command, on each backend) has the example server
    upstream at 2026-07-28."""
    report = _ts_client(setup.url, "", TS_TASKS_CLIENT)
    assert report["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert report["tools"]["example.long_job"] is None  # unknown until refused or configured
    approve = report["approve"]
    assert approve[0]["type"] == "taskCreated" and approve[0]["taskId"].startswith("gwt-")
    assert approve[-1] == {
        "type": "result",
        "result": {
            "content": [{"type": "text", "text": "ship: done"}],
            "isError": False,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": approve[0]["taskId"]}},
        },
    }
    assert report["asked"] == ["Run ship?"]
    assert report["cancelled"]["status"] == "cancelled"
    assert report["cancel"][-1]["type"] == "error" and "cancelled" in report["cancel"][-1]["error"]
    assert report["unknown"]["error"]["code"] == InvalidParams.code


async def _listened(backend: Any, adapters: str) -> Any:
    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        pushed: list[tuple[str, str]] = []
        async with client(ALICE, version="2026-07-28") as alice:
            task = await alice.call_tool("ex.long_job", {"seconds": 1, "steps": 4}, task=True)
            async with client(BOB, version="2026-07-28") as bob:
                async with bob.listen(task_ids=[task.task_id]) as strangers:
                    bob_ack = strangers.acknowledged_filter
            async with alice.listen(task_ids=[task.task_id]) as subscription:
                ack = subscription.acknowledged_filter
                async for _method, params in subscription:
                    pushed.append((params["taskId"], params["status"]))
                    if params["status"] == "completed":
                        result = params.get("result")
                        break
        return task.task_id, ack, bob_ack, pushed, result

    return await _with_gateway(backend, adapters, scenario)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_listening_client_is_told_its_tasks_status(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    task_id, ack, bob_ack, pushed, result = backend.run(_listened, backend, adapters)
    assert ack.get("taskIds") == [task_id]
    assert not bob_ack.get("taskIds")  # another principal's task is not listened to
    assert pushed[0] == (task_id, "working") and pushed[-1] == (task_id, "completed")
    assert result["content"][0]["text"].startswith("long job done")


@pytest.mark.interop
async def test_server_everythings_task_runs_for_a_core_tasks_client(setup: Setup) -> None:
    """server-everything (2025-11-25, its own tasks) upstream: its task-only research
    tool is listed to a 2025-11-25 client, runs as a task under a gateway id, and its
    question (asked while tasks/result waits) reaches the client; a 2026-07-28 client
    (which the gateway cannot give that upstream's tasks) is not offered it."""
    from trio_adapters import ClientHandlers
    from trio_adapters.http_client import open_http_client

    asked: list[str] = []

    def clarify(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"interpretation": "the gateway's view"}}

    auth = {"authorization": f"Bearer {API_KEY}"}
    tool = "everything.simulate-research-query"
    handlers = ClientHandlers(elicitation=clarify, tasks=True)
    async with open_http_client(
        setup.url, headers=auth, protocol_version="2025-11-25", handlers=handlers
    ) as core:
        listed = {t["name"]: t.get("execution") for t in await core.list_tools()}
        task = await core.call_tool(tool, {"topic": "tasks", "ambiguous": True}, task=True)
        result = await task.result()
    async with open_http_client(
        setup.url, headers=auth, protocol_version="2026-07-28", handlers=handlers
    ) as stateless:
        stateless_names = {t["name"] for t in await stateless.list_tools()}
    assert listed[tool] == {"taskSupport": "required"}
    assert task.task_id.startswith("gwt-")
    assert asked and "multiple interpretations" in asked[0]
    assert "the gateway's view" in json.dumps(result)
    assert tool not in stateless_names and "everything.echo" in stateless_names


async def _across_replicas(backend: Any, adapters: str, stores_url: str | None) -> Any:
    """A task made at replica a, followed and answered at b."""
    from .test_parked import _two_replicas

    http_client = importlib.import_module(f"{adapters}.http_client")
    handlers_type = importlib.import_module(adapters).ClientHandlers
    seen: dict[str, Any] = {}

    def client(url: str, key: str) -> Any:
        return http_client.open_http_client(
            url,
            headers={"authorization": f"Bearer {key}"},
            protocol_version="2026-07-28",
            handlers=handlers_type(tasks=True),
        )

    async def scenario(urls: dict[str, str]) -> Any:
        async with client(urls["a"], "alice") as at_a:
            task = await at_a.call_tool("ex.approve_job", {"job": "ship"}, task=True)
        async with client(urls["b"], "bob") as bob:
            try:
                await bob.send_request("tasks/get", {"taskId": task.task_id})
            except MCPError as exc:
                seen["bob"] = exc.code
        async with client(urls["b"], "alice") as at_b:
            try:
                got = await at_b.send_request("tasks/get", {"taskId": task.task_id})
            except MCPError as exc:
                seen["b"] = exc.code
                return seen
            while got["status"] != "input_required":
                await backend.sleep(0.05)
                got = await at_b.send_request("tasks/get", {"taskId": task.task_id})
            (key,) = got["inputRequests"]
            answer = {key: {"action": "accept", "content": {"approve": True}}}
            await at_b.send_request(
                "tasks/update", {"taskId": task.task_id, "inputResponses": answer}
            )
            while got["status"] not in ("completed", "failed", "cancelled"):
                await backend.sleep(0.05)
                got = await at_b.send_request("tasks/get", {"taskId": task.task_id})
            seen["b"] = got
        return seen

    return await _two_replicas(backend, adapters, stores_url, scenario, handshake=False)


@pytest.mark.parametrize("stores", ["memory", "redis"])
@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_task_made_at_one_replica_is_served_by_another(
    adapters: str, stores: str, request: pytest.FixtureRequest
) -> None:
    """With Redis stores any replica serves a task's tasks/*; in memory the replica
    that made it alone does (the other says unknown task: docs/gateway.md)."""
    backend = importlib.import_module(adapters).BACKEND
    url = None if stores == "memory" else str(request.getfixturevalue("redis_url"))
    seen = backend.run(_across_replicas, backend, adapters, url)
    assert seen["bob"] == InvalidParams.code
    if stores == "memory":
        assert seen["b"] == InvalidParams.code
    else:
        assert seen["b"]["status"] == "completed"
        assert seen["b"]["result"]["content"][0]["text"] == "ship: done"


async def _unasked(backend: Any, adapters: str) -> Any:
    async def scenario(gateway: Any, url: str, client: Any) -> Any:
        async with client(ALICE, version="2025-11-25", elicitation=_approve) as alice:
            task = await alice.call_tool("ex.approve_job", {"job": "x"}, task=True)
            try:
                await alice.send_request("tasks/result", {"taskId": task.task_id})
            except MCPError as exc:
                refused = exc
            await task.cancel()
        return refused

    return await _with_gateway(backend, adapters, scenario)  # questions not relayed


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_core_tasks_question_is_not_asked_without_relaying(adapters: str) -> None:
    """Without relay_questions_to_handshake_clients a 2025-11-25 client's tasks/result
    is told what the task needs (-32021), as a call's question would be."""
    backend = importlib.import_module(adapters).BACKEND
    refused = backend.run(_unasked, backend, adapters)
    assert refused.code == -32021
    assert refused.data["requiredCapabilities"] == {"elicitation": {}}
