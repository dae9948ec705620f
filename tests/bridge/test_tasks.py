"""A streaming ``tool/call/req`` of a task-capable tool runs as a task upstream (on
2025-11-25: ``params.task``, then ``tasks/result``; on 2026-07-28: the tasks extension
declared by that request alone, then ``tasks/get`` polls and ``tasks/update`` for its
input): the task's status changes reach the agent as ``tool/event`` messages of kind
``status``, a task-only tool runs as a task for any call, and a call that ends without
its outcome (its time limit, the agent gone) cancels the task upstream."""

from __future__ import annotations

import time
from functools import partial
from itertools import pairwise
from typing import Any

import pytest
import trio
import trio.testing

from sansio_mcp.runtime import Server
from sansio_mcp_apps.a2e import BridgeHost
from sansio_mcp_apps.a2e.adapters.trio_bridge import TrioBridge, serve_agent_stream
from sansio_mcp_apps.a2e.adapters.trio_client import open_a2e_streams
from sansio_mcp_apps.example_server import add_task_tools
from trio_adapters.http_server import serve_http

from .conftest import running_bridge


def _server() -> Server:
    server = Server("bridge-tasks", "1.0", task_poll_interval_ms=50)
    add_task_tools(server, max_seconds=600)
    return server


def _text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["data"]["content"])


#: The bridge's protocol_version setting, and the revision the link then speaks.
REVISIONS = [("legacy", "2025-11-25"), ("modern", "2026-07-28")]
by_revision = pytest.mark.parametrize(
    ("setting", "revision"), REVISIONS, ids=[r for _, r in REVISIONS]
)


async def _register(
    agent: Any, nursery: trio.Nursery, server: Server, setting: str, revision: str
) -> None:
    port = await nursery.start(partial(serve_http, server))
    info = await agent.register(
        {
            "server_id": "jobs",
            "transport": "http",
            "url": f"http://127.0.0.1:{port}/mcp",
            "protocol_version": setting,
        }
    )
    assert info["status"] == "ready" and info["mcp_version"] == revision, info


@by_revision
async def test_a_streaming_call_runs_as_a_task_upstream(setting: str, revision: str) -> None:
    server = _server()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            async with running_bridge(elicitation=True) as (_bridge, agent):
                agent.on_elicit = lambda request: {"action": "accept", "content": {"approve": True}}
                await _register(agent, nursery, server, setting, revision)
                done = await agent.call_tool(
                    "jobs__long_job", {"seconds": 0.3, "steps": 3}, streaming=True
                )
                assert done["success"] and _text(done) == "long job done: 3 steps in 0.3 s"
                statuses = [e for e in agent.events if e.kind == "status"]
                assert statuses and all(e.req_id == statuses[0].req_id for e in statuses)
                assert statuses[0].data["status"] == "working"
                assert statuses[-1].data["status"] == "completed"
                task_id = statuses[0].data["task_id"]
                assert all(e.data["task_id"] == task_id for e in statuses)
                assert [e.seq for e in statuses] == sorted({e.seq for e in statuses})
                # each status message (the tool's progress) is an event of its own; a
                # 2026-07-28 task is polled, so only the messages the polls saw come
                messages = [e.data.get("message") for e in statuses]
                steps = {"step 1 of 3", "step 2 of 3", "step 3 of 3", None}
                assert set(messages) <= steps, messages
                changes = [(e.data["status"], e.data.get("message")) for e in statuses]
                assert all(a != b for a, b in pairwise(changes)), changes
                if revision == "2025-11-25":
                    assert "step 2 of 3" in messages and "step 3 of 3" in messages
                # the task lived on the server, and ended completed there
                assert server.tasks.store.get(task_id, time.time()).status.value == "completed"

                # A task-only tool runs as a task for a plain call too (its input asked of
                # the agent on the way); a plain call of the other stays a plain call.
                agent.events.clear()
                approved = await agent.call_tool("jobs__approve_job", {"job": "ship"})
                assert approved["success"] and _text(approved) == "ship: done"
                quick = await agent.call_tool("jobs__long_job", {"seconds": 0})
                assert quick["success"] and not [e for e in agent.events if e.kind == "status"]
                assert len(list(server.tasks.store)) == 2
            nursery.cancel_scope.cancel()


@by_revision
async def test_a_call_that_runs_out_of_time_cancels_its_task(setting: str, revision: str) -> None:
    server = _server()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            async with running_bridge() as (_bridge, agent):
                await _register(agent, nursery, server, setting, revision)
                late = await agent.call_tool(
                    "jobs__long_job", {"seconds": 600, "steps": 1}, streaming=True, timeout=1
                )
                assert not late["success"] and late["error_code"] == "timeout", late
                (task_id,) = {e.data["task_id"] for e in agent.events if e.kind == "status"}
                with trio.fail_after(5):
                    while server.tasks.store.get(task_id, time.time()).status.value != "cancelled":
                        await trio.sleep(0.01)
                assert server.tasks.running == 0
            nursery.cancel_scope.cancel()


@by_revision
async def test_an_agent_gone_cancels_its_task(setting: str, revision: str) -> None:
    server = _server()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            bridge = TrioBridge(BridgeHost(ping_interval=None), shutdown_grace=1.0)
            agent_side, client_side = trio.testing.memory_stream_pair()
            await nursery.start(bridge.run)
            nursery.start_soon(serve_agent_stream, bridge, agent_side, agent_side)
            async with open_a2e_streams(client_side, client_side) as agent:
                await _register(agent, nursery, server, setting, revision)
                async with trio.open_nursery() as calls:
                    calls.start_soon(
                        partial(
                            agent.call_tool,
                            "jobs__long_job",
                            {"seconds": 600, "steps": 1},
                            streaming=True,
                        )
                    )
                    while not [e for e in agent.events if e.kind == "status"]:
                        await trio.sleep(0.01)
                    calls.cancel_scope.cancel()
                (task_id,) = {e.data["task_id"] for e in agent.events if e.kind == "status"}
            await client_side.aclose()
            # The agent's stream is closed: the bridge cancels the task it ran for it.
            while server.tasks.store.get(task_id, time.time()).status.value != "cancelled":
                await trio.sleep(0.01)
            assert server.tasks.running == 0
            nursery.cancel_scope.cancel()
