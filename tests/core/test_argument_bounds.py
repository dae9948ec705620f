"""A tool's numeric bounds (minimum, maximum and their exclusive forms) are enforced
on its arguments, as JSON Schema defines them."""

from __future__ import annotations

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp._schema import validate_arguments

_NUMBERS = st.one_of(st.integers(-1000, 1000), st.floats(-1000, 1000, allow_nan=False))
_KEYS = st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])


@given(st.dictionaries(_KEYS, _NUMBERS, max_size=4), _NUMBERS)
def test_bounds_agree_with_json_schema(bounds: dict[str, float], value: float) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number", **bounds}}}
    problem = validate_arguments(schema, {"x": value})
    expected_ok = jsonschema.Draft202012Validator(schema).is_valid({"x": value})
    assert (problem is None) == expected_ok, (schema, value, problem)


def test_a_bound_names_itself() -> None:
    schema = {"type": "object", "properties": {"seconds": {"type": "number", "maximum": 1}}}
    assert validate_arguments(schema, {"seconds": 1}) is None
    assert validate_arguments(schema, {"seconds": 1.5}) == "argument 'seconds' must be at most 1"
    # booleans are no numbers here: their type is what is wrong
    assert "must be of type" in (validate_arguments(schema, {"seconds": True}) or "")
