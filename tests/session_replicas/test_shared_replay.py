"""``Last-Event-ID`` resumption and the GET stream's backlog shared by replicas: a
client whose SSE stream at replica A broke resumes it at replica B and gets what it
missed, once and in order, then what comes next; a message made while no GET stream
is open anywhere waits in Redis for the next GET stream, at any replica.  Two
replicas in one process on a real Redis, both backends."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
from redis_service import RedisService

from sansio_mcp.http import StreamableHTTPServer
from sansio_mcp.runtime import Context, Server, Stores, open_stores
from sansio_mcp.runtime._backend import Signal
from sansio_mcp.runtime._session_store import HandshakeSessionStore, handshake_session_store
from tests.auth.test_http import Backend
from tests.session_replicas.raw import call, connect
from tests.session_replicas.test_two_replicas import (
    answer_of,
    open_session,
    replica,
    tool_call,
    two_ports,
)
from tests.transports.helpers import RawHTTP

#: The gates ``wait_then`` waits at, by name (both replicas run in this process).
GATES: dict[str, Signal] = {}


def noting_replica(stores: Stores | None, auth: Any = None) -> Server:
    """The test replica, plus ``note`` (a log message for the GET stream, outside any
    request), ``wait_then`` (a log message on its own stream, a wait at a gate, two
    more, its answer) and ``open_gate``."""
    server = replica(stores, auth)

    @server.tool()
    async def note(ctx: Context, text: str) -> str:
        """Say ``text`` on the session's GET stream."""
        ctx.session.send_log_message("info", text)
        await ctx.flush()
        return "noted"

    @server.tool()
    async def wait_then(ctx: Context, gate: str) -> str:
        """Log, wait for ``open_gate(gate)``, log twice more."""
        await ctx.log("info", "before")
        await GATES.setdefault(gate, ctx.new_signal()).wait()
        await ctx.log("info", "after-1")
        await ctx.log("info", "after-2")
        return "through"

    @server.tool()
    async def wait_twice(ctx: Context, first: str, second: str) -> str:
        """Log, wait at gate ``first``, log, wait at ``second``, log."""
        await ctx.log("info", "before")
        await GATES.setdefault(first, ctx.new_signal()).wait()
        await ctx.log("info", "middle")
        await GATES.setdefault(second, ctx.new_signal()).wait()
        await ctx.log("info", "end")
        return "through"

    @server.tool()
    def open_gate(ctx: Context, gate: str) -> str:
        GATES.setdefault(gate, ctx.new_signal()).set()
        return "open"

    return server


@asynccontextmanager
async def replicas(
    backend: Backend, redis_url: str, build: Callable[..., Server] = noting_replica
) -> AsyncIterator[tuple[int, int, HandshakeSessionStore, Stores]]:
    """Replicas A and B on one Redis, and the session store as a third party sees it."""
    namespace = f"rp{time.monotonic_ns()}"
    async with (
        two_ports(backend, redis_url, build=build, namespace=namespace) as (a, b),
        open_stores(redis_url, backend.backend, replica_id="Z", namespace=namespace) as onlooker,
    ):
        store = handshake_session_store(onlooker)
        assert store is not None
        yield a, b, store, onlooker


async def kept(
    backend: Backend, store: HandshakeSessionStore, headers: dict[str, str], key: str, count: int
) -> list[tuple[int, bytes]]:
    """Stream ``key``'s events in the store once there are ``count`` of them (the
    replica writes them as it sends them; a resuming client waits its ``retry``)."""
    session_id = headers["mcp-session-id"]
    async with backend.backend.fail_after(10):
        while len(events := await store.events(session_id, key, time.time())) < count:
            await backend.backend.sleep(0.01)
    return events


async def backlog_length(backend: Backend, stores: Stores, headers: dict[str, str]) -> int:
    assert stores.redis is not None
    length = await stores.redis.execute("LLEN", stores.key("backlog", headers["mcp-session-id"]))
    assert isinstance(length, int)
    return length


async def wait_for_backlog(
    backend: Backend, stores: Stores, headers: dict[str, str], length: int
) -> None:
    async with backend.backend.fail_after(10):
        while await backlog_length(backend, stores, headers) != length:
            await backend.backend.sleep(0.01)


async def noted(backend: Backend, port: int, headers: dict[str, str], text: str) -> None:
    done = await answer_of(backend, port, headers, tool_call(9, "note", {"text": text}))
    assert done["result"]["content"][0]["text"] == "noted", done


async def next_event(backend: Backend, stream: RawHTTP) -> tuple[str | None, Any]:
    """The next data event on ``stream``: its id and its message (None at the end)."""
    async with backend.backend.fail_after(10):
        event = await stream.next_data_event()
    return (None, None) if event is None else (event.id, json.loads(event.data))


@asynccontextmanager
async def opened(backend: Backend, port: int, headers: dict[str, str]) -> AsyncIterator[RawHTTP]:
    """A GET stream at ``port`` (``headers`` may carry ``last-event-id``), open."""
    async with connect(backend.backend, port) as stream:
        await stream.send_request("GET", "/mcp", {**headers, "accept": "text/event-stream"})
        status, _ = await stream.head()
        assert status == 200
        yield stream


def logged(message: Any) -> Any:
    assert message["method"] == "notifications/message", message
    return message["params"]["data"]


async def one_then_broken(backend: Backend, port: int, headers: dict[str, str]) -> str:
    """A GET stream at ``port`` that got the note "one" (made there), then broke: the
    id of "one", what the client resumes from."""
    async with opened(backend, port, headers) as stream:
        await noted(backend, port, headers, "one")
        first, message = await next_event(backend, stream)
        assert logged(message) == "one"
    assert first is not None
    return first


async def waiting_then_broken(
    backend: Backend, port: int, headers: dict[str, str], gate: str
) -> str:
    """``wait_then(gate)`` called at ``port``, its POST stream broken after "before"
    (the call waits on): the id of "before", what the client resumes from."""
    async with connect(backend.backend, port) as stream:
        await stream.send_request(
            "POST", "/mcp", headers, tool_call(2, "wait_then", {"gate": gate})
        )
        assert (await stream.head())[0] == 200
        last, message = await next_event(backend, stream)
        assert logged(message) == "before"
    assert last is not None
    return last


def test_a_get_stream_broken_at_a_resumes_at_b_with_what_it_missed(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with replicas(backend, redis_url) as (a, b, store, _):
            headers = await open_session(backend, a)
            async with opened(backend, a, headers) as stream:
                for text in ("one", "two", "three"):
                    await noted(backend, a, headers, text)
                first, message = await next_event(backend, stream)
                assert logged(message) == "one"
            # The stream broke with "two" and "three" sent but not read.
            assert first is not None
            key = first.rpartition("-")[0]
            assert len(await kept(backend, store, headers, key, 3)) == 3
            resumed = {**headers, "last-event-id": first}
            async with opened(backend, b, resumed) as again:
                ids = []
                for expected in ("two", "three"):
                    event_id, message = await next_event(backend, again)
                    assert logged(message) == expected
                    ids.append(event_id)
                # Then it goes on: B's own notes, and A's (A's stream is gone).
                await noted(backend, b, headers, "four")
                await noted(backend, a, headers, "five")
                for expected in ("four", "five"):
                    event_id, message = await next_event(backend, again)
                    assert logged(message) == expected
                    ids.append(event_id)
            # Every id is the session's once: none of B's repeats one of A's.
            assert len({first, *ids}) == 5, ids

    backend.run(main)


def test_a_post_stream_broken_at_a_is_resumed_at_b_to_its_answer(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        gate = f"g{time.monotonic_ns()}"
        async with replicas(backend, redis_url) as (a, b, store, _):
            headers = await open_session(backend, a)
            last = await waiting_then_broken(backend, a, headers, gate)
            # The call goes on at A after its stream broke; what it says is kept.
            opened_ = await answer_of(
                backend, a, headers, tool_call(3, "open_gate", {"gate": gate})
            )
            assert opened_["result"]["content"][0]["text"] == "open"
            key = last.rpartition("-")[0]
            await kept(backend, store, headers, key, 5)  # priming, before, 2 logs, answer
            async with opened(backend, b, {**headers, "last-event-id": last}) as again:
                _, one = await next_event(backend, again)
                _, two = await next_event(backend, again)
                _, answer = await next_event(backend, again)
                assert [logged(one), logged(two)] == ["after-1", "after-2"]
                assert answer["id"] == 2 and "through" in str(answer["result"]), answer
                assert await next_event(backend, again) == (None, None)  # the stream had ended

    backend.run(main)


def test_what_no_get_stream_heard_waits_for_the_next_one_at_any_replica(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with replicas(backend, redis_url) as (a, b, _, stores):
            headers = await open_session(backend, a)
            await noted(backend, a, headers, "made at A")
            await wait_for_backlog(backend, stores, headers, 1)
            await noted(backend, b, headers, "made at B")
            await wait_for_backlog(backend, stores, headers, 2)
            async with opened(backend, b, headers) as stream:
                for expected in ("made at A", "made at B"):
                    _, message = await next_event(backend, stream)
                    assert logged(message) == expected
                await wait_for_backlog(backend, stores, headers, 0)  # taken, once
                # With the stream open at B, A's next note goes there too.
                await noted(backend, a, headers, "later at A")
                _, message = await next_event(backend, stream)
                assert logged(message) == "later at A"
            status, _, _ = await call(backend.backend, a, "DELETE", headers)
            assert status == 200

    backend.run(main)


def test_with_redis_down_resumption_and_the_backlog_work_at_the_replica_alone(
    backend: Backend, redis_service: RedisService
) -> None:
    async def main() -> None:
        async with replicas(backend, redis_service.url) as (a, _, _, _):
            headers = await open_session(backend, a)
            redis_service.stop()
            async with backend.backend.fail_after(20):
                async with opened(backend, a, headers) as stream:
                    for text in ("one", "two"):
                        await noted(backend, a, headers, text)
                    first, message = await next_event(backend, stream)
                    assert logged(message) == "one"
                assert first is not None
                # Made once the stream broke: it waits at A (in its backlog, or among the
                # events of the stream, if A had not yet seen it break).
                await noted(backend, a, headers, "three")
                async with opened(backend, a, {**headers, "last-event-id": first}) as again:
                    for expected in ("two", "three"):
                        _, message = await next_event(backend, again)
                        assert logged(message) == expected

    backend.run(main)


def test_a_get_stream_resumed_at_b_and_broken_again_loses_nothing_of_b(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with replicas(backend, redis_url) as (a, b, _, _):
            headers = await open_session(backend, a)
            last = await one_then_broken(backend, a, headers)
            async with opened(backend, b, {**headers, "last-event-id": last}) as again:
                await noted(backend, b, headers, "two")
                # The client reads up to B's note and the stream breaks before it: its
                # Last-Event-ID is the last id it read, whatever stream it names.
                async with backend.backend.fail_after(10):
                    while (event := await again.next_sse()) is not None:
                        if event.data:
                            assert logged(json.loads(event.data)) == "two"
                            break
                        if event.id is not None:
                            last = event.id
            async with opened(backend, b, {**headers, "last-event-id": last}) as resumed:
                _, message = await next_event(backend, resumed)
                assert logged(message) == "two"
                await noted(backend, b, headers, "three")
                _, message = await next_event(backend, resumed)
                assert logged(message) == "three"  # and "two" came once

    backend.run(main)


@asynccontextmanager
async def tuned_replica(
    backend: Backend, redis_url: str, name: str, namespace: str, **options: Any
) -> AsyncIterator[tuple[int, Stores]]:
    """Replica ``name`` whose router's ``replicas`` have ``options`` set
    (``replay_bytes``, ``follow_check``): its port and its stores."""
    async with open_stores(
        redis_url, backend.backend, replica_id=name, namespace=namespace
    ) as stores:
        server = noting_replica(stores)
        router = StreamableHTTPServer(server.create_session)
        for option, value in options.items():
            setattr(router.replicas, option, value)
        serve = partial(backend.http_server.serve_router, server, router, port=0)
        async with backend.serving(serve) as port:
            yield port, stores


@asynccontextmanager
async def tuned_replicas(
    backend: Backend, redis_url: str, **options: Any
) -> AsyncIterator[tuple[int, int, HandshakeSessionStore]]:
    """Replicas A and B so tuned (:func:`tuned_replica`), and the store."""
    namespace = f"rt{time.monotonic_ns()}"
    async with (
        tuned_replica(backend, redis_url, "A", namespace, **options) as (a, _),
        tuned_replica(backend, redis_url, "B", namespace, **options) as (b, stores),
    ):
        store = handshake_session_store(stores)
        assert store is not None
        yield a, b, store


def test_past_the_byte_bound_a_resumption_at_b_replays_from_the_oldest_event_kept(
    backend: Backend, redis_url: str
) -> None:
    """A's GET stream broke after its first event; Redis kept only the newest of the
    session's events (``replay_bytes``): B replays the GET stream from its oldest
    event kept, what a replica gives when its own memory dropped the event named."""

    async def main() -> None:
        async with tuned_replicas(backend, redis_url, replay_bytes=400) as (a, b, store):
            headers = await open_session(backend, a)
            texts = [f"n{i}" for i in range(1, 7)]
            async with opened(backend, a, headers) as stream:
                for text in texts:
                    await noted(backend, a, headers, text)
                first, message = await next_event(backend, stream)
                assert logged(message) == "n1"
            assert first is not None
            key = first.rpartition("-")[0]
            session_id = headers["mcp-session-id"]
            async with backend.backend.fail_after(10):  # A's writes reached Redis
                while True:
                    last = await store.events(session_id, key, time.time())
                    if last and b'"n6"' in last[-1][1]:
                        break
                    await backend.backend.sleep(0.01)
            assert 0 < len(last) < 5  # the oldest GET events went
            async with opened(backend, b, {**headers, "last-event-id": first}) as again:
                replayed = []
                for _ in last:
                    _, message = await next_event(backend, again)
                    replayed.append(logged(message))
                assert replayed == texts[-len(last) :]
                await noted(backend, b, headers, "n7")  # then it goes on
                _, message = await next_event(backend, again)
                assert logged(message) == "n7"

    backend.run(main)


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
def test_a_client_before_2025_11_25_taken_over_at_b_gets_an_id_of_b_at_once(
    backend: Backend, redis_url: str, version: str
) -> None:
    """Such a client takes no event without data, so B's GET stream, resuming A's with
    nothing to replay, opens with a ``ping`` of B's id: the stream broken again with
    B's note sent but unread, the client resumes with that id (at A) and gets the note.
    Resumed with A's id, the note would be lost: A's stream has nothing after it."""

    async def main() -> None:
        async with replicas(backend, redis_url) as (a, b, store, _):
            headers = await open_session(backend, a, version=version)
            first = await one_then_broken(backend, a, headers)
            async with opened(backend, b, {**headers, "last-event-id": first}) as again:
                ping_id, ping = await next_event(backend, again)
                assert ping["method"] == "ping" and ping_id is not None, ping
                # The first event of a GET stream of another copy than A's: B's.
                ping_key, _, number = ping_id.rpartition("-")
                assert ping_key.endswith(".get") and number == "1"
                assert ping_key.partition(".")[0] != first.partition(".")[0]
                await noted(backend, b, headers, "two")  # sent, never read
            # The client answers the ping at A: dropped, as B asked and forgot it.
            answer = {"jsonrpc": "2.0", "id": ping["id"], "result": {}}
            status, _, _ = await call(backend.backend, a, "POST", headers, answer)
            assert status == 202
            ping_kept, _ = await kept(backend, store, headers, ping_key, 2)
            # B kept the ping under its own id: the stream the client's id names is B's.
            assert ping_kept[0] == 1 and f"id: {ping_id}\n".encode() in ping_kept[1]
            assert b'"method":"ping"' in ping_kept[1].replace(b" ", b"")
            async with opened(backend, a, {**headers, "last-event-id": ping_id}) as resumed:
                _, message = await next_event(backend, resumed)
                assert logged(message) == "two"

    backend.run(main)


def test_a_2025_11_25_client_taken_over_at_b_gets_the_id_only_event_and_no_ping(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with replicas(backend, redis_url) as (a, b, _, _):
            headers = await open_session(backend, a)
            first = await one_then_broken(backend, a, headers)
            async with opened(backend, b, {**headers, "last-event-id": first}) as again:
                async with backend.backend.fail_after(10):
                    marked = await again.next_sse()
                assert marked is not None and marked.id is not None and not marked.data
                await noted(backend, b, headers, "two")
                _, message = await next_event(backend, again)
                assert logged(message) == "two"  # nothing came between

    backend.run(main)


def test_a_post_stream_resumed_at_b_while_its_request_runs_at_a_goes_on_live(
    backend: Backend, redis_url: str
) -> None:
    """B replays what Redis kept of A's POST stream, then stays open: what the request
    says next at A, and its answer, reach B's stream as A keeps them (A tells the bus
    once they are in Redis), then it ends.  The check is far off: only that news
    brings them."""

    async def main() -> None:
        gate = f"g{time.monotonic_ns()}"
        async with tuned_replicas(backend, redis_url, follow_check=60.0) as (a, b, store):
            headers = await open_session(backend, a)
            last = await waiting_then_broken(backend, a, headers, gate)
            await kept(backend, store, headers, last.rpartition("-")[0], 2)  # priming, before
            async with opened(backend, b, {**headers, "last-event-id": last}) as again:
                opened_ = await answer_of(
                    backend, a, headers, tool_call(3, "open_gate", {"gate": gate})
                )
                assert opened_["result"]["content"][0]["text"] == "open"
                ids = []
                for expected in ("after-1", "after-2"):
                    event_id, message = await next_event(backend, again)
                    assert logged(message) == expected
                    ids.append(event_id)
                event_id, answer = await next_event(backend, again)
                assert answer["id"] == 2 and "through" in str(answer["result"]), answer
                assert await next_event(backend, again) == (None, None)  # answered: it ends
            # A's ids, in order after the one resumed from: resumable anywhere.
            numbers = [int(i.rpartition("-")[2]) for i in [last, *ids, event_id] if i]
            assert numbers == sorted(set(numbers)) and len(numbers) == 4

    backend.run(main)


def test_a_post_stream_followed_at_b_ends_once_a_no_longer_runs_its_request(
    backend: Backend, redis_url: str
) -> None:
    """The call is cancelled (at B, relayed to A): nothing more will come, so B, asking
    A after its check interval, hears that A no longer runs it and ends the stream:
    no sooner (the stream followed; a resumption not followed would end at once)."""

    async def main() -> None:
        gate = f"g{time.monotonic_ns()}"
        check = 0.5
        async with tuned_replicas(backend, redis_url, follow_check=check) as (a, b, store):
            headers = await open_session(backend, a)
            last = await waiting_then_broken(backend, a, headers, gate)
            await kept(backend, store, headers, last.rpartition("-")[0], 2)
            began = backend.backend.clock()
            async with opened(backend, b, {**headers, "last-event-id": last}) as again:
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 2},
                }
                status, _, _ = await call(backend.backend, b, "POST", headers, cancel)
                assert status == 202
                assert await next_event(backend, again) == (None, None)
                assert backend.backend.clock() - began >= check

    backend.run(main)


def test_a_post_stream_followed_at_b_ends_when_a_is_gone(backend: Backend, redis_url: str) -> None:
    """A stops while B follows its stream: B's question goes unanswered, and after as
    long again the stream ends (the client resumes it, or gives up), never held open
    for good; but no sooner than the check (the stream followed, as A could have
    been alive: a resumption not followed would end at once)."""

    async def main() -> None:
        gate = f"g{time.monotonic_ns()}"
        namespace = f"rg{time.monotonic_ns()}"
        check = 0.5
        async with tuned_replica(backend, redis_url, "B", namespace, follow_check=check) as (
            b,
            stores,
        ):
            store = handshake_session_store(stores)
            assert store is not None
            async with tuned_replica(backend, redis_url, "A", namespace) as (a, _):
                headers = await open_session(backend, a)
                last = await waiting_then_broken(backend, a, headers, gate)
                await kept(backend, store, headers, last.rpartition("-")[0], 2)
            began = backend.backend.clock()
            async with opened(backend, b, {**headers, "last-event-id": last}) as again:
                assert await next_event(backend, again) == (None, None)
                # Asked once after the check, unanswered as long again.
                assert backend.backend.clock() - began >= 2 * check - 0.05

    backend.run(main)


def test_a_post_stream_followed_at_b_and_resumed_there_again_goes_on_the_later_one(
    backend: Backend, redis_url: str
) -> None:
    """As one replica ends an earlier resumption of a stream resumed again, B ends its
    first follower, and the second carries the rest."""

    async def main() -> None:
        gate = f"g{time.monotonic_ns()}"
        async with tuned_replicas(backend, redis_url, follow_check=60.0) as (a, b, store):
            headers = await open_session(backend, a)
            last = await waiting_then_broken(backend, a, headers, gate)
            await kept(backend, store, headers, last.rpartition("-")[0], 2)
            resumed = {**headers, "last-event-id": last}
            async with opened(backend, b, resumed) as first, opened(backend, b, resumed) as second:
                assert await next_event(backend, first) == (None, None)
                await answer_of(backend, a, headers, tool_call(3, "open_gate", {"gate": gate}))
                for expected in ("after-1", "after-2"):
                    _, message = await next_event(backend, second)
                    assert logged(message) == expected
                _, answer = await next_event(backend, second)
                assert answer["id"] == 2, answer
                assert await next_event(backend, second) == (None, None)

    backend.run(main)


def test_a_client_before_2025_11_25_gets_the_replay_then_a_ping_of_b(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with replicas(backend, redis_url) as (a, b, store, _):
            headers = await open_session(backend, a, version="2025-06-18")
            async with opened(backend, a, headers) as stream:
                for text in ("one", "two"):
                    await noted(backend, a, headers, text)
                first, message = await next_event(backend, stream)
                assert logged(message) == "one"
            assert first is not None
            key = first.rpartition("-")[0]
            await kept(backend, store, headers, key, 2)
            async with opened(backend, b, {**headers, "last-event-id": first}) as again:
                replayed_id, message = await next_event(backend, again)
                assert logged(message) == "two" and replayed_id is not None
                assert replayed_id.startswith(key)  # A's, replayed
                ping_id, ping = await next_event(backend, again)
                assert ping["method"] == "ping" and ping_id is not None
                assert not ping_id.startswith(key)  # B's own, at once
                await noted(backend, b, headers, "three")
                three_id, message = await next_event(backend, again)
                assert logged(message) == "three" and three_id is not None
                assert three_id.rpartition("-")[0] == ping_id.rpartition("-")[0]

    backend.run(main)


def test_a_post_stream_followed_at_b_goes_on_live_while_a_still_holds_its_connection(
    backend: Backend, redis_url: str
) -> None:
    """A has not seen its stream break (the client's connection to it still open, not
    read: a half-open one): what the request says next goes to that connection and
    into Redis, and B, following the stream, carries it live all the same, each part
    as it comes (the check is far off)."""

    async def main() -> None:
        first, second = f"g1{time.monotonic_ns()}", f"g2{time.monotonic_ns()}"
        async with tuned_replicas(backend, redis_url, follow_check=60.0) as (a, b, store):
            headers = await open_session(backend, a)
            call_ = tool_call(2, "wait_twice", {"first": first, "second": second})
            async with connect(backend.backend, a) as stream:
                await stream.send_request("POST", "/mcp", headers, call_)
                assert (await stream.head())[0] == 200
                last, message = await next_event(backend, stream)
                assert logged(message) == "before" and last is not None
                await kept(backend, store, headers, last.rpartition("-")[0], 2)
                async with opened(backend, b, {**headers, "last-event-id": last}) as again:
                    for gate, expected in ((first, "middle"), (second, "end")):
                        await answer_of(
                            backend, a, headers, tool_call(3, "open_gate", {"gate": gate})
                        )
                        _, message = await next_event(backend, again)
                        assert logged(message) == expected
                    _, answer = await next_event(backend, again)
                    assert answer["id"] == 2, answer
                    assert await next_event(backend, again) == (None, None)

    backend.run(main)
