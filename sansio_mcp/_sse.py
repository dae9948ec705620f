"""``text/event-stream``: an incremental parser and a serializer (WHATWG HTML,
"Server-sent events"), with limits."""

from __future__ import annotations

import codecs
from collections import deque

import attrs

from ._errors import ErrorCode, RemoteProtocolError
from ._ndjson import NEED_DATA

__all__ = ["SSEEvent", "SSEParser", "format_sse_event", "format_sse_comment"]

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
        self._events: deque[SSEEvent] = deque()
        #: The last ``id`` field seen (what a client sends as ``Last-Event-ID``).
        self.last_event_id: str | None = None
        #: The last valid ``retry`` field, in milliseconds.
        self.retry: int | None = None

    def feed(self, data: bytes) -> None:
        """Feed bytes; ``b""`` means the stream ended (a half-built event is dropped)."""
        if not data:
            self._text += self._decoder.decode(b"", final=True)
            self._eof = True
        else:
            self._text += self._decoder.decode(data)
        if not self._started and self._text:
            self._started = True
            if self._text.startswith("\ufeff"):
                self._text = self._text[1:]
        self._parse()

    def next_event(self) -> SSEEvent | type[NEED_DATA]:
        if self._events:
            return self._events.popleft()
        return NEED_DATA

    def _parse(self) -> None:
        text = self._text
        position = 0
        length = len(text)
        while position < length:
            cr = text.find("\r", position)
            lf = text.find("\n", position)
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                break
            end = min(ends)
            if text[end] == "\r" and end + 1 == length and not self._eof:
                break  # a CR at the edge may be the first half of CRLF
            line = text[position:end]
            position = end + 2 if text.startswith("\r\n", end) else end + 1
            self._line(line)
        self._text = text[position:]
        if len(self._text) > self.max_line_size:
            raise RemoteProtocolError(
                f"SSE line exceeds {self.max_line_size} characters",
                code=ErrorCode.INVALID_REQUEST,
            )

    def _line(self, line: str) -> None:
        if len(line) > self.max_line_size:
            raise RemoteProtocolError(
                f"SSE line exceeds {self.max_line_size} characters",
                code=ErrorCode.INVALID_REQUEST,
            )
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
                raise RemoteProtocolError(
                    f"SSE event exceeds {self.max_event_size} characters",
                    code=ErrorCode.INVALID_REQUEST,
                )
        elif field == "event":
            self._event_type = value
        elif field == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif field == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value)

    def _dispatch(self) -> None:
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


def format_sse_comment(text: str = "") -> bytes:
    """A comment line (a keep-alive that clients ignore)."""
    return "".join(f":{part}\n" for part in text.split("\n")).encode("utf-8") + b"\n"
