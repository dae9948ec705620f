"""A client-side cache of results, honouring the server's ``ttlMs`` hints
(2026-07-28, SEP-2549).  Time is passed in, in seconds."""

from __future__ import annotations

import json
from typing import Any

import attrs

from ._versions import CACHEABLE_METHODS

__all__ = ["ResultCache"]

# Which cached methods a notification makes stale.
_INVALIDATES: dict[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


@attrs.define
class _Entry:
    result: dict[str, Any]
    expires: float
    scope: str
    context: str


class ResultCache:
    """Fresh results by method and the params that shape them.

    Only complete results of cacheable methods with a positive ``ttlMs``
    are kept; MRTR retries and results without hints (older servers) never
    are.  A ``private`` result is tagged with the authorization context it
    was fetched in and never served to another.
    """

    def __init__(self, *, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._entries: dict[tuple[str, str], _Entry] = {}

    @staticmethod
    def key(method: str, params: dict[str, Any] | None) -> tuple[str, str]:
        stable = {k: v for k, v in (params or {}).items() if k != "_meta"}
        return method, json.dumps(stable, sort_keys=True, separators=(",", ":"))

    def get(
        self, method: str, params: dict[str, Any] | None, *, now: float, context: str = ""
    ) -> dict[str, Any] | None:
        """A fresh cached result, or None."""
        if method not in CACHEABLE_METHODS:
            return None  # never kept (see put): no key worth making
        entry = self._entries.get(self.key(method, params))
        if entry is None:
            return None
        if now >= entry.expires:
            del self._entries[self.key(method, params)]
            return None
        if entry.scope == "private" and context != entry.context:
            return None
        return entry.result

    def put(
        self,
        method: str,
        params: dict[str, Any] | None,
        result: dict[str, Any],
        *,
        now: float,
        context: str = "",
    ) -> bool:
        """Remember ``result`` if its hints allow; True if it was kept."""
        if method not in CACHEABLE_METHODS or result.get("resultType", "complete") != "complete":
            return False
        if params and ("inputResponses" in params or "requestState" in params):
            return False
        ttl = result.get("ttlMs")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            return False  # absent or zero: immediately stale; negative counts as zero
        scope = result.get("cacheScope")
        if len(self._entries) >= self.max_entries:
            self._entries.pop(next(iter(self._entries)))
        scope = scope if scope == "public" else "private"
        self._entries[self.key(method, params)] = _Entry(result, now + ttl / 1000.0, scope, context)
        return True

    def invalidate(self, notification: str, params: dict[str, Any] | None = None) -> int:
        """Drop what ``notification`` makes stale; returns how many entries went."""
        if notification == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            doomed = [
                k
                for k in self._entries
                if k[0] == "resources/read" and json.loads(k[1]).get("uri") == uri
            ]
        else:
            methods = _INVALIDATES.get(notification, ())
            doomed = [k for k in self._entries if k[0] in methods]
        for k in doomed:
            del self._entries[k]
        return len(doomed)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
