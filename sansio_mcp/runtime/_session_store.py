"""Handshake sessions shared by replicas (issue 33): the store of their records,
in memory and in Redis, and :class:`SharedSessions`, which lets any replica serve
any 2025-11-25 session (``Mcp-Session-Id``) behind a load balancer without affinity.

A replica that answers ``initialize`` writes the session's record (the client's
``initialize`` params, the negotiated version, the principal); one that meets an
id it does not hold loads the record and adopts the session
(:meth:`~sansio_mcp.http.ReplicaSessions.adopt`).  Records live for the
session idle timeout, refreshed as the session is used.  What one copy of a
session must tell another travels on the bundle's event bus (channel
:data:`SESSION_CHANNEL`): a client's answer to a question another replica asked,
its cancellation of a request another replica runs, a notification for the GET
stream another replica holds, and the end of a session (DELETE).

The level the client chose (``logging/setLevel``) and its resource subscriptions
are the session's too, not one copy's: each change is written to the record (a
later adopter starts with it) and published (``state``) to the copies other
replicas hold, stamped (:data:`Stamp`) so that concurrent changes end the same on
every copy.  A ``notifications/resources/updated`` is never relayed, as every
replica hears the hint behind it and the copy beside the GET stream sends it
(relayed, it would reach the client once per copy).

Event ids and replay are shared too (:meth:`HandshakeSessionStore.keep_events`): each
copy numbers its streams under a key of its own (``TAG.s3``, ``TAG.get``), so ids are
unique across replicas, and every event it keeps for ``Last-Event-ID`` also goes to
the store (a capped list per stream, at most ``replay_streams`` streams per session);
a replica that meets a ``Last-Event-ID`` of another copy's stream loads that list
and replays it.  A message for the GET stream made while it is open nowhere waits
in the store's backlog of the session (:meth:`HandshakeSessionStore.push_backlog`)
for the next GET stream, at any replica: whoever takes it (one atomic pop) sends it.
The store keeps at most ``router.replicas.replay_bytes`` of a session's events, and as
many of its backlog (the oldest go first).

A POST stream resumed at another replica than the one running its request goes on
there live: that replica follows it (:meth:`SharedSessions._follow`) and says so
(``follow``); the replica running the request answers at once and then announces
(``kept``) each write of the stream's events to the store, and the follower reads the
store each time.  Quiet for ``router.replicas.follow_check`` seconds, the follower
asks (``running?``) and ends the stream when told ``closed``, or when no answer comes.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol
from weakref import WeakKeyDictionary

import attrs

from .._handshake_sessions import DEFAULT_REPLAY_BYTES
from .._http import HTTPRequest
from .._outbox import encode_message
from .._params import LOG_LEVELS
from .._server_session import ServerSession
from .._streamable_http import Exchange, StreamableHTTPServer
from ._store_base import EventSubscription, StoreUnavailable, expiry_ms, guarded_set
from ._stores import Stores

if TYPE_CHECKING:
    from ._backend import Backend, Signal

__all__ = [
    "DEFAULT_MAX_SESSION_RECORDS",
    "DEFAULT_SESSION_RECORD_TTL",
    "SESSION_CHANNEL",
    "HandshakeSessionStore",
    "MemoryHandshakeSessionStore",
    "RedisHandshakeSessionStore",
    "ReplayBounds",
    "SessionRecord",
    "SharedSessions",
    "handshake_session_store",
    "shared_sessions",
]

_log = logging.getLogger("sansio_mcp.http")

#: The event bus channel of handshake sessions' messages between replicas.
SESSION_CHANNEL = "handshake-sessions"
#: Seconds a record lives unused when sessions never idle out (one day).
DEFAULT_SESSION_RECORD_TTL = 86_400.0
#: Records an in-memory store keeps at most (the least recently used go first).
DEFAULT_MAX_SESSION_RECORDS = 100_000
#: One kept event: ``(stream key, number, its SSE bytes)``.
KeptEvent = tuple[str, int, bytes]


@attrs.frozen
class ReplayBounds:
    """What a :class:`HandshakeSessionStore` keeps of a session's events and backlog:
    ``memory`` events per stream (and messages in the backlog), for ``streams``
    streams, ``ttl`` seconds from each write (the router's ``replay_memory``,
    ``replay_streams`` and the record's TTL), and at most ``max_bytes`` bytes of
    events (their SSE bytes, all streams of the session together) and as many of
    backlog (the router's ``replicas.replay_bytes``): past it the oldest go first."""

    ttl: float
    memory: int
    streams: int
    max_bytes: int = DEFAULT_REPLAY_BYTES


#: A session's state other copies must respect: ``(logLevel, subscriptions)``.
SharedState = tuple[str | None, frozenset[str]]
_NO_STATE: SharedState = (None, frozenset())
#: What orders changes of a session's shared state: ``(seconds, replica id)``, each
#: copy's next above any it has seen, so that every copy (and the record) ends with
#: the change of the highest stamp whatever order they heard them in.
Stamp = tuple[float, str]
_NO_STAMP: Stamp = (0.0, "")


def _stamp_in(data: dict[str, Any]) -> Stamp | None:
    """The stamp a record's state or a ``state`` message carries (none: the oldest,
    as one written before stamps were); None when malformed."""
    stamp = data.get("stamp", [0.0, ""])
    if not (isinstance(stamp, list) and len(stamp) == 2):
        return None
    when, replica = stamp
    if isinstance(when, bool) or not isinstance(when, (int, float)) or not isinstance(replica, str):
        return None
    return (float(when), replica)


def _newer(held: SessionRecord, record: SessionRecord) -> bool:
    """Whether ``held``'s shared state is stamped later than ``record``'s (which is
    then not saved: every replica's record ends with the latest change)."""
    return (_stamp_in(held.state) or _NO_STAMP) > (_stamp_in(record.state) or _NO_STAMP)


class SessionDrivers(Protocol):
    """What shared sessions need of the service's session hosts
    (:class:`~sansio_mcp.runtime._http_service.SessionHosts`)."""

    def begin(self, exchange: Exchange) -> Any:
        """Drive what was fed into the exchange's session."""
        ...

    def finish(self, exchange: Exchange) -> None:
        """Drop an ended session's host (its handlers are cancelled)."""
        ...


@attrs.define(eq=False)
class _Follow:
    """A stream here following another replica's POST stream (:meth:`SharedSessions._follow`)."""

    stream: Exchange
    #: When (the backend's clock) the copy running the request is asked next, or, if
    #: :attr:`asked` already, when the stream ends unanswered.
    deadline: float
    asked: bool = False
    #: A feed is queued (one at a time: announcements coming faster coalesce), and
    #: whether the copy said it no longer runs the request.
    feeding: bool = False
    last: bool = False


@attrs.define
class SessionRecord:
    """One handshake session as replicas share it."""

    session_id: str
    #: :meth:`ReplicaSessions.record`: the version and ``initialize`` params.
    state: dict[str, Any]
    #: The token's ``(subject, client_id)`` when the server is protected, else None:
    #: the session is found only for requests of that principal.
    principal: tuple[str | None, str | None] | None = None
    #: Wall-clock seconds of creation and of the latest refresh.
    created: float = 0.0
    last_seen: float = 0.0

    def to_json(self) -> str:
        return json.dumps(
            {
                "id": self.session_id,
                "state": self.state,
                "principal": None if self.principal is None else list(self.principal),
                "created": self.created,
                "last_seen": self.last_seen,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionRecord:
        """ValueError when ``text`` is not what :meth:`to_json` wrote."""
        try:
            data = json.loads(text)
            principal = data["principal"]
            if not isinstance(data["state"], dict):
                raise TypeError("state is not an object")
            return cls(
                str(data["id"]),
                data["state"],
                None if principal is None else (principal[0], principal[1]),
                float(data["created"]),
                float(data["last_seen"]),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ValueError(f"not a session record: {exc}") from None


class HandshakeSessionStore(Protocol):
    """Session records every replica sees, each kept ``ttl`` seconds from its latest
    save or refresh.  Each call may raise :class:`StoreUnavailable`."""

    url: str

    async def save(self, record: SessionRecord, ttl: float) -> None:
        """Write ``record``, unless the live one there has a later :data:`Stamp`
        (its level and subscriptions changed since ``record``'s): checked and written
        in one step, so the record ends with the latest change whatever the order of
        the replicas' writes."""
        ...

    async def load(self, session_id: str, now: float) -> SessionRecord | None:
        """The record, or None if unknown, ended or expired."""
        ...

    async def refresh(self, session_id: str, now: float, ttl: float) -> bool:
        """Keep the record ``ttl`` seconds from ``now`` on (sliding expiry); False when
        there is no such record (expired, lost, or never written)."""
        ...

    async def end(self, session_id: str) -> None:
        """Forget the record, its kept events and its backlog (the session was deleted)."""
        ...

    async def keep_events(
        self,
        session_id: str,
        events: list[KeptEvent],
        now: float,
        bounds: ReplayBounds,
    ) -> None:
        """Keep ``events`` (oldest first) for ``Last-Event-ID`` within ``bounds``: the
        newest of each stream, of the most recently active streams of the session, and
        past ``bounds.max_bytes`` the session's oldest events go first.  An event larger
        than that is not kept, nor are its stream's earlier ones (a resumption must
        not skip it: the stream then replays from its next event, as when older events
        than the one named were dropped)."""
        ...

    async def events(self, session_id: str, key: str, now: float) -> list[tuple[int, bytes]]:
        """What is kept of stream ``key``: ``(number, bytes)``, oldest first."""
        ...

    async def push_backlog(
        self,
        session_id: str,
        messages: list[bytes],
        now: float,
        bounds: ReplayBounds,
        *,
        front: bool = False,
    ) -> None:
        """Keep ``messages`` (JSON, oldest first) for the session's next GET stream:
        after those waiting already, or before them (``front``: given back); the
        newest ``bounds.memory`` in all, of ``bounds.max_bytes`` bytes at most (the
        oldest go first; a message larger than that is not kept)."""
        ...

    async def take_backlog(self, session_id: str, now: float, bounds: ReplayBounds) -> list[bytes]:
        """What waits for the session's GET stream, oldest first, taken (once: a
        replica taking it at the same time gets none of it)."""
        ...


@attrs.define(eq=False)
class _KeptInMemory:
    """A session's events and backlog in a :class:`MemoryHandshakeSessionStore`."""

    until: float
    #: Stream key -> its events ``(number, bytes, order)``, least recently active
    #: first; ``order`` counts the session's events, so the oldest of all is known.
    streams: OrderedDict[str, deque[tuple[int, bytes, int]]] = attrs.Factory(OrderedDict)
    backlog: deque[bytes] = attrs.Factory(deque)
    #: The events kept so far, in all; the bytes of those held.
    count: int = 0
    size: int = 0

    def forget(self, key: str) -> None:
        """Drop stream ``key``'s events."""
        self.size -= sum(len(chunk) for _, chunk, _ in self.streams.pop(key, ()))

    def drop_oldest(self) -> None:
        """Drop the session's oldest event (that of the stream whose first is oldest)."""
        key = min(self.streams, key=lambda k: self.streams[k][0][2])
        self.size -= len(self.streams[key].popleft()[1])
        if not self.streams[key]:
            del self.streams[key]


class MemoryHandshakeSessionStore:
    """A :class:`HandshakeSessionStore` in this process's memory, at most
    ``max_records`` of them (and the kept events and backlogs of as many sessions)."""

    def __init__(self, *, max_records: int = DEFAULT_MAX_SESSION_RECORDS) -> None:
        self.url = "memory"
        self.max_records = max_records
        #: session id -> (record, when it is forgotten), least recently used first.
        self._items: OrderedDict[str, tuple[SessionRecord, float]] = OrderedDict()
        #: session id -> its kept events and backlog, least recently used first.
        self._kept: OrderedDict[str, _KeptInMemory] = OrderedDict()

    def _held(self, session_id: str, now: float, ttl: float | None = None) -> _KeptInMemory:
        """The session's events and backlog (new if none or expired); with ``ttl``,
        kept that long from ``now`` on."""
        kept = self._kept.pop(session_id, None)
        if kept is None or kept.until <= now:
            kept = _KeptInMemory(now)
            while len(self._kept) >= self.max_records:
                self._kept.popitem(last=False)
        if ttl is not None:
            kept.until = now + ttl
        self._kept[session_id] = kept
        return kept

    async def keep_events(
        self,
        session_id: str,
        events: list[KeptEvent],
        now: float,
        bounds: ReplayBounds,
    ) -> None:
        if not events or bounds.memory <= 0 or bounds.streams <= 0:
            return
        kept = self._held(session_id, now, bounds.ttl)
        held = kept.streams
        for key, number, chunk in events:
            kept.count += 1
            if len(chunk) > bounds.max_bytes:
                kept.forget(key)  # (see HandshakeSessionStore.keep_events)
                continue
            stream = held.pop(key, None)
            held[key] = stream = deque() if stream is None else stream
            stream.append((number, chunk, kept.count))
            kept.size += len(chunk)
            if len(stream) > bounds.memory:
                kept.size -= len(stream.popleft()[1])
            while len(held) > bounds.streams:
                kept.forget(next(iter(held)))
            while kept.size > bounds.max_bytes:
                kept.drop_oldest()

    async def events(self, session_id: str, key: str, now: float) -> list[tuple[int, bytes]]:
        kept = self._kept.get(session_id)
        if kept is None or kept.until <= now:
            return []
        return [(number, chunk) for number, chunk, _ in kept.streams.get(key, ())]

    async def push_backlog(
        self,
        session_id: str,
        messages: list[bytes],
        now: float,
        bounds: ReplayBounds,
        *,
        front: bool = False,
    ) -> None:
        held = self._held(session_id, now, bounds.ttl)
        fitting = [m for m in messages if len(m) <= bounds.max_bytes]
        waiting = deque([*fitting, *held.backlog] if front else [*held.backlog, *fitting])
        size = sum(map(len, waiting))
        while waiting and (len(waiting) > bounds.memory or size > bounds.max_bytes):
            size -= len(waiting.popleft())
        held.backlog = waiting

    async def take_backlog(self, session_id: str, now: float, bounds: ReplayBounds) -> list[bytes]:
        kept = self._kept.get(session_id)
        if kept is None or kept.until <= now:
            return []
        taken = list(kept.backlog)[: bounds.memory]
        for _ in taken:
            kept.backlog.popleft()
        return taken

    async def save(self, record: SessionRecord, ttl: float) -> None:
        held = self._items.get(record.session_id)
        if held is not None and held[1] > record.last_seen and _newer(held[0], record):
            return
        self._items.pop(record.session_id, None)
        while len(self._items) >= self.max_records:
            self._items.popitem(last=False)
        self._items[record.session_id] = (
            SessionRecord.from_json(record.to_json()),
            record.last_seen + ttl,
        )

    async def load(self, session_id: str, now: float) -> SessionRecord | None:
        item = self._items.get(session_id)
        if item is None or item[1] <= now:
            self._items.pop(session_id, None)
            return None
        return SessionRecord.from_json(item[0].to_json())

    async def refresh(self, session_id: str, now: float, ttl: float) -> bool:
        item = self._items.get(session_id)
        if item is None or item[1] <= now:
            return False
        self._items[session_id] = (attrs.evolve(item[0], last_seen=now), now + ttl)
        self._items.move_to_end(session_id)
        kept = self._kept.get(session_id)
        if kept is not None and kept.until > now:
            kept.until = now + ttl
        return True

    async def end(self, session_id: str) -> None:
        self._items.pop(session_id, None)
        self._kept.pop(session_id, None)


_RESOURCE_UPDATED = "notifications/resources/updated"
#: What Redis holds of a session's kept events besides their lists (see
#: :class:`RedisHandshakeSessionStore`).
_REPLAY_KEYS = ("replay-streams", "replay-heads", "replay-bytes")


def _parsed_entry(entry: Any) -> tuple[int, bytes] | None:
    """A kept event from its Redis list entry (``NUMBER.ORDER SSE-bytes``, see
    :data:`_KEEP_SCRIPT`, the only layout): ``(number, bytes)``; None if of
    another shape."""
    head, space, chunk = entry.partition(b" ") if isinstance(entry, bytes) else (b"", b"", b"")
    number, dot, order = head.partition(b".")
    if not (space and dot and number.isdigit() and order.isdigit()):
        return None
    return (int(number), chunk)


#: KEYS[1] the record; ARGV: the new record's stamp (seconds), its JSON, its TTL in ms,
#: the stamp's replica.  Written unless the record there has a later stamp.
_SAVE_SCRIPT = guarded_set(
    "(function(s) return s ~= nil and (s[1] > tonumber(ARGV[1])"
    " or (s[1] == tonumber(ARGV[1]) and s[2] > ARGV[4])) end)(current['state']['stamp'])"
)
#: KEYS: the record, the backlog, the streams' index, their heads, the sizes; ARGV:
#: the TTL in ms, what begins the name of each stream's list.  The record's refresh
#: renews what is kept of the session with it (in one step), so that they live as
#: long as the session.
_REFRESH_SCRIPT = """
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then return 0 end
for _, key in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  redis.call('PEXPIRE', ARGV[2] .. key, ARGV[1])
end
for i = 2, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
return 1
"""
#: KEYS: the session's streams by latest event (``replay-streams``), by first event
#: (``replay-heads``), and its sizes (``replay-bytes``: each stream's bytes, and
#: ``:events`` their sum, ``:order`` the events kept so far); ARGV: the TTL in ms,
#: per stream events, streams, bytes at most, what begins each stream's list's name,
#: then each event's stream key, number and bytes.  Each event is an entry
#: ``NUMBER.ORDER SSE-bytes`` of its stream's list (``ORDER``: its place among the
#: session's events, which both sorted sets score by); after each, the bounds hold
#: (the stream's oldest, the least recently active stream, the session's oldest
#: events go).  In one step, so that replicas writing at once keep the sizes true.
_KEEP_SCRIPT = """
local ttl, memory, streams, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4])
local prefix, index, heads, sizes = ARGV[5], KEYS[1], KEYS[2], KEYS[3]
local function add(field, size)  -- (a Lua number may print as -0 or 1e+15)
  redis.call('HINCRBY', sizes, field, string.format('%d', size))
end
local function forget(key)
  local size = tonumber(redis.call('HGET', sizes, key) or '0')
  add(':events', -size)
  redis.call('HDEL', sizes, key)
  redis.call('ZREM', index, key)
  redis.call('ZREM', heads, key)
  redis.call('DEL', prefix .. key)
end
local function shrink(key, entry)
  -- An entry of another shape was never counted (nor is it read).
  if not string.match(entry, '^%d+%.%d+ ') then return end
  local size = #entry - string.find(entry, ' ', 1, true)
  add(key, -size)
  add(':events', -size)
end
local function new_head(key)
  local head = redis.call('LINDEX', prefix .. key, 0)
  if head then
    redis.call('ZADD', heads, string.match(head, '^%d+%.(%d+) ') or 0, key)
  else
    forget(key)
  end
end
for i = 6, #ARGV, 3 do
  local key, chunk = ARGV[i], ARGV[i + 2]
  local name = prefix .. key
  local order = redis.call('HINCRBY', sizes, ':order', 1)
  if redis.call('EXISTS', name) == 0 then forget(key) end  -- expired: its size too
  if #chunk > limit then
    forget(key)
  else
    redis.call('RPUSH', name, ARGV[i + 1] .. '.' .. order .. ' ' .. chunk)
    redis.call('PEXPIRE', name, ttl)
    add(key, #chunk)
    add(':events', #chunk)
    redis.call('ZADD', index, order, key)
    if redis.call('LLEN', name) > memory then shrink(key, redis.call('LPOP', name)) end
    new_head(key)
    while redis.call('ZCARD', index) > streams do
      forget(redis.call('ZRANGE', index, 0, 0)[1])
    end
    while tonumber(redis.call('HGET', sizes, ':events')) > limit do
      local oldest = redis.call('ZRANGE', heads, 0, 0)[1]
      if not oldest then
        redis.call('HSET', sizes, ':events', 0)
        break
      end
      local entry = redis.call('LPOP', prefix .. oldest)
      if entry then shrink(oldest, entry) end
      new_head(oldest)
    end
  end
end
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ttl) end
"""
#: KEYS: the backlog, the sizes (``:backlog``: the backlog's bytes); ARGV: the TTL in
#: ms, messages at most, bytes at most, ``front`` (1: before those waiting), then the
#: messages.  The oldest go first past either bound; one larger than the bytes is
#: not kept.
_PUSH_SCRIPT = """
local name, sizes = KEYS[1], KEYS[2]
local memory, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local size = 0
if redis.call('EXISTS', name) == 1 then
  size = tonumber(redis.call('HGET', sizes, ':backlog') or '0')
end
local first, last, step, push = 5, #ARGV, 1, 'RPUSH'
if ARGV[4] == '1' then first, last, step, push = #ARGV, 5, -1, 'LPUSH' end
for i = first, last, step do
  if #ARGV[i] <= limit then
    redis.call(push, name, ARGV[i])
    size = size + #ARGV[i]
  end
end
local count = redis.call('LLEN', name)
while count > 0 and (count > memory or size > limit) do
  size = size - #redis.call('LPOP', name)
  count = count - 1
end
redis.call('HSET', sizes, ':backlog', string.format('%d', size))
redis.call('PEXPIRE', name, ARGV[1])
redis.call('PEXPIRE', sizes, ARGV[1])
"""
#: KEYS: the backlog, the sizes; ARGV: how many to take.  One step: a message is
#: taken by one replica, and the backlog's size stays true.  The sizes are touched
#: only while they exist (written with a TTL): a write here would bring them back
#: without one.
_TAKE_SCRIPT = """
local taken = redis.call('LPOP', KEYS[1], ARGV[1])
if not taken then return {} end
if redis.call('EXISTS', KEYS[2]) == 0 then return taken end
local size = 0
for _, message in ipairs(taken) do size = size + #message end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[2], ':backlog', string.format('%d', -size))
else
  redis.call('HSET', KEYS[2], ':backlog', 0)
end
return taken
"""


class RedisHandshakeSessionStore:
    """A :class:`HandshakeSessionStore` in Redis: each record a JSON string under
    ``key("session", id)`` expiring ``ttl`` after its latest save or refresh (``PX``);
    a refresh is one ``PEXPIRE`` (``last_seen`` stays the save's: the TTL is the truth).

    A stream's kept events are a list under ``key("session-replay", id, stream key)`` (each
    entry ``NUMBER.ORDER SSE-bytes``, trimmed to the newest ``memory``); the session's
    streams a sorted set under ``key("replay-streams", id)`` scored by last activity
    (past ``streams``, the least recently active lose their lists) and one under
    ``key("replay-heads", id)`` scored by their oldest event's order, their sizes a
    hash under ``key("replay-bytes", id)`` (past ``max_bytes``, the session's oldest
    events go); its backlog a list of JSON messages under ``key("backlog", id)``.
    Each expires with the record's TTL, renewed by its own writes and by each
    refresh of the record."""

    def __init__(self, stores: Stores) -> None:
        if stores.redis is None:
            raise ValueError("a Redis session store needs a Redis Stores bundle")
        self._redis = stores.redis
        self._key = stores.key
        self.url = stores.redis.url

    async def save(self, record: SessionRecord, ttl: float) -> None:
        key = self._key("session", record.session_id)
        when, replica = _stamp_in(record.state) or _NO_STAMP
        await self._redis.execute(
            "EVAL", _SAVE_SCRIPT, 1, key, repr(when), record.to_json(), expiry_ms(ttl), replica
        )

    async def load(self, session_id: str, now: float) -> SessionRecord | None:
        text = await self._redis.execute("GET", self._key("session", session_id))
        if text is None:
            return None
        try:
            return SessionRecord.from_json(text)
        except ValueError as exc:
            raise StoreUnavailable(self.url, f"a session record is malformed: {exc}") from None

    async def refresh(self, session_id: str, now: float, ttl: float) -> bool:
        keys = [self._key(kind, session_id) for kind in ("session", "backlog", *_REPLAY_KEYS)]
        lists = self._key("session-replay", session_id, "")
        return bool(
            await self._redis.execute(
                "EVAL", _REFRESH_SCRIPT, len(keys), *keys, expiry_ms(ttl), lists
            )
        )

    async def end(self, session_id: str) -> None:
        index = self._key("replay-streams", session_id)
        streams = await self._redis.execute("ZRANGE", index, 0, -1)
        lists = [self._key("session-replay", session_id, k.decode()) for k in streams or ()]
        others = [self._key(kind, session_id) for kind in ("session", "backlog", *_REPLAY_KEYS)]
        await self._redis.execute("DEL", *others, *lists)

    async def keep_events(
        self,
        session_id: str,
        events: list[KeptEvent],
        now: float,
        bounds: ReplayBounds,
    ) -> None:
        if not events or bounds.memory <= 0 or bounds.streams <= 0:
            return
        keys = [self._key(kind, session_id) for kind in _REPLAY_KEYS]
        await self._redis.execute(
            "EVAL",
            _KEEP_SCRIPT,
            len(keys),
            *keys,
            expiry_ms(bounds.ttl),
            bounds.memory,
            bounds.streams,
            bounds.max_bytes,
            self._key("session-replay", session_id, ""),
            *(part for key, number, chunk in events for part in (key, number, chunk)),
        )

    async def events(self, session_id: str, key: str, now: float) -> list[tuple[int, bytes]]:
        entries = await self._redis.execute(
            "LRANGE", self._key("session-replay", session_id, key), 0, -1
        )
        parsed = [_parsed_entry(entry) for entry in entries or ()]
        return [event for event in parsed if event is not None]

    async def push_backlog(
        self,
        session_id: str,
        messages: list[bytes],
        now: float,
        bounds: ReplayBounds,
        *,
        front: bool = False,
    ) -> None:
        if not messages or bounds.memory <= 0:
            return
        keys = (self._key("backlog", session_id), self._key("replay-bytes", session_id))
        await self._redis.execute(
            "EVAL",
            _PUSH_SCRIPT,
            2,
            *keys,
            expiry_ms(bounds.ttl),
            bounds.memory,
            bounds.max_bytes,
            int(front),
            *messages,
        )

    async def take_backlog(self, session_id: str, now: float, bounds: ReplayBounds) -> list[bytes]:
        keys = (self._key("backlog", session_id), self._key("replay-bytes", session_id))
        taken = await self._redis.execute("EVAL", _TAKE_SCRIPT, 2, *keys, max(bounds.memory, 1))
        return [m for m in taken or () if isinstance(m, bytes)]


def handshake_session_store(stores: Stores | None) -> HandshakeSessionStore | None:
    """The session store replicas share through ``stores``: Redis when the bundle is
    Redis, else None (one process: its router's memory, as without replicas)."""
    if stores is None or stores.redis is None:
        return None
    return RedisHandshakeSessionStore(stores)


def streamable_machine(router: object) -> StreamableHTTPServer | None:
    """The Streamable HTTP machine ``router`` is or wraps (a ProtectedRouter's), if it
    keeps handshake sessions."""
    machine = (
        router if isinstance(router, StreamableHTTPServer) else getattr(router, "router", None)
    )
    if isinstance(machine, StreamableHTTPServer) and machine.keeps_sessions:
        return machine
    return None


def _state_of(session: ServerSession) -> SharedState:
    return (session.log_level, frozenset(session.subscriptions))


def _principal(token: Any) -> tuple[str | None, str | None] | None:
    """A verified token's ``(subject, client_id)``; None without one."""
    if token is None:
        return None
    return (getattr(token, "subject", None), getattr(token, "client_id", None))


class SharedSessions:
    """One replica's side of handshake sessions shared through a store and a bus.

    The HTTP service awaits :meth:`before` (adopt a session named but not held
    here) and :meth:`after` (record a new session, refresh, end a deleted one)
    around each request; :meth:`ready` before it listens (the bus subscription in
    effect, so a relay sent the moment this replica is reachable is heard), then
    :meth:`run` (in the listener's task group) publishes what the router relays
    (it is the router's :class:`~sansio_mcp.SessionRelay`)."""

    def __init__(
        self,
        machine: StreamableHTTPServer,
        hosts: SessionDrivers,
        stores: Stores,
        store: HandshakeSessionStore,
        backend: Backend,
        *,
        max_queue: int | None = None,
        stop_grace: float | None = None,
    ) -> None:
        """``max_queue`` and ``stop_grace`` (None: the router's) are set as the
        router's ``replicas.max_queue`` and ``replicas.stop_grace`` (checked there)."""
        self.machine = machine
        replicas = machine.replicas
        if max_queue is not None:
            replicas.max_queue = max_queue
        if stop_grace is not None:
            replicas.stop_grace = stop_grace
        max_queue = replicas.max_queue
        self.hosts = hosts
        self.stores = stores
        self.store = store
        self.backend = backend
        # What the run loop does next, in order (publish, write), at most max_queue.
        self._queue: deque[Callable[[], Awaitable[None]]] = deque(maxlen=max_queue)
        # Events kept since the last write to the store, oldest first.
        self._events: deque[tuple[str, KeptEvent]] = deque(maxlen=max_queue)
        self._lost_events = 0
        self._events_due = False
        self._idle = True
        self._drained: list[Signal] = []
        self._ready = backend.new_signal()
        # session id -> wall-clock time this replica last refreshed its record.
        self._refreshed: OrderedDict[str, float] = OrderedDict()
        self._subscription: EventSubscription | None = None
        # (session id, stream key) -> a stream here following another replica's copy.
        self._follows: dict[tuple[str, str], _Follow] = {}
        # Streams of copies here that another replica follows, and those of them with
        # events queued for the store (announced once written).
        self._followed: set[tuple[str, str]] = set()
        self._announce: set[tuple[str, str]] = set()
        # A copy -> the shared state last written or heard (none: the initial one); an
        # entry goes with its session, however that ends.
        self._states: WeakKeyDictionary[ServerSession, SharedState] = WeakKeyDictionary()
        # A copy -> the stamp of its shared state (none: the initial state's).
        self._stamps: WeakKeyDictionary[ServerSession, Stamp] = WeakKeyDictionary()
        machine.replicas.relay = self
        machine.sessions.keeper = self

    @property
    def ttl(self) -> float:
        """Seconds a record lives unused: the session idle timeout."""
        timeout = self.machine.sessions.idle_timeout
        return DEFAULT_SESSION_RECORD_TTL if timeout is None else timeout

    @property
    def bounds(self) -> ReplayBounds:
        """What the store keeps of a session's events and backlog: as this replica's
        router keeps them, for as long as the record lives, within its
        ``replicas.replay_bytes``."""
        sessions, replay_bytes = self.machine.sessions, self.machine.replicas.replay_bytes
        return ReplayBounds(self.ttl, sessions.replay_memory, sessions.replay_streams, replay_bytes)

    # SessionRelay ------------------------------------------------------------------

    def client_message(self, session_id: str, message: dict[str, Any]) -> None:
        self._send("client", session_id, message)

    def server_message(self, session_id: str, message: Any, data: bytes = b"") -> None:
        """Into the session's backlog in the store, and the replica holding its GET
        stream (if any) told to take it from there."""
        if isinstance(message, dict) and message.get("method") == _RESOURCE_UPDATED:
            return  # sent by the copy beside the GET stream (see the module)
        data = data or encode_message(message)
        self._do(lambda: self._backlog(session_id, [data]))

    async def _backlog(
        self, session_id: str, messages: list[bytes], *, front: bool = False
    ) -> None:
        if self.machine.sessions.get(session_id) is None:
            return  # ended (deleted) since: its backlog is gone for good
        try:
            now = self.backend.wall_clock()
            await self.store.push_backlog(session_id, messages, now, self.bounds, front=front)
        except StoreUnavailable as exc:
            _log.warning(
                "session %s: messages for its GET stream wait at this replica only: %s",
                session_id,
                exc,
            )
            for data in messages:
                self.machine.replicas.keep_here(session_id, json.loads(data))
            return
        if not front:  # (given back by the replica that could not send it: no news)
            ping = {"kind": "backlog", "session": session_id, "from": self.stores.replica_id}
            await self._publish(ping)

    async def _take_backlog(self, session_id: str) -> None:
        """Send what waits in the store for the session's GET stream, if it is open
        here (what cannot go out after all goes back, in front)."""
        if not self.machine.replicas.listening(session_id):
            return
        now = self.backend.wall_clock()
        taken = await self.store.take_backlog(session_id, now, self.bounds)
        back = []
        for data in taken:
            try:
                message = json.loads(data)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                _log.warning("session %s: a malformed backlog message was dropped", session_id)
            elif not self.machine.replicas.deliver(session_id, message):
                back.append(data)  # the stream closed meanwhile
        if back:
            await self._backlog(session_id, back, front=True)

    # EventKeeper ---------------------------------------------------------------------

    def kept(self, session_id: str, key: str, number: int, chunk: bytes) -> None:
        """Queue the event for the store (written by :meth:`run`, in batches)."""
        if len(self._events) == self._events.maxlen:
            self._lost_events += 1
        self._events.append((session_id, (key, number, chunk)))
        if (session_id, key) in self._followed:
            self._announce.add((session_id, key))
        # Not a job of the queue: a full queue drops its oldest job, and a dropped
        # write would leave these events (and every later one) unwritten.
        self._events_due = True
        self._wake()

    async def _write_events(self) -> None:
        self._events_due = False
        batch, self._events = self._events, deque(maxlen=self._events.maxlen)
        announce, self._announce = self._announce, set()
        lost, self._lost_events = self._lost_events, 0
        if lost:
            _log.warning("%d events kept for replay did not reach the store (queue full)", lost)
        by_session: dict[str, list[KeptEvent]] = {}
        for session_id, event in batch:
            by_session.setdefault(session_id, []).append(event)
        for session_id, events in by_session.items():
            if self.machine.sessions.get(session_id) is None:
                continue  # ended (deleted) since: its kept events are gone for good
            try:
                now = self.backend.wall_clock()
                await self.store.keep_events(session_id, events, now, self.bounds)
            except StoreUnavailable as exc:
                _log.warning(
                    "session %s: its events can be replayed at this replica only: %s",
                    session_id,
                    exc,
                )
                continue
            for key in {key for key, _, _ in events if (session_id, key) in announce}:
                self._send("kept", session_id, key)
        if announce:  # a stream answered is followed no more
            self._unfollow_ended()

    # POST streams resumed here while another replica runs their request ----------------

    def _follow(self, session_id: str, last_event_id: str | None, stream: Exchange) -> None:
        """``stream`` resumed another copy's POST stream whose answer is not kept yet:
        it is fed what that copy keeps next (:meth:`_feed`), until the answer, its
        client going away, or that copy no longer running the request."""
        key = self.machine.replicas.follow(session_id, last_event_id, stream)
        if key is None:
            return
        followed = (session_id, key)
        earlier = self._follows.get(followed)
        if earlier is not None:  # resumed again: the earlier resumption ends, as one here would
            earlier.stream.end()
        follow = self._follows[followed] = _Follow(stream, self._next_check())
        self._send("follow", session_id, key)
        previous = stream.on_close

        def closed(exchange: Exchange) -> None:
            if self._follows.get(followed) is follow:
                del self._follows[followed]
            previous(exchange)

        stream.on_close = closed
        # What was kept since the replay's read: the copy's answer to "follow" brings
        # the rest (what it kept until it heard it, and is writing).
        self._feed_soon(session_id, key)

    def _next_check(self) -> float:
        return self.backend.clock() + self.machine.replicas.follow_check

    def _feed_soon(self, session_id: str, key: str, *, last: bool = False) -> None:
        """Queue a :meth:`_feed` of the stream following ``key``, unless one is queued
        already (it reads the store after this news too): however often the copy
        running the request announces writes, a follower holds one job of the queue."""
        follow = self._follows.get((session_id, key))
        if follow is None:
            return
        follow.last = follow.last or last
        if not follow.feeding:
            follow.feeding = True
            self._do(lambda: self._feed(session_id, key))

    async def _feed(self, session_id: str, key: str) -> None:
        """Send on the stream following ``key`` what the store has of it after what
        it sent (if the copy running the request no longer does, it then ends; if the
        store no longer has the event next due, it ends too, for the client to resume
        it as a stream whose events were dropped)."""
        follow = self._follows.get((session_id, key))
        if follow is None:
            return
        # News from here on queues another feed: this read may come before its write.
        follow.feeding, last, follow.last = False, follow.last, False
        events = await self.store.events(session_id, key, self.backend.wall_clock())
        stream = follow.stream
        due = next((number for number, _ in events if number > stream.seq), None)
        if due is not None and due > stream.seq + 1:
            _log.warning(
                "session %s: stream %s followed here lost events %d to %d before they"
                " were read (trimmed in the store); it ends, for the client to resume it",
                session_id,
                key,
                stream.seq + 1,
                due - 1,
            )
            stream.end()
            return
        if self.machine.replicas.followed(stream, events):
            return
        if last:
            stream.end()
            return
        follow.deadline, follow.asked = self._next_check(), False

    def _check_follows(self) -> None:
        """A followed stream quiet past its deadline: its copy is asked whether it still
        runs the request; asked already, unanswered (that replica gone), it ends."""
        now = self.backend.clock()
        for (session_id, key), follow in list(self._follows.items()):
            if follow.deadline > now:
                continue
            if follow.asked:
                follow.stream.end()
            else:
                follow.deadline, follow.asked = self._next_check(), True
                follow.feeding = False  # (a feed the full queue dropped is queued anew)
                self._send("running?", session_id, key)

    async def _answer_running(self, session_id: str, key: str) -> None:
        """Tell the replica following this copy's stream ``key`` (``follow`` or
        ``running?``) whether its request still runs here, once what was kept of it is
        in the store; while it does, each write of its events is announced (``kept``)."""
        if self._events_due:
            await self._write_events()
        running = self.machine.replicas.running(session_id, key)
        if running:
            self._followed.add((session_id, key))
        self._unfollow_ended()
        message = {"kind": "kept" if running else "closed", "session": session_id}
        await self._publish({**message, "from": self.stores.replica_id, "message": key})

    def _unfollow_ended(self) -> None:
        """What no request runs here any more (answered, cancelled, its session gone)
        needs no announcing, and the set stays small."""
        if self._followed:
            self._followed = {f for f in self._followed if self.machine.replicas.running(*f)}

    def _end_follows(self, session_id: str) -> None:
        for (followed_session, _), follow in list(self._follows.items()):
            if followed_session == session_id:
                follow.stream.end()

    # The run loop ----------------------------------------------------------------------

    def _send(self, kind: str, session_id: str, message: Any) -> None:
        published = {
            "kind": kind,
            "session": session_id,
            "from": self.stores.replica_id,
            "message": message,
        }
        self._do(lambda: self._publish(published))

    def _do(self, job: Callable[[], Awaitable[None]]) -> None:
        if len(self._queue) == self._queue.maxlen:
            _log.warning("shared sessions: the queue is full; its oldest message is dropped")
        self._queue.append(job)
        self._wake()

    def _wake(self) -> None:
        self._idle = False
        self._ready.set()

    async def _publish(self, message: dict[str, Any]) -> None:
        try:
            await self.stores.events.publish(SESSION_CHANNEL, message)
        except StoreUnavailable as exc:
            _log.warning("a session message to other replicas was lost: %s", exc)

    async def _work(self) -> None:
        """Do what is queued, in order, until nothing is."""
        while self._queue or self._events_due:
            jobs = [self._queue.popleft()] if self._queue else []
            if self._events_due:  # after each job: events reach the store soon
                jobs.append(self._write_events)
            for job in jobs:
                try:
                    await job()
                except StoreUnavailable as exc:
                    _log.warning("shared sessions: %s", exc)

    @property
    def stop_grace(self) -> float:
        """Seconds a stopping replica spends on what it still queued (:meth:`flush`):
        the router's ``replicas.stop_grace``."""
        return self.machine.replicas.stop_grace

    @stop_grace.setter
    def stop_grace(self, value: float) -> None:
        self.machine.replicas.stop_grace = value  # checked there

    async def flush(self) -> None:
        """As the replica stops (its :meth:`run` cancelled): do what is still queued
        for the store and the bus, for at most :attr:`stop_grace` seconds, shielded
        from the stop's cancellation (what is left then is lost, with a warning)."""

        async def work() -> None:
            async with self.backend.move_on_after(self.stop_grace):
                await self._work()

        await self.backend.shielded(work)
        if self._queue or self._events_due:
            _log.warning("shared sessions: stopped with store writes or relays undone")

    async def drained(self) -> None:
        """Until what was queued for the store and the bus so far is done by
        :meth:`run` (a test looking at the store waits for it)."""
        if self._idle:
            return
        drained = self.backend.new_signal()  # one each: a signal wakes one waiter
        self._drained.append(drained)
        await drained.wait()

    def _listen(self) -> None:
        if self._subscription is None:
            self._subscription = self.stores.events.subscribe(SESSION_CHANNEL, self._on_bus)

    async def ready(self) -> None:
        """Subscribed to the bus, the subscription in effect (the bus's ``settled``):
        awaited before the replica listens, as a relay another replica sends once it
        can reach this one must not be lost."""
        self._listen()
        await self.stores.events.settled()

    async def run(self) -> None:
        """Take what other replicas send, and publish what was relayed here, until
        cancelled (then unsubscribed: an app started again by its lifespan listens
        again)."""
        self._listen()
        try:
            while True:
                deadline = min((f.deadline for f in self._follows.values()), default=None)
                if deadline is None:
                    await self._ready.wait()
                else:
                    wait = max(0.0, deadline - self.backend.clock())
                    async with self.backend.move_on_after(wait):
                        await self._ready.wait()
                self._ready = self.backend.new_signal()
                self._check_follows()
                await self._work()
                self._idle = True
                drained, self._drained = self._drained, []
                for signal in drained:
                    signal.set()
        finally:
            if self._subscription is not None:
                self._subscription.close()
                self._subscription = None

    def _on_bus(self, message: dict[str, Any]) -> None:
        try:
            self._take(message)
        except Exception:
            # Whatever a message brings, the bus (every replica's link) goes on.
            _log.exception("a session message from another replica could not be taken")

    def _take(self, message: dict[str, Any]) -> None:
        session_id = message.get("session")
        if not isinstance(session_id, str):
            return
        if message.get("from") == self.stores.replica_id and message.get("kind") != "backlog":
            return  # (the backlog's: the GET stream may have opened here since)
        kind, body = message.get("kind"), message.get("message")
        if kind == "backlog":
            if self.machine.replicas.listening(session_id):  # else no job to queue
                self._do(lambda: self._take_backlog(session_id))
        elif kind == "client" and isinstance(body, dict):
            session = self.machine.replicas.receive(session_id, body)
            if session is not None:
                self.hosts.begin(Exchange(202, {}, session=session))
            self._unfollow_ended()  # (a cancellation relayed)
        elif kind == "server":
            self.machine.replicas.deliver(session_id, body)
        elif kind == "end":
            self._end_here(session_id)
        elif kind in ("kept", "closed") and isinstance(body, str):
            self._feed_soon(session_id, body, last=kind == "closed")
        elif kind in ("follow", "running?") and isinstance(body, str):
            held = self.machine.sessions.get(session_id)
            if held is not None and held.tag and body.startswith(held.tag):
                self._do(lambda: self._answer_running(session_id, body))
        elif kind == "state" and isinstance(body, dict):
            held = self.machine.sessions.get(session_id)
            if held is not None:
                self._apply(held.session, body)

    # The session's shared state -------------------------------------------------

    def _apply(self, session: ServerSession, data: dict[str, Any]) -> None:
        """Give this copy the level and subscriptions ``data`` (a record's state or a
        ``state`` message) carries, if well formed and stamped no earlier than this
        copy's (else this copy's change wins, as it does in the record: :meth:`save`
        keeps the latest stamp)."""
        level, subscriptions = data.get("logLevel"), data.get("subscriptions", [])
        stamp = _stamp_in(data)
        if level is not None and level not in LOG_LEVELS:
            return
        if stamp is None or not (
            isinstance(subscriptions, list) and all(isinstance(uri, str) for uri in subscriptions)
        ):
            return
        if stamp < self._stamps.get(session, _NO_STAMP):
            return
        session.log_level = level
        session.subscriptions = set(subscriptions)
        self._states[session] = (level, frozenset(subscriptions))
        self._stamps[session] = stamp

    async def answering(self, exchange: Exchange) -> None:
        """Before ``exchange`` is answered (its request fed to the session, which
        answers ``logging/setLevel`` and ``resources/(un)subscribe`` at once): a change
        it made to the session's level or subscriptions is written to the record and
        published to the other copies before the answer goes."""
        held = None if exchange.session is None else self.machine.sessions.of(exchange.session)
        if held is None:
            return
        state = _state_of(held.session)
        session_id = held.id
        if state == self._states.get(held.session, _NO_STATE):
            return
        now = self.backend.wall_clock()
        latest = self._stamps.get(held.session, _NO_STAMP)[0]
        stamp = self._stamps[held.session] = (max(now, latest + 1e-6), self.stores.replica_id)
        message = {
            "kind": "state",
            "session": session_id,
            "from": self.stores.replica_id,
            "message": {
                "logLevel": state[0],
                "subscriptions": sorted(state[1]),
                "stamp": list(stamp),
            },
        }
        try:
            await self._write(session_id, now)
            await self.stores.events.publish(SESSION_CHANNEL, message)
        except StoreUnavailable as exc:
            _log.warning(
                "session %s: its level or subscriptions changed here only: %s", session_id, exc
            )
            return
        self._states[held.session] = state

    def _end_here(self, session_id: str) -> None:
        state = self.machine.sessions.get(session_id)
        self._refreshed.pop(session_id, None)
        self._end_follows(session_id)
        if state is None:
            return
        self.machine.sessions.end(session_id)
        self._unfollow_ended()
        # Its host goes, and with it the handlers still running (as a DELETE here does).
        self.hosts.finish(Exchange(200, {}, session=state.session))

    # Around each request ----------------------------------------------------------------

    async def before(self, request: HTTPRequest, verdict: Any) -> None:
        """Adopt the session ``request`` names if this replica does not hold it and
        the store has it for the request's principal; refresh it if held."""
        session_id = request.headers.get("mcp-session-id")
        if session_id is None or request.path != self.machine.endpoint:
            return
        now = self.backend.wall_clock()
        token = verdict[1] if verdict is not None else None
        held = self.machine.sessions.get(session_id)
        try:
            if held is not None:
                if _principal(held.session.auth) != _principal(token):
                    return  # another principal's request: the router refuses it, untouched
                await self._refresh(session_id, now)
            else:
                record = await self.store.load(session_id, now)
                if record is None or record.principal != _principal(token):
                    return  # unknown here and there (or another principal's): 404 as ever
                adopt = self.machine.replicas.adopt
                session = adopt(session_id, record.state, self.backend.clock())
                if session is None:
                    return
                self._apply(session, record.state)
                await self._refresh(session_id, now, force=True)
            if request.method == "GET":
                await self._restore(session_id, request.headers.get("last-event-id"), now)
        except StoreUnavailable as exc:
            _log.warning("session %s: %s", session_id, exc)

    async def _restore(self, session_id: str, last_event_id: str | None, now: float) -> None:
        """A ``Last-Event-ID`` naming another copy's stream: what the store kept of it,
        held here for the GET to replay."""
        key = self.machine.replicas.foreign_stream(session_id, last_event_id)
        if key is not None:
            events = await self.store.events(session_id, key, now)
            self.machine.replicas.restore(session_id, key, events)

    async def _refresh(self, session_id: str, now: float, *, force: bool = False) -> None:
        # A tenth of the TTL between refreshes keeps the store's writes few.
        last = self._refreshed.get(session_id)
        if not force and last is not None and now - last < self.ttl / 10:
            return
        try:
            if not await self.store.refresh(session_id, now, self.ttl):
                # Held here, but not in the store (begun while it was down, or the store
                # lost it): written again, so that other replicas find it from now on.
                await self._write(session_id, now)
        except StoreUnavailable as exc:
            _log.warning("session %s: %s", session_id, exc)
            return
        self._refreshed[session_id] = now
        self._refreshed.move_to_end(session_id)
        while len(self._refreshed) > self.machine.sessions.max_sessions:
            self._refreshed.popitem(last=False)

    async def after(self, request: HTTPRequest, exchange: Exchange) -> None:
        """Before ``exchange`` answers ``request``: a new session recorded (while the
        store is down, known to this replica only), a deleted one ended everywhere."""
        self._unfollow_ended()  # (a cancellation, a DELETE)
        session_id = exchange.headers.get("mcp-session-id")
        if request.method == "POST" and exchange.status == 200 and session_id is not None:
            await self._record(session_id)
            return
        listener = request.headers.get("mcp-session-id")
        if request.method == "GET" and listener is not None and exchange.streaming:
            resumed = request.headers.get("last-event-id")
            self.machine.replicas.took_over(listener, resumed, exchange)
            self._follow(listener, resumed, exchange)
            # What waited for a GET stream while none was open goes on this one.
            self._do(lambda: self._take_backlog(listener))
            return
        deleted = request.headers.get("mcp-session-id")
        if request.method == "DELETE" and exchange.status == 200 and deleted is not None:
            self._refreshed.pop(deleted, None)
            self._end_follows(deleted)
            try:
                await self.store.end(deleted)
                await self.stores.events.publish(
                    SESSION_CHANNEL,
                    {"kind": "end", "session": deleted, "from": self.stores.replica_id},
                )
            except StoreUnavailable as exc:
                _log.warning("session %s ended here only: %s", deleted, exc)

    async def _write(self, session_id: str, now: float) -> None:
        """Save the record of the session held here (its principal: the token the
        protected router bound it to, ``session.auth``)."""
        state = self.machine.sessions.get(session_id)
        record = self.machine.replicas.record(session_id)
        if state is None or record is None:
            return
        record["logLevel"] = state.session.log_level
        record["subscriptions"] = sorted(state.session.subscriptions)
        record["stamp"] = list(self._stamps.get(state.session, _NO_STAMP))
        principal = _principal(state.session.auth)
        await self.store.save(SessionRecord(session_id, record, principal, now, now), self.ttl)

    async def _record(self, session_id: str) -> None:
        now = self.backend.wall_clock()
        try:
            await self._write(session_id, now)
        except StoreUnavailable as exc:
            # As the DPoP replay check does: served by this replica alone meanwhile.
            _log.warning("session %s is known to this replica only: %s", session_id, exc)
            return
        self._refreshed[session_id] = now


def shared_sessions(
    router: object, hosts: SessionDrivers, stores: Stores | None, backend: Backend
) -> SharedSessions | None:
    """The replica's side of shared handshake sessions for ``router`` (served with
    ``hosts``), when ``stores`` is shared and the router keeps sessions; else None
    (each router's own sessions, as without replicas).  Await its
    :meth:`SharedSessions.ready` before listening; its :meth:`SharedSessions.run`
    must run beside the listener."""
    machine = streamable_machine(router)
    store = handshake_session_store(stores)
    if machine is None or store is None or stores is None:
        return None
    return SharedSessions(machine, hosts, stores, store, backend)
