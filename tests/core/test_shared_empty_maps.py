"""A session's request tracker and outbox share one read-only empty map (``NO_ENTRIES``)
until they first record something (a session is made per stateless request, and most
never record): reading it is reading an empty dict, writing to it raises, and the first
record makes a map of the session's own, never shared with another session."""

from __future__ import annotations

from collections import deque

import pytest

from sansio_mcp._outbox import Outbox
from sansio_mcp._requests import NO_ENTRIES, NoEntries, RequestTracker
from sansio_mcp.runtime import Server


def test_the_shared_empty_map_refuses_writes() -> None:
    assert isinstance(NO_ENTRIES, NoEntries) and NO_ENTRIES == {}
    for write in (
        lambda: NO_ENTRIES.__setitem__(1, 2),
        lambda: NO_ENTRIES.setdefault(1, 2),
        lambda: NO_ENTRIES.update({1: 2}),
    ):
        with pytest.raises(TypeError, match="read-only"):
            write()
    with pytest.raises(TypeError, match="read-only"):
        shared = NO_ENTRIES
        shared |= {1: 2}
    # Reading and emptying it are an empty dict's.
    assert NO_ENTRIES.get(1) is None and NO_ENTRIES.pop(1, None) is None and 1 not in NO_ENTRIES
    NO_ENTRIES.clear()
    assert NO_ENTRIES == {}


def test_a_tracker_and_an_outbox_make_their_own_maps_on_first_record() -> None:
    tracker, other = RequestTracker(deque()), RequestTracker(deque())
    assert tracker._outgoing is NO_ENTRIES and tracker._progress_tokens is NO_ENTRIES
    tracker.ask_progress(7)
    assert tracker._progress_tokens == {7: 7} and other._progress_tokens is NO_ENTRIES
    outbox = Outbox()
    assert outbox._batch_of is NO_ENTRIES


def test_sessions_made_per_request_share_no_entry() -> None:
    server = Server("s")
    first, second = server.create_session(), server.create_session()
    assert first._requests._outgoing is second._requests._outgoing is NO_ENTRIES
    asked = first.send_request("ping", None, now=0.0, timeout=5.0)
    assert asked in first._requests._outgoing and first.next_deadline() == 5.0
    assert second._requests._outgoing is NO_ENTRIES and second.next_deadline() is None
    assert NO_ENTRIES == {}
