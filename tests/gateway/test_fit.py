"""What an upstream sends, fitted to the revision of the gateway's client: the
revision table that decides it matches the official schemas, what is fitted
validates against the client's revision, and what cannot be fitted is refused by
the session rather than sent."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import LocalProtocolError, ServerSession
from sansio_mcp._versions import ALL_REVISIONS, HANDSHAKE_REVISIONS, REVISIONS
from sansio_mcp_apps.gateway import fit_input_request, fit_tool_result
from sansio_mcp_testing.schemas import OfficialSchema, load_schema, missing_schema_message


def _schema(revision: str) -> OfficialSchema:
    schema = load_schema(revision)
    assert schema is not None, missing_schema_message(revision)
    return schema


def _array_fields(schema: OfficialSchema) -> bool:
    """Whether the revision's elicitation forms have a field that is an array."""
    primitive = schema.defs.get("PrimitiveSchemaDefinition")
    pending, seen = [primitive] if primitive else [], set()
    while pending:
        node = pending.pop()
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                pending.append(schema.defs[name])
            continue
        if node.get("properties", {}).get("type", {}).get("const") == "array":
            return True
        pending.extend(node.get("anyOf", []) + node.get("oneOf", []))
    return False


@pytest.mark.parametrize("revision", ALL_REVISIONS)
def test_the_revision_table_matches_the_schema(revision: str) -> None:
    schema, table = _schema(revision), REVISIONS[revision]
    assert table.content_types == schema.content_types
    assert table.multi_select_elicitation == _array_fields(schema)
    modes: set[str] = set()
    if "ElicitRequest" in schema.defs:
        modes.add("form")
    if "ElicitRequestURLParams" in schema.defs:
        modes.add("url")
    assert table.elicitation_modes == modes
    sampling = (
        schema.defs.get("CreateMessageRequestParams")
        or (schema.defs["CreateMessageRequest"]["properties"]["params"])
    )
    assert table.sampling_tools == ("tools" in sampling["properties"])


_DATA = st.binary(min_size=1, max_size=12).map(lambda b: b.hex())
_BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=20)),
    st.builds(lambda d: {"type": "image", "data": d, "mimeType": "image/png"}, _DATA),
    st.builds(lambda d: {"type": "audio", "data": d, "mimeType": "audio/wav"}, _DATA),
    st.builds(
        lambda n, name, desc: {
            "type": "resource_link",
            "uri": f"demo://resource/{n}",
            "name": name,
            **({"description": desc} if desc is not None else {}),
        },
        st.integers(0, 99),
        st.text(min_size=1, max_size=10),
        st.none() | st.text(max_size=10),
    ),
    st.builds(
        lambda t: {"type": "resource", "resource": {"uri": "demo://r", "text": t}},
        st.text(max_size=10),
    ),
)


@given(content=st.lists(_BLOCKS, max_size=6), is_error=st.booleans())
def test_a_fitted_result_is_valid_in_every_revision(
    content: list[dict[str, Any]], is_error: bool
) -> None:
    result = {"content": content, "isError": is_error}
    for name in HANDSHAKE_REVISIONS:
        revision, schema = REVISIONS[name], _schema(name)
        fitted = fit_tool_result(result, revision)
        assert schema.is_valid("CallToolResult", fitted), (name, fitted)
        assert len(fitted["content"]) == len(content)
        for before, after in zip(content, fitted["content"], strict=True):
            if before["type"] in revision.content_types:
                assert after == before  # what the client knows passes untouched
            else:
                assert after["type"] == "text"
                if before["type"] == "resource_link":
                    assert before["uri"] in after["text"]
    assert fit_tool_result(result, REVISIONS["2025-11-25"]) is result


#: An elicitation as server-everything asks it (2025-11-25): a default, a titled
#: single-select, optional multi-selects, and one required multi-select variant below.
FORM: dict[str, Any] = {
    "mode": "form",
    "message": "Please fill in",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "default": "Ada"},
            "hero": {
                "type": "string",
                "title": "Hero",
                "oneOf": [{"const": "h1", "title": "Superman"}, {"const": "h2", "title": "Batman"}],
            },
            "colour": {"type": "string", "enum": ["red", "blue"]},
            "instruments": {
                "type": "array",
                "items": {"type": "string", "enum": ["Guitar", "Piano"]},
            },
        },
        "required": ["name"],
    },
}


def _elicitation_is_valid(revision: str, params: dict[str, Any]) -> bool:
    return _schema(revision).is_valid(
        "ElicitRequest",
        {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": params},
    )


def _session(
    revision: str, elicitation: dict[str, Any], sampling: dict[str, Any] | None = None
) -> ServerSession:
    capabilities: dict[str, Any] = {"elicitation": elicitation}
    if sampling is not None:
        capabilities["sampling"] = sampling
    session = ServerSession(server_info={"name": "s", "version": "1"}, capabilities={})
    session.receive_message(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": revision,
                "capabilities": capabilities,
                "clientInfo": {"name": "c", "version": "1"},
            },
        }
    )
    session.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    session.messages_to_send()
    return session


def test_a_form_is_fitted_to_2025_06_18() -> None:
    assert not _elicitation_is_valid("2025-06-18", FORM)
    fitted = fit_input_request("elicitation/create", FORM, REVISIONS["2025-06-18"])
    assert _elicitation_is_valid("2025-06-18", fitted)
    fields = fitted["requestedSchema"]["properties"]
    assert "mode" not in fitted and "instruments" not in fields  # optional: left out
    assert fields["hero"] == {
        "type": "string",
        "title": "Hero",
        "enum": ["h1", "h2"],
        "enumNames": ["Superman", "Batman"],
    }
    assert fields["name"] == FORM["requestedSchema"]["properties"]["name"]
    _session("2025-06-18", {}).send_request("elicitation/create", fitted)  # the gate agrees
    # 2025-11-25 takes the form as it is.
    assert fit_input_request("elicitation/create", FORM, REVISIONS["2025-11-25"]) is FORM
    assert _elicitation_is_valid("2025-11-25", FORM)


def test_what_cannot_be_fitted_is_refused_by_the_session() -> None:
    required = {
        **FORM,
        "requestedSchema": {**FORM["requestedSchema"], "required": ["name", "instruments"]},
    }
    fitted = fit_input_request("elicitation/create", required, REVISIONS["2025-06-18"])
    assert "instruments" in fitted["requestedSchema"]["properties"]  # required: kept
    with pytest.raises(LocalProtocolError, match="'instruments' is a multi-select"):
        _session("2025-06-18", {}).send_request("elicitation/create", fitted)
    url = {"mode": "url", "message": "Open", "url": "https://example.com/", "elicitationId": "e"}
    assert fit_input_request("elicitation/create", url, REVISIONS["2025-06-18"]) == url
    with pytest.raises(LocalProtocolError, match="revision 2025-06-18 does not have it"):
        _session("2025-06-18", {}).send_request("elicitation/create", url)
    with pytest.raises(LocalProtocolError, match="the client did not declare it"):
        _session("2025-11-25", {"form": {}}).send_request("elicitation/create", url)
    _session("2025-11-25", {"url": {}}).send_request("elicitation/create", url)


_TEXT = {"type": "text", "text": "hi"}
_AUDIO = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
_IMAGE = {"type": "image", "data": "AAAA", "mimeType": "image/png"}


def _sampling_is_valid(revision: str, params: dict[str, Any]) -> bool:
    return _schema(revision).is_valid(
        "CreateMessageRequest",
        {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": params},
    )


@given(
    blocks=st.lists(
        st.lists(st.sampled_from([_TEXT, _IMAGE]), max_size=3) | st.sampled_from([_TEXT, _IMAGE]),
        min_size=1,
        max_size=4,
    )
)
def test_sampling_content_lists_become_one_message_per_block(blocks: list[Any]) -> None:
    """2025-11-25's list of blocks in one message is, before it, the same blocks as
    messages of their own, in order, each valid and sent by the session."""
    params = {
        "messages": [{"role": "user", "content": b} for b in blocks],
        "maxTokens": 5,
    }
    flat = [b for c in blocks for b in (c if isinstance(c, list) else [c])]
    for name in HANDSHAKE_REVISIONS:
        fitted = fit_input_request("sampling/createMessage", params, REVISIONS[name])
        if REVISIONS[name].sampling_tools:
            assert fitted is params
            continue
        assert [m["content"] for m in fitted["messages"]] == flat
        assert {m["role"] for m in fitted["messages"]} <= {"user"}
        assert _sampling_is_valid(name, fitted), (name, fitted)
        _session(name, {}, {}).send_request("sampling/createMessage", fitted)


def test_sampling_the_client_cannot_take_is_refused_by_the_session() -> None:
    """Tools only go to a 2025-11-25 client that declared sampling.tools (the spec's
    MUST NOT); audio not to 2024-11-05; tool blocks and lists not before 2025-11-25."""
    tools = {
        "messages": [{"role": "user", "content": _TEXT}],
        "maxTokens": 5,
        "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
    }
    for name in ("2024-11-05", "2025-03-26", "2025-06-18"):
        fitted = fit_input_request("sampling/createMessage", tools, REVISIONS[name])
        with pytest.raises(LocalProtocolError, match=rf"sampling\.tools \(revision {name}\)"):
            _session(name, {}, {"tools": {}}).send_request("sampling/createMessage", fitted)
    with pytest.raises(LocalProtocolError, match=r"did not declare sampling\.tools"):
        _session("2025-11-25", {}, {}).send_request("sampling/createMessage", tools)
    _session("2025-11-25", {}, {"tools": {}}).send_request("sampling/createMessage", tools)
    audio = {"messages": [{"role": "user", "content": _AUDIO}], "maxTokens": 5}
    assert not _sampling_is_valid("2024-11-05", audio) and _sampling_is_valid("2025-03-26", audio)
    with pytest.raises(LocalProtocolError, match="'audio' content"):
        _session("2024-11-05", {}, {}).send_request("sampling/createMessage", audio)
    _session("2025-03-26", {}, {}).send_request("sampling/createMessage", audio)
    use = {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}
    loop = {"messages": [{"role": "assistant", "content": use}], "maxTokens": 5}
    with pytest.raises(LocalProtocolError, match="'tool_use' content"):
        _session("2025-06-18", {}, {}).send_request("sampling/createMessage", loop)
    _session("2025-11-25", {}, {"tools": {}}).send_request("sampling/createMessage", loop)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
_SHAPED = st.fixed_dictionaries(
    {},
    optional={
        "mode": _JSON | st.sampled_from(["form", "url"]),
        "requestedSchema": _JSON
        | st.fixed_dictionaries(
            {"properties": _JSON | st.dictionaries(st.text(max_size=3), _JSON, max_size=3)},
            optional={"required": _JSON},
        ),
        "messages": _JSON | st.lists(st.fixed_dictionaries({"content": _JSON}), max_size=3),
    },
)


@given(
    method=st.sampled_from(["elicitation/create", "sampling/createMessage", "roots/list"]),
    params=_JSON | _SHAPED,
)
def test_fitting_what_an_upstream_sent_never_crashes(method: str, params: Any) -> None:
    """Whatever an upstream asks with, fitting it gives something (the session then
    refuses what is invalid) rather than an exception in the gateway."""
    for name in HANDSHAKE_REVISIONS:
        fit_input_request(method, params, REVISIONS[name])


def test_sampling_with_tools_needs_the_clients_sampling_tools() -> None:
    """2025-11-25: a server must not send tool-enabled sampling to a client that did
    not declare ``sampling.tools``; before 2025-11-25 no client can declare it."""
    tools = [{"name": "t", "inputSchema": {"type": "object"}}]
    asked = {"messages": [], "maxTokens": 10, "tools": tools}

    def session(revision: str, sampling: dict[str, Any]) -> ServerSession:
        made = _session(revision, {})
        made.peer_capabilities = {"sampling": sampling}
        return made

    session("2025-11-25", {"tools": {}}).send_request("sampling/createMessage", asked)
    for revision, sampling in (("2025-11-25", {}), ("2025-06-18", {"tools": {}})):
        with pytest.raises(LocalProtocolError, match=r"did not declare sampling\.tools"):
            session(revision, sampling).send_request("sampling/createMessage", asked)
    plain = {"messages": [], "maxTokens": 10}
    session("2025-06-18", {}).send_request("sampling/createMessage", plain)
