"""A tool whose ``inputSchema`` is malformed (``properties`` a list, ``anyOf`` a
number, ``$defs`` a string, ...) is no crash anywhere a schema is read: the
``x-mcp-header`` checks name the problem (such a tool's annotations cannot be read,
so 2026-07-28 clients leave it out and servers ignore them), and argument checks
check what they can."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp._http_headers import (
    header_params,
    request_headers,
    validate_request_headers,
    x_mcp_header_problems,
)
from sansio_mcp._schema import validate_arguments

KEYWORDS = [
    "type", "properties", "required", "items", "anyOf", "oneOf", "allOf", "prefixItems",
    "not", "if", "then", "else", "additionalProperties", "$defs", "definitions", "enum",
    "x-mcp-header", "minimum",
]  # fmt: skip
_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from([*KEYWORDS, "a", "b"]), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=1000, deadline=None)
@given(schema=_json, arguments=st.dictionaries(st.sampled_from(["a", "b"]), _json, max_size=2))
def test_no_schema_crashes_a_reader(schema: Any, arguments: dict[str, Any]) -> None:
    problems = x_mcp_header_problems(schema)
    assert all(isinstance(p, str) for p in problems)
    header_params(schema)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "t", "arguments": arguments},
    }
    headers = request_headers(message, input_schema=schema)
    validate_request_headers(headers, message, input_schema=schema)
    if isinstance(schema, dict):
        problem = validate_arguments(schema, arguments)
        assert problem is None or isinstance(problem, str)


def test_properties_that_are_no_object_are_a_problem() -> None:
    for odd in (["a", "b"], [], "a", 3):
        schema = {"type": "object", "properties": odd}
        assert x_mcp_header_problems(schema) == ["inputSchema.properties is not an object"]
        assert header_params(schema) == {}
        assert validate_arguments(schema, {"a": 1}) is None
    nested = {"type": "object", "properties": {"p": {"type": "object", "properties": [1]}}}
    assert x_mcp_header_problems(nested) == ["inputSchema.p.properties is not an object"]
