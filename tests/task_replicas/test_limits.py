"""``max_live_per_owner`` holds for the deployment, not per replica: with a shared task
store, one principal's live tasks are counted in the store, whichever replica runs
them; a task that ends frees its place on every replica.  Two replicas over Streamable
HTTP, both backends, the in-memory shared store and Redis."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import pytest

from sansio_mcp._tasks import TaskLimits
from sansio_mcp.auth import ResourceServer, StaticTokenVerifier
from sansio_mcp.runtime import Context, Server, Stores, open_stores
from sansio_mcp.runtime._task_store import MemorySharedTaskStore, SharedTaskStore
from sansio_mcp.runtime._tasks import TaskRunner
from sansio_mcp_apps.example_server import add_task_tools
from tests.auth.test_http import Backend
from tests.task_replicas.replicas import Caller

KINDS = ["memory", "redis"]
LIMITS = TaskLimits(max_live_per_owner=2)
LONG_JOB = {"name": "long_job", "arguments": {"seconds": 60, "steps": 1}}


def limited(stores: Stores, shared: SharedTaskStore | None) -> Server:
    """A replica with the example's task tools and ``quick`` (task-capable, never a
    task), two live tasks per principal at most, protected (each token a principal)."""
    server = Server("replica", "1", stores=stores, task_lease=1.0, task_limits=LIMITS)
    if shared is not None:
        server.tasks = TaskRunner(stores=stores, shared=shared, lease=1.0, limits=LIMITS)
        server.tasks.hub = server.hub
    verifier = StaticTokenVerifier({"alice": {"mcp"}, "bob": {"mcp"}})
    server.auth = ResourceServer("", ["http://as.example"], verifier)
    add_task_tools(server, max_seconds=60)

    @server.tool(task="optional")
    async def quick() -> str:
        """Done without waiting: no task is made."""
        return "quick"

    @server.tool(task="optional")
    async def undecided(ctx: Context) -> str:
        """Waits a minute before it would know whether it is a task."""
        with ctx.defer_task():
            await ctx.sleep(60)
        return "decided"

    return server


@asynccontextmanager
async def two_ports(kind: str, backend: Backend, redis_url: str | None) -> AsyncIterator[list[int]]:
    async with AsyncExitStack() as stack:
        if kind == "memory":
            stores = Stores.memory(time.time, replica_id="A")
            other = Stores(stores.url, stores.events, stores.replay, replica_id="B")
            shared = MemorySharedTaskStore()
            servers = [limited(stores, shared), limited(other, shared)]
        else:
            assert redis_url is not None
            namespace = f"limits{time.monotonic_ns()}"
            servers = []
            for name in "AB":
                stores = await stack.enter_async_context(
                    open_stores(redis_url, backend.backend, replica_id=name, namespace=namespace)
                )
                servers.append(limited(stores, None))
        yield [await stack.enter_async_context(backend.serve_http(s)) for s in servers]


@pytest.mark.parametrize("kind", KINDS)
def test_a_principals_task_cap_holds_across_replicas(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    redis_url = request.getfixturevalue("redis_url") if kind == "redis" else None

    async def main() -> None:
        async with two_ports(kind, backend, redis_url) as (port_a, port_b):
            a, b = Caller(backend, port_a, "alice"), Caller(backend, port_b, "alice")
            # Calls that never become tasks give their places back at once.
            for caller in (a, b, a):
                done = await caller.result("tools/call", {"name": "quick", "arguments": {}})
                assert done["content"][0]["text"] == "quick", done
            first = (await a.result("tools/call", LONG_JOB))["taskId"]
            await b.result("tools/call", LONG_JOB)
            # Each replica runs one of alice's tasks: a third is refused on either.
            for caller in (a, b):
                refused = await caller.ask("tools/call", LONG_JOB)
                assert refused["error"]["code"] == -32603, refused
                assert refused["error"]["data"] == {"limit": "max_live_per_owner", "max": 2}
                assert "this client has 2 that have not ended" in refused["error"]["message"]
            # Another principal has places of its own.
            bob = Caller(backend, port_a, "bob")
            assert (await bob.result("tools/call", LONG_JOB))["resultType"] == "task"
            # A task that ends (cancelled through B, run by A) frees its place.
            await b.result("tasks/cancel", {"taskId": first})
            deadline = time.monotonic() + 15
            while "error" in (again := await b.ask("tools/call", LONG_JOB)):
                assert again["error"]["code"] == -32603, again
                assert time.monotonic() < deadline, "the ended task's place was not freed"
                await backend.backend.sleep(0.05)
            assert again["result"]["resultType"] == "task"

    backend.run(main)


def test_a_call_not_yet_a_task_keeps_its_place_past_the_lease(backend: Backend) -> None:
    """A call waiting inside ``defer_task`` (not a task yet, perhaps never) holds its
    place longer than one lease: it is renewed every third of the lease."""

    async def main() -> None:
        stores = Stores.memory(time.time, replica_id="A")
        shared = MemorySharedTaskStore()
        async with backend.serve_http(limited(stores, shared)) as port:
            caller = Caller(backend, port, "alice")
            async with backend.backend.open_task_group() as group:
                group.start_soon(caller.ask, "tools/call", {"name": "undecided", "arguments": {}})
                async with backend.backend.fail_after(15):
                    while not shared._places:
                        await backend.backend.sleep(0.02)
                    (places,) = shared._places.values()
                    (first,) = places.values()
                    while next(iter(places.values())) < first + 1.0:  # renewed past a lease
                        await backend.backend.sleep(0.02)
                assert len(places) == 1
                group.cancel()

    backend.run(main)


def test_a_call_given_up_before_it_became_a_task_frees_its_place_at_once(
    backend: Backend,
) -> None:
    """The client leaves while its call waits inside ``defer_task``: the place it held is
    given back then, not left in the store until its lease lapses (a retry would meet
    the cap meanwhile)."""

    async def main() -> None:
        stores = Stores.memory(time.time, replica_id="A")
        shared = MemorySharedTaskStore()
        async with backend.serve_http(limited(stores, shared)) as port:
            caller = Caller(backend, port, "alice")
            async with backend.backend.open_task_group() as group:
                group.start_soon(caller.ask, "tools/call", {"name": "undecided", "arguments": {}})
                async with backend.backend.fail_after(15):
                    while not shared._places:
                        await backend.backend.sleep(0.02)
                group.cancel()  # the client goes away
            async with backend.backend.fail_after(15):
                while shared._places.get("alice") or any(shared._places.values()):
                    await backend.backend.sleep(0.02)

    backend.run(main)
