"""The requestState key ring: the first key seals, every key unseals (rotation keeps
calls in flight), a sealed state is its principal's alone and expires; and the key
file format of ``--state-key-file``."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import (
    MIN_STATE_KEY_BYTES,
    ErrorCode,
    InvalidParams,
    RequestReceived,
    RequestStateSealer,
    parse_state_keys,
)
from sansio_mcp._events import RequestMeta
from sansio_mcp.auth import AccessToken
from sansio_mcp.runtime import Server

from .helpers import STATELESS, HarnessContext, meta
from .test_stateless_features import mrtr_app

keys = st.binary(min_size=32, max_size=64)
json_data = st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=4)
principals = st.none() | st.text(max_size=20)


def refusal(sealer: RequestStateSealer, token: Any, **options: Any) -> str:
    options.setdefault("now", 0.0)
    with pytest.raises(InvalidParams) as error:
        sealer.unseal(token, **options)
    assert error.value.code == ErrorCode.INVALID_PARAMS
    return error.value.message


@given(old=keys, new=keys, data=json_data, principal=principals)
def test_a_rotated_ring_opens_what_the_old_key_sealed(
    old: bytes, new: bytes, data: Any, principal: str | None
) -> None:
    if old == new:
        return
    before = RequestStateSealer([old])
    during = RequestStateSealer([new, old])
    after = RequestStateSealer([new])
    sealed_before = before.seal(data, now=0.0, principal=principal)
    assert during.unseal(sealed_before, now=1.0, principal=principal) == data
    # The new ring seals with the new key, which the old ring does not hold...
    sealed_during = during.seal(data, now=0.0, principal=principal)
    assert sealed_during.split(".")[0] != sealed_before.split(".")[0]
    assert "integrity" in refusal(before, sealed_during, principal=principal)
    # ...while every replica already rotated to [new, old] or [new] opens it.
    assert after.unseal(sealed_during, now=1.0, principal=principal) == data
    # Once the old key is dropped, what it sealed is refused, precisely.
    message = refusal(after, sealed_before, principal=principal)
    assert "does not hold" in message and "key ring" in message


@given(key=keys, data=json_data, position=st.integers(min_value=0), char=st.characters())
def test_tampering_fails_or_changes_nothing(
    key: bytes, data: Any, position: int, char: str
) -> None:
    sealer = RequestStateSealer([key, secrets.token_bytes(32)])
    token = sealer.seal(data, now=0.0, principal="subject:alice")
    i = position % len(token)
    tampered = token[:i] + char + token[i + 1 :]
    try:
        opened = sealer.unseal(tampered, now=0.0, principal="subject:alice")
    except InvalidParams as error:
        assert error.code == ErrorCode.INVALID_PARAMS
    else:
        assert opened == data  # a no-op edit, or one base64 ignores


@given(key=keys, data=json_data, sealed_for=principals, presented_by=principals)
def test_a_state_is_its_principals_alone(
    key: bytes, data: Any, sealed_for: str | None, presented_by: str | None
) -> None:
    sealer = RequestStateSealer(key)
    token = sealer.seal(data, now=0.0, principal=sealed_for)
    if sealed_for == presented_by:
        assert sealer.unseal(token, now=0.0, principal=presented_by) == data
    else:
        message = refusal(sealer, token, principal=presented_by)
        assert message == (
            "requestState was sealed for another principal: only the one whose request "
            "made it may continue it"
        )


@given(key=keys, ttl=st.floats(1, 1e6), now=st.floats(0, 2e9), late=st.floats(1e-3, 1e6))
def test_a_state_expires(key: bytes, ttl: float, now: float, late: float) -> None:
    sealer = RequestStateSealer([key], ttl=ttl)
    token = sealer.seal({"a": 1}, now=now, principal="anonymous")
    assert sealer.unseal(token, now=now + ttl, principal="anonymous") == {"a": 1}
    if now + ttl + late > now + ttl:  # not lost to float rounding
        assert "expired" in refusal(sealer, token, now=now + ttl + late, principal="anonymous")


def test_the_token_names_its_key_without_revealing_it() -> None:
    key = bytes(range(32))
    sealer = RequestStateSealer([key, b"k" * 32])
    kid, _, _ = sealer.seal({}, now=0.0).split(".")
    assert sealer.key_ids[0] == kid and len(kid) == 11
    for text in (key.hex(), base64.b64encode(key).decode(), base64.urlsafe_b64encode(key).decode()):
        assert text.rstrip("=")[:8] not in kid


def test_a_ring_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="empty"):
        RequestStateSealer([])
    with pytest.raises(ValueError, match="at least 16 bytes"):
        RequestStateSealer([b"k" * 32, b"short"])
    with pytest.raises(ValueError, match="key 2 repeats"):
        RequestStateSealer([b"k" * 32, b"k" * 32])
    with pytest.raises(TypeError, match="key 1 is not bytes"):
        RequestStateSealer(["text"])  # type: ignore[list-item]
    # The single-key form of before still works.
    one = RequestStateSealer(b"k" * 16, ttl=5.0)
    assert one.unseal(one.seal([1], now=0.0), now=5.0) == [1]


# ------------------------------------------------------------------------- key file


@given(ring=st.lists(keys, min_size=1, max_size=4, unique=True), data=st.data())
def test_a_key_file_reads_back_in_every_encoding(ring: list[bytes], data: Any) -> None:
    encoders = st.sampled_from(
        [
            bytes.hex,
            lambda k: k.hex().upper(),
            lambda k: base64.b64encode(k).decode(),
            lambda k: base64.b64encode(k).decode().rstrip("="),
            lambda k: base64.urlsafe_b64encode(k).decode(),
            lambda k: base64.urlsafe_b64encode(k).decode().rstrip("="),
        ]
    )
    lines = ["# the state key ring: the first seals", ""]
    for key in ring:
        lines.append("  " + data.draw(encoders)(key) + "\t")
        lines.append(data.draw(st.sampled_from(["", "# retired soon", "   "])))
    assert parse_state_keys("\n".join(lines), source="keys.txt") == ring


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "keys.txt: no key"),
        ("# only a comment\n\n", "keys.txt: no key"),
        ("00" * 16, f"keys.txt line 1: the key is 16 bytes; at least {MIN_STATE_KEY_BYTES}"),
        ("# c\nmy secret passphrase, long enough", "keys.txt line 2: not a key in hex or base64"),
        ("a" * 43 + "!", "keys.txt line 1: not a key in hex or base64"),
        ("ab+_" * 11, "keys.txt line 1: not a key in hex or base64"),  # two alphabets
        ("a" * 45, "keys.txt line 1: not a key in hex or base64"),  # impossible length
        ("00" * 32 + "\n\n" + "00" * 32, "keys.txt line 3: the same key as line 1"),
    ],
)
def test_a_bad_key_file_is_refused_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_state_keys(text, source="keys.txt")
    assert str(error.value).startswith(message)
    assert "passphrase" not in str(error.value)  # the line itself (maybe a key) is never quoted


# ----------------------------------------------------------- the server binds states


async def call(
    app: Server, subject: str | None, state: str | None, responses: dict[str, Any]
) -> dict[str, Any]:
    """One 2026-07-28 round of ``two_questions``, as ``subject`` (None: no token)."""
    params: dict[str, Any] = {"name": "two_questions", "arguments": {}}
    if state is not None:
        params["requestState"] = state
    if responses:
        params["inputResponses"] = responses
    params["_meta"] = meta(STATELESS, {"elicitation": {}})
    event = RequestReceived(1, "tools/call", params, None, RequestMeta(STATELESS, params["_meta"]))
    session = app.create_session()
    if subject is not None:
        session.auth = AccessToken("token", subject=subject)
    return await app.handle(HarnessContext(event, session, now=0.0))


def answer(key: str, name: str) -> dict[str, Any]:
    return {key: {"action": "accept", "content": {"name": name}}}


async def test_a_round_sealed_for_one_subject_is_refused_to_another() -> None:
    ring = [b"n" * 32, b"o" * 32]
    app_a, app_b = mrtr_app(state_keys=ring), mrtr_app(state_keys=ring)
    first = await call(app_a, "alice", None, {})
    assert first["resultType"] == "input_required"
    second = await call(app_b, "alice", first["requestState"], answer("input-1", "ann"))
    assert second["resultType"] == "input_required"  # the other replica went on
    with pytest.raises(InvalidParams, match="sealed for another principal"):
        await call(app_b, "bob", second["requestState"], answer("input-2", "bo"))
    with pytest.raises(InvalidParams, match="sealed for another principal"):
        await call(app_b, None, second["requestState"], answer("input-2", "bo"))
    done = await call(app_a, "alice", second["requestState"], answer("input-2", "bo"))
    assert done["content"][0]["text"] == "ann & bo"
    # Without auth, a stateless request is anonymous: any such caller may go on.
    anonymous = await call(app_a, None, None, {})
    again = await call(app_b, None, anonymous["requestState"], answer("input-1", "x"))
    assert again["resultType"] == "input_required"


async def test_a_server_takes_a_key_ring_or_one_key() -> None:
    old, new = b"o" * 32, b"n" * 32
    sealed_old = (await call(mrtr_app(state_key=old), None, None, {}))["requestState"]
    rotated = mrtr_app(state_keys=[new, old])
    assert (await call(rotated, None, sealed_old, answer("input-1", "a")))[
        "resultType"
    ] == "input_required"
    with pytest.raises(InvalidParams, match="integrity"):
        await call(mrtr_app(state_keys=[new]), None, sealed_old, answer("input-1", "a"))
    with pytest.raises(ValueError, match="not both"):
        Server("x", state_key=old, state_keys=[new])
    assert Server("x").stores is None
