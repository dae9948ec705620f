"""HTTP/1.1 with the limits an MCP endpoint needs: bytes in, whole requests
(or responses) out.  Shared by the Streamable HTTP and legacy HTTP+SSE machines.

Two engines parse and write the messages: common ones take the fast path
(:mod:`._http_fast`), and h11 handles the rest (the fast path hands a connection
to h11 for good at the first message outside its subset).  The fast path is on
by default; ``fast_path=False`` on a connection (or :data:`USE_FAST_PATH` set to
False before connections are made) has h11 handle every message.  The client's
keep-alive pool is :mod:`._http_pool`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar
from urllib.parse import urlsplit

import h11

from ._http_fast import Fallback, FastClient, FastServer, H11Connection
from ._http_messages import (
    ClientEvent,
    ConnectionEnded,
    HTTPError,
    HTTPRequest,
    HTTPResponseHead,
    ServerEvent,
)
from ._ndjson import NEED_DATA

__all__ = [
    "HTTPRequest",
    "HTTPResponseHead",
    "HTTPError",
    "ConnectionEnded",
    "HTTPServerConnection",
    "HTTPClientConnection",
    "USE_FAST_PATH",
    "header_dict",
    "media_types",
    "url_hostname",
]

DEFAULT_MAX_BODY = 4 * 1024 * 1024
DEFAULT_MAX_HEADERS = 64 * 1024

#: Whether connections made without ``fast_path=`` start on the fast path.  It
#: gives the same results and bytes as h11 (tests compare the two) at a fraction
#: of the cost; turn it off to rule it out when chasing an HTTP problem.
USE_FAST_PATH = True


def header_dict(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with ", " (RFC 9110)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


@functools.lru_cache(maxsize=256)
def url_hostname(url: str) -> str | None:
    """The lower-cased host name of ``url`` ("" if it has none), None if it is
    malformed ("[::1", a bad port): a peer's Host or Origin may be anything.
    Kept for the few values a server sees (each request names its Host)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return None


@functools.lru_cache(maxsize=256)
def media_types(value: str | None) -> frozenset[str]:
    """The media types listed in an Accept or Content-Type value, without parameters
    (kept: a client sends the same few values on every request)."""
    if not value:
        return frozenset()
    return frozenset(
        part.split(";")[0].strip().lower() for part in value.split(",") if part.strip()
    )


def _encode_headers(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
) -> list[tuple[bytes, bytes]]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in items]


def _fast_path_wanted(fast_path: bool | None) -> bool:
    return USE_FAST_PATH if fast_path is None else fast_path


F = TypeVar("F", FastServer, FastClient)


class _Connection(Generic[F]):
    """What both sides share: the fast path ``F`` while it lasts, h11 after."""

    def __init__(
        self, our_role: type[h11.SERVER] | type[h11.CLIENT], max_headers: int, fast: F | None
    ) -> None:
        self._role = our_role
        self._max_headers = max_headers
        self._h11: h11.Connection | None = None
        # Exactly one of self._fast and self._h11 is set.
        self._fast: F | None = fast
        if fast is None:
            self._take_over()

    def _take_over(self) -> h11.Connection:
        """Hand the connection to h11 for good."""
        conn = H11Connection(self._role, max_incomplete_event_size=self._max_headers)
        self._h11 = conn
        return conn

    @property
    def can_reuse(self) -> bool:
        if self._fast is not None:
            return self._fast.can_reuse
        assert self._h11 is not None
        return self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE

    @property
    def buffered(self) -> int:
        """Bytes received and not yet taken into a message (a pipelined request's, say)."""
        if self._fast is not None:
            return len(self._fast.buf)
        assert self._h11 is not None
        return len(self._h11.trailing_data[0])

    def receive_data(self, data: bytes | bytearray) -> None:
        if self._fast is not None:
            self._fast.receive(data)
        else:
            assert self._h11 is not None
            self._h11.receive_data(bytes(data))


def _head_size(request: h11.Request) -> int:
    """The bytes of a request's head as sent: its line, its fields, the blank line."""
    line = len(request.method) + len(request.target) + len(b" HTTP/1.1\r\n") + 1
    return line + sum(len(name) + len(value) + 4 for name, value in request.headers) + 2


class HTTPServerConnection(_Connection[FastServer]):
    """The server side of one HTTP/1.1 connection.

    ``receive_data`` then ``next_request`` gives whole requests (the body
    collected up to ``max_body`` bytes: a larger one is an :class:`HTTPError`
    413 before it is read).  Responses go out through ``send_head``,
    ``send_body`` and ``end``; ``start_next`` readies the connection for the
    next request when keep-alive allows it.  ``fast_path``: see the module.
    """

    def __init__(
        self,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        max_headers: int = DEFAULT_MAX_HEADERS,
        fast_path: bool | None = None,
    ) -> None:
        fast = FastServer(max_headers, max_body) if _fast_path_wanted(fast_path) else None
        super().__init__(h11.SERVER, max_headers, fast)
        self.max_body = max_body
        self._request: h11.Request | None = None
        self._body = bytearray()

    def _fall_back(self) -> None:
        """Hand the connection to h11, replaying what arrived."""
        conn = self._take_over()
        fast, self._fast = self._fast, None
        if fast is not None:
            fast.hand_over(conn)

    def next_request(self) -> ServerEvent:
        if self._fast is not None:
            fast = self._fast.next_request()
            if not isinstance(fast, Fallback):
                return fast
            self._fall_back()
        return self._h11_request()

    def _h11_request(self) -> ServerEvent:
        assert self._h11 is not None
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
                # h11 limits only a head still arriving; one that came whole meets it too.
                if _head_size(event) > self._max_headers:
                    return HTTPError(431, f"request head over {self._max_headers} bytes")
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
        encoded = _encode_headers(headers)
        if self._fast is not None:
            return self._fast.send_head(status, encoded)
        assert self._h11 is not None
        return self._h11.send(h11.Response(status_code=status, headers=encoded)) or b""

    def send_body(self, data: bytes) -> bytes:
        if not data:
            return b""
        if self._fast is not None:
            return self._fast.send_body(data)
        assert self._h11 is not None
        if self._request is not None and self._request.method == b"HEAD":
            return b""  # a response to HEAD has no body (its head still says how long)
        return self._h11.send(h11.Data(data=data)) or b""

    def end(self) -> bytes:
        if self._fast is not None:
            return self._fast.end()
        assert self._h11 is not None
        return self._h11.send(h11.EndOfMessage()) or b""

    def send_response(
        self, status: int, headers: Mapping[str, str] | Iterable[tuple[str, str]], body: bytes = b""
    ) -> bytes:
        """A whole response with a Content-Length."""
        if self._fast is not None and isinstance(headers, Mapping):
            head = self._fast.whole_head(status, headers, len(body))
            if head is not None:
                return head + body
        all_headers = [*(_as_pairs(headers)), ("content-length", str(len(body)))]
        return self.send_head(status, all_headers) + self.send_body(body) + self.end()

    def send_error_response(self, status: int, reason: str) -> bytes:
        """Answer an :class:`HTTPError`, if the connection state still allows it."""
        if self._fast is not None:
            if not self._fast.may_answer_error():
                return b""
        else:
            assert self._h11 is not None
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
        if self._fast is not None:
            self._fast.start_next()
        else:
            assert self._h11 is not None
            self._h11.start_next_cycle()
            self._request = None
            self._body.clear()
        return True

    def close(self) -> bytes:
        if self._fast is not None:
            self._fast.close()
            return b""
        assert self._h11 is not None
        try:
            return self._h11.send(h11.ConnectionClosed()) or b""
        except h11.LocalProtocolError:
            return b""


def _as_pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(headers.items()) if isinstance(headers, Mapping) else list(headers)


class HTTPClientConnection(_Connection[FastClient]):
    """The client side of one HTTP/1.1 connection: one request at a time,
    several in turn when the server keeps the connection alive.  ``fast_path``:
    see the module."""

    def __init__(
        self, host: str, *, max_headers: int = DEFAULT_MAX_HEADERS, fast_path: bool | None = None
    ) -> None:
        fast = FastClient(max_headers) if _fast_path_wanted(fast_path) else None
        super().__init__(h11.CLIENT, max_headers, fast)
        self.host = host
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
        encoded = _encode_headers(pairs)
        raw_method, raw_target = method.encode("ascii"), target.encode("ascii")
        if self._fast is not None:
            fast = self._fast.send_request(raw_method, raw_target, encoded, body)
            if not isinstance(fast, Fallback):
                return fast
            self._fall_back()
        return self._h11_send(raw_method, raw_target, encoded, body)

    def _h11_send(
        self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes | None
    ) -> bytes:
        assert self._h11 is not None
        out = self._h11.send(h11.Request(method=method, target=target, headers=headers)) or b""
        if body:
            out += self._h11.send(h11.Data(data=body)) or b""
        return out + (self._h11.send(h11.EndOfMessage()) or b"")

    def _fall_back(self) -> None:
        """Hand the connection to h11: replay the request (for its state) and what
        arrived of the answer."""
        conn = self._take_over()
        fast, self._fast = self._fast, None
        if fast is not None:
            if fast.in_flight is not None:
                self._h11_send(*fast.in_flight)
            fast.hand_over(conn)

    def receive_data(self, data: bytes | bytearray) -> None:
        if data:
            self.response_started = True
        super().receive_data(data)

    def next_event(self) -> ClientEvent:
        """The response head, then body chunks (bytes), then None at its end."""
        if self._fast is not None:
            fast = self._fast.next_event()
            if not isinstance(fast, Fallback):
                return fast
            self._fall_back()
        return self._h11_event()

    def _h11_event(self) -> ClientEvent:
        assert self._h11 is not None
        try:
            event = self._h11.next_event()
        except h11.RemoteProtocolError as exc:
            return HTTPError(502, f"malformed HTTP response: {exc}")
        if event is h11.NEED_DATA or event is h11.PAUSED:
            return NEED_DATA
        if isinstance(event, h11.InformationalResponse):
            return self._h11_event()
        if isinstance(event, h11.Response):
            return HTTPResponseHead(event.status_code, header_dict(event.headers))
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            return None
        return ConnectionEnded()

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
        if self._fast is not None:
            self._fast.start_next()
        else:
            assert self._h11 is not None
            self._h11.start_next_cycle()
        self.reused = True
        self.response_started = False
        return True
