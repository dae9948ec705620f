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

import os
import platform
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from ._store_base import StoreUnavailable, namespaced

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
]


class RedisCommands(Protocol):
    """What the Redis stores need of a client: one command, or several in one round trip.

    Replies come back decoded from RESP: bulk strings as ``bytes``, integers as
    ``int``, arrays as ``list``, nil as None; an error reply raises
    :class:`StoreUnavailable` naming the store and Redis's own message.  A lost
    connection raises :class:`StoreUnavailable` at once; the next command connects
    again (Redis coming back needs no restart here).
    """

    url: str

    async def execute(self, *args: str | bytes | int | float) -> Any: ...

    async def pipeline(
        self, commands: list[tuple[str | bytes | int | float, ...]]
    ) -> list[Any]: ...


class EventSubscription(Protocol):
    def close(self) -> None: ...


class EventBus(Protocol):
    """Messages (JSON objects) published on a named channel reach every replica
    that subscribed to it, this one included; at most once, and only while
    subscribed (no history: a late listener misses what came before)."""

    async def publish(self, channel: str, message: dict[str, Any]) -> None: ...

    def subscribe(
        self, channel: str, deliver: Callable[[dict[str, Any]], None]
    ) -> EventSubscription:
        """Call ``deliver`` (from the bus's own task; it must not block) with each
        message on ``channel`` until the subscription is closed."""
        ...


class ReplayCache(Protocol):
    """One-time values (DPoP ``jti``s): the first offer of a key wins for ``ttl`` seconds."""

    async def first_use(self, key: str, ttl: float) -> bool:
        """True if no replica offered ``key`` within the last ``ttl`` seconds (the key
        is remembered from now on); False if one did."""
        ...


@attrs.define(eq=False)
class _MemorySubscription:
    bus: MemoryEventBus
    channel: str
    deliver: Callable[[dict[str, Any]], None]

    def close(self) -> None:
        listeners = self.bus._listeners.get(self.channel)
        if listeners is not None and self in listeners:
            listeners.remove(self)
            if not listeners:
                del self.bus._listeners[self.channel]


class MemoryEventBus:
    """An :class:`EventBus` for one process: ``publish`` calls the listeners at once."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[_MemorySubscription]] = {}

    async def publish(self, channel: str, message: dict[str, Any]) -> None:
        for subscription in list(self._listeners.get(channel, ())):
            subscription.deliver(message)

    def subscribe(
        self, channel: str, deliver: Callable[[dict[str, Any]], None]
    ) -> EventSubscription:
        subscription = _MemorySubscription(self, channel, deliver)
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
