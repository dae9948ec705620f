"""JSON text in and out, with limits checked before the parser runs.

This is the one seam for the JSON backend: everything else calls
:func:`loads` and :func:`dumps`.  The stdlib ``json`` always works; when
``orjson`` is installed it is used as a fast path, guarded so that what is
accepted, and every value parsed or written, stays the stdlib's (see
:func:`loads` and :func:`dumps`; the one difference: orjson also writes
``enum.Enum`` and ``uuid.UUID`` values, which the stdlib refuses).  Set
``sansio_mcp._json.orjson = None`` to force the stdlib path.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from itertools import accumulate
from typing import Any

from ._errors import ErrorCode, RemoteProtocolError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "dumps",
    "encode",
    "loads",
    "nesting_depth",
    "stdlib_dumps",
    "stdlib_loads",
    "json_type",
]

DEFAULT_MAX_MESSAGE_SIZE = 8 * 1024 * 1024
DEFAULT_MAX_DEPTH = 64

# A string, or an unterminated one to the end (a parser reads nothing after it).
# Unrolled, so each match is linear: "(?:[^"\\]|\\.)*" failed at every quote of
# an unterminated string after scanning to the end, quadratic in the input.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
# Lone surrogates ("\ud800" in the input JSON) cannot be encoded as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


#: The optional fast backend, or None (stdlib only).
orjson: Any = _optional("orjson")
# Types orjson would write but the stdlib refuses (dataclasses, datetimes) and
# subclasses of str/int/dict/list go to the stdlib instead (orjson raises TypeError).
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    if orjson is not None
    else 0
)
# orjson reads integers beyond 64 bits as floats; the stdlib keeps them exact.  Such an
# integer needs a run of 19 or more digits: the table maps digits to "d" (others to
# " ") so one C-speed search finds a run.
_DIGIT_CLASSES = bytes(ord("d") if 0x30 <= b <= 0x39 else ord(" ") for b in range(256))
_LONG_DIGIT_RUN = b"d" * 19
# Deleting every byte but digits and opening brackets leaves, for most messages, a
# few bytes; fewer than 19 of them means no long digit run and little nesting.
_NOT_DIGIT_OR_OPENING = bytes(b for b in range(256) if not (0x30 <= b <= 0x39 or b in b"[{"))
_FEW = 19


def _fast_path_safe(data: bytes, kept: bytes, max_depth: int) -> bool:
    """Whether orjson may parse ``data``: certainly within the nesting limit,
    with no integer orjson would turn into a float.  ``kept`` is ``data`` with all
    but digits and opening brackets deleted: its brackets are ``data``'s, and a
    digit run of ``data`` is within one of its (deletion only joins runs), so the
    short ``kept`` decides most messages; only a run found there is looked for in
    ``data`` (numbers apart in ``data`` may meet in ``kept``)."""
    brackets_within = len(kept) <= max_depth or kept.count(b"[") + kept.count(b"{") <= max_depth
    return brackets_within and (
        kept.translate(_DIGIT_CLASSES).find(_LONG_DIGIT_RUN) < 0
        or data.translate(_DIGIT_CLASSES).find(_LONG_DIGIT_RUN) < 0
    )


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text (strings ignored)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets)), default=0))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # 1e400 is valid JSON grammar but no float: read as an infinity, it could never be
    # written back (JSON has no infinity), so it is refused where it comes in.
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"the number {text[:40]} is beyond the range of a float")
    return value


# Built once: ``json.loads(text, parse_constant=...)`` would build a new decoder
# (and scanner) on every call, which costs more than parsing a small message.
_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads(data: bytes | bytearray | memoryview | str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Parse one JSON text; raise :class:`RemoteProtocolError` (-32700) on failure.

    The nesting limit is checked before parsing, so a hostile peer cannot use
    deep nesting to exhaust the stack.

    With orjson installed, bytes that are certainly within the nesting limit
    and hold no digit run long enough for an integer beyond 64 bits are parsed
    by orjson (stricter than the stdlib, and equal on everything both accept);
    anything orjson refuses goes to the stdlib, which accepts or words the error.
    """
    if type(data) is not bytes:  # (a type test: no call, for the bytes nearly all are)
        if isinstance(data, str):
            return stdlib_loads(data, max_depth=max_depth)
        data = bytes(data)  # a bytearray or memoryview (or a subclass of bytes)
    fast = orjson
    if fast is not None:
        # The common case is decided by one pass: few digits and opening brackets.
        kept = data.translate(None, _NOT_DIGIT_OR_OPENING)
        few = len(kept)
        if (few < _FEW and few <= max_depth) or _fast_path_safe(data, kept, max_depth):
            try:
                return fast.loads(data)
            except fast.JSONDecodeError:
                pass
    return stdlib_loads(data, max_depth=max_depth)


def stdlib_loads(data: bytes | str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """:func:`loads` with the stdlib ``json`` only."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(
                f"message is not valid UTF-8 (byte {exc.start})", code=ErrorCode.PARSE_ERROR
            ) from None
    else:
        text = data
    # Cheap bound first: fewer opening brackets than the limit cannot nest deeper.
    if text.count("[") + text.count("{") > max_depth and nesting_depth(text) > max_depth:
        raise RemoteProtocolError(
            f"message nests deeper than {max_depth} levels", code=ErrorCode.PARSE_ERROR
        )
    try:
        if text.startswith("\ufeff"):  # exactly what json.loads says about a BOM
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return _decoder.decode(text)
    except (ValueError, RecursionError) as exc:
        raise RemoteProtocolError(f"invalid JSON: {exc}", code=ErrorCode.PARSE_ERROR) from None


def dumps(obj: Any) -> str:
    """Compact JSON with no newlines (safe for NDJSON framing), always UTF-8 encodable.

    With orjson installed it writes the text unless it raises (integers beyond
    64 bits, non-string keys, lone surrogates, subclasses, dataclasses,
    datetimes, ...) or the text holds a ``null`` (orjson writes NaN and
    infinities as ``null`` where the stdlib refuses them): those take the
    stdlib path.  Its floats may be spelled differently (``1e16`` for
    ``1e+16``), never valued differently.  Unlike the stdlib it also writes
    ``enum.Enum`` and ``uuid.UUID`` values.
    """
    return encode(obj).decode("utf-8")


def encode(obj: Any) -> bytes:
    """:func:`dumps` as UTF-8 bytes, what a transport sends (orjson writes bytes
    directly, so the text is never decoded only to be encoded again)."""
    fast = orjson
    if fast is not None:
        try:
            data: bytes = fast.dumps(obj, option=_ORJSON_OPTIONS)
        except TypeError:
            pass
        else:
            if data.find(b"null") < 0:  # find: no buffer export of the needle, unlike `in`
                return data
    return stdlib_dumps(obj).encode("utf-8")


def stdlib_dumps(obj: Any) -> str:
    """:func:`dumps` with the stdlib ``json`` only."""
    text = _encoder.encode(obj)
    if not text.isascii() and _SURROGATE.search(text):
        return _ascii_encoder.encode(obj)  # escapes the lone surrogates as \uXXXX
    return text


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded value (``integer`` for ints,
    ``boolean`` before ``integer`` since Python's bools are ints)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
