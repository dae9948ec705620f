"""The handshake-session store's contract (issue 33), the same test body for the
in-memory and the Redis store, on both backends: a saved record loads as it was,
a refresh keeps it past its first TTL, it expires when left alone, DELETE forgets
it; the in-memory store is bounded; a record survives its JSON form and nothing
else passes for one (Hypothesis)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sansio_mcp.runtime import StoreUnavailable, open_stores
from sansio_mcp.runtime._session_store import (
    HandshakeSessionStore,
    MemoryHandshakeSessionStore,
    ReplayBounds,
    SessionRecord,
    handshake_session_store,
)
from tests.auth.test_http import Backend

KINDS = ["memory", "redis"]
STATE = {
    "protocolVersion": "2025-11-25",
    "initialize": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "c", "version": "1"},
    },
}


@asynccontextmanager
async def open_session_store(
    kind: str, backend: Backend, redis_url: str | None
) -> AsyncIterator[tuple[HandshakeSessionStore, Any]]:
    """The store, and the Redis client under it (None in memory)."""
    if kind == "memory":
        yield MemoryHandshakeSessionStore(), None
        return
    assert redis_url is not None
    async with open_stores(
        redis_url, backend.backend, namespace=f"s{time.monotonic_ns()}"
    ) as stores:
        store = handshake_session_store(stores)
        assert store is not None
        yield store, stores


def run(
    kind: str,
    backend: Backend,
    request: pytest.FixtureRequest,
    test: Callable[[HandshakeSessionStore, Any], Awaitable[None]],
) -> None:
    redis_url = request.getfixturevalue("redis_url") if kind == "redis" else None

    async def main() -> None:
        async with open_session_store(kind, backend, redis_url) as (store, stores):
            await test(store, stores)

    backend.run(main)


async def gone(backend: Backend, store: HandshakeSessionStore, session_id: str) -> bool:
    """Whether the record is forgotten within 5 seconds."""
    deadline = time.monotonic() + 5
    while await store.load(session_id, backend.backend.wall_clock()) is not None:
        if time.monotonic() > deadline:
            return False
        await backend.backend.sleep(0.02)
    return True


@pytest.mark.parametrize("kind", KINDS)
def test_a_saved_record_loads_until_it_is_ended(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        now = backend.backend.wall_clock()
        record = SessionRecord("s1", STATE, ("alice", "app"), now, now)
        await store.save(record, 60)
        assert await store.load("s1", now) == record
        assert await store.load("s2", now) is None
        await store.end("s1")
        assert await store.load("s1", now) is None
        await store.end("s1")  # ending twice is no error

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_expires_unless_refreshed(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        clock = backend.backend.wall_clock
        now = clock()
        for session_id in ("kept", "probe"):
            await store.save(SessionRecord(session_id, STATE, None, now, now), 0.5)
        assert await store.refresh("kept", clock(), 30)
        # "probe", saved with "kept" and left alone, expires; the refreshed one lives on.
        assert await gone(backend, store, "probe")
        assert await store.load("kept", clock()) is not None
        assert not await store.refresh("probe", clock(), 30)  # a forgotten record stays so
        assert await store.load("probe", clock()) is None

    run(kind, backend, request, test)


def test_a_malformed_record_in_redis_is_a_store_error(
    backend: Backend, request: pytest.FixtureRequest, redis_url: str
) -> None:
    async def test(store: HandshakeSessionStore, stores: Any) -> None:
        await stores.redis.execute("SET", stores.key("session", "bad"), b"{not json")
        with pytest.raises(StoreUnavailable, match="a session record is malformed"):
            await store.load("bad", backend.backend.wall_clock())

    run("redis", backend, request, test)


def test_the_memory_store_keeps_at_most_max_records(backend: Backend) -> None:
    async def main() -> None:
        store = MemoryHandshakeSessionStore(max_records=2)
        for n in range(3):
            await store.save(SessionRecord(f"s{n}", STATE, None, 0.0, 0.0), 60)
        assert await store.load("s0", 1.0) is None  # the oldest made room
        assert await store.load("s2", 1.0) is not None

    backend.run(main)


principals = st.none() | st.tuples(st.none() | st.text(), st.none() | st.text())
records = st.builds(
    SessionRecord,
    st.text(min_size=1),
    st.dictionaries(st.text(), st.none() | st.integers() | st.text()),
    principals,
    st.floats(0, 2e9),
    st.floats(0, 2e9),
)


@given(records)
def test_a_record_survives_its_json_form(record: SessionRecord) -> None:
    assert SessionRecord.from_json(record.to_json()) == record


@given(st.text() | st.binary())
def test_anything_else_is_refused_as_a_record(text: str | bytes) -> None:
    try:
        record = SessionRecord.from_json(text)
    except ValueError as exc:
        assert str(exc).startswith("not a session record")
    else:  # only what to_json could have written passes
        assert SessionRecord.from_json(record.to_json()) == record


@pytest.mark.parametrize("kind", KINDS)
def test_kept_events_come_back_in_order_bounded_per_stream_and_per_session(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        now = backend.backend.wall_clock()
        bounds = ReplayBounds(ttl=60, memory=3, streams=2)
        first = [("t.s0", n, b"id: t.s0-%d\ndata: {}\n\n" % n) for n in range(5)]
        await store.keep_events("s1", first[:2], now, bounds)
        await store.keep_events("s1", first[2:], now + 1, bounds)
        # The newest 3 of the stream, oldest first, bytes as kept.
        assert await store.events("s1", "t.s0", now) == [(n, first[n][2]) for n in (2, 3, 4)]
        assert await store.events("s1", "t.s9", now) == []
        assert await store.events("s2", "t.s0", now) == []  # another session's
        # Past 2 streams, the least recently active one is forgotten.
        await store.keep_events("s1", [("t.get", 1, b"a")], now + 2, bounds)
        await store.keep_events("s1", [("u.get", 1, b"b")], now + 3, bounds)
        assert await store.events("s1", "t.s0", now + 3) == []
        assert await store.events("s1", "t.get", now + 3) == [(1, b"a")]
        await store.end("s1")
        assert await store.events("s1", "u.get", now + 3) == []

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_the_backlog_is_taken_once_in_order_and_keeps_the_newest(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        now = backend.backend.wall_clock()
        bounds = ReplayBounds(ttl=60, memory=3, streams=1)
        await store.push_backlog("s1", [b"1", b"2"], now, bounds)
        await store.push_backlog("s1", [b"3", b"4"], now, bounds)  # "1" goes: 3 at most
        assert await store.take_backlog("s1", now, bounds) == [b"2", b"3", b"4"]
        assert await store.take_backlog("s1", now, bounds) == []  # taken once
        await store.push_backlog("s1", [b"5"], now, bounds)
        await store.push_backlog("s1", [b"3", b"4"], now, bounds, front=True)  # given back
        assert await store.take_backlog("s1", now, bounds) == [b"3", b"4", b"5"]
        await store.push_backlog("s1", [b"6"], now, bounds)
        await store.end("s1")
        assert await store.take_backlog("s1", now, bounds) == []

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_kept_events_and_the_backlog_expire_with_the_session(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        clock = backend.backend.wall_clock
        short = ReplayBounds(ttl=0.3, memory=3, streams=2)
        # The backlog first: once the events (kept after it) are gone, it is gone too.
        await store.push_backlog("s1", [b"1"], clock(), short)
        await store.keep_events("s1", [("t.get", 1, b"a")], clock(), short)
        deadline = time.monotonic() + 5
        while await store.events("s1", "t.get", clock()):
            assert time.monotonic() < deadline
            await backend.backend.sleep(0.02)
        assert await store.take_backlog("s1", clock(), short) == []

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_a_refresh_keeps_the_sessions_events_and_backlog_with_its_record(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        clock = backend.backend.wall_clock
        now = clock()
        bounds = ReplayBounds(0.5, 10, 4)
        for session_id in ("kept", "probe"):
            await store.save(SessionRecord(session_id, STATE, None, now, now), 0.5)
            await store.keep_events(session_id, [("t.get", 1, b"id: t.get-1\n\n")], now, bounds)
            await store.push_backlog(session_id, [b"{}"], now, bounds)
        assert await store.refresh("kept", clock(), 30)
        assert await gone(backend, store, "probe")
        async with backend.backend.fail_after(5):
            while await store.events("probe", "t.get", clock()):
                await backend.backend.sleep(0.02)
        # What was kept of the refreshed session lives as long as its record.
        assert await store.events("kept", "t.get", clock()) == [(1, b"id: t.get-1\n\n")]
        assert await store.take_backlog("kept", clock(), bounds) == [b"{}"]

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_the_record_keeps_the_latest_stamped_state_whatever_the_order_of_saves(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        now = backend.backend.wall_clock()

        async def save(level: str, stamp: list[Any] | None) -> None:
            state: dict[str, Any] = {**STATE, "logLevel": level}
            if stamp is not None:
                state["stamp"] = stamp
            await store.save(SessionRecord("s", state, None, now, now), 30)

        async def level() -> Any:
            record = await store.load("s", now)
            assert record is not None
            return record.state["logLevel"]

        # Three replicas' changes, written in another order than they were made.
        await save("error", [2.5, "b"])
        await save("info", [1.25, "c"])
        assert await level() == "error"
        await save("debug", [2.5, "a"])  # the same time: the replica id decides
        assert await level() == "error"
        await save("warning", [2.5, "c"])
        assert await level() == "warning"
        await save("notice", None)  # unstamped: the oldest
        assert await level() == "warning"

    run(kind, backend, request, test)


def test_kept_events_are_apart_from_the_dpop_replay_cache_in_redis(
    backend: Backend, request: pytest.FixtureRequest, redis_url: str
) -> None:
    async def test(store: HandshakeSessionStore, stores: Any) -> None:
        now = backend.backend.wall_clock()
        bounds = ReplayBounds(30, 10, 4)
        await store.keep_events("s", [("0a1b2c3d.get", 1, b"id: x\n\n")], now, bounds)
        assert await stores.redis.execute("KEYS", stores.key("replay", "*")) == []
        kept = await stores.redis.execute("KEYS", stores.key("session-replay", "*"))
        assert kept == [stores.key("session-replay", "s", "0a1b2c3d.get").encode()]

    run("redis", backend, request, test)


async def kept_bytes(store: HandshakeSessionStore, stores: Any, session_id: str) -> int | None:
    """What Redis counts of the session's kept events' bytes (None in memory)."""
    if stores is None:
        return None
    size = await stores.redis.execute("HGET", stores.key("replay-bytes", session_id), ":events")
    return int(size or 0)


@pytest.mark.parametrize("kind", KINDS)
def test_past_the_byte_bound_the_sessions_oldest_events_go_first(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, stores: Any) -> None:
        now = backend.backend.wall_clock()
        bounds = ReplayBounds(ttl=60, memory=10, streams=4, max_bytes=10)

        async def held() -> dict[str, list[tuple[int, bytes]]]:
            streams = {key: await store.events("s1", key, now) for key in ("t.s0", "t.get", "t.s1")}
            assert await kept_bytes(store, stores, "s1") in (
                None,
                sum(len(chunk) for events in streams.values() for _, chunk in events),
            )
            return {key: events for key, events in streams.items() if events}

        await store.keep_events("s1", [("t.s0", 1, b"aaaa"), ("t.get", 1, b"bbbb")], now, bounds)
        await store.keep_events("s1", [("t.s0", 2, b"cccc")], now, bounds)  # 12 bytes: "aaaa" goes
        assert await held() == {"t.s0": [(2, b"cccc")], "t.get": [(1, b"bbbb")]}
        await store.keep_events("s1", [("t.get", 2, b"dd")], now, bounds)  # 10: all stay
        await store.keep_events("s1", [("t.s1", 1, b"e")], now, bounds)  # the oldest of all goes
        assert await held() == {"t.s0": [(2, b"cccc")], "t.get": [(2, b"dd")], "t.s1": [(1, b"e")]}
        # Larger than the bound: not kept, nor what came before it on its stream (a
        # resumption from event 1 must not skip it), and the other streams stay.
        await store.keep_events("s1", [("t.get", 3, b"x" * 11)], now, bounds)
        assert await held() == {"t.s0": [(2, b"cccc")], "t.s1": [(1, b"e")]}
        await store.keep_events("s1", [("t.get", 4, b"ff")], now, bounds)
        assert await held() == {"t.s0": [(2, b"cccc")], "t.s1": [(1, b"e")], "t.get": [(4, b"ff")]}
        await store.end("s1")
        assert await held() == {}

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_past_the_byte_bound_the_oldest_of_the_backlog_go_first(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(store: HandshakeSessionStore, _stores: Any) -> None:
        now = backend.backend.wall_clock()
        bounds = ReplayBounds(ttl=60, memory=10, streams=1, max_bytes=5)
        await store.push_backlog("s1", [b"12", b"34"], now, bounds)
        await store.push_backlog("s1", [b"56"], now, bounds)  # 6 bytes: "12" goes
        assert await store.take_backlog("s1", now, bounds) == [b"34", b"56"]
        await store.push_backlog("s1", [b"123456", b"7"], now, bounds)  # too large alone
        assert await store.take_backlog("s1", now, bounds) == [b"7"]
        await store.push_backlog("s1", [b"ab", b"cd"], now, bounds)
        await store.push_backlog("s1", [b"xyz"], now, bounds, front=True)  # given back: oldest
        assert await store.take_backlog("s1", now, bounds) == [b"ab", b"cd"]
        # What was taken no longer counts: 5 bytes fit again.
        await store.push_backlog("s1", [b"12345"], now, bounds)
        assert await store.take_backlog("s1", now, bounds) == [b"12345"]

    run(kind, backend, request, test)


STREAM_KEYS = ["t.get", "t.s0", "t.s1", "u.s0"]
#: Batches of events: each a stream (of STREAM_KEYS) and a size.
batches = st.lists(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40)), min_size=1, max_size=5),
    min_size=1,
    max_size=8,
)


def numbered(sizes: list[list[tuple[int, int]]]) -> list[list[tuple[str, int, bytes]]]:
    """The batches as events, each one's bytes unique (its place, then padding)."""
    out, place = [], 0
    for batch in sizes:
        events = []
        for stream, size in batch:
            place += 1
            events.append((STREAM_KEYS[stream], place, (b"%d;" % place).ljust(size, b".")))
        out.append(events)
    return out


@pytest.mark.parametrize("kind", KINDS)
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sizes=batches, bound=st.integers(40, 120))
def test_the_kept_events_are_the_newest_that_fit_the_byte_bound(
    kind: str,
    backend: Backend,
    request: pytest.FixtureRequest,
    sizes: list[list[tuple[int, int]]],
    bound: int,
) -> None:
    """Whatever the events' sizes, the session's kept bytes never pass the bound, and
    what is kept is the newest events that fit (no event alone passes it here)."""

    async def test(store: HandshakeSessionStore, stores: Any) -> None:
        now = backend.backend.wall_clock()
        bounds = ReplayBounds(ttl=60, memory=100, streams=10, max_bytes=bound)
        sent: list[tuple[str, int, bytes]] = []
        for events in numbered(sizes):
            await store.keep_events("s", events, now, bounds)
            sent += events
            newest: list[tuple[str, int, bytes]] = []
            for event in reversed(sent):
                if sum(len(e[2]) for e in newest) + len(event[2]) > bound:
                    break
                newest.insert(0, event)
            streams = {key: await store.events("s", key, now) for key in STREAM_KEYS}
            held = sorted((n, key, chunk) for key, events in streams.items() for n, chunk in events)
            assert held == [(number, key, chunk) for key, number, chunk in newest]
            assert sum(len(chunk) for _, _, chunk in held) <= bound
            assert await kept_bytes(store, stores, "s") in (None, sum(len(e[2]) for e in newest))

    run(kind, backend, request, test)


#: What is done to a session's kept events and backlog: keep a batch of events,
#: push messages (after those waiting or before), take the backlog.
operations = st.lists(
    st.one_of(
        st.tuples(st.just("keep"), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)))),
        st.tuples(st.just("push"), st.lists(st.integers(0, 30), max_size=4), st.booleans()),
        st.tuples(st.just("take")),
    ),
    max_size=12,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=operations,
    memory=st.integers(1, 4),
    streams=st.integers(1, 3),
    bound=st.integers(0, 60),
)
def test_redis_keeps_what_the_memory_store_keeps(
    backend: Backend,
    request: pytest.FixtureRequest,
    ops: list[Any],
    memory: int,
    streams: int,
    bound: int,
) -> None:
    """Every bound at once (per stream, streams, bytes; the backlog's count and bytes),
    events larger than the bound among them: the Redis store ends each step with what
    the in-memory one holds, its count of the bytes true."""
    redis_url = request.getfixturevalue("redis_url")

    async def main() -> None:
        async with open_session_store("redis", backend, redis_url) as (redis, stores):
            memory_store = MemoryHandshakeSessionStore()
            now = backend.backend.wall_clock()
            bounds = ReplayBounds(ttl=60, memory=memory, streams=streams, max_bytes=bound)
            place = 0
            for op in ops:
                if op[0] == "keep":
                    (events,) = numbered([op[1]]) if op[1] else ([],)
                    events = [(k, n + place, c) for k, n, c in events]
                    place += len(events)
                    for store in (memory_store, redis):
                        await store.keep_events("s", events, now, bounds)
                elif op[0] == "push":
                    messages = [b"m" * size for size in op[1]]
                    for store in (memory_store, redis):
                        await store.push_backlog("s", messages, now, bounds, front=op[2])
                else:
                    taken = await memory_store.take_backlog("s", now, bounds)
                    assert await redis.take_backlog("s", now, bounds) == taken
                held = {key: await memory_store.events("s", key, now) for key in STREAM_KEYS}
                assert {key: await redis.events("s", key, now) for key in STREAM_KEYS} == held
                size = sum(len(chunk) for events in held.values() for _, chunk in events)
                assert size <= bound
                assert await kept_bytes(redis, stores, "s") == size

    backend.run(main)


def test_entries_of_another_shape_are_skipped_and_never_count_against_the_bound(
    backend: Backend, request: pytest.FixtureRequest, redis_url: str
) -> None:
    """The layout is ``NUMBER.ORDER SSE-bytes`` only (the project never shipped another):
    an entry without an order, or malformed, is skipped on reading; new events keep
    going after it."""

    async def test(store: HandshakeSessionStore, stores: Any) -> None:
        now = backend.backend.wall_clock()
        name = stores.key("session-replay", "s", "t.s0")
        await stores.redis.execute("RPUSH", name, b"1 id: t.s0-1\n\n", b"x.1 junk")
        await store.keep_events("s", [("t.s0", 2, b"id: t.s0-2\n\n")], now, ReplayBounds(60, 10, 4))
        assert await store.events("s", "t.s0", now) == [(2, b"id: t.s0-2\n\n")]
        # The stream's bound pops them: what is counted stays the bytes held.
        more = [("t.s0", n, b"id: t.s0-%d\n\n" % n) for n in (3, 4)]
        await store.keep_events("s", more, now, ReplayBounds(60, 2, 4))
        held = await store.events("s", "t.s0", now)
        assert [n for n, _ in held] == [2, 3, 4]  # the other entries went first
        sizes = stores.key("replay-bytes", "s")
        counted = int(await stores.redis.execute("HGET", sizes, ":events"))
        assert counted == sum(len(chunk) for _, chunk in held)

    run("redis", backend, request, test)


@pytest.mark.parametrize("left", [0, 1])
def test_taking_the_backlog_never_leaves_its_size_without_a_ttl(
    backend: Backend, request: pytest.FixtureRequest, redis_url: str, left: int
) -> None:
    """The sizes' hash expired while the backlog lived on: a take does not bring it
    back without a TTL (it would outlive the session), whether messages are left."""

    async def test(store: HandshakeSessionStore, stores: Any) -> None:
        now = backend.backend.wall_clock()
        backlog, sizes = stores.key("backlog", "s"), stores.key("replay-bytes", "s")
        await stores.redis.execute("RPUSH", backlog, *[b"{}"] * (2 + left))
        await stores.redis.execute("PEXPIRE", backlog, 60_000)
        assert await store.take_backlog("s", now, ReplayBounds(60, 2, 4)) == [b"{}"] * 2
        assert await stores.redis.execute("PTTL", sizes) != -1  # none (-2), or a TTL

    run("redis", backend, request, test)
