"""Resuming a handshake session's POST stream with ``Last-Event-ID``, sans-IO (the
Streamable HTTP server machine alone, the handler played by hand).

However often the client's stream breaks, and whatever it lost in flight, a GET
with the last event id it saw yields the rest: every message of the request
exactly once, in order, the answer last.  What is kept for resumption stays
bounded over a long session, and a cancelled request's stream ends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import RequestReceived
from sansio_mcp._handshake_sessions import HandshakeSession
from sansio_mcp._http import HTTPRequest
from sansio_mcp._outbox import Outgoing
from sansio_mcp._sse import SSEParser
from sansio_mcp._streamable_http import Exchange, StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server

from .helpers import open_machine_session, post_request, received_request


def get(last_event_id: str | None, **headers: str) -> HTTPRequest:
    """A GET for the session's stream, resuming after ``last_event_id`` if given."""
    headers = {"host": "127.0.0.1:8000", "accept": "text/event-stream", **headers}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    return HTTPRequest("GET", "/mcp", headers, b"")


def call(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"message": "x"},
            "_meta": {"progressToken": f"p{request_id}"},
        },
    }


def start_call(
    version: str, request_id: int
) -> tuple[StreamableHTTPServer, dict[str, str], Exchange, RequestReceived]:
    """A handshake session on a fresh machine with one call POSTed and its stream
    open: the machine, the session's headers, the call's exchange and request."""
    machine = StreamableHTTPServer(build_server().create_session)
    headers = open_machine_session(machine, version)
    exchange = machine.handle(post_request(call(request_id), **headers))
    assert exchange.session is not None
    request = received_request(exchange.session)
    exchange.commit_head()
    return machine, headers, exchange, request


def call_through(
    machine: StreamableHTTPServer, headers: dict[str, str], request_id: int
) -> Exchange:
    """POST a call on the session and answer it at once, after one progress
    notification (so its stream has events to keep)."""
    exchange = machine.handle(post_request(call(request_id), **headers))
    assert exchange.session is not None
    request = received_request(exchange.session)
    exchange.commit_head()
    exchange.session.send_progress(request.request_id, 1)
    exchange.session.respond(request.request_id, {"content": []})
    machine.flush(exchange.session)
    return exchange


class Reader:
    """The client's side of one stream: the messages and the last event id it saw."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.last_event_id: str | None = None

    def read(self, exchange: Exchange) -> None:
        parser = SSEParser()  # a stream's bytes start at an event boundary
        parser.feed(exchange.take())
        while not isinstance(event := parser.next_event(), type):
            if event.id is not None:
                self.last_event_id = event.id
            if event.data:
                self.messages.append(json.loads(event.data))


@settings(max_examples=300, deadline=None)
@given(
    version=st.sampled_from(["2025-11-25", "2025-06-18", "2025-03-26"]),
    notes=st.integers(min_value=1, max_value=5),
    # Before each output and after the last: whether the stream breaks there, and
    # whether the client had read what was sent so far (else those bytes are lost).
    breaks=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=7, max_size=7),
)
def test_every_message_once_in_order_however_the_stream_breaks(
    version: str, notes: int, breaks: list[tuple[bool, bool]]
) -> None:
    machine, headers, exchange, request = start_call(version, 7)
    session = exchange.session
    assert session is not None
    reader = Reader()

    outputs: list[int | None] = [*range(1, notes + 1), None]  # progress, then the answer
    for index in range(len(outputs) + 1):
        broken, read_first = breaks[index]
        if read_first or not broken:
            reader.read(exchange)
        if broken and reader.last_event_id is not None:
            exchange.disconnected()  # unread bytes are lost with the connection
            exchange = machine.handle(get(reader.last_event_id, **headers))
            assert exchange.status == 200 and exchange.streaming
        if index == len(outputs):
            break
        step = outputs[index]
        if step is None:
            session.respond(request.request_id, {"content": [{"type": "text", "text": "x"}]})
        else:
            session.send_progress(request.request_id, step)
        machine.flush(session)
    reader.read(exchange)
    assert exchange.finished

    progress = [m["params"]["progress"] for m in reader.messages if "method" in m]
    assert progress == list(range(1, notes + 1))
    assert [m.get("id") for m in reader.messages if "method" not in m] == [7]
    assert "result" in reader.messages[-1]


def test_a_stream_broken_before_its_answer_keeps_the_answer_for_resumption() -> None:
    machine, headers, exchange, request = start_call("2025-11-25", 3)
    session = exchange.session
    assert session is not None
    reader = Reader()
    reader.read(exchange)
    assert reader.last_event_id == "s0-0"  # the priming event
    exchange.disconnected()

    session.send_progress(request.request_id, 1)
    session.respond(request.request_id, {"content": []})
    machine.flush(session)
    backlog = machine.handle(get(None, **headers))
    assert backlog.take() == b""  # the progress is the request's, not the GET stream's

    resumed = machine.handle(get("s0-0", **headers))
    reader.read(resumed)
    assert resumed.finished
    assert [m.get("method", m.get("id")) for m in reader.messages] == [
        "notifications/progress",
        3,
    ]
    assert reader.last_event_id == "s0-2"


def test_what_is_kept_for_resumption_stays_bounded() -> None:
    machine = StreamableHTTPServer(build_server().create_session, replay_streams=8)
    headers = open_machine_session(machine, "2025-11-25")
    pending = machine.handle(post_request(call(0), **headers))  # never answered
    session = pending.session
    assert session is not None
    first = received_request(session)
    pending.commit_head()
    pending.disconnected()
    for request_id in range(1, 200):
        assert call_through(machine, headers, request_id).finished
    [state] = machine.sessions
    assert len(state.replay) == 8
    # The newest finished streams and the one still unanswered are kept.
    assert {"s0", "s199"} <= set(state.replay)
    session.respond(first.request_id, {"content": []})
    machine.flush(session)
    reader = Reader()
    reader.read(machine.handle(get("s0-0", **headers)))
    assert [m.get("id") for m in reader.messages] == [0]


def cancel(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id},
    }


def test_a_cancelled_request_ends_its_stream_or_what_was_kept_for_it() -> None:
    """A cancelled request gets no answer: its open stream closes, and a detached
    one is no longer waited for (nor protected from being forgotten)."""
    machine, headers, exchange, request = start_call("2025-11-25", 4)
    session = exchange.session
    assert session is not None
    assert machine.handle(post_request(cancel(4), **headers)).status == 202
    assert exchange.finished
    session.respond(request.request_id, {"content": []})  # too late: not sent
    machine.flush(session)
    assert b'"id":4' not in exchange.take()

    detached = machine.handle(post_request(call(5), **headers))
    received_request(session)
    detached.commit_head()
    detached.disconnected()
    [state] = machine.sessions
    assert 5 in state.streams
    assert machine.handle(post_request(cancel(5), **headers)).status == 202
    assert 5 not in state.streams


def test_an_answer_queued_before_the_cancel_still_goes_out() -> None:
    machine, headers, exchange, request = start_call("2025-11-25", 6)
    session = exchange.session
    assert session is not None
    session.respond(request.request_id, {"content": []})  # queued, not yet flushed
    machine.handle(post_request(cancel(6), **headers))
    reader = Reader()
    reader.read(exchange)
    assert exchange.finished and [m.get("id") for m in reader.messages] == [6]


def test_a_batch_answered_at_once_is_not_held_up_by_a_cancel_in_it() -> None:
    machine = StreamableHTTPServer(build_server().create_session)
    headers = open_machine_session(machine, "2025-03-26")
    batch = [{"jsonrpc": "2.0", "id": 9, "method": "ping"}, cancel(123)]
    exchange = machine.handle(post_request(batch, **headers))
    assert exchange.finished and not exchange.streaming
    assert json.loads(exchange.take()) == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


def test_the_least_recently_active_streams_are_forgotten_first() -> None:
    """A stream cut long ago and answered just now is the newest: its answer is
    still there when the client comes back, however many requests came between."""
    machine, headers, exchange, request = start_call("2025-11-25", 0)
    machine.sessions.replay_streams = 4
    session = exchange.session
    assert session is not None
    exchange.disconnected()
    for request_id in range(1, 6):
        call_through(machine, headers, request_id)
    session.respond(request.request_id, {"content": []})  # s0 is answered while detached
    machine.flush(session)
    for request_id in range(6, 9):  # more streams open after the answer
        later = machine.handle(post_request(call(request_id), **headers))
        later.commit_head()
    reader = Reader()
    reader.read(machine.handle(get("s0-0", **headers)))
    assert [m.get("id") for m in reader.messages] == [0]


def test_a_stream_cut_before_any_event_id_leaves_its_messages_to_the_get_stream() -> None:
    """Without an id the client cannot resume the POST's stream, so what its request
    sends next goes on the GET stream (a request to the client must reach it)."""
    machine, headers, exchange, request = start_call("2025-06-18", 5)  # no priming event
    session = exchange.session
    assert session is not None
    exchange.disconnected()
    session.send_progress(request.request_id, 1)
    machine.flush(session)
    reader = Reader()
    reader.read(machine.handle(get(None, **headers)))
    assert [m.get("method") for m in reader.messages] == ["notifications/progress"]
    assert reader.last_event_id == "get-1"


def test_resuming_a_stream_again_closes_its_earlier_holder() -> None:
    """Two GETs resume one stream, or a GET resumes a POST stream the server still
    thinks open: the newest holds the stream, the earlier one ends (no connection
    is left open for good)."""
    machine, headers, exchange, request = start_call("2025-11-25", 5)
    session = exchange.session
    assert session is not None
    first = machine.handle(get("s0-0", **headers))  # the POST is still open
    assert exchange.finished and not first.finished
    second = machine.handle(get("s0-0", **headers))
    assert first.finished and not second.finished
    session.respond(request.request_id, {"content": []})
    machine.flush(session)
    reader = Reader()
    reader.read(second)
    assert second.finished and [m.get("id") for m in reader.messages] == [5]
    assert reader.last_event_id == "s0-1"


def test_get_stream_ids_go_on_across_get_streams() -> None:
    machine, headers, exchange, _request = start_call("2025-11-25", 5)
    session = exchange.session
    assert session is not None
    seen = []
    for _ in range(2):
        stream = machine.handle(get(None, **headers))
        session.send_log_message("info", "hello")
        machine.flush(session)
        reader = Reader()
        reader.read(stream)
        seen.append(reader.last_event_id)
        stream.disconnected()
    assert seen == ["get-1", "get-2"]


@pytest.mark.parametrize("last_event_id", ["s0-\u00b2", "s0-", "s0-x1", "nosuch-3", "-1"])
def test_a_last_event_id_that_names_no_event_opens_the_get_stream(last_event_id: str) -> None:
    machine, headers, _exchange, _request = start_call("2025-11-25", 5)
    stream = machine.handle(get(last_event_id, **headers))
    assert stream.status == 200 and stream.stream_key == "get"


def test_messages_for_a_get_stream_nobody_opens_are_bounded() -> None:
    """Without a GET stream, what would go on it waits; only the newest
    ``replay_memory`` messages, and a GET opened later gets them in order."""
    machine = StreamableHTTPServer(build_server().create_session, replay_memory=16)
    headers = open_machine_session(machine, "2025-11-25")
    [state] = machine.sessions
    for n in range(100):
        state.session.send_log_message("info", f"note {n}")
        machine.flush(state.session)
    assert len(state.backlog) == 16
    reader = Reader()
    reader.read(machine.handle(get(None, **headers)))
    assert [m["params"]["data"] for m in reader.messages] == [f"note {n}" for n in range(84, 100)]


def test_messages_for_a_get_stream_nobody_opens_are_bounded_in_bytes() -> None:
    """The backlog is bounded in bytes too (``replay_bytes``, as the shared store's
    backlog): the newest messages that fit wait, the oldest go first; a message larger
    than the bound on its own is not kept and drops none of the others."""
    machine = StreamableHTTPServer(build_server().create_session, replay_bytes=2_000)
    headers = open_machine_session(machine, "2025-11-25")
    [state] = machine.sessions
    for n in range(100):
        state.session.send_log_message("info", f"note {n:02}")
        machine.flush(state.session)
    assert 0 < len(state.backlog) < 100  # (the count bound, 256, is not reached)
    assert state.backlog_bytes == sum(len(item.data) for item in state.backlog) <= 2_000
    assert state.backlog_bytes + len(state.backlog[0].data) > 2_000  # as many as fit
    kept = len(state.backlog)
    state.session.send_log_message("info", "x" * 3_000)  # larger than the bound: not kept
    machine.flush(state.session)
    assert len(state.backlog) == kept
    reader = Reader()
    reader.read(machine.handle(get(None, **headers)))
    notes = [m["params"]["data"] for m in reader.messages]
    assert notes == [f"note {n:02}" for n in range(100 - kept, 100)]
    assert state.backlog_bytes == 0 and not state.backlog


@given(
    sizes=st.lists(st.integers(min_value=1, max_value=400), max_size=40),
    memory=st.integers(min_value=0, max_value=8),
    max_bytes=st.integers(min_value=1, max_value=1_000),
)
def test_the_backlog_keeps_the_newest_that_fit_both_bounds(
    sizes: list[int], memory: int, max_bytes: int
) -> None:
    """Whatever comes, the backlog is the newest messages that fit in both bounds
    (each oversized one skipped), and its byte count is theirs."""
    state = HandshakeSession("s", build_server().create_session(), memory, 4, max_bytes)
    items = [Outgoing({"n": i}, b"x" * size) for i, size in enumerate(sizes)]
    for item in items:
        state.hold(item)
    expected: list[Outgoing] = []
    for item in items:
        if len(item.data) > max_bytes or memory == 0:
            continue
        expected.append(item)
        while len(expected) > memory or sum(len(i.data) for i in expected) > max_bytes:
            expected.pop(0)
    assert list(state.backlog) == expected
    assert state.backlog_bytes == sum(len(i.data) for i in expected) <= max_bytes


@pytest.mark.parametrize("replay_bytes", [2_000, None])
def test_what_a_session_keeps_for_resumption_is_bounded_in_bytes(replay_bytes: int | None) -> None:
    """``replay_bytes``: a GET resumed after its first event gets only the newest
    events that fit in the bound (by default, 4 MiB, every one of them)."""
    bounds = {} if replay_bytes is None else {"replay_bytes": replay_bytes}
    machine = StreamableHTTPServer(build_server().create_session, **bounds)
    headers = open_machine_session(machine, "2025-11-25")
    [state] = machine.sessions
    stream = machine.handle(get(None, **headers))
    for n in range(30):
        state.session.send_log_message("info", f"note {n} " + "x" * 300)
        machine.flush(state.session)
    reader = Reader()
    reader.read(stream)
    assert reader.last_event_id == "get-30"
    stream.disconnected()
    assert state.replay.size <= (replay_bytes or 4 * 1024 * 1024)
    resumed = Reader()
    resumed.read(machine.handle(get("get-1", **headers)))
    notes = [int(m["params"]["data"].split()[1]) for m in resumed.messages]
    if replay_bytes is None:
        assert notes == list(range(1, 30))
    else:
        assert 1 <= len(notes) < 29 and notes == list(range(30 - len(notes), 30))


@pytest.mark.parametrize("bounds", [{"replay_bytes": 200}, {"replay_memory": 0}])
def test_get_stream_ids_go_on_whatever_is_kept(bounds: dict[str, int]) -> None:
    """An event larger than ``replay_bytes``, or none kept at all: the next GET
    stream's ids still go on from the last one given, never restart."""
    machine = StreamableHTTPServer(build_server().create_session, **bounds)
    headers = open_machine_session(machine, "2025-11-25")
    [state] = machine.sessions
    seen = []
    for _ in range(3):
        stream = machine.handle(get(None, **headers))
        state.session.send_log_message("info", "hello " + "x" * 300)
        machine.flush(state.session)
        reader = Reader()
        reader.read(stream)
        seen.append(reader.last_event_id)
        stream.disconnected()
    assert seen == ["get-1", "get-2", "get-3"]


def test_an_answer_larger_than_the_byte_bound_is_still_resumable() -> None:
    """A stream's newest event is kept whatever its size: a POST stream cut before
    its 5 MiB answer (past the 4 MiB ``replay_bytes``) resumes with that answer."""
    machine, headers, exchange, request = start_call("2025-11-25", 3)
    session = exchange.session
    assert session is not None
    primed = Reader()
    primed.read(exchange)
    exchange.disconnected()
    text = "z" * (5 * 1024 * 1024)
    session.respond(request.request_id, {"content": [{"type": "text", "text": text}]})
    machine.flush(session)
    assert primed.last_event_id is not None
    resumed = machine.handle(get(primed.last_event_id, **headers))
    body = resumed.take()  # (one SSE line past the 1 MiB a client's parser takes)
    assert resumed.finished
    [data] = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]
    answer = json.loads(data)
    assert answer["id"] == 3 and answer["result"]["content"][0]["text"] == text
