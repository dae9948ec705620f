"""An HTTP server's host of a request spawns no idle tasks: no flusher (its output
is routed at once), no timer until a deadline exists, and no task for the request's
handler (its connection's runs it); timed requests still time out."""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

import pytest
import trio

from sansio_mcp import RequestTimeout
from sansio_mcp_apps.example_server import build_server
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_http


class _SpawnedTasks(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: Counter[str] = Counter()

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.names[".".join(task.name.rsplit(".", 2)[-2:])] += 1


@pytest.mark.parametrize("mode", ["modern", "legacy"])
async def test_an_http_request_spawns_no_idle_host_tasks(nursery: Any, mode: str) -> None:
    port = await nursery.start(partial(serve_http, build_server()))
    spawned = _SpawnedTasks()
    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
        await client.call_tool("slow", {"seconds": 0.0, "steps": 1})  # warm: connections open
        trio.lowlevel.add_instrument(spawned)
        try:
            for _ in range(5):
                result = await client.call_tool("slow", {"seconds": 0.0, "steps": 1})
                assert not result.get("isError"), result
        finally:
            trio.lowlevel.remove_instrument(spawned)
        # The async tool runs in its connection's task; nothing waits idle beside it,
        # and the server starts no task for a request (the client its own posts).
        assert spawned.names["HostBase.run_timer"] == 0, spawned.names
        assert spawned.names["Sender.run"] == 0, spawned.names
        assert spawned.names["<locals>.finish"] == 0, spawned.names
        server_side = [n for n in spawned.names if not n.startswith("HTTPClientHost.")]
        assert server_side == [], spawned.names
        with pytest.raises(RequestTimeout):
            await client.call_tool("slow", {"seconds": 5.0, "steps": 1}, timeout=0.2)
    nursery.cancel_scope.cancel()


@pytest.mark.parametrize("first", [0.3, 30.0])
async def test_a_time_limit_holds_whichever_limit_the_timer_sleeps_to(
    nursery: Any, first: float
) -> None:
    """A call's limit later than the one the timer already sleeps to does not wake it
    (it looks again at that one); an earlier limit does.  Either way the call ends on time."""
    port = await nursery.start(partial(serve_http, build_server()))
    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode="modern") as client:
        await client.call_tool("slow", {"seconds": 0.0, "steps": 1}, timeout=first)
        start = trio.current_time()
        with trio.fail_after(5), pytest.raises(RequestTimeout):
            await client.call_tool("slow", {"seconds": 10.0, "steps": 1}, timeout=0.6)
        assert 0.5 <= trio.current_time() - start < 3.0
    nursery.cancel_scope.cancel()
