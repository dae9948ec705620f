"""RESP, the Redis protocol, sans-IO: commands out, replies in, whatever the chunking.

A small machine of our own rather than hiredis's ``Reader``: pure Python (no C
build, nothing more to install), fed bytes like every other parser here, bounded
by options of its own, and one reply comes out the same however the bytes were
split.  RESP2 is what we speak (we send no ``HELLO 3``); the RESP3 types are read
too, so that a server speaking them does not break the stream.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from ._errors import LocalProtocolError, RemoteProtocolError
from ._ndjson import NEED_DATA

__all__ = [
    "DEFAULT_MAX_ARRAY_LENGTH",
    "DEFAULT_MAX_BULK_LENGTH",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_LINE_LENGTH",
    "RESPParser",
    "RedisError",
    "encode_command",
]

#: Bytes of one bulk string (Redis's own limit is 512 MiB; a store's values are small).
DEFAULT_MAX_BULK_LENGTH = 64 * 1024 * 1024
#: Elements of one array (or set, push), or pairs of one map.
DEFAULT_MAX_ARRAY_LENGTH = 1024 * 1024
#: Arrays within arrays.
DEFAULT_MAX_DEPTH = 32
#: Bytes of one line: a simple string, an error, a number, a length.
DEFAULT_MAX_LINE_LENGTH = 64 * 1024


@attrs.frozen
class RedisError:
    """An error reply (``-ERR ...``, or RESP3's bulk error): a value, not raised here,
    so that a pipeline's other replies are still read; the client raises."""

    message: str

    @property
    def kind(self) -> str:
        """The first word, Redis's error class (``ERR``, ``WRONGTYPE``, ``NOAUTH``)."""
        return self.message.split(" ", 1)[0]


def _encode_arg(arg: str | bytes | int | float) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, str):
        return arg.encode()
    if isinstance(arg, bool):
        raise LocalProtocolError("a Redis argument cannot be a bool: send 1 or 0")
    if isinstance(arg, int):
        return str(arg).encode()
    if isinstance(arg, float):
        if math.isnan(arg):
            raise LocalProtocolError("a Redis argument cannot be NaN")
        if math.isinf(arg):
            return b"+inf" if arg > 0 else b"-inf"
        return repr(arg).encode()
    raise LocalProtocolError(
        f"a Redis argument must be str, bytes, int or float, not {type(arg).__name__}"
    )


def encode_command(*args: str | bytes | int | float) -> bytes:
    """One command as RESP: an array of bulk strings (``str`` as UTF-8, numbers in
    decimal).  :class:`LocalProtocolError` for no arguments or one of another type."""
    if not args:
        raise LocalProtocolError("a Redis command needs at least its name")
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = _encode_arg(arg)
        parts.append(b"$%d\r\n" % len(data))
        parts.append(data)
        parts.append(b"\r\n")
    return b"".join(parts)


# What an open aggregate becomes once its elements are in.
_ARRAY, _MAP, _SET, _PUSH, _ATTRIBUTE = range(5)
_AGGREGATES = {b"*": _ARRAY, b"%": _MAP, b"~": _SET, b">": _PUSH, b"|": _ATTRIBUTE}
_DIGITS = frozenset(b"0123456789")


@attrs.define
class _Open:
    kind: int
    wanted: int  # elements still to come (a map's pairs count twice)
    items: list[Any]


class RESPParser:
    """Replies from a byte stream: :meth:`receive_data` bytes as they arrive, then
    :meth:`next_reply` until it returns :data:`NEED_DATA`.

    A reply is ``str`` (a simple string, ``OK``), ``bytes`` (a bulk string), ``int``,
    None (nil), ``list`` (an array; a RESP3 set or push too), :class:`RedisError`,
    and from RESP3 ``bool``, ``float`` and ``dict``; RESP3 attributes are skipped.
    Anything else, or a reply past a bound, raises :class:`RemoteProtocolError`, and
    so does every later call: the stream cannot be resynchronised, so the caller
    closes the connection.  The end of the stream is the caller's to notice.
    """

    def __init__(
        self,
        *,
        max_bulk_length: int = DEFAULT_MAX_BULK_LENGTH,
        max_array_length: int = DEFAULT_MAX_ARRAY_LENGTH,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_line_length: int = DEFAULT_MAX_LINE_LENGTH,
    ) -> None:
        self.max_bulk_length = max_bulk_length
        self.max_array_length = max_array_length
        self.max_depth = max_depth
        self.max_line_length = max_line_length
        self._buffer = bytearray()
        self._pos = 0
        self._open: list[_Open] = []
        self._broken: RemoteProtocolError | None = None

    def receive_data(self, data: bytes) -> None:
        """Bytes received from the server."""
        if self._pos:
            del self._buffer[: self._pos]
            self._pos = 0
        self._buffer += data

    def next_reply(self) -> Any:
        """The next whole reply, or :data:`NEED_DATA`."""
        if self._broken is not None:
            raise self._broken
        try:
            return self._next()
        except RemoteProtocolError as error:
            self._broken = error
            raise

    def _fail(self, message: str) -> RemoteProtocolError:
        return RemoteProtocolError(f"malformed Redis reply: {message}")

    def _line(self) -> bytes | None:
        end = self._buffer.find(b"\r\n", self._pos, self._pos + self.max_line_length + 2)
        if end < 0:
            if len(self._buffer) - self._pos > self.max_line_length + 1:
                raise self._fail(
                    f"a line longer than {self.max_line_length} bytes (max_line_length)"
                )
            return None
        line = bytes(self._buffer[self._pos : end])
        self._pos = end + 2
        return line

    def _integer(self, text: bytes) -> int:
        digits = text[1:] if text[:1] in (b"-", b"+") else text
        if not digits or not _DIGITS.issuperset(digits):
            raise self._fail(f"{text[:40]!r} is not an integer")
        try:
            return int(text)
        except ValueError:  # more digits than Python converts (sys.int_info)
            raise self._fail(f"an integer of {len(digits)} digits") from None

    def _next(self) -> Any:
        while True:
            start = self._pos
            line = self._line()
            if line is None:
                return NEED_DATA
            if not line:
                raise self._fail("an empty line where a type byte belongs")
            kind, body = line[:1], line[1:]
            value: Any
            if kind in _AGGREGATES:
                count = self._integer(body)
                if count < 0:
                    if count != -1 or kind != b"*":
                        raise self._fail(f"an aggregate of length {count}")
                    value = None
                elif count > self.max_array_length:
                    raise self._fail(
                        f"an aggregate of {count} elements exceeds {self.max_array_length} "
                        "(max_array_length)"
                    )
                elif count > 0 or _AGGREGATES[kind] == _ATTRIBUTE:
                    if len(self._open) >= self.max_depth:
                        raise self._fail(
                            f"aggregates nested deeper than {self.max_depth} (max_depth)"
                        )
                    wanted = count * 2 if kind in b"%|" else count
                    self._open.append(_Open(_AGGREGATES[kind], wanted, []))
                    if wanted:
                        continue
                    value = self._close()  # an empty attribute
                    if value is _SKIP:
                        continue
                else:
                    value = {} if kind == b"%" else []
            elif kind in b"$=!":
                value = self._bulk(kind, body, start)
                if value is NEED_DATA:
                    return NEED_DATA
            elif kind == b"+":
                value = body.decode("utf-8", "replace")
            elif kind == b"-":
                value = RedisError(body.decode("utf-8", "replace"))
            elif kind in b":(":
                value = self._integer(body)
            elif kind == b"_":
                if body:
                    raise self._fail("a RESP3 null with a body")
                value = None
            elif kind == b"#":
                if body not in (b"t", b"f"):
                    raise self._fail(f"{body[:40]!r} is not a RESP3 boolean")
                value = body == b"t"
            elif kind == b",":
                try:
                    value = float(body.decode("ascii"))
                except (UnicodeDecodeError, ValueError):
                    raise self._fail(f"{body[:40]!r} is not a RESP3 double") from None
            else:
                raise self._fail(f"unknown type byte {kind!r}")
            done = self._add(value)
            if done is not _SKIP:
                return done

    def _bulk(self, kind: bytes, body: bytes, start: int) -> Any:
        length = self._integer(body)
        if length < 0:
            if length != -1 or kind != b"$":
                raise self._fail(f"a bulk string of length {length}")
            return None
        if length > self.max_bulk_length:
            raise self._fail(
                f"a bulk string of {length} bytes exceeds {self.max_bulk_length} (max_bulk_length)"
            )
        end = self._pos + length
        if len(self._buffer) < end + 2:
            self._pos = start  # the header is read again with the rest
            return NEED_DATA
        if self._buffer[end : end + 2] != b"\r\n":
            raise self._fail("a bulk string not followed by CRLF")
        data = bytes(self._buffer[self._pos : end])
        self._pos = end + 2
        if kind == b"!":
            return RedisError(data.decode("utf-8", "replace"))
        if kind == b"=":
            if len(data) < 4 or data[3:4] != b":":
                raise self._fail("a RESP3 verbatim string without its format")
            return data[4:]
        return data

    def _add(self, value: Any) -> Any:
        """Put a finished value in the open aggregate; the whole reply once complete,
        else _SKIP."""
        while self._open:
            top = self._open[-1]
            top.items.append(value)
            top.wanted -= 1
            if top.wanted:
                return _SKIP
            value = self._close()
            if value is _SKIP:
                return _SKIP
        return value

    def _close(self) -> Any:
        top = self._open.pop()
        if top.kind == _ATTRIBUTE:
            return _SKIP  # metadata about the reply that follows, which we do not use
        if top.kind == _MAP:
            pairs = iter(top.items)
            try:
                return {key: val for key, val in zip(pairs, pairs, strict=True)}
            except TypeError:
                raise self._fail("a RESP3 map with an aggregate as a key") from None
        return top.items


_SKIP: Any = object()
