"""Where state that outlives one request lives, so that N replicas behind a load
balancer share it.

A :class:`Stores` bundle is opened once per process from a URL (``memory`` or
``redis://HOST:PORT/DB``) with :func:`open_stores` and handed to whatever keeps
such state (the task runner, the A2A bridge's handles, the gateway's questions,
the DPoP replay check).  Each of those defines its own store interface beside its
code and picks its implementation from the bundle: the in-memory one when
``stores.redis`` is None, the Redis one otherwise.  The bundle itself carries the
two stores everyone shares: an :class:`EventBus` (messages to whichever replica
listens) and a :class:`ReplayCache` (first use of a one-time value).

Plain ``tools/list`` and ``tools/call`` never touch a store.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import attrs

from .._util import unwrap_single_exception
from ._store_base import (
    EventBus,
    EventSubscription,
    Listener,
    RedisCommands,
    StoreUnavailable,
    namespaced,
)

__all__ = [
    "EventBus",
    "EventSubscription",
    "MemoryEventBus",
    "MemoryReplayCache",
    "RedisCommands",
    "ReplayCache",
    "StoreUnavailable",
    "Stores",
    "default_replica_id",
    "open_stores",
]


class ReplayCache(Protocol):
    """One-time values (DPoP ``jti``s): the first offer of a key wins for ``ttl`` seconds."""

    async def first_use(self, key: str, ttl: float) -> bool:
        """True if no replica offered ``key`` within the last ``ttl`` seconds (the key
        is remembered from now on); False if one did."""
        ...


class MemoryEventBus:
    """An :class:`EventBus` for one process: ``publish`` calls the listeners at once."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}

    async def publish(self, channel: str, message: dict[str, Any]) -> None:
        for subscription in list(self._listeners.get(channel, ())):
            subscription.deliver(message)

    async def settled(self) -> None:
        """A memory subscription is in effect at once."""

    def subscribe(
        self, channel: str, deliver: Callable[[dict[str, Any]], None]
    ) -> EventSubscription:
        subscription = Listener(self._listeners, channel, deliver)
        self._listeners.setdefault(channel, []).append(subscription)
        return subscription


class MemoryReplayCache:
    """A :class:`ReplayCache` for one process, bounded to ``max_keys`` live keys
    (past it the oldest is forgotten first); time from ``clock``."""

    def __init__(self, clock: Callable[[], float], *, max_keys: int = 100_000) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._until: dict[str, float] = {}

    async def first_use(self, key: str, ttl: float) -> bool:
        now = self._clock()
        until = self._until.get(key)
        if until is not None and until > now:
            return False
        self._until.pop(key, None)
        if len(self._until) >= self._max_keys:
            self._sweep(now)
            while len(self._until) >= self._max_keys:
                del self._until[next(iter(self._until))]
        self._until[key] = now + ttl
        return True

    def _sweep(self, now: float) -> None:
        for gone in [k for k, until in self._until.items() if until <= now]:
            del self._until[gone]


def default_replica_id() -> str:
    """This process's name among replicas: ``HOST:PID``."""
    return f"{platform.node()}:{os.getpid()}"


@attrs.define(eq=False)
class Stores:
    """The stores of one process.

    ``url``: ``memory`` or the shared store's URL.  ``redis``: the client when the
    store is Redis (each store module picks its Redis implementation then), else
    None.  ``namespace``: the prefix of every key and channel, so that several
    deployments share one Redis.  ``replica_id``: this process's name among replicas.
    """

    url: str
    events: EventBus
    replay: ReplayCache
    replica_id: str = attrs.field(factory=default_replica_id)
    namespace: str = "sansio-mcp"
    redis: RedisCommands | None = None

    @property
    def shared(self) -> bool:
        """Whether other processes see this state (so a fixed state key is needed)."""
        return self.redis is not None

    def key(self, *parts: str) -> str:
        """A namespaced key or channel name: ``namespace:part:part``."""
        return namespaced(self.namespace, *parts)

    @classmethod
    def memory(cls, clock: Callable[[], float], *, replica_id: str | None = None) -> Stores:
        """The single-process default."""
        return cls(
            url="memory",
            events=MemoryEventBus(),
            replay=MemoryReplayCache(clock),
            replica_id=replica_id or default_replica_id(),
        )


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
    from ._redis import RedisClient, RedisEventBus, RedisReplayCache  # only a Redis store's

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
