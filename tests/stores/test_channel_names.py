"""Every bus channel a replica listens on carries the deployment's namespace exactly
once: callers name bus channels bare and the bus adds the namespace (a caller that
passed ``stores.key(...)`` made ``NS:NS:task-status``, which a deployment's other
tools and docs do not expect).  Seen in a real Redis with ``PUBSUB CHANNELS``."""

from __future__ import annotations

import time
import uuid
from typing import Any

from sansio_mcp._tasks import TaskRecord
from sansio_mcp.runtime import open_stores
from sansio_mcp.runtime._session_store import RedisHandshakeSessionStore, SessionRecord
from sansio_mcp.runtime._task_store import StoredTask, shared_task_store
from sansio_mcp_apps.a2a.runtime._bridge import TaskRef
from sansio_mcp_apps.a2a.runtime._handle_store import handle_store
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway.runtime import ReplicaLink
from sansio_mcp_apps.gateway.runtime._replicas import parked_call_owners


def test_every_bus_channel_carries_the_namespace_once(backend: Any, redis_url: str) -> None:
    namespace = f"test-{uuid.uuid4().hex}"
    found: list[str] = []
    tags: list[str] = []

    async def main() -> None:
        async with open_stores(redis_url, backend, replica_id="R1", namespace=namespace) as stores:
            assert stores.redis is not None
            build_server(stores=stores)  # hints, task status, task control
            link = ReplicaLink(stores, parked_call_owners(stores, backend.clock), backend)
            tags.append(link.tag)
            async with backend.open_task_group() as group:
                group.start_soon(link.run)
                await link.ready()
                await stores.events.settled()
                reply = await stores.redis.execute("PUBSUB", "CHANNELS", f"*{namespace}*")
                found.extend(name.decode() for name in reply)
                group.cancel()

    backend.run(main)
    assert sorted(found) == sorted(
        [
            f"{namespace}:hints",
            f"{namespace}:task-status",
            f"{namespace}:task-control:R1",
            f"{namespace}:gateway:R1",
            f"{namespace}:gateway:answers:{tags[0]}",
        ]
    )


def test_every_key_carries_the_namespace_once(backend: Any, redis_url: str) -> None:
    """Each kind of state's keys, written once each, seen with ``KEYS``."""
    namespace = f"test-{uuid.uuid4().hex}"
    found: list[str] = []

    async def main() -> None:
        async with open_stores(redis_url, backend, replica_id="R1", namespace=namespace) as stores:
            assert stores.redis is not None
            now = time.time()
            tasks = shared_task_store(stores)
            assert tasks is not None
            record = TaskRecord.new(now, ttl_ms=60_000, owner="subject:alice")
            await tasks.create(StoredTask(record, 0, "R1", now + 5), now)
            await tasks.reserve("subject:alice", "place", 10, now, now + 5)
            await RedisHandshakeSessionStore(stores).save(SessionRecord("s1", {}), 60)
            await parked_call_owners(stores, backend.clock).record("call", "R1", 60)
            handles = handle_store(stores, "tk_", 60, TaskRef, clock=backend.clock)
            await handles.mint(TaskRef("agent", "task", "context"), "subject:alice")
            await stores.replay.first_use("jti", 60)
            reply = await stores.redis.execute("KEYS", f"*{namespace}*")
            found.extend(name.decode() for name in reply)

    backend.run(main)
    assert found
    for key in found:
        assert key.startswith(f"{namespace}:"), key
        assert f"{namespace}:{namespace}" not in key, key
    kinds = {key.split(":")[1] for key in found}
    assert {"task", "task-owner", "task-places", "session", "gateway", "replay"} <= kinds
    assert any(kind.startswith("a2a-") for kind in kinds), kinds
