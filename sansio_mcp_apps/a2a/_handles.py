"""Opaque handles for A2A task and context ids: the bridge's table, never the ids.

A handle lives for ``ttl`` seconds after its last use (``mint`` or ``resolve``
restarts the clock); time comes in as ``now``.  A handle belongs to the owner that
minted it (the bridge passes the MCP task owner key, ``task_owner(ctx)``): resolved
for another owner it is as unknown as a made-up one.  Minting the same value again
for the same owner gives the same handle, so a live conversation keeps its handles.
Live handles are bounded per owner (``max_per_owner``) and in all (``max_total``):
past either, a new handle is refused with :class:`TooManyHandles`; a live one is
still given again.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = [
    "DEFAULT_MAX_HANDLES",
    "DEFAULT_MAX_HANDLES_PER_OWNER",
    "ExpiredHandle",
    "HandleError",
    "HandleTable",
    "TooManyHandles",
    "UnknownHandle",
]

T = TypeVar("T", bound=Hashable)

#: Live handles one owner may hold in one table (``maxHandlesPerOwner``).
DEFAULT_MAX_HANDLES_PER_OWNER = 1000
#: Live handles one in-memory table holds in all (``maxHandles``).
DEFAULT_MAX_HANDLES = 100_000


class HandleError(LookupError):
    """A handle the table cannot resolve."""

    def __init__(self, handle: str, message: str) -> None:
        super().__init__(message)
        self.handle = handle


class UnknownHandle(HandleError):
    pass


class ExpiredHandle(HandleError):
    pass


class TooManyHandles(Exception):
    """A new handle refused: ``bound`` (the config key) allows no more than ``limit``
    live ones."""

    def __init__(self, bound: str, limit: int, whose: str) -> None:
        super().__init__(
            f"too many live handles: {whose} {limit}, the most {bound} allows; "
            "a handle is freed when it expires"
        )
        self.bound = bound
        self.limit = limit


def _token() -> str:
    return secrets.token_urlsafe(16)


class HandleTable(Generic[T]):
    """Handles (``prefix`` + random text) for values of type ``T``."""

    def __init__(
        self,
        prefix: str,
        ttl: float,
        *,
        new_token: Callable[[], str] = _token,
        remember_expired: int = 4096,
        max_per_owner: int = DEFAULT_MAX_HANDLES_PER_OWNER,
        max_total: int = DEFAULT_MAX_HANDLES,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if max_per_owner < 1 or max_total < 1:
            raise ValueError("the bounds of live handles must be at least 1")
        self.max_per_owner = max_per_owner
        self.max_total = max_total
        #: owner -> how many live handles it holds.
        self._owned: dict[Hashable, int] = {}
        self.prefix = prefix
        self.ttl = ttl
        self._new_token = new_token
        self._remember_expired = remember_expired
        #: handle -> (value, expiry, owner).
        self._values: dict[str, tuple[T, float, Hashable]] = {}
        #: value -> owner -> handle.
        self._handles: dict[T, dict[Hashable, str]] = {}
        # Expired handles seen last, so that an expired handle is told apart from a
        # made-up one; bounded, as a client may hold handles for ever.
        self._expired: OrderedDict[str, Hashable] = OrderedDict()

    def __len__(self) -> int:
        return len(self._values)

    def live(self) -> list[T]:
        """The values with a handle, in the order their handles were made."""
        return [value for value, _, _ in self._values.values()]

    def mint(self, value: T, now: float, owner: Hashable = None) -> str:
        """``owner``'s handle of ``value`` (a new one, or its live one, whose TTL restarts)."""
        self.sweep(now)
        handle = (self._handles.get(value) or {}).get(owner)
        if handle is None:
            if len(self._values) >= self.max_total:
                raise TooManyHandles("maxHandles", self.max_total, "the bridge already holds")
            if self._owned.get(owner, 0) >= self.max_per_owner:
                raise TooManyHandles(
                    "maxHandlesPerOwner", self.max_per_owner, "this client already holds"
                )
            self._owned[owner] = self._owned.get(owner, 0) + 1
            handle = self.prefix + self._new_token()
            while handle in self._values:
                handle = self.prefix + self._new_token()
            self._handles.setdefault(value, {})[owner] = handle
        self._values[handle] = (value, now + self.ttl, owner)
        return handle

    def peek(self, value: T, now: float) -> T | None:
        """The value kept for a live handle of ``value`` (whoever's; equal to it, maybe
        not the same in every field), or None; its TTL does not restart."""
        self.sweep(now)
        for handle in (self._handles.get(value) or {}).values():
            return self._values[handle][0]
        return None

    def resolve(self, handle: str, now: float, owner: Hashable = None) -> T:
        """The value of ``owner``'s live ``handle`` (its TTL restarts), else
        :class:`ExpiredHandle` or :class:`UnknownHandle` (another owner's handle too,
        in the same words as a made-up one: handles cannot be probed)."""
        self.sweep(now)
        entry = self._values.get(handle)
        if entry is not None and entry[2] != owner:
            entry = None
        if entry is None:
            if handle in self._expired and self._expired[handle] == owner:
                raise ExpiredHandle(
                    handle,
                    f"the handle {handle!r} has expired ({self.describe_retention()})",
                )
            raise UnknownHandle(handle, f"unknown handle {handle!r}")
        value = entry[0]
        self._values[handle] = (value, now + self.ttl, owner)
        return value

    def sweep(self, now: float) -> int:
        """Forget the handles whose time is up; how many went."""
        gone = [h for h, (_, until, _) in self._values.items() if until <= now]
        for handle in gone:
            value, _, owner = self._values.pop(handle)
            mine = self._handles.get(value) or {}
            mine.pop(owner, None)
            if not mine:
                self._handles.pop(value, None)
            left = self._owned.pop(owner) - 1
            if left:
                self._owned[owner] = left
            self._expired[handle] = owner
        while len(self._expired) > self._remember_expired:
            self._expired.popitem(last=False)
        return len(gone)

    def describe_retention(self) -> str:
        """How long handles are kept, in words (tool descriptions use it)."""
        return describe_retention(self.ttl)


def describe_retention(ttl: float, where: str = "in memory") -> str:
    """``handles are kept <where> for <ttl in words> after their last use``."""
    minutes = ttl / 60
    if minutes >= 1:
        amount = f"{minutes:g} minute{'' if minutes == 1 else 's'}"
    else:
        amount = f"{ttl:g} second{'' if ttl == 1 else 's'}"
    return f"handles are kept {where} for {amount} after their last use"
