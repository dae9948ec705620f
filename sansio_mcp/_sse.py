"""``text/event-stream``: an incremental parser and a serializer (WHATWG HTML,
"Server-sent events"), with limits."""

from __future__ import annotations

import codecs
from collections import deque

import attrs

from ._errors import ErrorCode, RemoteProtocolError
from ._ndjson import NEED_DATA

__all__ = [
    "SSEEvent",
    "SSEParser",
    "format_sse_event",
    "format_sse_comment",
    "format_sse_message",
]

DEFAULT_MAX_LINE = 1024 * 1024
DEFAULT_MAX_EVENT = 8 * 1024 * 1024


@attrs.frozen
class SSEEvent:
    """One dispatched event. ``id`` is the stream's last event id when it was dispatched."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEParser:
    """Feed bytes in any chunks; take events with :meth:`next_event`.

    Comments (keep-alives) are skipped, a leading BOM is dropped, and CR,
    LF and CRLF all end lines, even when a CRLF is split across chunks.
    ``last_event_id`` and ``retry`` follow the stream as the spec says.
    A line or event over its limit raises :class:`RemoteProtocolError`:
    unlike NDJSON, an SSE stream cannot be resynchronised safely.
    """

    def __init__(
        self, *, max_line_size: int = DEFAULT_MAX_LINE, max_event_size: int = DEFAULT_MAX_EVENT
    ) -> None:
        self.max_line_size = max_line_size
        self.max_event_size = max_event_size
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = ""
        self._started = False
        self._eof = False
        self._data: list[str] = []
        self._data_size = 0
        self._event_type = ""
        # The id of the event being read: it counts once the event is complete.
        self._id_buffer: str | None = None
        # How much of self._text is known to hold no line end.
        self._searched = 0
        # Pieces of a line still arriving (they hold no line end), not yet in self._text.
        self._pieces: list[str] = []
        self._pieces_size = 0
        self._events: deque[SSEEvent] = deque()
        #: The id of the last complete event (what a client sends as ``Last-Event-ID``):
        #: an event cut off before its blank line does not count.
        self.last_event_id: str | None = None
        #: The last valid ``retry`` field, in milliseconds.
        self.retry: int | None = None

    def feed(self, data: bytes) -> None:
        """Feed bytes; ``b""`` means the stream ended (a half-built event is dropped)."""
        if not data:
            decoded = self._decoder.decode(b"", final=True)
            self._eof = True
        else:
            decoded = self._decoder.decode(data)
        if not self._started and decoded:
            self._started = True
            if decoded.startswith("\ufeff"):
                decoded = decoded[1:]
        if (
            not self._eof
            and "\n" not in decoded
            and "\r" not in decoded
            and not self._text.endswith("\r")
        ):
            # Still inside a line: keep the piece, join once the line ends (adding
            # every piece to the text would copy a long line once per piece).
            self._pieces.append(decoded)
            self._pieces_size += len(decoded)
            if len(self._text) + self._pieces_size > self.max_line_size:
                raise _over_limit("line", self.max_line_size)
            return
        if self._pieces:
            self._text += "".join(self._pieces)
            self._pieces.clear()
            self._pieces_size = 0
        self._text += decoded
        self._parse()

    def next_event(self) -> SSEEvent | type[NEED_DATA]:
        if self._events:
            return self._events.popleft()
        return NEED_DATA

    def _parse(self) -> None:
        text = self._text
        position = 0
        length = len(text)
        search = self._searched  # a long line arriving in pieces is searched once
        # The next CR and LF at or after ``search`` (-1: none left), each found anew
        # only once passed, so a text with many lines of one ending stays linear.
        cr = text.find("\r", search)
        lf = text.find("\n", search)
        while position < length:
            if 0 <= cr < search:
                cr = text.find("\r", search)
            if 0 <= lf < search:
                lf = text.find("\n", search)
            if cr < 0 and lf < 0:
                break
            end = cr if lf < 0 or 0 <= cr < lf else lf
            if text[end] == "\r" and end + 1 == length and not self._eof:
                break  # a CR at the edge may be the first half of CRLF
            line = text[position:end]
            position = end + 2 if text.startswith("\r\n", end) else end + 1
            search = position
            self._line(line)
        self._text = text[position:]
        # What is left holds no line end, but for a CR at its edge: search on from there.
        self._searched = max(0, len(self._text) - 1)
        if len(self._text) > self.max_line_size:
            raise _over_limit("line", self.max_line_size)

    def _line(self, line: str) -> None:
        if len(line) > self.max_line_size:
            raise _over_limit("line", self.max_line_size)
        if not line:
            self._dispatch()
            return
        if line.startswith(":"):
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._data_size += len(value) + 1
            if self._data_size > self.max_event_size:
                raise _over_limit("event", self.max_event_size)
        elif field == "event":
            self._event_type = value
        elif field == "id":
            if "\0" not in value:
                self._id_buffer = value
        elif field == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value)

    def _dispatch(self) -> None:
        if self._id_buffer is not None:
            self.last_event_id = self._id_buffer  # kept until another id replaces it
        if not self._data:
            self._event_type = ""
            return
        self._events.append(
            SSEEvent(
                data="\n".join(self._data),
                event=self._event_type or "message",
                id=self.last_event_id,
                retry=self.retry,
            )
        )
        self._data = []
        self._data_size = 0
        self._event_type = ""


def _over_limit(what: str, limit: int) -> RemoteProtocolError:
    """The error of a line or event over its limit (the stream cannot go on)."""
    return RemoteProtocolError(
        f"SSE {what} exceeds {limit} characters", code=ErrorCode.INVALID_REQUEST
    )


def format_sse_event(
    data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None
) -> bytes:
    """One event in wire form; multi-line ``data`` becomes several ``data:`` lines."""
    for name, value in (("event", event), ("id", id)):
        if value is not None and ("\n" in value or "\r" in value):
            raise ValueError(f"an SSE {name} must not contain line breaks")
    if id is not None and "\0" in id:
        raise ValueError("an SSE id must not contain NUL")
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if id is not None:
        lines.append(f"id: {id}")
    if retry is not None:
        lines.append(f"retry: {int(retry)}")
    for part in data.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        lines.append(f"data: {part}")
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def format_sse_message(data: bytes, id: str | None = None) -> bytes:
    """A JSON-RPC message's bytes as an SSE ``message`` event: byte for byte what
    :func:`format_sse_event` makes of their text, without decoding them.  ``data`` is
    compact JSON (one line: JSON escapes line breaks in strings); ``id`` is one of
    ours, never the peer's."""
    if id is None:
        return b"event: message\ndata: " + data + b"\n\n"
    return b"event: message\nid: " + id.encode("utf-8") + b"\ndata: " + data + b"\n\n"


def format_sse_comment(text: str = "") -> bytes:
    """A comment line (a keep-alive that clients ignore)."""
    return "".join(f":{part}\n" for part in text.split("\n")).encode("utf-8") + b"\n"
