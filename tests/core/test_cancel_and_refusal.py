"""Cancellation names the sender's own requests; giving up on a request never
raises; a handler result the session refuses still gets the request answered;
the methods of 2026-07-28 alone do not exist inside a handshake session; a
refused request is logged at DEBUG, what needs an operator at WARNING."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from helpers import (
    ALL_SERVER_CAPS,
    drain,
    initialize_params,
    line,
    make_pair,
    notification,
    pump,
    ready_server,
    request,
)

from sansio_mcp import HANDSHAKE_REVISIONS, ClientSession, RequestFailed, ServerSession
from sansio_mcp._events import CancelRequested, ResponseReceived
from sansio_mcp._versions import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from sansio_mcp.runtime._driver import Driver, Waiter


def test_a_server_cancelling_its_request_leaves_the_clients_request_with_that_id() -> None:
    client, server = make_pair()
    ours = client.send_request("tools/list")
    pump(client, server)
    drain(server)
    theirs = server.send_request("sampling/createMessage", {"messages": [], "maxTokens": 5})
    while theirs != client._requests.wire_id(ours):  # the two sides number alike: reach the same id
        theirs = server.send_request("sampling/createMessage", {"messages": [], "maxTokens": 5})
    pump(server, client)
    drain(client)
    server.cancel(theirs, "no longer needed")
    pump(server, client)
    assert drain(client) == [CancelRequested(theirs, "no longer needed")]
    assert ours in client.pending_requests  # still waiting for its answer
    assert theirs not in client.open_requests


def test_a_cancel_for_the_servers_handshake_ping_does_not_end_the_clients_initialize() -> None:
    client = ClientSession()
    server = ServerSession()
    client.initialize()
    pump(client, server)
    # The server pinged during the handshake (its id 0) and gave up on it.
    client.receive_message(notification("notifications/cancelled", {"requestId": 0}))
    assert not [e for e in drain(client) if isinstance(e, RequestFailed)]
    pump(server, client)
    events = drain(client)
    assert any(isinstance(e, ResponseReceived) and e.method == "initialize" for e in events)


def _driver(session: Any, handle_request: Any = lambda event: {}) -> Driver:
    return Driver(
        session,
        handle_request=handle_request,
        handle_notification=None,
        spawn=lambda request_id, fn: None,
        cancel=lambda request_id: None,
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_giving_up_on_the_opening_request_never_raises(mode: str) -> None:
    """initialize (or an auto-mode server/discover) may not be cancelled on the
    wire: abandoning it forgets it, and its late answer is dropped."""
    client = ClientSession(mode=mode)
    driver = _driver(client)
    request_id = client.start()
    driver.register(request_id, Waiter(lambda: None))
    driver.abandon(request_id)
    assert request_id not in client.pending_requests
    assert client.data_to_send().count(b"notifications/cancelled") == 0


def test_a_result_the_session_refuses_is_answered_with_an_internal_error() -> None:
    server = ServerSession(capabilities={"tools": {}})
    bad_round = {"resultType": "input_required", "inputRequests": {"k": {"method": "bogus"}}}
    driver = _driver(server, lambda event: bad_round)
    meta = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}
    server.receive_message(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "_meta": meta}}
    )
    server.receive_message(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}
    )
    driver.process_events()  # does not raise, and goes on to the second request
    answers = {m["id"]: m["error"]["code"] for m in server.messages_to_send()}
    assert answers == {1: -32603, 2: -32603}
    assert not server.open_requests


def test_an_id_the_peer_cancelled_is_not_taken_by_its_next_request() -> None:
    """The cancelled handler's late answer must not answer a newcomer with its id."""
    _, server = make_pair()
    server.receive_message({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    server.receive_message(notification("notifications/cancelled", {"requestId": 5}))
    server.receive_message({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    drain(server)
    [refusal] = server.messages_to_send()
    assert refusal["id"] == 5 and refusal["error"]["code"] == -32600
    server.respond(5, {"tools": []})  # the first handler, late: dropped
    assert server.messages_to_send() == []


@pytest.mark.parametrize(
    ("receiver", "method"),
    [
        ("client", "notifications/roots/list_changed"),  # only a client sends it
        ("server", "notifications/message"),  # only a server sends it
        ("server", "notifications/tools/list_changed"),
    ],
)
def test_a_notification_only_our_side_sends_is_a_violation(receiver: str, method: str) -> None:
    from sansio_mcp import NotificationReceived, ProtocolViolation

    client, server = make_pair()
    session = client if receiver == "client" else server
    params = {"level": "info", "data": "x"} if method == "notifications/message" else None
    session.receive_message(notification(method, params))
    events = drain(session)
    assert [type(e) for e in events] == [ProtocolViolation]
    assert not [e for e in events if isinstance(e, NotificationReceived)]


def test_a_notification_of_no_mcp_revision_still_arrives() -> None:
    from sansio_mcp import NotificationReceived

    client, _ = make_pair()
    client.receive_message(notification("notifications/x-vendor/thing", {"a": 1}))
    assert [type(e) for e in drain(client)] == [NotificationReceived]


STATELESS_ONLY = ("server/discover", "subscriptions/listen")
LISTEN = {"notifications": {"toolsListChanged": True}}


@pytest.mark.parametrize("version", HANDSHAKE_REVISIONS)
@pytest.mark.parametrize("method", STATELESS_ONLY)
def test_stateless_only_methods_are_not_found_inside_a_handshake_session(
    version: str, method: str
) -> None:
    # No handshake revision has them: -32601 (not "params._meta is required"), both
    # once the session is ready and while it waits for notifications/initialized.
    ready = ready_server(version)
    starting = ServerSession(capabilities=ALL_SERVER_CAPS)
    starting.receive_data(line(request("init", "initialize", initialize_params(version))))
    starting.messages_to_send()
    for server in (ready, starting):
        server.receive_message(request(7, method, LISTEN if method != "server/discover" else None))
        [answer] = server.messages_to_send()
        assert answer["id"] == 7 and answer["error"]["code"] == -32601, answer
        assert method in answer["error"]["message"]


@pytest.mark.parametrize("method", STATELESS_ONLY)
def test_stateless_only_methods_keep_their_meaning_with_stateless_meta_or_no_session(
    method: str,
) -> None:
    meta = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}
    params = {"_meta": meta, **(LISTEN if method != "server/discover" else {})}
    # A request carrying stateless _meta is served statelessly, inside a session or not.
    server = ready_server("2025-06-18")
    server.receive_message(request(1, method, params))
    [answer] = server.messages_to_send()
    assert "result" in answer or answer.get("method") == "notifications/subscriptions/acknowledged"
    # Before any initialize, one without _meta is a 2026-07-28 request missing it.
    fresh = ServerSession(capabilities=ALL_SERVER_CAPS)
    fresh.receive_message(request(2, method, {k: v for k, v in params.items() if k != "_meta"}))
    [refused] = fresh.messages_to_send()
    assert refused["error"]["code"] == -32602 and "_meta" in refused["error"]["message"]


@pytest.mark.parametrize(
    "message",
    [
        request(1, "resources/list"),  # a capability the server did not advertise
        request(2, "prompts/get", {"name": "p"}),
        request(3, "no/such/method"),
        request(4, "tools/call", {"name": 5}),  # invalid params
        request(5, "subscriptions/listen", LISTEN),  # not in the session's revision
    ],
)
def test_a_refused_request_is_logged_quietly(
    message: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    # Answered with an error, the client's mistake is its own: no operator is needed.
    server = ready_server("2025-06-18", capabilities={"tools": {}})
    driver = _driver(server)
    caplog.set_level(logging.DEBUG, logger="sansio_mcp")
    server.receive_message(message)
    driver.process_events()
    [answer] = server.messages_to_send()
    assert answer["id"] == message["id"] and "error" in answer
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert [r for r in caplog.records if r.levelno == logging.DEBUG and "refused" in r.message]


@pytest.mark.parametrize(
    "data",
    [
        b"this is no JSON\n",  # unparseable: the peer is broken
        line({"jsonrpc": "2.0", "result": {}, "id": 99}),  # an answer to nothing we asked
        line(notification("notifications/message", {"level": "info", "data": "x"})),
    ],
)
def test_what_is_no_answered_request_still_warns(
    data: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    server = ready_server("2025-06-18", capabilities={"tools": {}})
    driver = _driver(server)
    server.receive_data(data)
    driver.process_events()
    assert [r for r in caplog.records if r.levelno == logging.WARNING], data


@pytest.mark.parametrize(
    ("version", "sampling", "served"),
    [
        ("2025-11-25", {"tools": {}}, True),
        ("2025-11-25", {}, False),
        ("2025-06-18", {"tools": {}}, False),  # no such capability in its revision
    ],
)
def test_a_client_refuses_sampling_with_tools_it_did_not_declare(
    version: str, sampling: dict[str, Any], served: bool
) -> None:
    """A server (or a gateway taking a handshake client to have declared it) that
    offers tools anyway gets -32602, and the client's handler never sees them."""
    client, _server = make_pair(version, client_caps={"sampling": sampling})
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 5,
        "tools": [{"name": "t", "inputSchema": {"type": "object"}}],
    }
    client.receive_message(request("s-1", "sampling/createMessage", params))
    events = drain(client)
    if served:
        assert [e.method for e in events] == ["sampling/createMessage"]
        return
    (answer,) = client.messages_to_send()
    assert answer["id"] == "s-1" and answer["error"]["code"] == -32602
    assert "sampling.tools" in answer["error"]["message"]
    assert not [e for e in events if getattr(e, "method", None) == "sampling/createMessage"]
