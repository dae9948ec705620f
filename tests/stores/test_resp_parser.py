"""The RESP machine: what it encodes parses back, any split of the bytes gives the same
replies, bounds hold, and random bytes give replies or RemoteProtocolError, nothing else."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import LocalProtocolError, RemoteProtocolError
from sansio_mcp.resp import NEED_DATA, RedisError, RESPParser, encode_command


def encode_reply(value: Any) -> bytes:
    """A reference RESP2 encoder for replies (what a server sends)."""
    if value is None:
        return b"$-1\r\n"
    if isinstance(value, RedisError):
        return b"-" + value.message.encode() + b"\r\n"
    if isinstance(value, str):
        return b"+" + value.encode() + b"\r\n"
    if isinstance(value, int):
        return b":%d\r\n" % value
    if isinstance(value, bytes):
        return b"$%d\r\n%s\r\n" % (len(value), value)
    assert isinstance(value, list)
    return b"*%d\r\n" % len(value) + b"".join(encode_reply(item) for item in value)


_line_text = st.text(
    st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20
)
replies = st.recursive(
    st.none()
    | st.binary(max_size=40)
    | st.integers(-(2**63), 2**63 - 1)
    | _line_text
    | _line_text.map(RedisError),
    lambda inner: st.lists(inner, max_size=5),
    max_leaves=30,
)


def parse_all(chunks: list[bytes], parser: RESPParser | None = None) -> list[Any]:
    parser = parser or RESPParser()
    out = []
    for chunk in chunks:
        parser.receive_data(chunk)
        while (reply := parser.next_reply()) is not NEED_DATA:
            out.append(reply)
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(st.lists(replies, max_size=5))
def test_replies_parse_back_to_what_was_encoded(values: list[Any]) -> None:
    assert parse_all([b"".join(encode_reply(v) for v in values)]) == values


@given(st.lists(replies, min_size=1, max_size=5), st.lists(st.integers(0, 10_000), max_size=30))
def test_any_split_of_the_stream_gives_the_same_replies(values: list[Any], cuts: list[int]) -> None:
    data = b"".join(encode_reply(v) for v in values)
    assert parse_all(split(data, cuts)) == parse_all([data]) == values
    assert parse_all([bytes([b]) for b in data]) == values


@given(
    st.lists(st.binary(max_size=30) | st.text(max_size=10) | st.integers(), min_size=1, max_size=6)
)
def test_a_command_parses_as_an_array_of_its_arguments(args: list[Any]) -> None:
    expected = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    assert parse_all([encode_command(*args)]) == [expected]


@given(st.binary(max_size=200), st.lists(st.integers(0, 300), max_size=10))
def test_random_bytes_give_replies_or_a_protocol_error(data: bytes, cuts: list[int]) -> None:
    parser = RESPParser(max_bulk_length=1000, max_array_length=50, max_depth=5, max_line_length=100)
    try:
        parse_all(split(data, cuts), parser)
    except RemoteProtocolError:
        with pytest.raises(RemoteProtocolError):  # broken for good: the caller closes
            parser.next_reply()


@given(
    st.lists(
        st.sampled_from(
            [
                b"*",
                b"$",
                b"%",
                b"~",
                b">",
                b"|",
                b"-1",
                b"1",
                b"2",
                b"0",
                b"\r\n",
                b"+",
                b":",
                b"_",
                b"#t",
                b",",
                b"(",
                b"=",
                b"!",
                b"txt:",
                b"x",
            ]
        ),
        max_size=40,
    )
)
def test_resp_like_noise_gives_replies_or_a_protocol_error(tokens: list[bytes]) -> None:
    try:
        parse_all([b"".join(tokens)], RESPParser(max_depth=4))
    except RemoteProtocolError:
        pass


def test_resp3_types_are_read() -> None:
    data = (
        b"_\r\n#t\r\n#f\r\n,1.5\r\n,inf\r\n(123456789012345678901234567890\r\n"
        b"!21\r\nSYNTAX invalid syntax\r\n=15\r\ntxt:Some string\r\n"
        b"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n*1\r\n:2\r\n~2\r\n:1\r\n:2\r\n"
        b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n"
        b"|1\r\n+key-popularity\r\n%0\r\n:7\r\n"
        b"*2\r\n|1\r\n+x\r\n+y\r\n:1\r\n:2\r\n"
    )
    assert parse_all([data]) == [
        None, True, False, 1.5, float("inf"), 123456789012345678901234567890,
        RedisError("SYNTAX invalid syntax"), b"Some string",
        {"a": 1, b"b": [2]}, [1, 2], [b"message", b"c", b"hi"], 7, [1, 2],
    ]  # fmt: skip


def test_nil_and_empty_aggregates() -> None:
    assert parse_all([b"*-1\r\n*0\r\n$0\r\n\r\n$-1\r\n%0\r\n"]) == [None, [], b"", None, {}]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"?1\r\n", "unknown type byte"),
        (b"$5\r\nabcdefg\r\n", "not followed by CRLF"),
        (b":12a\r\n", "not an integer"),
        (b"*-2\r\n", "length -2"),
        (b"$2000\r\n", "max_bulk_length"),
        (b"*100\r\n", "max_array_length"),
        (b"*1\r\n" * 6, "max_depth"),
        (b"+" + b"x" * 20_000, "max_line_length"),
        (b"\r\n", "empty line"),
        (b"%1\r\n*1\r\n:1\r\n:2\r\n", "aggregate as a key"),
        (b"(" + b"9" * 5000 + b"\r\n", "digits"),
    ],
)
def test_malformed_or_oversized_replies_are_precise_errors(data: bytes, says: str) -> None:
    parser = RESPParser(
        max_bulk_length=1000, max_array_length=50, max_depth=5, max_line_length=10_000
    )
    parser.receive_data(data)
    with pytest.raises(RemoteProtocolError, match=says):
        parser.next_reply()


def test_a_bulk_string_waits_for_all_its_bytes() -> None:
    parser = RESPParser()
    parser.receive_data(b"$10\r\n01234")
    assert parser.next_reply() is NEED_DATA
    parser.receive_data(b"56789\r")
    assert parser.next_reply() is NEED_DATA
    parser.receive_data(b"\n:1\r\n")
    assert parser.next_reply() == b"0123456789"
    assert parser.next_reply() == 1
    assert parser.next_reply() is NEED_DATA


def test_encode_command() -> None:
    assert encode_command("SET", b"k", 5, 1.5) == (
        b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n5\r\n$3\r\n1.5\r\n"
    )
    assert encode_command("ZADD", float("inf")).endswith(b"$4\r\n+inf\r\n")
    for bad in [(), ("SET", True), ("SET", float("nan")), ("SET", None)]:
        with pytest.raises(LocalProtocolError):
            encode_command(*bad)  # type: ignore[arg-type]


def test_error_reply_kind() -> None:
    assert RedisError("WRONGTYPE Operation against a key").kind == "WRONGTYPE"
