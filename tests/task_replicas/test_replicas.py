"""Two replicas share tasks (issue 33): a task made on A is answered on B
(``tasks/get``, ``tasks/update``, ``tasks/cancel``), a task parked on input and
answered through B completes on A, a listener on B hears A's task; a task whose
replica stopped renewing its lease is reported failed, naming that replica.  Over
Streamable HTTP on two ports, on both backends, through the in-memory shared store
(one process) and through Redis."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
from redis_service import RedisService

from sansio_mcp._tasks import TaskRecord
from sansio_mcp.runtime import ClientHandlers, Server, Stores, StoreUnavailable, open_stores
from sansio_mcp.runtime._task_store import MemorySharedTaskStore, StoredTask
from tests.auth.test_http import Backend
from tests.auth.test_task_owners import Caller as SessionCaller
from tests.task_replicas.replicas import APPROVE, Caller, replica

KINDS = ["memory", "redis"]


@asynccontextmanager
async def two_replicas(
    kind: str, backend: Backend, redis_url: str | None
) -> AsyncIterator[tuple[Server, Server]]:
    """Replicas A and B sharing one store: in one process's memory, or in Redis (each
    with its own connection, as separate processes would)."""
    if kind == "memory":
        stores = Stores.memory(time.time, replica_id="A")
        shared = MemorySharedTaskStore()
        # One bus, one store: the replicas differ by their id (their control channel).
        other = Stores(stores.url, stores.events, stores.replay, replica_id="B")
        yield replica(stores, shared=shared), replica(other, shared=shared)
        return
    assert redis_url is not None
    namespace = f"t{time.monotonic_ns()}"
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(
            open_stores(redis_url, backend.backend, replica_id="A", namespace=namespace)
        )
        b = await stack.enter_async_context(
            open_stores(redis_url, backend.backend, replica_id="B", namespace=namespace)
        )
        yield replica(a), replica(b)


@asynccontextmanager
async def served(
    kind: str, backend: Backend, redis_url: str | None
) -> AsyncIterator[tuple[Server, Server, Caller, Caller]]:
    """:func:`two_replicas` served over Streamable HTTP, and a caller of each."""
    async with two_replicas(kind, backend, redis_url) as (server_a, server_b):
        async with backend.serve_http(server_a) as port_a, backend.serve_http(server_b) as port_b:
            yield server_a, server_b, Caller(backend, port_a), Caller(backend, port_b)


def redis_url_for(kind: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("redis_url") if kind == "redis" else None


@pytest.mark.parametrize("kind", KINDS)
def test_a_task_made_on_a_is_answered_and_completed_through_b(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    redis_url = redis_url_for(kind, request)

    async def main() -> None:
        async with served(kind, backend, redis_url) as (server_a, server_b, a, b):
            created = await a.result(
                "tools/call", {"name": "approve_job", "arguments": {"job": "x"}}
            )
            assert created["resultType"] == "task"
            task_id = created["taskId"]
            parked = await b.poll(task_id, lambda t: t["status"] == "input_required")
            [key] = parked["inputRequests"]
            assert server_a.tasks.running == 1 and server_b.tasks.running == 0
            # A malformed answer is refused on B, as on A.
            bad = await b.ask("tasks/update", {"taskId": task_id, "inputResponses": {key: 1}})
            assert bad["error"]["code"] == -32602
            ack = await b.result(
                "tasks/update", {"taskId": task_id, "inputResponses": {key: APPROVE}}
            )
            assert {k for k in ack if k != "_meta"} == {"resultType"}
            done = await b.poll(task_id, lambda t: t["status"] == "completed")
            assert done["result"]["content"][0]["text"] == "x: done"
            assert (await a.result("tasks/get", {"taskId": task_id}))["status"] == "completed"
            assert server_a.tasks.running == 0

    backend.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_a_task_running_on_a_is_cancelled_through_b(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    redis_url = redis_url_for(kind, request)

    async def main() -> None:
        async with served(kind, backend, redis_url) as (server_a, _server_b, a, b):
            call = {"name": "long_job", "arguments": {"seconds": 30, "steps": 1}}
            task_id = (await a.result("tools/call", call))["taskId"]
            assert (await b.result("tasks/get", {"taskId": task_id}))["status"] == "working"
            await b.result("tasks/cancel", {"taskId": task_id})
            # The answer holds at once, on either replica, and A stops the tool.
            assert (await b.result("tasks/get", {"taskId": task_id}))["status"] == "cancelled"
            await a.poll(task_id, lambda t: t["status"] == "cancelled")
            deadline = time.monotonic() + 10
            while server_a.tasks.running:
                assert time.monotonic() < deadline, "the tool still runs on A"
                await backend.backend.sleep(0.05)
            # Cancelled it stays: a late write of A's cannot undo it.
            await backend.backend.sleep(0)
            assert (await b.result("tasks/get", {"taskId": task_id}))["status"] == "cancelled"
            # Another principal's id: unknown on B, as on A.
            missing = await b.ask("tasks/get", {"taskId": "00000000-0000-4000-8000-000000000000"})
            assert missing["error"]["code"] == -32602

    backend.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_a_task_whose_replica_stopped_renewing_its_lease_is_failed_by_the_reader(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    """A record left by a replica that no longer renews it (as a killed one leaves it):
    the first reader fails it, naming that replica; a second reader reads that."""
    redis_url = redis_url_for(kind, request)

    async def main() -> None:
        async with two_replicas(kind, backend, redis_url) as (server_a, server_b):
            store = server_b.tasks.shared
            assert store is not None
            now = time.time()
            record = TaskRecord.new(now, ttl_ms=60_000, owner="anonymous")
            record.ask({"approve": {"method": "elicitation/create", "params": {}}}, now)
            await store.create(StoredTask(record, 0, "ghost-replica", now + 0.3), now)
            async with (
                backend.serve_http(server_a) as port_a,
                backend.serve_http(server_b) as port_b,
            ):
                a, b = Caller(backend, port_a), Caller(backend, port_b)
                task_id = record.task_id
                assert (await b.result("tasks/get", {"taskId": task_id}))[
                    "status"
                ] == "input_required"
                failed = await b.poll(task_id, lambda t: t["status"] == "failed", within=5)
                assert time.time() < now + 0.3 + 1 + 5  # lease + 1 s, and the test's slack
                assert "ghost-replica" in failed["statusMessage"]
                assert "stopped answering" in failed["statusMessage"]
                assert failed["error"]["data"]["replica"] == "ghost-replica"
                again = await a.result("tasks/get", {"taskId": task_id})
                assert again == failed

    backend.run(main)


class DownStore(MemorySharedTaskStore):
    """The in-memory shared store, unavailable while ``down`` (as Redis stopped)."""

    def __init__(self) -> None:
        super().__init__()
        self.url = "redis://127.0.0.1:1/0"
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable(self.url, "connection refused")

    async def create(self, stored: StoredTask, now: float) -> None:
        self._check()
        await super().create(stored, now)

    async def load(self, task_id: str, now: float, owner: str | None = None) -> StoredTask | None:
        self._check()
        return await super().load(task_id, now, owner)


def test_with_the_store_down_a_task_is_refused_at_once_and_plain_calls_work(
    backend: Backend,
) -> None:
    store = DownStore()
    server = replica(Stores.memory(time.time, replica_id="A"), shared=store)

    @server.tool()
    def echo(message: str) -> str:
        return message

    async def main() -> None:
        async with backend.serve_http(server) as port:
            caller = Caller(backend, port)
            store.down = True
            started = time.monotonic()
            call = {"name": "approve_job", "arguments": {"job": "x"}}
            refused = await caller.ask("tools/call", call)
            assert time.monotonic() - started < 5
            assert refused["error"]["code"] == -32603
            assert "redis://127.0.0.1:1/0" in refused["error"]["message"]
            assert refused["error"]["data"] == {"store": "redis://127.0.0.1:1/0"}
            assert server.tasks.running == 0  # the tool was stopped: nothing runs later
            plain = await caller.result(
                "tools/call", {"name": "echo", "arguments": {"message": "hi"}}
            )
            assert plain["content"][0]["text"] == "hi"
            store.down = False
            task_id = (await caller.result("tools/call", call))["taskId"]
            assert await caller.poll(task_id, lambda t: t["status"] == "input_required")

    backend.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_a_listener_on_b_hears_the_status_of_a_task_running_on_a(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    redis_url = redis_url_for(kind, request)

    async def main() -> None:
        async with served(kind, backend, redis_url) as (_server_a, _server_b, a, b):
            call = {"name": "approve_job", "arguments": {"job": "y"}}
            task_id = (await a.result("tools/call", call))["taskId"]
            parked = await b.poll(task_id, lambda t: t["status"] == "input_required")
            [key] = parked["inputRequests"]
            url = b.url
            handlers = ClientHandlers(tasks=True)
            async with backend.backend.connect(
                [], url, "http", mode="modern", handlers=handlers
            ) as client:
                async with client.listen(task_ids=[task_id]) as subscription:
                    assert subscription.acknowledged_filter == {"taskIds": [task_id]}
                    answer = {"taskId": task_id, "inputResponses": {key: APPROVE}}
                    await a.result("tasks/update", answer)
                    statuses = []
                    async for method, params in subscription:
                        assert method == "notifications/tasks" and params["taskId"] == task_id
                        statuses.append(params["status"])
                        if params["status"] == "completed":
                            assert params["result"]["content"][0]["text"] == "y: done"
                            break
            assert statuses[-2:] == ["working", "completed"]

    backend.run(main)


def test_the_owner_of_a_parked_task_killed_the_other_replica_reports_it_failed(
    backend: Backend, redis_url: str, tmp_path: Path
) -> None:
    """Replica A, a process of its own, holds a task parked on ``input_required``; it is
    killed (SIGKILL); replica B reports the task ``failed``, naming A, within the lease
    plus a second, and never runs it again."""
    lease = 1.0
    namespace = f"t{time.monotonic_ns()}"
    script = Path(__file__).with_name("replica_process.py")
    argv = [
        sys.executable,
        str(script),
        backend.name,
        redis_url,
        namespace,
        "replica-A",
        str(lease),
    ]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=(tmp_path / "a.log").open("wb"))
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), (tmp_path / "a.log").read_text()
        port_a = int(line)

        async def main() -> float:
            async with open_stores(
                redis_url, backend.backend, replica_id="replica-B", namespace=namespace
            ) as stores:
                server_b = replica(stores, lease=lease)
                async with backend.serve_http(server_b) as port_b:
                    a, b = Caller(backend, port_a), Caller(backend, port_b)
                    call = {"name": "approve_job", "arguments": {"job": "x"}}
                    task_id = (await a.result("tools/call", call))["taskId"]
                    await b.poll(task_id, lambda t: t["status"] == "input_required")
                    # Alive, A renews its lease: three leases on, the task still waits.
                    alive_until = time.monotonic() + 3 * lease
                    while time.monotonic() < alive_until:
                        task = await b.result("tasks/get", {"taskId": task_id})
                        assert task["status"] == "input_required", task
                        await backend.backend.sleep(lease / 4)
                    child.kill()
                    killed = time.monotonic()
                    failed = await b.poll(
                        task_id, lambda t: t["status"] == "failed", within=lease + 10
                    )
                    took = time.monotonic() - killed
                    assert "replica-A" in failed["statusMessage"], failed
                    assert "stopped answering" in failed["statusMessage"]
                    # Lost, not moved: nothing runs it here, and it stays failed.
                    assert server_b.tasks.running == 0
                    assert (await b.result("tasks/get", {"taskId": task_id})) == failed
                    return took

        took = backend.backend.run(main)
        # The lease plus a second, and room for a loaded machine's slow polls.
        assert took < lease + 1 + 3, took
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_with_redis_down_a_task_is_refused_at_once_and_it_recovers_by_itself(
    backend: Backend, redis_service: RedisService
) -> None:
    """Redis stopped: creating a task fails at once with -32603 naming the store, a plain
    ``tools/call`` works; Redis started again on the same port: tasks work again, with
    no restart of the replica."""

    async def main() -> None:
        async with open_stores(redis_service.url, backend.backend, replica_id="A") as stores:
            server = replica(stores)

            @server.tool()
            def echo(message: str) -> str:
                return message

            async with backend.serve_http(server) as port:
                caller = Caller(backend, port)
                call = {"name": "approve_job", "arguments": {"job": "x"}}
                task_id = (await caller.result("tools/call", call))["taskId"]
                await caller.poll(task_id, lambda t: t["status"] == "input_required")
                redis_service.stop()
                started = time.monotonic()
                refused = await caller.ask("tools/call", call)
                assert time.monotonic() - started < 5  # at once, not after a timeout
                assert refused["error"]["code"] == -32603
                assert redis_service.url in refused["error"]["message"]
                assert refused["error"]["data"] == {"store": redis_service.url}
                # Reading a task needs the store too: the same clear error.
                unreadable = await caller.ask("tasks/get", {"taskId": "some-task"})
                assert unreadable["error"]["data"] == {"store": redis_service.url}
                plain = await caller.result(
                    "tools/call", {"name": "echo", "arguments": {"message": "hi"}}
                )
                assert plain["content"][0]["text"] == "hi"
                redis_service.start()
                again = (await caller.result("tools/call", call))["taskId"]
                await caller.poll(again, lambda t: t["status"] == "input_required")

    backend.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_2025_11_25_tasks_over_a_shared_store(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    """A handshake session's own tasks (``params.task``) kept in the shared store:
    ``tasks/list``, ``tasks/get``, ``tasks/result``, ``tasks/cancel`` answer as in one
    process, and only for the session that made them."""
    redis_url = redis_url_for(kind, request)

    async def main() -> None:
        async with two_replicas(kind, backend, redis_url) as (server_a, _):
            async with backend.serve_http(server_a) as port:
                url = f"http://127.0.0.1:{port}/mcp"
                mine, other = SessionCaller(backend, url, None), SessionCaller(backend, url, None)
                await mine.handshake()
                await other.handshake()
                slow = {"name": "long_job", "arguments": {"seconds": 30, "steps": 1}, "task": {}}
                quick = {"name": "long_job", "arguments": {"seconds": 0.1, "steps": 1}, "task": {}}
                slow_id = (await mine.legacy("tools/call", slow))["result"]["task"]["taskId"]
                quick_id = (await mine.legacy("tools/call", quick))["result"]["task"]["taskId"]
                listed = (await mine.legacy("tasks/list", {}))["result"]["tasks"]
                assert [t["taskId"] for t in listed] == [slow_id, quick_id]
                assert (await other.legacy("tasks/list", {}))["result"]["tasks"] == []
                theirs = await other.legacy("tasks/get", {"taskId": slow_id})
                assert theirs["error"]["code"] == -32602
                outcome = (await mine.legacy("tasks/result", {"taskId": quick_id}))["result"]
                assert outcome["content"][0]["text"] == "long job done: 1 steps in 0.1 s"
                got = (await mine.legacy("tasks/get", {"taskId": slow_id}))["result"]
                assert got["status"] == "working"
                cancelled = (await mine.legacy("tasks/cancel", {"taskId": slow_id}))["result"]
                assert cancelled["status"] == "cancelled"
                again = await mine.legacy("tasks/cancel", {"taskId": slow_id})
                assert "already cancelled" in again["error"]["message"]

    backend.run(main)
