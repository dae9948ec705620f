"""Newline-delimited JSON framing (the stdio transport, and any byte stream)."""

from __future__ import annotations

import re

from . import _json
from ._errors import ErrorCode, OversizedMessage, RemoteProtocolError
from ._json import DEFAULT_MAX_MESSAGE_SIZE
from ._jsonrpc import RequestId, is_request_id
from ._util import Sentinel

__all__ = ["HEAD_KEPT", "NEED_DATA", "NdjsonFramer", "message_identity", "oversized_message"]

#: Bytes of an oversized message kept to tell whose it is (its id comes early).
HEAD_KEPT = 512
# A string (unrolled, so linear even unterminated: see _json._STRING), or a bracket.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')
_MEMBER_VALUE = re.compile(rb'\s*:\s*(-?\d+(?![\d.eE])|"[^"\\]*(?:\\.[^"\\]*)*")?')


def message_identity(text: bytes) -> tuple[RequestId | None, bool]:
    """Of a message that cannot be read whole (not JSON, too deep, too large, cut
    short): its ``id``, as far as ``text`` shows one among its top-level members
    (never one nested in its params or result), and whether it names a ``method``
    (a request, not an answer).  One pass, linear in ``text``."""
    depth = 0
    request_id: RequestId | None = None
    found_id = has_method = False
    for token in _TOKEN.finditer(text):
        first = text[token.start()]
        if first != 0x22:  # a bracket
            depth += 1 if first in b"[{" else -1
            continue
        if depth != 1 or token.group() not in (b'"id"', b'"method"'):
            continue
        member = _MEMBER_VALUE.match(text, token.end())
        if member is None:
            continue  # no colon after it: a string value, not a member's name
        if token.group() == b'"method"':
            has_method = True
        elif not found_id and member.group(1) is not None:
            found_id = True
            try:
                value = _json.loads(member.group(1))
            except RemoteProtocolError:
                continue
            request_id = value if is_request_id(value) else None
    return request_id, has_method


def oversized_message(head: bytes, size: int, limit: int) -> OversizedMessage:
    """The error for a message over ``limit`` bytes, of which ``head`` was kept.

    Its id, when the head shows one, goes with it: a request is answered under its own
    id, and an answer to one of ours ends that request at once (see ``fail_malformed``)
    instead of leaving it to time out.
    """
    error = OversizedMessage(
        f"a message of {size} bytes exceeds the {limit}-byte limit (max_message_size)",
        code=ErrorCode.INVALID_REQUEST,
    )
    error.request_id, is_request = message_identity(head)
    # A request (it names a method) is answered; an answer is not answered back.
    error.answer = error.request_id is None or is_request
    return error


class NEED_DATA(Sentinel, metaclass=Sentinel):
    """Returned by ``next_*`` methods when more bytes are needed."""


class NdjsonFramer:
    """Splits a byte stream into lines, whatever the chunking.

    ``feed(b"")`` signals end of input; a last line with no newline is still
    delivered.  A line longer than ``max_line_size`` is discarded up to its
    newline and reported once as a :class:`RemoteProtocolError`, so the
    stream stays usable and memory stays bounded.  CRLF is accepted.
    """

    def __init__(self, max_line_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_line_size = max_line_size
        self._buffer = bytearray()
        self._scanned = 0
        self._discarding = False
        # Of the oversized line being dropped: its first bytes, its length so far, and
        # whether its last byte so far is a "\r" (a CRLF line end does not count).
        self._dropped_head = b""
        self._dropped = 0
        self._dropped_cr = False
        self._eof = False

    @property
    def eof(self) -> bool:
        return self._eof

    @property
    def buffered(self) -> int:
        """Bytes held that do not yet form a line."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray) -> None:
        if self._eof:
            if data:
                raise RuntimeError("data fed after end of input")
            return
        if not data:
            self._eof = True
            return
        self._buffer += data

    def lines(self, data: bytes | bytearray) -> list[bytes | RemoteProtocolError]:
        """Feed ``data`` and take every line (or error) now complete, as
        :meth:`next_line` would give them one by one."""
        if (
            type(data) is bytes
            and data.find(b"\n") == len(data) - 1
            and data
            and not self._buffer
            and not self._discarding
            and not self._eof
        ):
            # The commonest case, one whole line and nothing held from before (a peer
            # that waits for each answer): taken as it is when it is a message; an
            # oversized, empty or blank line goes the way below.
            line = data[:-1]
            if line[-1:] == b"\r":
                line = line[:-1]
            if 0 < len(line) <= self.max_line_size and not line.isspace():
                return [line]
        if type(data) is bytes and data[-1:] == b"\n" and not self._buffer and not self._discarding:
            # The usual case: whole lines in one chunk, nothing held from before.
            if self._eof:
                raise RuntimeError("data fed after end of input")
            out: list[bytes | RemoteProtocolError] = []
            limit = self.max_line_size
            # _oversized, _size and _strip, inlined: this runs for every line of stdio.
            for raw in data[:-1].split(b"\n"):  # the last line end taken off first
                cr = raw[-1:] == b"\r"  # a one-byte slice: cheaper than endswith
                size = len(raw) - cr
                if size > limit:
                    out.append(self._too_long(raw, size))
                elif size:
                    line = raw[:-1] if cr else raw
                    if not line.isspace():
                        out.append(line)
            return out
        self.feed(data)
        found: list[bytes | RemoteProtocolError] = []
        while (line_or_error := self.next_line()) is not NEED_DATA:
            found.append(line_or_error)  # type: ignore[arg-type]
        return found

    def next_line(self) -> bytes | type[NEED_DATA] | RemoteProtocolError:
        """The next non-empty line (without its line end), an error, or NEED_DATA.

        An oversized line is reported once it has ended (its size known), whatever the
        chunking; its bytes are dropped as they come, so memory stays bounded.
        """
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline < 0:
                if self._discarding or len(self._buffer) > self.max_line_size + 1:
                    self._drop(self._buffer)
                    self._buffer.clear()
                    self._scanned = 0
                    if self._eof and self._discarding:
                        return self._end_dropped()
                    return NEED_DATA
                self._scanned = len(self._buffer)
                if self._eof and self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    self._scanned = 0
                    if self._oversized(line):
                        return self._too_long(line, self._size(line))
                    return self._strip(line) or NEED_DATA
                return NEED_DATA
            line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            self._scanned = 0
            if self._discarding:
                self._drop(line)
                return self._end_dropped()
            if self._oversized(line):
                return self._too_long(line, self._size(line))
            line = self._strip(line)
            if line:
                return line

    def _drop(self, data: bytes | bytearray) -> None:
        if not data:
            return
        if not self._discarding:
            self._discarding = True
            self._dropped_head = bytes(data[:HEAD_KEPT])
            self._dropped = 0
        self._dropped += len(data)
        self._dropped_cr = data[-1:] == b"\r"

    def _end_dropped(self) -> RemoteProtocolError:
        self._discarding = False
        size = self._dropped - self._dropped_cr
        return self._too_long(self._dropped_head, size)

    @staticmethod
    def _size(line: bytes) -> int:
        return len(line) - line.endswith(b"\r")

    def _oversized(self, line: bytes) -> bool:
        # The limit is on the message; a CRLF line's "\r" does not count.
        return len(line) - line.endswith(b"\r") > self.max_line_size

    @staticmethod
    def _strip(line: bytes) -> bytes:
        if line.endswith(b"\r"):
            line = line[:-1]
        return line if line and not line.isspace() else b""

    def _too_long(self, line: bytes, size: int) -> RemoteProtocolError:
        return oversized_message(line[:HEAD_KEPT], size, self.max_line_size)

    @staticmethod
    def frame(text: str) -> bytes:
        """One message as an NDJSON line."""
        return text.encode("utf-8") + b"\n"
