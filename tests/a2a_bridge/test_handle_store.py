"""The handle store's contract, held by the in-memory store and the Redis store alike
(the same test bodies), on both backends.

Time moves by hand: the memory store's clock is the test's, and in Redis every key of
the test's namespace has its remaining life cut by the same amount (``travel``), so no
test waits for a TTL to run out.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_service import RedisService

from sansio_mcp.runtime import Stores, StoreUnavailable, TransportBackend, open_stores
from sansio_mcp_apps.a2a import ExpiredHandle, TooManyHandles, UnknownHandle
from sansio_mcp_apps.a2a.runtime import HandleStore, TaskRef, handle_store

TTL = 60.0
KINDS = ("memory", "redis")


class World:
    """A store of task handles (and a second view of it: another replica's, for Redis)
    and the means to move its time."""

    def __init__(
        self, stores: Stores, other: Stores, now: list[float], max_per_owner: int = 1000
    ) -> None:
        self.stores = stores
        self.now = now
        self.max_per_owner = max_per_owner
        self.store: HandleStore[TaskRef] = self.open(stores)
        self.replica: HandleStore[TaskRef] = self.store if other is stores else self.open(other)

    def open(self, stores: Stores) -> HandleStore[TaskRef]:
        return handle_store(
            stores,
            "tk_",
            TTL,
            TaskRef,
            clock=lambda: self.now[0],
            max_per_owner=self.max_per_owner,
        )

    async def travel(self, seconds: float) -> None:
        """Let ``seconds`` pass for the store."""
        self.now[0] += seconds
        redis = self.stores.redis
        if redis is None:
            return
        for key in await redis.execute("KEYS", self.stores.key("*")):
            left = await redis.execute("PTTL", key)
            if left < 0:
                continue
            if left - seconds * 1000 <= 0:
                await redis.execute("DEL", key)
            else:
                await redis.execute("PEXPIRE", key, int(left - seconds * 1000))


@pytest.fixture(params=KINDS)
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory"
    url: str = request.getfixturevalue("redis_url")
    return url


def in_world(
    backend: TransportBackend,
    url: str,
    body: Callable[[World], Awaitable[Any]],
    **options: Any,
) -> Any:
    namespace = f"test-{secrets.token_hex(4)}"

    async def main() -> Any:
        async with backend.fail_after(30):
            async with open_stores(url, backend, namespace=namespace) as stores:
                if stores.redis is None:
                    return await body(World(stores, stores, [1000.0], **options))
                async with open_stores(url, backend, namespace=namespace) as other:
                    return await body(World(stores, other, [1000.0], **options))

    return backend.run(main)


def test_one_live_handle_per_value_and_owner(backend: TransportBackend, store_url: str) -> None:
    async def body(world: World) -> None:
        store = world.store
        ref = TaskRef("fixture", "t-1", "c-1")
        handle = await store.mint(ref, "alice")
        assert handle.startswith("tk_")
        assert await store.mint(ref, "alice") == handle
        # Equal values share the handle; the newest is the one kept.
        moved = TaskRef("fixture", "t-1", "c-2")
        assert await store.mint(moved, "alice") == handle
        assert (await store.resolve(handle, "alice")).context_id == "c-2"
        # Another owner gets a handle of its own, and cannot use alice's.
        theirs = await store.mint(ref, "bob")
        assert theirs != handle
        with pytest.raises(UnknownHandle) as other:
            await store.resolve(handle, "bob")
        with pytest.raises(UnknownHandle) as made_up:
            await store.resolve("tk_madeup", "bob")
        assert str(other.value) == f"unknown handle {handle!r}"
        assert str(made_up.value) == "unknown handle 'tk_madeup'"
        # Another agent's task of the same id is another value.
        assert await store.mint(TaskRef("other", "t-1", "c-1"), "alice") != handle

    in_world(backend, store_url, body)


def test_the_ttl_slides_and_expired_is_told_from_unknown(
    backend: TransportBackend, store_url: str
) -> None:
    async def body(world: World) -> None:
        store = world.store
        ref = TaskRef("fixture", "t-1", "c-1")
        handle = await store.mint(ref, "alice")
        await world.travel(TTL - 1)
        assert await store.resolve(handle, "alice") == ref  # restarts the TTL
        await world.travel(TTL - 1)
        assert await store.mint(ref, "alice") == handle  # and so does minting again
        await world.travel(TTL - 1)
        assert await store.resolve(handle, "alice") == ref
        await world.travel(TTL + 0.5)
        with pytest.raises(ExpiredHandle) as expired:
            await store.resolve(handle, "alice")
        assert f"the handle {handle!r} has expired" in str(expired.value)
        assert "for 1 minute after their last use" in str(expired.value)
        with pytest.raises(UnknownHandle):
            await store.resolve(handle, "bob")  # expired for its owner only
        # The value gets a new handle now.
        again = await store.mint(ref, "alice")
        assert again != handle
        assert await store.resolve(again, "alice") == ref

    in_world(backend, store_url, body)


def test_live_handles_per_owner_are_bounded(backend: TransportBackend, store_url: str) -> None:
    async def body(world: World) -> None:
        store, replica = world.store, world.replica
        refs = [TaskRef("fixture", f"t-{i}", "c") for i in range(4)]
        handles = [await store.mint(ref, "alice") for ref in refs[:3]]
        # Past the bound (on any replica), a new handle is refused, naming the bound.
        for where in (store, replica):
            with pytest.raises(TooManyHandles) as refused:
                await where.mint(refs[3], "alice")
            assert str(refused.value) == (
                "too many live handles: this client already holds 3, the most "
                "maxHandlesPerOwner allows; a handle is freed when it expires"
            )
            assert refused.value.bound == "maxHandlesPerOwner"
        # A live one is still given again; other owners are not held back.
        assert await replica.mint(refs[0], "alice") == handles[0]
        assert await store.mint(refs[3], "bob")
        # Used handles live on; the two left unused expire and free their places.
        await world.travel(TTL - 1)
        assert await store.resolve(handles[0], "alice") == refs[0]
        await world.travel(2)
        fresh = [await replica.mint(ref, "alice") for ref in refs[1:3]]
        assert handles[0] not in fresh
        with pytest.raises(TooManyHandles):
            await store.mint(refs[3], "alice")

    in_world(backend, store_url, body, max_per_owner=3)


def test_peek_sees_any_owner_and_restarts_nothing(
    backend: TransportBackend, store_url: str
) -> None:
    async def body(world: World) -> None:
        store = world.store
        ref = TaskRef("fixture", "t-1", "c-1")
        assert await store.peek(ref) is None
        handle = await store.mint(ref, "alice")
        await world.travel(TTL - 1)
        assert await store.peek(TaskRef("fixture", "t-1", "")) == ref  # whoever's
        assert (await store.peek(TaskRef("fixture", "t-1", ""))).context_id == "c-1"  # type: ignore[union-attr]
        await world.travel(2)
        assert await store.peek(ref) is None
        with pytest.raises(ExpiredHandle):
            await store.resolve(handle, "alice")

    in_world(backend, store_url, body)


def test_handles_not_of_this_store_are_unknown(backend: TransportBackend, store_url: str) -> None:
    async def body(world: World) -> None:
        store = world.store
        await store.mint(TaskRef("fixture", "t-1", "c-1"), "alice")
        for handle in ("", "tk_", "cx_abc", "tk_" + "x" * 10_000, "tk_a:b:*", "tk_\u00e9\x00"):
            with pytest.raises(UnknownHandle):
                await store.resolve(handle, "alice")
        await store.check()

    in_world(backend, store_url, body)


def test_two_replicas_minting_one_value_at_once_agree(
    backend: TransportBackend, store_url: str
) -> None:
    """Concurrent mints of one value for one owner, from two replicas' stores: one handle."""

    async def body(world: World) -> None:
        ref = TaskRef("fixture", "t-1", "c-1")
        got: list[str] = []

        async def mint(store: HandleStore[TaskRef]) -> None:
            got.append(await store.mint(ref, "alice"))

        async with backend.open_task_group() as group:
            for _ in range(8):
                group.start_soon(mint, world.store)
                group.start_soon(mint, world.replica)
        assert len(got) == 16
        assert len(set(got)) == 1
        assert await world.replica.resolve(got[0], "alice") == ref
        assert await world.store.resolve(got[0], "alice") == ref

    in_world(backend, store_url, body)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ids=st.lists(st.tuples(st.text(), st.text(), st.text()), min_size=1, max_size=4),
    owner=st.text(),
    handles=st.lists(st.text(), max_size=4),
)
def test_any_text_round_trips_and_no_guess_resolves(
    backend: TransportBackend,
    store_url: str,
    ids: list[tuple[str, str, str]],
    owner: str,
    handles: list[str],
) -> None:
    """Whatever text an agent's ids or an owner hold (lone surrogates, colons, NULs), a
    handle gives back the value minted; whatever text a client sends as a handle, it is
    unknown unless minted."""

    async def body(world: World) -> None:
        minted = {}
        for agent, task_id, context_id in ids:
            ref = TaskRef(agent, task_id, context_id)
            minted[await world.store.mint(ref, owner)] = ref
        for handle, ref in minted.items():
            back = await world.replica.resolve(handle, owner)
            assert (back.agent, back.task_id) == (ref.agent, ref.task_id)
            assert await world.store.peek(ref) is not None
        for handle in handles:
            if handle not in minted:
                with pytest.raises(UnknownHandle):
                    await world.store.resolve(handle, owner)

    in_world(backend, store_url, body)


def test_redis_down_fails_at_once_and_recovers_by_itself(
    backend: TransportBackend, redis_service: RedisService
) -> None:
    """Every use of the store fails promptly naming it while Redis is down, and works
    again once it is back on the same port (its handles gone: no persistence)."""

    async def main() -> None:
        async with open_stores(redis_service.url, backend, namespace="down") as stores:
            store = handle_store(stores, "tk_", TTL, TaskRef, clock=backend.clock)
            ref = TaskRef("fixture", "t-1", "c-1")
            handle = await store.mint(ref, "alice")
            redis_service.stop()
            uses = (
                lambda: store.mint(ref, "alice"),
                lambda: store.resolve(handle, "alice"),
                lambda: store.peek(ref),
                store.check,
            )
            for use in uses:
                async with backend.fail_after(3):  # promptly, not after a long hang
                    with pytest.raises(StoreUnavailable) as info:
                        await use()
                assert info.value.store == redis_service.url
                assert str(info.value).startswith(f"the store {redis_service.url} is unavailable")
            redis_service.start()
            with pytest.raises(UnknownHandle):
                await store.resolve(handle, "alice")
            again = await store.mint(ref, "alice")
            assert await store.resolve(again, "alice") == ref

    backend.run(main)
