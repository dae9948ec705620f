"""The gateway's task ids: each task a client runs through the gateway is known to
it by an id of the gateway's own, random (unguessable, naming no connector), which
maps to the connector and the upstream's task id, for the principal that made it
alone, until the task's ttl runs out.  Bounded in all and per principal."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import attrs

from sansio_mcp import InternalError, InvalidParams

__all__ = [
    "DEFAULT_MAX_TASK_ROUTES",
    "DEFAULT_MAX_TASK_ROUTES_PER_PRINCIPAL",
    "DEFAULT_TASK_ROUTE_TTL",
    "TaskRoute",
    "TaskRouteLimits",
    "TaskRoutes",
    "check_room",
    "core_task",
    "task_support",
]

#: Defaults of :class:`TaskRouteLimits`.
DEFAULT_MAX_TASK_ROUTES = 10_000
DEFAULT_MAX_TASK_ROUTES_PER_PRINCIPAL = 1_000
DEFAULT_TASK_ROUTE_TTL = 86_400.0


@attrs.frozen
class TaskRouteLimits:
    """``max_total`` task ids mapped at once, ``max_per_principal`` of them one
    principal's (requests without one share a single count); each kept for its
    task's ttl, and at most ``max_ttl`` seconds (also the time kept for a task
    whose ttl is unlimited)."""

    max_total: int = DEFAULT_MAX_TASK_ROUTES
    max_per_principal: int = DEFAULT_MAX_TASK_ROUTES_PER_PRINCIPAL
    max_ttl: float = DEFAULT_TASK_ROUTE_TTL

    def __attrs_post_init__(self) -> None:
        for name in ("max_total", "max_per_principal"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer")
        if not self.max_ttl > 0:
            raise ValueError("max_ttl must be positive")


@attrs.define(eq=False)
class TaskRoute:
    """Where one of the gateway's task ids leads: ``connector``'s task
    ``upstream_id``, made by ``principal``, kept until ``expires`` (wall clock);
    ``answered``: the input request keys a 2025-11-25 client answered already;
    ``followed``: whether its status is being relayed to listening clients;
    ``core``: a 2025-11-25 upstream's task (its own ``tasks/*``)."""

    connector: str
    upstream_id: str
    principal: str | None
    expires: float
    core: bool = False
    answered: set[str] = attrs.field(factory=set)
    followed: bool = False


class TaskRoutes:
    """The gateway's task ids of one replica (in memory)."""

    def __init__(self, limits: TaskRouteLimits | None = None) -> None:
        self.limits = limits or TaskRouteLimits()
        self._routes: dict[str, TaskRoute] = {}
        self._counts: dict[str | None, int] = {}

    def __len__(self) -> int:
        return len(self._routes)

    def check_room(self, principal: str | None, now: float) -> None:
        """:class:`InternalError` (-32603, the limit in ``data``) when one more task
        of ``principal`` would pass a bound (checked before the upstream makes it)."""
        self._expire(now)
        check_room(self.limits, len(self._routes), self._counts.get(principal, 0))

    def add(
        self,
        connector: str,
        upstream_id: str,
        principal: str | None,
        ttl_ms: Any,
        now: float,
        *,
        core: bool = False,
    ) -> str:
        """Map a new task (``core``: a 2025-11-25 upstream's); the id its client is given."""
        self.check_room(principal, now)
        return self.make(connector, upstream_id, principal, ttl_ms, now, core=core)

    def make(
        self,
        connector: str,
        upstream_id: str,
        principal: str | None,
        ttl_ms: Any,
        now: float,
        *,
        core: bool = False,
    ) -> str:
        """:meth:`add` without the bounds (a shared store checks its own)."""
        self._expire(now)
        ttl = self.limits.max_ttl
        if isinstance(ttl_ms, (int, float)) and not isinstance(ttl_ms, bool) and ttl_ms >= 0:
            ttl = min(ttl, ttl_ms / 1000)
        task_id = f"gwt-{secrets.token_urlsafe(24)}"
        self._routes[task_id] = TaskRoute(connector, upstream_id, principal, now + ttl, core=core)
        self._counts[principal] = self._counts.get(principal, 0) + 1
        return task_id

    def get(self, task_id: Any, principal: str | None, now: float) -> TaskRoute:
        """The route of ``task_id`` for ``principal``; -32602 alike for an id never
        made, expired, or another principal's (ids cannot be probed)."""
        route = self._routes.get(task_id) if isinstance(task_id, str) else None
        if route is not None and route.expires < now:
            self._drop(task_id)
            route = None
        if route is None or route.principal != principal:
            raise InvalidParams(message=f"unknown task: {task_id!r}")
        return route

    def put(self, task_id: str, route: TaskRoute, now: float) -> None:
        """Keep ``route``, made at another replica, here too (its bounds were checked
        there; what is kept here is a subset of the shared live ids)."""
        self._expire(now)
        if task_id not in self._routes:
            self._routes[task_id] = route
            self._counts[route.principal] = self._counts.get(route.principal, 0) + 1

    def _drop(self, task_id: str) -> None:
        route = self._routes.pop(task_id)
        left = self._counts[route.principal] - 1
        if left:
            self._counts[route.principal] = left
        else:
            del self._counts[route.principal]

    def _expire(self, now: float) -> None:
        for task_id in [t for t, r in self._routes.items() if r.expires < now]:
            self._drop(task_id)


def check_room(limits: TaskRouteLimits, total: int, own: int) -> None:
    """:class:`InternalError` (-32603, the limit in ``data``) when one more task would
    pass a bound: ``total`` ids mapped, ``own`` of them the caller's principal's."""
    for name, cap, count, whose in (
        ("max_total", limits.max_total, total, "this gateway"),
        ("max_per_principal", limits.max_per_principal, own, "this client"),
    ):
        if count >= cap:
            raise InternalError(
                message=f"too many tasks: {whose} has {count} through the gateway (the "
                f"limit, {name}, is {cap}); try again once one expires",
                data={"limit": name, "max": cap},
            )


def task_support(tool: Mapping[str, Any]) -> str:
    """A listed tool's ``execution.taskSupport`` (``forbidden`` when it says none)."""
    execution = tool.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support if support in ("optional", "required") else "forbidden"


def core_task(detailed: Mapping[str, Any], task_id: str, *, core: bool = False) -> dict[str, Any]:
    """A 2026-07-28 ``DetailedTask`` (``core``: a 2025-11-25 ``Task``) as 2025-11-25's
    ``Task`` under ``task_id`` (``ttl`` and ``pollInterval``; no outcome or input
    requests inline)."""
    if core:
        return {**{k: v for k, v in detailed.items() if k != "_meta"}, "taskId": task_id}
    task: dict[str, Any] = {"taskId": task_id}
    for ours, theirs in (
        ("status", "status"),
        ("statusMessage", "statusMessage"),
        ("createdAt", "createdAt"),
        ("lastUpdatedAt", "lastUpdatedAt"),
        ("ttl", "ttlMs"),
        ("pollInterval", "pollIntervalMs"),
    ):
        if theirs in detailed:
            task[ours] = detailed[theirs]
    task.setdefault("ttl", None)
    return task
