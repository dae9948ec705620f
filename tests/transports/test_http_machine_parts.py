"""The parts of the Streamable HTTP server machine on their own: the replay buffer
behind ``Last-Event-ID``, and the sessions the machine makes."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import NEED_DATA, RequestReceived, ServerSession
from sansio_mcp._replay import ReplayBuffer
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server

from .helpers import open_machine_session, post_request, stateless_headers, stateless_request


def drain(session: ServerSession) -> list[object]:
    events = []
    while (event := session.next_event()) is not NEED_DATA:
        events.append(event)
    return events


KEYS = st.sampled_from(["get", "s0", "s1", "s2", "s3", "s4", "s5"])


@given(
    memory=st.integers(min_value=1, max_value=4),
    streams_kept=st.integers(min_value=1, max_value=3),
    live=st.sets(KEYS, max_size=2),
    events=st.lists(KEYS, max_size=40),
)
def test_the_replay_buffer_keeps_the_newest_events_of_the_most_recent_streams(
    memory: int, streams_kept: int, live: set[str], events: list[str]
) -> None:
    replay = ReplayBuffer(memory, streams_kept, max_bytes=1 << 30)
    sent: dict[str, list[int]] = {}
    for number, key in enumerate(events):
        replay.remember(key, number, f"{key}-{number}".encode(), lambda: live)
        sent.setdefault(key, []).append(number)
        # The stream just written to is kept, with its newest events in order (those
        # from before it was last forgotten, if it was, are gone).
        kept = [n for n, _ in replay.events(key)]
        assert kept == sent[key][-len(kept) :] and 1 <= len(kept) <= memory
        assert replay.last_number(key) == number
    for key in live & set(sent):  # a live stream is never forgotten
        assert [n for n, _ in replay.events(key)] == sent[key][-memory:]
    # Over the limit only while live streams (never forgotten) fill it.
    assert len(replay) <= max(streams_kept, len(live & set(sent)) + 1)


@given(
    memory=st.integers(min_value=0, max_value=5),
    streams_kept=st.integers(min_value=1, max_value=3),
    max_bytes=st.integers(min_value=1, max_value=60),
    events=st.lists(st.tuples(KEYS, st.integers(min_value=0, max_value=25)), max_size=60),
)
def test_the_replay_buffer_keeps_at_most_its_bytes_the_oldest_going_first(
    memory: int, streams_kept: int, max_bytes: int, events: list[tuple[str, int]]
) -> None:
    """Whatever is remembered, what is kept is counted exactly and is at most
    ``max_bytes`` besides each stream's newest event (always kept, and its number
    known even with ``memory`` 0); each stream keeps its newest events in order; and a
    stream loses older events to the bound only while the others are down to their
    newest."""
    replay = ReplayBuffer(memory, streams_kept, max_bytes)
    sent: dict[str, list[int]] = {}
    for number, (key, size) in enumerate(events):
        before = len(replay.events(key))
        replay.remember(key, number, b"x" * size, lambda: ())
        sent.setdefault(key, []).append(number)
        kept = {k: replay.events(k) for k in replay}
        assert replay.size == sum(len(c) for evs in kept.values() for _, c in evs)
        assert replay.size <= max_bytes or all(len(evs) <= 1 for evs in kept.values())
        for k, evs in kept.items():
            numbers = [n for n, _ in evs]
            assert len(numbers) <= memory
            assert numbers == sent[k][len(sent[k]) - len(numbers) :]
        assert replay.last_number(key) == number
        if memory:
            assert kept[key][-1][0] == number
        if len(kept[key]) < min(memory, before + 1):
            assert all(len(evs) <= 1 for k, evs in kept.items() if k != key)


def test_no_session_is_made_only_to_learn_the_versions() -> None:
    """The session made at construction (to learn the supported versions) serves the
    first request that needs one."""
    made: list[ServerSession] = []

    def factory() -> ServerSession:
        made.append(build_server().create_session())
        return made[-1]

    machine = StreamableHTTPServer(factory)
    assert len(made) == 1
    message = stateless_request("tools/list")
    exchange = machine.handle(post_request(message, **stateless_headers(message)))
    assert exchange.status == 200
    assert len(made) == 1
    machine.handle(post_request(message, **stateless_headers(message)))
    assert len(made) == 2


def test_a_batch_is_answered_in_its_json_response() -> None:
    """With ``json_response``, a 2025-03-26 batch POST gets its answers as its JSON
    body. Before, they were taken for messages to the client and held for a GET
    stream, and the POST never ended."""
    machine = StreamableHTTPServer(build_server().create_session, json_response=True)
    headers = open_machine_session(machine, "2025-03-26")
    batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in (2, 3)]
    exchange = machine.handle(post_request(batch, **headers))
    assert exchange.session is not None
    for event in drain(exchange.session):
        if isinstance(event, RequestReceived):
            exchange.session.respond(event.request_id, {"tools": []})
    machine.flush(exchange.session)
    assert exchange.finished and exchange.headers["content-type"] == "application/json"
    assert [m["id"] for m in json.loads(exchange.take())] == [2, 3]
