"""A router of one's own built on :class:`StreamableHTTPServer`'s documented
extension points alone (what the gateway is built from): no handshake sessions,
each handshake-era request served on a session of its own, its messages
rewritten on the way out, its errors with HTTP 200."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sansio_mcp import ErrorCode, Outgoing, ServerSession, jsontext
from sansio_mcp.http import Exchange, HTTPRequest, StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server

from .helpers import (
    initialize,
    post_request,
    received_request,
    stateless_headers,
    stateless_request,
)

VERSION = "2025-06-18"


class Sessionless(StreamableHTTPServer):
    """Keeps no handshake session; tags what it sends; counts the sessions it makes."""

    keeps_sessions = False

    def __init__(self) -> None:
        super().__init__(build_server().create_session)
        self.made: list[ServerSession] = []

    def new_session(self) -> ServerSession:
        session = super().new_session()
        self.made.append(session)
        return session

    def post_without_session(
        self, request: HTTPRequest, obj: Any, messages: list[dict[str, Any]]
    ) -> Exchange:
        message = messages[0]
        session = self.new_session()
        session.receive_message(initialize(version=VERSION))
        session.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        session.messages_to_send()
        session.receive_message(message)
        exchange = self.request_exchange(session, message["id"])
        exchange.error_statuses = {}
        exchange.rewrite = tagged
        self.flush(session)
        return exchange


def tagged(item: Outgoing) -> Outgoing:
    obj = {**item.message, "tagged": True}
    return Outgoing(obj, jsontext.encode(obj), item.route)


def test_initialize_is_answered_without_a_session_when_none_are_kept() -> None:
    router = Sessionless()
    exchange = router.handle(post_request(initialize(version=VERSION)))
    assert exchange.status == 200 and "mcp-session-id" not in exchange.headers
    assert json.loads(exchange.take())["result"]["protocolVersion"] == VERSION
    assert exchange.session is None and router.sessions.ids == frozenset()
    assert len(router.made) == 1  # the session made to learn the versions answered it


def test_a_request_without_a_session_is_served_alone_through_the_hooks() -> None:
    router = Sessionless()
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    exchange = router.handle(post_request(request, **{"mcp-protocol-version": VERSION}))
    session = exchange.session
    assert session is not None and session is router.made[-1]
    assert router.serving(session) and not router.owns(session)
    event = received_request(session)
    session.respond_error(event.request_id, ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY, "no")
    router.flush(session)
    # The answer went through the rewrite, and -32021 kept HTTP 200 (error_statuses).
    assert exchange.finished and exchange.status == 200
    answer = json.loads(exchange.take())
    assert answer["tagged"] is True and answer["error"]["code"] == -32021
    assert not router.serving(session)


def test_without_the_hooks_such_a_request_needs_a_session() -> None:
    router = StreamableHTTPServer(build_server().create_session)
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    exchange = router.handle(post_request(request, **{"mcp-protocol-version": VERSION}))
    assert exchange.status == 400
    assert "Mcp-Session-Id header is required" in json.loads(exchange.take())["error"]["message"]


def test_a_refusal_keeps_its_status_by_default() -> None:
    """The same -32021 on a stateless request's exchange: HTTP 400 (the default
    ``error_statuses``)."""
    router = StreamableHTTPServer(build_server().create_session)
    message = stateless_request("tools/list")
    exchange = router.handle(post_request(message, **stateless_headers(message)))
    assert exchange.session is not None
    event = received_request(exchange.session)
    exchange.session.respond_error(
        event.request_id, ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY, "no"
    )
    router.flush(exchange.session)
    assert exchange.finished and exchange.status == 400


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1:8000"])
def test_route_is_handle_without_the_host_check(host: str) -> None:
    router = StreamableHTTPServer(build_server().create_session)
    request = post_request(initialize(version=VERSION), host=host)
    refusal = router.host_refusal(request)
    assert (refusal is not None and refusal.status == 403) == (host == "evil.example")
    assert router.handle(request).status == (403 if refusal is not None else 200)
    assert router.route(request).status == 200
    assert router.handshake_versions and VERSION in router.handshake_versions


class _Audited(ServerSession):
    """Refines what the session takes in: it notes the method of every message."""

    def __init__(self, seen: list[str], **options: Any) -> None:
        super().__init__(**options)
        self.seen = seen

    def receive_message(self, obj: Any, **options: Any) -> None:
        self.seen.append(obj.get("method", "?") if isinstance(obj, dict) else "batch")
        super().receive_message(obj, **options)


class _CountedElsewhere(ServerSession):
    """Refines _served_elsewhere, which a stateless request's shortcut would skip."""

    def __init__(self, seen: list[str], **options: Any) -> None:
        super().__init__(**options)
        self.seen = seen

    def _served_elsewhere(self, request_id: Any, method: str, params: dict[str, Any]) -> bool:
        self.seen.append(method)
        return super()._served_elsewhere(request_id, method, params)


def test_a_refined_receive_message_sees_every_request_line() -> None:
    """The request shortcut of ``receive_data`` is not taken past a subclass's
    ``receive_message``: an auditing session sees each line's request."""
    seen: list[str] = []
    session = _Audited(seen, capabilities={"tools": {}})
    for message in (
        initialize(version=VERSION),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ):
        session.receive_data(json.dumps(message).encode() + b"\n")
    assert seen == ["initialize", "notifications/initialized", "tools/list"]
    assert received_request(session).method == "tools/list"


@pytest.mark.parametrize("refined", [_Audited, _CountedElsewhere])
def test_a_refined_session_sees_a_stateless_request(refined: type[Any]) -> None:
    """Nor is the stateless request's shortcut taken past a subclass that refines a
    method it skips: the session a factory makes sees the request, which is served."""
    seen: list[str] = []
    router = StreamableHTTPServer(lambda: refined(seen, capabilities={"tools": {}}))
    message = stateless_request("tools/list")
    exchange = router.handle(post_request(message, **stateless_headers(message)))
    assert seen == ["tools/list"]
    assert exchange.session is not None
    assert received_request(exchange.session).method == "tools/list"
