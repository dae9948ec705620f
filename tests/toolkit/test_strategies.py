"""The message strategies validate against the official schemas, every revision,
every kind; their invalid variants do not."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sansio_mcp._versions import ALL_REVISIONS, STATELESS_REVISIONS
from sansio_mcp_testing import strategies
from sansio_mcp_testing.schemas import OfficialSchema, load_schema
from sansio_mcp_testing.strategies import MessageKind, message_kinds

SETTINGS = settings(
    max_examples=10, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)
KINDS = [k for r in ALL_REVISIONS for k in message_kinds(r)]


def _schema(kind: MessageKind, schema_dir: str) -> OfficialSchema:
    schema = load_schema(kind.revision, schema_dir)
    assert schema is not None
    return schema


def _problems(schema: OfficialSchema, kind: MessageKind, message: Any) -> list[str]:
    found = schema.errors("JSONRPCMessage", message) + schema.errors(kind.envelope, message)
    if kind.category == "result" and not isinstance(message, dict):
        return found or ["not an object"]
    payload = message.get("result") if kind.category == "result" else message
    return found + schema.errors(kind.definition, payload)


def test_every_method_of_every_revision_has_kinds() -> None:
    from sansio_mcp._versions import REVISIONS

    for revision, info in REVISIONS.items():
        kinds = message_kinds(revision)
        requests = {k.method for k in kinds if k.category == "request" and k.sender == "client"}
        assert requests == set(info.client_requests)
        assert {
            k.method for k in kinds if k.category == "notification" and k.sender == "server"
        } == set(info.server_notifications)
        assert any(k.category == "error" for k in kinds)
    stateless = message_kinds(STATELESS_REVISIONS[-1], category="result", method="tools/call")
    assert {k.definition for k in stateless} == {"CallToolResult", "InputRequiredResult"}


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_valid_by_construction(kind: MessageKind, schema_dir: str) -> None:
    schema = _schema(kind, schema_dir)

    @SETTINGS
    @given(strategies._kind_strategy(kind, invalid=None, oversize=10, whole=True))
    def check(message: Any) -> None:
        assert not _problems(schema, kind, message), (message, _problems(schema, kind, message))

    check()


@pytest.mark.parametrize("revision", ALL_REVISIONS)
@pytest.mark.parametrize("how", ["wrong_type", "missing_field", "out_of_range", "any"])
def test_invalid_variants_do_not_validate(revision: str, how: str, schema_dir: str) -> None:
    schema = load_schema(revision, schema_dir)
    assert schema is not None
    kinds = [k for k in message_kinds(revision) if strategies._supports(strategies._whole(k), how)]
    assert kinds

    @settings(
        max_examples=50, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        kind = data.draw(st.sampled_from(kinds))
        message = data.draw(strategies._kind_strategy(kind, invalid=how, oversize=10, whole=True))
        assert _problems(schema, kind, message), (kind.name, message)

    check()


@SETTINGS
@given(strategies.messages("2025-06-18", invalid="oversized", oversize=5000))
def test_oversized_strings_are_oversized(message: Any) -> None:
    import json

    assert len(json.dumps(message, ensure_ascii=False)) >= 5000


@SETTINGS
@given(strategies.requests("2026-07-28"))
def test_stateless_requests_carry_meta(message: Any) -> None:
    meta = message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert isinstance(meta["io.modelcontextprotocol/clientCapabilities"], dict)


@SETTINGS
@given(strategies.results("2026-07-28", "tools/call", input_required=True))
def test_mrtr_input_required_results(result: Any) -> None:
    assert result["resultType"] == "input_required"
    for request in result["inputRequests"].values():
        assert request["method"] in ("sampling/createMessage", "roots/list", "elicitation/create")


def test_public_api_shapes() -> None:
    assert strategies.errors("2024-11-05") is not None
    assert strategies.notifications("2025-11-25", sender="server") is not None
    assert strategies.responses("2025-03-26", "tools/list") is not None
    with pytest.raises(ValueError):
        strategies.results("2025-06-18", "ping", invalid="missing_field")
    with pytest.raises(ValueError):
        strategies.messages("1999-01-01")
