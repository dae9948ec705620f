"""Validating what a server under test sent against a schema that server wrote:
both are the server's, so neither may cost the checker unbounded time.  A
pattern runs in time linear in the text (:mod:`._regex`), ``uniqueItems`` in
time linear in the array (jsonschema's compares every pair of objects), and
everything else under a time budget: ``anyOf`` nested through ``$ref`` can
take exponential time, and each keyword checks the budget as it starts."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ._regex import UnsupportedPattern, search

__all__ = [
    "BudgetExceeded",
    "UNEVALUATED_UNCHECKED",
    "checked_validator",
    "checked_validator_for",
    "mentions",
    "time_budget",
    "unevaluated_unchecked",
]

#: Why a schema's ``unevaluatedProperties`` may go unchecked.
UNEVALUATED_UNCHECKED = (
    "not checked: beside patternProperties, jsonschema matches their patterns with a "
    "backtracking regex engine, which no timeout can stop"
)

Keyword = Callable[[Any, Any, Any, Any], Any]

_budget = threading.local()


class BudgetExceeded(Exception):
    """A validation ran past its :func:`time_budget`."""


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Validation by a :func:`checked_validator` class in this thread raises
    :class:`BudgetExceeded` once ``seconds`` have passed."""
    previous = getattr(_budget, "deadline", None)
    _budget.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _budget.deadline = previous


def _budgeted(keyword: Keyword) -> Keyword:
    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        deadline = getattr(_budget, "deadline", None)
        if deadline is not None and time.monotonic() > deadline:
            raise BudgetExceeded()
        errors = keyword(validator, value, instance, schema)
        if errors is not None:
            yield from errors

    return run


def _matches(pattern: str, text: str) -> bool | None:
    """None: ``pattern`` cannot be run in linear time, and is not checked."""
    try:
        return search(pattern, text)
    except UnsupportedPattern:
        return None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and isinstance(pattern, str):
        if _matches(pattern, instance) is False:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = {
        key
        for key in instance
        if key not in properties and not any(_matches(p, key) for p in patterns)
    }
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        joined = ", ".join(repr(key) for key in sorted(extras))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(p) for p in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({joined} {verb} unexpected)"
            )


def _canonical(value: Any) -> Any:
    """A hashable stand-in for a JSON value, equal where JSON Schema calls values
    equal (1 and 1.0; not 1 and true; objects whatever their key order)."""
    if value is True or value is False:
        return ("boolean", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("other", repr(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if unique and validator.is_type(instance, "array"):
        if len({_canonical(item) for item in instance}) != len(instance):
            yield ValidationError(f"{instance!r} has non-unique elements")


_LINEAR = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


def _unchecked(validator: Any, value: Any, instance: Any, schema: Any) -> None:
    return None


def mentions(schema: Any, keyword: str) -> bool:
    """Whether ``keyword`` is a key anywhere in ``schema``."""
    if isinstance(schema, dict):
        return keyword in schema or any(mentions(v, keyword) for v in schema.values())
    if isinstance(schema, list):
        return any(mentions(v, keyword) for v in schema)
    return False


def unevaluated_unchecked(schema: Any) -> bool:
    """Whether :func:`checked_validator_for` leaves ``schema``'s
    ``unevaluatedProperties`` unchecked (see :data:`UNEVALUATED_UNCHECKED`)."""
    return mentions(schema, "unevaluatedProperties") and mentions(schema, "patternProperties")


@functools.cache
def checked_validator(cls: Any, *, unevaluated: bool = True) -> Any:
    """``cls`` (a jsonschema validator class) bounded for a server's own schemas:
    patterns and ``uniqueItems`` in linear time (a pattern that cannot run so is
    not checked: a value passes it, a key matches none), every keyword under the
    thread's :func:`time_budget`; ``unevaluated`` false leaves
    ``unevaluatedProperties`` unchecked."""
    import jsonschema

    keywords = {**cls.VALIDATORS, **{k: v for k, v in _LINEAR.items() if k in cls.VALIDATORS}}
    if not unevaluated and "unevaluatedProperties" in keywords:
        keywords["unevaluatedProperties"] = _unchecked
    return jsonschema.validators.extend(
        cls, {name: _budgeted(keyword) for name, keyword in keywords.items()}
    )


def checked_validator_for(schema: Any, default: Any) -> Any:
    """The :func:`checked_validator` class of ``schema``'s dialect (its ``$schema``, or
    ``default``)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=default)
    return checked_validator(cls, unevaluated=not unevaluated_unchecked(schema))
