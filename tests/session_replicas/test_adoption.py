"""The pure side of handshake sessions shared by replicas (issue 33): a machine adopts
a session another began from its record, hands what is another copy's to its relay,
takes what another replica relayed; without a relay nothing of this happens."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp._exchange import Exchange
from sansio_mcp._replay import is_get_key
from sansio_mcp._shared_sessions import DEFAULT_FOLLOW_CHECK, DEFAULT_REPLAY_BYTES
from sansio_mcp._sse import format_sse_message
from sansio_mcp._state import SessionState
from sansio_mcp.http import HandshakeSessions, HTTPRequest, StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_testing._spec import json_values as _json_values
from tests.transports.helpers import INITIALIZED, initialize, post_request, sse_events

VERSION = "2025-11-25"


class Recorder:
    """A :class:`~sansio_mcp.http.SessionRelay` that keeps what it is handed."""

    def __init__(self) -> None:
        self.client: list[tuple[str, dict[str, Any]]] = []
        self.server: list[tuple[str, Any]] = []

    def client_message(self, session_id: str, message: dict[str, Any]) -> None:
        self.client.append((session_id, message))

    def server_message(self, session_id: str, message: Any, data: bytes = b"") -> None:
        self.server.append((session_id, message))
        assert json.loads(data) == message  # the session's own encoding, handed on


def replica() -> tuple[StreamableHTTPServer, Recorder]:
    machine = StreamableHTTPServer(build_server().create_session)
    machine.replicas.relay = relay = Recorder()
    return machine, relay


def begin(machine: StreamableHTTPServer) -> dict[str, str]:
    exchange = machine.handle(post_request(initialize(version=VERSION)), now=0.0)
    assert exchange.status == 200
    return {"mcp-session-id": exchange.headers["mcp-session-id"], "mcp-protocol-version": VERSION}


def test_a_session_is_adopted_from_its_record_and_answers_at_once() -> None:
    a, _ = replica()
    b, _ = replica()
    headers = begin(a)
    session_id = headers["mcp-session-id"]
    record = a.replicas.record(session_id)
    assert record == {
        "protocolVersion": VERSION,
        "initialize": initialize(version=VERSION)["params"],
    }
    assert (
        b.handle(post_request({"jsonrpc": "2.0", "id": 2, "method": "ping"}, **headers)).status
        == 404
    )
    session = b.replicas.adopt(session_id, record, now=1.0)
    assert session is not None and session.state is SessionState.READY
    assert b.replicas.adopt(session_id, record) is session  # adopted once
    # The client's initialized, sent to A, may come here too: dropped, no violation.
    assert b.handle(post_request(INITIALIZED, **headers), now=2.0).status == 202
    answer = b.handle(post_request({"jsonrpc": "2.0", "id": 2, "method": "ping"}, **headers))
    assert answer.status == 200
    assert b.replicas.record("unknown") is None


def test_what_is_another_copys_goes_to_the_relay() -> None:
    a, relay = replica()
    headers = begin(a)
    session_id = headers["mcp-session-id"]
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"action": "decline"}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    assert a.handle(post_request(answer, **headers)).status == 202
    assert a.handle(post_request(cancel, **headers)).status == 202
    assert relay.client == [(session_id, answer), (session_id, cancel)]
    # A notification for the GET stream, not open here, goes to the relay, not the backlog.
    state = a.sessions.get(session_id)
    assert state is not None
    state.session.send_list_changed("tools")
    a.flush(state.session)
    assert relay.server == [
        (session_id, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    ]
    assert not state.backlog


def test_relayed_messages_reach_the_copy_they_are_for() -> None:
    a, _ = replica()
    headers = begin(a)
    session_id = headers["mcp-session-id"]
    state = a.sessions.get(session_id)
    assert state is not None
    asked = state.session.send_ping()
    assert asked >= 0  # numbered from a random point: another copy's ids are elsewhere
    a.flush(state.session)
    assert a.replicas.receive(session_id, {"jsonrpc": "2.0", "id": asked + 1, "result": {}}) is None
    assert a.replicas.receive("other", {"jsonrpc": "2.0", "id": asked, "result": {}}) is None
    assert (
        a.replicas.receive(session_id, {"jsonrpc": "2.0", "id": asked, "result": {}})
        is state.session
    )
    assert asked not in state.session.pending_requests
    # A notification for a GET stream: delivered only where one is open.
    notice = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert not a.replicas.deliver(session_id, notice)
    get_headers = {"host": "127.0.0.1:8000", "accept": "text/event-stream", **headers}
    get = a.handle(HTTPRequest("GET", "/mcp", get_headers, b""))
    assert get.status == 200
    assert a.replicas.deliver(session_id, notice)
    assert b"notifications/tools/list_changed" in get.take()


def test_without_a_relay_nothing_is_relayed() -> None:
    machine = StreamableHTTPServer(build_server().create_session)
    headers = begin(machine)
    state = machine.sessions.get(headers["mcp-session-id"])
    assert state is not None
    assert state.session.state is SessionState.INITIALIZING  # ready only once told
    assert machine.handle(post_request(INITIALIZED, **headers)).status == 202
    state.session.send_list_changed("tools")
    machine.flush(state.session)
    assert len(state.backlog) == 1  # kept for the next GET, as ever


records = st.dictionaries(
    st.sampled_from(["protocolVersion", "initialize", "x"]),
    st.none()
    | st.sampled_from([VERSION, "2025-03-26", "1999-01-01"])
    | st.dictionaries(
        st.sampled_from(["protocolVersion", "capabilities", "clientInfo"]),
        st.none() | st.text() | st.dictionaries(st.text(), st.text()),
    ),
)


@given(records)
def test_a_malformed_record_adopts_nothing_and_raises_nothing(record: dict[str, Any]) -> None:
    machine, _ = replica()
    session = machine.replicas.adopt("s", record, now=0.0)
    if session is None:
        assert machine.sessions.ids == frozenset()
    else:
        assert session.state is SessionState.READY
        assert session.protocol_version == record["protocolVersion"]


json_values = _json_values(6)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": json_values,
        "method": st.sampled_from(["notifications/cancelled", "notifications/initialized", "ping"])
        | st.text(max_size=5),
        "params": st.fixed_dictionaries({}, optional={"requestId": json_values}) | json_values,
        "result": json_values,
        "error": json_values,
    },
)


@given(messages)
def test_whatever_a_client_posts_to_a_shared_session_gets_an_answer(
    message: dict[str, Any],
) -> None:
    machine, _ = replica()
    headers = begin(machine)
    exchange = machine.handle(post_request(message, **headers), now=1.0)
    assert 200 <= exchange.status < 500


@given(messages, st.sampled_from(["client", "server"]))
def test_whatever_another_replica_relays_is_taken_or_dropped(
    message: dict[str, Any], kind: str
) -> None:
    machine, _ = replica()
    session_id = begin(machine)["mcp-session-id"]
    if kind == "client":
        taken = machine.replicas.receive(session_id, message)
        assert taken is None or taken is machine.sessions.get(session_id).session  # type: ignore[union-attr]
    else:
        assert machine.replicas.deliver(session_id, message) is False  # no GET stream open


class Keeper:
    """An :class:`~sansio_mcp._replay.EventKeeper` that keeps what it is handed."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int, bytes]] = []

    def kept(self, session_id: str, key: str, number: int, chunk: bytes) -> None:
        self.events.append((session_id, key, number, chunk))


def get_request(**headers: str) -> HTTPRequest:
    return HTTPRequest(
        "GET", "/mcp", {"host": "127.0.0.1:8000", "accept": "text/event-stream", **headers}, b""
    )


def noted(machine: StreamableHTTPServer, headers: dict[str, str], texts: list[str]) -> None:
    """Log ``texts`` outside any request: they go on the session's GET stream."""
    session = machine.session_for(get_request(**headers))
    assert session is not None
    for text in texts:
        session.send_log_message("info", text)
    machine.flush(session)


def test_alone_event_ids_are_as_ever_and_nothing_is_handed_on() -> None:
    machine = StreamableHTTPServer(build_server().create_session)
    headers = begin(machine)
    stream = machine.handle(get_request(**headers))
    noted(machine, headers, ["a", "b"])
    assert [e.id for e in sse_events(stream.take())] == ["get-1", "get-2"]
    state = machine.sessions.get(headers["mcp-session-id"])
    assert state is not None and state.keeper is None and state.tag == ""


@given(st.lists(st.text(max_size=5), min_size=1, max_size=8), st.integers(0, 7))
def test_a_copy_replays_another_copys_stream_from_what_the_store_kept(
    texts: list[str], seen: int
) -> None:
    a, _ = replica()
    b, _ = replica()
    keeper = a.sessions.keeper = Keeper()
    b.sessions.keeper = Keeper()
    headers = begin(a)
    session_id = headers["mcp-session-id"]
    stream = a.handle(get_request(**headers))
    noted(a, headers, texts)
    sent = sse_events(stream.take())
    # What A sent is what it handed to the store, under a key of its own copy.
    assert [(k, n) for _, k, n, _ in keeper.events] == [
        (e.id.rpartition("-")[0], int(e.id.rpartition("-")[2])) for e in sent if e.id
    ]
    stream.disconnected()
    record = a.replicas.record(session_id)
    assert record is not None and b.replicas.adopt(session_id, record) is not None
    last = sent[min(seen, len(sent) - 1)].id
    assert last is not None
    key = b.replicas.foreign_stream(session_id, last)
    assert key == last.rpartition("-")[0]
    b.replicas.restore(session_id, key, [(n, c) for _, _, n, c in keeper.events])
    resumed = b.handle(get_request(**headers, **{"last-event-id": last}))
    *replayed, moved = sse_events(resumed.take())
    assert [e.data for e in replayed] == [e.data for e in sent[min(seen, len(sent) - 1) + 1 :]]
    # Then the client's Last-Event-ID moves to B's GET stream (an id, no data).
    assert moved.data == "" and b.replicas.foreign_stream(session_id, moved.id or "") is None
    # B's own events go on under B's key: no id of the session is given out twice.
    noted(b, headers, ["next"])
    (own,) = sse_events(resumed.take())
    assert own.id not in {e.id for e in sent}
    assert b.replicas.foreign_stream(session_id, own.id or "") is None


@given(
    st.one_of(
        st.text(max_size=30),
        st.tuples(st.text(max_size=14), st.text("0123456789x", max_size=4)).map("-".join),
        st.from_regex(r"[0-9a-f]{8}\.(get|s[0-9]{1,3})-[0-9]{1,4}", fullmatch=True),
    )
)
def test_only_another_copys_event_id_names_a_foreign_stream_to_load(last_event_id: str) -> None:
    a, _ = replica()
    a.sessions.keeper = Keeper()
    headers = begin(a)
    session_id = headers["mcp-session-id"]
    state = a.sessions.get(session_id)
    assert state is not None
    key = a.replicas.foreign_stream(session_id, last_event_id)
    shaped = re.fullmatch(r"[0-9a-f]{8}\.(get|s[0-9]+)-[0-9]+", last_event_id) is not None
    assert (key is not None) == (shaped and not last_event_id.startswith(state.tag))
    if key is None:
        # Nothing to load: the GET opens the session's GET stream, as on one process.
        stream = a.handle(get_request(**headers, **{"last-event-id": last_event_id}))
        assert stream.status == 200 and stream.take() == b""
        return
    # What the store kept of it is restored here, and the GET replays it.
    number = int(last_event_id.rpartition("-")[2]) + 1
    kept = b'id: %s-%d\ndata: {"jsonrpc":"2.0","method":"notifications/x"}\n\n' % (
        key.encode(),
        number,
    )
    a.replicas.restore(session_id, key, [(number, kept)])
    stream = a.handle(get_request(**headers, **{"last-event-id": last_event_id}))
    assert stream.status == 200 and stream.take().startswith(kept)


def test_only_a_get_streams_key_is_one() -> None:
    assert is_get_key("get") and is_get_key("0a1b2c3d.get")
    for key in ("budget", "0a1b2c3d.s1", "s2", "x.get", "0a1b2c3dget", ""):
        assert not is_get_key(key), key


def _stream_events(count: int, answered: bool) -> list[tuple[int, bytes]]:
    """A POST stream's events as the store lists them: numbers 1 to ``count``, the
    last one the answer when ``answered``."""
    events = []
    for number in range(1, count + 1):
        if answered and number == count:
            message: Any = {"jsonrpc": "2.0", "id": 2, "result": {}}
        else:
            message = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": number}}
        events.append((number, format_sse_message(json.dumps(message).encode(), f"t.s0-{number}")))
    return events


@given(
    count=st.integers(1, 12),
    answered=st.booleans(),
    start=st.integers(0, 12),
    reads=st.lists(st.integers(0, 12), max_size=10),
)
def test_a_followed_stream_sends_each_event_once_in_order_and_ends_at_the_answer(
    count: int, answered: bool, start: int, reads: list[int]
) -> None:
    """Whatever the store's reads give (the list as of any moment: any prefix, stale
    ones after fresher ones too), a stream following from event ``start`` sends every
    event after it once, in order, and finishes exactly when it has sent the answer."""
    events = _stream_events(count, answered)
    machine, _ = replica()
    stream = Exchange(200, {}, streaming=True)
    stream.seq = start
    for length in [*reads, count]:  # at last the whole list
        machine.replicas.followed(stream, events[:length])
    lines = stream.take().split(b"\n")
    sent = [int(line.rpartition(b"-")[2]) for line in lines if line.startswith(b"id: ")]
    assert sent == [number for number, _ in events if number > start]
    assert stream.finished == (answered and count > start)


def test_a_follower_whose_client_stops_reading_ends_past_max_unread() -> None:
    """A stream following another copy's (``followed``) is bounded as every stream is
    (``not_being_read``): past the router's ``max_unread`` unsent bytes it finishes,
    rather than buffer what the request says for good; an answer still goes out."""
    machine, _ = replica()
    machine.max_unread = 100
    stream = Exchange(200, {}, streaming=True)
    stream.seq = 1
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 40}}
    events = [(n, format_sse_message(json.dumps(note).encode(), f"t.s1-{n}")) for n in range(2, 40)]
    assert machine.replicas.followed(stream, events)  # over: its client is not reading
    assert stream.finished and stream.unsent < 100 + len(events[0][1])
    # Nothing more goes on a finished stream.
    before = stream.unsent
    answer = {"jsonrpc": "2.0", "id": 2, "result": {}}
    machine.replicas.followed(
        stream, [(40, format_sse_message(json.dumps(answer).encode(), "t.s1-40"))]
    )
    assert stream.unsent == before


def test_a_follower_keeps_its_session_copy_open_and_ends_with_it() -> None:
    """A stream here following another copy's POST stream is an open stream of the
    session: the copy is not idle-expired (nor evicted) under it, and ending the copy
    ends it."""
    a, _ = replica()
    b, _ = replica()
    a.sessions.keeper = Keeper()
    b.sessions.keeper = Keeper()
    headers = begin(a)
    session_id = headers["mcp-session-id"]
    record = a.replicas.record(session_id)
    assert record is not None and b.replicas.adopt(session_id, record, now=0.0) is not None
    a_copy = a.sessions.get(session_id)
    assert a_copy is not None
    key = f"{a_copy.tag}s1"
    before = _stream_events(1, answered=False)[0][1].replace(b"t.s0-", key.encode() + b"-")
    b.replicas.restore(session_id, key, [(1, before)])
    stream = b.handle(get_request(**headers, **{"last-event-id": f"{key}-0"}), now=0.0)
    assert stream.take().endswith(before)
    assert b.replicas.follow(session_id, f"{key}-0", stream) == key
    state = b.sessions.get(session_id)
    assert state is not None and not state.quiet
    b.sessions.idle_timeout = 1.0
    b.sessions.expire_idle(100.0)
    assert b.sessions.get(session_id) is state and not stream.finished
    b.sessions.end(session_id)
    assert stream.finished


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "4096", None])
def test_replay_bytes_takes_only_a_positive_integer(value: Any) -> None:
    machine, _ = replica()
    with pytest.raises(
        ValueError, match=r"^replay_bytes must be a positive integer of bytes, not "
    ):
        machine.replicas.replay_bytes = value
    assert machine.replicas.replay_bytes == DEFAULT_REPLAY_BYTES  # unchanged
    machine.replicas.replay_bytes = 1
    assert machine.replicas.replay_bytes == 1


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "4096", None])
def test_the_sessions_replay_bytes_is_checked_where_it_is_kept(value: Any) -> None:
    """``router.sessions.replay_bytes`` (what ``router.replicas.replay_bytes`` sets)
    is checked by its own setter, and by ``HandshakeSessions`` as it is made."""
    machine, _ = replica()
    with pytest.raises(ValueError, match=r"^replay_bytes must be a positive integer of bytes"):
        machine.sessions.replay_bytes = value
    assert machine.sessions.replay_bytes == DEFAULT_REPLAY_BYTES  # unchanged
    with pytest.raises(ValueError, match=r"^replay_bytes must be a positive integer of bytes"):
        HandshakeSessions(replay_bytes=value)


def test_a_changed_replay_bytes_bounds_the_sessions_begun_after_it() -> None:
    machine, _ = replica()
    before = machine.sessions.get(begin(machine)["mcp-session-id"])
    machine.sessions.replay_bytes = 1000
    after = machine.sessions.get(begin(machine)["mcp-session-id"])
    assert before is not None and after is not None
    assert before.replay.max_bytes == DEFAULT_REPLAY_BYTES
    assert after.replay.max_bytes == 1000
    assert machine.replicas.replay_bytes == 1000


@pytest.mark.parametrize("value", [0, -0.5, float("nan"), float("inf"), True, "10", None])
def test_follow_check_takes_only_a_positive_finite_number_of_seconds(value: Any) -> None:
    machine, _ = replica()
    with pytest.raises(
        ValueError, match=r"^follow_check must be a positive, finite number of seconds, not "
    ):
        machine.replicas.follow_check = value
    assert machine.replicas.follow_check == DEFAULT_FOLLOW_CHECK
    machine.replicas.follow_check = 0.25
    assert machine.replicas.follow_check == 0.25
