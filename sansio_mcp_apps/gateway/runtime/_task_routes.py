"""Where the gateway's task ids are kept: in this replica's memory
(:class:`MemoryTaskRouteStore`), or in Redis for every replica sharing the stores
(:class:`RedisTaskRouteStore`), so that ``tasks/*`` on a task made at one replica
are served by any."""

from __future__ import annotations

import json
from typing import Any, Protocol

from sansio_mcp import InvalidParams
from sansio_mcp.runtime import RedisCommands, Stores

from .._tasks import TaskRoute, TaskRoutes, check_room

__all__ = ["MemoryTaskRouteStore", "RedisTaskRouteStore", "TaskRouteStore", "task_route_store"]


class TaskRouteStore(Protocol):
    """The gateway's task ids.  :attr:`local` holds those this replica made or
    served (what it follows for listening clients, and each route's local state)."""

    local: TaskRoutes

    async def check_room(self, principal: str | None, now: float) -> None:
        """-32603 naming the bound when one more task of ``principal`` would pass one."""

    async def add(
        self,
        connector: str,
        upstream_id: str,
        principal: str | None,
        ttl_ms: Any,
        now: float,
        *,
        core: bool = False,
    ) -> str:
        """Map a new task; the id its client is given."""

    async def get(self, task_id: Any, principal: str | None, now: float) -> TaskRoute:
        """The route of ``task_id`` for ``principal``; -32602 ``unknown task`` else."""


class MemoryTaskRouteStore:
    """:class:`TaskRouteStore` of one replica: :attr:`local` alone."""

    def __init__(self, local: TaskRoutes) -> None:
        self.local = local

    async def check_room(self, principal: str | None, now: float) -> None:
        self.local.check_room(principal, now)

    async def add(
        self,
        connector: str,
        upstream_id: str,
        principal: str | None,
        ttl_ms: Any,
        now: float,
        *,
        core: bool = False,
    ) -> str:
        return self.local.add(connector, upstream_id, principal, ttl_ms, now, core=core)

    async def get(self, task_id: Any, principal: str | None, now: float) -> TaskRoute:
        return self.local.get(task_id, principal, now)


class RedisTaskRouteStore:
    """:class:`TaskRouteStore` in Redis under ``prefix``: one key per id (expiring
    with it), and a sorted set of the live ids in all and per principal (scored by
    expiry) for the bounds, which hold across replicas (give or take tasks made at
    the same moment).  :class:`StoreUnavailable` when Redis fails."""

    def __init__(self, redis: RedisCommands, prefix: str, local: TaskRoutes) -> None:
        self.redis = redis
        self.prefix = prefix
        self.local = local

    def _sets(self, principal: str | None) -> tuple[str, str]:
        whose = "-" if principal is None else f"p:{principal}"
        return f"{self.prefix}:live", f"{self.prefix}:live:{whose}"

    async def check_room(self, principal: str | None, now: float) -> None:
        every, own = self._sets(principal)
        ms = round(now * 1000)
        replies = await self.redis.pipeline(
            [
                ("ZREMRANGEBYSCORE", every, "-inf", ms - 1),
                ("ZREMRANGEBYSCORE", own, "-inf", ms - 1),
                ("ZCARD", every),
                ("ZCARD", own),
            ]
        )
        total, owned = (n if isinstance(n, int) else 0 for n in replies[2:])
        check_room(self.local.limits, total, owned)

    async def add(
        self,
        connector: str,
        upstream_id: str,
        principal: str | None,
        ttl_ms: Any,
        now: float,
        *,
        core: bool = False,
    ) -> str:
        await self.check_room(principal, now)
        task_id = self.local.make(connector, upstream_id, principal, ttl_ms, now, core=core)
        route = self.local.get(task_id, principal, now)
        expires_ms = round(route.expires * 1000)
        keep_ms = max(1, expires_ms - round(now * 1000))
        every, own = self._sets(principal)
        body = json.dumps(
            {"c": connector, "u": upstream_id, "p": principal, "x": route.expires, "k": core}
        )
        await self.redis.pipeline(
            [
                ("SET", f"{self.prefix}:id:{task_id}", body, "PX", keep_ms),
                ("ZADD", every, expires_ms, task_id),
                ("ZADD", own, expires_ms, task_id),
                ("PEXPIRE", own, round(self.local.limits.max_ttl * 1000)),
                ("PEXPIRE", every, round(self.local.limits.max_ttl * 1000)),
            ]
        )
        return task_id

    async def get(self, task_id: Any, principal: str | None, now: float) -> TaskRoute:
        try:
            return self.local.get(task_id, principal, now)
        except InvalidParams:
            if not isinstance(task_id, str) or not task_id.startswith("gwt-"):
                raise
        found = await self.redis.execute("GET", f"{self.prefix}:id:{task_id}")
        try:
            data = json.loads(found) if isinstance(found, (bytes, str)) else None
        except ValueError:
            data = None
        if not (
            isinstance(data, dict)
            and isinstance(data.get("c"), str)
            and isinstance(data.get("u"), str)
            and isinstance(data.get("x"), (int, float))
            and data.get("p") == principal
            and data["x"] >= now
        ):
            raise InvalidParams(message=f"unknown task: {task_id!r}")
        route = TaskRoute(
            data["c"], data["u"], principal, float(data["x"]), core=bool(data.get("k"))
        )
        self.local.put(task_id, route, now)
        return route


def task_route_store(stores: Stores | None, local: TaskRoutes) -> TaskRouteStore:
    """The store ``stores`` call for: Redis's when they have Redis, else ``local``'s."""
    if stores is None or stores.redis is None:
        return MemoryTaskRouteStore(local)
    return RedisTaskRouteStore(stores.redis, stores.key("gateway", "tasks"), local)
