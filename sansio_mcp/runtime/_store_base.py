"""What the stores contract (:mod:`._stores`), its Redis implementation
(:mod:`._redis`) and the stores of each kind of state both need: the error, the key
names, and the shapes of the Redis client and the event bus (here, importing
nothing, so that a store the server imports does not import the implementations)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import attrs

__all__ = [
    "EventBus",
    "EventSubscription",
    "Listener",
    "RedisCommands",
    "StoreUnavailable",
    "expiry_ms",
    "guarded_set",
    "namespaced",
]


class StoreUnavailable(Exception):
    """The shared store cannot be reached or refused a command.  ``store`` names it
    (``redis://HOST:PORT/DB``) and the message says what failed; callers turn it
    into a clear error for the request at hand and try again on the next one."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(f"the store {store} is unavailable: {message}")
        self.store = store


def namespaced(namespace: str, *parts: str) -> str:
    """A key or channel name of a deployment: ``namespace:part:part``."""
    return ":".join((namespace, *parts))


def guarded_set(stale: str, *, missing: str = "") -> str:
    """A Lua script (``EVAL``) that sets ``KEYS[1]``, a JSON record, to ``ARGV[2]``
    expiring in ``ARGV[3]`` ms unless the record there, decoded as ``current``, makes
    the Lua condition ``stale`` true: check and write in one step, so that two
    replicas cannot both win.  Returns 1 when written, 0 when not; ``missing`` is
    the Lua run when there is no record (by default it is written)."""
    return f"""
local text = redis.call('GET', KEYS[1])
if not text then
  {missing}
else
  local current = cjson.decode(text)
  if {stale} then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""


def expiry_ms(seconds: float) -> int:
    """A time to live as Redis's ``PX``/``PEXPIRE`` take it: whole milliseconds,
    rounded up (a key never goes sooner than asked), and at least one."""
    return max(1, math.ceil(seconds * 1000))


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


@attrs.define(eq=False)
class Listener:
    """A bus's subscription: in ``table[channel]`` until closed (``emptied`` runs when
    it was its channel's last)."""

    table: dict[str, list[Listener]]
    channel: str
    deliver: Callable[[dict[str, Any]], None]
    emptied: Callable[[], None] = lambda: None

    def close(self) -> None:
        listeners = self.table.get(self.channel)
        if listeners is not None and self in listeners:
            listeners.remove(self)
            if not listeners:
                del self.table[self.channel]
                self.emptied()


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

    async def settled(self) -> None:
        """Until every subscription made so far is in effect (a replica awaits it
        before it starts listening, so other replicas' messages reach it)."""
        ...
