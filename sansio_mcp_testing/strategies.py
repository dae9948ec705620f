"""Public Hypothesis strategies for MCP.

* Messages of every kind of every revision, valid by construction (our tests
  check them against the official schemas): :func:`messages`,
  :func:`requests`, :func:`notifications`, :func:`results`,
  :func:`responses`, :func:`errors`; the catalogue itself is
  :func:`message_kinds`.  2026-07-28 requests carry the per-request
  ``_meta``; its MRTR kinds include ``input_required`` results and retries
  with ``inputResponses`` / ``requestState``.
* Invalid variants through the ``invalid=`` knob of each: ``"wrong_type"``,
  ``"missing_field"``, ``"out_of_range"`` (each sure to break the schema),
  ``"oversized"`` (one string blown up to ``oversize`` characters: still
  schema-valid, since MCP sets no length limits, but a test of a peer's
  limits), or ``"any"`` of the three breaking ones.
* :func:`from_schema`: a tool's ``inputSchema`` to a strategy for its
  arguments, reporting what it cannot honour.
* :func:`a2e_messages`: every A2E message of the MCP bridge (``sansio_mcp_apps.a2e``),
  valid by construction: each round-trips through the A2E codec.

Hypothesis is an optional dependency: ``pip install 'sansio-mcp[testing]'``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from sansio_mcp import ALL_REVISIONS, REVISIONS

from ._catalog import CATEGORIES, MessageKind, catalog, response_envelope
from ._spec import (
    WRONG_TYPE_SAMPLES,
    Lazy,
    Mutation,
    Obj,
    Spec,
    Str,
    Union,
    json_values,
    mutations,
)
from ._validation import BudgetExceeded, checked_validator_for, mentions, time_budget

__all__ = [
    "INVALID_KINDS",
    "a2e_message_types",
    "a2e_messages",
    "MessageKind",
    "SchemaStrategy",
    "errors",
    "from_schema",
    "json_values",
    "message_kinds",
    "messages",
    "notifications",
    "requests",
    "responses",
    "results",
    "revisions",
]

#: The values of the ``invalid=`` knob.
INVALID_KINDS = ("wrong_type", "missing_field", "out_of_range", "oversized", "any")
_BREAKING = ("wrong_type", "missing_field", "out_of_range")
DEFAULT_OVERSIZE = 1 << 20


def revisions() -> st.SearchStrategy[str]:
    """Any protocol revision the library knows."""
    return st.sampled_from(ALL_REVISIONS)


def message_kinds(
    revision: str,
    *,
    category: str | None = None,
    sender: str | None = None,
    method: str | None = None,
) -> list[MessageKind]:
    """The message kinds of ``revision`` (filtered), as :class:`MessageKind` records."""
    if revision not in REVISIONS:
        raise ValueError(f"unknown revision {revision!r}; known: {list(REVISIONS)}")
    if category is not None and category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES}")
    return [
        k
        for k in catalog(revision)
        if (category is None or k.category == category)
        and (sender is None or k.sender == sender)
        and (method is None or k.method == method)
    ]


# ----------------------------------------------------------------- invalid


def _static_support(spec: Spec, how: str, depth: int = 0) -> bool:
    """Whether every valid value of ``spec`` has a mutation of kind ``how``
    on a path that is always present (required keys only)."""
    if depth > 6:
        return False
    if isinstance(spec, Lazy):
        return _static_support(spec.spec, how, depth + 1)
    if how == "wrong_type":
        return bool(spec.types)
    if isinstance(spec, Union):
        return all(_static_support(o, how, depth + 1) for o in spec.options)
    if how == "out_of_range" and spec.out_of_range():
        return True
    if how == "oversized" and isinstance(spec, Str):
        return True
    if isinstance(spec, Obj):
        if how == "missing_field" and spec.required:
            return True
        return any(_static_support(s, how, depth + 1) for s in spec.required.values())
    return False


def _supports(kind: MessageKind, how: str) -> bool:
    if how == "any":
        return any(_static_support(kind.spec, h) for h in _BREAKING)
    return _static_support(kind.spec, how)


def _break(value: Any, spec: Spec, how: str, data: st.DataObject, oversize: int) -> Any:
    wanted = _BREAKING if how == "any" else (how,)
    candidates: list[Mutation] = [m for m in mutations(spec, value) if m.kind in wanted]
    if not candidates:  # pragma: no cover - excluded by _supports
        raise AssertionError(f"no {how} mutation for {value!r}")
    mutation = data.draw(st.sampled_from(candidates), label="mutation")
    if mutation.kind == "oversized":
        filler = data.draw(st.sampled_from(["x", "é", "\u2603", "a b"]), label="filler")
        mutation.replacement = (filler * (oversize // len(filler) + 1))[:oversize]
    return mutation.apply(value)


def _kind_strategy(
    kind: MessageKind, *, invalid: str | None, oversize: int, whole: bool
) -> st.SearchStrategy[Any]:
    spec = kind.spec
    if whole and kind.category == "result":
        spec = response_envelope(spec)
    if invalid is None:
        return spec.strategy()
    if invalid not in INVALID_KINDS:
        raise ValueError(f"invalid must be one of {INVALID_KINDS}, not {invalid!r}")

    @st.composite
    def broken(draw: st.DrawFn) -> Any:
        value = draw(spec.strategy())
        data = draw(st.data())
        return _break(value, spec, invalid, data, oversize)

    return broken()


def _choose(
    kinds: Sequence[MessageKind],
    *,
    invalid: str | None,
    oversize: int,
    whole: bool,
) -> st.SearchStrategy[Any]:
    if invalid is not None:
        kinds = [k for k in kinds if _supports(k if not whole else _whole(k), invalid)]
    if not kinds:
        raise ValueError(f"no message kind matches (with invalid={invalid!r})")
    return st.one_of(
        [_kind_strategy(k, invalid=invalid, oversize=oversize, whole=whole) for k in kinds]
    )


def _whole(kind: MessageKind) -> MessageKind:
    if kind.category != "result":
        return kind
    return attrs.evolve(kind, spec=response_envelope(kind.spec))


def messages(
    revision: str,
    *,
    category: str | None = None,
    sender: str | None = None,
    method: str | None = None,
    invalid: str | None = None,
    oversize: int = DEFAULT_OVERSIZE,
) -> st.SearchStrategy[dict[str, Any]]:
    """Whole JSON-RPC messages of ``revision`` (results wrapped in responses)."""
    kinds = message_kinds(revision, category=category, sender=sender, method=method)
    return _choose(kinds, invalid=invalid, oversize=oversize, whole=True)


def requests(
    revision: str,
    *,
    sender: str = "client",
    method: str | None = None,
    invalid: str | None = None,
    oversize: int = DEFAULT_OVERSIZE,
) -> st.SearchStrategy[dict[str, Any]]:
    """Requests ``sender`` may send at ``revision`` (for the handshake revisions,
    ``initialize`` included; for 2026-07-28, ``server/discover`` and ``_meta`` on each)."""
    return messages(
        revision,
        category="request",
        sender=sender,
        method=method,
        invalid=invalid,
        oversize=oversize,
    )


def notifications(
    revision: str,
    *,
    sender: str = "client",
    method: str | None = None,
    invalid: str | None = None,
    oversize: int = DEFAULT_OVERSIZE,
) -> st.SearchStrategy[dict[str, Any]]:
    return messages(
        revision,
        category="notification",
        sender=sender,
        method=method,
        invalid=invalid,
        oversize=oversize,
    )


def results(
    revision: str,
    method: str | None = None,
    *,
    sender: str = "server",
    invalid: str | None = None,
    input_required: bool | None = None,
    oversize: int = DEFAULT_OVERSIZE,
) -> st.SearchStrategy[dict[str, Any]]:
    """Result objects (the ``result`` member) for requests of ``method``.

    ``input_required`` picks MRTR interim results (True), complete ones
    (False) or both (None; 2026-07-28 only has the former).
    """
    kinds = message_kinds(revision, category="result", sender=sender, method=method)
    if input_required is not None:
        kinds = [k for k in kinds if (k.definition == "InputRequiredResult") == input_required]
    return _choose(kinds, invalid=invalid, oversize=oversize, whole=False)


def responses(
    revision: str,
    method: str | None = None,
    *,
    sender: str = "server",
    invalid: str | None = None,
    oversize: int = DEFAULT_OVERSIZE,
) -> st.SearchStrategy[dict[str, Any]]:
    """Whole result responses (``{"jsonrpc", "id", "result"}``)."""
    kinds = message_kinds(revision, category="result", sender=sender, method=method)
    return _choose(kinds, invalid=invalid, oversize=oversize, whole=True)


def errors(
    revision: str,
    *,
    sender: str = "server",
    invalid: str | None = None,
    oversize: int = DEFAULT_OVERSIZE,
) -> st.SearchStrategy[dict[str, Any]]:
    """Error responses (an ``id`` is optional from 2025-11-25)."""
    return messages(revision, category="error", sender=sender, invalid=invalid, oversize=oversize)


# ------------------------------------------------------------- from_schema

_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$anchor",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "$defs",
        "definitions",
    }
)
_UNSUPPORTED = {
    "not": "negation",
    "if": "conditional (if/then/else)",
    "then": "conditional (if/then/else)",
    "else": "conditional (if/then/else)",
    "dependentRequired": "dependentRequired",
    "dependentSchemas": "dependentSchemas",
    "dependencies": "dependencies",
    "patternProperties": "patternProperties",
    "propertyNames": "propertyNames",
    "contains": "contains",
    "minContains": "contains",
    "maxContains": "contains",
    "unevaluatedProperties": "unevaluatedProperties",
    "unevaluatedItems": "unevaluatedItems",
    "$dynamicRef": "$dynamicRef",
    "$recursiveRef": "$recursiveRef",
}
_FORMATS: dict[str, st.SearchStrategy[str]] = {
    "email": st.from_regex(r"[a-z]{1,8}@example\.(com|org)", fullmatch=True),
    "uri": st.from_regex(r"https://example\.com/[a-z0-9]{0,8}", fullmatch=True),
    "uri-reference": st.from_regex(r"/[a-z0-9]{0,8}", fullmatch=True),
    "url": st.from_regex(r"https://example\.com/[a-z0-9]{0,8}", fullmatch=True),
    "uuid": st.uuids().map(str),
    "date-time": st.datetimes().map(lambda d: d.isoformat() + "Z"),
    "date": st.dates().map(lambda d: d.isoformat()),
    "time": st.times().map(lambda t: t.isoformat() + "Z"),
    "ipv4": st.ip_addresses(v=4).map(str),
    "ipv6": st.ip_addresses(v=6).map(str),
    "hostname": st.from_regex(r"[a-z]{1,10}\.example\.com", fullmatch=True),
}
_MAX_TEXT = 40
_MAX_ITEMS = 5
_MAX_REF_DEPTH = 4


@attrs.frozen
class SchemaStrategy:
    """What :func:`from_schema` made of a JSON Schema.

    ``strategy`` draws values meant to satisfy the schema; ``unsupported``
    lists the constructs it could not honour by construction (each as
    ``"<json pointer>: <what>"``).  When that list is not empty and
    ``jsonschema`` is installed, ``strategy`` filters its draws through a
    validator (``filtered`` is True), so it never yields an invalid value,
    but may be slow or exhausted.  ``invalid`` draws objects that violate
    the schema (checked with the validator), or is None with
    ``invalid_reason`` saying why none could be made.
    """

    strategy: st.SearchStrategy[Any]
    unsupported: tuple[str, ...]
    invalid: st.SearchStrategy[Any] | None
    invalid_reason: str | None
    filtered: bool

    @property
    def exact(self) -> bool:
        """Every construct was honoured by construction."""
        return not self.unsupported


#: Seconds to judge one drawn value against a schema (past them it is dropped: a
#: schema whose nested anyOf takes exponential time must not hang a draw).
_JUDGE_BUDGET = 1.0


def _judged(validator: Any, value: Any) -> bool | None:
    """Whether ``value`` is valid (None: not known within :data:`_JUDGE_BUDGET`)."""
    try:
        with time_budget(_JUDGE_BUDGET):
            return bool(validator.is_valid(value))
    except BudgetExceeded:
        return None


def _validator(schema: Any) -> Any | None:
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema comes with the testing extra
        return None
    try:
        cls = checked_validator_for(schema, jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema)
    except Exception:
        return None


class _Converter:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.unsupported: list[str] = []
        self._ref_depth: dict[str, int] = {}

    def note(self, pointer: str, what: str) -> None:
        entry = f"{pointer or '/'}: {what}"
        if entry not in self.unsupported:
            self.unsupported.append(entry)

    def resolve(self, ref: str, pointer: str) -> Any | None:
        if not ref.startswith("#"):
            self.note(pointer, f"non-local $ref {ref!r}")
            return None
        node: Any = self.root
        for part in ref[1:].lstrip("/").split("/") if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                self.note(pointer, f"unresolvable $ref {ref!r}")
                return None
        return node

    # -------------------------------------------------------------------------

    def convert(self, schema: Any, pointer: str = "") -> st.SearchStrategy[Any]:
        if schema is True or schema == {}:
            return json_values(4)
        if schema is False:
            self.note(pointer, "false schema (nothing is valid)")
            return st.nothing()
        if not isinstance(schema, dict):
            self.note(pointer, f"not a schema: {schema!r}")
            return st.nothing()
        for keyword, what in _UNSUPPORTED.items():
            if keyword in schema:
                self.note(pointer, f"{what} not generated")
        if "nullable" in schema:
            self.note(pointer, "'nullable' is OpenAPI, not JSON Schema: ignored")
        if "$ref" in schema:
            return self._ref(schema, pointer)
        if "allOf" in schema:
            merged = self._merge_all(schema, pointer)
            if merged is not None:
                return self.convert(merged, pointer)
        if "anyOf" in schema or "oneOf" in schema:
            return self._choice(schema, pointer)
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                self.note(pointer, "empty enum")
                return st.nothing()
            return st.sampled_from(values)
        types = schema.get("type")
        if types is None:
            types = self._infer_types(schema)
        if isinstance(types, str):
            types = [types]
        if not types:
            return json_values(4)
        return st.one_of([self._typed(t, schema, pointer) for t in types])

    def _infer_types(self, schema: dict[str, Any]) -> list[str]:
        if any(k in schema for k in ("properties", "required", "additionalProperties")):
            return ["object"]
        if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
            return ["array"]
        if any(k in schema for k in ("pattern", "minLength", "maxLength", "format")):
            return ["string"]
        if any(
            k in schema
            for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
        ):
            return ["number"]
        return []

    def _ref(self, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        ref = schema["$ref"]
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in _ANNOTATIONS}
        if siblings:
            self.note(pointer, "keywords beside $ref: only the $ref is generated")
        target = self.resolve(ref, pointer)
        if target is None:
            return json_values(4)
        depth = self._ref_depth.get(ref, 0)
        if depth >= _MAX_REF_DEPTH:
            self.note(pointer, f"recursive $ref {ref!r} cut at depth {_MAX_REF_DEPTH}")
            return st.nothing()
        self._ref_depth[ref] = depth + 1
        try:
            return self.convert(target, pointer)
        finally:
            self._ref_depth[ref] = depth

    def _merge_all(self, schema: dict[str, Any], pointer: str) -> dict[str, Any] | None:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for i, part in enumerate(schema["allOf"]):
            if isinstance(part, dict) and "$ref" in part:
                resolved = self.resolve(part["$ref"], f"{pointer}/allOf/{i}")
                part = resolved if isinstance(resolved, dict) else {}
            if not isinstance(part, dict):
                self.note(pointer, "allOf with a non-object part")
                return None
            for key, value in part.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = sorted(set(merged.get("required", [])) | set(value))
                elif key in ("minimum", "minLength", "minItems", "exclusiveMinimum"):
                    merged[key] = max(merged.get(key, value), value)
                elif key in ("maximum", "maxLength", "maxItems", "exclusiveMaximum"):
                    merged[key] = min(merged.get(key, value), value)
                elif key in merged and merged[key] != value and key not in _ANNOTATIONS:
                    self.note(f"{pointer}/allOf", f"conflicting {key!r} not merged")
                else:
                    merged[key] = value
        return merged

    def _choice(self, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        keyword = "anyOf" if "anyOf" in schema else "oneOf"
        if "anyOf" in schema and "oneOf" in schema:
            self.note(pointer, "both anyOf and oneOf: only anyOf generated")
        if keyword == "oneOf":
            self.note(pointer, "oneOf exclusivity is checked by filtering, not by construction")
        siblings = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        options = []
        for i, branch in enumerate(schema[keyword]):
            if isinstance(branch, dict) and siblings:
                combined = dict(siblings)
                for key, value in branch.items():
                    if key == "properties":
                        combined["properties"] = {**siblings.get("properties", {}), **value}
                    elif key == "required":
                        combined["required"] = sorted(
                            set(siblings.get("required", [])) | set(value)
                        )
                    else:
                        combined[key] = value
                branch = combined
            options.append(self.convert(branch, f"{pointer}/{keyword}/{i}"))
        return st.one_of(options) if options else st.nothing()

    # -------------------------------------------------------------------------

    def _typed(self, type_: str, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        if type_ == "null":
            return st.none()
        if type_ == "boolean":
            return st.booleans()
        if type_ == "integer":
            return self._integer(schema, pointer)
        if type_ == "number":
            return self._number(schema, pointer)
        if type_ == "string":
            return self._string(schema, pointer)
        if type_ == "array":
            return self._array(schema, pointer)
        if type_ == "object":
            return self._object(schema, pointer)
        self.note(pointer, f"unknown type {type_!r}")
        return st.nothing()

    @staticmethod
    def _bounds(schema: dict[str, Any]) -> tuple[float | None, float | None, bool, bool]:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        exclusive_lo = exclusive_hi = False
        emin, emax = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if isinstance(emin, bool):  # draft-04
            exclusive_lo = emin
        elif isinstance(emin, (int, float)) and (lo is None or emin >= lo):
            lo, exclusive_lo = emin, True
        if isinstance(emax, bool):
            exclusive_hi = emax
        elif isinstance(emax, (int, float)) and (hi is None or emax <= hi):
            hi, exclusive_hi = emax, True
        return lo, hi, exclusive_lo, exclusive_hi

    def _integer(self, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        lo, hi, xlo, xhi = self._bounds(schema)
        ilo = None if lo is None else (math.floor(lo) + 1 if xlo else math.ceil(lo))
        ihi = None if hi is None else (math.ceil(hi) - 1 if xhi else math.floor(hi))
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0:
            if float(step).is_integer():
                m = int(step)
                klo = None if ilo is None else -((-ilo) // m)
                khi = None if ihi is None else ihi // m
                return st.integers(klo, khi).map(lambda k: k * m)
            self.note(pointer, "fractional multipleOf on an integer: filtered")
            return st.integers(ilo, ihi).filter(lambda v: (v / step).is_integer())
        return st.integers(ilo, ihi)

    def _number(self, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        lo, hi, xlo, xhi = self._bounds(schema)
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0:
            klo = (
                None
                if lo is None
                else math.ceil(lo / step) + (1 if xlo and (lo / step).is_integer() else 0)
            )
            khi = (
                None
                if hi is None
                else math.floor(hi / step) - (1 if xhi and (hi / step).is_integer() else 0)
            )
            return st.integers(klo, khi).map(lambda k: k * step)
        floats = st.floats(
            min_value=lo,
            max_value=hi,
            exclude_min=xlo and lo is not None,
            exclude_max=xhi and hi is not None,
            allow_nan=False,
            allow_infinity=False,
        )
        ilo = None if lo is None else (math.floor(lo) + 1 if xlo else math.ceil(lo))
        ihi = None if hi is None else (math.ceil(hi) - 1 if xhi else math.floor(hi))
        if ilo is not None and ihi is not None and ilo > ihi:
            return floats
        return floats | st.integers(ilo, ihi)

    def _string(self, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        min_len = int(schema.get("minLength", 0))
        max_len = schema.get("maxLength")
        max_len = int(max_len) if isinstance(max_len, (int, float)) else None
        pattern = schema.get("pattern")
        fmt = schema.get("format")
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error:
                self.note(pointer, f"pattern {pattern!r} is not a Python regex: not honoured")
                pattern = None
        if isinstance(pattern, str):
            strategy: st.SearchStrategy[str] = st.from_regex(pattern)
            if min_len or max_len is not None:
                strategy = strategy.filter(
                    lambda s: len(s) >= min_len and (max_len is None or len(s) <= max_len)
                )
            if fmt is not None:
                self.note(pointer, f"format {fmt!r} beside a pattern: only the pattern honoured")
            return strategy
        if isinstance(fmt, str):
            if fmt in _FORMATS:
                found = _FORMATS[fmt]
                if min_len or max_len is not None:
                    found = found.filter(
                        lambda s: len(s) >= min_len and (max_len is None or len(s) <= max_len)
                    )
                return found
            self.note(pointer, f"format {fmt!r} not generated (plain strings drawn)")
        upper = max_len if max_len is not None else max(min_len, 0) + _MAX_TEXT
        return st.text(min_size=min_len, max_size=upper)

    def _array(self, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        min_items = int(schema.get("minItems", 0))
        max_items = schema.get("maxItems")
        max_items = int(max_items) if isinstance(max_items, (int, float)) else None
        prefix = schema.get("prefixItems")
        items = schema.get("items", True)
        if isinstance(items, list):  # draft-07 tuple form
            prefix, items = items, schema.get("additionalItems", True)
        upper = max_items if max_items is not None else max(min_items, 0) + _MAX_ITEMS
        unique = bool(schema.get("uniqueItems"))
        if isinstance(prefix, list):
            heads = [self.convert(p, f"{pointer}/prefixItems/{i}") for i, p in enumerate(prefix)]
            tail_count = max(0, upper - len(heads))
            tail = (
                st.lists(self.convert(items, f"{pointer}/items"), max_size=tail_count)
                if items is not False
                else st.just([])
            )
            strategy = (
                st.tuples(*heads)
                .flatmap(lambda head: tail.map(lambda t: [*head, *t]))
                .filter(lambda v: len(v) >= min_items and len(v) <= upper)
            )
            if unique:
                strategy = strategy.filter(_all_unique)
            return strategy
        element = self.convert(items, f"{pointer}/items")
        if unique:
            return st.lists(element, min_size=min_items, max_size=upper, unique_by=_canonical)
        return st.lists(element, min_size=min_items, max_size=upper)

    def _object(self, schema: dict[str, Any], pointer: str) -> st.SearchStrategy[Any]:
        properties = schema.get("properties") or {}
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        additional = schema.get("additionalProperties", True)
        fields = {
            name: self.convert(sub, f"{pointer}/properties/{name}")
            for name, sub in properties.items()
        }
        extra_schema = additional if isinstance(additional, dict) else None
        for name in required:
            if name not in fields:
                if additional is False:
                    self.note(pointer, f"required {name!r} is forbidden by additionalProperties")
                    return st.nothing()
                fields[name] = (
                    self.convert(extra_schema, f"{pointer}/additionalProperties")
                    if extra_schema is not None
                    else json_values(4)
                )
        strategy: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
            {k: v for k, v in fields.items() if k in required},
            optional={k: v for k, v in fields.items() if k not in required},
        )
        if extra_schema is not None:
            extras = st.dictionaries(
                st.from_regex(r"x_[a-z]{1,6}", fullmatch=True),
                self.convert(extra_schema, f"{pointer}/additionalProperties"),
                max_size=2,
            )
            strategy = st.tuples(strategy, extras).map(lambda p: {**p[1], **p[0]})
        min_p, max_p = schema.get("minProperties"), schema.get("maxProperties")
        if isinstance(min_p, int) or isinstance(max_p, int):
            self.note(pointer, "minProperties/maxProperties are checked by filtering")
            strategy = strategy.filter(
                lambda d: (
                    (not isinstance(min_p, int) or len(d) >= min_p)
                    and (not isinstance(max_p, int) or len(d) <= max_p)
                )
            )
        return strategy


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _all_unique(values: list[Any]) -> bool:
    seen = [_canonical(v) for v in values]
    return len(seen) == len(set(seen))


def _wrong_values(schema: Any) -> list[Any]:
    """Values a property schema surely rejects, where that can be told."""
    if not isinstance(schema, dict):
        return []
    found: list[Any] = []
    types = schema.get("type")
    if isinstance(types, str):
        types = [types]
    if isinstance(types, list) and types:
        for t, sample in WRONG_TYPE_SAMPLES.items():
            if t not in types and not (t == "integer" and "number" in types):
                found.append(sample)
                break
    if "enum" in schema and isinstance(schema["enum"], list):
        found.append("not-one-of-" + "-".join(str(v) for v in schema["enum"][:2]))
    if "const" in schema:
        found.append(["not", "the", "const"])
    for key, delta in (("minimum", -1), ("exclusiveMinimum", 0)):
        if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool):
            found.append(schema[key] + delta)
    for key, delta in (("maximum", 1), ("exclusiveMaximum", 0)):
        if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool):
            found.append(schema[key] + delta)
    if isinstance(schema.get("minLength"), int) and schema["minLength"] > 0:
        found.append("")
    if isinstance(schema.get("maxLength"), int):
        found.append("x" * (schema["maxLength"] + 1))
    return found


def from_schema(schema: Any) -> SchemaStrategy:
    """A strategy for values of ``schema`` (a tool's ``inputSchema``), with a report.

    Honoured by construction: ``type`` (and lists of types), ``enum``,
    ``const``, ``properties``/``required``/``additionalProperties``,
    ``items``/``prefixItems``/``minItems``/``maxItems``/``uniqueItems``,
    ``minimum``/``maximum``/``exclusive*``/``multipleOf``,
    ``minLength``/``maxLength``, ``pattern`` (as a Python regex), common
    ``format`` values, local ``$ref`` (recursion cut at a depth),
    ``anyOf``, ``allOf`` (merged).  ``oneOf`` and ``min/maxProperties`` are
    honoured by filtering.  Everything else (``not``, ``if``/``then``,
    ``patternProperties``, ``dependentRequired``, remote ``$ref`` …) is
    listed in ``unsupported``; draws are then filtered through a validator.
    """
    converter = _Converter(schema)
    raw = converter.convert(schema)
    unsupported = tuple(converter.unsupported)
    validator = _validator(schema)
    needs_filter = bool(unsupported) or mentions(schema, "oneOf")
    strategy = raw
    filtered = False
    if needs_filter and validator is not None:
        strategy = raw.filter(lambda v: _judged(validator, v) is True)
        filtered = True
    invalid, reason = _invalid_strategy(schema, raw, validator)
    return SchemaStrategy(strategy, unsupported, invalid, reason, filtered)


def _invalid_strategy(
    schema: Any, valid: st.SearchStrategy[Any], validator: Any | None
) -> tuple[st.SearchStrategy[Any] | None, str | None]:
    if validator is None:
        return None, "jsonschema is not installed, or the schema itself is invalid"
    if not isinstance(schema, dict):
        return None, "the schema is not an object"
    properties = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    edits: list[tuple[str, str, Any]] = []
    for name in required:
        edits.append(("missing_field", name, None))
    for name, sub in properties.items():
        for bad in _wrong_values(sub):
            edits.append(("bad_value", name, bad))
    if schema.get("additionalProperties") is False:
        edits.append(("extra_field", "zz_not_in_schema", "surprise"))
    if not edits:
        return None, "the schema accepts every object: no invalid arguments can be made"

    @st.composite
    def broken(draw: st.DrawFn) -> Any:
        value = draw(valid)
        if not isinstance(value, dict):
            value = {}
        kind, name, bad = draw(st.sampled_from(edits))
        value = dict(value)
        if kind == "missing_field":
            value.pop(name, None)
        else:
            value[name] = bad
        return value

    return broken().filter(lambda v: _judged(validator, v) is False), None


# A2E -------------------------------------------------------------------------------


def a2e_message_types() -> list[str]:
    """Every A2E message ``type`` the codec knows (the 21 ``mcp/*`` ones and the rest)."""
    from sansio_mcp_apps.a2e import MESSAGE_TYPES

    return sorted(MESSAGE_TYPES)


def _a2e_kind_strategy(kind: str) -> st.SearchStrategy[Any]:
    dicts = st.dictionaries(st.text(max_size=8), json_values(4), max_size=3)
    if kind == "str":
        return st.text(max_size=20)
    if kind == "int":
        return st.integers(-(2**53), 2**53)
    if kind == "float":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "bool":
        return st.booleans()
    if kind == "dict":
        return dicts
    if kind == "list[dict]":
        return st.lists(dicts, max_size=3)
    if kind == "list[str]":
        return st.lists(st.text(max_size=12), max_size=3)
    if kind == "any":
        return json_values(4)
    raise AssertionError(f"unknown A2E field kind {kind!r}")  # pragma: no cover


def a2e_messages(
    types: Sequence[str] | None = None,
    *,
    direction: str | None = None,
    extra: bool = True,
) -> st.SearchStrategy[Any]:
    """A2E messages (instances of the ``sansio_mcp_apps.a2e`` message classes), valid by
    construction: ``decode(json.loads(encode(m))) == m`` for each.

    ``types``: only these ``type`` values (default: all); ``direction``: only the
    types ``"agent"`` or ``"host"`` may send (types either side sends are always
    in); ``extra``: also unknown keys, which the codec keeps.
    """
    from sansio_mcp_apps.a2e import A2E_VERSION, MESSAGE_TYPES
    from sansio_mcp_apps.a2e._fields import kind_of

    wanted = list(types) if types is not None else sorted(MESSAGE_TYPES)
    unknown = [t for t in wanted if t not in MESSAGE_TYPES]
    if unknown:
        raise ValueError(f"unknown A2E message types {unknown}")
    if direction is not None:
        wanted = [t for t in wanted if MESSAGE_TYPES[t].DIRECTION in (direction, "both")]
    if not wanted:
        raise ValueError("no A2E message type matches")

    def build(type_name: str) -> st.SearchStrategy[Any]:
        cls = MESSAGE_TYPES[type_name]
        fields: dict[str, st.SearchStrategy[Any]] = {}
        names: set[str] = set()
        for field in attrs.fields(cls):
            kind = kind_of(field)
            if kind is None:
                continue
            names.add(field.name)
            if field.name == "type":
                continue
            if field.name == "version":
                fields["version"] = st.just(A2E_VERSION)
            elif field.name == "id":
                fields["id"] = st.text(min_size=1, max_size=32)
            else:
                value = _a2e_kind_strategy(kind)
                if field.name in cls.REQUIRED:
                    fields[field.name] = value
                else:
                    # Optional: left out (its default) or given.
                    fields[field.name] = st.one_of(st.just(attrs.NOTHING), value)
        extras: st.SearchStrategy[dict[str, Any]] = (
            st.dictionaries(
                st.text(min_size=1, max_size=10).filter(lambda k: k not in names),
                json_values(3),
                max_size=2,
            )
            if extra
            else st.just({})
        )

        def make(values: dict[str, Any], more: dict[str, Any]) -> Any:
            given = {k: v for k, v in values.items() if v is not attrs.NOTHING}
            return cls(**given, extra=more)

        return st.builds(make, st.fixed_dictionaries(fields), extras)

    return st.sampled_from(wanted).flatmap(build)
