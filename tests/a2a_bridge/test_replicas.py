"""Two bridge replicas in one process, each on its own port and with its own Redis
connection, sharing one Redis (as two processes behind a load balancer would): a handle
minted on one resolves on the other, and the same A2A task keeps one handle."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import httpx
from redis_service import RedisService

from sansio_mcp.runtime import (
    ClientAPI,
    MemoryEventBus,
    MemoryReplayCache,
    Stores,
    StoreUnavailable,
    TransportBackend,
    open_stores,
)
from sansio_mcp.tasks import ANONYMOUS_OWNER
from sansio_mcp_apps.a2a.runtime import A2ABridge, TaskRef

from .conftest import config_for, serving
from .test_tasks_extension import agent_tasks

Body = Callable[[ClientAPI, ClientAPI, A2ABridge, A2ABridge], Awaitable[Any]]


def replicas(backend: TransportBackend, agent_url: str, redis_url: str, body: Body) -> Any:
    """Run ``body(client_a, client_b, bridge_a, bridge_b)``: a 2026-07-28 client of
    each replica."""
    namespace = f"test-{secrets.token_hex(4)}"
    config = config_for(agent_url)

    async def main() -> Any:
        async with (
            open_stores(redis_url, backend, namespace=namespace, replica_id="a") as stores_a,
            open_stores(redis_url, backend, namespace=namespace, replica_id="b") as stores_b,
        ):

            async def on_a(url_a: str, bridge_a: A2ABridge) -> Any:
                async def on_b(url_b: str, bridge_b: A2ABridge) -> Any:
                    async with backend.fail_after(60):
                        async with (
                            backend.connect([], url_a, None, mode="modern") as client_a,
                            backend.connect([], url_b, None, mode="modern") as client_b,
                        ):
                            return await body(client_a, client_b, bridge_a, bridge_b)

                return await serving(backend, config, on_b, stores=stores_b)

            return await serving(backend, config, on_a, stores=stores_a)

    return backend.run(main)


async def send(client: ClientAPI, text: str, **more: Any) -> dict[str, Any]:
    return await client.call_tool("a2a_send_message", {"text": text, **more})


def test_a_handle_minted_on_one_replica_resolves_on_the_other(
    backend: TransportBackend, agent_url: str, redis_url: str
) -> None:
    async def body(a: ClientAPI, b: ClientAPI, bridge_a: A2ABridge, bridge_b: A2ABridge) -> None:
        asked = await send(a, "ask: colour")
        envelope = asked["structuredContent"]
        assert envelope["status"] == "input_required", asked
        # Answered on B: B resolves A's handle, and mints the same one for the task.
        done = await send(b, "teal", taskHandle=envelope["taskHandle"])
        assert done["isError"] is False, done
        assert done["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED"
        assert done["structuredContent"]["taskHandle"] == envelope["taskHandle"]
        assert done["structuredContent"]["contextHandle"] == envelope["contextHandle"]
        assert done["content"][-1]["text"] == "colour = teal"
        # Read back on A, the conversation goes on on B.
        got = await a.call_tool("a2a_get_task", {"taskHandle": envelope["taskHandle"]})
        assert got["structuredContent"]["taskHandle"] == envelope["taskHandle"]
        assert got["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED"
        more = await send(b, "echo: still here", contextHandle=envelope["contextHandle"])
        assert more["isError"] is False, more
        assert more["structuredContent"]["contextHandle"] == envelope["contextHandle"]
        # A handle nobody minted is unknown on both.
        for client in (a, b):
            made_up = await client.call_tool("a2a_get_task", {"taskHandle": "tk_madeup"})
            assert made_up["structuredContent"]["error"] == "unknown_handle"

    replicas(backend, agent_url, redis_url, body)


def agent_task(agent_url: str, text: str) -> dict[str, Any]:
    """A task the agent starts for a message sent to it directly (no bridge has its handle)."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": secrets.token_hex(8),
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            }
        },
    }
    answer = httpx.post(agent_url, json=request, headers={"A2A-Version": "1.0"}, timeout=10)
    task: dict[str, Any] = answer.json()["result"]["task"]
    return task


def test_one_a2a_task_keeps_one_handle_on_both_replicas(
    backend: TransportBackend, agent_url: str, redis_url: str
) -> None:
    """Both replicas mint a handle for one A2A task at once (as two calls answered with
    the same task would): they agree on one, and each replica's results carry it."""

    async def body(a: ClientAPI, b: ClientAPI, bridge_a: A2ABridge, bridge_b: A2ABridge) -> None:
        task = await backend.to_thread(agent_task, agent_url, "task: shared")
        ref = TaskRef("fixture", task["id"], task["contextId"])
        got: list[str] = []

        async def mint(bridge: A2ABridge) -> None:
            got.append(await bridge.tasks.mint(ref, ANONYMOUS_OWNER))

        async with backend.open_task_group() as group:
            for _ in range(4):
                group.start_soon(mint, bridge_a)
                group.start_soon(mint, bridge_b)
        assert len(got) == 8
        (handle,) = set(got)
        read = [await client.call_tool("a2a_get_task", {"taskHandle": handle}) for client in (a, b)]
        for result in read:
            assert result["isError"] is False, result
            assert result["structuredContent"]["taskHandle"] == handle
            assert result["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED"
        assert (
            read[0]["structuredContent"]["contextHandle"]
            == read[1]["structuredContent"]["contextHandle"]
        )

    replicas(backend, agent_url, redis_url, body)


class DownRedis:
    """A Redis client whose every command finds the store gone (counted)."""

    url = "redis://127.0.0.1:1/0"

    def __init__(self) -> None:
        self.commands = 0

    async def execute(self, *args: str | bytes | int | float) -> Any:
        self.commands += 1
        raise StoreUnavailable(self.url, "connection refused")

    async def pipeline(self, commands: list[tuple[str | bytes | int | float, ...]]) -> list[Any]:
        self.commands += 1
        raise StoreUnavailable(self.url, "connection refused")


def test_a_store_gone_fails_handle_calls_only(backend: TransportBackend, agent_url: str) -> None:
    """With the shared store unreachable, a call that needs a handle is a tool error
    naming the store, before the agent is asked anything; calls that need none
    (tools/list, a2a_discover) never touch the store and work."""
    down = DownRedis()
    stores = Stores(
        url=down.url,
        events=MemoryEventBus(),
        replay=MemoryReplayCache(backend.clock),
        redis=down,
    )
    text = f"task: {secrets.token_hex(4)}"

    async def use(url: str, bridge: A2ABridge) -> None:
        async with backend.fail_after(60):
            async with backend.connect([], url, None, mode="modern") as client:
                assert len(await client.list_tools()) == 4
                card = await client.call_tool("a2a_discover", {})
                assert card["isError"] is False, card
                assert down.commands == 0
                for name, arguments in (
                    ("a2a_send_message", {"text": text}),
                    ("a2a_send_message", {"text": "echo: hi", "contextHandle": "cx_x"}),
                    ("a2a_get_task", {"taskHandle": "tk_x"}),
                    ("a2a_cancel_task", {"taskHandle": "tk_x"}),
                ):
                    failed = await client.call_tool(name, arguments)
                    assert failed["isError"] is True, failed
                    assert failed["structuredContent"]["error"] == "store_unavailable"
                    assert failed["content"][0]["text"] == (
                        f"the store {down.url} is unavailable: connection refused"
                    )
        assert await backend.to_thread(agent_tasks, agent_url, text) == []

    backend.run(partial(serving, backend, config_for(agent_url), use, stores=stores))


def test_redis_down_then_back(
    backend: TransportBackend, agent_url: str, redis_service: RedisService
) -> None:
    """A real Redis stopped: calls needing no handle go on, a call that would mint one
    fails at once naming the store (the agent not asked), and all works again once
    redis-server is back on the same port, with no restart of the bridge."""
    url = redis_service.url
    lost = f"task: {secrets.token_hex(4)}"

    async def main() -> None:
        async with open_stores(url, backend, namespace="down") as stores:

            async def use(bridge_url: str, bridge: A2ABridge) -> None:
                async with backend.connect([], bridge_url, None, mode="modern") as client:
                    before = await send(client, "task: before")
                    handle = before["structuredContent"]["taskHandle"]
                    redis_service.stop()
                    assert len(await client.list_tools()) == 4
                    assert (await client.call_tool("a2a_discover", {}))["isError"] is False
                    for failing in (
                        send(client, lost),
                        client.call_tool("a2a_get_task", {"taskHandle": handle}),
                    ):
                        async with backend.fail_after(5):  # at once, not after a hang
                            failed = await failing
                        assert failed["structuredContent"]["error"] == "store_unavailable"
                        assert failed["content"][0]["text"].startswith(
                            f"the store {url} is unavailable"
                        )
                    redis_service.start()
                    after = await send(client, "task: after")
                    assert after["isError"] is False, after
                    again = await client.call_tool(
                        "a2a_get_task", {"taskHandle": after["structuredContent"]["taskHandle"]}
                    )
                    assert again["isError"] is False, again
                    # What Redis held went with it (no persistence configured here).
                    gone = await client.call_tool("a2a_get_task", {"taskHandle": handle})
                    assert gone["structuredContent"]["error"] == "unknown_handle"

            async with backend.fail_after(60):
                await serving(backend, config_for(agent_url), use, stores=stores)
        assert await backend.to_thread(agent_tasks, agent_url, lost) == []

    backend.run(main)
