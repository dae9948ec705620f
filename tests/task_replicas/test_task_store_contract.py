"""The shared task store's contract (issue 33), the same test body for the in-memory
and the Redis store, on both backends: create if absent, load for the owner only,
save as a compare-and-set on the version, the owner's listing, records forgotten
with their own retention; and a record survives its JSON form (Hypothesis)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sansio_mcp._errors import InternalError, LocalProtocolError
from sansio_mcp._tasks import TaskRecord, TaskStatus
from sansio_mcp.runtime import Stores
from sansio_mcp.runtime._task_store import (
    MemorySharedTaskStore,
    RedisSharedTaskStore,
    SharedTaskStore,
    StoredTask,
    TaskConflict,
    shared_task_store,
)
from sansio_mcp.runtime._tasks import RunningTask, TaskRunner
from tests.auth.test_http import Backend

KINDS = ["memory", "redis"]


@asynccontextmanager
async def open_task_store(
    kind: str, backend: Backend, redis_url: str | None
) -> AsyncIterator[SharedTaskStore]:
    if kind == "memory":
        yield MemorySharedTaskStore()
        return
    from sansio_mcp.runtime import open_stores

    assert redis_url is not None
    async with open_stores(
        redis_url, backend.backend, namespace=f"t{time.monotonic_ns()}"
    ) as stores:
        store = shared_task_store(stores)
        assert store is not None
        yield store


def run(
    kind: str,
    backend: Backend,
    request: pytest.FixtureRequest,
    test: Callable[[SharedTaskStore], Any],
) -> None:
    redis_url = request.getfixturevalue("redis_url") if kind == "redis" else None

    async def main() -> None:
        async with open_task_store(kind, backend, redis_url) as store:
            await test(store)

    backend.run(main)


def stored(
    owner: str = "subject:alice", *, created: float | None = None, ttl_ms: int | None = 60_000
) -> StoredTask:
    now = time.time() if created is None else created
    record = TaskRecord.new(now, ttl_ms=ttl_ms, owner=owner)
    return StoredTask(record, 0, "replica-a", now + 5)


@pytest.mark.parametrize("kind", KINDS)
def test_create_is_if_absent_and_load_is_for_the_owner_only(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: SharedTaskStore) -> None:
        task = stored()
        now = time.time()
        await store.create(task, now)
        with pytest.raises(LocalProtocolError, match="exists already"):
            await store.create(task, now)
        found = await store.load(task.record.task_id, now, "subject:alice")
        assert found == task
        assert await store.load(task.record.task_id, now) == task
        assert await store.load(task.record.task_id, now, "subject:bob") is None
        assert await store.load("no-such-task", now, "subject:alice") is None

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_save_is_a_compare_and_set_on_the_version(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: SharedTaskStore) -> None:
        task = stored()
        now = time.time()
        await store.create(task, now)
        first = await store.load(task.record.task_id, now)
        second = await store.load(task.record.task_id, now)
        assert first is not None and second is not None
        first.record.set_message("first writer", now)
        written = await store.save(first, now)
        assert written.version == 1
        # The second reader started from version 0: it loses, and nothing of it is kept.
        second.record.fail(InternalError(message="second writer"), now)
        with pytest.raises(TaskConflict):
            await store.save(second, now)
        again = await store.load(task.record.task_id, now)
        assert again is not None and again.version == 1
        assert again.record.status is TaskStatus.WORKING
        assert again.record.status_message == "first writer"
        # Reloaded, it may write.
        again.record.cancel(now)
        assert (await store.save(again, now)).version == 2
        loaded = await store.load(task.record.task_id, now)
        assert loaded is not None and loaded.record.status is TaskStatus.CANCELLED
        # A record that is gone cannot be saved either.
        with pytest.raises(TaskConflict):
            await store.save(stored(), now)

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_owned_lists_the_owners_live_tasks_oldest_first(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: SharedTaskStore) -> None:
        now = time.time()
        older, newer = stored(created=now - 2), stored(created=now - 1)
        theirs = stored("subject:bob", created=now - 3)
        for task in (newer, theirs, older):
            await store.create(task, now)
        mine = await store.owned("subject:alice", now)
        assert [s.record.task_id for s in mine] == [older.record.task_id, newer.record.task_id]
        assert [s.record.task_id for s in await store.owned("subject:bob", now)] == [
            theirs.record.task_id
        ]
        assert await store.owned("subject:carol", now) == []

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_is_forgotten_when_its_ttl_from_creation_is_over(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: SharedTaskStore) -> None:
        # Created long enough ago that 200 ms of its 60 s ttl are left.
        task = stored(created=time.time() - 59.8)
        await store.create(task, time.time())
        assert await store.load(task.record.task_id, time.time()) is not None
        deadline = time.monotonic() + 10
        while await store.load(task.record.task_id, time.time()) is not None:
            assert time.monotonic() < deadline, "the record outlived its ttl"
            await backend.backend.sleep(0.05)
        assert await store.owned(task.record.owner, time.time()) == []

    run(kind, backend, request, test)


def test_a_malformed_stored_task_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a stored task"):
        StoredTask.from_json("{}")
    with pytest.raises(ValueError, match="not a stored task"):
        StoredTask.from_json("not json")
    text = json.loads(stored().to_json())
    del text["record"]["created_at"]
    with pytest.raises(ValueError, match="not a stored task"):
        StoredTask.from_json(json.dumps(text))


def test_the_lease_is_over_only_for_an_open_task_past_it() -> None:
    task = stored(created=100.0)
    assert not task.lease_over(105.0) and task.lease_over(105.5)
    task.record.cancel(101.0)
    assert not task.lease_over(1000.0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@given(
    created=st.floats(0, 2e9),
    ttl_ms=st.none() | st.integers(0, 10**9),
    asks=st.lists(st.text(min_size=1, max_size=4), max_size=3, unique=True),
    answer=st.booleans(),
    message=st.none() | st.text(max_size=10),
    ending=st.sampled_from(["none", "complete", "fail", "cancel"]),
    result=st.dictionaries(st.text(max_size=4), json_values, max_size=3),
)
def test_a_record_survives_its_json_form(
    created: float,
    ttl_ms: int | None,
    asks: list[str],
    answer: bool,
    message: str | None,
    ending: str,
    result: dict[str, Any],
) -> None:
    record = TaskRecord.new(created, ttl_ms=ttl_ms, poll_interval_ms=500, owner="subject:x")
    if asks:
        record.ask({k: {"method": "elicitation/create", "params": {}} for k in asks}, created + 1)
        if answer:
            record.answer({asks[0]: {"action": "accept"}}, created + 2)
    record.set_message(message, created + 3)
    if ending == "complete":
        record.answer({k: {} for k in record.pending}, created + 4)  # back to working
        record.complete(result, created + 4)
    elif ending == "fail":
        record.fail(InternalError(message="boom", data=result), created + 4)
    elif ending == "cancel":
        record.cancel(created + 4)
    back = TaskRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert back == record
    assert back.detailed() == record.detailed()


statuses = st.fixed_dictionaries(
    {"taskId": st.sampled_from(["t1", "t2"]) | json_values, "status": json_values}
)
messages = st.dictionaries(
    st.sampled_from(["op", "task", "at", "responses", "owner"]),
    statuses
    | st.sampled_from(["update", "cancel", "seen", "t1", "approve"])
    | json_values
    | st.floats(allow_nan=True)
    | st.dictionaries(st.sampled_from(["approve", "x"]), json_values),
)


@given(st.lists(messages, max_size=6))
@example([{"owner": "anonymous", "task": {"taskId": "t1", "status": []}}])
@example([{"op": "update", "task": ["t1"], "at": 1.0}])
def test_no_bus_message_breaks_the_runner(batch: list[dict[str, Any]]) -> None:
    """Whatever arrives on a task channel (a replica of another version, a stray
    publisher), the runner's delivery neither raises nor leaves a task in a state its
    machine does not allow."""
    stores = Stores.memory(time.time, replica_id="A")
    runner = TaskRunner(stores=stores, shared=MemorySharedTaskStore())
    record = TaskRecord.new(100.0, ttl_ms=None, new_id=lambda: "t1")
    record.ask({"approve": {"method": "elicitation/create", "params": {}}}, 100.0)
    ctx = SimpleNamespace(hub=None, stateless=True)
    running = RunningTask(record, ctx, lambda: 100.0, lambda r: None)  # type: ignore[arg-type]
    runner._local["t1"] = running
    for message in batch:
        runner._on_control(message)
        runner._on_status(message)
        assert record.status in set(TaskStatus)
        assert not (record.terminal and record.pending)


@pytest.mark.parametrize("kind", KINDS)
def test_an_owners_places_are_capped_released_and_lapse_with_their_lease(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    """``reserve`` counts an owner's live tasks on every replica, atomically up to the
    cap; a released place is free at once, an unrenewed one once its lease is over."""

    async def test(store: SharedTaskStore) -> None:
        now = time.time()
        assert await store.reserve("subject:alice", "p1", 2, now, now + 60) == 0
        assert await store.reserve("subject:alice", "p2", 2, now, now + 0.5) == 1
        if isinstance(store, RedisSharedTaskStore):
            # A short place does not shorten the others' life (the set's TTL).
            key = store._key("task-places", "subject:alice")
            assert await store._redis.execute("PTTL", key) > 50_000
        assert await store.reserve("subject:alice", "p3", 2, now, now + 60) == -3  # full
        assert await store.reserve("subject:bob", "p1", 2, now, now + 60) == 0  # another's
        await store.release("subject:alice", "p1")
        assert await store.reserve("subject:alice", "p3", 2, now, now + 60) == 1
        # p2 renewed holds past its first lease; p3 and p2 fill the cap again.
        await store.renew("subject:alice", "p2", now, now + 60)
        later = now + 1
        assert await store.reserve("subject:alice", "p4", 2, later, later + 60) == -3
        # Not renewed, a place lapses when its lease is over (its replica died).
        await store.reserve("subject:carol", "gone", 1, now, now + 0.5)
        assert await store.reserve("subject:carol", "next", 1, later, later + 60) == 0

    run(kind, backend, request, test)
