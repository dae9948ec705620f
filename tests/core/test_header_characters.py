"""The mirrored headers' character rules (SEP-2243), as the spec words them, against
the library on any text: a value goes out as it is only when it is tab and visible
ASCII without surrounding blanks, otherwise base64 that decodes back to it; a
received header holding a control character other than tab is refused."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp._http_headers import (
    decode_header_value,
    encode_header_value,
    validate_request_headers,
)
from sansio_mcp._versions import META_PROTOCOL_VERSION

#: Text rich in the characters the rules are about (lone surrogates left out: UTF-8
#: cannot carry them; their own tests are below).
TEXT = st.text(
    st.one_of(
        st.sampled_from("\t\n\r\x00\x1f\x7f\x80 ~=?"),
        st.characters(exclude_categories=("Cs",)),
        st.characters(max_codepoint=0x7F),
    ),
    max_size=20,
)


def _plain(value: str) -> bool:
    return (
        all(c == "\t" or 0x20 <= ord(c) <= 0x7E for c in value)
        and value == value.strip(" \t")
        # Nor does it look like the base64 form: "=?base64?" ... "?=".
        and not (value.startswith("=?base64?") and value[9:].endswith("?="))
    )


@given(TEXT)
def test_a_value_is_sent_as_it_is_only_when_plain(value: str) -> None:
    sent = encode_header_value(value)
    assert (sent == value) is _plain(value)
    if not _plain(value):
        assert sent.startswith("=?base64?") and decode_header_value(sent) == value


@given(TEXT)
def test_a_control_character_in_a_header_is_refused(raw: str) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "t", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}},
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": raw}
    mismatch = validate_request_headers(headers, message)
    control = any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in raw)
    refused = mismatch is not None and "invalid characters" in mismatch.message
    assert refused is control
    if raw == "t":
        assert mismatch is None


#: Text that holds at least one lone surrogate, as a JSON "\\ud800" escape yields.
WITH_SURROGATE = st.tuples(TEXT, st.characters(categories=("Cs",)), TEXT).map("".join)


@given(WITH_SURROGATE)
def test_a_lone_surrogate_is_encoded_without_error_and_never_decodes_as_text(
    value: str,
) -> None:
    sent = encode_header_value(value)
    assert sent.startswith("=?base64?") and sent.isascii()
    try:
        decode_header_value(sent)
    except ValueError:
        return
    raise AssertionError("a lone surrogate decoded as UTF-8 text")


@given(WITH_SURROGATE)
def test_a_body_name_with_a_lone_surrogate_is_a_header_mismatch_not_a_crash(name: str) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}},
    }
    for mcp_name in (encode_header_value(name), "t", "=?base64?dA==?="):
        headers = {
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": mcp_name,
        }
        mismatch = validate_request_headers(headers, message)
        assert mismatch is not None and "Mcp-Name" in mismatch.message
