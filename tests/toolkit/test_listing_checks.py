"""The item-by-item checks behind the listings and tool-schemas properties: URI and
URI-template syntax, and tool schemas judged in their revision's dialect."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp_testing._tool_probes import schema_problem
from sansio_mcp_testing._uris import uri_problem, uri_template_problem

_SEGMENT = st.text("abcXYZ019-._~!$&'()*+,;=:@", min_size=0, max_size=8)
_SCHEMES = st.sampled_from(["file", "https", "test", "demo", "x-y.z+1"])


@given(_SCHEMES, st.lists(_SEGMENT, max_size=4), st.sampled_from(["", "?q=1", "#frag"]))
def test_well_formed_uris_pass(scheme: str, segments: list[str], tail: str) -> None:
    uri = f"{scheme}:///" + "/".join(segments) + tail
    assert uri_problem(uri) is None, uri


@given(_SCHEMES, _SEGMENT, st.sampled_from([" ", '"', "<", ">", "\\", "^", "`", "{", "|", "}"]))
def test_a_character_a_uri_cannot_hold_is_named(scheme: str, segment: str, bad: str) -> None:
    uri = f"{scheme}://host/{segment}{bad}{segment}"
    problem = uri_problem(uri)
    assert problem is not None and repr(bad) in problem


def test_uri_problems_are_precise() -> None:
    assert uri_problem("not a uri") == (
        "no scheme (an absolute URI starts with one, like file: or https:)"
    )
    assert uri_problem("/relative/path") is not None
    assert uri_problem("1http://x") is not None  # a scheme starts with a letter
    assert uri_problem("http://x/%zz") is not None  # not a percent-encoding
    assert uri_problem("http://x/%20") is None
    assert uri_problem("demo://x#a#b") == "more than one '#'"


@given(_SCHEMES, st.lists(st.sampled_from(["", "+", "#", ".", "/", ";", "?", "&"]), max_size=3))
def test_rfc6570_expressions_pass(scheme: str, operators: list[str]) -> None:
    template = f"{scheme}://host" + "".join(
        f"{{{op}v{i},w{i}:3,x{i}*}}" for i, op in enumerate(operators)
    )
    assert uri_template_problem(template) is None, template


def test_uri_template_problems_are_precise() -> None:
    assert "never closed" in (uri_template_problem("file:///{path") or "")
    assert "closes no expression" in (uri_template_problem("file:///a}b") or "")
    assert "reserved" in (uri_template_problem("file:///{=a}") or "")
    assert "no variable name" in (uri_template_problem("file:///{a b}") or "")
    assert "no variable name" in (uri_template_problem("file:///{a:0}") or "")
    assert "no scheme" in (uri_template_problem("{path}/x") or "")
    assert uri_template_problem("{scheme}://host/{+path}") is None


def test_tool_schemas_are_judged_in_their_revisions_dialect() -> None:
    # "items" as a list is draft-07 (tuple validation); 2020-12 wants a schema there.
    tuple_items = {"type": "object", "properties": {"a": {"type": "array", "items": [{}]}}}
    assert schema_problem(tuple_items, "2025-06-18") is None
    assert "items" in (schema_problem(tuple_items, "2025-11-25") or "")
    # its own $schema wins over the revision's default
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **tuple_items}
    assert schema_problem(draft7, "2026-07-28") is None
    assert schema_problem({"type": "object", "minProperties": -1}, "2024-11-05") is not None
    assert schema_problem([], "2025-06-18") == "not an object"
