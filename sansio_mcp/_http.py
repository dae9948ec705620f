"""HTTP/1.1 on h11, with the limits an MCP endpoint needs: bytes in, whole
requests (or responses) out.  Shared by the Streamable HTTP and legacy
HTTP+SSE machines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

import attrs
import h11

from ._ndjson import NEED_DATA

__all__ = [
    "HTTPRequest",
    "HTTPResponseHead",
    "HTTPError",
    "ConnectionEnded",
    "HTTPServerConnection",
    "HTTPClientConnection",
    "PooledConnection",
    "ConnectionPool",
    "header_dict",
    "media_types",
]

DEFAULT_MAX_BODY = 4 * 1024 * 1024
DEFAULT_MAX_HEADERS = 64 * 1024


def header_dict(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with ", " (RFC 9110)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def media_types(value: str | None) -> set[str]:
    """The media types listed in an Accept or Content-Type value, without parameters."""
    if not value:
        return set()
    return {part.split(";")[0].strip().lower() for part in value.split(",") if part.strip()}


@attrs.frozen
class HTTPRequest:
    method: str
    target: str
    headers: Mapping[str, str]
    body: bytes = b""

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""


@attrs.frozen
class HTTPResponseHead:
    status: int
    headers: Mapping[str, str]


@attrs.frozen
class HTTPError:
    """The peer broke HTTP; ``status`` is what a server should answer (if it still can)."""

    status: int
    reason: str


@attrs.frozen
class ConnectionEnded:
    """The peer closed the connection cleanly."""


def _encode_headers(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
) -> list[tuple[bytes, bytes]]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in items]


class HTTPServerConnection:
    """The server side of one HTTP/1.1 connection.

    ``receive_data`` then ``next_request`` gives whole requests (the body
    collected up to ``max_body`` bytes: a larger one is an :class:`HTTPError`
    413 before it is read).  Responses go out through ``send_head``,
    ``send_body`` and ``end``; ``start_next`` readies the connection for the
    next request when keep-alive allows it.
    """

    def __init__(
        self, *, max_body: int = DEFAULT_MAX_BODY, max_headers: int = DEFAULT_MAX_HEADERS
    ) -> None:
        self.max_body = max_body
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=max_headers)
        self._request: h11.Request | None = None
        self._body = bytearray()

    @property
    def can_reuse(self) -> bool:
        return self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE

    def receive_data(self, data: bytes | bytearray) -> None:
        self._h11.receive_data(bytes(data))

    def next_request(self) -> HTTPRequest | HTTPError | ConnectionEnded | type[NEED_DATA]:
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint
                return HTTPError(status if status >= 400 else 400, str(exc) or "bad request")
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return NEED_DATA
            if isinstance(event, h11.Request):
                self._request = event
                self._body.clear()
                length = header_dict(event.headers).get("content-length")
                if length is not None and length.isdigit() and int(length) > self.max_body:
                    return HTTPError(413, f"request body over {self.max_body} bytes")
            elif isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self.max_body:
                    return HTTPError(413, f"request body over {self.max_body} bytes")
            elif isinstance(event, h11.EndOfMessage):
                assert self._request is not None
                request = self._request
                return HTTPRequest(
                    method=request.method.decode("ascii"),
                    target=request.target.decode("latin-1"),
                    headers=header_dict(request.headers),
                    body=bytes(self._body),
                )
            elif isinstance(event, h11.ConnectionClosed):
                return ConnectionEnded()

    def send_head(
        self, status: int, headers: Mapping[str, str] | Iterable[tuple[str, str]]
    ) -> bytes:
        return (
            self._h11.send(h11.Response(status_code=status, headers=_encode_headers(headers)))
            or b""
        )

    def send_body(self, data: bytes) -> bytes:
        if not data:
            return b""
        if self._request is not None and self._request.method == b"HEAD":
            return b""  # a response to HEAD has no body (its head still says how long)
        return self._h11.send(h11.Data(data=data)) or b""

    def end(self) -> bytes:
        return self._h11.send(h11.EndOfMessage()) or b""

    def send_response(
        self, status: int, headers: Mapping[str, str] | Iterable[tuple[str, str]], body: bytes = b""
    ) -> bytes:
        """A whole response with a Content-Length."""
        all_headers = [*(_as_pairs(headers)), ("content-length", str(len(body)))]
        return self.send_head(status, all_headers) + self.send_body(body) + self.end()

    def send_error_response(self, status: int, reason: str) -> bytes:
        """Answer an :class:`HTTPError`, if the connection state still allows it."""
        if self._h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return b""
        body = reason.encode("utf-8", "replace")
        try:
            return self.send_response(
                status,
                [("content-type", "text/plain; charset=utf-8"), ("connection", "close")],
                body,
            )
        except h11.LocalProtocolError:
            return b""

    def start_next(self) -> bool:
        """Get ready for the next request on this connection; False if it must close."""
        if not self.can_reuse:
            return False
        self._h11.start_next_cycle()
        self._request = None
        self._body.clear()
        return True

    def close(self) -> bytes:
        try:
            return self._h11.send(h11.ConnectionClosed()) or b""
        except h11.LocalProtocolError:
            return b""


def _as_pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(headers.items()) if isinstance(headers, Mapping) else list(headers)


class HTTPClientConnection:
    """The client side of one HTTP/1.1 connection: one request at a time,
    several in turn when the server keeps the connection alive."""

    def __init__(self, host: str, *, max_headers: int = DEFAULT_MAX_HEADERS) -> None:
        self.host = host
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_headers)
        #: Whether this connection already carried a whole exchange before the current one.
        self.reused = False
        #: Whether any byte of the current response arrived.
        self.response_started = False

    def send_request(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes | None = None
    ) -> bytes:
        pairs = [("host", self.host), *headers.items()]
        if body is not None:
            pairs.append(("content-length", str(len(body))))
        out = self._h11.send(
            h11.Request(method=method, target=target, headers=_encode_headers(pairs))
        )
        if body:
            out = (out or b"") + (self._h11.send(h11.Data(data=body)) or b"")
        return (out or b"") + (self._h11.send(h11.EndOfMessage()) or b"")

    def receive_data(self, data: bytes | bytearray) -> None:
        if data:
            self.response_started = True
        self._h11.receive_data(bytes(data))

    def next_event(
        self,
    ) -> HTTPResponseHead | bytes | ConnectionEnded | HTTPError | type[NEED_DATA] | None:
        """The response head, then body chunks (bytes), then None at its end."""
        try:
            event = self._h11.next_event()
        except h11.RemoteProtocolError as exc:
            return HTTPError(502, f"malformed HTTP response: {exc}")
        if event is h11.NEED_DATA or event is h11.PAUSED:
            return NEED_DATA
        if isinstance(event, h11.InformationalResponse):
            return self.next_event()
        if isinstance(event, h11.Response):
            return HTTPResponseHead(event.status_code, header_dict(event.headers))
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            return None
        return ConnectionEnded()

    @property
    def can_reuse(self) -> bool:
        return self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE

    @property
    def may_retry(self) -> bool:
        """Whether a request that failed on this connection may go again on a fresh one.

        Only on a reused connection, and only when no byte of the answer came
        back: then the likeliest cause is the server closing the connection as
        idle just as the request went out, before it read the request.
        """
        return self.reused and not self.response_started

    def start_next(self) -> bool:
        """Ready the connection for another request; False if it must close (the
        exchange did not end cleanly, or the server said ``Connection: close``)."""
        if not self.can_reuse:
            return False
        self._h11.start_next_cycle()
        self.reused = True
        self.response_started = False
        return True


S = TypeVar("S")


class PooledConnection(Generic[S]):
    """An adapter's byte stream ``S`` and the HTTP state of the connection it carries."""

    def __init__(self, origin: str, stream: S, http: HTTPClientConnection) -> None:
        self.origin = origin
        self.stream = stream
        self.http = http


class ConnectionPool(Generic[S]):
    """A client's idle keep-alive connections, by origin.

    A request takes an idle connection (the most recently used, the one a
    server is least likely to have closed) or the adapter opens a fresh one;
    afterwards :meth:`release` keeps the connection only if its exchange
    ended cleanly and the server allows reuse.  Requests in flight never
    share a connection: one whose answer is still streaming is not idle.
    """

    def __init__(self, *, max_idle: int = 4, max_headers: int = DEFAULT_MAX_HEADERS) -> None:
        self.max_idle = max_idle
        self.max_headers = max_headers
        self.closed = False
        self._idle: dict[str, list[PooledConnection[S]]] = {}

    def take(self, origin: str) -> PooledConnection[S] | None:
        """An idle connection to ``origin``, or None: open one and call :meth:`opened`."""
        idle = self._idle.get(origin)
        return idle.pop() if idle else None

    def opened(self, origin: str, host_header: str, stream: S) -> PooledConnection[S]:
        return PooledConnection(
            origin, stream, HTTPClientConnection(host_header, max_headers=self.max_headers)
        )

    def release(self, conn: PooledConnection[S]) -> bool:
        """Keep ``conn`` for a later request; False: the adapter closes its stream."""
        if self.closed or not conn.http.start_next():
            return False
        idle = self._idle.setdefault(conn.origin, [])
        if len(idle) >= self.max_idle:
            return False
        idle.append(conn)
        return True

    def close(self) -> list[S]:
        """Stop keeping connections; the streams of the idle ones, for the adapter to close."""
        self.closed = True
        streams = [conn.stream for idle in self._idle.values() for conn in idle]
        self._idle.clear()
        return streams

    def __len__(self) -> int:
        return sum(len(idle) for idle in self._idle.values())
