"""Handshake sessions shared by replicas: what of a session's traffic belongs to
another replica's copy of it (:class:`SessionRelay`), and a copy made here from
another replica's record, started READY where the client's handshake left it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ._errors import LocalProtocolError
from ._exchange import is_response
from ._handshake_sessions import HandshakeSession, HandshakeSessions
from ._jsonrpc import RequestId, is_request_id
from ._outbox import Outgoing, encode_message
from ._server_session import ServerSession
from ._state import SessionState

__all__ = [
    "REQUEST_ID_SPACE",
    "SessionRelay",
    "adopt",
    "deliver_relayed",
    "for_this_copy",
    "record_of",
    "split_foreign",
    "take_relayed",
]

#: Copies of one session on several replicas number their questions from a random
#: point below this (JSON numbers stay exact up to 2**53), so that an answer names
#: the one copy that asked.
REQUEST_ID_SPACE = 1 << 52


class SessionRelay(Protocol):
    """Where a handshake session's messages go that another replica's copy of the
    session must see (set as :attr:`StreamableHTTPServer.relay` when replicas share
    sessions; called synchronously, so it only queues them)."""

    def client_message(self, session_id: str, message: dict[str, Any]) -> None:
        """A client's answer to a question this copy did not ask, or its
        ``notifications/cancelled`` for a request this copy is not running."""
        ...

    def server_message(self, session_id: str, message: Any) -> None:
        """A message for the session's GET stream, which is not open here."""
        ...


def _names_open(cancelled: dict[str, Any], open_requests: frozenset[RequestId]) -> bool:
    """Whether a ``notifications/cancelled`` names one of ``open_requests``."""
    params = cancelled.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    return is_request_id(request_id) and request_id in open_requests


def for_this_copy(session: ServerSession, message: dict[str, Any]) -> bool | None:
    """Whether a client's answer or ``notifications/cancelled`` is for ``session``, this
    copy (it asked that question, it runs that request); None for any other message."""
    if is_response(message):
        answered = message.get("id")
        return is_request_id(answered) and answered in session.pending_requests
    if message.get("method") == "notifications/cancelled":
        return _names_open(message, session.open_requests)
    return None


def split_foreign(
    relay: SessionRelay, state: HandshakeSession, obj: Any, messages: list[dict[str, Any]]
) -> tuple[Any, list[dict[str, Any]]]:
    """Hand the messages meant for another replica's copy of the session to ``relay``;
    the rest (as a batch if ``obj`` was one), for this copy."""
    session = state.session
    mine = []
    for message in messages:
        if message.get("method") == "notifications/initialized" and (
            session.state is SessionState.READY
        ):
            continue  # an adopted copy replayed it; the client sent it to the first
        if for_this_copy(session, message) is False:
            relay.client_message(state.id, message)
        else:
            mine.append(message)
    if len(mine) == len(messages):
        return obj, messages
    return (mine if isinstance(obj, list) else (mine[0] if mine else None)), mine


def record_of(state: HandshakeSession | None) -> dict[str, Any] | None:
    """What another replica needs to adopt ``state``: its negotiated version and the
    client's ``initialize`` params."""
    if state is None:
        return None
    return {"protocolVersion": state.session.protocol_version, "initialize": state.init_params}


def adopted_copy(
    new_session: Callable[[], ServerSession], record: dict[str, Any]
) -> ServerSession | None:
    """A session from ``new_session`` started READY as the client's handshake on
    another replica left that replica's copy (:func:`record_of` described it), with
    nothing to send; None when the record cannot do that (malformed, or a version
    this server does not speak)."""
    params, version = record.get("initialize"), record.get("protocolVersion")
    if not isinstance(params, dict) or not isinstance(version, str):
        return None
    # adopt_handshake refuses what is no object (LocalProtocolError).
    capabilities: Any = params.get("capabilities")
    client_info: Any = params.get("clientInfo")
    session = new_session()
    try:
        session.adopt_handshake(version, capabilities, client_info)
    except LocalProtocolError:
        session.close()
        return None
    return session


def adopt(
    sessions: HandshakeSessions,
    session_id: str,
    record: dict[str, Any],
    new_session: Callable[[], ServerSession],
    memory: int,
    streams: int,
) -> ServerSession | None:
    """The session ``session_id`` of ``sessions``, adopted from another replica's
    ``record`` if it is not held here yet (see :func:`adopted_copy`); None when
    the record brings no session to READY, or no room is left."""
    existing = sessions.get(session_id)
    if existing is not None:
        return existing.session
    session = adopted_copy(new_session, record)
    if session is None:
        return None
    if not sessions.make_room():  # after the checks: a bad record ends no session
        session.close()
        return None
    sessions.begin(session_id, session, record["initialize"], memory, streams)
    return session


def take_relayed(
    sessions: HandshakeSessions, session_id: str, message: dict[str, Any]
) -> HandshakeSession | None:
    """The session a client message another replica relayed is for, having received
    it; None when it is for no request of this copy."""
    state = sessions.get(session_id)
    if state is None or not for_this_copy(state.session, message):
        return None
    state.session.receive_message(message)
    return state


def deliver_relayed(
    sessions: HandshakeSessions, session_id: str, message: Any, max_unread: int
) -> bool:
    """Put a message another replica relayed on the session's GET stream, if it is
    open here."""
    state = sessions.get(session_id)
    stream = None if state is None else state.target(Outgoing(message, b""))
    if state is None or stream is None or stream.stream_key != "get":
        return False
    state.deliver(stream, Outgoing(message, encode_message(message)), max_unread)
    return True
