"""JSON Schema for a Python function's parameters, and a small validator
for the arguments a tool receives."""

from __future__ import annotations

import functools
import inspect
import operator
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

__all__ = [
    "argument_check",
    "argument_names_problem",
    "argument_values_problem",
    "schema_for_function",
    "schema_for_type",
    "signature_problem",
    "validate_arguments",
]

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}


def schema_for_type(annotation: Any) -> dict[str, Any]:
    """A JSON Schema for a type annotation (unknown types allow anything)."""
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return schema_for_type(members[0])
        return {"anyOf": [schema_for_type(a) for a in members]}
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set):
        schema: dict[str, Any] = {"type": "array"}
        if args and args[-1] is not Ellipsis:
            schema["items"] = schema_for_type(args[0])
        return schema
    if origin is dict or annotation is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = schema_for_type(args[1])
        return schema
    return {}


def schema_for_function(
    func: Callable[..., Any], *, skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """An object schema for ``func``'s parameters (except those in ``skip``)."""
    hints = typing.get_type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(func).parameters.items():
        if name in skip or parameter.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            continue
        annotation = hints.get(name, Any)
        prop = schema_for_type(annotation)
        if parameter.default is inspect.Parameter.empty:
            optional = typing.get_origin(annotation) in (Union, types.UnionType) and type(
                None
            ) in typing.get_args(annotation)
            if not optional:
                required.append(name)
        elif parameter.default is not None:
            prop["default"] = parameter.default
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


# A type's own __instancecheck__, bound to it, is isinstance(v, type) called in C: a
# tool's argument check runs one per argument of each call, without a Python frame.
_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": str.__instancecheck__,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": bool.__instancecheck__,
    "array": list.__instancecheck__,
    "object": dict.__instancecheck__,
    "null": lambda v: v is None,
}


#: The JSON types whose check in ``_TYPE_CHECKS`` is one isinstance test.
_PLAIN_TYPES: dict[Any, type] = {"string": str, "boolean": bool, "array": list, "object": dict}


def _any_type(value: Any) -> bool:
    return True


def argument_names_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """A required name missing from ``arguments``, or one an object schema
    without ``additionalProperties`` does not know: the problem, or None."""
    required = schema.get("required")
    for name in required if isinstance(required, list) else ():
        if isinstance(name, str) and name not in arguments:
            return f"missing required argument {name!r}"
    if schema.get("additionalProperties") is False:
        properties = _object(schema.get("properties"))
        for name in arguments:
            if name not in properties:
                return f"unexpected argument {name!r}"
    return None


@functools.lru_cache(maxsize=1024)
def _keyword_parameters(func: Callable[..., Any]) -> tuple[frozenset[str], frozenset[str], bool]:
    """``func``'s names that can be given by keyword, those of them without a
    default, and whether it takes ``**kwargs`` (cached: looked up per call)."""
    names: set[str] = set()
    required: set[str] = set()
    any_keyword = False
    for name, parameter in inspect.signature(func).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            any_keyword = True
        elif parameter.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            names.add(name)
            if parameter.default is inspect.Parameter.empty:
                required.add(name)
    return frozenset(names), frozenset(required), any_keyword


def signature_problem(
    func: Callable[..., Any], arguments: dict[str, Any], *, given: frozenset[str] = frozenset()
) -> str | None:
    """Whether ``func(**arguments)`` (with the names in ``given`` supplied by the
    caller) would fail for the names alone: the problem, said without any of
    ``func``'s Python names (a ``TypeError`` from the call would name them), or None."""
    try:
        names, required, any_keyword = _keyword_parameters(func)
    except (TypeError, ValueError):  # no signature to read (some builtins): let the call decide
        return None
    if not any_keyword:
        for name in arguments:
            if name not in names or name in given:
                return f"unexpected argument {name!r}"
    for name in sorted(required - given):
        if name not in arguments:
            return f"missing required argument {name!r}"
    return None


def validate_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Check ``arguments`` against the parts of an object schema that matter
    for dispatch (required names, property types, enums). Returns a problem
    description or None."""
    return argument_names_problem(schema, arguments) or argument_values_problem(schema, arguments)


def argument_values_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The part of :func:`validate_arguments` after the names (property types, enums,
    bounds): for a caller that checked the names already."""
    properties = _object(schema.get("properties"))
    for name, value in arguments.items():
        prop = properties.get(name)
        if not isinstance(prop, dict):
            continue
        problem = _check_value(prop, value)
        if problem:
            return f"argument {name!r} {problem}"
    return None


#: Keys of a property schema that :func:`_check_value` reads besides ``type``.
_VALUE_RULES = frozenset(
    {"enum", "anyOf", "items", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
)


def argument_check(
    schema: dict[str, Any], func: Callable[..., Any], *, given: frozenset[str] = frozenset()
) -> Callable[[dict[str, Any]], bool]:
    """A quick test, made once per tool, of what :func:`argument_names_problem`,
    :func:`signature_problem` and :func:`argument_values_problem` check per call:
    True when none of them would find a problem; False when one may (ask them
    which).  It reads ``schema`` now: a schema changed in place later is not seen."""
    required_names = schema.get("required")
    required = (
        {n for n in required_names if isinstance(n, str)}
        if isinstance(required_names, list)
        else set()
    )
    properties = _object(schema.get("properties"))
    allowed: set[str] | None = (
        set(properties) if schema.get("additionalProperties") is False else None
    )
    try:
        names, func_required, any_keyword = _keyword_parameters(func)
    except (TypeError, ValueError):  # no signature: the call decides (as signature_problem)
        pass
    else:
        if not any_keyword:
            allowed = set(names - given) if allowed is None else allowed & (names - given)
        required |= func_required - given
    needed, known = frozenset(required), None if allowed is None else frozenset(allowed)
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        expected = prop.get("type")
        if isinstance(expected, str) and not _VALUE_RULES.intersection(prop):
            # One type and nothing else to check: the type test alone says it.
            if expected in _TYPE_CHECKS:
                checks[name] = _TYPE_CHECKS[expected]
        elif expected is not None or "enum" in prop or "anyOf" in prop:
            checks[name] = functools.partial(_passes, prop)

    # Each check that is one isinstance test, as its type.
    types = {
        name: _PLAIN_TYPES[expected]
        for name, test in checks.items()
        for expected in (properties[name].get("type"),)
        if isinstance(expected, str) and expected in _PLAIN_TYPES and test is _TYPE_CHECKS[expected]
    }
    if known is not None and needed == known and len(types) == len(checks):
        # The names are fixed (each one allowed is required) and each check is a type:
        # one comparison of the names, and an isinstance per argument.
        typed = tuple((name, kind) for name, kind in types.items() if name in needed)

        def exact(arguments: dict[str, Any]) -> bool:
            if arguments.keys() != needed:
                return False
            for name, kind in typed:
                if not isinstance(arguments[name], kind):
                    return False
            return True

        return exact

    def check(arguments: dict[str, Any]) -> bool:
        keys = arguments.keys()
        if not needed <= keys or (known is not None and not keys <= known):
            return False
        for name, value in arguments.items():
            test = checks.get(name)
            if test is not None and not test(value):
                return False
        return True

    return check


def _passes(schema: dict[str, Any], value: Any) -> bool:
    return _check_value(schema, value) is None


def _range_problem(schema: dict[str, Any], value: float) -> str | None:
    """The schema's numeric bounds (``minimum``, ``maximum`` and their exclusive forms)."""
    for key, (words, holds) in _BOUNDS.items():
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            if not holds(value, bound):
                return f"must be {words} {bound}"
    return None


#: Each numeric bound: how a problem says it, and the test a value must pass.
_BOUNDS: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "minimum": ("at least", operator.ge),
    "maximum": ("at most", operator.le),
    "exclusiveMinimum": ("more than", operator.gt),
    "exclusiveMaximum": ("less than", operator.lt),
}


def _object(value: Any) -> dict[str, Any]:
    """What a schema says is an object; empty when it is not one (a malformed schema
    checks nothing there rather than fail every call)."""
    return value if isinstance(value, dict) else {}


def _check_value(schema: dict[str, Any], value: Any) -> str | None:
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"must be one of {enum}"
    choices = schema.get("anyOf")
    if isinstance(choices, list):
        if all(_check_value(s, value) for s in choices if isinstance(s, dict)):
            return "matches none of the allowed types"
        return None
    expected = schema.get("type")
    if expected is None:
        return None
    if isinstance(expected, str) and not isinstance(value, (int, float, list)):
        # The common case, one type and a plain value: no list of kinds to build.
        if not _TYPE_CHECKS.get(expected, _any_type)(value):
            return f"must be of type {expected}"
        return None
    kinds = [
        k for k in (expected if isinstance(expected, list) else [expected]) if isinstance(k, str)
    ]
    if not kinds:
        return None
    if not any(_TYPE_CHECKS.get(k, _any_type)(value) for k in kinds):
        return f"must be of type {' or '.join(kinds)}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        problem = _range_problem(schema, value)
        if problem:
            return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            problem = _check_value(schema["items"], item)
            if problem:
                return f"has an item that {problem}"
    return None
