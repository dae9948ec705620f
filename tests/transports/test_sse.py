"""The SSE codec: the WHATWG parsing rules, chunking invariance, round trips, limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import NEED_DATA, RemoteProtocolError
from sansio_mcp._sse import SSEEvent, SSEParser, format_sse_comment, format_sse_event


def parse(*chunks: bytes, eof: bool = False) -> tuple[list[SSEEvent], SSEParser]:
    parser = SSEParser()
    events = []
    for chunk in (*chunks, *((b"",) if eof else ())):
        parser.feed(chunk)
        while (event := parser.next_event()) is not NEED_DATA:
            assert isinstance(event, SSEEvent)
            events.append(event)
    return events, parser


def test_fields_comments_and_multiline_data() -> None:
    events, parser = parse(
        b": keep-alive\n"
        b"event: message\nid: 7\nretry: 1500\ndata: first\ndata:second\ndata\n\n"
        b'data: {"a": 1}\n\n'
    )
    assert events == [
        SSEEvent("first\nsecond\n", "message", "7", 1500),
        SSEEvent('{"a": 1}', "message", "7", 1500),
    ]
    assert parser.last_event_id == "7" and parser.retry == 1500


def test_bom_and_every_line_ending() -> None:
    events, _ = parse("\ufeffevent: endpoint\rdata: /messages?x=1\r\n\rdata: b\n\n".encode())
    assert [(e.event, e.data) for e in events] == [("endpoint", "/messages?x=1"), ("message", "b")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    events, _ = parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n")
    assert [e.data for e in events] == ["a", "b"]


def test_priming_event_sets_id_without_dispatching() -> None:
    events, parser = parse(b"id: stream-1:0\ndata:\n\n", b"id: stream-1:1\ndata: x\n\n")
    assert [(e.id, e.data) for e in events] == [("stream-1:0", ""), ("stream-1:1", "x")]
    events, parser = parse(b"id: prime\n\n")
    assert events == [] and parser.last_event_id == "prime"


def test_invalid_retry_and_nul_id_are_ignored() -> None:
    _, parser = parse(b"retry: 10s\nid: a\0b\ndata: x\n\n")
    assert parser.retry is None and parser.last_event_id is None


def test_unterminated_event_is_dropped_at_eof() -> None:
    events, _ = parse(b"data: complete\n\ndata: half", eof=True)
    assert [e.data for e in events] == ["complete"]


def test_line_and_event_limits() -> None:
    parser = SSEParser(max_line_size=16)
    with pytest.raises(RemoteProtocolError, match="line exceeds"):
        parser.feed(b"data: " + b"x" * 32)
    parser = SSEParser(max_event_size=10)
    with pytest.raises(RemoteProtocolError, match="event exceeds"):
        parser.feed(b"data: 123456\ndata: 123456\n")


def test_serializer_rejects_line_breaks_in_event_and_id() -> None:
    with pytest.raises(ValueError):
        format_sse_event("x", event="a\nb")
    with pytest.raises(ValueError):
        format_sse_event("x", id="1\r")


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=40)
_events = st.lists(
    st.tuples(
        _text,
        st.none()
        | st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=10),
        st.none() | st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=10),
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(_events, st.data())
def test_round_trip_and_chunking_invariance(
    events: list[tuple[str, str | None, str | None]], data: st.DataObject
) -> None:
    wire = format_sse_comment("hello") + b"".join(
        format_sse_event(text, event=name, id=ident) for text, name, ident in events
    )
    whole, _ = parse(wire)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    pieces = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True) if a < b]
    chunked, _ = parse(*pieces)
    assert chunked == whole
    expected_data = [t.replace("\r\n", "\n").replace("\r", "\n") for t, _, _ in events]
    assert [e.data for e in whole] == expected_data
    assert [e.event for e in whole] == [n if n else "message" for _, n, _ in events]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(blob: bytes) -> None:
    parser = SSEParser(max_line_size=64, max_event_size=128)
    try:
        parser.feed(blob)
        parser.feed(b"")
    except RemoteProtocolError:
        pass


def test_an_event_cut_off_before_its_blank_line_does_not_move_the_last_event_id() -> None:
    """Last-Event-ID must name an event the client got whole: resuming after an id
    whose event was cut off would lose that event."""
    events, parser = parse(b"id: s-1\ndata: 1\n\nid: s-2\ndata: 2\n", eof=True)
    assert [e.id for e in events] == ["s-1"]
    assert parser.last_event_id == "s-1"
    _, parser = parse(b"id: s-1\ndata: 1\n\nid: s-2\n\n")  # an id alone still counts, whole
    assert parser.last_event_id == "s-2"


@settings(max_examples=200, deadline=None)
@given(
    ids=st.lists(st.from_regex(r"[a-z0-9-]{1,6}", fullmatch=True), min_size=1, max_size=5),
    cut=st.integers(min_value=0, max_value=200),
)
def test_last_event_id_is_the_last_whole_events_id(ids: list[str], cut: int) -> None:
    wire = b"".join(format_sse_event(str(n), id=i) for n, i in enumerate(ids))
    cut = min(cut, len(wire))
    events, parser = parse(wire[:cut], eof=True)
    assert parser.last_event_id == (events[-1].id if events else None)


def test_long_lines_and_many_lines_are_read_in_linear_time() -> None:
    """In a child process, bounded: a 3 MB line arriving 8 bytes at a time, and a
    million and a half lines in one piece (each was quadratic before: minutes)."""
    import subprocess
    import sys

    script = (
        "from sansio_mcp._sse import SSEParser\n"
        "p = SSEParser(max_line_size=4_000_000)\n"
        "piece = b'x' * 8\n"
        "p.feed(b'data: ')\n"
        "for _ in range(375_000): p.feed(piece)\n"
        "p.feed(b'\\n\\n')\n"
        "assert len(p.next_event().data) == 3_000_000\n"
        "q = SSEParser()\n"
        "q.feed(b': keep-alive\\n' * 1_500_000 + b'data: end\\n\\n')\n"
        "assert q.next_event().data == 'end'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
