"""A table of malformed (or merely unusual) inputs and the core's exact reaction.

Each case is fed to a session that is already initialized (unless the case
says otherwise).  For each we check the queued response (exact error code and
id, or that nothing is sent: notifications and responses are never
answered), the ProtocolViolation event, that the state did not change, and
that the session keeps working (a following ping is answered; a server
still serves tools/list).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from helpers import (
    ALL_SERVER_CAPS,
    drain,
    initialize_params,
    line,
    make_pair,
    notification,
    out,
    ready_server,
    request,
)

from sansio_mcp import (
    HANDSHAKE_REVISIONS,
    ErrorCode,
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    ServerSession,
    Session,
    SessionState,
)

PARSE = ErrorCode.PARSE_ERROR
INVALID = ErrorCode.INVALID_REQUEST
NOT_FOUND = ErrorCode.METHOD_NOT_FOUND
PARAMS = ErrorCode.INVALID_PARAMS

ABSENT = object()  # the error response carries no "id" (2025-11-25 onward)
NOTHING = object()  # no response at all


@attrs.frozen
class Err:
    """An expected error response."""

    id: Any
    code: int


@attrs.frozen
class Result:
    """An expected (successful) response."""

    id: Any
    result: dict = attrs.field(factory=dict)


@attrs.frozen
class Batch:
    """An expected batch response (order-insensitive)."""

    items: tuple


@attrs.frozen
class Case:
    name: str
    data: bytes
    response: Any  # Err | Result | Batch | NOTHING
    violation: int | None  # the ProtocolViolation code, or None for no violation
    role: str = "server"
    revision: str = "2025-06-18"
    initialized: bool = True
    setup: bytes = b""  # fed (and drained) before the case
    server_caps: dict | None = None
    client_caps: dict | None = None
    kwargs: dict = attrs.field(factory=dict)
    event: type | None = None  # another event the case must produce


def raw(obj: Any) -> bytes:
    return line(obj)


def req(id_: Any, method: str, params: Any = None, **extra: Any) -> bytes:
    return raw({**request(id_, method, params), **extra})


def note(method: str, params: Any = None) -> bytes:
    return raw(notification(method, params))


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
TOOLS_ONLY = {"tools": {}}
COMPLETE_OK = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}

CASES = [
    # ---- broken / truncated JSON, bad encodings
    Case("truncated-json", b'{"jsonrpc":"2.0","id":1,"method":"ping"\n', Err(None, PARSE), PARSE),
    Case("garbage", b"this is not json\n", Err(None, PARSE), PARSE),
    Case("unquoted-keys", b"{jsonrpc: 2.0}\n", Err(None, PARSE), PARSE),
    Case("trailing-comma", b'{"jsonrpc":"2.0","id":1,"method":"ping",}\n', Err(None, PARSE), PARSE),
    Case("nan-constant", b"NaN\n", Err(None, PARSE), PARSE),
    Case(
        "infinity-in-params",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}\n',
        Err(None, PARSE),
        PARSE,
    ),
    Case(
        "two-values-one-line",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"} {}\n',
        Err(None, PARSE),
        PARSE,
    ),
    Case(
        "invalid-utf8", b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}\n', Err(None, PARSE), PARSE
    ),
    Case(
        "encoded-surrogate",
        b'{"jsonrpc":"2.0","id":"\xed\xa0\x80","method":"ping"}\n',
        Err(None, PARSE),
        PARSE,
    ),
    Case(
        "utf8-bom",
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        Err(None, PARSE),
        PARSE,
    ),
    Case(
        "huge-integer-id",
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}\n',
        Err(None, PARSE),
        PARSE,
    ),
    Case("broken-json-crlf", b'{"jsonrpc":"2.0",\r\n', Err(None, PARSE), PARSE),
    Case(
        "broken-json-2025-11-25-omits-id",
        b"{oops\n",
        Err(ABSENT, PARSE),
        PARSE,
        revision="2025-11-25",
    ),
    # ---- not a JSON-RPC object
    Case("bare-number", b"42\n", Err(None, INVALID), INVALID),
    Case("bare-string", b'"ping"\n', Err(None, INVALID), INVALID),
    Case("bare-null", b"null\n", Err(None, INVALID), INVALID),
    Case("bare-true", b"true\n", Err(None, INVALID), INVALID),
    Case("empty-object", b"{}\n", Err(None, INVALID), INVALID),
    Case("no-method-result-or-error", raw({"jsonrpc": "2.0", "id": 3}), Err(3, INVALID), INVALID),
    # ---- jsonrpc member
    Case("jsonrpc-1.0", raw({**PING, "jsonrpc": "1.0"}), Err(1, INVALID), INVALID),
    Case("jsonrpc-number", raw({**PING, "jsonrpc": 2.0}), Err(1, INVALID), INVALID),
    Case("jsonrpc-missing", raw({"id": 1, "method": "ping"}), Err(1, INVALID), INVALID),
    Case(
        "jsonrpc-missing-notification",
        raw({"method": "notifications/progress", "params": {}}),
        NOTHING,
        INVALID,
    ),
    # ---- ids
    Case("id-null", req(None, "ping"), Err(None, INVALID), INVALID),
    Case("id-bool", req(True, "ping"), Err(None, INVALID), INVALID),
    Case("id-float", req(1.5, "ping"), Err(None, INVALID), INVALID),
    Case("id-object", req({"a": 1}, "ping"), Err(None, INVALID), INVALID),
    Case("id-array", req([1], "ping"), Err(None, INVALID), INVALID),
    Case(
        "id-bool-2025-11-25-omits-id",
        req(False, "ping"),
        Err(ABSENT, INVALID),
        INVALID,
        revision="2025-11-25",
    ),
    # ---- method member
    Case("method-number", req(1, 42), Err(1, INVALID), INVALID),
    Case("method-null", raw({"jsonrpc": "2.0", "id": 1, "method": None}), Err(1, INVALID), INVALID),
    # ---- params
    Case("params-array", req(1, "tools/list", [1, 2]), Err(1, PARAMS), PARAMS),
    Case("params-string", req(1, "tools/list", "cursor"), Err(1, PARAMS), PARAMS),
    Case("params-null", raw({**request(1, "tools/list"), "params": None}), Err(1, PARAMS), PARAMS),
    Case(
        "params-number-notification", note("notifications/tools/list_changed", 5), NOTHING, PARAMS
    ),
    # ---- result/error members on the wrong kind of message
    Case("request-with-result", req(1, "ping", result={}), Err(1, INVALID), INVALID),
    Case(
        "request-with-error",
        req(1, "ping", error={"code": 1, "message": "m"}),
        Err(1, INVALID),
        INVALID,
    ),
    Case(
        "response-with-result-and-error",
        raw({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}),
        NOTHING,
        INVALID,
    ),
    Case(
        "response-to-unknown-id", raw({"jsonrpc": "2.0", "id": 999, "result": {}}), NOTHING, INVALID
    ),
    Case(
        "error-to-unknown-id",
        raw({"jsonrpc": "2.0", "id": "nope", "error": {"code": -1, "message": "m"}}),
        NOTHING,
        INVALID,
    ),
    Case(
        "response-result-not-object",
        raw({"jsonrpc": "2.0", "id": 5, "result": [1]}),
        NOTHING,
        INVALID,
    ),
    Case("response-bool-id", raw({"jsonrpc": "2.0", "id": True, "result": {}}), NOTHING, INVALID),
    Case(
        "response-wrong-jsonrpc", raw({"jsonrpc": "1.0", "id": 1, "result": {}}), NOTHING, INVALID
    ),
    Case(
        "error-code-string",
        raw({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
        NOTHING,
        INVALID,
    ),
    Case("error-not-object", raw({"jsonrpc": "2.0", "id": 1, "error": "boom"}), NOTHING, INVALID),
    # An error about a message the peer could not identify: reported with its code.
    Case(
        "error-null-id",
        raw({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE, "message": "bad"}}),
        NOTHING,
        PARSE,
    ),
    Case(
        "error-absent-id",
        raw({"jsonrpc": "2.0", "error": {"code": -32099, "message": "bad"}}),
        NOTHING,
        -32099,
    ),
    # ---- duplicate in-flight id
    Case(
        "duplicate-in-flight-id",
        req(7, "tools/list"),
        Err(7, INVALID),
        INVALID,
        setup=req(7, "tools/list"),
    ),
    # ---- unknown methods and methods of capabilities not advertised
    Case("unknown-method", req(1, "foo/bar"), Err(1, NOT_FOUND), NOT_FOUND),
    Case(
        "notification-method-as-request",
        req(1, "notifications/initialized"),
        Err(1, NOT_FOUND),
        NOT_FOUND,
    ),
    Case(
        "server-method-sent-to-server",
        req(1, "sampling/createMessage", {"messages": [], "maxTokens": 1}),
        Err(1, NOT_FOUND),
        NOT_FOUND,
    ),
    Case(
        "newer-revision-method", req(1, "tasks/get", {"taskId": "t"}), Err(1, NOT_FOUND), NOT_FOUND
    ),
    Case(
        "resources-not-advertised",
        req(1, "resources/read", {"uri": "file:///x"}),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        server_caps=TOOLS_ONLY,
    ),
    Case(
        "prompts-not-advertised",
        req(1, "prompts/list"),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        server_caps=TOOLS_ONLY,
    ),
    Case(
        "logging-not-advertised",
        req(1, "logging/setLevel", {"level": "info"}),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        server_caps=TOOLS_ONLY,
    ),
    Case(
        "completions-not-advertised",
        req(1, "completion/complete", COMPLETE_OK),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        server_caps=TOOLS_ONLY,
    ),
    Case(
        "subscribe-not-advertised",
        req(1, "resources/subscribe", {"uri": "file:///x"}),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        server_caps={"tools": {}, "resources": {}},
    ),
    # ---- missing / wrong params per method
    Case("tools-call-no-name", req(1, "tools/call", {}), Err(1, PARAMS), PARAMS),
    Case("tools-call-name-number", req(1, "tools/call", {"name": 3}), Err(1, PARAMS), PARAMS),
    Case(
        "tools-call-arguments-array",
        req(1, "tools/call", {"name": "t", "arguments": []}),
        Err(1, PARAMS),
        PARAMS,
    ),
    Case("tools-call-no-params", req(1, "tools/call"), Err(1, PARAMS), PARAMS),
    Case("tools-list-cursor-number", req(1, "tools/list", {"cursor": 5}), Err(1, PARAMS), PARAMS),
    Case("resources-read-no-uri", req(1, "resources/read", {}), Err(1, PARAMS), PARAMS),
    Case("resources-read-uri-number", req(1, "resources/read", {"uri": 5}), Err(1, PARAMS), PARAMS),
    Case("resources-subscribe-no-uri", req(1, "resources/subscribe", {}), Err(1, PARAMS), PARAMS),
    Case("prompts-get-no-name", req(1, "prompts/get", {"arguments": {}}), Err(1, PARAMS), PARAMS),
    Case(
        "prompts-get-argument-not-string",
        req(1, "prompts/get", {"name": "p", "arguments": {"a": 1}}),
        Err(1, PARAMS),
        PARAMS,
    ),
    Case(
        "set-level-bad-level",
        req(1, "logging/setLevel", {"level": "verbose"}),
        Err(1, PARAMS),
        PARAMS,
    ),
    Case("set-level-no-level", req(1, "logging/setLevel", {}), Err(1, PARAMS), PARAMS),
    Case(
        "complete-bad-ref",
        req(1, "completion/complete", {**COMPLETE_OK, "ref": {"type": "ref/other"}}),
        Err(1, PARAMS),
        PARAMS,
    ),
    Case(
        "complete-ref-prompt-without-name",
        req(1, "completion/complete", {**COMPLETE_OK, "ref": {"type": "ref/prompt"}}),
        Err(1, PARAMS),
        PARAMS,
    ),
    Case(
        "complete-no-argument",
        req(1, "completion/complete", {"ref": COMPLETE_OK["ref"]}),
        Err(1, PARAMS),
        PARAMS,
    ),
    # ---- size and depth limits (an oversized request is answered under its own id,
    # read from the head of the message)
    Case(
        "oversized-line",
        req(1, "ping", {"pad": "x" * 400}),
        Err(1, INVALID),
        INVALID,
        kwargs={"max_message_size": 256},
    ),
    Case(
        "oversized-line-crlf",
        req(1, "ping", {"pad": "x" * 400})[:-1] + b"\r\n",
        Err(1, INVALID),
        INVALID,
        kwargs={"max_message_size": 256},
    ),
    Case(
        "oversized-by-one-byte",
        raw(PING)[:-2] + b" " * (257 - len(raw(PING)) + 1) + b"}\n",
        Err(1, INVALID),
        INVALID,
        kwargs={"max_message_size": 256},
    ),
    Case(
        "too-deep",
        req(1, "ping", {"a": json.loads("[" * 20 + "]" * 20)}),
        Err(None, PARSE),
        PARSE,
        kwargs={"max_depth": 8},
    ),
    # ---- batches
    Case("empty-batch", b"[]\n", Err(None, INVALID), INVALID, revision="2025-03-26"),
    Case("batch-forbidden-2025-06-18", raw([PING]), Err(None, INVALID), INVALID),
    Case(
        "batch-forbidden-2024-11-05",
        raw([PING]),
        Err(None, INVALID),
        INVALID,
        revision="2024-11-05",
    ),
    Case(
        "batch-forbidden-2025-11-25",
        raw([PING]),
        Err(ABSENT, INVALID),
        INVALID,
        revision="2025-11-25",
    ),
    Case(
        "initialize-in-batch",
        raw([request(9, "initialize", initialize_params("2025-03-26")), request(10, "ping")]),
        Batch(((9, INVALID), (10, None))),
        INVALID,
        revision="2025-03-26",
    ),
    Case(
        "batch-with-bad-element",
        raw([1, request(10, "ping")]),
        Batch(((None, INVALID), (10, None))),
        INVALID,
        revision="2025-03-26",
    ),
    Case(
        "batch-of-unknown-method",
        raw([request(11, "nope")]),
        Batch(((11, NOT_FOUND),)),
        NOT_FOUND,
        revision="2025-03-26",
    ),
    # ---- lifecycle
    Case(
        "second-initialize",
        req(2, "initialize", initialize_params("2025-06-18")),
        Err(2, INVALID),
        INVALID,
    ),
    Case("initialized-again", note("notifications/initialized"), NOTHING, INVALID),
    Case(
        "request-before-initialize",
        req(1, "tools/list"),
        Err(1, INVALID),
        INVALID,
        initialized=False,
    ),
    Case(
        "notification-before-initialize",
        note("notifications/progress", {"progressToken": 1, "progress": 1}),
        NOTHING,
        INVALID,
        initialized=False,
    ),
    Case(
        "cancel-before-initialize-handshake-only-server",
        note("notifications/cancelled", {"requestId": 1}),
        NOTHING,
        INVALID,
        initialized=False,
        kwargs={"supported_versions": HANDSHAKE_REVISIONS},
    ),
    # A server that also speaks the stateless revision takes a cancellation
    # before any handshake: it may come from a stateless client (ignored here).
    Case(
        "cancel-before-initialize-dual-era-server",
        note("notifications/cancelled", {"requestId": 1}),
        NOTHING,
        None,
        initialized=False,
    ),
    Case(
        "initialize-without-client-info",
        req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
        Err(1, PARAMS),
        PARAMS,
        initialized=False,
    ),
    Case(
        "initialize-without-params", req(1, "initialize"), Err(1, PARAMS), PARAMS, initialized=False
    ),
    # ---- notifications with bad params (never answered)
    Case(
        "progress-without-progress",
        note("notifications/progress", {"progressToken": 1}),
        NOTHING,
        PARAMS,
    ),
    Case(
        "progress-token-bool",
        note("notifications/progress", {"progressToken": True, "progress": 1}),
        NOTHING,
        PARAMS,
    ),
    Case(
        "cancelled-request-id-object",
        note("notifications/cancelled", {"requestId": {}}),
        NOTHING,
        PARAMS,
    ),
    Case(
        "roots-changed-params-array", note("notifications/roots/list_changed", []), NOTHING, PARAMS
    ),
    # ---- tolerated: silently ignored or passed through, never answered
    Case(
        "progress-unknown-token",
        note("notifications/progress", {"progressToken": "zzz", "progress": 1}),
        NOTHING,
        None,
    ),
    Case("cancel-unknown-id", note("notifications/cancelled", {"requestId": 12345}), NOTHING, None),
    Case(
        "unknown-notification",
        note("notifications/whatever"),
        NOTHING,
        None,
        event=NotificationReceived,
    ),
    Case("blank-lines", b"\n\n   \n\t\r\n\r\n", NOTHING, None),
    Case("crlf-ping", raw(PING)[:-1] + b"\r\n", Result(1), None),
    # ---- the client side
    Case(
        "client-gets-initialize",
        req(1, "initialize", initialize_params("2025-06-18")),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        role="client",
    ),
    Case(
        "client-gets-client-method",
        req(1, "tools/list"),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        role="client",
    ),
    Case(
        "client-roots-not-advertised",
        req(1, "roots/list"),
        Err(1, NOT_FOUND),
        NOT_FOUND,
        role="client",
        client_caps={},
    ),
    Case(
        "client-elicitation-url-not-declared",
        req(
            1,
            "elicitation/create",
            {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"},
        ),
        Err(1, PARAMS),
        PARAMS,
        role="client",
        revision="2025-11-25",
        client_caps={"elicitation": {"form": {}}},
    ),
    Case(
        "client-elicitation-bad-mode",
        req(1, "elicitation/create", {"mode": "telepathy", "message": "m"}),
        Err(1, PARAMS),
        PARAMS,
        role="client",
        revision="2025-11-25",
        client_caps={"elicitation": {"form": {}}},
    ),
    Case(
        "client-sampling-without-max-tokens",
        req(1, "sampling/createMessage", {"messages": []}),
        Err(1, PARAMS),
        PARAMS,
        role="client",
        client_caps={"sampling": {}},
    ),
    Case(
        "client-response-unknown-id",
        raw({"jsonrpc": "2.0", "id": 77, "result": {}}),
        NOTHING,
        INVALID,
        role="client",
    ),
    Case(
        "client-log-bad-level",
        note("notifications/message", {"level": "loud", "data": 1}),
        NOTHING,
        PARAMS,
        role="client",
    ),
    Case(
        "client-log-without-data",
        note("notifications/message", {"level": "info"}),
        NOTHING,
        PARAMS,
        role="client",
    ),
    Case(
        "client-progress-unknown-token",
        note("notifications/progress", {"progressToken": 0, "progress": 1}),
        NOTHING,
        None,
        role="client",
    ),
    Case(
        "client-broken-json",
        b"{,}\n",
        Err(ABSENT, PARSE),
        PARSE,
        role="client",
        revision="2025-11-25",
    ),
    Case(
        "client-batch-forbidden",
        raw([PING]),
        Err(None, INVALID),
        INVALID,
        role="client",
        revision="2024-11-05",
    ),
]


def _make(case: Case) -> Session:
    if case.role == "client":
        client, _ = make_pair(case.revision, client_caps=case.client_caps)
        return client
    caps = ALL_SERVER_CAPS if case.server_caps is None else case.server_caps
    if not case.initialized:
        return ServerSession(capabilities=caps, **case.kwargs)
    return ready_server(case.revision, capabilities=caps, **case.kwargs)


def _check_error(message: dict, expected: Err) -> None:
    assert message["jsonrpc"] == "2.0"
    assert set(message) <= {"jsonrpc", "id", "error"}
    assert message["error"]["code"] == expected.code, message
    assert isinstance(message["error"]["message"], str) and message["error"]["message"]
    if expected.id is ABSENT:
        assert "id" not in message, message
    else:
        assert "id" in message and message["id"] == expected.id, message
        assert type(message["id"]) is type(expected.id)


def _check_response(output: list, expected: Any) -> None:
    if expected is NOTHING:
        assert output == [], output
    elif isinstance(expected, Err):
        assert len(output) == 1, output
        _check_error(output[0], expected)
    elif isinstance(expected, Result):
        assert output == [{"jsonrpc": "2.0", "id": expected.id, "result": expected.result}]
    else:
        assert isinstance(expected, Batch)
        assert len(output) == 1 and isinstance(output[0], list), output
        got = output[0]
        assert len(got) == len(expected.items), got
        for message, (id_, code) in zip(
            sorted(got, key=lambda m: repr(m.get("id"))),
            sorted(expected.items, key=lambda item: repr(item[0])),
            strict=True,
        ):
            if code is None:
                assert message == {"jsonrpc": "2.0", "id": id_, "result": {}}
            else:
                _check_error(message, Err(id_, code))


def _still_works(session: Session, case: Case) -> None:
    """A following valid ping (and, on a ready server, tools/list) is served."""
    session.receive_data(req("after-ping", "ping"))
    assert drain(session) == []
    assert out(session) == [{"jsonrpc": "2.0", "id": "after-ping", "result": {}}]
    if case.role == "server" and session.state is SessionState.READY:
        session.receive_data(req("after-list", "tools/list"))
        [event] = drain(session)
        assert event == RequestReceived("after-list", "tools/list", {})
        session.respond("after-list", {"tools": []})
        assert out(session) == [{"jsonrpc": "2.0", "id": "after-list", "result": {"tools": []}}]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_input(case: Case) -> None:
    session = _make(case)
    if case.setup:
        session.receive_data(case.setup)
        drain(session)
        out(session)
    state = session.state
    session.receive_data(case.data)
    events = drain(session)
    output = out(session)

    _check_response(output, case.response)
    found = [e for e in events if isinstance(e, ProtocolViolation)]
    if case.violation is None:
        assert found == [], events
    else:
        assert [v.error.code for v in found] == [case.violation], events
        assert found[0].error.message
    others = [type(e) for e in events if not isinstance(e, ProtocolViolation)]
    assert others == ([case.event] if case.event else []), events
    assert session.state is state
    _still_works(session, case)


def test_corpus_is_large_and_names_are_unique() -> None:
    assert len(CASES) >= 45
    assert len({c.name for c in CASES}) == len(CASES)
    # Each broad category of the brief is represented.
    names = " ".join(c.name for c in CASES)
    for word in (
        "json",
        "utf8",
        "jsonrpc",
        "id-null",
        "params",
        "duplicate",
        "unknown",
        "advertised",
        "oversized",
        "deep",
        "batch",
        "initialize",
        "progress",
        "cancel",
        "blank",
        "crlf",
    ):
        assert word in names, word


# ------------------------------------------------ chunked delivery of the corpus


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.role == "server"][::3], ids=lambda c: c.name
)
def test_malformed_input_byte_by_byte(case: Case) -> None:
    """The same reaction when the input trickles in one byte at a time."""
    whole, trickle = _make(case), _make(case)
    for session in (whole, trickle):
        if case.setup:
            session.receive_data(case.setup)
            drain(session)
            out(session)
    whole.receive_data(case.data)
    for i in range(len(case.data)):
        trickle.receive_data(case.data[i : i + 1])
    assert trickle.data_to_send() == whole.data_to_send()
    assert _summary(drain(trickle)) == _summary(drain(whole))


def _summary(events: list) -> list:
    return [
        (type(e).__name__, e.error.code, e.error.message) if isinstance(e, ProtocolViolation) else e
        for e in events
    ]


# ---------------------------------------------------- regression tests (bugs found)


def _pair_2025_03_26() -> tuple[Any, ServerSession]:
    return make_pair("2025-03-26")


def test_duplicate_id_does_not_hijack_a_pending_batch() -> None:
    """Regression: a duplicate of a batched request's id used to take over
    the batch, so the batch flushed without (or never with) the real answer."""
    _, server = _pair_2025_03_26()
    server.receive_data(raw([request(7, "tools/list"), request(9, "tools/list")]))
    assert {e.request_id for e in drain(server)} == {7, 9}
    # Same id again, alone and inside another batch: refused on its own line.
    server.receive_data(req(7, "tools/list"))
    server.receive_data(raw([request(7, "tools/list"), request(8, "ping")]))
    assert [v.error.code for v in drain(server)] == [INVALID, INVALID]
    standalone, batch = out(server)
    _check_error(standalone, Err(7, INVALID))
    assert isinstance(batch, list) and len(batch) == 2
    _check_response([batch], Batch(((7, INVALID), (8, None))))
    # The first batch is still answered as one array once both requests are.
    server.respond(9, {"tools": []})
    assert out(server) == []
    server.respond(7, {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
    [answers] = out(server)
    assert sorted(m["id"] for m in answers) == [7, 9]


def test_duplicate_id_within_one_batch() -> None:
    _, server = _pair_2025_03_26()
    server.receive_data(raw([request(5, "tools/list"), request(5, "tools/list")]))
    events = drain(server)
    assert [type(e) for e in events] == [ProtocolViolation, RequestReceived]
    assert out(server) == []  # the batch waits for the real answer
    server.respond(5, {"tools": []})
    [batch] = out(server)
    assert sorted(("error" in m) for m in batch) == [False, True]
    assert all(m["id"] == 5 for m in batch)


def test_malformed_response_inside_batch_fails_the_request() -> None:
    """Regression: a malformed response in a batch left our request hanging."""
    _, server = _pair_2025_03_26()
    rid = server.send_request("roots/list")
    out(server)
    server.receive_data(raw([{"jsonrpc": "2.0", "id": rid, "result": "not an object"}]))
    events = drain(server)
    assert [type(e).__name__ for e in events] == ["ProtocolViolation", "RequestFailed"]
    assert events[1].request_id == rid and events[1].error.code == INVALID
    assert server.pending_requests == frozenset()
    assert out(server) == []


def test_lone_surrogate_is_escaped_not_crashing() -> None:
    """Regression: a JSON "\\ud800" escape in an id made data_to_send() raise."""
    server = ready_server()
    server.receive_data(b'{"jsonrpc":"2.0","id":"\\ud800x","method":"nope"}\n')
    [violation] = drain(server)
    assert violation.error.code == NOT_FOUND
    data = server.data_to_send()
    data.decode("utf-8")  # valid UTF-8
    assert json.loads(data)["id"] == "\ud800x"
    assert b"\\ud800" in data


def test_input_after_close_is_ignored() -> None:
    """Regression: after close(), garbage still queued error responses."""
    server = ready_server()
    server.close()
    drain(server)
    server.receive_data(b"garbage\n" + req(1, "ping") + b"[]\n")
    server.receive_text("garbage")
    assert drain(server) == []
    assert server.data_to_send() == b""
    assert server.state is SessionState.CLOSED


def test_an_oversized_answer_fails_its_request_at_once() -> None:
    """An answer over the limit ends the request it answers, naming the limit and the size,
    whatever the chunking; it is not left to time out."""
    from sansio_mcp import NEED_DATA, ClientSession, RequestFailed

    for pieces in (1, 7):
        client = ClientSession(max_message_size=1000)
        client.initialize()
        server = ServerSession(capabilities={"tools": {}})
        server.receive_data(client.data_to_send())
        client.receive_data(server.data_to_send())
        server.receive_data(client.data_to_send())
        while client.next_event() is not NEED_DATA:
            pass
        request_id = client.send_request("tools/list", now=0.0, timeout=60.0)
        answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"pad": "x" * 5000}})
        data = answer.encode() + b"\n"
        step = len(data) // pieces + 1
        for start in range(0, len(data), step):
            client.receive_data(data[start : start + step])
        events = []
        while (event := client.next_event()) is not NEED_DATA:
            events.append(event)
        (failed,) = [e for e in events if isinstance(e, RequestFailed)]
        assert failed.request_id == request_id
        assert f"{len(answer)} bytes" in failed.error.message
        assert "1000-byte limit" in failed.error.message
        assert request_id not in client.pending_requests


@pytest.mark.parametrize("garbage", [b"y\n", b"[INFO] server started\n", b"{oops\n"])
def test_a_peer_writing_nothing_but_garbage_is_given_up_on(garbage: bytes) -> None:
    # Answering each bad line for ever would keep us busy for ever (``yes`` as a
    # "server"); a few stray lines (a banner on stdout) are survived.
    from sansio_mcp import ClientSession, ConnectionClosed, ConnectionClosedError, RequestFailed
    from sansio_mcp._session import MAX_BAD_LINES

    client, server = make_pair()
    request_id = client.send_request("ping", None, now=0.0)
    note = line({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    client.receive_data(garbage * (MAX_BAD_LINES - 1) + note)
    assert client.state is SessionState.READY  # a valid message in between: survived
    drain(client)
    client.receive_data(garbage * (MAX_BAD_LINES + 50))
    events = drain(client)
    assert client.state is SessionState.CLOSED and isinstance(events[-1], ConnectionClosed)
    # Given up at the limit: what came after is not read.
    assert len([e for e in events if isinstance(e, ProtocolViolation)]) == MAX_BAD_LINES + 1
    [failed] = [e for e in events if isinstance(e, RequestFailed)]
    assert failed.request_id == request_id and isinstance(failed.error, ConnectionClosedError)
    assert "not JSON-RPC" in failed.error.message
    assert isinstance(client, ClientSession)
    del server


def test_a_peer_that_never_spoke_json_is_given_up_on_sooner_and_named() -> None:
    # A program printing its own text is not an MCP server: before its first JSON line,
    # MAX_BAD_LINES_BEFORE_FIRST lines are enough, and the reason quotes how it began.
    from sansio_mcp import ClientSession, ConnectionClosed
    from sansio_mcp._session import MAX_BAD_LINES_BEFORE_FIRST

    client = ClientSession()
    client.initialize()
    client.data_to_send()
    chatter = b"".join(b"hello line %d\n" % n for n in range(MAX_BAD_LINES_BEFORE_FIRST - 1))
    client.receive_data(chatter)
    assert client.state is not SessionState.CLOSED
    client.receive_data(b"x" * 500 + b"\n")
    events = drain(client)
    assert client.state is SessionState.CLOSED and isinstance(events[-1], ConnectionClosed)
    assert client.close_reason is not None
    assert "'hello line 0', 'hello line 1', 'hello line 2'" in client.close_reason
    assert not client.heard_from_peer


def test_the_driver_logs_a_flood_of_violations_a_few_times(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from sansio_mcp.runtime._driver import MAX_VIOLATION_WARNINGS, Driver

    client, server = make_pair()
    driver = Driver(
        client,
        handle_request=lambda *a: None,  # type: ignore[arg-type,return-value]
        handle_notification=None,
        spawn=lambda request_id, fn: None,
        cancel=lambda request_id: None,
    )
    with caplog.at_level("DEBUG", logger="sansio_mcp"):
        client.receive_data(b"{oops\n" * (MAX_VIOLATION_WARNINGS + 30))
        driver.process_events()
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    debug = [
        r for r in caplog.records if "protocol violation" in r.message and r.levelname == "DEBUG"
    ]
    assert len(warnings) == MAX_VIOLATION_WARNINGS + 1  # and one saying the rest go to DEBUG
    assert "logged at DEBUG" in warnings[-1].message
    assert len(debug) == 30
    del server
