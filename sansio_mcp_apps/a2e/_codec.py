"""The A2E wire codec: one compact JSON object per message (NDJSON on byte
streams, one text frame on WebSocket: :class:`A2EWebSocket`).

Decoding never raises.  What cannot become a message becomes a
:class:`DecodeError` carrying the A2E error code that describes it
(``parse_error``, ``invalid_message``, ``version_mismatch``,
``schema_violation``), which :meth:`DecodeError.to_error` turns into the
``error`` message to send back.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from sansio_mcp import NdjsonFramer, RemoteProtocolError, jsontext
from sansio_mcp.websocket import WebSocketConnection

from ._fields import MAX_DEPTH, FieldProblem, check_kind, copy_json, wire_fields
from ._messages import (
    A2E_VERSION,
    MESSAGE_TYPES,
    A2EError,
    A2EMessage,
)
from ._models import A2EErrorCode

__all__ = [
    "A2EFramer",
    "A2EWebSocket",
    "DecodeError",
    "adopt",
    "decode",
    "decode_text",
    "encode",
    "encode_line",
    "to_obj",
]

_ENVELOPE = ("type", "id", "version", "ts")


@attrs.frozen
class DecodeError:
    """Why an input could not become a message."""

    code: str
    message: str
    detail: dict[str, Any] = attrs.field(factory=dict)
    #: The offending message's ``id``, when it had a usable one.
    req_id: str = ""

    def to_error(self, *, id: str, ts: float) -> A2EError:
        return A2EError(
            id=id,
            ts=ts,
            req_id=self.req_id,
            code=self.code,
            message=self.message,
            detail=dict(self.detail),
            retryable=False,
        )


def to_obj(message: A2EMessage) -> dict[str, Any]:
    """The JSON object of ``message``: envelope first, extra keys last."""
    body = message.to_dict()
    out = {key: body.pop(key) for key in _ENVELOPE}
    out.update(body)
    return out


def encode(message: A2EMessage) -> str:
    """Compact JSON text with no newline."""
    return jsontext.dumps(to_obj(message))


def encode_line(message: A2EMessage) -> bytes:
    """One NDJSON line."""
    return NdjsonFramer.frame(encode(message))


def decode_text(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> A2EMessage | DecodeError:
    """Decode one JSON text."""
    try:
        obj = jsontext.loads(text, max_depth=max_depth)
    except RemoteProtocolError as exc:
        return DecodeError(A2EErrorCode.PARSE_ERROR, exc.message)
    return decode(obj)


def decode(obj: Any) -> A2EMessage | DecodeError:
    """Decode one JSON value into its message class, strictly.

    * not an object, no string ``type``, no non-empty string ``id``: ``invalid_message``
    * an unknown ``type``: ``invalid_message`` (detail ``{"type": ...}``)
    * a ``version`` other than ``"1.0"``: ``version_mismatch``
    * a field of the wrong type (or a required one missing): ``schema_violation``
      (detail ``{"field", "expected", "got"}``)

    Missing optional fields take the spec's defaults; unknown keys are kept
    in ``extra``.  ``version`` and ``ts`` may be left out (tolerant reader).
    """
    if not isinstance(obj, dict):
        return DecodeError(
            A2EErrorCode.INVALID_MESSAGE,
            "an A2E message must be a JSON object",
            {"got": type(obj).__name__},
        )
    raw_id = obj.get("id")
    req_id = raw_id if isinstance(raw_id, str) else ""
    type_name = obj.get("type")
    if not isinstance(type_name, str) or not type_name:
        return DecodeError(
            A2EErrorCode.INVALID_MESSAGE, "the message has no string 'type'", req_id=req_id
        )
    if not isinstance(raw_id, str) or not raw_id:
        return DecodeError(
            A2EErrorCode.INVALID_MESSAGE,
            "the message has no non-empty string 'id'",
            {"type": type_name},
        )
    version = obj.get("version", A2E_VERSION)
    if version != A2E_VERSION:
        return DecodeError(
            A2EErrorCode.VERSION_MISMATCH,
            f"unsupported A2E version {version!r}: this host speaks {A2E_VERSION!r}",
            {"supported": [A2E_VERSION], "got": version},
            req_id=req_id,
        )
    cls = MESSAGE_TYPES.get(type_name)
    if cls is None:
        return DecodeError(
            A2EErrorCode.INVALID_MESSAGE,
            f"unknown message type {type_name!r}",
            {"type": type_name},
            req_id=req_id,
        )
    values: dict[str, Any] = {}
    try:
        for name, kind in wire_fields(cls):
            if name in obj:
                values[name] = check_kind(kind, name, obj[name])
            elif name in cls.REQUIRED:
                raise FieldProblem(name, "present", None, message=f"{name!r} is required")
    except FieldProblem as problem:
        return _schema_violation(type_name, problem, req_id)
    extra = {k: v for k, v in obj.items() if k not in values and k not in _known(cls)}
    return cls(**values, extra=extra)


def _schema_violation(type_name: str, problem: FieldProblem, req_id: str) -> DecodeError:
    return DecodeError(
        A2EErrorCode.SCHEMA_VIOLATION,
        f"{type_name}: {problem}",
        {"type": type_name, **problem.detail},
        req_id=req_id,
    )


_KNOWN: dict[type, frozenset[str]] = {}


def _known(cls: type[A2EMessage]) -> frozenset[str]:
    known = _KNOWN.get(cls)
    if known is None:
        known = _KNOWN[cls] = frozenset(name for name, _ in wire_fields(cls))
    return known


_EXACT: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}
_PLANS: dict[type, tuple[tuple[str, str, type | None], ...]] = {}


def _plan(cls: type[A2EMessage]) -> tuple[tuple[str, str, type | None], ...]:
    """(name, kind, the scalar type a value of that kind has) per field of ``cls``."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple((n, k, _EXACT.get(k)) for n, k in wire_fields(cls))
    return plan


def adopt(message: A2EMessage, *, max_depth: int = MAX_DEPTH) -> A2EMessage | DecodeError:
    """A message object handed over in process, as the receiving side must see it:
    checked by the rules of :func:`decode` (with the same errors) and copied, so
    it shares no container with what the sender holds.

    A value that could not be encoded raises what :func:`encode` would raise
    (``TypeError``, ``ValueError``): over a byte stream the sender fails the same way.
    """
    type_name = message.type
    cls = MESSAGE_TYPES.get(type_name) if type(type_name) is str else None
    raw_id = message.id
    if (
        cls is not None
        and type(message) is cls
        and type(raw_id) is str
        and raw_id
        and message.version == A2E_VERSION
    ):
        values: dict[str, Any] = {}
        try:
            for name, kind, exact in _plan(cls):
                value: Any = getattr(message, name)
                if type(value) is exact and (exact is not float or math.isfinite(value)):  # type: ignore[arg-type]
                    values[name] = value  # immutable and already of its kind: nothing to copy
                else:
                    values[name] = check_kind(kind, name, copy_json(value, 2, max_depth))
            extra = message.extra
            if extra:
                known = _known(cls)
                # The extra dict stands for the message object itself: its values at depth 2.
                extra = {k: v for k, v in copy_json(extra, 1, max_depth).items() if k not in known}
            return cls(**values, extra=extra if extra else {})
        except (FieldProblem, TypeError, ValueError):
            pass  # TooDeep is a ValueError
    # Anything unusual (a subclass, the bare envelope, a bad envelope, a bad field) is
    # read from its encoding, so errors and their order are exactly the wire's.
    return decode_text(encode(message), max_depth=max_depth)


class A2EFramer:
    """NDJSON byte stream in, messages (or decode errors) out."""

    def __init__(self, max_message_size: int = jsontext.DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self._framer = NdjsonFramer(max_message_size)

    @property
    def eof(self) -> bool:
        return self._framer.eof

    def feed(self, data: bytes | bytearray) -> list[A2EMessage | DecodeError]:
        """Feed bytes (``b""`` at end of input); everything complete so far."""
        return [
            DecodeError(A2EErrorCode.INVALID_MESSAGE, line.message)
            if isinstance(line, RemoteProtocolError)
            else decode_text(line)
            for line in self._framer.lines(data)
        ]


class A2EWebSocket(WebSocketConnection):
    """A2E over WebSocket (the core's one WebSocket machine), path ``/a2e`` by
    default.  A server accepts the subprotocol ``a2e`` when offered but does
    not require it: agents written before it was named still connect."""

    subprotocol = "a2e"
    subprotocol_required = False
