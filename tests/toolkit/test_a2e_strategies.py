"""A2E message strategies: valid by construction (they round-trip through the codec)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp_apps.a2e import (
    MCP_MESSAGE_TYPES,
    MESSAGE_TYPES,
    A2EFramer,
    A2EMessage,
    decode,
    decode_text,
    encode,
    encode_line,
)
from sansio_mcp_testing.strategies import a2e_message_types, a2e_messages


@settings(max_examples=300)
@given(a2e_messages())
def test_every_message_round_trips(message: A2EMessage) -> None:
    assert isinstance(message, A2EMessage)
    assert decode_text(encode(message)) == message
    assert decode(json.loads(encode(message))) == message


@settings(max_examples=100)
@given(st.data())
def test_line_framing_round_trips(data: st.DataObject) -> None:
    batch = data.draw(st.lists(a2e_messages(), min_size=1, max_size=4))
    framer = A2EFramer()
    wire = b"".join(encode_line(m) for m in batch)
    assert framer.feed(wire) == batch


def test_every_type_is_offered() -> None:
    assert set(a2e_message_types()) == set(MESSAGE_TYPES)
    assert set(MCP_MESSAGE_TYPES) <= set(a2e_message_types())


@pytest.mark.parametrize("type_name", sorted(MESSAGE_TYPES))
def test_each_type_round_trips(type_name: str) -> None:
    @settings(max_examples=15, database=None)
    @given(a2e_messages([type_name]))
    def round_trip(message: A2EMessage) -> None:
        assert message.type == type_name
        assert decode_text(encode(message)) == message

    round_trip()


@settings(max_examples=50)
@given(a2e_messages(direction="agent", extra=False))
def test_direction_and_extra_knobs(message: A2EMessage) -> None:
    assert type(message).DIRECTION in ("agent", "both")
    assert message.extra == {}


def test_unknown_type_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown A2E"):
        a2e_messages(["no/such/type"])
