"""What a handshake session's SSE streams sent, kept for a client that resumes
one with ``Last-Event-ID`` (Streamable HTTP, 2025-03-26 on)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

__all__ = ["ReplayBuffer"]


class ReplayBuffer:
    """The last ``memory`` events of each stream of one session, by stream key, for
    the ``streams_kept`` most recently active streams (those the caller names live,
    such as the GET stream's and those awaiting answers, are never forgotten)."""

    def __init__(self, memory: int, streams_kept: int) -> None:
        self.memory = memory
        self.streams_kept = streams_kept
        # Oldest activity first.
        self._streams: dict[str, deque[tuple[int, bytes]]] = {}

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
                    del self._streams[old]
        else:
            self._streams[key] = events
        events.append((number, chunk))

    def events(self, key: str) -> list[tuple[int, bytes]]:
        """Stream ``key``'s kept events (number, bytes), oldest first."""
        return list(self._streams.get(key, ()))

    def last_number(self, key: str) -> int | None:
        """The number of stream ``key``'s newest kept event."""
        events = self._streams.get(key)
        return events[-1][0] if events else None
