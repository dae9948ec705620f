"""Where the A2A bridge keeps its handles: one process's memory, or a Redis every
replica shares (so a handle minted on one replica resolves on another).

A :class:`HandleStore` behaves as :class:`~sansio_mcp_apps.a2a.HandleTable` does
(a handle lives ``ttl`` seconds after its last use, belongs to its owner, and the
same value and owner keep one live handle), asynchronously, with the store's
failures raised as :class:`StoreUnavailable`.  :func:`handle_store` picks the
implementation from the process's :class:`Stores`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import attrs

from sansio_mcp.runtime import Stores, StoreUnavailable

from .._handles import (
    DEFAULT_MAX_HANDLES,
    DEFAULT_MAX_HANDLES_PER_OWNER,
    ExpiredHandle,
    HandleTable,
    TooManyHandles,
    UnknownHandle,
    _token,
    describe_retention,
)

__all__ = [
    "MAX_HANDLE_LENGTH",
    "HandleStore",
    "MemoryHandleStore",
    "RedisHandleStore",
    "handle_store",
]

T = TypeVar("T")

#: A longer handle is no handle of this bridge's: unknown without asking the store.
MAX_HANDLE_LENGTH = 128


class HandleStore(Protocol[T]):
    """Handles (``prefix`` + random text) for values of type ``T``; see the module."""

    prefix: str
    ttl: float

    async def mint(self, value: T, owner: str) -> str:
        """``owner``'s handle of ``value``: its live one (whose TTL restarts) or a new
        one, else :class:`TooManyHandles` when the owner holds the most it may."""
        ...

    async def resolve(self, handle: str, owner: str) -> T:
        """The value of ``owner``'s live ``handle`` (its TTL restarts), else
        :class:`ExpiredHandle` or :class:`UnknownHandle` (another owner's handle is
        unknown in the same words as a made-up one)."""
        ...

    async def peek(self, value: T) -> T | None:
        """The value kept for a live handle of ``value`` (whoever's), or None; no TTL restarts."""
        ...

    async def check(self) -> None:
        """Raise :class:`StoreUnavailable` now if the store cannot be reached, so that
        a call that will need a handle fails before it asks an agent anything."""
        ...

    def describe_retention(self) -> str:
        """How long handles are kept, in words (tool descriptions and errors use it)."""
        ...


class MemoryHandleStore(Generic[T]):
    """A :class:`HandleStore` in this process: a :class:`HandleTable` dated by ``clock``."""

    def __init__(self, table: HandleTable[Any], clock: Callable[[], float]) -> None:
        self.table = table
        self.clock = clock
        self.prefix = table.prefix
        self.ttl = table.ttl

    def __len__(self) -> int:
        return len(self.table)

    async def mint(self, value: T, owner: str) -> str:
        return self.table.mint(value, self.clock(), owner)

    async def resolve(self, handle: str, owner: str) -> T:
        value: T = self.table.resolve(handle, self.clock(), owner)
        return value

    async def peek(self, value: T) -> T | None:
        found: T | None = self.table.peek(value, self.clock())
        return found

    async def check(self) -> None:
        return None

    def describe_retention(self) -> str:
        return self.table.describe_retention()


# Redis ---------------------------------------------------------------------------
#
# Keys (each under the bundle's namespace; every value sent is ASCII JSON):
#   a2a-handle:<handle>    a hash: value (JSON), owner (JSON), valueKey, knownKey; PX ttl
#   a2a-value:<digest(kind, value, owner)>   the handle of that value for that owner, PX ttl
#   a2a-known:<digest(kind, value)>          the value's JSON while any owner's handle lives
#   a2a-expired:<handle>   the owner, PX ttl + remember_expired: tells an expired handle
#                          from a made-up one for that long after it expired
#   a2a-owned:<digest(kind, owner)>  a set of the owner's handles, PX ttl from its
#                          handles' last use: at the bound, the members whose handle
#                          key is gone are dropped and the rest counted
# The scripts run atomically, so two replicas minting one value at once agree on one
# handle, and a resolve restarts every TTL of the handle together.

_MINT = """
local handle = redis.call('GET', KEYS[1])
if handle and redis.call('EXISTS', ARGV[1] .. handle) == 0 then
  handle = false
end
if not handle then
  local max = tonumber(ARGV[8])
  if redis.call('SCARD', KEYS[3]) >= max then
    for _, old in ipairs(redis.call('SMEMBERS', KEYS[3])) do
      if redis.call('EXISTS', ARGV[1] .. old) == 0 then
        redis.call('SREM', KEYS[3], old)
      end
    end
    if redis.call('SCARD', KEYS[3]) >= max then
      return {0}
    end
  end
  handle = ARGV[2]
  if redis.call('EXISTS', ARGV[1] .. handle) == 1 then
    return false
  end
end
redis.call('SADD', KEYS[3], handle)
redis.call('PEXPIRE', KEYS[3], ARGV[5])
local key = ARGV[1] .. handle
redis.call('HSET', key, 'value', ARGV[3], 'owner', ARGV[4],
           'valueKey', KEYS[1], 'knownKey', KEYS[2])
redis.call('PEXPIRE', key, ARGV[5])
redis.call('SET', KEYS[1], handle, 'PX', ARGV[5])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[5])
redis.call('SET', ARGV[6] .. handle, ARGV[4], 'PX', ARGV[7])
return {1, handle}
"""

_RESOLVE = """
local entry = redis.call('HMGET', KEYS[1], 'owner', 'value', 'valueKey', 'knownKey')
if entry[1] then
  if entry[1] ~= ARGV[1] then
    return {0}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', entry[3], ARGV[2])
  redis.call('PEXPIRE', entry[4], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return {1, entry[2]}
end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  return {2}
end
return {0}
"""

#: How many fresh handles a mint tries when the random one is taken (practically never).
_MINT_ATTEMPTS = 4


def _canonical(data: Any) -> str:
    """``data`` as JSON, ASCII only (so any text, lone surrogates too, goes to Redis)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _digest(*parts: Any) -> str:
    return hashlib.sha256(_canonical(list(parts)).encode()).hexdigest()


class RedisHandleStore(Generic[T]):
    """A :class:`HandleStore` in the Redis of ``stores``: every replica sharing it sees
    the same handles.  ``value_type`` is an attrs class of JSON fields; the fields
    that take part in equality decide which values are the same (one handle each).
    An expired handle is told from a made-up one for ``remember_expired`` seconds
    after it expired (one ``ttl`` by default).  One owner holds at most
    ``max_per_owner`` live handles (exactly: counted atomically in the mint)."""

    def __init__(
        self,
        stores: Stores,
        prefix: str,
        ttl: float,
        value_type: type[T],
        *,
        new_token: Callable[[], str] = _token,
        remember_expired: float | None = None,
        max_per_owner: int = DEFAULT_MAX_HANDLES_PER_OWNER,
    ) -> None:
        if stores.redis is None:
            raise ValueError("a RedisHandleStore needs stores with a Redis client")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.redis = stores.redis
        self.stores = stores
        self.prefix = prefix
        self.ttl = ttl
        self.value_type = value_type
        self._new_token = new_token
        self.remember_expired = ttl if remember_expired is None else remember_expired
        if self.remember_expired < 0:
            raise ValueError("remember_expired must not be negative")
        self._fields = attrs.fields(value_type)  # type: ignore[arg-type]
        if max_per_owner < 1:
            raise ValueError("max_per_owner must be at least 1")
        self.max_per_owner = max_per_owner

    def _owned_key(self, owner: str) -> str:
        return self.stores.key("a2a-owned", _digest(self.prefix, owner))

    def _ms(self, seconds: float) -> int:
        return max(1, round(seconds * 1000))

    def _identity(self, value: T) -> list[Any]:
        return [getattr(value, f.name) for f in self._fields if f.eq]

    async def mint(self, value: T, owner: str) -> str:
        identity = self._identity(value)
        encoded = _canonical(attrs.asdict(value))  # type: ignore[arg-type]
        value_key = self.stores.key("a2a-value", _digest(self.prefix, identity, owner))
        known_key = self.stores.key("a2a-known", _digest(self.prefix, identity))
        for _ in range(_MINT_ATTEMPTS):
            reply = await self.redis.execute(
                "EVAL",
                _MINT,
                3,
                value_key,
                known_key,
                self._owned_key(owner),
                self.stores.key("a2a-handle", ""),
                self.prefix + self._new_token(),
                encoded,
                _canonical(owner),
                self._ms(self.ttl),
                self.stores.key("a2a-expired", ""),
                self._ms(self.ttl + self.remember_expired),
                self.max_per_owner,
            )
            if reply is None:
                continue
            if isinstance(reply, list) and reply == [0]:
                raise TooManyHandles(
                    "maxHandlesPerOwner", self.max_per_owner, "this client already holds"
                )
            if isinstance(reply, list) and len(reply) == 2 and reply[0] == 1:
                return self._text(reply[1])
            raise StoreUnavailable(self.redis.url, f"unexpected reply to a handle mint: {reply!r}")
        raise StoreUnavailable(
            self.redis.url, f"no free handle after {_MINT_ATTEMPTS} random tries"
        )

    async def resolve(self, handle: str, owner: str) -> T:
        if (
            not handle.startswith(self.prefix)
            or len(handle) > MAX_HANDLE_LENGTH
            or not handle.isascii()
        ):
            raise UnknownHandle(handle, f"unknown handle {handle!r}")
        reply = await self.redis.execute(
            "EVAL",
            _RESOLVE,
            3,
            self.stores.key("a2a-handle", handle),
            self.stores.key("a2a-expired", handle),
            self._owned_key(owner),
            _canonical(owner),
            self._ms(self.ttl),
            self._ms(self.ttl + self.remember_expired),
        )
        status = reply[0] if isinstance(reply, list) and reply else None
        if status == 1 and len(reply) == 2:
            return self._decode(handle, reply[1])
        if status == 2:
            raise ExpiredHandle(
                handle, f"the handle {handle!r} has expired ({self.describe_retention()})"
            )
        if status == 0:
            raise UnknownHandle(handle, f"unknown handle {handle!r}")
        raise StoreUnavailable(self.redis.url, f"unexpected reply to a handle lookup: {reply!r}")

    async def peek(self, value: T) -> T | None:
        known_key = self.stores.key("a2a-known", _digest(self.prefix, self._identity(value)))
        found = await self.redis.execute("GET", known_key)
        return None if found is None else self._decode(known_key, found)

    async def check(self) -> None:
        await self.redis.execute("PING")

    def describe_retention(self) -> str:
        return describe_retention(self.ttl, "in the shared store")

    def _text(self, reply: Any) -> str:
        if isinstance(reply, bytes):
            return reply.decode()
        if isinstance(reply, str):
            return reply
        raise StoreUnavailable(self.redis.url, f"unexpected reply: {reply!r}")

    def _decode(self, where: str, raw: Any) -> T:
        """The value a store entry holds; one this bridge did not write is the store's fault."""
        try:
            return self.value_type(**json.loads(self._text(raw)))
        except (ValueError, TypeError):
            raise StoreUnavailable(
                self.redis.url, f"{where!r} holds no {self.value_type.__name__} this bridge wrote"
            ) from None


def handle_store(
    stores: Stores,
    prefix: str,
    ttl: float,
    value_type: type[T],
    *,
    clock: Callable[[], float],
    new_token: Callable[[], str] = _token,
    max_per_owner: int = DEFAULT_MAX_HANDLES_PER_OWNER,
    max_total: int = DEFAULT_MAX_HANDLES,
) -> HandleStore[T]:
    """The store of ``value_type``'s handles that ``stores`` calls for: in this
    process (dated by ``clock``) when it has no Redis, else in its Redis.  Live
    handles are bounded per owner (``max_per_owner``) and, in memory, in all
    (``max_total``)."""
    if stores.redis is None:
        table: HandleTable[Any] = HandleTable(
            prefix, ttl, new_token=new_token, max_per_owner=max_per_owner, max_total=max_total
        )
        return MemoryHandleStore(table, clock)
    return RedisHandleStore(
        stores, prefix, ttl, value_type, new_token=new_token, max_per_owner=max_per_owner
    )
