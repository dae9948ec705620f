"""Opaque handles for A2A task and context ids: the bridge's table, never the ids.

A handle lives for ``ttl`` seconds after its last use (``mint`` or ``resolve``
restarts the clock); time comes in as ``now``.  A handle belongs to the owner that
minted it (the bridge passes the MCP task owner key, ``task_owner(ctx)``): resolved
for another owner it is as unknown as a made-up one.  Minting the same value again
for the same owner gives the same handle, so a live conversation keeps its handles.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ExpiredHandle", "HandleError", "HandleTable", "UnknownHandle"]

T = TypeVar("T", bound=Hashable)


class HandleError(LookupError):
    """A handle the table cannot resolve."""

    def __init__(self, handle: str, message: str) -> None:
        super().__init__(message)
        self.handle = handle


class UnknownHandle(HandleError):
    pass


class ExpiredHandle(HandleError):
    pass


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
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
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
        mine = self._handles.setdefault(value, {})
        handle = mine.get(owner)
        if handle is None:
            handle = self.prefix + self._new_token()
            while handle in self._values:
                handle = self.prefix + self._new_token()
            mine[owner] = handle
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
