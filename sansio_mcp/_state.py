"""The session lifecycle as an explicit transition table.

A ``(role, state, trigger)`` key that is in :data:`TRANSITIONS` is allowed
and gives the next state; anything else is refused: a send raises
:class:`LocalProtocolError`, a receive is answered with an error (requests)
or reported as a :class:`ProtocolViolation` (everything else).  A refused
trigger never changes the state, so the session goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

__all__ = [
    "Role",
    "SessionState",
    "Trigger",
    "TRANSITIONS",
    "trigger_for",
    "next_state",
    "ROLE_SERVER",
    "STATE_CLOSED",
    "STATE_IDLE",
    "STATE_READY",
]


class _Member(Enum):
    # Members are singletons, so identity hashes them; Enum's own __hash__ is
    # Python code, and every message looks up the transition table.
    __hash__ = object.__hash__


class Role(_Member):
    CLIENT = "client"
    SERVER = "server"


class SessionState(_Member):
    IDLE = "idle"  # nothing exchanged yet
    INITIALIZING = "initializing"  # client: initialize sent; server: answered, awaiting initialized
    READY = "ready"  # normal operation
    STATELESS = "stateless"  # client speaking 2026-07-28: no session, _meta on every request
    FAILED = "failed"  # the handshake failed (client)
    CLOSED = "closed"


# On Python 3.11 a member read off its class (``SessionState.CLOSED``) goes through
# EnumType.__getattr__'s slot, several times the cost of reading a global: the code
# that runs for every message compares with these.
ROLE_SERVER = Role.SERVER
STATE_CLOSED = SessionState.CLOSED
STATE_IDLE = SessionState.IDLE
STATE_READY = SessionState.READY


class Trigger(_Member):
    """What a message (or an action) is, as far as the lifecycle cares."""

    SEND_INITIALIZE = "send initialize"
    RECV_INITIALIZE = "receive initialize"
    RECV_INITIALIZE_RESULT = "receive initialize result"
    RECV_INITIALIZE_ERROR = "receive initialize error"
    INITIALIZE_TIMEOUT = "initialize timed out"
    SEND_DISCOVER = "send server/discover"
    RECV_DISCOVER_RESULT = "receive server/discover result"
    HANDSHAKE_FALLBACK = "fall back from server/discover to initialize"
    #: Deprecated alias of ``HANDSHAKE_FALLBACK``.
    LEGACY_FALLBACK = "fall back from server/discover to initialize"
    SEND_INITIALIZED = "send notifications/initialized"
    RECV_INITIALIZED = "receive notifications/initialized"
    SEND_PING = "send ping"
    RECV_PING = "receive ping"
    SEND_UTILITY = "send progress/log/cancel notification"
    RECV_UTILITY = "receive progress/log/cancel notification"
    SEND_REQUEST = "send request"
    RECV_REQUEST = "receive request"
    RECV_STATELESS_REQUEST = "receive a 2026-07-28 request"
    SEND_NOTIFICATION = "send notification"
    RECV_NOTIFICATION = "receive notification"
    CLOSE = "close"


_C, _S = Role.CLIENT, Role.SERVER
_IDLE, _INIT, _READY, _FAILED, _CLOSED = (
    SessionState.IDLE,
    SessionState.INITIALIZING,
    SessionState.READY,
    SessionState.FAILED,
    SessionState.CLOSED,
)
T = Trigger

_OPERATION = (
    T.SEND_PING,
    T.RECV_PING,
    T.SEND_UTILITY,
    T.RECV_UTILITY,
    T.SEND_REQUEST,
    T.RECV_REQUEST,
    T.SEND_NOTIFICATION,
    T.RECV_NOTIFICATION,
)

TRANSITIONS: Mapping[tuple[Role, SessionState, Trigger], SessionState] = {
    # Client
    (_C, _IDLE, T.SEND_INITIALIZE): _INIT,
    (_C, _IDLE, T.SEND_PING): _IDLE,
    (_C, _IDLE, T.RECV_PING): _IDLE,
    (_C, _INIT, T.SEND_PING): _INIT,
    (_C, _INIT, T.RECV_PING): _INIT,
    (_C, _INIT, T.RECV_UTILITY): _INIT,  # the server may log before initialized
    (_C, _INIT, T.RECV_INITIALIZE_RESULT): _READY,
    (_C, _INIT, T.RECV_INITIALIZE_ERROR): _FAILED,
    (_C, _INIT, T.INITIALIZE_TIMEOUT): _FAILED,
    # Stateless (2026-07-28): discover, or fall back to the handshake.
    (_C, _IDLE, T.SEND_DISCOVER): _INIT,
    (_C, _INIT, T.RECV_DISCOVER_RESULT): SessionState.STATELESS,
    (_C, _INIT, T.HANDSHAKE_FALLBACK): _INIT,
    **{
        (_C, SessionState.STATELESS, t): SessionState.STATELESS
        for t in (T.SEND_REQUEST, T.SEND_UTILITY, T.RECV_UTILITY, T.RECV_NOTIFICATION)
    },
    (_C, _READY, T.SEND_INITIALIZED): _READY,
    **{(_C, _READY, t): _READY for t in _OPERATION},
    # Server
    (_S, _IDLE, T.RECV_INITIALIZE): _INIT,
    (_S, _IDLE, T.SEND_PING): _IDLE,
    (_S, _IDLE, T.RECV_PING): _IDLE,
    (_S, _INIT, T.RECV_INITIALIZED): _READY,
    (_S, _INIT, T.SEND_PING): _INIT,
    (_S, _INIT, T.RECV_PING): _INIT,
    (_S, _INIT, T.SEND_UTILITY): _INIT,  # logging before initialized is allowed
    (_S, _INIT, T.RECV_UTILITY): _INIT,
    # A client that pipelines requests right behind notifications/initialized
    # may have them reordered by a transport (HTTP); serve them.
    (_S, _INIT, T.RECV_REQUEST): _INIT,
    **{(_S, _READY, t): _READY for t in _OPERATION},
    # A 2026-07-28 request stands alone: served beside a handshake session in any of
    # its states (or with none), it changes none of them.
    **{(_S, s, T.RECV_STATELESS_REQUEST): s for s in (_IDLE, _INIT, _READY)},
    # Either side may close at any time.
    **{(r, s, T.CLOSE): _CLOSED for r in Role for s in SessionState},
}

_UTILITY_METHODS = frozenset(
    {"notifications/progress", "notifications/message", "notifications/cancelled"}
)

# method -> (trigger when we send it, trigger when we receive it)
_REQUEST_TRIGGERS: Mapping[str, tuple[Trigger, Trigger]] = {
    "initialize": (T.SEND_INITIALIZE, T.RECV_INITIALIZE),
    "ping": (T.SEND_PING, T.RECV_PING),
}
_NOTIFICATION_TRIGGERS: Mapping[str, tuple[Trigger, Trigger]] = {
    "notifications/initialized": (T.SEND_INITIALIZED, T.RECV_INITIALIZED),
    **{method: (T.SEND_UTILITY, T.RECV_UTILITY) for method in _UTILITY_METHODS},
}
_ANY_REQUEST = (T.SEND_REQUEST, T.RECV_REQUEST)
_ANY_NOTIFICATION = (T.SEND_NOTIFICATION, T.RECV_NOTIFICATION)


def trigger_for(method: str, *, is_request: bool, sending: bool) -> Trigger:
    """The lifecycle trigger of sending or receiving ``method``."""
    if is_request:
        send, receive = _REQUEST_TRIGGERS.get(method, _ANY_REQUEST)
    else:
        send, receive = _NOTIFICATION_TRIGGERS.get(method, _ANY_NOTIFICATION)
    return send if sending else receive


def next_state(role: Role, state: SessionState, trigger: Trigger) -> SessionState | None:
    """The state after ``trigger``, or ``None`` if the table forbids it."""
    return TRANSITIONS.get((role, state, trigger))
