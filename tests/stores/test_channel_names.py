"""Every bus channel a replica listens on carries the deployment's namespace exactly
once: callers name bus channels bare and the bus adds the namespace (a caller that
passed ``stores.key(...)`` made ``NS:NS:task-status``, which a deployment's other
tools and docs do not expect).  Seen in a real Redis with ``PUBSUB CHANNELS``."""

from __future__ import annotations

import uuid
from typing import Any

from sansio_mcp.runtime import open_stores
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
