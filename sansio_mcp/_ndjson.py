"""Newline-delimited JSON framing (the stdio transport, and any byte stream)."""

from __future__ import annotations

from ._errors import ErrorCode, RemoteProtocolError
from ._json import DEFAULT_MAX_MESSAGE_SIZE
from ._util import Sentinel

__all__ = ["NEED_DATA", "NdjsonFramer"]


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
        if type(data) is bytes and data[-1:] == b"\n" and not self._buffer and not self._discarding:
            # The usual case: whole lines in one chunk, nothing held from before.
            if self._eof:
                raise RuntimeError("data fed after end of input")
            out: list[bytes | RemoteProtocolError] = []
            for line in data.split(b"\n")[:-1]:
                if self._oversized(line):
                    out.append(self._too_long())
                elif line := self._strip(line):
                    out.append(line)
            return out
        self.feed(data)
        found: list[bytes | RemoteProtocolError] = []
        while (line_or_error := self.next_line()) is not NEED_DATA:
            found.append(line_or_error)  # type: ignore[arg-type]
        return found

    def next_line(self) -> bytes | type[NEED_DATA] | RemoteProtocolError:
        """The next non-empty line (without its line end), an error, or NEED_DATA."""
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline < 0:
                if len(self._buffer) > self.max_line_size + 1:
                    # Drop what we hold; keep dropping until the line ends.
                    self._buffer.clear()
                    self._scanned = 0
                    if not self._discarding:
                        self._discarding = True
                        return self._too_long()
                    continue
                self._scanned = len(self._buffer)
                if self._eof and self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    self._scanned = 0
                    if self._discarding:
                        self._discarding = False
                        continue
                    if self._oversized(line):
                        return self._too_long()
                    return self._strip(line) or NEED_DATA
                return NEED_DATA
            line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            self._scanned = 0
            if self._discarding:
                self._discarding = False
                continue
            if self._oversized(line):
                return self._too_long()
            line = self._strip(line)
            if line:
                return line

    def _oversized(self, line: bytes) -> bool:
        # The limit is on the message; a CRLF line's "\r" does not count.
        return len(line) - line.endswith(b"\r") > self.max_line_size

    @staticmethod
    def _strip(line: bytes) -> bytes:
        if line.endswith(b"\r"):
            line = line[:-1]
        return line if line and not line.isspace() else b""

    def _too_long(self) -> RemoteProtocolError:
        error = RemoteProtocolError(
            f"message exceeds the {self.max_line_size}-byte limit",
            code=ErrorCode.INVALID_REQUEST,
        )
        error.answer = True
        return error

    @staticmethod
    def frame(text: str) -> bytes:
        """One message as an NDJSON line."""
        return text.encode("utf-8") + b"\n"
