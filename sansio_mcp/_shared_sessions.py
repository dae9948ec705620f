"""Handshake sessions shared by replicas: what of a session's traffic belongs to
another replica's copy of it (:class:`SessionRelay`), and a copy made here from
another replica's record, started READY where the client's handshake left it
(:class:`ReplicaSessions`, a router's side of it all)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any, Protocol

from ._bounds import seconds, whole
from ._errors import LocalProtocolError
from ._exchange import Exchange, is_response, not_being_read
from ._handshake_sessions import DEFAULT_REPLAY_BYTES, HandshakeSession, HandshakeSessions
from ._jsonrpc import RequestId, is_request_id
from ._outbox import Outgoing, encode_message
from ._replay import is_get_key, split_event_id
from ._server_session import ServerSession
from ._state import SessionState

__all__ = [
    "DEFAULT_FOLLOW_CHECK",
    "DEFAULT_MAX_RELAY_QUEUE",
    "DEFAULT_REPLAY_BYTES",
    "DEFAULT_STOP_GRACE",
    "REQUEST_ID_SPACE",
    "ReplicaSessions",
    "SessionRelay",
    "for_this_copy",
    "split_foreign",
]

#: Copies of one session on several replicas number their questions from a random
#: point below this (JSON numbers stay exact up to 2**53), so that an answer names
#: the one copy that asked.
REQUEST_ID_SPACE = 1 << 52
#: Seconds a POST stream resumed at another replica than the one running its request
#: waits for news of it before asking that replica whether it still runs it (and,
#: unanswered as long again, ends).
DEFAULT_FOLLOW_CHECK = 10.0
#: Messages a replica queues for the bus at most (and events, and backlog writes, for
#: the store); past it the oldest is dropped.
DEFAULT_MAX_RELAY_QUEUE = 10_000
#: Seconds a stopping replica spends writing what it still queued for the store.
DEFAULT_STOP_GRACE = 2.0


def _kept_message(chunk: bytes) -> Any:
    """The message an SSE event as kept (``event: message``, ``id:``, one ``data:``
    line) carries, or None."""
    data = chunk.partition(b"\ndata: ")[2]
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _answers(chunk: bytes) -> bool:
    """Whether an SSE event as kept carries an answer: a response, or a 2025-03-26
    batch of them."""
    message = _kept_message(chunk)
    return isinstance(message, list) or is_response(message)


class SessionRelay(Protocol):
    """Where a handshake session's messages go that another replica's copy of the
    session must see (set as :attr:`ReplicaSessions.relay` when replicas share
    sessions; called synchronously, so it only queues them)."""

    def client_message(self, session_id: str, message: dict[str, Any]) -> None:
        """A client's answer to a question this copy did not ask, or its
        ``notifications/cancelled`` for a request this copy is not running."""
        ...

    def server_message(self, session_id: str, message: Any, data: bytes = b"") -> None:
        """A message for the session's GET stream, which is not open here (``data``:
        its JSON, as the session encoded it; empty if not at hand)."""
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


def adopted_copy(
    new_session: Callable[[], ServerSession], record: dict[str, Any]
) -> ServerSession | None:
    """A session from ``new_session`` started READY as the client's handshake on
    another replica left that replica's copy (:meth:`ReplicaSessions.record`
    described it), with nothing to send; None when the record cannot do that
    (malformed, or a version this server does not speak)."""
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


class _Router(Protocol):
    """What :class:`ReplicaSessions` uses of its router."""

    sessions: HandshakeSessions
    max_unread: int

    def new_session(self) -> ServerSession: ...

    def flush(self, session: ServerSession) -> None: ...


class ReplicaSessions:
    """A Streamable HTTP router's side of handshake sessions shared by replicas
    (``router.replicas``): the record another replica adopts a session by, the copy
    adopted from one, and the messages relayed between copies.  Nothing is shared
    while :attr:`relay` is None (one process)."""

    def __init__(self, router: _Router) -> None:
        self.router = router
        #: Where what belongs to another replica's copy of a session goes; set by
        #: the runtime when replicas share sessions (see :class:`SessionRelay`).
        self.relay: SessionRelay | None = None
        self._follow_check = DEFAULT_FOLLOW_CHECK
        self._max_queue = DEFAULT_MAX_RELAY_QUEUE
        self._stop_grace = DEFAULT_STOP_GRACE

    @property
    def replay_bytes(self) -> int:
        """Bytes of a session's events the shared store keeps, and of its backlog
        there, at most each (settable; a positive integer): past it the oldest go
        first.  It is ``router.sessions.replay_bytes`` (checked there), which bounds
        this replica's own memory of them too."""
        return self.router.sessions.replay_bytes

    @replay_bytes.setter
    def replay_bytes(self, value: int) -> None:
        self.router.sessions.replay_bytes = value

    @property
    def follow_check(self) -> float:
        """Seconds a POST stream resumed here from another copy's waits for news
        before asking that copy whether its request still runs (settable; positive
        and finite)."""
        return self._follow_check

    @follow_check.setter
    def follow_check(self, value: float) -> None:
        if not seconds(value, positive=True):
            raise ValueError(
                f"follow_check must be a positive, finite number of seconds, not {value!r}"
            )
        self._follow_check = float(value)

    @property
    def max_queue(self) -> int:
        """Messages (relays, events and backlog writes) the replica's shared sessions
        queue for the bus and the store at most, past which the oldest is dropped
        (settable; a positive integer; read when the runtime starts sharing)."""
        return self._max_queue

    @max_queue.setter
    def max_queue(self, value: int) -> None:
        if not whole(value, 1):
            raise ValueError(f"max_queue must be a positive integer, not {value!r}")
        self._max_queue = value

    @property
    def stop_grace(self) -> float:
        """Seconds a stopping replica spends on what it still queued for the store and
        the bus (settable; at least 0 and finite)."""
        return self._stop_grace

    @stop_grace.setter
    def stop_grace(self, value: float) -> None:
        if not seconds(value):
            raise ValueError(
                f"stop_grace must be a finite number of seconds of at least 0, not {value!r}"
            )
        self._stop_grace = float(value)

    def new_copy(self) -> ServerSession:
        """A new handshake session from the router; among replicas, asking from its
        own id range."""
        session = self.router.new_session()
        if self.relay is not None:
            session.start_request_ids_at(secrets.randbelow(REQUEST_ID_SPACE))
        return session

    def initialized(self, session: ServerSession) -> None:
        """``session`` has just answered ``initialize``.  Among replicas its client's
        ``notifications/initialized`` may reach another replica: this copy is made
        ready as an adopted one is (and drops the notification if it comes here)."""
        if self.relay is not None:
            session.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def split(
        self, state: HandshakeSession, obj: Any, messages: list[dict[str, Any]]
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Of a POST to ``state`` (``obj``, its ``messages``), what is for this copy;
        the rest goes to :attr:`relay` (see :func:`split_foreign`)."""
        if self.relay is None:
            return obj, messages
        return split_foreign(self.relay, state, obj, messages)

    def record(self, session_id: str) -> dict[str, Any] | None:
        """What another replica needs to adopt the live session ``session_id``
        (:meth:`adopt`): its negotiated version and the client's ``initialize``
        params; None if there is no such session here."""
        state = self.router.sessions.get(session_id)
        if state is None:
            return None
        return {"protocolVersion": state.session.protocol_version, "initialize": state.init_params}

    def adopt(
        self, session_id: str, record: dict[str, Any], now: float | None = None
    ) -> ServerSession | None:
        """Serve here the session ``session_id`` another replica began, as
        :meth:`record` described it: a fresh session starts READY where the client's
        handshake left it and is registered under that id (nothing goes to the
        client); the one held already, if any.  None when the record does not bring
        a session to READY (malformed, or a version this server does not speak), or
        no room is left.  ``now``, if given, is passed to
        :meth:`HandshakeSessions.expire_idle` first (the session is active from then on)."""
        sessions = self.router.sessions
        if now is not None:
            sessions.expire_idle(now)
        existing = sessions.get(session_id)
        if existing is not None:
            return existing.session
        session = adopted_copy(self.new_copy, record)
        if session is None:
            return None
        if not sessions.make_room():  # after the checks: a bad record ends no session
            session.close()
            return None
        sessions.begin(session_id, session, record["initialize"])
        return session

    def receive(self, session_id: str, message: dict[str, Any]) -> ServerSession | None:
        """A client message another replica relayed (:meth:`SessionRelay.client_message`):
        the session here that it is for, having received it (its output is not
        flushed yet); None when it is for no request of this copy."""
        state = self.router.sessions.get(session_id)
        if state is None or not for_this_copy(state.session, message):
            return None
        state.session.receive_message(message)
        if not is_response(message):  # a cancellation: no more wait
            self.router.flush(state.session)
            state.end_waits([message["params"]])
        return state.session

    def deliver(self, session_id: str, message: Any) -> bool:
        """Put a message another replica relayed (:meth:`SessionRelay.server_message`)
        on the session's GET stream, if it is open here; False when it is not (or
        ``message`` is no message object, which no GET stream takes: dropped)."""
        state = self.router.sessions.get(session_id)
        if state is None or not state.listening or not isinstance(message, dict):
            return False
        stream = state.get_stream
        assert stream is not None  # (listening)
        state.deliver(stream, Outgoing(message, encode_message(message)), self.router.max_unread)
        return True

    def keep_here(self, session_id: str, message: Any) -> None:
        """A message for the session's GET stream that the shared backlog could not
        take (the store is down): on the GET stream if it is open here, else in this
        copy's backlog, for the next GET stream opened here."""
        state = self.router.sessions.get(session_id)
        if (
            state is not None
            and isinstance(message, dict)
            and not self.deliver(session_id, message)
        ):
            state.hold(Outgoing(message, encode_message(message)))

    def listening(self, session_id: str) -> bool:
        """Whether the session's GET stream is open here."""
        state = self.router.sessions.get(session_id)
        return state is not None and state.listening

    def foreign_stream(self, session_id: str, last_event_id: str | None) -> str | None:
        """The stream key a ``Last-Event-ID`` names when another replica's copy of
        the held session ``session_id`` numbered it (its events are in the shared
        store, to :meth:`restore` here); else None (this copy's own, or no copy's)."""
        state = self.router.sessions.get(session_id)
        named = None if last_event_id is None else split_event_id(last_event_id)
        if state is None or named is None:
            return None
        return named[0] if state.foreign(named[0]) else None

    def took_over(self, session_id: str, last_event_id: str | None, stream: Exchange) -> None:
        """A GET has just opened ``stream`` as the session's GET stream here, for a
        ``Last-Event-ID`` naming another copy's GET stream: unless the client took this
        copy's id-only event at once (2025-11-25 on, after a replay), a ``ping`` goes on
        it now, its answer dropped wherever it lands.  Its id is this copy's, so the
        client's ``Last-Event-ID`` names this copy's stream before anything else is
        sent on it: resumed with the other copy's id, the stream would find nothing of
        what this copy sent (a client before 2025-11-25 may choke on an event without
        data, and every revision answers ``ping``)."""
        state = self.router.sessions.get(session_id)
        key = self.foreign_stream(session_id, last_event_id)
        if state is None or key is None or not is_get_key(key) or state.get_stream is not stream:
            return
        if state.bare_ids and key in state.replay:
            return  # marked by HandshakeSession.open_get_stream
        session = state.session
        session.forget(session.send_ping())
        self.router.flush(session)

    def follow(self, session_id: str, last_event_id: str | None, stream: Exchange) -> str | None:
        """A GET has just resumed here, on ``stream``, the POST stream of another copy
        that ``last_event_id`` names, replaying what the store kept: unless that ends
        with the answer, ``stream`` stays open, for what the copy running the request
        keeps next (:meth:`followed`).  The stream key followed, or None."""
        state = self.router.sessions.get(session_id)
        key = self.foreign_stream(session_id, last_event_id)
        if state is None or key is None or is_get_key(key) or stream.stream_key != key:
            return None
        events = state.replay.events(key)
        if not events or _answers(events[-1][1]) or stream.awaiting:
            return None
        stream.finished = False  # (resume ended it: no request of it runs here)
        state.followers = {f for f in state.followers if not f.finished} | {stream}
        return key

    def followed(self, stream: Exchange, events: list[tuple[int, bytes]]) -> bool:
        """Send on ``stream`` (:meth:`follow`) those of ``events`` (the store's list of
        the stream it follows) after its last; True when it is over (the answer came,
        and it finished; its client went away; or, past the router's ``max_unread``,
        it is not being read, as :meth:`Exchange.deliver` closes any stream)."""
        for number, chunk in events:
            if stream.finished:
                break
            if number <= stream.seq:
                continue
            message = _kept_message(chunk)
            if not_being_read(stream, message, self.router.max_unread):
                stream.finish()
                break
            stream.append(chunk)
            stream.seq = number
            if isinstance(message, list) or is_response(message):
                stream.finish()
        stream.wake()
        return stream.finished

    def running(self, session_id: str, key: str) -> bool:
        """Whether a request of this copy's stream ``key`` still awaits its answer
        here (the stream open, or detached: its client gone)."""
        state = self.router.sessions.get(session_id)
        return state is not None and any(ex.stream_key == key for ex in state.streams.values())

    def restore(self, session_id: str, key: str, events: list[tuple[int, bytes]]) -> None:
        """Hold ``events`` (the shared store's list of another copy's stream ``key``)
        for the resumption of that stream here."""
        state = self.router.sessions.get(session_id)
        if state is not None and events:
            state.restore(key, events)
