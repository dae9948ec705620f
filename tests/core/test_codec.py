"""The fast paths of the codec decide nothing the full paths would decide otherwise.

* ``_json.loads`` with orjson equals the stdlib path (value, or error text) on any input;
* ``_json.encode`` writes the same JSON value the stdlib path writes, or refuses alike;
* ``parse_message`` recognizes well-formed messages at once, with the same result
  (or the same complaint) as the full classification.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from helpers import drain, out, ready_server
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sansio_mcp import RemoteProtocolError, _json
from sansio_mcp._jsonrpc import _parse_fully, parse_message

pytestmark = pytest.mark.skipif(_json.orjson is None, reason="orjson is not installed")

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**25), max_value=10**25),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


def _outcome(fn: Any, data: Any) -> tuple[str, Any]:
    try:
        value = fn(data)
    except RemoteProtocolError as exc:
        return "error", (exc.code, exc.message)
    # As text: 1, 1.0 and True stay apart, and so do two orders of the same keys.
    return "value", json.dumps(value)


def _texts() -> st.SearchStrategy[bytes]:
    pieces = st.sampled_from(
        [
            b"[",
            b"]",
            b"{",
            b"}",
            b'"',
            b":",
            b",",
            b" ",
            b"1",
            b"9" * 18,
            b"9" * 19,
            b"-",
            b".5",
            b"e400",
            b"null",
            b"NaN",
            b"true",
            b'"[{"',
            b"\\ud800",
            b"\xff",
            b"\xef\xbb\xbf",
        ]
    )
    built = st.lists(pieces, max_size=40).map(b"".join)
    encoded = _values.map(lambda v: json.dumps(v).encode())
    return st.one_of(built, encoded, st.binary(max_size=64))


@settings(max_examples=1500, deadline=None)
@given(_texts(), st.integers(min_value=0, max_value=70))
@example(b"[" * 19 + b"]" * 19, 64)
@example(b"[" * 65 + b"]" * 65, 64)
@example(b'{"id":' + b"1" * 19 + b"}", 64)
@example(b'{"id":' + b"1" * 18 + b"}", 64)
@example(b'[1,"' + b"[" * 70 + b'"]', 64)
@example(b"[1]", 0)
def test_loads_fast_path_agrees_with_the_stdlib(data: bytes, max_depth: int) -> None:
    fast = _outcome(lambda d: _json.loads(d, max_depth=max_depth), data)
    slow = _outcome(lambda d: _json.stdlib_loads(d, max_depth=max_depth), data)
    assert fast == slow


@settings(max_examples=800, deadline=None)
@given(_values)
@example({"n": None, "x": [None]})
@example({"big": 10**30, "neg": -(10**30)})
@example({"s": "\ud800"})
def test_encode_writes_what_the_stdlib_writes(value: Any) -> None:
    data = _json.encode(value)
    assert isinstance(data, bytes) and b"\n" not in data
    # Compared as text again: types and key order count, a float's spelling not.
    assert json.dumps(json.loads(data)) == json.dumps(json.loads(_json.stdlib_dumps(value)))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_encode_refuses_what_the_stdlib_refuses(bad: float) -> None:
    # orjson would write null for these; the value must never change silently.
    with pytest.raises(ValueError):
        _json.encode({"result": [bad]})
    with pytest.raises(ValueError):
        _json.stdlib_dumps({"result": [bad]})


_ids = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.none(), st.booleans(), st.floats(0, 1))
_FIELDS = {
    "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0]),
    "id": _ids,
    "method": st.one_of(st.sampled_from(["tools/call", "ping"]), st.integers(0, 1)),
    "params": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _scalars), _scalars),
    "result": st.one_of(st.dictionaries(st.text(max_size=3), _scalars), _scalars),
    "error": st.one_of(
        st.fixed_dictionaries(
            {"code": st.one_of(st.integers(-32700, -32000), _scalars)},
            optional={"message": st.one_of(st.text(max_size=5), _scalars)},
        ),
        _scalars,
    ),
    "extra": _scalars,
}
# Mostly near-valid messages (the fast path's ground), some anything-goes objects.
_near_requests = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": st.sampled_from(["tools/call", "ping"])},
    optional={k: _FIELDS[k] for k in ("id", "params", "result", "error", "extra")},
)
_near_results = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "result": _FIELDS["result"]},
    optional={k: _FIELDS[k] for k in ("id", "method", "error", "extra")},
)
_messages = st.one_of(_near_requests, _near_results, st.fixed_dictionaries({}, optional=_FIELDS))


def _classified(fn: Any, obj: Any) -> tuple[str, Any]:
    try:
        message = fn(obj)
    except RemoteProtocolError as exc:
        return "error", (exc.code, exc.message, exc.request_id, exc.answer)
    fields = {k: v for k, v in vars_of(message).items() if k != "error"}
    error = getattr(message, "error", None)
    if error is not None:
        fields["error"] = (error.code, error.message, error.data)
    return type(message).__name__, fields


def vars_of(message: Any) -> dict[str, Any]:
    return {name: getattr(message, name) for name in message.__slots__ if name[0] != "_"}


@settings(max_examples=3000, deadline=None)
@given(st.one_of(_messages, _values))
def test_parse_message_fast_path_agrees_with_the_full_path(obj: Any) -> None:
    assert _classified(parse_message, obj) == _classified(_parse_fully, obj)


class _Unrecognized(dict):  # type: ignore[type-arg]
    """A dict the fast paths (``type(obj) is dict``) do not take: it goes the full way."""


def _full_receive(session: Any, obj: Any) -> None:
    """``receive_message`` of a message by the full way (``parse_message``'s full
    classification, then dispatch), as every message went before the fast paths."""
    session.receive_message(_Unrecognized(obj) if type(obj) is dict else obj)


def _served(feed: Any, obj: Any, before: Any) -> tuple[Any, ...]:
    server = ready_server()
    for earlier in before:  # an id already open, or cancelled, refuses a newcomer
        server.receive_message(earlier)
    drain(server)
    out(server)
    feed(server, obj)
    events = [
        ("violation", e.error.code, e.error.message, e.refused)
        if type(e).__name__ == "ProtocolViolation"
        else e
        for e in drain(server)
    ]
    return events, out(server), server.state, server.open_requests


_earlier = st.lists(
    st.sampled_from(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}},
            {"jsonrpc": "2.0", "id": "1", "method": "tools/list"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        ]
    ),
    max_size=3,
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_messages, _values), _earlier)
def test_the_sessions_request_fast_path_agrees_with_parse_message(obj: Any, before: Any) -> None:
    """A server session takes a well-formed request straight from ``receive_message``
    to its handling (no JSONRPCRequest made): events, output, state and open requests
    are what ``parse_message`` and dispatch give, whatever the message."""

    def fast(session: Any, obj: Any) -> None:
        session.receive_message(obj)

    assert _served(fast, obj, before) == _served(_full_receive, obj, before)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_messages, _values), _earlier)
def test_the_stdio_lines_request_fast_path_agrees_with_parse_message(obj: Any, before: Any) -> None:
    """``receive_data`` takes a well-formed request's line straight to its handling
    (``receive_message``'s fast path, inline): events, output, state and open requests
    are what ``parse_message`` and dispatch give the same decoded message."""
    try:
        data = _json.encode(obj) + b"\n"
    except (TypeError, ValueError, OverflowError):
        return  # not JSON: no line carries it

    def lines(session: Any, obj: Any) -> None:
        session.receive_data(data)

    decoded = _json.loads(data)
    assert _served(lines, decoded, before) == _served(_full_receive, decoded, before)


def test_a_tracer_sees_what_is_taken_and_what_it_queues_goes_with_the_next_take() -> None:
    """``data_to_send`` takes the queue before the tracer runs: a tracer that queues a
    message (re-entrantly) has it traced and sent by the next take, not looped on, and
    what a raising tracer was handed is not sent again."""
    session = ready_server()
    drain(session)
    traced: list[Any] = []

    def tracer(direction: str, message: Any) -> None:
        traced.append(message.get("method"))
        if message.get("method") == "notifications/message":
            session.send_notification("notifications/progress", {"progressToken": 1, "progress": 1})

    session.tracer = tracer
    session.send_notification("notifications/message", {"level": "info", "data": "x"})
    first = session.data_to_send()
    assert [json.loads(line)["method"] for line in first.splitlines()] == ["notifications/message"]
    second = session.data_to_send()
    assert [json.loads(line)["method"] for line in second.splitlines()] == [
        "notifications/progress"
    ]
    assert session.data_to_send() == b""
    assert traced == ["notifications/message", "notifications/progress"]

    def failing(direction: str, message: Any) -> None:
        raise RuntimeError("tracer")

    session.tracer = failing
    session.send_notification("notifications/message", {"level": "info", "data": "y"})
    with pytest.raises(RuntimeError):
        session.data_to_send()
    session.tracer = None
    assert session.data_to_send() == b""
