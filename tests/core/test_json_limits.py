"""The nesting limit of ``_json.loads``, checked before the parser runs.

Brackets inside strings do not count, and an unterminated string hides what
follows it (a parser never reads past it), so the check can only ever count
less than a parser would meet, never more: a message the parser could take is
never refused as too deep, and a hostile one is refused in linear time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import RemoteProtocolError, _json

_values = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(alphabet='[]{}"\\ab', max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=500, deadline=None)
@given(value=_values)
def test_the_depth_of_a_json_text_is_its_values_depth(value: Any) -> None:
    text = json.dumps(value)
    assert _json.nesting_depth(text) == _depth(value)


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet='[]{}"\\ a,:', max_size=60))
def test_the_depth_check_never_counts_more_than_a_parser_meets(text: str) -> None:
    """On any text, valid or not: the depth counted is at most the brackets a
    parser would open, which the same count without strings bounds from above."""
    depth = _json.nesting_depth(text)
    assert depth >= 0
    assert depth <= text.count("[") + text.count("{")


@pytest.mark.parametrize("stdlib", [False, True])
@pytest.mark.parametrize("tail", [b'"' + b'\\"' * 50_000, b'"' + b"\\" * 100_001, b'"abc' * 25_000])
def test_a_deep_unterminated_string_is_refused_at_once(tail: bytes, stdlib: bool) -> None:
    """Many brackets, then a string that never ends: a precise error, in time
    linear in the input (the old check took minutes for 100 KB of this)."""
    data = b"[" * 65 + tail
    loads = _json.stdlib_loads if stdlib else _json.loads
    with pytest.raises(RemoteProtocolError, match="nests deeper than 64"):
        loads(data)


def test_a_megabytes_long_hostile_line_does_not_hang_a_session() -> None:
    """In a child process, bounded: 4 MB of the hostile line through a session."""
    script = (
        "from sansio_mcp import ServerSession\n"
        "s = ServerSession(capabilities={})\n"
        "s.receive_data(b'[' * 65 + b'\"' + b'\\\\\"' * 2_000_000 + b'\\n')\n"
        "print(type(s.next_event()).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ProtocolViolation"


@pytest.mark.parametrize("data", [bytearray(b'{"a":[1]}'), memoryview(b'{"a":[1]}')])
def test_loads_takes_any_bytes_like_input(data: bytearray | memoryview) -> None:
    assert _json.loads(data) == {"a": [1]}


def _safe_by_the_whole_text(data: bytes, max_depth: int) -> bool:
    """The fast path's safety check read off all of ``data`` (as it was first written)."""
    return (
        data.count(b"[") + data.count(b"{") <= max_depth
        and data.translate(_json._DIGIT_CLASSES).find(_json._LONG_DIGIT_RUN) < 0
    )


_JSONISH = st.lists(
    st.sampled_from([b"{", b"[", b"}", b"]", b",", b'"', b"-", b" ", b"a", b"1", b"9" * 7]),
    max_size=60,
).map(b"".join)


@settings(max_examples=500)
@given(st.one_of(_JSONISH, st.binary(max_size=80)), st.integers(0, 12))
def test_the_fast_path_check_on_the_kept_bytes_is_the_whole_texts(data: bytes, depth: int) -> None:
    """Orjson's safety check reads the short ``kept`` bytes (digits and opening brackets)
    first and ``data`` only for a digit run found there: the same verdict as reading
    ``data`` alone, with numbers far apart that meet in ``kept`` as well."""
    kept = data.translate(None, _json._NOT_DIGIT_OR_OPENING)
    assert _json._fast_path_safe(data, kept, depth) is _safe_by_the_whole_text(data, depth)


def test_numbers_apart_that_meet_once_the_rest_is_deleted_take_the_fast_path() -> None:
    text = json.dumps(list(range(100, 130))).encode()
    kept = text.translate(None, _json._NOT_DIGIT_OR_OPENING)
    assert _json._LONG_DIGIT_RUN in kept.translate(_json._DIGIT_CLASSES)
    assert _json._fast_path_safe(text, kept, 64)
    assert _json.loads(text) == list(range(100, 130))
