"""One HTTP response in the making, as the MCP layer sees it (both HTTP server
transports): an immediate reply, or a stream that takes the session's messages
as they come and ends once the requests it waits for are answered."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import _json
from ._errors import ErrorCode, MCPError
from ._jsonrpc import RequestId, is_request_id
from ._outbox import Outgoing
from ._server_session import ServerSession
from ._sse import format_sse_comment, format_sse_message

__all__ = [
    "DEFAULT_MAX_UNREAD",
    "LATE_STATUS",
    "Exchange",
    "answered_ids",
    "is_response",
    "json_error",
    "not_being_read",
    "text_reply",
    "unread_refusal",
]

#: Bytes an event stream may hold unread (both HTTP transports): past them the stream's
#: session takes no new requests (503), and a stream still given messages that answer
#: nothing is closed (see :func:`not_being_read`).
DEFAULT_MAX_UNREAD = 16 * 1024 * 1024

#: A request refused by its handler while the response head is still unsent gets an
#: HTTP status of its own (JSON-RPC error code -> status; any other error: 200).
LATE_STATUS: Mapping[int, int] = {ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400}


def is_response(obj: Any) -> bool:
    return isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj)


def answered_ids(obj: Any) -> set[Any]:
    """The request ids a message (or a 2025-03-26 batch) answers."""
    if isinstance(obj, list):
        return {m.get("id") for m in obj}
    return {obj.get("id")} if is_response(obj) else set()


def not_being_read(exchange: Exchange, obj: Any, max_unread: int) -> bool:
    """Whether ``exchange``, a stream over ``max_unread`` unread bytes, must close rather
    than take ``obj``. Answers to the client's requests still go out (their number is
    bounded by the 503 its new requests get); anything else would grow without end."""
    return exchange.streaming and exchange.unsent > max_unread and not answered_ids(obj)


def unread_refusal(stream: Exchange | None, max_unread: int) -> Exchange | None:
    """The 503 for a request on a session whose event stream is not being read."""
    if stream is None or stream.finished or stream.unsent <= max_unread:
        return None
    return text_reply(
        503, "the event stream of this session is not being read", {"retry-after": "1"}
    )


class Exchange:
    """One HTTP response in the making.

    A streaming exchange gains body chunks (:meth:`take`) until
    :attr:`finished`; the adapter sets :attr:`wake` to learn when.

    The answer to a request POST starts with its head pending: the adapter
    waits up to :attr:`head_grace` seconds for :attr:`head_ready`.  If the
    request's answer was its first output, the exchange has become a plain
    ``application/json`` response (``streaming`` is False: one write, no
    stream to watch); otherwise the adapter calls :meth:`commit_head` and
    sends the head of an SSE stream (``text/event-stream``).
    """

    # What most exchanges keep as it is: class defaults, set on an exchange only when
    # it changes (every request makes an exchange; these cost it nothing).
    #: Called (no arguments) when there is news for the adapter; the adapter sets it.
    wake: Callable[[], None] = staticmethod(lambda: None)
    #: Messages go out as JSON bodies, not SSE events (``json_response``).
    json_mode = False
    #: Of a handshake session's stream: its key and its last event's number
    #: (event ids are ``{stream_key}-{seq}``, what ``Last-Event-ID`` names).
    stream_key = ""
    seq = 0
    #: Called once when the exchange ends (answered, or the client went away).
    on_close: Callable[[Exchange], None] = staticmethod(lambda exchange: None)
    #: A handshake POST stream cut before its answers: what it is given is kept
    #: for resumption, not sent.
    detached = False
    #: Whether the status and headers may still change (see the class doc).
    head_pending = False
    #: How long the adapter waits for :attr:`head_ready` before committing the head.
    head_grace = 0.0
    #: What a stream sends first once it opens (a handshake session's priming event).
    opener: Callable[[], None] | None = None
    #: What each message becomes before it goes out here (None: itself); an
    #: intermediary that renames its questions' ids sets it.
    rewrite: Callable[[Outgoing], Outgoing] | None = None
    #: The HTTP status of a JSON-RPC error that becomes the whole response, by
    #: error code (any other: 200); see :meth:`answer_plainly`.
    error_statuses: Mapping[int, int] = LATE_STATUS

    #: Whether it answers a request served on a session of its own (a stateless one):
    #: that session lives as long as this exchange (set by ``SingleRequests.open``).
    alone = False

    def __init__(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes = b"",
        *,
        streaming: bool = False,
        session: ServerSession | None = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.streaming = streaming
        #: The session whose events the adapter must drive for this exchange.
        self.session = session
        self.finished = not streaming
        self._chunks: list[bytes] = [body] if body else []
        self._unsent = len(body)
        #: The requests whose answers this exchange waits for (it ends with the last).
        self.awaiting: set[RequestId] = set()

    @classmethod
    def event_stream(cls, session: ServerSession, *, json_mode: bool = False) -> Exchange:
        """A streaming exchange of ``session``: SSE, or JSON bodies in ``json_mode``."""
        if json_mode:
            headers = {"content-type": "application/json"}
            exchange = cls(200, headers, streaming=True, session=session)
            exchange.json_mode = True
            return exchange
        headers = {
            "content-type": "text/event-stream",
            "cache-control": "no-cache",
            "x-accel-buffering": "no",
        }
        return cls(200, headers, streaming=True, session=session)

    @property
    def head_ready(self) -> bool:
        """Whether the status and headers are final (output arrived, or none can change them)."""
        return not self.head_pending or self.finished or bool(self._chunks)

    @property
    def unsent(self) -> int:
        """How many body bytes wait to be taken."""
        return self._unsent

    @property
    def has_news(self) -> bool:
        """Whether there are body bytes to take, or the exchange is over."""
        return self.finished or bool(self._chunks)

    def append(self, chunk: bytes) -> None:
        """Add body bytes for the adapter to take."""
        self._chunks.append(chunk)
        self._unsent += len(chunk)

    def commit_head(self) -> None:
        """The adapter sends the head now: the status no longer changes."""
        self.head_pending = False
        self.open()

    def open(self) -> None:
        """The stream opens: it sends what it sends first (once)."""
        opener, self.opener = self.opener, None
        if opener is not None and self.streaming:
            opener()

    def take(self) -> bytes:
        """The body bytes produced since the last call."""
        out = b"".join(self._chunks)
        self._chunks.clear()
        self._unsent = 0
        return out

    def disconnected(self) -> None:
        """The client went away (for a stateless request: that cancels it)."""
        if not self.finished:
            self.finish()

    def keep_alive(self) -> None:
        """Queue an SSE comment so idle proxies keep the stream open."""
        if self.streaming and not self.json_mode and not self.finished:
            self.open()
            self.append(format_sse_comment())
            self.wake()

    def finish(self) -> None:
        """The exchange is over (the adapter learns it when woken)."""
        self.finished = True
        self.on_close(self)

    def end(self) -> None:
        """Finish, waiting for nothing more, and wake the adapter."""
        self.awaiting.clear()
        self.finish()
        self.wake()

    def next_event_id(self) -> str:
        """Number the stream's next event."""
        self.seq += 1
        return f"{self.stream_key}-{self.seq}"

    def deliver(self, item: Outgoing, event_id: str | None, max_unread: int) -> bytes | None:
        """Send ``item`` (the SSE event ``event_id``, or a JSON body in JSON mode) and
        finish once every request awaited is answered; a stream not being read closes
        instead (see :func:`not_being_read`).  The event's bytes, when it has an id
        (sent or not: a closed stream can be resumed with them)."""
        obj = item.message
        chunk = None if event_id is None else format_sse_message(item.data, event_id)
        if not_being_read(self, obj, max_unread):
            self.finish()
            self.wake()
            return chunk
        if self.json_mode:
            if is_response(obj) or isinstance(obj, list):  # a JSON body is only the answer
                self.append(item.data)
        else:
            self.append(chunk if chunk is not None else format_sse_message(item.data))
        answered = answered_ids(obj)
        self.awaiting -= answered
        if answered and not self.awaiting:
            self.finish()
        self.wake()
        return chunk

    def send(self, item: Outgoing, max_unread: int, *, numbered: bool = False) -> bytes | None:
        """Send ``item`` (through :attr:`rewrite`) unless the exchange is over: as the
        whole plain answer if it is the first output and answers everything awaited
        (:meth:`answer_plainly`), else on the stream, opening it first; as a numbered
        SSE event if ``numbered``.  The event's bytes, when it has an id."""
        if self.rewrite is not None:
            item = self.rewrite(item)
        if self.finished:
            return None
        if self.head_pending and not self._chunks:  # (has_news, the exchange not finished)
            if self.answer_plainly(item):
                return None
            self.open()  # something to stream first: this is an SSE stream after all
        event_id = self.next_event_id() if numbered and not self.json_mode else None
        return self.deliver(item, event_id, max_unread)

    def answer_plainly(self, item: Outgoing) -> bool:
        """Become a plain ``application/json`` response if ``item``, the first output,
        is the whole answer (with the status :attr:`error_statuses` gives its error,
        e.g. -32021: 400).  Either form is allowed for a request POST."""
        obj = item.message
        awaiting = self.awaiting
        if isinstance(obj, list):  # a 2025-03-26 batch answer
            answered = {m.get("id") for m in obj if isinstance(m, dict)}
            if not awaiting or not awaiting <= answered:
                return False
            error = None
        elif is_response(obj):
            # (awaiting <= {its id}, not empty: awaiting is that id alone)
            if len(awaiting) != 1 or obj.get("id") not in awaiting:
                return False
            error = obj.get("error")
        else:
            return False
        code = error.get("code") if isinstance(error, dict) else None
        self.status = self.error_statuses.get(code, 200) if isinstance(code, int) else 200
        self.headers = {"content-type": "application/json"}
        self.streaming = False
        self.append(item.data)
        self.end()
        return True


def text_reply(status: int, message: str, extra: dict[str, str] | None = None) -> Exchange:
    """A plain-text reply."""
    headers = {"content-type": "text/plain; charset=utf-8", **(extra or {})}
    return Exchange(status, headers, message.encode("utf-8"))


def json_error(status: int, request_id: Any, code: int, message: str) -> Exchange:
    """A JSON-RPC error as a whole reply."""
    error = MCPError(code, message).to_dict()
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": error}
    body["id"] = request_id if is_request_id(request_id) else None
    return Exchange(status, {"content-type": "application/json"}, _json.encode(body))
