"""Tools run as tasks behind ``MCPApp`` (the asyncio ASGI app, under uvicorn): the task
outlives its request's ASGI call, its input goes through tasks/update, and the app's
lifespan shutdown fails a task still running."""

from __future__ import annotations

import time

import trio

from examples.tasks_server import build_server
from sansio_mcp.runtime import ClientHandlers
from trio_adapters.http_client import open_http_client

from .test_asgi import BUDGET, mounted, url, uvicorn_serving


def _approve(params: dict[str, object]) -> dict[str, object]:
    return {"action": "accept", "content": {"approve": True}}


async def test_tasks_through_the_asgi_app() -> None:
    server = build_server()
    app, _ = mounted(server)
    handlers = ClientHandlers(elicitation=_approve, tasks=True)
    with uvicorn_serving(app) as port:
        with trio.fail_after(BUDGET):
            async with open_http_client(url(port), handlers=handlers, mode="modern") as client:
                done = await client.call_tool("long_job", {"seconds": 0.2, "steps": 2})
                assert done["content"][0]["text"] == "long job done: 2 steps in 0.2 s"
                approved = await client.call_tool("approve_job", {"job": "ship"})
                assert approved["content"][0]["text"] == "ship: done"
                running = await client.call_tool("long_job", {"seconds": 60, "steps": 1}, task=True)
                assert (await running.refresh())["status"] == "working"
    # The lifespan shutdown cancelled the tool: its task failed rather than staying open.
    assert server.tasks.running == 0
    record = server.tasks.store.get(running.task_id, time.time())
    assert record.status.value == "failed"
