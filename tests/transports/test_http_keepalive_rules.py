"""The client's connection-reuse rules, sans-IO: :class:`ConnectionPool` and
:class:`RoundTrip` driven the way the adapters drive them, against scripted
servers (h11 on the other end) that answer, say ``Connection: close``, close an
idle connection, die before or during an answer, or send garbage.

The property: whatever the servers do, every request ends exactly once (its
answer ended, or it failed); it is sent again only after a reused connection
died before any byte of its answer, at most once, and then on a fresh
connection; only cleanly finished keep-alive connections are kept, never more
than the pool's limit; and closing the pool hands back every kept connection.
"""

from __future__ import annotations

import json
from typing import Any

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp._http import HTTPResponseHead
from sansio_mcp._http_pool import ConnectionPool
from sansio_mcp._streamable_http_client import Endpoint, ResponseHandler, RoundTrip, SendOrder

ENDPOINT = Endpoint.parse("http://127.0.0.1:8000/mcp")
ANSWER = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode()

#: What the server does with the request an attempt sends.
FATES = (
    "ok",  # answers, keeps the connection alive
    "close",  # answers with Connection: close
    "idle-closed",  # had closed the connection while it sat idle (a reused one only)
    "silent",  # reads the request, closes without a byte of answer
    "cut",  # answer head and half its body, then closes
    "garbage",  # something that is not HTTP
)


class Recorder(ResponseHandler):
    """A ResponseHandler that only records what the round trip told it."""

    def __init__(self) -> None:
        super().__init__(None, None, max_body=1 << 20)  # type: ignore[arg-type]
        self.outcomes: list[str] = []
        self.body = b""

    def on_head(self, head: HTTPResponseHead) -> None:
        self.head = head

    def on_body(self, chunk: bytes) -> bool:
        self.body += chunk
        return False

    def on_end(self) -> None:
        self.outcomes.append("ended")

    def on_failure(self, detail: str) -> None:
        self.outcomes.append(f"failed: {detail}")


class FakeStream:
    """One TCP connection: the server's h11 side and what it will do next."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.server = h11.Connection(h11.SERVER)
        self.closed = False
        self.served = 0
        self.dead = False  # the server closed it

    def exchange(self, request: bytes, fate: str) -> list[bytes]:
        """What the client reads after sending ``request`` (b"" is the end of the connection)."""
        assert not self.closed, "the client sent on a connection it had closed"
        if self.dead or fate == "idle-closed":
            return [b""]
        self.server.receive_data(request)
        while not isinstance(self.server.next_event(), h11.EndOfMessage):
            pass
        self.served += 1
        if fate == "silent":
            self.dead = True
            return [b""]
        if fate == "garbage":
            self.dead = True
            return [b"\x00\x01 not HTTP at all\r\n\r\n", b""]
        headers = [("content-type", "application/json"), ("content-length", str(len(ANSWER)))]
        if fate == "close":
            headers.append(("connection", "close"))
        head = self.server.send(h11.Response(status_code=200, headers=headers)) or b""
        if fate == "cut":
            self.dead = True
            return [head + ANSWER[:5], b""]
        body = self.server.send(h11.Data(data=ANSWER)) or b""
        body += self.server.send(h11.EndOfMessage()) or b""
        if fate == "close":
            self.dead = True
            return [head, body, b""]
        self.server.start_next_cycle()
        return [head, body]


def drive(
    pool: ConnectionPool[FakeStream],
    fates: list[str],
    log: list[dict[str, Any]],
    streams: list[FakeStream],
) -> Recorder:
    """One request as the adapters send it: ``fates[i]`` is what meets attempt ``i``;
    every connection opened is appended to ``streams``."""
    response = Recorder()
    trip: RoundTrip[FakeStream] = RoundTrip(pool, ENDPOINT, response, "POST", {}, b"{}")
    attempts = iter(fates)
    while trip.attempt():
        fate = next(attempts)
        conn = trip.idle_connection()
        reused = conn is not None
        if conn is None:
            streams.append(FakeStream(len(streams) + 1))
            conn = trip.connected(streams[-1])
        elif fate == "idle-closed":
            conn.stream.dead = True
        if not reused and fate == "idle-closed":
            fate = "ok"  # a fresh connection cannot have been closed as idle
        before = conn.http.reused
        for data in conn.stream.exchange(trip.request_bytes(), fate):
            trip.feed(data)
            if trip.done:
                break
        assert trip.done
        log.append({"fate": fate, "reused": before, "stream": conn.stream.number})
        if not trip.release():
            conn.stream.closed = True
    return response


@settings(max_examples=400, deadline=None)
@given(
    requests=st.lists(
        st.tuples(st.sampled_from(FATES), st.sampled_from(FATES)), min_size=1, max_size=12
    ),
    max_idle=st.integers(min_value=0, max_value=2),
)
def test_reuse_and_retry_rules(requests: list[tuple[str, str]], max_idle: int) -> None:
    pool: ConnectionPool[FakeStream] = ConnectionPool(max_idle=max_idle)
    streams: list[FakeStream] = []
    for first, retry in requests:
        log: list[dict[str, Any]] = []
        response = drive(pool, [first, retry], log, streams)
        # Exactly one outcome per request.
        assert len(response.outcomes) == 1, response.outcomes
        # A second attempt only after a reused connection died before any answer,
        # and then on a fresh connection.
        assert len(log) in (1, 2)
        if len(log) == 2:
            assert log[0]["reused"] and log[0]["fate"] in ("idle-closed", "silent")
            assert not log[1]["reused"] and log[1]["stream"] != log[0]["stream"]
        else:
            assert not (log[0]["reused"] and log[0]["fate"] in ("idle-closed", "silent"))
        last = log[-1]["fate"]
        if last in ("ok", "close"):
            assert response.outcomes == ["ended"] and response.body == ANSWER
        elif last == "cut":
            assert response.outcomes == ["ended"] and response.body == ANSWER[:5]
        else:
            assert response.outcomes[0].startswith("failed: ")
        # Kept: at most max_idle connections, each alive and ready for a request.
        assert len(pool) <= max_idle
        kept = [s for s in streams if not s.closed]
        assert len(kept) == len(pool)
        assert all(not s.dead and s.server.our_state is h11.IDLE for s in kept)
    handed_back = pool.close()
    assert sorted(s.number for s in handed_back) == sorted(
        s.number for s in streams if not s.closed
    )
    assert len(pool) == 0
    # A closed pool keeps nothing more.
    drive(pool, ["ok", "ok"], [], streams)
    assert len(pool) == 0


def test_a_dead_connection_is_retried_once_only() -> None:
    pool: ConnectionPool[FakeStream] = ConnectionPool()
    log: list[dict[str, Any]] = []
    streams: list[FakeStream] = []
    assert drive(pool, ["ok"], log, streams).outcomes == ["ended"]
    assert len(pool) == 1
    response = drive(pool, ["idle-closed", "silent"], log, streams)  # the retry dies too
    assert response.outcomes == ["failed: the server closed the connection without answering"]
    assert [entry["reused"] for entry in log[1:]] == [True, False]
    assert len(pool) == 0


# The order requests leave in ----------------------------------------------------------------


class FakeSignal:
    def __init__(self) -> None:
        self.is_set = False

    def set(self) -> None:
        self.is_set = True

    async def wait(self) -> None:  # pragma: no cover - never awaited here
        raise AssertionError


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_requests_leave_in_the_order_they_were_queued(data: st.DataObject) -> None:
    """Tickets taken in queue order; requests become ready (their connection open) and
    finish (sent, or given up before sending) in any order: a request is sent only on
    its turn, so the sent ones leave in ticket order, and nobody waits forever (a
    waiting request's signal is set exactly when its turn comes)."""
    order = SendOrder(FakeSignal)
    count = data.draw(st.integers(min_value=1, max_value=12))
    tickets = [order.ticket() for _ in range(count)]
    assert tickets == list(range(count))
    gives_up = data.draw(st.sets(st.sampled_from(tickets)))
    signals: dict[int, Any] = {}
    for ticket in tickets:
        signal = order.turn(ticket)
        assert (signal is None) == (ticket == 0)
        if signal is not None:
            signals[ticket] = signal
    waiting = set(tickets)
    sent: list[int] = []
    while waiting:
        ready = sorted(t for t in waiting if order.turn_of(t) or t in gives_up)
        assert ready, "every request waits for another: a deadlock"
        for t in waiting:
            if t in signals:
                assert signals[t].is_set == order.turn_of(t)
        ticket = data.draw(st.sampled_from(ready))
        waiting.discard(ticket)
        if ticket not in gives_up:
            assert order.turn_of(ticket)
            sent.append(ticket)
        order.done(ticket)
        order.done(ticket)  # twice is harmless
    assert sent == sorted(sent)
    assert sent == [t for t in tickets if t not in gives_up]
    assert order.turn(order.ticket()) is None
