"""The handshake sessions one Streamable HTTP server holds, named by
``Mcp-Session-Id``: their streams, their limit and their expiry."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator

from ._exchange import Exchange
from ._jsonrpc import RequestId
from ._outbox import Outgoing
from ._replay import ReplayBuffer
from ._server_session import ServerSession

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "HandshakeSession",
    "HandshakeSessions",
]

#: Handshake sessions one Streamable HTTP server holds at most.
DEFAULT_MAX_SESSIONS = 10_000
#: Seconds a quiet handshake session lives without a request.
DEFAULT_SESSION_IDLE_TIMEOUT = 30 * 60.0


class HandshakeSession:
    """A handshake session living across HTTP requests."""

    def __init__(
        self, session_id: str, session: ServerSession, memory: int, streams_kept: int
    ) -> None:
        self.id = session_id
        self.session = session
        #: The stream each unanswered request's messages go on.
        self.streams: dict[RequestId, Exchange] = {}
        self.get_stream: Exchange | None = None
        #: Messages for the GET stream while none is open: the newest ``memory`` of
        #: them (a session nobody listens to must not grow without end).
        self.backlog: deque[Outgoing] = deque(maxlen=memory)
        self.replay = ReplayBuffer(memory, streams_kept)
        self.stream_count = 0

    def unmap(self, exchange: Exchange) -> None:
        """Forget that ``exchange`` is the stream of any of the session's requests."""
        for request_id in [r for r, ex in self.streams.items() if ex is exchange]:
            del self.streams[request_id]

    def live_streams(self) -> set[str]:
        """Keys of the streams whose events must stay resumable: the GET stream's,
        and those of requests still unanswered."""
        return {"get", *(ex.stream_key for ex in self.streams.values())}

    def remember(self, key: str, number: int, chunk: bytes) -> None:
        """Keep event ``number`` of stream ``key`` for resumption."""
        self.replay.remember(key, number, chunk, self.live_streams)

    @property
    def quiet(self) -> bool:
        """No request awaits its answer and no stream is open."""
        open_get = self.get_stream is not None and not self.get_stream.finished
        return not open_get and not any(not ex.finished for ex in self.streams.values())

    def end(self) -> None:
        """Close the session and its streams."""
        self.session.close()
        for exchange in {*self.streams.values(), *([self.get_stream] if self.get_stream else [])}:
            exchange.end()


class HandshakeSessions:
    """The live handshake sessions, by id and by session, with their last activity:
    at most ``max_sessions`` of them, each ended after ``idle_timeout`` seconds quiet."""

    def __init__(self, max_sessions: int, idle_timeout: float | None) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._by_id: dict[str, HandshakeSession] = {}
        self._by_session: dict[int, HandshakeSession] = {}
        # Session ids by last activity, least recent first (for the limit and expiry).
        self._activity: OrderedDict[str, float] = OrderedDict()
        self._now: float | None = None

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[HandshakeSession]:
        return iter(list(self._by_id.values()))

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(self._by_id)

    def get(self, session_id: str) -> HandshakeSession | None:
        return self._by_id.get(session_id)

    def of(self, session: ServerSession) -> HandshakeSession | None:
        """The handshake session ``session`` is, if it is a live one."""
        return self._by_session.get(id(session))

    def add(self, state: HandshakeSession) -> None:
        self._by_id[state.id] = state
        self._by_session[id(state.session)] = state
        self.touch(state.id)

    def touch(self, session_id: str) -> None:
        """``session_id`` is active now."""
        self._activity[session_id] = self._now or 0.0
        self._activity.move_to_end(session_id)

    def expire_idle(self, now: float) -> None:
        """Tell the time (seconds, any monotonic clock): sessions quiet for longer
        than :attr:`idle_timeout` end."""
        self._now = now
        timeout = self.idle_timeout
        if timeout is None:
            return
        while self._activity:
            session_id, last = next(iter(self._activity.items()))
            if now - last <= timeout:
                return
            state = self._by_id.get(session_id)
            if state is None or state.quiet:
                self.end(session_id)
                self._activity.pop(session_id, None)
            else:
                self.touch(session_id)  # a stream or request is open: it is not idle

    def make_room(self) -> bool:
        """Room for one more session: at the limit, the least recently active quiet
        one ends; False when there is none."""
        if len(self._by_id) < self.max_sessions:
            return True
        for session_id in self._activity:
            state = self._by_id.get(session_id)
            if state is not None and state.quiet:
                self.end(session_id)
                return True
        return False

    def end(self, session_id: str) -> None:
        """End a session: its streams close, later requests naming it get 404."""
        state = self._by_id.pop(session_id, None)
        self._activity.pop(session_id, None)
        if state is None:
            return
        self._by_session.pop(id(state.session), None)
        state.end()
