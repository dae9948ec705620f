"""``ServerSession.adopt_handshake``: a fresh session starts READY at a known
revision, as if the client's handshake (done elsewhere) had been replayed into it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import (
    ALL_CLIENT_CAPS,
    ALL_SERVER_CAPS,
    CLIENT_INFO,
    drain,
    initialize_params,
    notification,
    request,
)
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import (
    HANDSHAKE_REVISIONS,
    STATELESS_REVISIONS,
    LocalProtocolError,
    RequestReceived,
    ServerSession,
    SessionInitialized,
    SessionState,
)

META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS_REVISIONS[-1],
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}

#: What a client may send after its handshake (the answers are the core's own or refusals).
FOLLOW_UP = [
    request(1, "ping"),
    request(2, "logging/setLevel", {"level": "info"}),
    request(3, "tools/call", {"name": "echo", "arguments": {}}),
    request(4, "tasks/list"),
    request(5, "elicitation/create", {}),
    request(6, "initialize", initialize_params("2025-11-25")),
    notification("notifications/roots/list_changed"),
    request(7, "tools/list", {"_meta": META}),
]


def _replayed(version: str, caps: dict[str, Any], info: dict[str, Any]) -> ServerSession:
    session = ServerSession(capabilities=ALL_SERVER_CAPS)
    params = {"protocolVersion": version, "capabilities": caps, "clientInfo": info}
    session.receive_message(request("init", "initialize", params))
    session.receive_message(notification("notifications/initialized"))
    session.messages_to_send()
    return session


def _adopted(version: str, caps: dict[str, Any], info: dict[str, Any]) -> ServerSession:
    session = ServerSession(capabilities=ALL_SERVER_CAPS)
    session.adopt_handshake(version, caps, info)
    return session


def _serve(session: ServerSession) -> list[Any]:
    """Each follow-up's output and events (requests answered, so the next may come)."""
    seen: list[Any] = []
    for message in FOLLOW_UP:
        session.receive_message(message)
        for event in drain(session):
            if isinstance(event, RequestReceived):
                session.respond(event.request_id, {"content": [], "echo": event.method})
            seen.append(event)
        seen.append(session.messages_to_send())
    for method in ("roots/list", "sampling/createMessage", "elicitation/create"):
        # What the server may ask depends on the client's adopted capabilities.
        try:
            session.send_request(method, {})
        except LocalProtocolError as exc:
            seen.append(str(exc))
        seen.append(session.messages_to_send())
    return seen


@pytest.mark.parametrize("version", HANDSHAKE_REVISIONS)
def test_adopted_session_is_the_replayed_one(version: str) -> None:
    adopted = _adopted(version, ALL_CLIENT_CAPS, CLIENT_INFO)
    replayed = _replayed(version, ALL_CLIENT_CAPS, CLIENT_INFO)
    assert adopted.state is SessionState.READY
    assert adopted.protocol_version == version
    assert adopted.peer_capabilities == ALL_CLIENT_CAPS
    assert adopted.peer_info == CLIENT_INFO
    assert adopted.messages_to_send() == []  # the client had its answer elsewhere
    assert (
        drain(adopted)
        == drain(replayed)
        == [SessionInitialized(version, CLIENT_INFO, ALL_CLIENT_CAPS, None)]
    )
    assert _serve(adopted) == _serve(replayed)


@given(
    version=st.sampled_from(HANDSHAKE_REVISIONS),
    caps=st.dictionaries(
        st.sampled_from(["roots", "sampling", "elicitation", "experimental", "tasks"]),
        st.just({}),
    ),
    name=st.text(max_size=5),
)
def test_adopted_equals_replayed_for_any_client(
    version: str, caps: dict[str, Any], name: str
) -> None:
    info = {"name": name, "version": "0"}
    adopted = _adopted(version, caps, info)
    replayed = _replayed(version, caps, info)
    assert (adopted.state, adopted.revision, adopted.peer_capabilities) == (
        replayed.state,
        replayed.revision,
        replayed.peer_capabilities,
    )
    assert _serve(adopted) == _serve(replayed)


def test_stateless_requests_are_still_served_beside_it() -> None:
    session = _adopted("2025-11-25", {}, CLIENT_INFO)
    drain(session)
    session.receive_message(request(9, "tools/call", {"name": "echo", "_meta": META}))
    [event] = drain(session)
    assert isinstance(event, RequestReceived) and event.meta is not None
    assert session.is_stateless_request(9)
    assert session.state is SessionState.READY


@pytest.mark.parametrize(
    ("version", "kwargs", "says"),
    [
        (
            STATELESS_REVISIONS[0],
            {},
            f"{STATELESS_REVISIONS[0]!r} is a stateless revision: it has no handshake",
        ),
        ("1999-01-01", {}, "unknown protocol version '1999-01-01'; known: ['2024-11-05'"),
        ("", {}, "unknown protocol version ''"),
        (
            "2024-11-05",
            {"supported_versions": ("2025-11-25", "2026-07-28")},
            "this session does not support '2024-11-05'; its handshake versions: ['2025-11-25']",
        ),
        (
            "2025-11-25",
            {"supported_versions": ("2026-07-28",)},
            "this session does not support '2025-11-25'; its handshake versions: []",
        ),
    ],
)
def test_refuses_a_version_without_a_handshake_here(
    version: str, kwargs: dict[str, Any], says: str
) -> None:
    session = ServerSession(**kwargs)
    with pytest.raises(LocalProtocolError, match="^" + re.escape(says)):
        session.adopt_handshake(version, {}, CLIENT_INFO)
    assert (session.state, session.revision, drain(session)) == (SessionState.IDLE, None, [])


@pytest.mark.parametrize(
    ("caps", "info", "says"),
    [
        ([], CLIENT_INFO, "initialize: parameter 'capabilities' must be an object"),
        ({}, "client", "initialize: parameter 'clientInfo' must be an object"),
    ],
)
def test_refuses_client_details_that_are_not_objects(caps: Any, info: Any, says: str) -> None:
    session = ServerSession()
    with pytest.raises(LocalProtocolError, match=re.escape(says)):
        session.adopt_handshake("2025-11-25", caps, info)
    assert session.state is SessionState.IDLE
    session.adopt_handshake("2025-11-25", {}, CLIENT_INFO)  # still fresh: it can adopt
    assert session.state is SessionState.READY


def test_refuses_a_session_that_is_not_fresh() -> None:
    adopted = _adopted("2025-06-18", {}, CLIENT_INFO)
    with pytest.raises(LocalProtocolError, match="needs a fresh session; this one is READY"):
        adopted.adopt_handshake("2025-11-25", {}, CLIENT_INFO)
    assert adopted.protocol_version == "2025-06-18"
    initializing = ServerSession()
    initializing.receive_message(request(1, "initialize", initialize_params("2025-11-25")))
    with pytest.raises(LocalProtocolError, match="this one is INITIALIZING"):
        initializing.adopt_handshake("2025-11-25", {}, CLIENT_INFO)
    closed = ServerSession()
    closed.close()
    with pytest.raises(LocalProtocolError, match="this one is CLOSED"):
        closed.adopt_handshake("2025-11-25", {}, CLIENT_INFO)
