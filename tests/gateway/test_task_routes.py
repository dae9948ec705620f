"""The gateway's task ids: random and opaque, their principal's alone, kept for the
task's ttl (capped), bounded in all and per principal; in memory and in Redis alike
(shared by replicas), on each backend."""

from __future__ import annotations

import contextlib
import importlib
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import InternalError, InvalidParams
from sansio_mcp_apps.gateway import TaskRouteLimits, TaskRoutes

PRINCIPALS = st.sampled_from([None, "api_keys[0]", "api_keys[1]", "subject:x"])


@given(
    st.lists(
        st.tuples(PRINCIPALS, st.one_of(st.none(), st.integers(0, 10_000)), st.floats(0, 20)),
        max_size=40,
    )
)
def test_routes_are_bounded_private_and_expire(
    made: list[tuple[str | None, int | None, float]],
) -> None:
    routes = TaskRoutes(TaskRouteLimits(max_total=12, max_per_principal=5, max_ttl=8.0))
    now = 0.0
    kept: dict[str, tuple[str | None, float]] = {}
    for principal, ttl_ms, wait in made:
        now += wait
        try:
            task_id = routes.add("ex", f"up-{len(kept)}", principal, ttl_ms, now)
        except InternalError as exc:
            live = [p for p, expires in kept.values() if expires >= now]
            assert len(live) >= 12 or live.count(principal) >= 5, exc.data
            continue
        kept[task_id] = (principal, now + min(8.0, (ttl_ms if ttl_ms is not None else 8000) / 1000))
        assert len(routes) <= 12
    for task_id, (principal, expires) in kept.items():
        for other in (None, "api_keys[0]", "api_keys[1]", "subject:x"):
            if other == principal and expires >= now:
                assert routes.get(task_id, other, now).principal == principal
            else:
                with pytest.raises(InvalidParams, match="unknown task"):
                    routes.get(task_id, other, now)


def test_an_id_names_nothing_of_its_route() -> None:
    routes = TaskRoutes()
    ids = {routes.add("github", "upstream-task-1", "p", 1000, 0.0) for _ in range(200)}
    assert len(ids) == 200
    for task_id in ids:
        assert task_id.startswith("gwt-") and len(task_id) == 36
        assert "upstream-task-1" not in task_id


def test_bad_limits_are_refused() -> None:
    for bad in ({"max_total": 0}, {"max_per_principal": True}, {"max_ttl": 0}):
        with pytest.raises(ValueError):
            TaskRouteLimits(**bad)  # type: ignore[arg-type]


async def _contract(backend: Any, url: str | None) -> dict[str, Any]:
    from sansio_mcp.runtime import Stores, open_stores
    from sansio_mcp_apps.gateway.runtime import task_route_store

    seen: dict[str, Any] = {}
    limits = TaskRouteLimits(max_total=3, max_per_principal=2, max_ttl=30.0)
    async with contextlib.AsyncExitStack() as stack:
        if url is None:
            stores = Stores.memory(backend.clock)
        else:
            namespace = f"test-{uuid.uuid4().hex}"
            stores = await stack.enter_async_context(
                open_stores(url, backend, replica_id="a", namespace=namespace)
            )
        made = task_route_store(stores, TaskRoutes(limits))
        # Another replica's view: the same shared store, a local table of its own.
        other = task_route_store(stores, TaskRoutes(limits)) if url else made
        first = await made.add("ex", "up-1", "alice", 10_000, 100.0)
        await made.add("ex", "up-2", "alice", None, 100.0, core=True)
        try:
            await made.add("ex", "up-3", "alice", 10_000, 100.0)
        except InternalError as exc:
            seen["per_principal"] = exc.data
        await made.add("ex", "up-4", "bob", 10_000, 100.0)
        try:
            await made.add("ex", "up-5", "carol", 10_000, 100.0)
        except InternalError as exc:
            seen["total"] = exc.data
        route = await other.get(first, "alice", 105.0)
        seen["route"] = (route.connector, route.upstream_id, route.principal, route.core)
        for who, task_id, now in (
            ("bob", first, 105.0),
            ("alice", "gwt-" + "B" * 32, 105.0),
            ("alice", first, 111.0),  # past its 10 s
        ):
            try:
                await other.get(task_id, who, now)
            except InvalidParams as exc:
                seen.setdefault("refused", []).append(exc.message.replace(task_id, "ID"))
        # Past the first's expiry there is room for carol.
        seen["later"] = (await made.add("ex", "up-6", "carol", 1000, 111.0)).startswith("gwt-")
    return seen


@pytest.mark.parametrize("store", ["memory", "redis"])
@pytest.mark.parametrize("adapters", ["trio_adapters", "asyncio_adapters"])
def test_task_route_stores_keep_the_same_contract(
    adapters: str, store: str, request: pytest.FixtureRequest
) -> None:
    backend = importlib.import_module(adapters).BACKEND
    url = None if store == "memory" else str(request.getfixturevalue("redis_url"))
    seen = backend.run(_contract, backend, url)
    assert seen["per_principal"] == {"limit": "max_per_principal", "max": 2}
    assert seen["total"] == {"limit": "max_total", "max": 3}
    assert seen["route"] == ("ex", "up-1", "alice", False)
    assert seen["refused"] == ["unknown task: 'ID'"] * 3
    assert seen["later"] is True
