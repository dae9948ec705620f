"""Opening the stores a URL names (:func:`open_stores`): apart from :mod:`._stores`,
which the server and every store module import, so that those never import the Redis
client (whose backend types import the server: a circle)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import attrs

from .._util import unwrap_single_exception
from ._redis import RedisClient, RedisEventBus, RedisReplayCache
from ._stores import Stores, default_replica_id

__all__ = ["open_stores"]


@contextlib.asynccontextmanager
async def open_stores(
    url: str,
    backend: Any,
    *,
    replica_id: str | None = None,
    namespace: str = "sansio-mcp",
) -> AsyncIterator[Stores]:
    """The stores named by ``url`` (``memory`` or ``redis://HOST:PORT/DB``), open for
    the block; ``backend`` is the runtime :class:`Backend` (its clock, its TCP
    streams, its tasks).  A malformed URL raises ValueError saying what is accepted;
    a Redis that does not answer ``PING`` at start raises :class:`StoreUnavailable`.
    The Redis client's options ride in the URL's query (``connect_timeout``,
    ``command_timeout``, ``max_connections``: see docs/deployment.md)."""
    if url == "memory":
        yield attrs.evolve(Stores.memory(backend.clock, replica_id=replica_id), namespace=namespace)
        return
    if not url.startswith("redis://"):
        raise ValueError(f"unsupported store {url!r}: expected 'memory' or 'redis://HOST:PORT/DB'")
    client = RedisClient(url, backend)
    try:
        # A store that cannot be reached at start is a configuration error, said at once.
        await client.execute("PING")
        events = RedisEventBus(client, namespace)
        # The block's own error leaves as itself, not in a group of one.
        with unwrap_single_exception():
            async with backend.open_task_group() as group:
                group.start_soon(events.run)
                try:
                    yield Stores(
                        url=client.url,
                        events=events,
                        replay=RedisReplayCache(client, namespace),
                        replica_id=replica_id or default_replica_id(),
                        namespace=namespace,
                        redis=client,
                    )
                finally:
                    group.cancel()
    finally:
        await client.aclose()
