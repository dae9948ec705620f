"""JSON text in and out, with limits checked before the parser runs.

This is the one seam for the JSON backend: everything else calls
:func:`loads` and :func:`dumps`.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from ._errors import ErrorCode, RemoteProtocolError

__all__ = ["DEFAULT_MAX_DEPTH", "DEFAULT_MAX_MESSAGE_SIZE", "dumps", "loads", "nesting_depth"]

DEFAULT_MAX_MESSAGE_SIZE = 8 * 1024 * 1024
DEFAULT_MAX_DEPTH = 64

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
# Lone surrogates ("\ud800" in the input JSON) cannot be encoded as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text (strings ignored)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    return max(0, *accumulate(map(_STEP.__getitem__, brackets)))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(data: bytes | str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Parse one JSON text; raise :class:`RemoteProtocolError` (-32700) on failure.

    The nesting limit is checked before parsing, so a hostile peer cannot use
    deep nesting to exhaust the stack.
    """
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
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise RemoteProtocolError(f"invalid JSON: {exc}", code=ErrorCode.PARSE_ERROR) from None


def dumps(obj: Any) -> str:
    """Compact JSON with no newlines (safe for NDJSON framing), always UTF-8 encodable."""
    text = _encoder.encode(obj)
    if _SURROGATE.search(text):
        return _ascii_encoder.encode(obj)  # escapes the lone surrogates as \uXXXX
    return text
