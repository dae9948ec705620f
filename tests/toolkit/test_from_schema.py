"""from_schema honours what it can, says what it cannot, and makes invalid values."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sansio_mcp_testing.strategies import from_schema

SETTINGS = settings(
    max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)

HONOURED: dict[str, dict[str, Any]] = {
    "types": {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "z": {"type": "null"},
            "u": {"type": ["string", "integer"]},
        },
        "required": ["s", "i", "n", "b", "z"],
    },
    "enum-const": {
        "type": "object",
        "properties": {"colour": {"enum": ["red", "green"]}, "kind": {"const": "fixed"}},
        "required": ["colour", "kind"],
    },
    "ranges": {
        "type": "object",
        "properties": {
            "small": {"type": "integer", "minimum": 3, "maximum": 7},
            "open": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "step": {"type": "integer", "multipleOf": 5, "minimum": 1, "maximum": 100},
            "short": {"type": "string", "minLength": 2, "maxLength": 4},
        },
        "required": ["small", "open", "step", "short"],
        "additionalProperties": False,
    },
    "pattern-format": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
            "mail": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date-time"},
        },
        "required": ["code", "mail"],
    },
    "arrays-nested": {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 3,
                "uniqueItems": True,
            },
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            },
        },
        "required": ["tags", "point"],
    },
    "ref-anyof-allof": {
        "type": "object",
        "$defs": {"Id": {"type": "integer", "minimum": 1}},
        "properties": {
            "id": {"$ref": "#/$defs/Id"},
            "either": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "boolean"}]},
            "both": {
                "allOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": 9}]
            },
            "one": {
                "oneOf": [
                    {"type": "integer", "multipleOf": 2},
                    {"type": "integer", "multipleOf": 3},
                ]
            },
        },
        "required": ["id", "either", "both", "one"],
    },
}


@pytest.mark.parametrize("name", list(HONOURED))
def test_valid_values_satisfy_the_schema(name: str) -> None:
    schema = HONOURED[name]
    converted = from_schema(schema)
    assert converted.unsupported == () or name == "ref-anyof-allof"
    validator = jsonschema.Draft202012Validator(schema)

    @SETTINGS
    @given(converted.strategy)
    def check(value: Any) -> None:
        assert validator.is_valid(value), (value, list(validator.iter_errors(value))[:1])

    check()


@pytest.mark.parametrize("name", list(HONOURED))
def test_invalid_values_violate_the_schema(name: str) -> None:
    schema = HONOURED[name]
    converted = from_schema(schema)
    assert converted.invalid is not None, converted.invalid_reason
    validator = jsonschema.Draft202012Validator(schema)

    @SETTINGS
    @given(converted.invalid)
    def check(value: Any) -> None:
        assert not validator.is_valid(value)

    check()


def test_constraints_are_honoured_by_construction() -> None:
    converted = from_schema(HONOURED["ranges"])
    assert converted.exact and not converted.filtered
    seen: list[Any] = []

    @SETTINGS
    @given(converted.strategy)
    def check(value: Any) -> None:
        assert set(value) == {"small", "open", "step", "short"}
        assert 3 <= value["small"] <= 7 and 0 < value["open"] < 1
        assert value["step"] % 5 == 0 and 2 <= len(value["short"]) <= 4
        seen.append(value)

    check()
    assert len(seen) > 10


def test_required_and_optional() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"],
    }
    found = {"with_b": False, "without_b": False}

    @settings(max_examples=100, database=None)
    @given(from_schema(schema).strategy)
    def check(value: Any) -> None:
        assert "a" in value
        found["with_b" if "b" in value else "without_b"] = True

    check()
    assert all(found.values())


@pytest.mark.parametrize(
    ("schema", "mentions"),
    [
        ({"type": "object", "not": {"required": ["x"]}}, "negation"),
        ({"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}, "conditional"),
        ({"type": "object", "patternProperties": {"^x_": {"type": "string"}}}, "patternProperties"),
        ({"type": "object", "dependentRequired": {"a": ["b"]}}, "dependentRequired"),
        (
            {"type": "object", "properties": {"r": {"$ref": "https://example.com/s.json"}}},
            "non-local $ref",
        ),
        (
            {"type": "object", "properties": {"s": {"type": "string", "format": "x-custom"}}},
            "format 'x-custom'",
        ),
        (
            {"type": "object", "properties": {"s": {"type": "string", "pattern": "(?<=x"}}},
            "not a Python regex",
        ),
    ],
)
def test_unsupported_constructs_are_reported(schema: dict[str, Any], mentions: str) -> None:
    converted = from_schema(schema)
    assert any(mentions in item for item in converted.unsupported), converted.unsupported
    assert not converted.exact


def test_unsupported_constructs_are_filtered_not_guessed() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "not": {"properties": {"a": {"const": 0}}, "required": ["a"]},
    }
    converted = from_schema(schema)
    assert converted.filtered
    validator = jsonschema.Draft202012Validator(schema)

    @SETTINGS
    @given(converted.strategy)
    def check(value: Any) -> None:
        assert validator.is_valid(value)

    check()


def test_recursive_ref_is_cut() -> None:
    schema = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "properties": {"head": {"$ref": "#/$defs/node"}},
    }
    converted = from_schema(schema)
    assert any("recursive $ref" in u for u in converted.unsupported)

    @SETTINGS
    @given(converted.strategy)
    def check(value: Any) -> None:
        assert isinstance(value, dict)

    check()


def test_no_invalid_values_for_an_open_schema() -> None:
    converted = from_schema({"type": "object"})
    assert converted.invalid is None
    assert "accepts every object" in (converted.invalid_reason or "")


@given(st.just(None))
def test_empty_schema_draws_json(_: None) -> None:
    assert from_schema({}).exact
