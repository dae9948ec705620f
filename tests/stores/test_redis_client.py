"""The Redis client against a real redis-server, on both backends: replies decoded,
concurrent callers each get their own reply, every failure a StoreUnavailable naming
the store, and recovery with no restart once Redis is back."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from redis_service import RedisService

from sansio_mcp.runtime import (
    RedisAddress,
    RedisClient,
    StoreUnavailable,
    open_stores,
)
from tests.stores.test_store_contract import Inbox


def key() -> str:
    return f"test-{uuid.uuid4().hex}"


def test_replies_are_decoded(backend: Any, redis_url: str) -> None:
    async def main() -> None:
        client = RedisClient(redis_url, backend)
        try:
            k = key()
            assert await client.execute("PING") == "PONG"
            assert await client.execute("SET", k, b"\x00value", "PX", 60_000) == "OK"
            assert await client.execute("GET", k) == b"\x00value"
            assert await client.execute("GET", key()) is None
            assert await client.execute("SET", k, "x", "NX") is None
            counter, items = k + "n", k + "l"
            assert await client.pipeline(
                [("INCRBY", counter, 5), ("INCRBYFLOAT", counter, 0.5), ("RPUSH", items, "a", "b")]
            ) == [5, b"5.5", 2]
            assert await client.execute("LRANGE", items, 0, -1) == [b"a", b"b"]
            assert await client.pipeline([]) == []
            await client.execute("DEL", k, counter, items)
        finally:
            await client.aclose()

    backend.run(main)


def test_an_error_reply_raises_store_unavailable_with_redis_message(
    backend: Any, redis_url: str
) -> None:
    async def main() -> None:
        client = RedisClient(redis_url, backend)
        try:
            k = key()
            await client.execute("SET", k, "text")
            with pytest.raises(StoreUnavailable, match="INCR: ERR value is not an integer") as info:
                await client.execute("INCR", k)
            assert info.value.store == redis_url
            with pytest.raises(StoreUnavailable, match="WRONGTYPE"):
                await client.pipeline([("GET", k), ("LPUSH", k, "x")])
            assert await client.execute("GET", k) == b"text"  # the connection is still good
            await client.execute("DEL", k)
        finally:
            await client.aclose()

    backend.run(main)


def test_concurrent_callers_each_get_their_own_reply(backend: Any, redis_url: str) -> None:
    async def main() -> None:
        client = RedisClient(redis_url + "?max_connections=3", backend)
        k = key()
        replies: list[int] = []
        echoes: list[bool] = []

        async def incr(i: int) -> None:
            replies.append(await client.execute("INCR", k))
            echoes.append(await client.execute("ECHO", f"echo-{i}") == f"echo-{i}".encode())

        try:
            async with backend.open_task_group() as group:
                for i in range(60):
                    group.start_soon(incr, i)
            assert sorted(replies) == list(range(1, 61))
            assert echoes == [True] * 60
            assert client._open <= 3
            await client.execute("DEL", k)
        finally:
            await client.aclose()

    backend.run(main)


def test_password_and_database_from_the_url(backend: Any, redis_service: RedisService) -> None:
    async def main() -> None:
        plain = RedisClient(redis_service.url, backend)
        try:
            await plain.execute("CONFIG", "SET", "requirepass", "s3cret")
        finally:
            await plain.aclose()
        url = f"redis://:s3cret@127.0.0.1:{redis_service.port}/2"
        db2 = RedisClient(url, backend)
        db0 = RedisClient(f"redis://:s3cret@127.0.0.1:{redis_service.port}", backend)
        wrong = RedisClient(f"redis://:nope@127.0.0.1:{redis_service.port}/0", backend)
        try:
            assert db2.url == f"redis://127.0.0.1:{redis_service.port}/2"  # no password in names
            await db2.execute("SET", "k", "in two")
            assert await db0.execute("GET", "k") is None
            assert await db2.execute("GET", "k") == b"in two"
            with pytest.raises(StoreUnavailable, match="AUTH refused") as info:
                await wrong.execute("PING")
            assert "nope" not in str(info.value)
        finally:
            for client in (db2, db0, wrong):
                await client.aclose()

    backend.run(main)


@pytest.mark.parametrize(
    "url",
    [
        "redis://",
        "redis://host:port/0",
        "redis://host:6379/zero",
        "http://host:6379/0",
        "redis://host/0?command_timeout=-1",
        "redis://host/0?command_timeout=nan",
        "redis://host/0?max_connections=0",
        "redis://host/0?timeout=1",
    ],
)
def test_a_malformed_url_says_what_is_accepted(url: str) -> None:
    with pytest.raises(ValueError, match=r"redis://|must be a positive number"):
        RedisAddress.parse(url)


def test_url_options() -> None:
    address = RedisAddress.parse(
        "redis://user:p%40ss@[::1]:7000/3?connect_timeout=0.5&command_timeout=2&max_connections=4"
    )
    assert (address.host, address.port, address.db) == ("::1", 7000, 3)
    assert (address.username, address.password) == ("user", "p@ss")
    assert address.connect_timeout == 0.5
    assert (address.command_timeout, address.max_connections) == (2, 4)
    assert address.name == "redis://[::1]:7000/3"
    assert "p@ss" not in repr(address)
    assert RedisAddress.parse("redis://h").name == "redis://h:6379/0"


def test_open_stores_refuses_an_unreachable_redis_at_start(backend: Any) -> None:
    from peers import free_port

    url = f"redis://127.0.0.1:{free_port()}/0"

    async def main() -> None:
        async with backend.fail_after(5):
            with pytest.raises(StoreUnavailable, match="cannot connect") as info:
                async with open_stores(url, backend):
                    raise AssertionError("opened")
        assert info.value.store == url
        with pytest.raises(ValueError, match="expected 'memory' or 'redis://"):
            async with open_stores("postgres://x", backend):
                raise AssertionError("opened")

    backend.run(main)


def test_redis_down_fails_at_once_and_recovers_by_itself(
    backend: Any, redis_service: RedisService
) -> None:
    async def main() -> None:
        async with open_stores(redis_service.url, backend, namespace=key()) as stores:
            redis = stores.redis
            assert redis is not None
            inbox = Inbox(backend)
            stores.events.subscribe("news", inbox)
            await stores.events.publish("news", {"n": 0})
            await inbox.wait(1)
            await redis.execute("SET", "k", "v")
            redis_service.stop()
            for _ in range(2):
                async with backend.fail_after(3):  # promptly, not after a long hang
                    with pytest.raises(StoreUnavailable) as info:
                        await redis.execute("GET", "k")
                assert info.value.store == redis_service.url
                async with backend.fail_after(3):
                    with pytest.raises(StoreUnavailable):
                        await stores.replay.first_use("jti", 60)
            redis_service.start()
            assert await redis.execute("GET", "k") is None  # back, empty (no persistence)
            assert await stores.replay.first_use("jti", 60) is True
            # The subscription made before the outage hears what is published after it,
            # once the bus has subscribed again (it retries on its own).
            async with backend.fail_after(10):
                while len(inbox.messages) < 2:
                    await stores.events.publish("news", {"n": 1})
                    async with backend.move_on_after(0.2):
                        await inbox.wait(2)
            assert inbox.messages[1] == {"n": 1}

    backend.run(main)


def test_a_stale_pooled_connection_does_not_fail_the_first_command_after_a_restart(
    backend: Any, redis_service: RedisService
) -> None:
    async def main() -> None:
        client = RedisClient(redis_service.url, backend)
        try:
            assert await client.execute("PING") == "PONG"
            redis_service.restart()  # nothing was asked meanwhile: the pooled connection is dead
            assert await client.execute("PING") == "PONG"
        finally:
            await client.aclose()

    backend.run(main)
