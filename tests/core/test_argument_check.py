"""A tool's quick argument check (made once per tool, run per call) says yes exactly
when the full checks find no problem: the names the schema and the function take,
and each value's type, enum, bounds and items."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp._schema import (
    argument_check,
    argument_names_problem,
    argument_values_problem,
    signature_problem,
)

NAMES = ["a", "b", "c", "ctx"]
TYPES = ["string", "integer", "number", "boolean", "array", "object", "null", "mystery"]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False),
    st.sampled_from(["", "x", "y"]),
    st.lists(st.integers(-5, 5), max_size=3),
    st.dictionaries(st.sampled_from(["k"]), st.integers(), max_size=1),
)
PROPERTY = st.fixed_dictionaries(
    {},
    optional={
        "type": st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), max_size=2)),
        "enum": st.lists(VALUES, max_size=3),
        "minimum": st.integers(-5, 5),
        "exclusiveMaximum": st.integers(-5, 5),
        "items": st.fixed_dictionaries({"type": st.sampled_from(TYPES)}),
        "anyOf": st.lists(st.fixed_dictionaries({"type": st.sampled_from(TYPES)}), max_size=2),
        "description": st.just("says nothing"),
    },
)
SCHEMA = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.one_of(
            st.dictionaries(st.sampled_from(NAMES), st.one_of(PROPERTY, st.just("bad"))),
            st.just(["not", "an", "object"]),
        ),
    },
    optional={
        "required": st.one_of(
            st.lists(st.one_of(st.sampled_from(NAMES), st.integers()), max_size=3),
            st.just("a"),
        ),
        "additionalProperties": st.sampled_from([False, True, {}]),
    },
)


def takes_a_and_b(a: Any, b: Any = None) -> None: ...


def takes_a_and_c(a: Any, c: Any) -> None: ...  # every name required


def takes_anything(a: Any, **rest: Any) -> None: ...


def takes_a_context(ctx: Any, a: Any, c: Any = 1) -> None: ...


FUNCTIONS = st.sampled_from(
    [
        (takes_a_and_b, frozenset()),
        (takes_anything, frozenset()),
        (takes_a_context, frozenset({"ctx"})),
        (print, frozenset()),  # a builtin: no signature to read, so the call decides
    ]
)


@given(SCHEMA, FUNCTIONS, st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=4))
def test_the_quick_check_agrees_with_the_full_checks(
    schema: dict[str, Any], function: tuple[Any, frozenset[str]], arguments: dict[str, Any]
) -> None:
    func, given_names = function
    full = (
        argument_names_problem(schema, arguments)
        or signature_problem(func, arguments, given=given_names)
        or argument_values_problem(schema, arguments)
    )
    quick = argument_check(schema, func, given=given_names)
    assert quick(arguments) == (full is None), (schema, arguments, full)


#: Schemas whose properties each say one type (the ground of the exact check: every
#: name the function takes required, each property one type test).
TYPED_SCHEMA = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(
            st.sampled_from(NAMES), st.fixed_dictionaries({"type": st.sampled_from(TYPES)})
        ),
    },
    optional={
        "required": st.lists(st.sampled_from(NAMES), max_size=3),
        "additionalProperties": st.sampled_from([False, True]),
    },
)


@settings(max_examples=1000)
@given(
    TYPED_SCHEMA,
    st.sampled_from([(takes_a_and_c, frozenset()), (takes_a_context, frozenset({"ctx"}))]),
    st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=3),
)
def test_the_exact_check_agrees_with_the_full_checks(
    schema: dict[str, Any], function: tuple[Any, frozenset[str]], arguments: dict[str, Any]
) -> None:
    """Where every name is required and each property is one type, the quick check is
    one comparison of the names and an isinstance per argument: the same verdicts."""
    test_the_quick_check_agrees_with_the_full_checks.hypothesis.inner_test(  # type: ignore[attr-defined]
        schema, function, arguments
    )


def test_a_one_type_property_is_checked_without_the_full_walk() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "title": "A"}}}
    quick = argument_check(schema, takes_a_and_b)
    assert quick({"a": "x"}) and quick({"a": "x", "b": 1})
    assert not quick({"a": 1}) and not quick({}) and not quick({"a": "x", "c": 1})
