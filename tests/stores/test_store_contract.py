"""The shared stores' contract, one test body for the in-memory and the Redis store
alike, on both backends: the event bus delivers what is published to whoever
subscribed (and no longer once closed), the replay cache lets the first use of a key
win, once, for its time."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sansio_mcp.runtime import Stores, open_stores

STORES = ["memory", "redis"]


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory"
    return str(request.getfixturevalue("redis_url"))


def namespace() -> str:
    """A namespace of the test's own: tests share one redis-server."""
    return f"test-{uuid.uuid4().hex}"


class Inbox:
    """Messages delivered on a channel; ``wait`` until ``n`` have come."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.messages: list[dict[str, Any]] = []
        self._signal = backend.new_signal()

    def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._signal.set()

    async def wait(self, n: int) -> list[dict[str, Any]]:
        async with self.backend.fail_after(5):
            while len(self.messages) < n:
                await self._signal.wait()
                self._signal = self.backend.new_signal()
        return self.messages


def test_a_subscriber_gets_what_is_published_until_it_closes(backend: Any, store_url: str) -> None:
    async def main() -> None:
        async with open_stores(store_url, backend, namespace=namespace()) as stores:
            inbox, marker = Inbox(backend), Inbox(backend)
            subscription = stores.events.subscribe("tasks", inbox)
            stores.events.subscribe("marker", marker)
            message = {"status": "working", "n": [1, 2.5, None, "é"]}
            await stores.events.publish("tasks", message)
            await stores.events.publish("other", {"not": "for us"})
            assert await inbox.wait(1) == [message]
            subscription.close()
            subscription.close()  # closing twice is harmless
            await stores.events.publish("tasks", {"after": "close"})
            await stores.events.publish("marker", {"done": True})
            # Messages on one bus arrive in order: the marker comes after the closed one would.
            assert await marker.wait(1) == [{"done": True}]
            assert inbox.messages == [message]

    backend.run(main)


def test_every_subscriber_of_a_channel_gets_each_message(backend: Any, store_url: str) -> None:
    async def main() -> None:
        async with open_stores(store_url, backend, namespace=namespace()) as stores:
            first, second = Inbox(backend), Inbox(backend)
            stores.events.subscribe("c", first)
            keep = stores.events.subscribe("c", second)
            await stores.events.publish("c", {"i": 1})
            assert await first.wait(1) == await second.wait(1) == [{"i": 1}]
            keep.close()
            await stores.events.publish("c", {"i": 2})
            assert await first.wait(2) == [{"i": 1}, {"i": 2}]
            assert second.messages == [{"i": 1}]

    backend.run(main)


def test_the_first_use_of_a_key_wins_for_its_time(backend: Any, store_url: str) -> None:
    async def main() -> None:
        async with open_stores(store_url, backend, namespace=namespace()) as stores:
            assert await stores.replay.first_use("jti-1", 60) is True
            assert await stores.replay.first_use("jti-1", 60) is False
            assert await stores.replay.first_use("jti-2", 60) is True
            assert await stores.replay.first_use("short", 0.05) is True
            await backend.sleep(0.2)  # the key's time passing is what is tested
            assert await stores.replay.first_use("short", 60) is True
            assert await stores.replay.first_use("short", 60) is False

    backend.run(main)


def test_racing_first_uses_of_one_key_let_exactly_one_win(backend: Any, store_url: str) -> None:
    async def main() -> None:
        results: list[bool] = []

        async def offer(stores: Stores) -> None:
            results.append(await stores.replay.first_use("raced", 60))

        async with open_stores(store_url, backend, namespace=namespace()) as stores:
            async with backend.open_task_group() as group:
                for _ in range(20):
                    group.start_soon(offer, stores)
        assert sorted(results) == [False] * 19 + [True]

    backend.run(main)


def test_keys_and_channels_are_namespaced(backend: Any, store_url: str) -> None:
    async def main() -> None:
        async with open_stores(store_url, backend, namespace="deployment-a") as stores:
            assert stores.key("tasks", "t1") == "deployment-a:tasks:t1"
            assert stores.namespace == "deployment-a"
            assert stores.shared is (store_url != "memory")
            assert stores.url == store_url

    backend.run(main)


# Replicas: two processes' bundles on one Redis (Redis only: memory is per process) -------


def test_replicas_share_the_replay_cache_and_the_bus(backend: Any, redis_url: str) -> None:
    async def main() -> None:
        ns = namespace()
        async with (
            open_stores(redis_url, backend, namespace=ns, replica_id="a") as a,
            open_stores(redis_url, backend, namespace=ns, replica_id="b") as b,
            open_stores(redis_url, backend, namespace=namespace()) as elsewhere,
        ):
            assert (a.replica_id, b.replica_id) == ("a", "b")
            assert await a.replay.first_use("jti", 60) is True
            assert await b.replay.first_use("jti", 60) is False
            assert await elsewhere.replay.first_use("jti", 60) is True  # another deployment
            at_a, at_elsewhere = Inbox(backend), Inbox(backend)
            a.events.subscribe("answers", at_a)
            elsewhere.events.subscribe("answers", at_elsewhere)
            await a.events.publish("answers", {"ready": True})  # a's subscription is in place
            await at_a.wait(1)
            await b.events.publish("answers", {"from": "b"})
            assert await at_a.wait(2) == [{"ready": True}, {"from": "b"}]
            await elsewhere.events.publish("answers", {"own": True})
            assert await at_elsewhere.wait(1) == [{"own": True}]  # nothing of the other namespace
            assert at_a.messages == [{"ready": True}, {"from": "b"}]

    backend.run(main)


def test_a_settled_subscription_hears_another_replica_at_once(backend: Any, redis_url: str) -> None:
    """Once ``settled`` returns, a message another replica publishes is heard: a replica
    awaits it before it listens, so nothing sent to it in between is lost."""

    async def main() -> None:
        ns = namespace()
        async with (
            open_stores(redis_url, backend, namespace=ns) as a,
            open_stores(redis_url, backend, namespace=ns) as b,
        ):
            at_a = Inbox(backend)
            a.events.subscribe("for-a", at_a)
            await a.events.settled()
            # No publish from a first (which would wait for its own subscription).
            await b.events.publish("for-a", {"first": True})
            assert await at_a.wait(1) == [{"first": True}]

    backend.run(main)


def test_the_memory_bus_is_settled_at_once(backend: Any) -> None:
    async def main() -> None:
        async with open_stores("memory", backend) as stores:
            inbox = Inbox(backend)
            stores.events.subscribe("c", inbox)
            await stores.events.settled()
            await stores.events.publish("c", {"n": 1})
            assert inbox.messages == [{"n": 1}]

    backend.run(main)
