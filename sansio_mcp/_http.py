"""HTTP/1.1 with the limits an MCP endpoint needs: bytes in, whole requests
(or responses) out.  Common messages take a fast path; h11 handles the rest.
Shared by the Streamable HTTP and legacy HTTP+SSE machines."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar
from urllib.parse import urlsplit

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
    "url_hostname",
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


def url_hostname(url: str) -> str | None:
    """The lower-cased host name of ``url`` ("" if it has none), None if it is
    malformed ("[::1", a bad port): a peer's Host or Origin may be anything."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return None


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


# The fast path -------------------------------------------------------------------------
#
# h11 costs tens of microseconds per message (its event and state machinery), which
# was the largest cost of a kept-alive MCP round trip.  The common messages (HTTP/1.1,
# plain header lines, a Content-Length body) are parsed and written here with a few
# regular expressions instead.  The first message outside that strict subset hands
# the connection to h11 for good, the bytes so far replayed into it, so anything
# unusual still gets h11's exact behaviour and errors; inside the subset the results
# and the bytes written are h11's (tests/transports/test_http_fast_path.py compares).

_TCHAR = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]"
_VCHAR = rb"[!-~\x80-\xff]"  # visible ASCII or obs-text: stricter than h11 allows
_VALUE = _VCHAR + rb"+(?:[ \t]+" + _VCHAR + rb"+)*"
_HEADER_LINE = re.compile(rb"(" + _TCHAR + rb"+):[ \t]*((?:" + _VALUE + rb")?)[ \t]*\r\n")
_REQUEST_LINE = re.compile(rb"(" + _TCHAR + rb"+) ([!-~]+) HTTP/1\.1\r\n")
_STATUS_LINE = re.compile(rb"HTTP/1\.1 ([0-9]{3})(?: [ \t!-~\x80-\xff]*)?\r\n")
_NAME = re.compile(_TCHAR + rb"+")
_FIELD_VALUE = re.compile(rb"(?:" + _VALUE + rb")?")
_DIGITS = re.compile(rb"[0-9]{1,20}")
_TARGET = re.compile(rb"[!-~]+")
# Methods whose exchanges h11 frames specially (no body, tunnels): never fast.
_SPECIAL_METHODS = {b"HEAD", b"CONNECT"}
# Request headers whose handling only h11 does: chunked bodies, 100-continue, upgrades.
_H11_ONLY = {b"transfer-encoding", b"expect", b"upgrade"}


class _Fallback:
    """The fast path cannot decide: h11 takes over."""


_FALLBACK = _Fallback()


class _Head:
    """A message head parsed by the fast path."""

    __slots__ = ("close", "headers", "hosts", "length", "special")

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.length: int | None = None  # Content-Length, if given once and plainly
        self.close = False  # Connection: close
        self.special = False  # something only h11 handles (or a second Content-Length)
        self.hosts = 0


def _parse_fields(buf: bytearray, pos: int, stop: int) -> _Head | None:
    """The header lines of ``buf[pos:stop]`` (each ending in CRLF), or None if any
    line is outside the fast subset."""
    head = _Head()
    headers = head.headers
    while pos < stop:
        match = _HEADER_LINE.match(buf, pos)
        if match is None:
            return None
        pos = match.end()
        raw_name, raw_value = match.group(1, 2)
        lowered = raw_name.lower()
        if lowered in _H11_ONLY:
            head.special = True
        elif lowered == b"content-length":
            if head.length is not None or not _DIGITS.fullmatch(raw_value):
                head.special = True
            else:
                head.length = int(raw_value)
        elif lowered == b"host":
            head.hosts += 1
        elif lowered == b"connection":
            head.close = head.close or b"close" in _tokens(raw_value)
        name = lowered.decode("ascii")
        value = raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return head if pos == stop else None


def _tokens(value: bytes) -> set[bytes]:
    """The lower-cased items of a comma-separated header value."""
    return {item.strip().lower() for item in value.split(b",")} - {b""}


def _head_end(buf: bytearray, max_headers: int, searched: int) -> int | _Fallback | None:
    """Where the head in ``buf`` ends (its blank line), None while it may still come,
    or _FALLBACK when only h11 can tell (bare-LF lines, a head too long to wait for).
    The first ``searched`` bytes were searched before: only what came since is (so
    a head arriving in many small pieces costs linear time, not quadratic)."""
    end = buf.find(b"\r\n\r\n", max(0, searched - 3))
    if end >= 0:
        return end
    if (
        len(buf) > max_headers
        or buf.find(b"\n\n", max(0, searched - 1)) >= 0
        or buf.find(b"\n\r\n", max(0, searched - 2)) >= 0
    ):
        return _FALLBACK
    if buf and buf[0] < 0x21:
        return _FALLBACK  # h11 refuses such a first line at once, without waiting for more
    return None


class _Out:
    """Outgoing headers checked and normalized as h11 does, and what they say."""

    __slots__ = ("chunked", "connection", "h11_only", "headers", "hosts", "length")

    def __init__(self, headers: list[tuple[bytes, bytes]]) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.length: int | None = None
        self.chunked = False
        self.connection: set[bytes] = set()
        self.hosts = 0
        self.h11_only = False
        for name, value in headers:
            if not _NAME.fullmatch(name):
                raise h11.LocalProtocolError(f"Illegal header name {name!r}")
            if not _FIELD_VALUE.fullmatch(value):
                raise h11.LocalProtocolError(f"Illegal header value {value!r}")
            lowered = name.lower()
            if lowered == b"content-length":
                lengths = {part.strip() for part in value.split(b",")}
                if len(lengths) != 1:
                    raise h11.LocalProtocolError("conflicting Content-Length headers")
                value = lengths.pop()
                if not _DIGITS.fullmatch(value):
                    raise h11.LocalProtocolError("bad Content-Length")
                if self.length is not None:
                    if self.length != int(value):
                        raise h11.LocalProtocolError("conflicting Content-Length headers")
                    continue  # a repeat of the same length is dropped
                self.length = int(value)
            elif lowered == b"transfer-encoding":
                if self.chunked:
                    raise h11.LocalProtocolError("multiple Transfer-Encoding headers")
                value = value.lower()
                if value != b"chunked":
                    raise h11.LocalProtocolError("Only Transfer-Encoding: chunked is supported")
                self.chunked = True
            elif lowered == b"connection":
                self.connection |= _tokens(value)
            elif lowered == b"host":
                self.hosts += 1
            elif lowered in _H11_ONLY:
                self.h11_only = True
            self.headers.append((name, value))

    def without(self, *names: bytes) -> list[tuple[bytes, bytes]]:
        return [(n, v) for n, v in self.headers if n.lower() not in names]


def _write_head(first_line: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    return first_line + b"".join(b"%s: %s\r\n" % pair for pair in headers) + b"\r\n"


class _Connection:
    """What both sides share: bytes kept for the fast path, or h11 once it took over."""

    def __init__(self, our_role: type[h11.SERVER] | type[h11.CLIENT], max_headers: int) -> None:
        self._role = our_role
        self._max_headers = max_headers
        self._h11: h11.Connection | None = None
        self._buf = bytearray()
        self._eof = False
        # How much of self._buf was searched for the end of a head, without finding it.
        self._searched = 0
        # Whether the end of the connection was reported (ConnectionEnded): as in h11,
        # a connection is not reused once it was (and may be before).
        self._ended = False

    def _connection_ended(self) -> ConnectionEnded:
        self._ended = True
        return ConnectionEnded()

    def _find_head_end(self) -> int | _Fallback | None:
        end = _head_end(self._buf, self._max_headers, self._searched)
        self._searched = len(self._buf) if end is None else 0
        return end

    def _receive(self, data: bytes | bytearray) -> None:
        if self._h11 is not None:
            self._h11.receive_data(bytes(data))
        elif not data:
            self._eof = True
        elif not self._eof:
            self._buf += data

    def _take_over(self) -> h11.Connection:
        """Hand the connection to h11 for good."""
        conn = h11.Connection(self._role, max_incomplete_event_size=self._max_headers)
        self._h11 = conn
        return conn

    def _replay(self) -> None:
        """Give h11 what arrived so far (and the end of the connection, if it came)."""
        assert self._h11 is not None
        if self._buf:  # (h11 takes empty data for the end of the connection)
            self._h11.receive_data(bytes(self._buf))
            self._buf.clear()
        if self._eof:
            self._h11.receive_data(b"")


class HTTPServerConnection(_Connection):
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
        super().__init__(h11.SERVER, max_headers)
        self.max_body = max_body
        self._request: h11.Request | None = None
        self._body = bytearray()
        # The fast path's state (while self._h11 is None).
        self._got_request = False  # a request was parsed; its response is due
        self._keep_alive = True
        self._response: str | None = None  # None, "length", "chunked", "done" or "error"
        self._remaining = 0
        # A request whose head was parsed while its body is still arriving: the
        # method, the target, the head, where the body starts, and its length.
        self._pending: tuple[bytes, bytes, _Head, int, int] | None = None

    def _fall_back(self) -> None:
        """Hand the connection to h11, replaying what arrived."""
        self._take_over()
        self._replay()

    @property
    def can_reuse(self) -> bool:
        if self._h11 is None:
            return (
                self._got_request
                and self._response == "done"
                and self._keep_alive
                and not self._ended
            )
        return self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE

    def receive_data(self, data: bytes | bytearray) -> None:
        self._receive(data)

    def next_request(self) -> HTTPRequest | HTTPError | ConnectionEnded | type[NEED_DATA]:
        if self._h11 is None:
            fast = self._fast_request()
            if not isinstance(fast, _Fallback):
                return fast
            self._fall_back()
        return self._h11_request()

    def _fast_request(
        self,
    ) -> HTTPRequest | HTTPError | ConnectionEnded | type[NEED_DATA] | _Fallback:
        buf = self._buf
        if self._got_request:  # the next request waits for start_next, as in h11
            return self._connection_ended() if self._eof and not buf else NEED_DATA
        if self._pending is None:
            end = self._find_head_end()
            if end is None:
                if self._eof:
                    return self._connection_ended() if not buf else _FALLBACK
                return NEED_DATA
            if isinstance(end, _Fallback):
                return end
            line = _REQUEST_LINE.match(buf)
            if line is None or line.group(1) in _SPECIAL_METHODS:
                return _FALLBACK
            head = _parse_fields(buf, line.end(), end + 2)
            if head is None or head.special or head.hosts != 1:
                return _FALLBACK
            length = head.length or 0
            if length > self.max_body:
                self._keep_alive = not head.close
                return HTTPError(413, f"request body over {self.max_body} bytes")
            method, target = line.group(1, 2)
            start = end + 4
        else:  # the head was parsed before: only the body was missing
            method, target, head, start, length = self._pending
        if len(buf) < start + length:
            if self._eof:
                return _FALLBACK
            self._pending = (method, target, head, start, length)
            return NEED_DATA
        self._pending = None
        request = HTTPRequest(
            method=method.decode("ascii"),
            target=target.decode("latin-1"),
            headers=head.headers,
            body=bytes(buf[start : start + length]),
        )
        del buf[: start + length]
        self._got_request = True
        self._keep_alive = not head.close
        return request

    def _h11_request(self) -> HTTPRequest | HTTPError | ConnectionEnded | type[NEED_DATA]:
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
        if self._h11 is not None:
            return self._h11.send(h11.Response(status_code=status, headers=encoded)) or b""
        try:
            return self._fast_head(status, encoded)
        except h11.LocalProtocolError:
            self._fail_for_good()
            raise

    def _fail_for_good(self) -> None:
        """A send broke the protocol: nothing more can be sent and the connection is
        not reused (h11's ERROR state)."""
        self._response = "error"
        self._keep_alive = False

    def _fast_head(self, status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
        # The framing and Connection headers h11 would write.
        if self._response is not None or not self._got_request or not 200 <= status <= 999:
            raise h11.LocalProtocolError("a response cannot be sent now")
        out = _Out(headers)
        lines = out.headers
        if status in (204, 304):
            self._response, self._remaining = "length", 0
        elif out.chunked or out.length is None:
            self._response = "chunked"
            lines = out.without(b"content-length", b"transfer-encoding")
            lines.append((b"Transfer-Encoding", b"chunked"))
        else:
            self._response, self._remaining = "length", out.length
        if not self._keep_alive:
            tokens = (out.connection - {b"keep-alive"}) | {b"close"}
            lines = [(n, v) for n, v in lines if n.lower() != b"connection"]
            lines += [(b"Connection", token) for token in sorted(tokens)]
        elif b"close" in out.connection:
            self._keep_alive = False
        return _write_head(b"HTTP/1.1 %d \r\n" % status, lines)

    def send_body(self, data: bytes) -> bytes:
        if not data:
            return b""
        if self._h11 is not None:
            if self._request is not None and self._request.method == b"HEAD":
                return b""  # a response to HEAD has no body (its head still says how long)
            return self._h11.send(h11.Data(data=data)) or b""
        if self._response == "chunked":
            return b"%x\r\n%s\r\n" % (len(data), data)
        if self._response != "length" or len(data) > self._remaining:
            self._fail_for_good()
            raise h11.LocalProtocolError("Too much data for declared Content-Length")
        self._remaining -= len(data)
        return data

    def end(self) -> bytes:
        if self._h11 is not None:
            return self._h11.send(h11.EndOfMessage()) or b""
        if self._response == "chunked":
            self._response = "done"
            return b"0\r\n\r\n"
        if self._response != "length" or self._remaining:
            self._fail_for_good()
            raise h11.LocalProtocolError("Too little data for declared Content-Length")
        self._response = "done"
        return b""

    def send_response(
        self, status: int, headers: Mapping[str, str] | Iterable[tuple[str, str]], body: bytes = b""
    ) -> bytes:
        """A whole response with a Content-Length."""
        all_headers = [*(_as_pairs(headers)), ("content-length", str(len(body)))]
        return self.send_head(status, all_headers) + self.send_body(body) + self.end()

    def send_error_response(self, status: int, reason: str) -> bytes:
        """Answer an :class:`HTTPError`, if the connection state still allows it."""
        if self._h11 is not None:
            if self._h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
                return b""
        elif self._response is not None:
            return b""
        else:
            self._got_request = True  # answering the request that could not be read
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
        if self._h11 is not None:
            self._h11.start_next_cycle()
            self._request = None
            self._body.clear()
        else:
            self._got_request = False
            self._response = None
        return True

    def close(self) -> bytes:
        if self._h11 is None:
            self._keep_alive = False
            return b""
        try:
            return self._h11.send(h11.ConnectionClosed()) or b""
        except h11.LocalProtocolError:
            return b""


def _as_pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(headers.items()) if isinstance(headers, Mapping) else list(headers)


_ClientEvent = HTTPResponseHead | bytes | ConnectionEnded | HTTPError | type[NEED_DATA] | None


class HTTPClientConnection(_Connection):
    """The client side of one HTTP/1.1 connection: one request at a time,
    several in turn when the server keeps the connection alive."""

    def __init__(self, host: str, *, max_headers: int = DEFAULT_MAX_HEADERS) -> None:
        super().__init__(h11.CLIENT, max_headers)
        self.host = host
        #: Whether this connection already carried a whole exchange before the current one.
        self.reused = False
        #: Whether any byte of the current response arrived.
        self.response_started = False
        # The fast path's state (while self._h11 is None).
        self._sent: tuple[bytes, bytes, list[tuple[bytes, bytes]], bytes | None] | None = None
        self._keep_alive = True
        self._state = "idle"  # "idle", "head" (awaiting it), "body", "done"
        self._remaining = self._length = 0

    def send_request(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes | None = None
    ) -> bytes:
        pairs = [("host", self.host), *headers.items()]
        if body is not None:
            pairs.append(("content-length", str(len(body))))
        encoded = _encode_headers(pairs)
        raw_method, raw_target = method.encode("ascii"), target.encode("ascii")
        if self._h11 is None:
            if self._state != "idle":
                raise h11.LocalProtocolError("a request is already in progress")
            if not _NAME.fullmatch(raw_method) or not _TARGET.fullmatch(raw_target):
                raise h11.LocalProtocolError(f"Illegal request line {method!r} {target!r}")
            out = _Out(encoded)
            if out.hosts != 1:
                raise h11.LocalProtocolError("Found multiple Host: headers")
            if not (out.h11_only or out.chunked or raw_method in _SPECIAL_METHODS):
                self._sent = (raw_method, raw_target, encoded, body)
                self._state = "head"
                self._keep_alive = b"close" not in out.connection
                first = b"%s %s HTTP/1.1\r\n" % (raw_method, raw_target)
                return _write_head(first, out.headers) + (body or b"")
            self._fall_back()  # a request only h11 frames (it is at a message boundary)
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
        self._take_over()
        if self._sent is not None and self._state != "idle":
            self._h11_send(*self._sent)
        self._replay()

    def receive_data(self, data: bytes | bytearray) -> None:
        if data:
            self.response_started = True
        self._receive(data)

    def next_event(self) -> _ClientEvent:
        """The response head, then body chunks (bytes), then None at its end."""
        if self._h11 is None:
            fast = self._fast_event()
            if not isinstance(fast, _Fallback):
                return fast
            self._fall_back()
        return self._h11_event()

    def _fast_event(self) -> _ClientEvent | _Fallback:
        buf = self._buf
        if self._state == "body":
            if self._remaining == 0:
                self._state = "done"
                return None
            if not buf:
                if self._eof:
                    received = self._length - self._remaining
                    return HTTPError(
                        502,
                        "malformed HTTP response: peer closed connection without sending "
                        f"complete message body (received {received} bytes, "
                        f"expected {self._length})",
                    )
                return NEED_DATA
            chunk = bytes(buf[: self._remaining])
            del buf[: len(chunk)]
            self._remaining -= len(chunk)
            return chunk
        if self._state != "head":
            if self._eof and not buf:
                return self._connection_ended()
            return NEED_DATA if self._state == "done" else _FALLBACK
        end = self._find_head_end()
        if end is None:
            return _FALLBACK if self._eof else NEED_DATA
        if isinstance(end, _Fallback):
            return end
        line = _STATUS_LINE.match(buf)
        assert self._sent is not None
        if line is None or self._sent[0] in _SPECIAL_METHODS:
            return _FALLBACK
        status = int(line.group(1))
        head = _parse_fields(buf, line.end(), end + 2)
        if head is None or head.special or status < 200:
            return _FALLBACK
        if status in (204, 304):
            length = 0
        elif head.length is None:
            return _FALLBACK  # chunked, or delimited by the connection's end: h11's job
        else:
            length = head.length
        del buf[: end + 4]
        self._keep_alive = self._keep_alive and not head.close
        self._state, self._remaining, self._length = "body", length, length
        return HTTPResponseHead(status, head.headers)

    def _h11_event(self) -> _ClientEvent:
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
    def can_reuse(self) -> bool:
        if self._h11 is None:
            return self._state == "done" and self._keep_alive and not self._ended
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
        if self._h11 is not None:
            self._h11.start_next_cycle()
        else:
            self._state = "idle"
            self._sent = None
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
