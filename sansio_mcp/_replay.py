"""What a handshake session's SSE streams sent, kept for a client that resumes
one with ``Last-Event-ID`` (Streamable HTTP, 2025-03-26 on)."""

from __future__ import annotations

import re
import secrets
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

__all__ = ["EventKeeper", "ReplayBuffer", "is_copy_key", "is_get_key", "new_tag", "split_event_id"]

#: A stream key of one copy of a session among replicas: ``TAG.get`` or ``TAG.sN``.
_COPY_KEY = re.compile(r"[0-9a-f]{8}\.(?:get|s[0-9]+)")


def new_tag() -> str:
    """What begins the stream keys of a new copy of a session among replicas
    (``TAG.``: eight random hex digits and a dot)."""
    return f"{secrets.token_hex(4)}."


def is_copy_key(key: str) -> bool:
    """Whether ``key`` has the shape of a copy's stream key (``TAG.get``, ``TAG.sN``)."""
    return _COPY_KEY.fullmatch(key) is not None


def is_get_key(key: str) -> bool:
    """Whether ``key`` names a session's GET stream (``get``, or a copy's ``TAG.get``
    among replicas) rather than a POST stream (``s3``, ``TAG.s3``)."""
    return key == "get" or (key.endswith(".get") and is_copy_key(key))


def split_event_id(event_id: str) -> tuple[str, int] | None:
    """A ``Last-Event-ID``'s stream key and event number (``KEY-N``); None when it
    is not of that shape."""
    key, dash, number = event_id.rpartition("-")
    if not (dash and number.isascii() and number.isdigit()):
        return None
    return key, int(number)


class EventKeeper(Protocol):
    """Where a handshake session's numbered events also go when replicas share
    sessions (set as :attr:`HandshakeSessions.keeper`; called synchronously, so it
    only queues them for the shared store)."""

    def kept(self, session_id: str, key: str, number: int, chunk: bytes) -> None:
        """Event ``number`` of stream ``key`` of session ``session_id``, as sent."""
        ...


class ReplayBuffer:
    """The last ``memory`` events of each stream of one session, by stream key, for
    the ``streams_kept`` most recently active streams (those the caller names live,
    such as the GET stream's and those awaiting answers, are never forgotten), and
    at most ``max_bytes`` of them all together besides each stream's newest event:
    past it the least recently active streams' older events go first, and a stream's
    newest (a POST stream's answer, most often) stays resumable whatever its size."""

    def __init__(self, memory: int, streams_kept: int, max_bytes: int) -> None:
        self.memory = memory
        self.streams_kept = streams_kept
        self.max_bytes = max_bytes
        #: The bytes of the events kept.
        self.size = 0
        # Oldest activity first.
        self._streams: dict[str, deque[tuple[int, bytes]]] = {}
        # Each stream's newest event number, kept or not (ids never restart).
        self._last: dict[str, int] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._streams

    def __iter__(self) -> Iterator[str]:
        return iter(self._streams)

    def __len__(self) -> int:
        return len(self._streams)

    def remember(
        self, key: str, number: int, chunk: bytes, live: Callable[[], Iterable[str]]
    ) -> None:
        """Keep event ``number`` of stream ``key``; beyond ``streams_kept`` streams,
        forget the least recently active ones, except those ``live()`` names."""
        events = self._streams.pop(key, None)  # re-inserted: the newest activity is last
        if events is None:
            events = deque(maxlen=self.memory)
            self._streams[key] = events
            if len(self._streams) > self.streams_kept:
                keep = set(live())
                for old in [k for k in self._streams if k not in keep and k != key]:
                    if len(self._streams) <= self.streams_kept:
                        break
                    self._forget(old)
        else:
            self._streams[key] = events
        self._last[key] = number
        if len(events) == self.memory:
            if not events:  # memory 0: nothing is kept
                return
            self.size -= len(events[0][1])  # the deque drops it as this one goes in
        events.append((number, chunk))
        self.size += len(chunk)
        if self.size > self.max_bytes:
            self._trim()

    def _forget(self, key: str) -> None:
        self.size -= sum(len(chunk) for _, chunk in self._streams.pop(key))
        self._last.pop(key, None)

    def _trim(self) -> None:
        for events in self._streams.values():
            while len(events) > 1:
                self.size -= len(events.popleft()[1])
                if self.size <= self.max_bytes:
                    return

    def restore(
        self, key: str, events: list[tuple[int, bytes]], live: Callable[[], Iterable[str]]
    ) -> None:
        """Hold ``events`` (number, bytes; oldest first) as stream ``key``'s, in place
        of what was kept of it: another replica's copy numbered them (the shared
        store's list), to be replayed here.  Bounded as :meth:`remember` is."""
        if key in self._streams:
            self._forget(key)
        for number, chunk in events[-self.memory :]:
            self.remember(key, number, chunk, live)

    def events(self, key: str) -> list[tuple[int, bytes]]:
        """Stream ``key``'s kept events (number, bytes), oldest first."""
        return list(self._streams.get(key, ()))

    def last_number(self, key: str) -> int | None:
        """The number of stream ``key``'s newest event (kept, or with ``memory`` 0
        not), None for a stream not known."""
        return self._last.get(key)
