"""One replica's queue of store writes and bus messages for shared handshake sessions
(:class:`SharedSessions`): whatever it drops when full, the events kept for
``Last-Event-ID`` still reach the store.  The in-memory and the Redis store alike,
on both backends; the replica's router driven directly."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from sansio_mcp._exchange import Exchange
from sansio_mcp._outbox import Outgoing
from sansio_mcp.http import HTTPRequest, StreamableHTTPServer
from sansio_mcp.runtime import open_stores
from sansio_mcp.runtime._session_store import (
    SESSION_CHANNEL,
    HandshakeSessionStore,
    MemoryHandshakeSessionStore,
    SharedSessions,
    _Follow,
    handshake_session_store,
)
from sansio_mcp_apps.example_server import build_server
from tests.auth.test_http import Backend
from tests.session_replicas.test_adoption import VERSION, begin, get_request, replica
from tests.transports.helpers import post_request, sse_events

KINDS = ["memory", "redis"]


class Hosts:
    """Session hosts that drive nothing (no request runs in these tests)."""

    def begin(self, exchange: Any) -> None:
        pass

    def finish(self, exchange: Any) -> None:
        pass


@asynccontextmanager
async def shared(
    kind: str, backend: Backend, redis_url: str | None, *, running: bool = True, **options: Any
) -> AsyncIterator[tuple[SharedSessions, HandshakeSessionStore, str]]:
    """A replica's shared sessions on a ``kind`` store, running, and one session begun."""
    url = redis_url if kind == "redis" else "memory"
    assert url is not None
    async with open_stores(url, backend.backend, namespace=f"q{time.monotonic_ns()}") as stores:
        store = handshake_session_store(stores) or MemoryHandshakeSessionStore()
        machine = StreamableHTTPServer(build_server().create_session)
        sessions = SharedSessions(machine, Hosts(), stores, store, backend.backend, **options)
        session_id = begin(machine)["mcp-session-id"]
        async with backend.backend.open_task_group() as group:
            if running:
                group.start_soon(sessions.run)
            yield sessions, store, session_id
            group.cancel()


def run(
    kind: str,
    backend: Backend,
    request: pytest.FixtureRequest,
    test: Callable[[str | None], Awaitable[None]],
) -> None:
    redis_url = request.getfixturevalue("redis_url") if kind == "redis" else None
    backend.run(lambda: test(redis_url))


async def until(backend: Backend, check: Callable[[], Awaitable[bool]]) -> None:
    async with backend.backend.fail_after(10):
        while not await check():
            await backend.backend.sleep(0.01)


@pytest.mark.parametrize("kind", KINDS)
def test_a_full_queue_never_stops_events_reaching_the_store(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(redis_url: str | None) -> None:
        async with shared(kind, backend, redis_url, max_queue=2) as (sessions, store, sid):
            for round_ in (1, 2):
                sessions.kept(sid, "t.s0", round_, b"id: t.s0-%d\n\n" % round_)
                for i in range(10):  # a flood of relays: the queue drops its oldest jobs
                    sessions.client_message(sid, {"jsonrpc": "2.0", "id": i, "result": {}})

                async def arrived(count: int = round_) -> bool:
                    kept = await store.events(sid, "t.s0", backend.backend.wall_clock())
                    return len(kept) == count

                await until(backend, arrived)

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_a_backlog_message_no_get_stream_takes_is_dropped_not_cycled(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(redis_url: str | None) -> None:
        async with shared(kind, backend, redis_url) as (sessions, store, sid):
            batch = b'[{"jsonrpc":"2.0","id":1,"result":{}}]'  # a 2025-03-26 batch answer
            note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}'
            now = backend.backend.wall_clock()
            await store.push_backlog(sid, [batch, b"7", note], now, sessions.bounds)
            get = get_request(**{"mcp-session-id": sid, "mcp-protocol-version": VERSION})
            stream = sessions.machine.handle(get)
            await sessions.after(get, stream)
            async with backend.backend.fail_after(10):
                await sessions.drained()
            (sent,) = [e for e in sse_events(stream.take()) if e.data]
            assert json.loads(sent.data)["method"] == "notifications/message"
            assert await store.take_backlog(sid, now, sessions.bounds) == []
            stream.disconnected()

    run(kind, backend, request, test)


def test_a_batch_answer_with_no_stream_is_dropped_not_relayed() -> None:
    machine, relay = replica()
    headers = begin(machine)
    state = machine.sessions.get(headers["mcp-session-id"])
    assert state is not None
    batch = [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    state.route(Outgoing(batch, b""), 10, relay.server_message)
    assert relay.server == []


@pytest.mark.parametrize("kind", KINDS)
def test_backlog_news_of_a_session_not_listened_to_here_queues_nothing(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(redis_url: str | None) -> None:
        async with shared(kind, backend, redis_url, max_queue=2) as (sessions, _, sid):
            heard: list[Any] = []
            bus = sessions.stores.events
            subscription = bus.subscribe(SESSION_CHANNEL, heard.append)
            await bus.settled()
            answer = {"jsonrpc": "2.0", "id": 1, "result": {}}
            sessions.client_message(sid, answer)
            for held in (sid, "another"):  # held without a GET stream, or not at all
                for _ in range(5):
                    sessions._on_bus({"kind": "backlog", "session": held, "from": "Z"})
            # The relay queued before them was not pushed out of the bounded queue.
            async with backend.backend.fail_after(10):
                while not any(m.get("message") == answer for m in heard):
                    await backend.backend.sleep(0.01)
            subscription.close()

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_what_was_queued_for_a_deleted_session_does_not_bring_it_back(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(redis_url: str | None) -> None:
        async with shared(kind, backend, redis_url) as (sessions, store, sid):
            sessions.kept(sid, "t.s0", 1, b"id: t.s0-1\n\n")
            sessions.server_message(sid, {"jsonrpc": "2.0", "method": "notifications/x"})
            delete = HTTPRequest(
                "DELETE",
                "/mcp",
                {"host": "127.0.0.1:8000", "mcp-session-id": sid, "mcp-protocol-version": VERSION},
                b"",
            )
            exchange = sessions.machine.handle(delete)
            assert exchange.status == 200
            await sessions.after(delete, exchange)
            async with backend.backend.fail_after(10):
                await sessions.drained()
            now = backend.backend.wall_clock()
            assert await store.events(sid, "t.s0", now) == []
            assert await store.take_backlog(sid, now, sessions.bounds) == []
            if sessions.stores.redis is not None:
                left = await sessions.stores.redis.execute("KEYS", sessions.stores.key("*"))
                assert left == [], left

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_a_stopping_replica_writes_what_it_queued(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    async def test(redis_url: str | None) -> None:
        async with shared(kind, backend, redis_url, running=False) as (sessions, store, sid):
            sessions.kept(sid, "t.s0", 1, b"id: t.s0-1\n\n")
            sessions.server_message(sid, {"jsonrpc": "2.0", "method": "notifications/x"})
            async with backend.backend.open_task_group() as group:
                group.cancel()  # the stop: the run loop is cancelled, and so is this
                try:
                    await backend.backend.sleep(10)
                finally:
                    await sessions.flush()
            now = backend.backend.wall_clock()
            assert await store.events(sid, "t.s0", now) == [(1, b"id: t.s0-1\n\n")]
            assert len(await store.take_backlog(sid, now, sessions.bounds)) == 1

    run(kind, backend, request, test)


class Token:
    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.client_id = "c"


def test_another_principals_get_touches_no_store(backend: Backend) -> None:
    async def test(_: str | None) -> None:
        async with shared("memory", backend, None) as (sessions, store, sid):
            looked: list[str] = []
            loaded = store.events

            async def events(session_id: str, key: str, now: float) -> Any:
                looked.append(key)
                return await loaded(session_id, key, now)

            store.events = events  # type: ignore[method-assign]
            state = sessions.machine.sessions.get(sid)
            assert state is not None
            state.session.auth = Token("alice")
            headers = {"mcp-session-id": sid, "last-event-id": "0a1b2c3d.get-4"}
            await sessions.before(get_request(**headers), (None, Token("bob")))
            assert looked == []
            await sessions.before(get_request(**headers), (None, Token("alice")))
            assert looked == ["0a1b2c3d.get"]  # its own principal's: looked up

    backend.run(lambda: test(None))


def following(sessions: SharedSessions, sid: str, key: str, seq: int) -> Exchange:
    """A stream here following another copy's stream ``key`` after event ``seq``."""
    stream = Exchange(200, {}, streaming=True)
    stream.seq = seq
    sessions._follows[(sid, key)] = _Follow(stream, sessions.backend.clock() + 60)
    return stream


@pytest.mark.parametrize("kind", KINDS)
def test_announcements_of_a_followed_stream_coalesce_into_one_queued_feed(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    """However fast the copy running the request says ``kept``, a follower holds one
    job of the bounded queue (which could otherwise push out a relayed answer); the
    feed reads the store once, after all of them, and sends each event once."""

    async def test(redis_url: str | None) -> None:
        async with shared(kind, backend, redis_url, running=False) as (sessions, store, sid):
            key = "0a1b2c3d.s1"
            stream = following(sessions, sid, key, 1)
            for _ in range(50):
                sessions._on_bus({"kind": "kept", "session": sid, "from": "Z", "message": key})
            assert len(sessions._queue) == 1
            now = backend.backend.wall_clock()
            note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}'
            chunk = b"event: message\nid: %s-2\ndata: %s\n\n" % (key.encode(), note)
            await store.keep_events(sid, [(key, 2, chunk)], now, sessions.bounds)
            await sessions._work()
            assert stream.take() == chunk and not stream.finished
            sessions._on_bus({"kind": "kept", "session": sid, "from": "Z", "message": key})
            assert len(sessions._queue) == 1  # news after the feed began: queued anew

    run(kind, backend, request, test)


@pytest.mark.parametrize("kind", KINDS)
def test_a_follower_whose_next_event_the_store_dropped_ends_and_says_so(
    kind: str,
    backend: Backend,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Events trimmed from the store before the follower read them are not skipped
    silently: the stream ends (the client resumes it, as any stream whose events were
    dropped), with a warning."""

    async def test(redis_url: str | None) -> None:
        async with shared(kind, backend, redis_url, running=False) as (sessions, store, sid):
            key = "0a1b2c3d.s1"
            stream = following(sessions, sid, key, 1)
            now = backend.backend.wall_clock()
            events = [(key, n, b"id: %s-%d\n\n" % (key.encode(), n)) for n in (3, 4)]
            await store.keep_events(sid, events, now, sessions.bounds)
            sessions._on_bus({"kind": "kept", "session": sid, "from": "Z", "message": key})
            with caplog.at_level(logging.WARNING, "sansio_mcp.http"):
                await sessions._work()
            assert stream.finished and stream.take() == b""
            assert "lost events 2 to 2" in caplog.text

    run(kind, backend, request, test)


@pytest.mark.parametrize("ending", ["cancelled", "relayed-cancel", "deleted"])
def test_a_followed_request_cancelled_or_its_session_deleted_is_followed_no_more(
    ending: str, backend: Backend, redis_url: str
) -> None:
    """A request another replica follows, once cancelled (here, or relayed from that
    replica) or its session deleted, leaves nothing behind in what this replica
    announces (no stale entry waiting for unrelated traffic)."""

    async def test(redis_url: str | None) -> None:
        async with shared("redis", backend, redis_url, running=False) as (sessions, _, sid):
            headers = {"mcp-session-id": sid, "mcp-protocol-version": VERSION}
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}},
            }
            running = sessions.machine.handle(post_request(call, **headers))
            key = running.stream_key
            assert sessions.machine.replicas.running(sid, key)
            sessions._on_bus({"kind": "follow", "session": sid, "from": "Z", "message": key})
            await sessions._work()
            assert sessions._followed == {(sid, key)}
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 2},
            }
            if ending == "relayed-cancel":
                sessions._on_bus({"kind": "client", "session": sid, "from": "Z", "message": cancel})
            else:
                if ending == "cancelled":
                    request_ = post_request(cancel, **headers)
                else:
                    request_ = HTTPRequest(
                        "DELETE", "/mcp", {"host": "127.0.0.1:8000", **headers}, b""
                    )
                await sessions.after(request_, sessions.machine.handle(request_))
            assert not sessions.machine.replicas.running(sid, key)
            assert sessions._followed == set()

    backend.run(lambda: test(redis_url))


def test_the_routers_bounds_are_its_shared_sessions(backend: Backend) -> None:
    """``max_queue`` and ``stop_grace`` given to the router (as ``serve_http``,
    ``MCPApp`` and ``streamable_http_router`` take them) are what its shared sessions
    use; given to ``SharedSessions`` they are set on the router, checked there."""

    async def test() -> None:
        async with open_stores("memory", backend.backend) as stores:
            store = MemoryHandshakeSessionStore()
            machine = StreamableHTTPServer(
                build_server().create_session, max_queue=3, stop_grace=0.25
            )
            sessions = SharedSessions(machine, Hosts(), stores, store, backend.backend)
            assert sessions._queue.maxlen == sessions._events.maxlen == 3
            assert sessions.stop_grace == 0.25
            other = SharedSessions(
                machine, Hosts(), stores, store, backend.backend, max_queue=7, stop_grace=0
            )
            assert other._queue.maxlen == 7 and other.stop_grace == 0.0
            assert (machine.replicas.max_queue, machine.replicas.stop_grace) == (7, 0.0)
            with pytest.raises(ValueError, match=r"^max_queue must be a positive integer"):
                SharedSessions(machine, Hosts(), stores, store, backend.backend, max_queue=0)
            with pytest.raises(ValueError, match=r"^stop_grace must be a finite number"):
                SharedSessions(machine, Hosts(), stores, store, backend.backend, stop_grace=-1)
            # Set on the shared sessions, as before they read it from the router: there.
            other.stop_grace = 1.5
            assert machine.replicas.stop_grace == other.stop_grace == 1.5
            with pytest.raises(ValueError, match=r"^stop_grace must be a finite number"):
                other.stop_grace = math.nan

    backend.run(test)
