"""Typed fields for the A2E models and messages, and the strict checks the
codec applies to them.

Every field carries a *kind* in its attrs metadata (``str``, ``float``,
``int``, ``bool``, ``dict``, ``list[dict]``, ``list[str]``, ``any``); the
codec checks a decoded value against it, so a wrong type is reported with
the field's name instead of surfacing later as an exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar, cast

import attrs

from sansio_mcp import RemoteProtocolError, jsontext
from sansio_mcp.jsontext import json_type

__all__ = [
    "MAX_DEPTH",
    "FieldProblem",
    "Model",
    "TooDeep",
    "any_field",
    "bool_field",
    "check_kind",
    "copy_json",
    "dict_field",
    "dicts_field",
    "finite_float",
    "float_field",
    "int_field",
    "str_field",
    "strs_field",
    "wire_fields",
]

_KIND = "a2e_kind"

T = TypeVar("T", bound="Model")


def str_field(default: str = "") -> Any:
    return attrs.field(default=default, metadata={_KIND: "str"})


def float_field(default: float = 0.0) -> Any:
    return attrs.field(default=default, metadata={_KIND: "float"})


def int_field(default: int = 0) -> Any:
    return attrs.field(default=default, metadata={_KIND: "int"})


def bool_field(default: bool = False) -> Any:
    return attrs.field(default=default, metadata={_KIND: "bool"})


def dict_field() -> Any:
    return attrs.field(factory=dict, metadata={_KIND: "dict"})


def dicts_field() -> Any:
    return attrs.field(factory=list, metadata={_KIND: "list[dict]"})


def strs_field() -> Any:
    return attrs.field(factory=list, metadata={_KIND: "list[str]"})


def any_field(default: Any = None) -> Any:
    return attrs.field(default=default, metadata={_KIND: "any"})


class FieldProblem(ValueError):
    """A field of a decoded object has the wrong type or value."""

    def __init__(self, field: str, expected: str, got: Any, *, message: str = "") -> None:
        self.field = field
        self.expected = expected
        self.got = json_type(got)
        super().__init__(message or f"field {field!r} must be {expected}, not {self.got}")

    @property
    def detail(self) -> dict[str, Any]:
        return {"field": self.field, "expected": self.expected, "got": self.got}


_MAX_INT = 2**53

#: How deep an A2E message may nest: an MCP message's limit plus room for the A2E
#: envelope around the MCP values it carries, so that whatever a server may send
#: over MCP the bridge can pass on (a result at MCP's limit sits one level deeper).
MAX_DEPTH = jsontext.DEFAULT_MAX_DEPTH + 4

_EXPECTED = {
    "str": "a string",
    "float": "a number",
    "int": "an integer (at most 2^53 in size)",
    "bool": "a boolean",
    "dict": "an object",
    "list[dict]": "an array of objects",
    "list[str]": "an array of strings",
}


def finite_float(value: Any) -> float | None:
    """``value`` as a finite float, or None (not a number, a bool, NaN, an infinity,
    or an integer beyond any float)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def check_kind(kind: str, name: str, value: Any) -> Any:
    """``value`` as the field's kind (an integral float becomes an int), or raise
    :class:`FieldProblem`."""
    ok: bool
    if kind == "any":
        return value
    if kind == "str":
        ok = isinstance(value, str)
    elif kind == "float":
        number = finite_float(value)
        if number is not None:
            return number
        ok = False
    elif kind == "int":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        # Within what every JSON reader keeps exact (2^53): a timeout of 10^400
        # seconds is a mistake, and beyond floats it broke the deadline arithmetic.
        ok = isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_INT
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "dict":
        ok = isinstance(value, dict)
    elif kind == "list[dict]":
        ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    elif kind == "list[str]":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:  # pragma: no cover - a programming error
        raise AssertionError(f"unknown kind {kind!r}")
    if not ok:
        raise FieldProblem(name, _EXPECTED[kind], value)
    return value


def kind_of(field: attrs.Attribute[Any]) -> str | None:
    kind = field.metadata.get(_KIND)
    return kind if isinstance(kind, str) else None


_WIRE_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}


def wire_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """(name, kind) of every field of ``cls`` that travels on the wire, in order."""
    found = _WIRE_FIELDS.get(cls)
    if found is None:
        found = tuple(
            (field.name, kind)
            for field in attrs.fields(cls)
            if (kind := kind_of(field)) is not None
        )
        _WIRE_FIELDS[cls] = found
    return found


class TooDeep(ValueError):
    """A value nests deeper than the JSON nesting limit allows."""


_SCALARS = frozenset({str, int, bool, type(None)})


def copy_json(value: Any, depth: int = 1, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of a JSON value that shares no container with ``value``, exactly
    as encoding and decoding it would give (:class:`TooDeep` past ``max_depth``
    nested containers, counting from ``depth``).

    Plain dicts, lists and scalars are copied directly; anything else (tuples,
    subclasses, non-string keys, non-finite floats) takes the JSON codec's
    round trip, so it becomes what the wire would make of it or raises what
    encoding it raises (``TypeError``, ``ValueError``).
    """
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
    elif kind is dict or kind is list:
        if depth > max_depth:
            raise TooDeep(f"message nests deeper than {max_depth} levels")
        # Scalars are taken in the loop: most values are, and a call each adds up.
        scalars = _SCALARS
        if kind is list:
            return [
                item if type(item) in scalars else copy_json(item, depth + 1, max_depth)
                for item in value
            ]
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                break
            out[key] = item if type(item) in scalars else copy_json(item, depth + 1, max_depth)
        else:
            return out
    text = jsontext.dumps(value)
    try:
        return jsontext.loads(text, max_depth=max(0, max_depth - depth + 1))
    except RemoteProtocolError:
        raise TooDeep(f"message nests deeper than {max_depth} levels") from None


class Model:
    """Shared ``to_dict`` / ``from_dict`` of the A2E data models.

    Unknown keys are kept in ``extra`` and written back out, so a model read
    from a newer peer loses nothing on the way through.
    """

    #: Keys that must be present when decoding (most fields have defaults).
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    extra: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        out = {name: _copy(getattr(self, name)) for name, _ in wire_fields(type(self))}
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_dict(cls: type[T], obj: Mapping[str, Any], *, prefix: str = "") -> T:
        """Build from a decoded object; :class:`FieldProblem` names the bad field."""
        if not isinstance(obj, Mapping):
            raise FieldProblem(prefix.rstrip(".") or "(object)", "an object", obj)
        values: dict[str, Any] = {}
        fields = wire_fields(cls)
        for name, kind in fields:
            if name in obj:
                values[name] = check_kind(kind, prefix + name, obj[name])
            elif name in cls.REQUIRED:
                raise FieldProblem(prefix + name, "present", None)
        known = {name for name, _ in fields}
        extra = {k: v for k, v in obj.items() if k not in known}
        return cast(T, cast(Any, cls)(**values, extra=extra))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value
