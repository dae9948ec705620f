"""The handshake sessions one Streamable HTTP server holds, named by
``Mcp-Session-Id``: their streams, their limit and their expiry."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Any

from ._bounds import whole
from ._exchange import Exchange, answered_ids, is_response
from ._jsonrpc import RequestId, is_request_id
from ._outbox import Outgoing
from ._replay import EventKeeper, ReplayBuffer, is_copy_key, is_get_key, new_tag, split_event_id
from ._server_session import ServerSession
from ._sse import format_sse_event, format_sse_message

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_REPLAY_MEMORY",
    "DEFAULT_REPLAY_BYTES",
    "DEFAULT_REPLAY_STREAMS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "HANDSHAKE_HEAD_GRACE",
    "HandshakeSession",
    "HandshakeSessions",
]

#: Handshake sessions one Streamable HTTP server holds at most.
DEFAULT_MAX_SESSIONS = 10_000
#: Seconds a quiet handshake session lives without a request.
DEFAULT_SESSION_IDLE_TIMEOUT = 30 * 60.0
#: Events kept per SSE stream of a handshake session, for ``Last-Event-ID``.
DEFAULT_REPLAY_MEMORY = 256
#: Streams per handshake session whose events are kept (the most recently active).
DEFAULT_REPLAY_STREAMS = 64
#: Bytes of a handshake session's events kept for ``Last-Event-ID`` (all its streams
#: together; among replicas, in the shared store too, and as much of its GET stream's
#: backlog there): 4 MiB, the largest request body a server takes by default, so that
#: an answer of that size stays resumable.
DEFAULT_REPLAY_BYTES = 4 * 1024 * 1024
#: How long (seconds) a POST stream's head waits for the request's first output
#: (see ``STATELESS_HEAD_GRACE``), kept short: a slow request's SSE stream should
#: open (with its priming event, SEP-1699) soon.
HANDSHAKE_HEAD_GRACE = 0.05


class HandshakeSession:
    """A handshake session living across HTTP requests."""

    def __init__(
        self,
        session_id: str,
        session: ServerSession,
        memory: int,
        streams_kept: int,
        max_bytes: int = DEFAULT_REPLAY_BYTES,
    ) -> None:
        self.id = session_id
        self.session = session
        #: The stream each unanswered request's messages go on.
        self.streams: dict[RequestId, Exchange] = {}
        self.get_stream: Exchange | None = None
        #: Messages for the GET stream while none is open: the newest ``memory`` of
        #: them, ``max_bytes`` of them at most (a session nobody listens to must not
        #: grow without end); added by :meth:`hold`.
        self.backlog: deque[Outgoing] = deque(maxlen=memory)
        #: The bytes of :attr:`backlog`'s messages.
        self.backlog_bytes = 0
        self._backlog_max_bytes = max_bytes
        self.replay = ReplayBuffer(memory, streams_kept, max_bytes)
        self.stream_count = 0
        #: The client's ``initialize`` params, which replicas replay to adopt the session.
        self.init_params: dict[str, Any] = {}
        #: What begins this copy's stream keys: empty on one process; among replicas
        #: a random ``TAG.`` of its own, so that no two copies give out one event id.
        self.tag = ""
        #: The key of this copy's GET stream (``{tag}get``).
        self.get_key = "get"
        #: Where each numbered event also goes when replicas share sessions.
        self.keeper: EventKeeper | None = None
        #: Streams here following another copy's POST stream (replicas): open streams
        #: of the session, as its own are.
        self.followers: set[Exchange] = set()

    def share(self, keeper: EventKeeper) -> None:
        """Among replicas: this copy's events also go to ``keeper`` (the shared
        store), under stream keys of its own (:attr:`tag`)."""
        self.keeper = keeper
        self.tag = new_tag()
        self.get_key = f"{self.tag}get"

    def foreign(self, key: str) -> bool:
        """Whether stream ``key`` was numbered by another replica's copy."""
        return bool(self.tag) and not key.startswith(self.tag) and is_copy_key(key)

    def unmap(self, exchange: Exchange) -> None:
        """Forget that ``exchange`` is the stream of any of the session's requests."""
        for request_id in [r for r, ex in self.streams.items() if ex is exchange]:
            del self.streams[request_id]

    def receive(
        self,
        obj: Any,
        messages: list[dict[str, Any]],
        flush: Callable[[ServerSession], None],
        json_mode: bool,
        retry_interval: float | None,
    ) -> Exchange:
        """A POST's ``obj`` (its ``messages``) received: the stream of its requests
        (:meth:`post_stream`), or 202 when it has none.  The session's output is then
        routed (``flush``) before the streams' wait for requests it cancelled ends
        (:meth:`end_waits`): an answer queued already still goes out."""
        request_ids = [m["id"] for m in messages if "method" in m and is_request_id(m.get("id"))]
        self.session.receive_message(obj)
        if request_ids:
            exchange = self.post_stream(request_ids, json_mode, retry_interval)
        else:
            exchange = Exchange(202, {}, session=self.session)
        flush(self.session)
        self.end_waits(
            [m.get("params") for m in messages if m.get("method") == "notifications/cancelled"]
        )
        return exchange

    def post_stream(
        self, request_ids: list[RequestId], json_mode: bool, retry_interval: float | None
    ) -> Exchange:
        """The stream of a POST carrying ``request_ids``: its head waits briefly for
        the answers, and it opens with its priming event (:meth:`prime`)."""
        exchange = Exchange.event_stream(self.session, json_mode=json_mode)
        exchange.stream_key = f"{self.tag}s{self.stream_count}"
        self.stream_count += 1
        exchange.awaiting.update(request_ids)
        for request_id in request_ids:
            self.streams[request_id] = exchange
        exchange.on_close = self.stream_closed
        exchange.head_pending = True
        exchange.head_grace = HANDSHAKE_HEAD_GRACE
        exchange.opener = lambda: self.prime(exchange, retry_interval)
        return exchange

    def get(self, last_event_id: str | None, max_unread: int) -> Exchange | None:
        """The stream a GET opens: the one ``last_event_id`` resumes, else the
        session's GET stream; None while another GET stream is open."""
        exchange = Exchange.event_stream(self.session)
        exchange.headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        if last_event_id is not None and self.resume(exchange, last_event_id) is not None:
            return exchange
        if self._open_get_stream() is not None:
            return None
        self.open_get_stream(exchange, max_unread)
        return exchange

    def open_get_stream(self, exchange: Exchange, max_unread: int) -> None:
        """``exchange`` is the session's GET stream now: what waited for one goes on it."""
        took_over = exchange.stream_key != self.get_key and is_get_key(exchange.stream_key)
        if exchange.stream_key != self.get_key:
            exchange.seq = 0  # it resumed another copy's GET stream: numbered here anew
        exchange.stream_key = self.get_key
        kept = self.replay.last_number(self.get_key)
        if kept is not None:  # ids go on from the session's earlier GET streams, never reused
            exchange.seq = max(exchange.seq, kept)
        if took_over and self.bare_ids:
            # The client's Last-Event-ID moves to this copy's GET stream at once: resumed
            # with the other copy's last id, it would find nothing of what this copy sent.
            self._mark(exchange, exchange.next_event_id(), exchange.seq)
        self.get_stream = exchange
        exchange.on_close = self.stream_closed
        for item in self.backlog:
            self.deliver(exchange, item, max_unread)
        self.backlog.clear()
        self.backlog_bytes = 0

    def hold(self, item: Outgoing) -> None:
        """Keep ``item`` for the next GET stream, within the backlog's bounds (count
        and bytes): the oldest waiting messages go first; one larger than the byte
        bound on its own is not kept (the others stay), as in the shared store."""
        backlog, size, max_bytes = self.backlog, len(item.data), self._backlog_max_bytes
        room = backlog.maxlen
        if size > max_bytes or room == 0:
            return
        while backlog and (
            (room is not None and len(backlog) >= room) or self.backlog_bytes + size > max_bytes
        ):
            self.backlog_bytes -= len(backlog.popleft().data)
        backlog.append(item)
        self.backlog_bytes += size

    def prime(self, exchange: Exchange, retry_interval: float | None) -> None:
        """Open a POST's SSE stream with an event that has an id and no data, and the
        ``retry`` hint, so a client whose stream breaks can resume it (SEP-1699).
        Only from 2025-11-25: older clients may choke on an event without data."""
        if exchange.json_mode or not self.bare_ids:
            return
        retry = None if retry_interval is None else round(retry_interval * 1000)
        self._mark(exchange, f"{exchange.stream_key}-0", 0, retry)

    @property
    def bare_ids(self) -> bool:
        """Whether the client takes an event with an id and no data (2025-11-25 on:
        older clients may choke on one)."""
        return (self.session.protocol_version or "") >= "2025-11-25"

    def _mark(
        self, exchange: Exchange, event_id: str, number: int, retry: int | None = None
    ) -> None:
        """Send and keep an event with id ``event_id`` (number ``number``) and no data."""
        chunk = format_sse_event("", id=event_id, retry=retry)
        exchange.append(chunk)
        self.remember(exchange.stream_key, number, chunk)

    def deliver(self, exchange: Exchange, item: Outgoing, max_unread: int) -> None:
        """Send ``item`` on ``exchange``, one of the session's streams, as a numbered
        event kept for resumption (a detached stream only keeps it)."""
        if exchange.detached:
            self.keep_for_resumption(exchange, item)
            return
        if exchange.finished:
            return
        chunk = exchange.send(item, max_unread, numbered=True)
        if chunk is not None:
            # Kept even when the stream closed instead: it can be resumed (Last-Event-ID).
            self.remember(exchange.stream_key, exchange.seq, chunk)
        if exchange.finished:
            for request_id in answered_ids(item.message):
                self.streams.pop(request_id, None)

    def stream_closed(self, exchange: Exchange) -> None:
        """``exchange`` ended (answered, or its client went away)."""
        # Disconnection is not cancellation on the handshake revisions: a POST
        # stream cut before its answers stays its requests' stream, detached, so
        # what they send next is kept for a GET that resumes it (Last-Event-ID),
        # if it sent an event id to resume from (else their messages go on the GET
        # stream, as if the POST had had no stream).
        if (
            exchange.awaiting
            and exchange.stream_key != self.get_key
            and exchange.stream_key in self.replay
        ):
            exchange.detached = True
            return
        self.unmap(exchange)
        if self.get_stream is exchange:
            self.get_stream = None

    def resume(self, exchange: Exchange, last_event_id: str) -> Exchange | None:
        """``exchange`` resuming the stream ``last_event_id`` names, after that event:
        its kept events replayed, its unanswered requests taken over; None when the id
        names no stream resumable as such (``exchange`` becomes the GET stream)."""
        named = split_event_id(last_event_id)
        if named is None or named[0] not in self.replay:
            return None
        key, seq = named
        exchange.seq = seq
        for number, chunk in self.replay.events(key):
            if number > seq:
                exchange.append(chunk)
                exchange.seq = number  # new events continue after the replayed ones
        exchange.stream_key = key
        still_open = [ex for ex in self.streams.values() if ex.stream_key == key]
        exchange.seq = max([exchange.seq, *(ex.seq for ex in still_open)])
        for request_id, ex in list(self.streams.items()):
            if ex.stream_key == key:
                self.streams[request_id] = exchange
                exchange.awaiting.add(request_id)
        for earlier in still_open:  # a POST still open, or an earlier resumption
            if not earlier.finished:
                earlier.end()
        if not still_open and is_get_key(key):
            return None
        exchange.on_close = self.stream_closed
        if not exchange.awaiting and not is_get_key(key):
            exchange.finished = True  # the resumed stream had already ended
        return exchange

    def end_waits(self, cancelled: list[Any]) -> None:
        """End the streams' wait for the requests that ``cancelled``
        (notifications/cancelled params) name: a cancelled request gets no answer,
        so a stream waiting only for it would stay open for good."""
        for params in cancelled:
            request_id = params.get("requestId") if isinstance(params, dict) else None
            if not is_request_id(request_id) or request_id not in self.streams:
                continue
            exchange = self.streams.pop(request_id)
            exchange.awaiting.discard(request_id)
            if not exchange.awaiting and not exchange.finished:
                exchange.finish()
                exchange.wake()

    def target(self, item: Outgoing) -> Exchange | None:
        """The open stream ``item`` goes on: its request's stream, else (for what
        answers nothing) the GET stream; None when there is none."""
        obj = item.message
        if isinstance(obj, list):  # a 2025-03-26 batch answer
            ids = {m.get("id") for m in obj if isinstance(m, dict)}
            target = next((self.streams[i] for i in ids if i in self.streams), None)
            if target is None:
                return None
        elif item.route is not None and item.route in self.streams:
            target = self.streams[item.route]
        elif is_response(obj):
            return None
        else:
            target = self._open_get_stream()
        if target is not None and target.json_mode and not answered_ids(obj):
            # A JSON response carries only the final answer: requests and
            # notifications for the client go on the GET stream instead.
            target = self._open_get_stream()
        return target

    def route(
        self,
        item: Outgoing,
        max_unread: int,
        elsewhere: Callable[[str, Any, bytes], None] | None,
    ) -> None:
        """Send ``item``, some of the session's output, on the stream it goes on.  With
        none open, what answers nothing waits for a GET stream (:attr:`backlog`), or
        among replicas goes to ``elsewhere`` (:meth:`SessionRelay.server_message`): the
        GET stream may be open at another replica."""
        target = self.target(item)
        if target is not None:
            self.deliver(target, item, max_unread)
        elif is_response(item.message) or isinstance(item.message, list):
            return  # an answer (or a batch of them) whose stream is gone
        elif elsewhere is not None:
            elsewhere(self.id, item.message, item.data)
        else:
            self.hold(item)

    @property
    def listening(self) -> bool:
        """Whether the session's GET stream is open (here)."""
        return self._open_get_stream() is not None

    def _open_get_stream(self) -> Exchange | None:
        stream = self.get_stream
        return stream if stream is not None and not stream.finished else None

    def keep_for_resumption(self, exchange: Exchange, item: Outgoing) -> None:
        """Number and keep an event of a detached POST stream without sending it."""
        chunk = format_sse_message(item.data, exchange.next_event_id())
        self.remember(exchange.stream_key, exchange.seq, chunk)
        exchange.awaiting -= answered_ids(item.message)
        if not exchange.awaiting:
            self.unmap(exchange)

    def live_streams(self) -> set[str]:
        """Keys of the streams whose events must stay resumable: the GET stream's,
        and those of requests still unanswered."""
        return {self.get_key, *(ex.stream_key for ex in self.streams.values())}

    def remember(self, key: str, number: int, chunk: bytes) -> None:
        """Keep event ``number`` of stream ``key`` for resumption (among replicas, in
        the shared store too)."""
        self.replay.remember(key, number, chunk, self.live_streams)
        if self.keeper is not None:
            self.keeper.kept(self.id, key, number, chunk)

    def restore(self, key: str, events: list[tuple[int, bytes]]) -> None:
        """Hold ``events``, what the shared store kept of another copy's stream ``key``,
        for a ``Last-Event-ID`` that resumes it here."""
        self.replay.restore(key, events, self.live_streams)

    @property
    def quiet(self) -> bool:
        """No request awaits its answer and no stream is open."""
        open_get = self.get_stream is not None and not self.get_stream.finished
        streams = (*self.streams.values(), *self.followers)
        return not open_get and not any(not ex.finished for ex in streams)

    def end(self) -> None:
        """Close the session and its streams."""
        self.session.close()
        get = [self.get_stream] if self.get_stream else []
        for exchange in {*self.streams.values(), *get, *self.followers}:
            exchange.end()


class HandshakeSessions:
    """The live handshake sessions of a Streamable HTTP router (``router.sessions``),
    by id and by session, with their last activity and their limits."""

    def __init__(
        self,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        replay_memory: int = DEFAULT_REPLAY_MEMORY,
        replay_streams: int = DEFAULT_REPLAY_STREAMS,
        replay_bytes: int = DEFAULT_REPLAY_BYTES,
    ) -> None:
        #: Sessions at most: at the limit, a new ``initialize`` ends the least recently
        #: active session that has no stream or request open, or gets 503.
        self.max_sessions = max_sessions
        #: Seconds a session may go without a request and with no stream or request
        #: open before it is ended (checked as requests come: :meth:`expire_idle`).
        self.idle_timeout = idle_timeout
        #: Events kept per SSE stream of a session, for ``Last-Event-ID``.
        self.replay_memory = replay_memory
        #: How many streams per session keep their events (the most recently active;
        #: the GET stream's and those with a request unanswered are always kept).
        self.replay_streams = replay_streams
        self.replay_bytes = replay_bytes  # (checked by its setter)
        self._by_id: dict[str, HandshakeSession] = {}
        self._by_session: dict[int, HandshakeSession] = {}
        # Session ids by last activity, least recent first (for the limit and expiry).
        self._activity: OrderedDict[str, float] = OrderedDict()
        self._now: float | None = None
        #: Where sessions begun from now on also keep their events (see
        #: :meth:`HandshakeSession.share`); set by the runtime when replicas share
        #: sessions, None on one process.
        self.keeper: EventKeeper | None = None

    @property
    def replay_bytes(self) -> int:
        """Bytes of a session's kept events at most, all its streams together (the
        least recently active streams' oldest go first); among replicas, the shared
        store's bound too (``router.replicas.replay_bytes`` is this).  Settable, a
        positive integer: a change bounds the sessions begun after it (each session
        keeps the bound it began with) and, at once, the shared store."""
        return self._replay_bytes

    @replay_bytes.setter
    def replay_bytes(self, value: int) -> None:
        if not whole(value, 1):
            raise ValueError(f"replay_bytes must be a positive integer of bytes, not {value!r}")
        self._replay_bytes = value

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[HandshakeSession]:
        return iter(list(self._by_id.values()))

    @property
    def ids(self) -> frozenset[str]:
        """The ids (``Mcp-Session-Id``) of the live sessions."""
        return frozenset(self._by_id)

    def get(self, session_id: str) -> HandshakeSession | None:
        """The live session ``session_id``, if any (not made active by asking)."""
        return self._by_id.get(session_id)

    def named(self, session_id: str | None) -> HandshakeSession | None:
        """The live session ``session_id`` names (an ``Mcp-Session-Id``), active now."""
        state = self._by_id.get(session_id) if session_id is not None else None
        if state is not None:
            self.touch(state.id)
        return state

    def of(self, session: ServerSession) -> HandshakeSession | None:
        """The handshake session ``session`` is, if it is a live one."""
        return self._by_session.get(id(session))

    def add(self, state: HandshakeSession) -> None:
        self._by_id[state.id] = state
        self._by_session[id(state.session)] = state
        self.touch(state.id)

    def begin(self, session_id: str, session: ServerSession, init_params: Any) -> HandshakeSession:
        """Hold ``session``, begun by ``initialize`` with ``init_params``, as ``session_id``."""
        state = HandshakeSession(
            session_id, session, self.replay_memory, self.replay_streams, self._replay_bytes
        )
        state.init_params = init_params if isinstance(init_params, dict) else {}
        if self.keeper is not None:
            state.share(self.keeper)
        self.add(state)
        return state

    def touch(self, session_id: str) -> None:
        """``session_id`` is active now."""
        self._activity[session_id] = self._now or 0.0
        self._activity.move_to_end(session_id)

    def expire_idle(self, now: float) -> None:
        """Tell the time (seconds, any monotonic clock): sessions quiet for longer
        than :attr:`idle_timeout` end.  The router calls it per request given ``now``."""
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
