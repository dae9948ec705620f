"""Task records shared by replicas (issue 33): the interface, in memory and in Redis.

A :class:`StoredTask` is a :class:`~sansio_mcp._tasks.TaskRecord` plus what
replicas need to share it: a ``version`` (every :meth:`SharedTaskStore.save`
is a compare-and-set on it) and the owner lease (``replica``, the replica
running the task, renews ``lease_until`` while it runs; a reader that finds an
open task whose lease ran out knows its replica died).  Records are kept as
JSON text, each until its own retention is over (its ``ttlMs`` from creation,
else ``max_retention``).

The single-process default is not this: a :class:`~sansio_mcp.runtime.TaskRunner`
without a shared store keeps its records in a :class:`~sansio_mcp._tasks.TaskTable`.
:func:`shared_task_store` picks the implementation from a
:class:`~sansio_mcp.runtime.Stores` bundle.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import attrs

from .._errors import LocalProtocolError
from .._tasks import TaskRecord
from ._store_base import EventBus, RedisCommands, StoreUnavailable, expiry_ms, guarded_set

__all__ = [
    "DEFAULT_TASK_LEASE",
    "DEFAULT_MAX_RETENTION",
    "MemorySharedTaskStore",
    "RedisSharedTaskStore",
    "SharedTaskStore",
    "StoredTask",
    "TaskConflict",
    "TaskStores",
    "shared_task_store",
]

#: Seconds an owner lease lasts unless renewed (renewed every third of it).
DEFAULT_TASK_LEASE = 5.0
#: Seconds a record without a ``ttlMs`` is kept in a shared store (one day).
DEFAULT_MAX_RETENTION = 86_400.0


class TaskStores(Protocol):
    """What tasks need of a :class:`~sansio_mcp.runtime.Stores` bundle (a bundle is
    one; a Protocol, so that the runner, which the server imports, does not import
    the store implementations)."""

    @property
    def events(self) -> EventBus: ...

    @property
    def redis(self) -> RedisCommands | None: ...

    @property
    def replica_id(self) -> str: ...

    def key(self, *parts: str) -> str: ...


class TaskConflict(Exception):
    """A save lost the race: the stored version is not the one it started from
    (another replica wrote since), or the record is gone.  Reload and decide again."""


@attrs.define
class StoredTask:
    """One task as replicas share it."""

    record: TaskRecord
    #: Bumped by every save; a save names the version it read.
    version: int = 0
    #: The replica running the task (its :attr:`Stores.replica_id`).
    replica: str = ""
    #: Wall-clock seconds until which that replica answers for it.
    lease_until: float = 0.0

    def lease_over(self, now: float) -> bool:
        """Whether the task is open but its replica stopped renewing the lease."""
        return not self.record.terminal and now > self.lease_until

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.version,
                "replica": self.replica,
                "lease_until": self.lease_until,
                "record": self.record.to_dict(),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> StoredTask:
        """ValueError when ``text`` is not what :meth:`to_json` wrote."""
        try:
            data = json.loads(text)
            return cls(
                TaskRecord.from_dict(data["record"]),
                int(data["version"]),
                str(data["replica"]),
                float(data["lease_until"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a stored task: {exc}") from None


def _retention(record: TaskRecord, now: float, max_retention: float) -> float:
    """Seconds from ``now`` the record is still to be kept (at least a millisecond)."""
    expiry = record.expires_at()
    until = now + max_retention if expiry is None else min(expiry, now + max_retention)
    return max(until - now, 0.001)


class SharedTaskStore(Protocol):
    """Task records every replica sees.  Each call may raise :class:`StoreUnavailable`."""

    #: Names the store in errors (``memory``, ``redis://HOST:PORT/DB``).
    url: str

    async def create(self, stored: StoredTask, now: float) -> None:
        """Store a new task if its id is free (LocalProtocolError if taken)."""
        ...

    async def load(self, task_id: str, now: float, owner: str | None = None) -> StoredTask | None:
        """The task, or None if unknown, expired or not ``owner``'s (None: anyone's)."""
        ...

    async def save(self, stored: StoredTask, now: float) -> StoredTask:
        """Write ``stored`` if the stored version is still ``stored.version``; the
        written copy (its version one up).  :class:`TaskConflict` otherwise."""
        ...

    async def owned(self, owner: str, now: float) -> list[StoredTask]:
        """The live tasks of ``owner``, oldest first."""
        ...

    async def reserve(self, owner: str, slot: str, cap: int, now: float, until: float) -> int:
        """Take a place for ``slot`` among ``owner``'s live tasks on every replica, held
        until ``until`` (renewed by :meth:`renew`), if fewer than ``cap`` are held then,
        atomically: how many were held, or ``-1 - held`` (nothing taken) at the cap."""
        ...

    async def renew(self, owner: str, slot: str, now: float, until: float) -> None:
        """Hold ``slot``'s place until ``until`` (a place that lapsed is not taken again)."""
        ...

    async def release(self, owner: str, slot: str) -> None:
        """Give ``slot``'s place up (its task ended, or the call became no task)."""
        ...


class MemorySharedTaskStore:
    """A :class:`SharedTaskStore` in this process's memory (replicas in one process
    share it; tests use it beside the Redis one)."""

    def __init__(self, *, max_retention: float = DEFAULT_MAX_RETENTION) -> None:
        self.url = "memory"
        self.max_retention = max_retention
        #: task id -> (JSON text, when it is forgotten).
        self._items: dict[str, tuple[str, float]] = {}
        #: owner -> slot -> until when its place among the owner's live tasks is held.
        self._places: dict[str, dict[str, float]] = {}

    def _get(self, task_id: str, now: float) -> str | None:
        item = self._items.get(task_id)
        if item is None or item[1] <= now:
            self._items.pop(task_id, None)
            return None
        return item[0]

    def _put(self, stored: StoredTask, now: float) -> None:
        until = now + _retention(stored.record, now, self.max_retention)
        self._items[stored.record.task_id] = (stored.to_json(), until)

    async def create(self, stored: StoredTask, now: float) -> None:
        if self._get(stored.record.task_id, now) is not None:
            raise LocalProtocolError(f"task {stored.record.task_id!r} exists already")
        self._put(stored, now)

    async def load(self, task_id: str, now: float, owner: str | None = None) -> StoredTask | None:
        text = self._get(task_id, now)
        found = None if text is None else StoredTask.from_json(text)
        if found is None or (owner is not None and found.record.owner != owner):
            return None
        return found

    async def save(self, stored: StoredTask, now: float) -> StoredTask:
        current = await self.load(stored.record.task_id, now)
        if current is None or current.version != stored.version:
            raise TaskConflict(f"task {stored.record.task_id}: version {stored.version} is stale")
        written = attrs.evolve(stored, version=stored.version + 1)
        self._put(written, now)
        return StoredTask.from_json(written.to_json())

    async def owned(self, owner: str, now: float) -> list[StoredTask]:
        found = [await self.load(task_id, now, owner) for task_id in list(self._items)]
        mine = [s for s in found if s is not None]
        return sorted(mine, key=lambda s: (s.record.created_at, s.record.task_id))

    async def reserve(self, owner: str, slot: str, cap: int, now: float, until: float) -> int:
        places = self._places.setdefault(owner, {})
        for gone in [s for s, held in places.items() if held <= now]:
            del places[gone]
        if len(places) >= cap:
            return -1 - len(places)
        places[slot] = until
        return len(places) - 1

    async def renew(self, owner: str, slot: str, now: float, until: float) -> None:
        places = self._places.get(owner, {})
        if slot in places:
            places[slot] = until

    async def release(self, owner: str, slot: str) -> None:
        places = self._places.get(owner, {})
        places.pop(slot, None)
        if not places:
            self._places.pop(owner, None)


#: KEYS[1] the record; ARGV: the version read, the new JSON, its TTL in ms.
#: Version check, write and TTL in one step, so two replicas cannot both win.
_CAS_SCRIPT = guarded_set("current['version'] ~= tonumber(ARGV[1])", missing="return -1")


#: The owner's places (KEYS[1]) expire a minute after the latest is held until
#: (clocks of replicas and Redis may differ a little; a lapsed place is removed anyway).
_PLACES_EXPIRE = """
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(last[2])) + 60000) end
"""
#: KEYS[1] the owner's places (a sorted set: slot -> held until, in ms); ARGV: now,
#: the cap, until, the slot.  Lapsed places go, then one is taken if the cap allows,
#: in one step, so that replicas cannot pass the cap together.
_RESERVE_SCRIPT = (
    """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[2]) then return -1 - held end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
"""
    + _PLACES_EXPIRE
    + "return held\n"
)
#: KEYS[1] the owner's places; ARGV: until, the slot (held longer if still there).
_RENEW_SCRIPT = "redis.call('ZADD', KEYS[1], 'XX', ARGV[1], ARGV[2])\n" + _PLACES_EXPIRE


class RedisSharedTaskStore:
    """A :class:`SharedTaskStore` in Redis: each record a JSON string under
    ``key("task", task_id)`` that expires with the task (``PX``), created with
    ``SET NX``, saved by a Lua compare-and-set (one round trip, atomic, unlike a
    WATCH/MULTI retry loop that needs a connection of its own); each owner's
    tasks indexed in a sorted set ``key("task-owner", owner)`` by creation time; the
    places of each owner's live tasks (the per-owner cap across replicas) in a sorted
    set ``key("task-places", owner)``, each held until a lease time (ms)."""

    def __init__(
        self,
        stores: TaskStores,
        *,
        max_retention: float = DEFAULT_MAX_RETENTION,
    ) -> None:
        if stores.redis is None:
            raise ValueError("a Redis task store needs a Redis Stores bundle")
        self._redis = stores.redis
        self._key = stores.key
        self.url = stores.redis.url
        self.max_retention = max_retention

    async def create(self, stored: StoredTask, now: float) -> None:
        record = stored.record
        ttl = expiry_ms(_retention(record, now, self.max_retention))
        index = self._key("task-owner", record.owner)
        replies = await self._redis.pipeline(
            [
                ("SET", self._key("task", record.task_id), stored.to_json(), "NX", "PX", ttl),
                ("ZADD", index, record.created_at, record.task_id),
                ("PEXPIRE", index, expiry_ms(self.max_retention)),
            ]
        )
        if replies[0] is None:
            raise LocalProtocolError(f"task {record.task_id!r} exists already")

    async def load(self, task_id: str, now: float, owner: str | None = None) -> StoredTask | None:
        text = await self._redis.execute("GET", self._key("task", task_id))
        if text is None:
            return None
        found = self._decode(text)
        if owner is not None and found.record.owner != owner:
            return None
        return found

    def _decode(self, text: Any) -> StoredTask:
        try:
            return StoredTask.from_json(text)
        except ValueError as exc:
            raise StoreUnavailable(self.url, f"a task record is malformed: {exc}") from None

    async def save(self, stored: StoredTask, now: float) -> StoredTask:
        written = attrs.evolve(stored, version=stored.version + 1)
        ttl = expiry_ms(_retention(stored.record, now, self.max_retention))
        key = self._key("task", stored.record.task_id)
        done = await self._redis.execute(
            "EVAL", _CAS_SCRIPT, 1, key, stored.version, written.to_json(), ttl
        )
        if done != 1:
            raise TaskConflict(f"task {stored.record.task_id}: version {stored.version} is stale")
        return StoredTask.from_json(written.to_json())

    async def reserve(self, owner: str, slot: str, cap: int, now: float, until: float) -> int:
        key = self._key("task-places", owner)
        reply = await self._redis.execute(
            "EVAL", _RESERVE_SCRIPT, 1, key, int(now * 1000), cap, int(until * 1000), slot
        )
        return int(reply)

    async def renew(self, owner: str, slot: str, now: float, until: float) -> None:
        key = self._key("task-places", owner)
        await self._redis.execute("EVAL", _RENEW_SCRIPT, 1, key, int(until * 1000), slot)

    async def release(self, owner: str, slot: str) -> None:
        await self._redis.execute("ZREM", self._key("task-places", owner), slot)

    async def owned(self, owner: str, now: float) -> list[StoredTask]:
        index = self._key("task-owner", owner)
        ids = await self._redis.execute("ZRANGE", index, 0, -1)
        if not ids:
            return []
        texts = await self._redis.execute("MGET", *(self._key("task", i.decode()) for i in ids))
        gone = [i for i, text in zip(ids, texts, strict=True) if text is None]
        if gone:
            await self._redis.execute("ZREM", index, *gone)
        found = [self._decode(text) for text in texts if text is not None]
        mine = [s for s in found if s.record.owner == owner]
        return sorted(mine, key=lambda s: (s.record.created_at, s.record.task_id))


def shared_task_store(
    stores: TaskStores | None, *, max_retention: float = DEFAULT_MAX_RETENTION
) -> SharedTaskStore | None:
    """The task store replicas share through ``stores``: Redis when the bundle is
    Redis, else None (one process: the runner's own :class:`TaskTable`)."""
    if stores is None or stores.redis is None:
        return None
    return RedisSharedTaskStore(stores, max_retention=max_retention)
