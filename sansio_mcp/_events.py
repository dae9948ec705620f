"""Events: what :meth:`next_event` hands the application."""

from __future__ import annotations

from typing import Any

import attrs

from ._errors import MCPError, RemoteProtocolError
from ._jsonrpc import RequestId

__all__ = [
    "Event",
    "RequestReceived",
    "NotificationReceived",
    "ResponseReceived",
    "RequestFailed",
    "ProgressReceived",
    "CancelRequested",
    "SessionInitialized",
    "ProtocolViolation",
    "ConnectionClosed",
    "RequestMeta",
    "InputRequired",
    "SubscriptionAcknowledged",
]


@attrs.frozen
class RequestMeta:
    """What a stateless (2026-07-28) request says about its client, from ``params._meta``."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    log_level: str | None = None


# Not slotted: the session makes one per request (below), and filling an instance's
# dict costs half what a frozen slotted class's field setters do.
@attrs.frozen(slots=False)
class RequestReceived:
    """The peer sent a request the application must answer with ``respond``."""

    request_id: RequestId
    method: str
    params: dict[str, Any]
    #: ``params._meta.progressToken`` when the peer asked for progress.
    progress_token: str | int | None = None
    #: Set for a stateless request; None on a handshake session.
    meta: RequestMeta | None = None
    #: Whether the transport says which of our requests it came with (a Streamable
    #: HTTP response stream does; stdio, WebSocket and HTTP+SSE have one stream for all).
    relation_known: bool = False
    #: That request (its id as :meth:`send_request` gave it), when the transport
    #: says; None when it came with none of ours (the GET stream) or nothing says.
    related_request: RequestId | None = None


# The session makes one RequestReceived per request: built by filling its dict
# directly (as parse_message builds messages by their slots), the same frozen object
# attrs' __init__ makes (no validators or converters here) at a fraction of the cost.
_new = object.__new__
#: The fields, in order: a field added fails at import, not per request.
_REQUEST_RECEIVED_FIELDS = (
    "request_id",
    "method",
    "params",
    "progress_token",
    "meta",
    "relation_known",
    "related_request",
)
if tuple(attrs.fields_dict(RequestReceived)) != _REQUEST_RECEIVED_FIELDS:  # pragma: no cover
    raise ImportError("request_received does not set every field of RequestReceived")


def request_received(
    request_id: RequestId,
    method: str,
    params: dict[str, Any],
    progress_token: str | int | None,
    relation_known: bool,
    related_request: RequestId | None,
    meta: RequestMeta | None = None,
) -> RequestReceived:
    """``RequestReceived(...)`` built without attrs' ``__init__`` (see above)."""
    event: RequestReceived = _new(RequestReceived)
    fields = event.__dict__
    fields["request_id"] = request_id
    fields["method"] = method
    fields["params"] = params
    fields["progress_token"] = progress_token
    fields["meta"] = meta
    fields["relation_known"] = relation_known
    fields["related_request"] = related_request
    return event


@attrs.frozen
class NotificationReceived:
    """A notification the core does not consume itself."""

    method: str
    params: dict[str, Any]
    #: The ``subscriptions/listen`` request it was delivered for, if any.
    subscription_id: RequestId | None = None


@attrs.frozen
class InputRequired:
    """The server needs input before it can finish one of our requests (MRTR).

    Answer with ``ClientSession.provide_input(request_id, responses)``; the
    retry goes out under a new wire id, but every event keeps reporting the
    original ``request_id``.
    """

    request_id: RequestId
    method: str
    input_requests: dict[str, Any]
    request_state: str | None
    round: int


@attrs.frozen
class SubscriptionAcknowledged:
    """The server confirmed a ``subscriptions/listen`` and what it will send."""

    request_id: RequestId
    notifications: dict[str, Any]


@attrs.frozen
class ResponseReceived:
    """A successful response to one of our requests."""

    request_id: RequestId
    method: str
    result: dict[str, Any]


@attrs.frozen
class RequestFailed:
    """One of our requests ended without a result: an error response, a
    timeout, or the connection closing."""

    request_id: RequestId
    method: str
    error: MCPError = attrs.field(eq=False)


@attrs.frozen
class ProgressReceived:
    """Progress on one of our in-flight requests."""

    request_id: RequestId
    progress_token: str | int
    progress: float
    total: float | None = None
    message: str | None = None


@attrs.frozen
class CancelRequested:
    """The peer cancelled a request it had sent us; do not answer it."""

    request_id: RequestId
    reason: str | None = None


@attrs.frozen
class SessionInitialized:
    """The handshake completed."""

    protocol_version: str
    peer_info: dict[str, Any]
    peer_capabilities: dict[str, Any]
    instructions: str | None = None


@attrs.frozen
class ProtocolViolation:
    """The peer sent something invalid. Where it could be answered, the
    error response is already queued; the session goes on.

    ``refused`` says the offending message was a well-formed request the session
    would not serve (an unknown method, a capability not advertised, bad params,
    the wrong state) and answered with an error: the peer was told, so the mistake
    is its own, not one for whoever runs this side."""

    error: RemoteProtocolError = attrs.field(eq=False)
    refused: bool = False


@attrs.frozen
class ConnectionClosed:
    """The input ended or the session was closed; pending requests have failed."""


Event = (
    RequestReceived
    | NotificationReceived
    | ResponseReceived
    | RequestFailed
    | ProgressReceived
    | CancelRequested
    | SessionInitialized
    | ProtocolViolation
    | ConnectionClosed
    | InputRequired
    | SubscriptionAcknowledged
)
