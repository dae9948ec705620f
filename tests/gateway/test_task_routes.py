"""The gateway's task ids (pure): random and opaque, their principal's alone, kept
for the task's ttl (capped), bounded in all and per principal."""

from __future__ import annotations

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
