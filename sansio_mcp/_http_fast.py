"""The HTTP/1.1 fast path: common messages parsed and written without h11.

h11 costs tens of microseconds per message (its event and state machinery), which
was the largest cost of a kept-alive MCP round trip.  The common messages (HTTP/1.1,
plain header lines, a Content-Length or chunked body: Node/Express servers send
every response chunked) are parsed and written here with a few regular
expressions instead.  The first message outside that strict subset hands
the connection to h11 for good (:meth:`FastPath.hand_over`, the bytes so far
replayed into it), so anything unusual still gets h11's exact behaviour and errors;
inside the subset the results and the bytes written are h11's
(tests/transports/test_http_fast_path.py compares).

:class:`FastServer` and :class:`FastClient` are the two sides' states while on the
fast path; :mod:`._http` decides when to use them (``USE_FAST_PATH``) and owns h11.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import h11
from h11 import _readers as _h11_readers
from h11._receivebuffer import ReceiveBuffer

from ._http_messages import (
    ClientEvent,
    ConnectionEnded,
    HTTPError,
    HTTPRequest,
    HTTPResponseHead,
    ServerEvent,
)
from ._ndjson import NEED_DATA

__all__ = ["FALLBACK", "FastClient", "FastPath", "FastServer", "Fallback"]

_TCHAR = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]"
_VCHAR = rb"[!-~\x80-\xff]"  # visible ASCII or obs-text: stricter than h11 allows
_VALUE = _VCHAR + rb"+(?:[ \t]+" + _VCHAR + rb"+)*"
_HEADER_LINE = re.compile(rb"(" + _TCHAR + rb"+):[ \t]*((?:" + _VALUE + rb")?)[ \t]*\r\n")
# The same line as text (a head decoded as Latin-1 at once), and a run of such lines:
# a head's fields are checked by one match and split by one more, not line by line.
_HEADER_LINE_TEXT = re.compile(_HEADER_LINE.pattern.decode("latin-1"))
_HEADER_LINES_TEXT = re.compile(
    (rb"(?:" + _TCHAR + rb"+:[ \t]*(?:" + _VALUE + rb")?[ \t]*\r\n)*").decode("latin-1")
)
_DIGITS_TEXT = re.compile("[0-9]{1,20}")
_REQUEST_LINE = re.compile(rb"(" + _TCHAR + rb"+) ([!-~]+) HTTP/1\.1\r\n")
_STATUS_LINE = re.compile(rb"HTTP/1\.1 ([0-9]{3})(?: [ \t!-~\x80-\xff]*)?\r\n")
_NAME = re.compile(_TCHAR + rb"+")
# h11's grammar for a field value (it allows control characters, not NUL or whitespace).
_H11_VCHAR = rb"[^\x00\s]"
_H11_VALUE = rb"(?:" + _H11_VCHAR + rb"+(?:[ \t]+" + _H11_VCHAR + rb"+)*)?"
_FIELD_VALUE = re.compile(_H11_VALUE)
# h11's grammars for a line of a trailer section and a chunk's size line.  The latter
# is h11's ``[0-9A-Fa-f]{1,20}(;.*)?[ \t]*\r\n`` written so that it cannot backtrack
# quadratically (h11's spends seconds on "5;", 60,000 tabs and a bare LF); the same
# language, as ``.*`` already takes the trailing blanks.
_H11_FIELD = re.compile(rb"(" + _TCHAR + rb"+):[ \t]*(" + _H11_VALUE + rb")[ \t]*")
_FOLD = re.compile(rb"[ \t]+")
_BLANK_LINE = re.compile(rb"\n\r?\n")
_CHUNK_HEADER = re.compile(rb"(?P<chunk_size>[0-9A-Fa-f]{1,20})(?:;[^\n]*|[ \t]*)\r\n")
_DIGITS = re.compile(rb"[0-9]{1,20}")
_TARGET = re.compile(rb"[!-~]+")
# Methods whose exchanges h11 frames specially (no body, tunnels): never fast.
_SPECIAL_METHODS = {b"HEAD", b"CONNECT"}
# Headers whose handling only h11 does: other transfer codings, 100-continue, upgrades.
_H11_ONLY = {b"transfer-encoding", b"expect", b"upgrade"}
_H11_ONLY_TEXT = {name.decode("ascii") for name in _H11_ONLY}


class _LinearChunkedReader(_h11_readers.ChunkedReader):
    """h11's reader of a chunked body, step for step, its size lines matched by
    :data:`_CHUNK_HEADER`: h11 reads chunked bodies for everything off the fast path
    (a server's chunked requests among them), and with its own pattern any client
    could make the server spend seconds of CPU on one line.  h11's module is left
    as it is; only our connections (:class:`H11Connection`) read with this."""

    def __call__(self, buf: ReceiveBuffer) -> h11.Data | h11.EndOfMessage | None:
        if self._reading_trailer:
            lines = buf.maybe_extract_lines()
            if lines is None:
                return None
            return h11.EndOfMessage(headers=list(_h11_readers._decode_header_lines(lines)))  # type: ignore[arg-type]
        if self._bytes_to_discard:
            data = buf.maybe_extract_at_most(len(self._bytes_to_discard))
            if data is None:
                return None
            if data != self._bytes_to_discard[: len(data)]:
                raise h11.LocalProtocolError(
                    f"malformed chunk footer: {data!r} (expected {self._bytes_to_discard!r})"
                )
            self._bytes_to_discard = self._bytes_to_discard[len(data) :]
            if self._bytes_to_discard:
                return None
        chunk_start = self._bytes_in_chunk == 0
        if chunk_start:
            chunk_header = buf.maybe_extract_next_line()
            if chunk_header is None:
                return None
            match = _CHUNK_HEADER.fullmatch(chunk_header)
            if match is None:
                raise h11.LocalProtocolError(f"illegal chunk header: {chunk_header!r}")
            self._bytes_in_chunk = int(match["chunk_size"], base=16)
            if self._bytes_in_chunk == 0:
                self._reading_trailer = True
                return self(buf)
        data = buf.maybe_extract_at_most(self._bytes_in_chunk)
        if data is None:
            return None
        self._bytes_in_chunk -= len(data)
        chunk_end = self._bytes_in_chunk == 0
        if chunk_end:
            self._bytes_to_discard = b"\r\n"
        return h11.Data(data=data, chunk_start=chunk_start, chunk_end=chunk_end)  # type: ignore[arg-type]


class H11Connection(h11.Connection):
    """An :class:`h11.Connection` whose chunked bodies are read by :class:`_LinearChunkedReader`."""

    def _get_io_object(self, role: Any, event: Any, io_dict: Any) -> Any:
        io = super()._get_io_object(role, event, io_dict)
        return _LinearChunkedReader() if type(io) is _h11_readers.ChunkedReader else io


class Fallback:
    """The fast path cannot decide: h11 takes over."""


FALLBACK = Fallback()


class _Head:
    """A message head parsed by the fast path (not changed once parsed: the memo's
    heads are shared, and each message given its headers takes a copy)."""

    __slots__ = ("chunked", "close", "headers", "hosts", "length", "special")

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.length: int | None = None  # Content-Length, if given once and plainly
        self.chunked = False  # Transfer-Encoding: chunked, given once
        self.close = False  # Connection: close
        self.special = False  # something only h11 handles (or a second Content-Length)
        self.hosts = 0


#: Heads parsed lately, by their header lines as text (a pure memo shared by every
#: connection of the process): a client repeats the same head on each request (its
#: Content-Length the same while its bodies are), and a head found here is not matched
#: and split again.  Only heads of at most ``HEAD_MEMO_TEXT_MAX`` characters are kept;
#: emptied when it holds ``HEAD_MEMO_MAX`` (distinct heads then only make misses).
_HEAD_MEMO: dict[str, _Head] = {}
HEAD_MEMO_MAX = 256
HEAD_MEMO_TEXT_MAX = 2048


def _parse_fields(buf: bytearray, pos: int, stop: int) -> _Head | None:
    """The header lines of ``buf[pos:stop]`` (each ending in CRLF), or None if any
    line is outside the fast subset."""
    # As text: names are ASCII, values Latin-1 (what each was decoded as, line by line);
    # what is compared below is ASCII, which str and bytes lower-case alike.
    text = buf[pos:stop].decode("latin-1")
    known = _HEAD_MEMO.get(text)
    if known is not None:
        return known
    head = _parse_text(text)
    if head is not None and len(text) <= HEAD_MEMO_TEXT_MAX:
        if len(_HEAD_MEMO) >= HEAD_MEMO_MAX:
            _HEAD_MEMO.clear()
        _HEAD_MEMO[text] = head
    return head


def _parse_text(text: str) -> _Head | None:
    """:func:`_parse_fields` of the head's lines as Latin-1 text, not remembered."""
    if _HEADER_LINES_TEXT.fullmatch(text) is None:
        return None
    head = _Head()
    headers = head.headers
    for raw_name, value in _HEADER_LINE_TEXT.findall(text):
        name = raw_name.lower()
        if name == "transfer-encoding" and not head.chunked and value.lower() == "chunked":
            head.chunked, value = True, "chunked"  # (h11 lower-cases it too)
        elif name in _H11_ONLY_TEXT:
            head.special = True
        elif name == "content-length":
            if head.length is not None or not _DIGITS_TEXT.fullmatch(value):
                head.special = True
            else:
                head.length = int(value)
        elif name == "host":
            head.hosts += 1
        elif name == "connection":
            head.close = head.close or b"close" in _tokens(value.encode("latin-1"))
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return head


def _tokens(value: bytes) -> set[bytes]:
    """The lower-cased items of a comma-separated header value."""
    return {item.strip().lower() for item in value.split(b",")} - {b""}


def _head_end(buf: bytearray, max_headers: int, searched: int) -> int | Fallback | None:
    """Where the head in ``buf`` ends (its blank line), None while it may still come,
    or FALLBACK when only h11 can tell (bare-LF lines, a head too long to wait for).
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
        return FALLBACK
    if buf and buf[0] < 0x21:
        return FALLBACK  # h11 refuses such a first line at once, without waiting for more
    return None


class _Out:
    """Outgoing headers checked and normalized as h11 does, and what they say."""

    __slots__ = ("chunked", "connection", "h11_only", "headers", "hosts", "length")

    def __init__(self, headers: list[tuple[bytes, bytes]]) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.length: int | None = None
        digits = b""  # h11 compares a repeated Content-Length by its digits
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
                    if digits != value:
                        raise h11.LocalProtocolError("conflicting Content-Length headers")
                    continue  # a repeat of the same length is dropped
                self.length, digits = int(value), value
            elif lowered == b"transfer-encoding":
                if self.chunked:
                    raise h11.LocalProtocolError(
                        "multiple Transfer-Encoding headers", error_status_hint=501
                    )
                value = value.lower()
                if value != b"chunked":
                    raise h11.LocalProtocolError(
                        "Only Transfer-Encoding: chunked is supported", error_status_hint=501
                    )
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


#: Headers ``_Out`` acts on (framing, Connection, Host, what only h11 does): never a
#: plain line.
_NOT_PLAIN = {b"content-length", b"connection", b"host", *_H11_ONLY}
#: Header lines a whole response may write unchecked, by their ``(name, value)`` as
#: text: each passed ``_Out``'s checks once (a server repeats the same few on every
#: response).  Emptied when it holds ``PLAIN_LINES_MAX`` (a stream of distinct session
#: ids only makes misses).
_PLAIN_LINES: dict[tuple[str, str], bytes] = {}
PLAIN_LINES_MAX = 512


def _plain_line(pair: tuple[str, str]) -> bytes | None:
    """``pair`` as a head's line when ``_Out`` would pass it unchanged (remembered), or
    None when the general path must write it (to act on it, or to refuse it)."""
    try:
        name, value = pair[0].encode("latin-1"), pair[1].encode("latin-1")
    except UnicodeEncodeError:
        return None
    if not _NAME.fullmatch(name) or not _FIELD_VALUE.fullmatch(value) or name.lower() in _NOT_PLAIN:
        return None
    line = b"%s: %s\r\n" % (name, value)
    if len(_PLAIN_LINES) >= PLAIN_LINES_MAX:
        _PLAIN_LINES.clear()
    _PLAIN_LINES[pair] = line
    return line


def _write_head(first_line: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    return first_line + b"".join(b"%s: %s\r\n" % pair for pair in headers) + b"\r\n"


def _check_trailers(section: bytes) -> None:
    """Refuse a trailer section (ending in its blank line) as h11 does: its lines
    folded, each matched, then Content-Length and Transfer-Encoding checked.  The
    messages name the lines as h11 does (as bytearrays)."""
    lines = bytearray(section).split(b"\n")[:-2]
    folded: list[bytearray] = []
    for line in lines:
        if line.endswith(b"\r"):
            del line[-1]
        fold = _FOLD.match(line)
        if fold is None:
            folded.append(line)
        elif not folded:
            raise h11.LocalProtocolError("continuation line at start of headers")
        else:
            folded[-1] += b" " + line[fold.end() :]
    fields = []
    for line in folded:
        match = _H11_FIELD.fullmatch(line)
        if match is None:
            raise h11.LocalProtocolError(f"illegal header line: {line!r}")
        fields.append((match[1], match[2]))
    _Out(fields)


class _Chunked:
    """A chunked body being read: h11's ``ChunkedReader`` step for step (each call
    takes the bytes h11's would), so errors come at the same points as h11's."""

    __slots__ = ("discard", "left", "searched", "trailer")

    def __init__(self) -> None:
        self.left = 0  # bytes of the current chunk still to come
        self.discard = b""  # what must follow a chunk's data (its CRLF, or the rest of it)
        self.trailer = False  # the last chunk came: the trailer section is next
        self.searched = 0  # how much of the buffer was searched for a line end before

    def read(self, buf: bytearray, eof: bool, limit: int) -> bytes | type[NEED_DATA] | None:
        """Body bytes, None at the end, or NEED_DATA; h11.LocalProtocolError (with h11's
        message and status hint) if malformed, cut short by the end of the connection
        (``eof``), or waiting for a size line or trailer section over ``limit`` bytes."""
        got = self._step(buf)
        if got is NEED_DATA:
            if eof and not buf:
                raise h11.LocalProtocolError(
                    "peer closed connection without sending complete message body "
                    "(incomplete chunked read)"
                )
            if len(buf) > limit:
                raise h11.LocalProtocolError("Receive buffer too long", error_status_hint=431)
            if eof:
                raise h11.LocalProtocolError("peer unexpectedly closed connection")
        return got

    def _step(self, buf: bytearray) -> bytes | type[NEED_DATA] | None:
        if self.trailer:
            return self._read_trailer(buf)
        if self.discard:
            if not buf:
                return NEED_DATA
            got = bytes(buf[: len(self.discard)])
            del buf[: len(got)]
            if got != self.discard[: len(got)]:
                raise h11.LocalProtocolError(
                    f"malformed chunk footer: {bytearray(got)!r} (expected {self.discard!r})"
                )
            self.discard = self.discard[len(got) :]
            if self.discard:
                return NEED_DATA
        if not self.left:
            end = buf.find(b"\r\n", max(0, self.searched - 1))
            if end < 0:
                self.searched = len(buf)
                return NEED_DATA
            self.searched = 0
            header = _CHUNK_HEADER.fullmatch(buf, 0, end + 2)
            if header is None:
                raise h11.LocalProtocolError(f"illegal chunk header: {buf[: end + 2]!r}")
            self.left = int(header[1], 16)
            del buf[: end + 2]
            if not self.left:
                self.trailer = True
                return self._read_trailer(buf)
        if not buf:
            return NEED_DATA
        if len(buf) <= self.left:
            data = bytes(buf)
            buf.clear()
        else:
            data = bytes(buf[: self.left])
            del buf[: self.left]
        self.left -= len(data)
        if not self.left:
            self.discard = b"\r\n"
        return data

    def _read_trailer(self, buf: bytearray) -> type[NEED_DATA] | None:
        if buf[:1] == b"\n" or buf[:2] == b"\r\n":  # no trailer (h11 takes a bare LF too)
            del buf[: buf.index(b"\n") + 1]
            return None
        blank = _BLANK_LINE.search(buf, self.searched)
        if blank is None:
            self.searched = max(0, len(buf) - 2)
            return NEED_DATA
        section = bytes(buf[: blank.end()])
        del buf[: blank.end()]
        _check_trailers(section)  # (read, checked and dropped, as our h11 path drops them)
        return None


class FastPath:
    """What both sides share: the bytes kept until a whole message is there."""

    def __init__(self, max_headers: int) -> None:
        self.max_headers = max_headers
        self.buf = bytearray()
        self.eof = False
        # How much of self.buf was searched for the end of a head, without finding it.
        self._searched = 0
        # Whether the end of the connection was reported (ConnectionEnded): as in h11,
        # a connection is not reused once it was (and may be before).
        self.ended = False

    def receive(self, data: bytes | bytearray) -> None:
        if not data:
            self.eof = True
        elif not self.eof:
            self.buf += data

    def hand_over(self, conn: h11.Connection) -> None:
        """Give h11 what arrived so far (and the end of the connection, if it came)."""
        if self.buf:  # (h11 takes empty data for the end of the connection)
            conn.receive_data(bytes(self.buf))
            self.buf.clear()
        if self.eof:
            conn.receive_data(b"")

    def _connection_ended(self) -> ConnectionEnded:
        self.ended = True
        return ConnectionEnded()

    def _find_head_end(self) -> int | Fallback | None:
        end = _head_end(self.buf, self.max_headers, self._searched)
        self._searched = len(self.buf) if end is None else 0
        return end


class FastServer(FastPath):
    """The server side of a connection while on the fast path."""

    def __init__(self, max_headers: int, max_body: int) -> None:
        super().__init__(max_headers)
        self.max_body = max_body
        self._got_request = False  # a request was parsed; its response is due
        self._keep_alive = True
        self._response: str | None = None  # None, "length", "chunked", "done" or "error"
        self._remaining = 0
        # A request whose head was parsed while its body is still arriving: the
        # method, the target, the head, where the body starts, and its length.
        self._pending: tuple[bytes, bytes, _Head, int, int] | None = None
        # A request with a chunked body, its head parsed: the method, the target, the
        # head, the body's reader and the body so far.
        self._chunked: tuple[bytes, bytes, _Head, _Chunked, bytearray] | None = None
        self._broken = False  # a request was malformed: nothing more is read (h11's ERROR)

    @property
    def can_reuse(self) -> bool:
        return (
            self._got_request and self._response == "done" and self._keep_alive and not self.ended
        )

    def next_request(self) -> ServerEvent | Fallback:
        buf = self.buf
        if self._broken:
            return HTTPError(400, "Can't receive data when peer state is ERROR")
        if self._got_request:  # the next request waits for start_next, as in h11
            return self._connection_ended() if self.eof and not buf else NEED_DATA
        if self._chunked is not None:
            return self._chunked_request()
        if self._pending is None:
            if not buf:  # (the common wait between requests: nothing to search)
                self._searched = 0
                return self._connection_ended() if self.eof else NEED_DATA
            # A head that came whole (most): found here, without _find_head_end's calls.
            whole = buf.find(b"\r\n\r\n") if not self._searched else -1
            end = whole if whole >= 0 else self._find_head_end()
            if end is None:
                if self.eof:
                    return self._connection_ended() if not buf else FALLBACK
                return NEED_DATA
            if isinstance(end, Fallback):
                return end
            if end + 4 > self.max_headers:
                return FALLBACK  # over the limit: h11 and the 431 answer it (a rare path)
            line = _REQUEST_LINE.match(buf)
            if line is None or line.group(1) in _SPECIAL_METHODS:
                return FALLBACK
            head = _parse_fields(buf, line.end(), end + 2)
            if head is None or head.special or head.hosts != 1:
                return FALLBACK
            if head.chunked:
                if head.length is not None:
                    return FALLBACK  # both framings: h11 decides
                method, target = line.group(1, 2)
                del buf[: end + 4]
                self._keep_alive = not head.close  # (for an error answered mid-body too)
                self._chunked = (method, target, head, _Chunked(), bytearray())
                return self._chunked_request()
            length = head.length or 0
            if length > self.max_body:
                self._keep_alive = not head.close
                return HTTPError(413, f"request body over {self.max_body} bytes")
            method, target = line.group(1, 2)
            start = end + 4
        else:  # the head was parsed before: only the body was missing
            method, target, head, start, length = self._pending
        if len(buf) < start + length:
            if self.eof:
                return FALLBACK
            self._pending = (method, target, head, start, length)
            return NEED_DATA
        self._pending = None
        request = HTTPRequest(
            method=method.decode("ascii"),
            target=target.decode("latin-1"),
            headers=head.headers.copy(),  # (the head may be the memo's)
            body=bytes(buf[start : start + length]),
        )
        del buf[: start + length]
        self._got_request = True
        self._keep_alive = not head.close
        return request

    def _chunked_request(self) -> ServerEvent:
        """The request once its chunked body is read whole, or h11's error (the body's
        limit is checked at each piece, as the h11 path does)."""
        assert self._chunked is not None
        method, target, head, reader, body = self._chunked
        while True:
            try:
                piece = reader.read(self.buf, self.eof, self.max_headers)
            except h11.LocalProtocolError as exc:
                self._chunked, self._broken = None, True
                status = exc.error_status_hint
                return HTTPError(status if status >= 400 else 400, str(exc))
            if piece is None:
                break
            if not isinstance(piece, bytes):
                return NEED_DATA
            body += piece
            if len(body) > self.max_body:
                return HTTPError(413, f"request body over {self.max_body} bytes")
        self._chunked = None
        self._got_request = True
        self._keep_alive = not head.close
        return HTTPRequest(
            method=method.decode("ascii"),
            target=target.decode("latin-1"),
            headers=head.headers.copy(),  # (the head may be the memo's)
            body=bytes(body),
        )

    def send_head(self, status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
        try:
            return self._head(status, headers)
        except h11.LocalProtocolError:
            self._fail_for_good()
            raise

    def _fail_for_good(self) -> None:
        """A send broke the protocol: nothing more can be sent and the connection is
        not reused (h11's ERROR state)."""
        self._response = "error"
        self._keep_alive = False

    def _head(self, status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
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
        if out.hosts:  # h11 writes Host lines first
            lines = sorted(lines, key=lambda pair: pair[0].lower() != b"host")
        return _write_head(b"HTTP/1.1 %d \r\n" % status, lines)

    def whole_head(self, status: int, headers: Mapping[str, str], length: int) -> bytes | None:
        """The head of a whole response of ``length`` bytes, the response then done, when
        its headers are all plain lines (:func:`_plain_line`); None (nothing changed) when
        :meth:`send_head` must write it: the same bytes, with fewer checks per response."""
        if self._response is not None or not self._got_request or not 200 <= status <= 999:
            return None
        if status in (204, 304):
            return None
        parts = [b"HTTP/1.1 %d \r\n" % status]
        plain = _PLAIN_LINES
        for pair in headers.items():
            line = plain.get(pair) or _plain_line(pair)
            if line is None:
                return None
            parts.append(line)
        parts.append(b"content-length: %d\r\n" % length)
        if not self._keep_alive:
            parts.append(b"Connection: close\r\n")
        parts.append(b"\r\n")
        self._response = "done"
        return b"".join(parts)

    def send_body(self, data: bytes) -> bytes:
        if self._response == "chunked":
            return b"%x\r\n%s\r\n" % (len(data), data)
        if self._response != "length" or len(data) > self._remaining:
            self._fail_for_good()
            raise h11.LocalProtocolError("Too much data for declared Content-Length")
        self._remaining -= len(data)
        return data

    def end(self) -> bytes:
        if self._response == "chunked":
            self._response = "done"
            return b"0\r\n\r\n"
        if self._response != "length" or self._remaining:
            self._fail_for_good()
            raise h11.LocalProtocolError("Too little data for declared Content-Length")
        self._response = "done"
        return b""

    def may_answer_error(self) -> bool:
        """Whether an error response can still go out (none was begun); if so, the
        request that could not be read counts as the one being answered."""
        if self._response is not None:
            return False
        self._got_request = True
        return True

    def start_next(self) -> None:
        self._got_request = False
        self._response = None

    def close(self) -> None:
        self._keep_alive = False


class FastClient(FastPath):
    """The client side of a connection while on the fast path."""

    def __init__(self, max_headers: int) -> None:
        super().__init__(max_headers)
        self._sent: tuple[bytes, bytes, list[tuple[bytes, bytes]], bytes | None] | None = None
        self._keep_alive = True
        # "idle", "head" (awaiting it), "body" (Content-Length), "chunked", "done", "error"
        self._state = "idle"
        self._remaining = self._length = 0
        self._chunked: _Chunked | None = None

    @property
    def in_flight(self) -> tuple[bytes, bytes, list[tuple[bytes, bytes]], bytes | None] | None:
        """The request being answered (method, target, headers, body), for h11 to
        replay when it takes over."""
        return self._sent if self._state != "idle" else None

    @property
    def can_reuse(self) -> bool:
        return self._state == "done" and self._keep_alive and not self.ended

    def send_request(
        self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes | None
    ) -> bytes | Fallback:
        if self._state != "idle":
            raise h11.LocalProtocolError("a request is already in progress")
        if not _NAME.fullmatch(method) or not _TARGET.fullmatch(target):
            raise h11.LocalProtocolError(
                f"Illegal request line {method.decode()!r} {target.decode()!r}"
            )
        out = _Out(headers)
        if out.hosts != 1:
            raise h11.LocalProtocolError("Found multiple Host: headers")
        if out.h11_only or out.chunked or method in _SPECIAL_METHODS:
            return FALLBACK  # a request only h11 frames (it is at a message boundary)
        self._sent = (method, target, headers, body)
        self._state = "head"
        self._keep_alive = b"close" not in out.connection
        return _write_head(b"%s %s HTTP/1.1\r\n" % (method, target), out.headers) + (body or b"")

    def _fail(self, reason: str) -> HTTPError:
        """The response is malformed: the connection is done for (h11's ERROR state)."""
        self._state = "error"
        return HTTPError(502, f"malformed HTTP response: {reason}")

    def next_event(self) -> ClientEvent | Fallback:
        buf = self.buf
        if self._state == "chunked":
            return self._next_chunked()
        if self._state == "body":
            if self._remaining == 0:
                self._state = "done"
                return None
            if not buf:
                if self.eof:
                    received = self._length - self._remaining
                    return self._fail(
                        "peer closed connection without sending complete message body "
                        f"(received {received} bytes, expected {self._length})"
                    )
                return NEED_DATA
            chunk = bytes(buf[: self._remaining])
            del buf[: len(chunk)]
            self._remaining -= len(chunk)
            return chunk
        if self._state == "error":
            return HTTPError(
                502, "malformed HTTP response: Can't receive data when peer state is ERROR"
            )
        if self._state != "head":
            if self.eof and not buf:
                return self._connection_ended()
            return NEED_DATA if self._state == "done" else FALLBACK
        end = self._find_head_end()
        if end is None:
            return FALLBACK if self.eof else NEED_DATA
        if isinstance(end, Fallback):
            return end
        line = _STATUS_LINE.match(buf)
        assert self._sent is not None
        if line is None or self._sent[0] in _SPECIAL_METHODS:
            return FALLBACK
        status = int(line.group(1))
        head = _parse_fields(buf, line.end(), end + 2)
        if head is None or head.special or status < 200:
            return FALLBACK
        state, length = "body", 0
        if status in (204, 304):
            pass  # no body, whatever the head says (as in h11)
        elif head.chunked:
            if head.length is not None:
                return FALLBACK  # both framings: h11 decides
            state = "chunked"
        elif head.length is None:
            return FALLBACK  # delimited by the connection's end: h11's job
        else:
            length = head.length
        del buf[: end + 4]
        self._keep_alive = self._keep_alive and not head.close
        self._state, self._remaining, self._length = state, length, length
        if state == "chunked":
            self._chunked = _Chunked()
        return HTTPResponseHead(status, head.headers.copy())  # (the head may be the memo's)

    def _next_chunked(self) -> ClientEvent:
        """The next piece of a chunked body, with h11's errors where h11 gives them."""
        assert self._chunked is not None
        try:
            event = self._chunked.read(self.buf, self.eof, self.max_headers)
        except h11.LocalProtocolError as exc:
            return self._fail(str(exc))
        if event is None:
            self._state, self._chunked = "done", None
        return event

    def start_next(self) -> None:
        self._state = "idle"
        self._sent = None
