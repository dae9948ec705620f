"""Focused unit tests of the session machines' features."""

from __future__ import annotations

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
    pump,
    ready_server,
    request,
)

from sansio_mcp import (
    HANDSHAKE_REVISIONS,
    LATEST_HANDSHAKE_REVISION,
    CancelRequested,
    ClientSession,
    ConnectionClosed,
    ConnectionClosedError,
    ErrorCode,
    LocalProtocolError,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    RequestTimeout,
    ResponseReceived,
    ServerSession,
    SessionInitialized,
    SessionState,
    UnsupportedProtocolVersion,
)

INIT_RESULT = {
    "capabilities": ALL_SERVER_CAPS,
    "serverInfo": {"name": "srv", "version": "1"},
}


def _initialize(server: ServerSession, version: str, id_: Any = 1) -> dict:
    server.receive_data(line(request(id_, "initialize", initialize_params(version))))
    [response] = out(server)
    assert response["id"] == id_
    return response["result"]


# ------------------------------------------------------------ version negotiation


@pytest.mark.parametrize("version", HANDSHAKE_REVISIONS)
def test_server_echoes_a_supported_version(version: str) -> None:
    server = ServerSession(capabilities=ALL_SERVER_CAPS)
    result = _initialize(server, version)
    assert result["protocolVersion"] == version
    assert server.protocol_version == version
    assert server.state is SessionState.INITIALIZING
    server.receive_data(line(notification("notifications/initialized")))
    [event] = drain(server)
    assert event == SessionInitialized(version, CLIENT_INFO, {}, None)
    assert server.state is SessionState.READY


@pytest.mark.parametrize("requested", ["1999-01-01", "2099-12-31", "", "latest"])
def test_server_offers_its_latest_for_an_unknown_version(requested: str) -> None:
    server = ServerSession()
    assert _initialize(server, requested)["protocolVersion"] == LATEST_HANDSHAKE_REVISION


def test_server_offers_its_own_latest_supported_version() -> None:
    server = ServerSession(supported_versions=["2024-11-05", "2025-03-26"])
    assert _initialize(server, "2025-11-25")["protocolVersion"] == "2025-03-26"
    server = ServerSession(supported_versions=["2024-11-05", "2025-03-26"])
    assert _initialize(server, "2024-11-05")["protocolVersion"] == "2024-11-05"


@pytest.mark.parametrize("version", HANDSHAKE_REVISIONS)
def test_client_requests_its_version_and_accepts_it(version: str) -> None:
    client, server = make_pair(version)
    assert client.protocol_version == server.protocol_version == version
    assert client.requested_version == version


def test_client_rejects_an_unknown_version() -> None:
    client = ClientSession(client_info=CLIENT_INFO)
    rid = client.initialize()
    assert out(client)[0]["params"]["protocolVersion"] == LATEST_HANDSHAKE_REVISION
    client.receive_data(
        line(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {**INIT_RESULT, "protocolVersion": "1999-01-01"},
            }
        )
    )
    [event] = drain(client)
    assert isinstance(event, RequestFailed) and event.request_id == rid
    assert event.method == "initialize"
    assert isinstance(event.error, UnsupportedProtocolVersion)
    assert event.error.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
    assert event.error.data["requested"] == "1999-01-01"
    assert "2025-11-25" in event.error.data["supported"]
    assert client.state is SessionState.FAILED
    assert client.revision is None
    assert out(client) == []  # no notifications/initialized
    with pytest.raises(LocalProtocolError):
        client.send_ping()
    with pytest.raises(LocalProtocolError):
        client.send_request("tools/list")


def test_client_rejects_a_known_but_unsupported_version() -> None:
    client = ClientSession(supported_versions=["2025-06-18", "2025-11-25"])
    server = ServerSession(supported_versions=["2024-11-05"])
    client.initialize()
    pump(client, server)
    assert server.protocol_version == "2024-11-05"
    pump(server, client)
    [event] = drain(client)
    assert isinstance(event.error, UnsupportedProtocolVersion)
    assert client.state is SessionState.FAILED


@pytest.mark.parametrize(
    "result",
    [
        {"capabilities": {}, "serverInfo": {"name": "s", "version": "1"}},
        {"protocolVersion": "2025-06-18", "serverInfo": {"name": "s", "version": "1"}},
        {"protocolVersion": "2025-06-18", "capabilities": {}},
        {"protocolVersion": 20250618, "capabilities": {}, "serverInfo": {}},
    ],
)
def test_client_fails_on_an_incomplete_initialize_result(result: dict) -> None:
    client = ClientSession()
    rid = client.initialize()
    client.receive_data(line({"jsonrpc": "2.0", "id": rid, "result": result}))
    [event] = drain(client)
    assert isinstance(event, RequestFailed) and event.error.code == ErrorCode.INVALID_REQUEST
    assert client.state is SessionState.FAILED


def test_client_fails_on_an_initialize_error() -> None:
    client = ClientSession()
    rid = client.initialize()
    client.receive_data(
        line({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "nope"}})
    )
    [event] = drain(client)
    assert isinstance(event, RequestFailed) and event.error.code == ErrorCode.INVALID_PARAMS
    assert client.state is SessionState.FAILED


def test_unknown_supported_versions_are_refused() -> None:
    with pytest.raises(LocalProtocolError):
        ClientSession(supported_versions=["1999-01-01"])
    with pytest.raises(LocalProtocolError):
        ServerSession(supported_versions=[])
    with pytest.raises(LocalProtocolError):
        ClientSession(supported_versions=["2025-06-18"], protocol_version="2025-11-25")


def test_initialize_is_sent_once() -> None:
    client = ClientSession()
    client.initialize()
    with pytest.raises(LocalProtocolError):
        client.initialize()
    with pytest.raises(LocalProtocolError):
        client.send_request("initialize", initialize_params("2025-06-18"))
    assert len(out(client)) == 1


# -------------------------------------------------------------- capability gating


def test_client_cannot_send_methods_the_server_did_not_advertise() -> None:
    client, _ = make_pair("2025-11-25", server_caps={"tools": {}})
    for method, params in [
        ("resources/list", None),
        ("resources/read", {"uri": "file:///x"}),
        ("prompts/list", None),
        ("logging/setLevel", {"level": "info"}),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}},
        ),
    ]:
        with pytest.raises(LocalProtocolError, match="capability"):
            client.send_request(method, params)
    assert out(client) == []
    assert client.pending_requests == frozenset()
    client.send_request("tools/list")  # advertised
    assert len(out(client)) == 1


def test_subscribe_needs_the_subscribe_flag() -> None:
    client, _ = make_pair(server_caps={"resources": {"subscribe": False}})
    with pytest.raises(LocalProtocolError):
        client.send_request("resources/subscribe", {"uri": "file:///x"})
    client.send_request("resources/read", {"uri": "file:///x"})


def test_completion_is_only_gated_from_2025_03_26() -> None:
    params = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}
    client, server = make_pair("2024-11-05", server_caps={"prompts": {}})
    rid = client.send_request("completion/complete", params)
    pump(client, server)
    assert drain(server) == [RequestReceived(rid, "completion/complete", params)]
    client, server = make_pair("2025-03-26", server_caps={"prompts": {}})
    with pytest.raises(LocalProtocolError):
        client.send_request("completion/complete", params)
    # ... and refused on receipt as well.
    server.receive_data(line(request(9, "completion/complete", params)))
    [violation] = drain(server)
    assert violation.error.code == ErrorCode.METHOD_NOT_FOUND
    assert out(server)[0]["error"]["code"] == ErrorCode.METHOD_NOT_FOUND


def test_server_cannot_send_what_the_client_did_not_advertise() -> None:
    _, server = make_pair("2025-06-18", client_caps={})
    with pytest.raises(LocalProtocolError):
        server.send_request("sampling/createMessage", {"messages": [], "maxTokens": 1})
    with pytest.raises(LocalProtocolError):
        server.send_request("roots/list")
    with pytest.raises(LocalProtocolError):
        server.send_request(
            "elicitation/create", {"message": "m", "requestedSchema": {"type": "object"}}
        )
    assert out(server) == []


def test_methods_outside_the_revision_are_refused_on_send() -> None:
    _, server = make_pair("2025-03-26", client_caps=ALL_CLIENT_CAPS)
    with pytest.raises(LocalProtocolError, match="revision"):
        server.send_request(
            "elicitation/create", {"message": "m", "requestedSchema": {"type": "object"}}
        )
    client, _ = make_pair("2025-06-18")
    with pytest.raises(LocalProtocolError):
        client.send_request("tasks/list")
    client.send_request("tasks/list", experimental=True)  # the escape hatch
    assert out(client)[0]["method"] == "tasks/list"


def test_notifications_are_gated_by_our_own_capabilities() -> None:
    client, server = make_pair(client_caps={"roots": {}}, server_caps={"tools": {}})
    with pytest.raises(LocalProtocolError):
        client.send_roots_list_changed()  # roots.listChanged not advertised
    with pytest.raises(LocalProtocolError):
        server.send_list_changed("tools")  # tools.listChanged not advertised
    with pytest.raises(LocalProtocolError):
        server.send_log_message("error", "x")  # logging not advertised
    with pytest.raises(LocalProtocolError):
        server.send_notification("notifications/resources/updated", {"uri": "file:///x"})
    assert out(client) == [] and out(server) == []


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/list", None),
        ("tools/call", {"name": "t"}),
        ("resources/list", None),
        ("prompts/get", {"name": "p"}),
        ("logging/setLevel", {"level": "info"}),
    ],
)
def test_server_refuses_unadvertised_methods_with_32601(method: str, params: Any) -> None:
    server = ready_server(capabilities={})
    server.receive_data(line(request("r", method, params)))
    [violation] = drain(server)
    assert isinstance(violation, ProtocolViolation)
    assert violation.error.code == ErrorCode.METHOD_NOT_FOUND
    assert violation.error.request_id == "r"
    [response] = out(server)
    assert response["id"] == "r" and response["error"]["code"] == ErrorCode.METHOD_NOT_FOUND


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("sampling/createMessage", {"messages": [], "maxTokens": 1}),
        ("roots/list", None),
        ("elicitation/create", {"message": "m", "requestedSchema": {"type": "object"}}),
    ],
)
def test_client_refuses_unadvertised_methods_with_32601(method: str, params: Any) -> None:
    client, _ = make_pair("2025-06-18", client_caps={})
    client.receive_data(line(request("s", method, params)))
    [violation] = drain(client)
    assert violation.error.code == ErrorCode.METHOD_NOT_FOUND
    assert out(client)[0]["error"]["code"] == ErrorCode.METHOD_NOT_FOUND


# ----------------------------------------------------------------- ping before init


def test_ping_before_initialize_both_ways() -> None:
    client = ClientSession()
    server = ServerSession()
    rid = client.send_ping()
    pump(client, server)
    assert drain(server) == []
    assert out(server) == [{"jsonrpc": "2.0", "id": rid, "result": {}}]
    sid = server.send_ping()
    pump(server, client)
    assert out(client) == [{"jsonrpc": "2.0", "id": sid, "result": {}}]
    assert client.state is SessionState.IDLE and server.state is SessionState.IDLE
    client.receive_data(line({"jsonrpc": "2.0", "id": rid, "result": {}}))
    assert drain(client) == [ResponseReceived(rid, "ping", {})]
    # Nothing but ping is allowed yet.
    with pytest.raises(LocalProtocolError):
        client.send_request("tools/list")
    with pytest.raises(LocalProtocolError):
        server.send_request("roots/list")


def test_ping_during_initialization() -> None:
    client = ClientSession()
    server = ServerSession()
    client.initialize()
    pump(client, server)
    assert server.state is SessionState.INITIALIZING
    client.send_ping()
    server.send_ping()
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send())
    assert client.state is SessionState.READY


def test_ping_with_a_timeout_before_initialize_times_out_quietly() -> None:
    """Regression: handle_timer raised LocalProtocolError for a ping sent
    before the handshake (cancelling it on the wire is not allowed then)."""
    client = ClientSession()
    rid = client.send_ping(now=0.0, timeout=1.0)
    out(client)
    assert client.handle_timer(2.0) == [rid]
    [failed] = drain(client)
    assert isinstance(failed, RequestFailed) and isinstance(failed.error, RequestTimeout)
    assert out(client) == []  # no notifications/cancelled in IDLE
    assert client.pending_requests == frozenset()
    client.receive_data(line({"jsonrpc": "2.0", "id": rid, "result": {}}))
    assert drain(client) == []  # the late answer is dropped quietly
    server = ServerSession()
    sid = server.send_ping(now=0.0, timeout=1.0)
    assert server.handle_timer(5.0) == [sid]
    assert [type(e) for e in drain(server)] == [RequestFailed]


# ---------------------------------------------------------------------- cancellation


def test_cancel_drops_the_late_response() -> None:
    client, server = make_pair()
    rid = client.send_request("tools/call", {"name": "slow"})
    pump(client, server)
    [received] = drain(server)
    client.cancel(rid, "no longer needed")
    [cancel] = out(client)
    assert cancel == notification(
        "notifications/cancelled", {"requestId": rid, "reason": "no longer needed"}
    )
    assert client.pending_requests == frozenset()
    # The server answers before it sees the cancellation: the answer is dropped.
    server.respond(received.request_id, {"content": []})
    pump(server, client)
    assert drain(client) == []
    # A second late answer for the same id is a plain unknown-id violation.
    client.receive_data(line({"jsonrpc": "2.0", "id": rid, "result": {}}))
    assert [type(e) for e in drain(client)] == [ProtocolViolation]


def test_respond_to_a_cancelled_request_sends_nothing() -> None:
    client, server = make_pair()
    rid = client.send_request("tools/call", {"name": "slow"})
    rid2 = client.send_request("tools/call", {"name": "slow"})
    pump(client, server)
    drain(server)
    client.cancel(rid, "stop")
    client.cancel(rid2)
    pump(client, server)
    assert drain(server) == [CancelRequested(rid, "stop"), CancelRequested(rid2, None)]
    assert server.open_requests == frozenset()
    server.respond(rid, {"content": []})
    server.respond_error(rid2, ErrorCode.INTERNAL_ERROR, "x")
    assert server.data_to_send() == b""
    with pytest.raises(LocalProtocolError):
        server.respond(rid, {})  # remembered once, then unknown


def test_cancel_rules() -> None:
    client = ClientSession()
    rid = client.initialize()
    with pytest.raises(LocalProtocolError, match="initialize"):
        client.cancel(rid)
    with pytest.raises(LocalProtocolError):
        client.cancel(12345)


def test_cancel_of_initialize_by_the_peer_is_ignored() -> None:
    server = ServerSession()
    server.receive_data(line(request(1, "initialize", initialize_params("2025-06-18"))))
    # The initialize was answered at once, so the cancellation refers to nothing
    # open (and initialize may never be cancelled anyway): ignored, no violation.
    server.receive_data(line(notification("notifications/cancelled", {"requestId": 1})))
    assert drain(server) == []
    assert out(server)[0]["id"] == 1
    assert server.state is SessionState.INITIALIZING


# ------------------------------------------------------------------------ progress


def test_progress_is_routed_to_the_request() -> None:
    client, server = make_pair("2025-06-18")
    rid = client.send_request("tools/call", {"name": "long"}, progress=True)
    other = client.send_request("tools/call", {"name": "quick"})
    [sent, _] = out(client)
    token = sent["params"]["_meta"]["progressToken"]
    server.receive_data(line(sent))
    [received] = drain(server)
    assert received.progress_token == token
    assert server.send_progress(rid, 1, total=3, message="first")
    assert server.send_progress(rid, 2.5)
    with pytest.raises(LocalProtocolError, match="increase"):
        server.send_progress(rid, 2.5)
    with pytest.raises(LocalProtocolError):
        server.send_progress(rid, 1)
    pump(server, client)
    assert drain(client) == [
        ProgressReceived(rid, token, 1, 3, "first"),
        ProgressReceived(rid, token, 2.5, None, None),
    ]
    server.respond(rid, {"content": []})
    pump(server, client)
    assert [type(e) for e in drain(client)] == [ResponseReceived]
    # Progress after the end is dropped quietly.
    client.receive_data(
        line(notification("notifications/progress", {"progressToken": token, "progress": 9}))
    )
    assert drain(client) == []
    assert other in client.pending_requests


def test_progress_outlives_a_refused_result_and_not_its_request() -> None:
    """A result the session refuses (not JSON) leaves the request open, its progress so
    far remembered (the next must still be more); answered, the request's progress is
    forgotten, and a new request under the same id starts afresh."""
    _, server = make_pair()
    token_params = {"name": "t", "_meta": {"progressToken": "p"}}
    server.receive_data(line(request(5, "tools/call", token_params)))
    [received] = drain(server)
    assert isinstance(received, RequestReceived) and received.progress_token == "p"
    assert server.send_progress(5, 2)
    with pytest.raises(LocalProtocolError, match="JSON"):
        server.respond(5, {"content": [], "bad": float("nan")})
    assert 5 in server.open_requests
    with pytest.raises(LocalProtocolError, match="increase"):
        server.send_progress(5, 1)
    server.respond(5, {"content": []})
    assert 5 not in server.open_requests
    server.receive_data(line(request(5, "tools/call", token_params)))
    drain(server)
    assert server.send_progress(5, 1)  # a new request: no earlier progress


def test_the_open_request_is_the_event_the_application_got() -> None:
    """One record per request: the session keeps open the very RequestReceived it
    handed the application (nothing else is made per request)."""
    _, server = make_pair()
    server.receive_data(line(request(9, "tools/call", {"name": "t"})))
    [received] = drain(server)
    assert server._requests.incoming[9] is received
    server.respond(9, {"content": []})
    assert 9 not in server._requests.incoming


def test_the_event_queue_is_what_next_event_takes_from() -> None:
    _, server = make_pair()
    queue = server.event_queue()
    server.receive_data(line(request(1, "tools/list")))
    assert len(queue) == 1 and queue is server.event_queue()
    event = server.next_event()
    assert isinstance(event, RequestReceived) and not queue


def test_the_data_source_takes_what_data_to_send_takes() -> None:
    _, server = make_pair()
    take = server.data_source()
    server.receive_data(line(request(1, "ping")))
    assert take() == line({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert take() == b"" and server.data_to_send() == b""

    class Framed(ServerSession):
        def data_to_send(self) -> bytes:
            return b"framed:" + super().data_to_send()

    refined = Framed(capabilities=ALL_SERVER_CAPS)
    assert refined.data_source()() == b"framed:"  # a subclass's refinement is kept
    spied = ServerSession(capabilities=ALL_SERVER_CAPS)
    spied.data_to_send = lambda: b"spied"  # type: ignore[method-assign]
    assert spied.data_source()() == b"spied"  # so is one set on the instance


def test_send_progress_without_a_token_returns_false() -> None:
    client, server = make_pair()
    rid = client.send_request("tools/call", {"name": "t"})
    pump(client, server)
    drain(server)
    assert server.send_progress(rid, 1) is False
    assert out(server) == []
    with pytest.raises(LocalProtocolError):
        server.send_progress("unknown", 1)


def test_progress_message_is_dropped_on_2024_11_05() -> None:
    client, server = make_pair("2024-11-05")
    rid = client.send_request("tools/call", {"name": "t"}, progress=True)
    pump(client, server)
    drain(server)
    server.send_progress(rid, 1, message="not in this revision")
    [message] = out(server)
    assert "message" not in message["params"]


def test_progress_keeps_an_existing_meta() -> None:
    client, _ = make_pair()
    client.send_request("tools/call", {"name": "t", "_meta": {"x": 1}}, progress=True)
    [sent] = out(client)
    assert sent["params"]["_meta"]["x"] == 1 and "progressToken" in sent["params"]["_meta"]


# ---------------------------------------------------------------------- pagination


@pytest.mark.parametrize(
    "method", ["tools/list", "resources/list", "prompts/list", "resources/templates/list"]
)
def test_pagination_cursors_pass_through(method: str) -> None:
    client, server = make_pair()
    rid = client.send_request(method, {"cursor": "opaque/cursor==1"})
    pump(client, server)
    [received] = drain(server)
    assert received.params == {"cursor": "opaque/cursor==1"}
    result = {"items": [], "nextCursor": "opaque/cursor==2"}
    server.respond(rid, result)
    pump(server, client)
    assert drain(client) == [ResponseReceived(rid, method, result)]


# ------------------------------------------------------------------------- logging


def test_logging_level_filtering() -> None:
    client, server = make_pair()
    assert server.log_level is None
    assert server.send_log_message("debug", "everything goes before setLevel")
    out(server)
    rid = client.send_request("logging/setLevel", {"level": "warning"})
    pump(client, server)
    assert drain(server) == []  # answered by the core itself
    assert out(server) == [{"jsonrpc": "2.0", "id": rid, "result": {}}]
    assert server.log_level == "warning"
    assert server.send_log_message("debug", "x") is False
    assert server.send_log_message("info", "x") is False
    assert server.send_log_message("notice", "x") is False
    assert out(server) == []
    assert server.send_log_message("warning", "w", logger="db") is True
    assert server.send_log_message("emergency", {"k": 1}) is True
    assert out(server) == [
        notification("notifications/message", {"level": "warning", "data": "w", "logger": "db"}),
        notification("notifications/message", {"level": "emergency", "data": {"k": 1}}),
    ]
    with pytest.raises(LocalProtocolError):
        server.send_log_message("loud", "x")


def test_log_messages_reach_the_client() -> None:
    client, server = make_pair()
    server.send_log_message("info", "hello")
    pump(server, client)
    assert drain(client) == [
        NotificationReceived("notifications/message", {"level": "info", "data": "hello"})
    ]


# ------------------------------------------------------------ resource subscriptions


def _serve(
    client: ClientSession,
    server: ServerSession,
    method: str,
    params: dict,
    result: dict | None = None,
) -> None:
    rid = client.send_request(method, params)
    pump(client, server)
    drain(server)
    if result is None:
        server.respond_error(rid, ErrorCode.RESOURCE_NOT_FOUND, "no such resource")
    else:
        server.respond(rid, result)
    pump(server, client)
    drain(client)


def test_resource_subscription_tracking() -> None:
    client, server = make_pair()
    uri = "file:///watched.txt"
    assert server.send_resource_updated(uri) is False
    _serve(client, server, "resources/subscribe", {"uri": "file:///missing"})  # refused
    assert server.subscriptions == set()
    _serve(client, server, "resources/subscribe", {"uri": uri}, {})
    assert server.subscriptions == {uri}
    assert server.send_resource_updated(uri) is True
    assert server.send_resource_updated("file:///other.txt") is False
    pump(server, client)
    assert drain(client) == [NotificationReceived("notifications/resources/updated", {"uri": uri})]
    _serve(client, server, "resources/unsubscribe", {"uri": uri}, {})
    assert server.subscriptions == set()
    assert server.send_resource_updated(uri) is False
    assert out(server) == []


# ------------------------------------------------------------------------ timeouts


def test_timeouts() -> None:
    client, server = make_pair()
    assert client.next_deadline() is None
    a = client.send_request("tools/call", {"name": "a"}, now=100.0, timeout=5.0)
    b = client.send_request("tools/call", {"name": "b"}, now=101.0, timeout=1.0)
    c = client.send_request("tools/call", {"name": "c"})
    assert client.next_deadline() == 102.0
    pump(client, server)
    drain(server)
    assert client.handle_timer(101.5) == []
    assert drain(client) == []
    assert client.handle_timer(102.0) == [b]
    [failed] = drain(client)
    assert failed.request_id == b and failed.method == "tools/call"
    assert isinstance(failed.error, RequestTimeout)
    assert failed.error.code == ErrorCode.REQUEST_TIMEOUT
    assert out(client) == [
        notification("notifications/cancelled", {"requestId": b, "reason": "request timed out"})
    ]
    assert client.next_deadline() == 105.0
    assert client.pending_requests == {a, c}
    # The server drops the timed-out request; a late answer is dropped too.
    server.respond(b, {"content": []})
    pump(server, client)
    assert drain(client) == []
    assert client.handle_timer(1000.0) == [a]
    assert client.next_deadline() is None
    assert client.pending_requests == {c}


def test_timeout_needs_now() -> None:
    client, _ = make_pair()
    with pytest.raises(LocalProtocolError, match="now"):
        client.send_request("tools/list", timeout=5.0)
    assert out(client) == []


def test_initialize_timeout_fails_the_client() -> None:
    client = ClientSession()
    rid = client.initialize(now=0.0, timeout=10.0)
    out(client)
    assert client.next_deadline() == 10.0
    assert client.handle_timer(10.0) == [rid]
    [failed] = drain(client)
    assert failed.method == "initialize" and isinstance(failed.error, RequestTimeout)
    assert client.state is SessionState.FAILED
    assert out(client) == []  # initialize is never cancelled


# ----------------------------------------------------------------- closing and EOF


def _with_pending() -> tuple[ClientSession, list[Any]]:
    client, server = make_pair()
    rids = [
        client.send_request("tools/call", {"name": "a"}, now=0.0, timeout=60.0, progress=True),
        client.send_request("tools/list"),
        client.send_ping(),
    ]
    pump(client, server)
    return client, rids


def _assert_closed(client: ClientSession, rids: list[Any]) -> None:
    events = drain(client)
    assert isinstance(events[-1], ConnectionClosed)
    failed = events[:-1]
    assert sorted(e.request_id for e in failed) == sorted(rids)
    for event in failed:
        assert isinstance(event, RequestFailed)
        assert isinstance(event.error, ConnectionClosedError)
        assert event.error.code == ErrorCode.CONNECTION_CLOSED
    assert client.state is SessionState.CLOSED
    assert client.pending_requests == frozenset()
    assert client.next_deadline() is None
    assert client.handle_timer(1e9) == []
    with pytest.raises(LocalProtocolError):
        client.send_ping()
    with pytest.raises(LocalProtocolError):
        client.send_request("tools/list")
    with pytest.raises(LocalProtocolError):
        client.send_notification("notifications/roots/list_changed")


def test_close_fails_every_pending_request() -> None:
    client, rids = _with_pending()
    client.close()
    _assert_closed(client, rids)
    client.close()  # idempotent
    assert drain(client) == []


def test_eof_fails_every_pending_request() -> None:
    client, rids = _with_pending()
    client.receive_data(b"")
    _assert_closed(client, rids)
    client.receive_data(b"")  # more EOFs are harmless
    assert drain(client) == []
    with pytest.raises(RuntimeError):
        client.receive_data(b"data after the end")


def test_eof_delivers_a_last_line_without_newline() -> None:
    client, server = make_pair()
    rid = client.send_request("tools/list")
    pump(client, server)
    drain(server)
    server.respond(rid, {"tools": []})
    client.receive_data(server.data_to_send().rstrip(b"\n"))
    assert drain(client) == []  # not a line yet
    client.receive_data(b"")
    events = drain(client)
    assert events == [ResponseReceived(rid, "tools/list", {"tools": []}), ConnectionClosed()]


def test_server_close_forgets_open_requests() -> None:
    client, server = make_pair()
    rid = client.send_request("tools/list")
    pump(client, server)
    drain(server)
    server.close()
    assert drain(server) == [ConnectionClosed()]
    assert server.open_requests == frozenset()
    # Answering after close is dropped quietly (adapters may race with the close).
    server.respond(rid, {"tools": []})
    server.respond_error(rid, ErrorCode.INTERNAL_ERROR, "late")
    assert server.data_to_send() == b""


# ------------------------------------------------------------------------- batches


def test_batch_answered_as_one_array() -> None:
    _, server = make_pair("2025-03-26")
    server.receive_data(
        line(
            [
                request(1, "tools/list"),
                notification("notifications/roots/list_changed"),
                request(2, "ping"),
                request(3, "tools/call", {"name": "t"}),
                notification("notifications/progress", {"progressToken": "x", "progress": 1}),
            ]
        )
    )
    events = drain(server)
    assert events == [
        RequestReceived(1, "tools/list", {}),
        NotificationReceived("notifications/roots/list_changed", {}),
        RequestReceived(3, "tools/call", {"name": "t"}),
    ]
    assert out(server) == []  # ping is answered, but the batch waits for the rest
    server.respond(3, {"content": []})
    assert out(server) == []
    server.respond(1, {"tools": []})
    [batch] = out(server)
    assert batch == [
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {"jsonrpc": "2.0", "id": 3, "result": {"content": []}},
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}},
    ]
    # Later messages are not batched.
    server.receive_data(line(request(4, "ping")))
    assert out(server) == [{"jsonrpc": "2.0", "id": 4, "result": {}}]


def test_batch_of_notifications_gets_no_response() -> None:
    _, server = make_pair("2025-03-26")
    server.receive_data(line([notification("notifications/roots/list_changed")] * 2))
    assert len(drain(server)) == 2
    assert server.data_to_send() == b""


def test_batch_with_a_cancelled_request() -> None:
    _, server = make_pair("2025-03-26")
    server.receive_data(line([request(1, "tools/list"), request(2, "tools/list")]))
    drain(server)
    server.receive_data(line(notification("notifications/cancelled", {"requestId": 2})))
    assert drain(server) == [CancelRequested(2, None)]
    server.respond(1, {"tools": []})
    assert out(server) == [[{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}]]


def test_batch_errors_go_in_the_array() -> None:
    _, server = make_pair("2025-03-26")
    server.receive_data(line([request(1, "nope"), request(2, "tools/call", {}), "junk"]))
    assert [v.error.code for v in drain(server)] == [-32600, -32601, -32602]
    [batch] = out(server)
    assert sorted((repr(m["id"]), m["error"]["code"]) for m in batch) == [
        ("1", -32601),
        ("2", -32602),
        ("None", -32600),
    ]


# --------------------------------------------------------------------- elicitation


FORM = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
URL = {"mode": "url", "message": "Sign in", "url": "https://example.com", "elicitationId": "e"}


@pytest.mark.parametrize(
    ("declared", "form_ok", "url_ok"),
    [
        ({}, True, False),
        ({"form": {}}, True, False),
        ({"url": {}}, False, True),
        ({"form": {}, "url": {}}, True, True),
    ],
)
def test_elicitation_modes_on_2025_11_25(declared: dict, form_ok: bool, url_ok: bool) -> None:
    client, server = make_pair("2025-11-25", client_caps={"elicitation": declared})
    for params, ok in ((FORM, form_ok), ({**FORM, "mode": "form"}, form_ok), (URL, url_ok)):
        if ok:
            rid = server.send_request("elicitation/create", params)
            pump(server, client)
            assert drain(client) == [RequestReceived(rid, "elicitation/create", params)]
        else:
            with pytest.raises(LocalProtocolError, match="mode"):
                server.send_request("elicitation/create", params)
            assert out(server) == []
            # And a client refuses an undeclared mode it receives anyway (-32602).
            client.receive_data(line(request("e1", "elicitation/create", params)))
            [violation] = drain(client)
            assert violation.error.code == ErrorCode.INVALID_PARAMS
            assert out(client)[0]["error"]["code"] == ErrorCode.INVALID_PARAMS


def test_elicitation_params_are_checked() -> None:
    _, server = make_pair("2025-11-25")
    with pytest.raises(LocalProtocolError):
        server.send_request("elicitation/create", {"mode": "url", "message": "m"})  # no url
    with pytest.raises(LocalProtocolError):
        server.send_request("elicitation/create", {"message": "m"})  # no requestedSchema
    with pytest.raises(LocalProtocolError):
        server.send_request("elicitation/create", {"mode": "other", "message": "m"})


def test_elicitation_needs_2025_06_18() -> None:
    _, server = make_pair("2025-03-26")
    with pytest.raises(LocalProtocolError):
        server.send_request("elicitation/create", FORM)


# -------------------------------------------------------------- framing limits


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b""])
def test_message_size_limit_is_exact(ending: bytes) -> None:
    """Regression: a LF-terminated (or final) line one byte over the limit was accepted."""
    limit = 100
    base = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    for size, accepted in ((limit - 1, True), (limit, True), (limit + 1, False)):
        message = base[:-1] + b" " * (size - len(base)) + b"}"
        assert len(message) == size
        server = ServerSession(max_message_size=limit)
        server.receive_data(message + ending)
        if not ending:
            server.receive_data(b"")
        events = [e for e in drain(server) if not isinstance(e, ConnectionClosed)]
        if accepted:
            assert events == []
            assert out(server) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
        else:
            assert [e.error.code for e in events] == [ErrorCode.INVALID_REQUEST]
            assert out(server)[0]["error"]["code"] == ErrorCode.INVALID_REQUEST
        text = ServerSession(max_message_size=limit)
        text.receive_text(message)
        assert len(drain(text)) == (0 if accepted else 1)


def test_depth_limit() -> None:
    server = ServerSession(max_depth=5)
    ok = request(1, "ping", {"a": [[[1]]]})  # depth 5
    server.receive_data(line(ok))
    assert drain(server) == []
    assert out(server) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    server.receive_data(line(request(2, "ping", {"a": [[[[1]]]]})))  # depth 6
    [violation] = drain(server)
    assert violation.error.code == ErrorCode.PARSE_ERROR
    # Brackets inside strings do not count.
    server.receive_data(line(request(3, "ping", {"a": "[[[[[[[[[[{{{{{{{{"})))
    assert drain(server) == []
    assert out(server)[-1] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_messages_to_send_returns_json_values() -> None:
    client, _ = make_pair()
    client.send_ping()
    [message] = client.messages_to_send()
    assert message["method"] == "ping"
    assert client.messages_to_send() == []
    assert client.data_to_send() == b""


def test_receive_text_and_receive_message_work_like_receive_data() -> None:
    server = ready_server()
    server.receive_text('{"jsonrpc":"2.0","id":1,"method":"ping"}')
    server.receive_text(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
    server.receive_message(request(3, "ping"))
    assert [m["id"] for m in out(server)] == [1, 2, 3]
    server.receive_text("{broken")
    [violation] = drain(server)
    assert violation.error.code == ErrorCode.PARSE_ERROR


def test_receive_text_limit_counts_bytes_not_characters() -> None:
    from sansio_mcp import ProtocolViolation, ServerSession

    server = ServerSession(capabilities={"tools": {}}, max_message_size=64)
    # 30 characters, 90 bytes of UTF-8: over the limit.
    server.receive_text('{"jsonrpc":"2.0","method":"' + "€" * 30 + '"}')
    event = server.next_event()
    assert isinstance(event, ProtocolViolation) and "64-byte limit" in event.error.message


def test_non_dict_meta_is_a_local_error() -> None:
    import pytest

    from sansio_mcp import ClientSession, LocalProtocolError

    client = ClientSession()
    with pytest.raises(LocalProtocolError, match="_meta must be a dict"):
        client.send_request("ping", {"_meta": ["x"]}, progress=True)


def test_a_dual_era_server_names_only_versions_a_request_may_carry() -> None:
    """server/discover and -32022 list what ``_meta`` may name: a client told a
    handshake version could not use it there (and must not fall back on -32022)."""
    from sansio_mcp._versions import (
        HANDSHAKE_REVISIONS,
        META_CLIENT_CAPABILITIES,
        META_PROTOCOL_VERSION,
        STATELESS_REVISIONS,
    )

    server = ServerSession(capabilities={"tools": {}})
    assert set(server.supported_versions) & set(HANDSHAKE_REVISIONS)  # it speaks both eras
    meta = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}
    server.receive_message(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    )
    old = {**meta, META_PROTOCOL_VERSION: "2025-06-18"}
    server.receive_message(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": old}}
    )
    discovered, refused = server.messages_to_send()
    assert set(discovered["result"]["supportedVersions"]) <= set(STATELESS_REVISIONS)
    assert refused["error"]["code"] == -32022
    assert set(refused["error"]["data"]["supported"]) <= set(STATELESS_REVISIONS)


def test_an_answer_is_queued_as_an_outgoing_like_any_message() -> None:
    """The answer to a request is queued without ``Outgoing(...)`` (see ``_outbox``):
    what a transport takes is still an ``Outgoing``, equal to one built the usual way."""
    from sansio_mcp import Outgoing, jsontext

    server = ready_server()
    server.receive_data(line(request(7, "tools/call", {"name": "echo"})))
    [event] = drain(server)
    assert isinstance(event, RequestReceived)
    result = {"content": [{"type": "text", "text": "hi"}]}
    server.respond(event.request_id, result)
    [item] = server.outgoing_to_send()
    message = {"jsonrpc": "2.0", "id": 7, "result": result}
    assert type(item) is Outgoing
    assert item == Outgoing(message, jsontext.encode(message), 7)
    assert (item.message, item.data, item.route) == (message, jsontext.encode(message), 7)
