"""Requests each served on a session of its own (every stateless request, and any
other a router serves that way): the exchange that waits for each one's answer,
by session, and a stateless request's answer up to its status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import ErrorCode
from ._events import RequestMeta
from ._exchange import Exchange, is_response
from ._jsonrpc import RequestId
from ._server_session import ServerSession

__all__ = ["STATELESS_HEAD_GRACE", "SingleRequests"]

#: How long (seconds) a stateless request's response head waits for the request's
#: first output: its status may still change (a handler refusing with -32021 gets
#: HTTP 400), and an answer by then goes out as plain JSON.
STATELESS_HEAD_GRACE = 1.0

# JSON-RPC error code -> HTTP status for a stateless request refused up front.
_STATELESS_STATUS = {
    ErrorCode.HEADER_MISMATCH: 400,
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.METHOD_NOT_FOUND: 404,
}


class SingleRequests:
    """The open exchanges of requests served on a session of their own, by session."""

    def __init__(self) -> None:
        #: The open exchanges, by ``id()`` of the session each request is served on.
        self.by_session: dict[int, Exchange] = {}
        # Every exchange's on_close, bound once (no object per request).
        self._on_close = self._closed

    def of(self, session: ServerSession) -> Exchange | None:
        """The open exchange of the request ``session`` serves, if any."""
        return self.by_session.get(id(session))

    def open(self, session: ServerSession, request_id: RequestId, json_mode: bool) -> Exchange:
        """The exchange of request ``request_id``, served on ``session``: it waits for
        the answer, ``session``'s output goes on it, and closing it cancels the request."""
        exchange = Exchange.event_stream(session, json_mode=json_mode)
        exchange.awaiting.add(request_id)
        exchange.alone = True
        exchange.head_pending = True
        exchange.head_grace = STATELESS_HEAD_GRACE
        self.by_session[id(session)] = exchange
        exchange.on_close = self._on_close
        return exchange

    def _closed(self, exchange: Exchange) -> None:
        session = exchange.session
        if TYPE_CHECKING:  # every exchange opened here has its session
            assert session is not None
        self.by_session.pop(id(session), None)
        # What it still awaits is its request (open awaits that alone): closing the
        # response stream before the answer cancels the request.
        for request_id in list(exchange.awaiting) if exchange.awaiting else ():
            session.receive_message(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id},
                }
            )

    def serve_stateless(
        self,
        session: ServerSession,
        message: dict[str, Any],
        json_mode: bool,
        max_unread: int,
        meta: RequestMeta | None = None,
    ) -> Exchange:
        """Serve the stateless request ``message`` on ``session``, a new one: refused
        or answered at once, a whole reply whose status says so (an error up front is
        400, or 404 for an unknown method); else its exchange.  ``meta``: its
        ``params._meta`` as the caller read it (``request_meta_of``), not read again."""
        if meta is None:
            session.receive_message(message)
            early = session.outgoing_to_send()
        else:
            # Taken only if the session says it queued something.
            early = session.outgoing_to_send() if session._receive_stateless(message, meta) else []
        request_id = message["id"]
        last: Any = early[-1].message if early else None
        if early and is_response(last) and last.get("id") == request_id:
            error = last.get("error")
            status = _STATELESS_STATUS.get(error["code"], 200) if isinstance(error, dict) else 200
            return Exchange(status, {"content-type": "application/json"}, early[-1].data)
        exchange = self.open(session, request_id, json_mode)
        for item in early:
            exchange.send(item, max_unread)
        return exchange
