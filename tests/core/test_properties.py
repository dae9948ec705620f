"""Property-based tests of the core: codec round trips, framing, robustness,
the lifecycle table, and a stateful client<->server model."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import (
    ALL_CLIENT_CAPS,
    ALL_SERVER_CAPS,
    CLIENT_INFO,
    drain,
    initialize_params,
    line,
    make_pair,
    notification,
    out,
    ready_server,
    request,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from sansio_mcp import (
    NEED_DATA,
    TRANSITIONS,
    CancelRequested,
    ClientSession,
    ConnectionClosed,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    LocalProtocolError,
    MCPError,
    NdjsonFramer,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RemoteProtocolError,
    RequestFailed,
    RequestReceived,
    RequestTimeout,
    ResponseReceived,
    Role,
    ServerSession,
    Session,
    SessionInitialized,
    SessionState,
    Trigger,
    _json,
    message_to_obj,
    parse_message,
)
from sansio_mcp._state import next_state

CHEAP = settings(max_examples=200, deadline=None)
MODEST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=5)
request_ids = st.text(max_size=20) | st.integers()
methods = st.text(max_size=30) | st.sampled_from(["ping", "tools/call", "notifications/progress"])
params = st.none() | json_objects


@st.composite
def errors(draw: st.DrawFn) -> MCPError:
    return MCPError(
        draw(st.integers(min_value=-(2**40), max_value=2**40)),
        draw(st.text(max_size=40)),
        draw(st.none() | json_values),
    )


jsonrpc_messages = st.one_of(
    st.builds(JSONRPCRequest, request_ids, methods, params),
    st.builds(JSONRPCNotification, methods, params),
    st.builds(JSONRPCResponse, request_ids, json_objects),
    st.builds(JSONRPCError, st.none() | request_ids, errors()),
)


def _same(a: Any, b: Any) -> bool:
    if a != b:
        return False
    if isinstance(a, JSONRPCError):
        # JSONRPCError.error is eq=False: compare its fields explicitly.
        return (a.error.code, a.error.message, a.error.data, type(a.error)) == (
            b.error.code,
            b.error.message,
            b.error.data,
            type(b.error),
        )
    return True


# ------------------------------------------------------- (a) codec round trips


@CHEAP
@given(jsonrpc_messages, st.booleans())
def test_serialize_parse_round_trip(message: Any, null_error_id: bool) -> None:
    obj = message_to_obj(message, null_error_id=null_error_id)
    text = _json.dumps(obj)
    assert "\n" not in text
    parsed = parse_message(_json.loads(text))
    assert type(parsed) is type(message)
    assert _same(parsed, message), (parsed, message)
    if isinstance(message, JSONRPCError) and message.id is None:
        assert ("id" in obj) is null_error_id


def test_round_trip_compares_error_fields() -> None:
    """The explicit comparison matters: JSONRPCError.__eq__ ignores the error."""
    a = JSONRPCError(1, MCPError(-32601, "a"))
    b = JSONRPCError(1, MCPError(-32602, "b"))
    assert a == b
    assert not _same(a, b)


# Hypothesis leaves surrogates (category Cs) out unless asked for them explicitly.
text_with_surrogates = st.text(
    alphabet=st.characters() | st.characters(categories=["Cs"]), max_size=20
)


@CHEAP
@given(
    st.recursive(
        st.none() | st.integers() | text_with_surrogates,
        lambda c: st.lists(c, max_size=3) | st.dictionaries(text_with_surrogates, c, max_size=3),
        max_leaves=8,
    )
)
def test_dumps_is_always_utf8_and_round_trips(value: Any) -> None:
    text = _json.dumps(value)
    assert "\n" not in text
    text.encode("utf-8")  # never raises, even for lone surrogates
    # (Compared with the stdlib's own round trip: JSON joins an escaped surrogate
    # pair into one character, so "\ud800\udc00" as two code units cannot survive.)
    assert _json.loads(text.encode("utf-8")) == json.loads(json.dumps(value))


@CHEAP
@given(json_values)
def test_parse_message_never_raises_anything_but_remote_protocol_error(value: Any) -> None:
    try:
        parse_message(value)
    except RemoteProtocolError as exc:
        assert isinstance(exc.code, int)
        assert exc.request_id is None or isinstance(exc.request_id, (str, int))


# --------------------------------------------------- (b) chunking invariance

line_texts = st.one_of(
    st.builds(lambda m: _json.dumps(message_to_obj(m)), jsonrpc_messages),
    st.sampled_from(["{broken", "[]", "42", '{"jsonrpc":"2.0","id":1,"method":"ping"}']),
)


@st.composite
def ndjson_streams(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """An NDJSON stream (CRLF and blank lines mixed in) and its expected lines."""
    texts = draw(st.lists(line_texts, max_size=8))
    chunks: list[bytes] = []
    expected: list[bytes] = []
    for text in texts:
        for _ in range(draw(st.integers(0, 2))):
            chunks.append(draw(st.sampled_from([b"\n", b"\r\n", b"  \n", b"\t\r\n"])))
        body = text.encode("utf-8")
        chunks.append(body + draw(st.sampled_from([b"\n", b"\r\n"])))
        expected.append(body)
    return b"".join(chunks), expected


@st.composite
def split_points(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(data)), max_size=12))))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _shown(item: Any) -> Any:
    return ("error", item.message) if isinstance(item, RemoteProtocolError) else item


def framer_lines(chunks: list[bytes], max_line_size: int, eof: bool) -> list[Any]:
    """The lines a framer gives for ``chunks``, one by one (next_line); taking
    them a chunk at a time (lines) must give the same."""
    framer = NdjsonFramer(max_line_size)
    got: list[Any] = []

    def collect() -> None:
        while (item := framer.next_line()) is not NEED_DATA:
            got.append(_shown(item))

    for chunk in chunks:
        framer.feed(chunk)
        collect()
    if eof:
        framer.feed(b"")
        collect()

    batched = NdjsonFramer(max_line_size)
    taken = [_shown(item) for chunk in chunks for item in batched.lines(chunk)]
    if eof:
        taken += [_shown(item) for item in batched.lines(b"")]
    assert taken == got
    return got


@CHEAP
@given(st.data(), ndjson_streams(), st.booleans())
def test_framer_chunking_invariance(data: st.DataObject, stream: Any, eof: bool) -> None:
    whole, expected = stream
    chunks = data.draw(split_points(whole))
    assert b"".join(chunks) == whole
    assert framer_lines([whole], 1 << 20, eof) == expected
    assert framer_lines(chunks, 1 << 20, eof) == expected
    # Byte by byte as well.
    assert framer_lines([whole[i : i + 1] for i in range(len(whole))], 1 << 20, eof) == expected


@CHEAP
@given(st.data(), ndjson_streams(), st.integers(8, 80), st.booleans())
def test_framer_limit_chunking_invariance(
    data: st.DataObject, stream: Any, limit: int, eof: bool
) -> None:
    """With a small limit, oversized lines become one error each, whatever the chunking."""
    whole, lines = stream
    expected = [
        (
            (
                "error",
                f"a message of {len(body)} bytes exceeds the {limit}-byte limit (max_message_size)",
            )
            if len(body) > limit
            else body
        )
        for body in lines
    ]
    chunks = data.draw(split_points(whole))
    assert framer_lines([whole], limit, eof) == expected
    assert framer_lines(chunks, limit, eof) == expected


@CHEAP
@given(st.data(), ndjson_streams())
def test_framer_last_line_without_newline(data: st.DataObject, stream: Any) -> None:
    whole, expected = stream
    tail = data.draw(line_texts).encode("utf-8")
    chunks = data.draw(split_points(whole + tail))
    assert framer_lines(chunks, 1 << 20, eof=False) == expected
    assert framer_lines(chunks, 1 << 20, eof=True) == [*expected, tail]


def _event_summary(events: list[Any]) -> list[Any]:
    return [
        ("violation", e.error.code, e.error.message) if isinstance(e, ProtocolViolation) else e
        for e in events
    ]


session_lines = st.one_of(
    st.builds(lambda i: request(i, "ping"), st.integers(0, 5)),
    st.builds(lambda i: request(i, "tools/list"), st.integers(100, 105)),
    st.builds(lambda i: request(i, "tools/call", {}), st.integers(200, 205)),
    st.just(notification("notifications/tools/list_changed")),
    st.just(notification("notifications/progress", {"progressToken": 1, "progress": 2})),
    st.just({"jsonrpc": "2.0", "id": 999, "result": {}}),
    st.just("{not json"),
    st.just([]),
    st.just({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"pad": "x" * 300}}),
)


@MODEST
@given(st.data(), st.lists(session_lines, max_size=10), st.booleans())
def test_server_session_chunking_invariance(
    data: st.DataObject, items: list[Any], crlf: bool
) -> None:
    end = b"\r\n" if crlf else b"\n"
    whole = b"".join(
        (item.encode() if isinstance(item, str) else line(item)[:-1]) + end for item in items
    )
    chunks = data.draw(split_points(whole))
    a = ready_server(max_message_size=256)
    b = ready_server(max_message_size=256)
    if whole:  # (b"" would mean end of input)
        a.receive_data(whole)
    for chunk in chunks:
        b.receive_data(chunk)
    events_a, events_b = drain(a), drain(b)
    assert _event_summary(events_a) == _event_summary(events_b)
    assert a.data_to_send() == b.data_to_send()
    assert a.open_requests == b.open_requests


# ------------------------------------------------------------ (c) robustness


def _client_in(state: SessionState, *, via_discover: bool = False) -> ClientSession:
    """A client driven into ``state`` through the public API.

    INITIALIZING is reached with ``initialize()`` (deadline armed), or with
    ``discover()`` in auto mode when ``via_discover``; STATELESS through
    ``discover()`` answered by an in-memory server.
    """
    mode = "auto" if via_discover else "legacy"
    if state is SessionState.STATELESS:
        mode = "modern"
    client = ClientSession(capabilities=ALL_CLIENT_CAPS, client_info=CLIENT_INFO, mode=mode)
    if state is SessionState.IDLE:
        return client
    if state is SessionState.READY:
        return make_pair()[0]
    if state is SessionState.STATELESS:
        server = ServerSession(capabilities=ALL_SERVER_CAPS)
        client.discover()
        server.receive_data(client.data_to_send())
        client.receive_data(server.data_to_send())
    elif via_discover:
        client.discover(now=0.0, timeout=30.0)
    else:
        client.initialize(now=0.0, timeout=30.0)
    client.data_to_send()
    if state is SessionState.FAILED:
        client.receive_data(
            line({"jsonrpc": "2.0", "id": 0, "error": {"code": -32600, "message": "no"}})
        )
    elif state is SessionState.CLOSED:
        client.close()
    drain(client)
    assert client.state is state
    return client


def _server_in(state: SessionState) -> ServerSession:
    if state is SessionState.READY:
        return ready_server(client_caps=ALL_CLIENT_CAPS)
    server = ServerSession(capabilities=ALL_SERVER_CAPS)
    if state is SessionState.INITIALIZING:
        server.receive_data(
            line(request(0, "initialize", initialize_params("2025-06-18", ALL_CLIENT_CAPS)))
        )
        server.data_to_send()
    elif state is SessionState.CLOSED:
        server.close()
    drain(server)
    assert server.state is state
    return server


SESSION_STATES = [
    ("client", SessionState.IDLE),
    ("client", SessionState.INITIALIZING),
    ("client", SessionState.READY),
    ("client", SessionState.FAILED),
    ("client", SessionState.CLOSED),
    ("server", SessionState.IDLE),
    ("server", SessionState.INITIALIZING),
    ("server", SessionState.READY),
    ("server", SessionState.CLOSED),
]
EVENT_TYPES = (
    RequestReceived,
    NotificationReceived,
    ResponseReceived,
    RequestFailed,
    ProgressReceived,
    CancelRequested,
    SessionInitialized,
    ProtocolViolation,
    ConnectionClosed,
)


def _session(role: str, state: SessionState) -> Session:
    return _client_in(state) if role == "client" else _server_in(state)


def _check_output(session: Session) -> None:
    data = session.data_to_send()
    if not data:
        return
    assert data.endswith(b"\n")
    for raw in data.decode("utf-8").split("\n")[:-1]:
        value = json.loads(raw)
        assert isinstance(value, (dict, list))
        for message in value if isinstance(value, list) else [value]:
            assert message["jsonrpc"] == "2.0"
    for event in drain(session):
        assert isinstance(event, EVENT_TYPES)


VALID_TEMPLATES = [
    request(1, "ping"),
    request(2, "initialize", initialize_params("2025-06-18", ALL_CLIENT_CAPS)),
    request(3, "tools/call", {"name": "t", "arguments": {}}),
    request(4, "roots/list"),
    request(5, "sampling/createMessage", {"messages": [], "maxTokens": 3}),
    request(6, "elicitation/create", {"message": "m", "requestedSchema": {"type": "object"}}),
    request(7, "logging/setLevel", {"level": "info"}),
    request(
        8,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}},
    ),
    notification("notifications/initialized"),
    notification("notifications/cancelled", {"requestId": 3}),
    notification("notifications/progress", {"progressToken": 0, "progress": 1}),
    notification("notifications/message", {"level": "info", "data": "x"}),
    {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "id": 0, "error": {"code": -32603, "message": "x"}},
]


@st.composite
def mutated_messages(draw: st.DrawFn) -> Any:
    message = json.loads(json.dumps(draw(st.sampled_from(VALID_TEMPLATES))))
    for _ in range(draw(st.integers(1, 3))):
        target = message
        if isinstance(target, dict) and target.get("params") and draw(st.booleans()):
            target = target["params"]
        if not isinstance(target, dict) or not target:
            break
        key = draw(st.sampled_from(sorted(target)))
        action = draw(st.sampled_from(["delete", "replace", "add"]))
        if action == "delete":
            del target[key]
        elif action == "replace":
            target[key] = draw(json_values)
        else:
            target[draw(st.text(max_size=8))] = draw(json_values)
    if draw(st.booleans()):
        return [message, *draw(st.lists(st.sampled_from(VALID_TEMPLATES), max_size=2))]
    return message


fragments = st.one_of(
    st.binary(min_size=1, max_size=40),  # (b"" would mean end of input)
    st.sampled_from([b"\n", b"\r\n", b"[", b"{", b"}", b'"', b"\\", b"\xff", b"\xc3"]),
    st.builds(lambda m: line(m), st.sampled_from(VALID_TEMPLATES)),
    st.builds(lambda m: line(m), mutated_messages()),
)


@MODEST
@pytest.mark.parametrize(("role", "state"), SESSION_STATES)
@given(chunks=st.lists(fragments, max_size=8), eof=st.booleans())
def test_arbitrary_bytes_never_raise(
    role: str, state: SessionState, chunks: list[bytes], eof: bool
) -> None:
    session = _session(role, state)
    for chunk in chunks:
        session.receive_data(chunk)
        _check_output(session)
    if eof:
        session.receive_data(b"")
        _check_output(session)
        assert session.state is SessionState.CLOSED


@MODEST
@pytest.mark.parametrize(("role", "state"), SESSION_STATES)
@given(values=st.lists(json_values | mutated_messages(), min_size=1, max_size=4))
def test_arbitrary_json_never_raises(role: str, state: SessionState, values: list[Any]) -> None:
    session = _session(role, state)
    for value in values:
        session.receive_message(value)
        _check_output(session)
        session.receive_text(json.dumps(value))
        _check_output(session)
        session.receive_data(line(value))
        _check_output(session)


@MODEST
@given(value=json_values | mutated_messages())
def test_arbitrary_json_with_lone_surrogates_never_raises(value: Any) -> None:
    server = ready_server()
    text = json.dumps(value).replace("\\u00", "\\ud8") + "\n"  # smuggle lone surrogates in
    server.receive_data(text.encode())
    _check_output(server)
    server.receive_data(b'{"jsonrpc":"2.0","id":"\\udfff","method":"\\ud800"}\n')
    _check_output(server)


# ------------------------------------------------------ (d) the lifecycle table

INIT_RESULT = {
    "protocolVersion": "2025-06-18",
    "capabilities": ALL_SERVER_CAPS,
    "serverInfo": {"name": "s", "version": "1"},
}

RECEIVE = "receive"
SEND = "send"


def _receive(obj: Any) -> Callable[[Session], None]:
    return lambda session: session.receive_data(line(obj))


CLIENT_ACTIONS: dict[Trigger, tuple[str, Callable[[Any], Any]]] = {
    Trigger.SEND_INITIALIZE: (SEND, lambda c: c.initialize()),
    Trigger.RECV_INITIALIZE: (
        RECEIVE,
        _receive(request("i", "initialize", initialize_params("2025-06-18"))),
    ),
    Trigger.RECV_INITIALIZE_RESULT: (
        RECEIVE,
        _receive({"jsonrpc": "2.0", "id": 0, "result": INIT_RESULT}),
    ),
    Trigger.RECV_INITIALIZE_ERROR: (
        RECEIVE,
        _receive({"jsonrpc": "2.0", "id": 0, "error": {"code": -32602, "message": "no"}}),
    ),
    Trigger.INITIALIZE_TIMEOUT: ("timer", lambda c: c.handle_timer(1000.0)),
    Trigger.SEND_INITIALIZED: (SEND, lambda c: c.send_notification("notifications/initialized")),
    Trigger.RECV_INITIALIZED: (RECEIVE, _receive(notification("notifications/initialized"))),
    Trigger.SEND_PING: (SEND, lambda c: c.send_ping()),
    Trigger.RECV_PING: (RECEIVE, _receive(request("p", "ping"))),
    Trigger.SEND_UTILITY: (
        SEND,
        lambda c: c.send_notification("notifications/cancelled", {"requestId": "gone"}),
    ),
    Trigger.RECV_UTILITY: (
        RECEIVE,
        _receive(notification("notifications/message", {"level": "info", "data": "d"})),
    ),
    Trigger.SEND_REQUEST: (SEND, lambda c: c.send_request("tools/list")),
    Trigger.RECV_REQUEST: (RECEIVE, _receive(request("r", "roots/list"))),
    Trigger.SEND_NOTIFICATION: (SEND, lambda c: c.send_roots_list_changed()),
    Trigger.RECV_NOTIFICATION: (
        RECEIVE,
        _receive(notification("notifications/tools/list_changed")),
    ),
    Trigger.CLOSE: (SEND, lambda c: c.close()),
}

SERVER_ACTIONS: dict[Trigger, tuple[str, Callable[[Any], Any]]] = {
    # A server has no way to send initialize: send_request refuses it.
    Trigger.SEND_INITIALIZE: (
        SEND,
        lambda s: s.send_request("initialize", initialize_params("2025-06-18")),
    ),
    Trigger.RECV_INITIALIZE: (
        RECEIVE,
        _receive(request("i", "initialize", initialize_params("2025-06-18", ALL_CLIENT_CAPS))),
    ),
    # A server never sent initialize: such answers are to an unknown id.
    Trigger.RECV_INITIALIZE_RESULT: (
        RECEIVE,
        _receive({"jsonrpc": "2.0", "id": 0, "result": INIT_RESULT}),
    ),
    Trigger.RECV_INITIALIZE_ERROR: (
        RECEIVE,
        _receive({"jsonrpc": "2.0", "id": 0, "error": {"code": -32602, "message": "no"}}),
    ),
    Trigger.INITIALIZE_TIMEOUT: ("timer", lambda s: s.handle_timer(1000.0)),
    Trigger.SEND_INITIALIZED: (SEND, lambda s: s.send_notification("notifications/initialized")),
    Trigger.RECV_INITIALIZED: (RECEIVE, _receive(notification("notifications/initialized"))),
    Trigger.SEND_PING: (SEND, lambda s: s.send_ping()),
    Trigger.RECV_PING: (RECEIVE, _receive(request("p", "ping"))),
    # (send_notification itself: the conveniences just return False when not READY)
    Trigger.SEND_UTILITY: (
        SEND,
        lambda s: s.send_notification("notifications/message", {"level": "info", "data": "x"}),
    ),
    # (Not notifications/cancelled: a dual-era server takes a cancellation from a
    # stateless client in any state, outside the handshake's state machine.)
    Trigger.RECV_UTILITY: (
        RECEIVE,
        _receive(notification("notifications/progress", {"progressToken": "?", "progress": 1})),
    ),
    Trigger.SEND_REQUEST: (SEND, lambda s: s.send_request("roots/list")),
    Trigger.RECV_REQUEST: (RECEIVE, _receive(request("r", "tools/list"))),
    Trigger.SEND_NOTIFICATION: (
        SEND,
        lambda s: s.send_notification("notifications/tools/list_changed"),
    ),
    Trigger.RECV_NOTIFICATION: (
        RECEIVE,
        _receive(notification("notifications/roots/list_changed")),
    ),
    Trigger.CLOSE: (SEND, lambda s: s.close()),
}

# Triggers of the stateless (2026-07-28) start; looked up by name so that this
# module also runs against a core without them.
_DISCOVER = getattr(Trigger, "SEND_DISCOVER", None)
_DISCOVER_RESULT = getattr(Trigger, "RECV_DISCOVER_RESULT", None)
_FALLBACK = getattr(Trigger, "LEGACY_FALLBACK", None)
_STATELESS = getattr(SessionState, "STATELESS", None)
_DISCOVER_ACTIONS: dict[Any, tuple[str, Callable[[Any], Any]]] = {
    _DISCOVER: (SEND, lambda session: session.send_request("server/discover")),
    # A discover result for id 0 (the start request, when there is one).
    _DISCOVER_RESULT: (
        RECEIVE,
        _receive(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {"supportedVersions": ["2026-07-28"], "capabilities": {}},
            }
        ),
    ),
    # An error to the discover probe makes an auto-mode client fall back.
    _FALLBACK: (
        RECEIVE,
        _receive({"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "?"}}),
    ),
}
if _DISCOVER is not None:
    CLIENT_ACTIONS[_DISCOVER] = (SEND, lambda c: c.discover())
    CLIENT_ACTIONS[_DISCOVER_RESULT] = _DISCOVER_ACTIONS[_DISCOVER_RESULT]
    CLIENT_ACTIONS[_FALLBACK] = _DISCOVER_ACTIONS[_FALLBACK]
    SERVER_ACTIONS.update(_DISCOVER_ACTIONS)

# A 2026-07-28 request: served beside a handshake session in any of its states,
# through the same gate (and table) as the session's own requests.
_STATELESS_REQUEST = getattr(Trigger, "RECV_STATELESS_REQUEST", None)
if _STATELESS_REQUEST is not None:
    _STATELESS_META = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    CLIENT_ACTIONS[_STATELESS_REQUEST] = SERVER_ACTIONS[_STATELESS_REQUEST] = (
        RECEIVE,
        _receive(request("s", "tools/list", {"_meta": _STATELESS_META})),
    )

#: (role, state) pairs no sequence of public calls reaches.
UNREACHABLE = {(Role.SERVER, SessionState.FAILED), (Role.SERVER, _STATELESS)}

LIFECYCLE_CASES = [
    (role, state, trigger)
    for role in Role
    for state in SessionState
    for trigger in Trigger
    if (role, state) not in UNREACHABLE
]


def _lifecycle_session(role: Role, state: SessionState, trigger: Trigger) -> Session:
    if role is Role.SERVER:
        return _server_in(state)
    # The discover-result and fallback triggers need the start to be a discover.
    via_discover = state is SessionState.INITIALIZING and trigger in (_DISCOVER_RESULT, _FALLBACK)
    return _client_in(state, via_discover=via_discover)


@pytest.mark.parametrize(
    ("role", "state", "trigger"),
    LIFECYCLE_CASES,
    ids=[f"{r.value}-{s.name}-{t.name}" for r, s, t in LIFECYCLE_CASES],
)
def test_lifecycle_table(role: Role, state: SessionState, trigger: Trigger) -> None:
    session = _lifecycle_session(role, state, trigger)
    kind, action = (CLIENT_ACTIONS if role is Role.CLIENT else SERVER_ACTIONS)[trigger]
    expected = TRANSITIONS.get((role, state, trigger))
    assert expected == next_state(role, state, trigger)
    assert session.data_to_send() == b""

    raised = None
    try:
        action(session)
    except LocalProtocolError as exc:
        raised = exc
    events = drain(session)
    sent = out(session)
    refused = [e for e in events if isinstance(e, ProtocolViolation)]
    error_replies = [m for m in sent if isinstance(m, dict) and "error" in m]

    if expected is not None:
        assert raised is None, raised
        assert refused == [] and error_replies == [], (events, sent)
        assert session.state is expected
        return

    # Not in the table: refused, and the state is unchanged.
    assert session.state is state
    if kind == SEND:
        assert raised is not None, f"{trigger} was allowed in {state}"
        assert sent == [] and events == []
    elif kind == "timer":
        # Only a pending initialize with a deadline can time out.
        assert raised is None and sent == []
        assert not any(isinstance(e, RequestFailed) for e in events)
    elif state is SessionState.CLOSED:
        assert raised is None and events == [] and sent == []  # input after close is ignored
    else:
        assert raised is None
        assert refused, f"{trigger} was not refused in {state}: {events}"
        answered_request = trigger in (
            Trigger.RECV_INITIALIZE,
            Trigger.RECV_PING,
            Trigger.RECV_REQUEST,
            _STATELESS_REQUEST,
        )
        if answered_request:
            assert len(error_replies) == 1 and error_replies[0]["error"]["code"] in (
                -32600,
                -32601,
            )
        else:
            assert sent == []  # notifications and responses are never answered


def test_lifecycle_accepted_side_effects() -> None:
    """A few accepted triggers with observable effects beyond the state."""
    client = _client_in(SessionState.INITIALIZING)
    client.receive_data(line({"jsonrpc": "2.0", "id": 0, "result": INIT_RESULT}))
    assert [type(e) for e in drain(client)] == [SessionInitialized, ResponseReceived]
    assert out(client) == [notification("notifications/initialized")]

    client = _client_in(SessionState.INITIALIZING)
    assert client.handle_timer(1000.0) == [0]
    [failed] = drain(client)
    assert isinstance(failed.error, RequestTimeout) and failed.method == "initialize"
    assert client.state is SessionState.FAILED
    assert out(client) == []  # initialize is never cancelled on the wire


def test_unreachable_server_states() -> None:
    """A server never fails a handshake, nor becomes a stateless client."""
    for _, state in UNREACHABLE:
        assert not any(
            new is state and old is not state
            for (role, old, _), new in TRANSITIONS.items()
            if role is Role.SERVER
        )
        assert all(
            trigger is Trigger.CLOSE
            for (role, old, trigger) in TRANSITIONS
            if role is Role.SERVER and old is state
        )


def test_every_table_entry_is_exercised() -> None:
    covered = set(LIFECYCLE_CASES)
    assert len(covered) == len(LIFECYCLE_CASES)
    untested = set(TRANSITIONS) - covered
    assert untested == {
        (role, state, Trigger.CLOSE) for role, state in UNREACHABLE if state is not None
    }
    assert set(CLIENT_ACTIONS) == set(Trigger) == set(SERVER_ACTIONS)


# ---------------------------------------------------- (e) stateful conversation


class ConversationMachine(RuleBasedStateMachine):
    """A client and a server in memory; every request ends exactly once."""

    def __init__(self) -> None:
        super().__init__()
        self.client, self.server = make_pair("2025-06-18")
        self.now = 0.0
        self.sent: set[Any] = set()  # the client's requests
        self.deadlines: dict[Any, float] = {}
        self.ended: dict[Any, str] = {}
        self.cancelled: set[Any] = set()  # by cancel()
        self.timed_out: set[Any] = set()  # by handle_timer()
        self.server_progress: dict[Any, float] = {}
        self.server_sent: set[Any] = set()  # the server's pings
        self.server_ended: set[Any] = set()

    # -- event bookkeeping

    def _client_events(self) -> None:
        for event in drain(self.client):
            assert not isinstance(event, ProtocolViolation), event
            if isinstance(event, (ResponseReceived, RequestFailed)):
                rid = event.request_id
                assert rid in self.sent, event
                assert rid not in self.ended, f"{rid} ended twice: {event}"
                assert rid not in self.cancelled, f"late answer to cancelled {rid}"
                if isinstance(event, RequestFailed) and isinstance(event.error, RequestTimeout):
                    assert rid in self.timed_out
                else:
                    assert rid not in self.timed_out, f"late answer to timed out {rid}"
                self.ended[rid] = type(event).__name__
            elif isinstance(event, ProgressReceived):
                rid = event.request_id
                assert rid in self.sent and rid not in self.ended and rid not in self.cancelled
                assert event.total == 100.0
            elif isinstance(event, RequestReceived):
                assert event.method == "ping"
                self.client.respond(event.request_id, {})
            else:
                raise AssertionError(f"unexpected client event {event}")

    def _server_events(self) -> None:
        for event in drain(self.server):
            assert not isinstance(event, ProtocolViolation), event
            if isinstance(event, ResponseReceived):
                assert event.request_id in self.server_sent
                assert event.request_id not in self.server_ended
                self.server_ended.add(event.request_id)
            else:
                assert isinstance(event, (RequestReceived, CancelRequested)), event

    def _deliver(self) -> None:
        for _ in range(5):
            c2s = self.client.data_to_send()
            if c2s:
                self.server.receive_data(c2s)
            self._server_events()
            s2c = self.server.data_to_send()
            if s2c:
                self.client.receive_data(s2c)
            self._client_events()
            if not c2s and not s2c:
                return

    # -- rules

    @rule(timeout=st.none() | st.floats(0.5, 10.0), progress=st.booleans())
    def client_sends(self, timeout: float | None, progress: bool) -> None:
        rid = self.client.send_request(
            "tools/call",
            {"name": "work"},
            now=self.now if timeout is not None else None,
            timeout=timeout,
            progress=progress,
        )
        assert rid not in self.sent
        self.sent.add(rid)
        if timeout is not None:
            self.deadlines[rid] = self.now + timeout

    @rule()
    def server_pings(self) -> None:
        self.server_sent.add(self.server.send_ping())

    @rule()
    def deliver_to_server(self) -> None:
        data = self.client.data_to_send()
        if data:
            self.server.receive_data(data)
        self._server_events()

    @rule()
    def deliver_to_client(self) -> None:
        data = self.server.data_to_send()
        if data:
            self.client.receive_data(data)
        self._client_events()

    @precondition(lambda self: self.server.open_requests)
    @rule(data=st.data(), fail=st.booleans())
    def server_answers(self, data: st.DataObject, fail: bool) -> None:
        rid = data.draw(st.sampled_from(sorted(self.server.open_requests, key=repr)))
        if fail:
            self.server.respond_error(rid, -32603, "failed")
        else:
            self.server.respond(rid, {"content": []})
        assert rid not in self.server.open_requests

    @precondition(lambda self: self.server.open_requests)
    @rule(data=st.data(), step=st.floats(0.1, 5.0))
    def server_progress(self, data: st.DataObject, step: float) -> None:
        rid = data.draw(st.sampled_from(sorted(self.server.open_requests, key=repr)))
        value = self.server_progress.get(rid, 0.0) + step
        if self.server.send_progress(rid, value, total=100.0):
            self.server_progress[rid] = value
            with pytest.raises(LocalProtocolError):
                self.server.send_progress(rid, value)  # progress must increase

    @precondition(lambda self: self.client.pending_requests)
    @rule(data=st.data())
    def client_cancels(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.client.pending_requests, key=repr)))
        self.client.cancel(rid, "changed my mind")
        self.cancelled.add(rid)
        assert rid not in self.client.pending_requests
        with pytest.raises(LocalProtocolError):
            self.client.cancel(rid)

    @rule(dt=st.floats(0.0, 6.0))
    def time_passes(self, dt: float) -> None:
        self.now += dt
        expired = self.client.handle_timer(self.now)
        pending = self.sent - set(self.ended) - self.cancelled
        assert set(expired) == {
            rid for rid in pending if rid in self.deadlines and self.deadlines[rid] <= self.now
        }
        self.timed_out.update(expired)
        self._client_events()
        for rid in expired:
            assert self.ended.get(rid) == "RequestFailed"

    # -- invariants

    @invariant()
    def pending_matches_the_model(self) -> None:
        pending = self.sent - set(self.ended) - self.cancelled
        assert set(self.client.pending_requests) == pending
        assert set(self.server.pending_requests) == self.server_sent - self.server_ended
        assert self.cancelled.isdisjoint(self.ended)
        armed = [self.deadlines[rid] for rid in pending if rid in self.deadlines]
        assert self.client.next_deadline() == (min(armed) if armed else None)
        assert self.client.state is SessionState.READY
        assert self.server.state is SessionState.READY

    def teardown(self) -> None:
        # Let everything settle: deliver, answer whatever is open, deliver again.
        for _ in range(3):
            self._deliver()
            for rid in sorted(self.server.open_requests, key=repr):
                self.server.respond(rid, {"content": []})
            self._deliver()
        assert self.client.pending_requests == frozenset()
        assert self.client.open_requests == frozenset()
        assert self.server.open_requests == frozenset()
        assert self.server.pending_requests == frozenset()
        for rid in self.sent:
            assert (rid in self.ended) != (rid in self.cancelled), rid


ConversationMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None
)
test_conversation_machine = ConversationMachine.TestCase


@given(
    st.one_of(st.text(max_size=5), st.integers()),
    st.text(max_size=10),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.none() | st.text(max_size=3) | st.integers(),
    st.booleans(),
    st.none() | st.text(max_size=3) | st.integers(),
)
def test_request_received_built_by_slots_equals_attrs_init(
    request_id: Any, method: str, params: Any, token: Any, known: bool, related: Any
) -> None:
    """The session's slot-set RequestReceived is the object attrs' __init__ makes:
    every field set (a field added to the class and not to the builder fails here)."""
    import attrs

    from sansio_mcp._events import RequestReceived, request_received

    fast = request_received(request_id, method, params, token, known, related)
    slow = RequestReceived(
        request_id, method, params, token, relation_known=known, related_request=related
    )
    assert attrs.asdict(fast, recurse=False) == attrs.asdict(slow, recurse=False)
    assert fast == slow
