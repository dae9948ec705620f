"""The HTTP+SSE transport of 2024-11-05 (deprecated since 2025-03-26), server side.

``GET /sse`` opens a stream whose first event, ``endpoint``, names the URL
to POST messages to; every server message then arrives on that stream as an
``event: message``.  POSTs are answered 202.  Each stream is one session.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from urllib.parse import parse_qs, urljoin, urlsplit

from . import _json
from ._errors import ConnectionClosedError, ErrorCode, RemoteProtocolError
from ._exchange import (
    DEFAULT_MAX_UNREAD,
    Exchange,
    json_error,
    not_being_read,
    unread_refusal,
)
from ._exchange import text_reply as _text
from ._http import HTTPRequest, HTTPResponseHead, media_types
from ._http_intake import LOOPBACK_HOSTS, check_host_and_origin
from ._ndjson import NEED_DATA
from ._server_session import ServerSession
from ._sse import SSEParser, format_sse_event, format_sse_message
from ._streamable_http_client import Endpoint, StreamableHTTPClient

__all__ = ["LegacySSEServer", "LegacySSEStream", "resolve_endpoint"]


def resolve_endpoint(sse_url: str, data: str) -> str:
    """The POST URL an ``endpoint`` event names, relative or absolute, which
    must stay on the stream's origin (a hostile server cannot redirect our
    messages elsewhere)."""
    target = urljoin(sse_url, data.strip())
    if urlsplit(target)[:2] != urlsplit(sse_url)[:2]:
        raise RemoteProtocolError(f"the endpoint {target!r} is not on the stream's origin")
    return target


class LegacySSEServer:
    """Routes the legacy transport's GETs and POSTs to sessions."""

    def __init__(
        self,
        session_factory: Callable[[], ServerSession],
        *,
        sse_path: str = "/sse",
        message_path: str = "/messages",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        new_session_id: Callable[[], str] = lambda: secrets.token_hex(16),
        max_unread: int = DEFAULT_MAX_UNREAD,
    ) -> None:
        self.session_factory = session_factory
        #: Bytes a session's stream may hold unread (see
        #: :data:`~sansio_mcp._streamable_http.DEFAULT_MAX_UNREAD`): a client that never
        #: reads its stream cannot make the server buffer without end.
        self.max_unread = max_unread
        self.sse_path = sse_path
        self.message_path = message_path
        self.allowed_hosts = {h.lower() for h in (allowed_hosts or LOOPBACK_HOSTS)}
        self.allowed_origins = {o.lower().rstrip("/") for o in (allowed_origins or ())}
        self.new_session_id = new_session_id
        self._streams: dict[str, tuple[ServerSession, Exchange]] = {}
        self._by_session: dict[int, Exchange] = {}

    def handle(self, request: HTTPRequest) -> Exchange:
        refusal = check_host_and_origin(request, self.allowed_hosts, self.allowed_origins)
        if refusal is not None:
            return refusal
        if request.path == self.sse_path:
            if request.method != "GET":
                return _text(405, f"{request.method} is not supported here", {"allow": "GET"})
            return self._open_stream()
        if request.path == self.message_path:
            if request.method != "POST":
                return _text(405, f"{request.method} is not supported here", {"allow": "POST"})
            return self._post(request)
        return _text(404, f"nothing at {request.path}: the stream is at {self.sse_path}")

    def _open_stream(self) -> Exchange:
        session = self.session_factory()
        session_id = self.new_session_id()
        exchange = Exchange(
            200,
            {"content-type": "text/event-stream", "cache-control": "no-cache"},
            streaming=True,
            session=session,
        )
        exchange.append(
            format_sse_event(f"{self.message_path}?session_id={session_id}", event="endpoint")
        )
        self._streams[session_id] = (session, exchange)
        self._by_session[id(session)] = exchange

        def closed(_: Exchange) -> None:
            self._streams.pop(session_id, None)
            self._by_session.pop(id(session), None)
            session.close()

        exchange.on_close = closed
        return exchange

    def session_for(self, request: HTTPRequest) -> ServerSession | None:
        """The live session a message POST names (``?session_id=``), if any."""
        entry = self._streams.get((parse_qs(request.query).get("session_id") or [""])[0])
        return entry[0] if entry is not None else None

    def _post(self, request: HTTPRequest) -> Exchange:
        session_id = (parse_qs(request.query).get("session_id") or [""])[0]
        entry = self._streams.get(session_id)
        if entry is None:
            return _text(404, "unknown or ended session")
        if "application/json" not in media_types(request.headers.get("content-type")):
            return _text(415, "the body must be application/json")
        session, stream = entry
        refusal = unread_refusal(stream, self.max_unread)
        if refusal is not None:
            return refusal
        try:
            obj = _json.loads(request.body)
        except RemoteProtocolError as exc:
            return json_error(400, None, ErrorCode.PARSE_ERROR, exc.message)
        session.receive_message(obj)
        self.flush(session)
        return Exchange(202, {"content-type": "text/plain"}, b"Accepted", session=session)

    def flush(self, session: ServerSession) -> None:
        """Put what ``session`` queued on its stream."""
        exchange = self._by_session.get(id(session))
        messages = session.outgoing_to_send()
        if exchange is None or exchange.finished:
            return
        for item in messages:
            if not_being_read(exchange, item.message, self.max_unread):
                exchange.finish()  # the session ends with its only stream
                break
            exchange.append(format_sse_message(item.data))
        if messages:
            exchange.wake()

    def owns(self, session: ServerSession) -> bool:
        return id(session) in self._by_session


class LegacySSEStream:
    """The client side of the legacy stream: learn the POST endpoint from the
    first ``endpoint`` event, then hand every ``message`` event to the session."""

    def __init__(self, sse_url: str, transport: StreamableHTTPClient) -> None:
        self.sse_url = sse_url
        self.transport = transport
        self.endpoint_known = False
        self._parser = SSEParser()

    def request_headers(self) -> dict[str, str]:
        """Headers of the GET that opens the stream: the caller's own (``headers``
        of the transport: credentials, say) go on it as on every POST."""
        return {"accept": "text/event-stream", **self.transport.extra_headers}

    def on_head(self, head: HTTPResponseHead) -> None:
        if head.status != 200:
            raise ConnectionClosedError(
                message=f"the SSE stream was refused with HTTP {head.status}"
            )
        if "text/event-stream" not in media_types(head.headers.get("content-type")):
            raise RemoteProtocolError("the SSE endpoint did not answer text/event-stream")

    def on_body(self, chunk: bytes) -> bool:
        """Feed stream bytes; True when messages reached the session."""
        self._parser.feed(chunk)
        delivered = False
        while (event := self._parser.next_event()) is not NEED_DATA:
            assert not isinstance(event, type)
            if event.event == "endpoint":
                self.transport.endpoint = Endpoint.parse(resolve_endpoint(self.sse_url, event.data))
                self.endpoint_known = True
            elif event.event == "message" and event.data.strip():
                # receive_text: an unreadable event is refused, or ends the request it
                # answers, as a line on stdio is; the stream goes on.
                self.transport.session.receive_text(event.data)
                delivered = True
        return delivered
