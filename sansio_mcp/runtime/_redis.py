"""The Redis store's client, on any backend: RESP (:mod:`sansio_mcp.resp`) over the
backend's own TCP streams, so it runs on Trio and asyncio alike (redis-py's asyncio
client does not run on Trio).

:class:`RedisClient` keeps a small pool of connections, each carrying one command
(or one pipeline) at a time, so replies always match their requests.  Every failure
(refused, reset, timed out, a malformed or an error reply) raises
:class:`StoreUnavailable` naming the store, and the next command connects again.
:class:`RedisEventBus` holds one more connection, subscribed, read by a task of its
own that connects again after an outage and subscribes to every channel again.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import attrs

from .. import _json
from .._errors import RemoteProtocolError
from .._ndjson import NEED_DATA
from .._resp import RedisError, RESPParser, encode_command
from ._primitives import Signal
from ._store_base import Listener, StoreUnavailable, expiry_ms, namespaced

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "RedisAddress",
    "RedisClient",
    "RedisEventBus",
    "RedisReplayCache",
]

_log = logging.getLogger("sansio_mcp.stores")

#: Seconds to connect (and authenticate, select the database) before giving up.
DEFAULT_CONNECT_TIMEOUT = 2.0
#: Seconds a command (or a pipeline) may take, round trip, before giving up.
DEFAULT_COMMAND_TIMEOUT = 5.0
#: Connections a client opens at most for commands (more callers wait their turn).
DEFAULT_MAX_CONNECTIONS = 16
# Between tries of the subscriber connection while Redis is down (doubling to the last).
_RETRY_DELAYS = (0.05, 0.1, 0.2, 0.5, 1.0)
_READ_SIZE = 65536
_ACCEPTED = (
    "expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]"
    "[?connect_timeout=S&command_timeout=S&max_connections=N]"
)

Arg = str | bytes | int | float


@attrs.frozen
class RedisAddress:
    """What a ``redis://`` URL says.  ``name`` is the URL without its password:
    what errors and logs call the store."""

    host: str
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    @property
    def name(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"redis://{host}:{self.port}/{self.db}"

    @classmethod
    def parse(cls, url: str) -> RedisAddress:
        """The address in ``url``; ValueError saying what is accepted otherwise."""
        try:
            parts = urlsplit(url)
            port = parts.port or 6379
        except ValueError as error:
            raise ValueError(f"malformed store URL {url!r} ({error}): {_ACCEPTED}") from None
        if parts.scheme != "redis" or not parts.hostname or parts.fragment:
            raise ValueError(f"malformed store URL {url!r}: {_ACCEPTED}")
        path = parts.path.strip("/")
        if path and not (path.isascii() and path.isdigit()):
            raise ValueError(
                f"malformed store URL {url!r}: the database must be a number; {_ACCEPTED}"
            )
        options: dict[str, Any] = {}
        for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False):
            if key not in ("connect_timeout", "command_timeout", "max_connections"):
                raise ValueError(f"unknown option {key!r} in store URL {url!r}: {_ACCEPTED}")
            try:
                number = int(value) if key == "max_connections" else float(value)
            except ValueError:
                number = math.nan
            if not (0 < number < math.inf):
                raise ValueError(f"{key} in store URL {url!r} must be a positive number")
            options[key] = number
        return cls(
            host=parts.hostname,
            port=port,
            db=int(path or 0),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
            **options,
        )


class _Failed(Exception):
    """A connection failed; ``what`` says how, ``replied`` whether any reply byte came."""

    def __init__(self, what: str, *, replied: bool = True) -> None:
        super().__init__(what)
        self.what = what
        self.replied = replied


@attrs.define(eq=False)
class _Connection:
    stream: Any  # a ByteStream of the runtime's Backend
    parser: RESPParser = attrs.field(factory=RESPParser)
    reused: bool = False

    async def send(self, data: bytes) -> None:
        try:
            await self.stream.send_all(data)
        except OSError as error:
            raise _Failed(f"the connection failed ({error})", replied=False) from None

    async def reply(self, *, first: bool = False) -> Any:
        """The next reply (``first``: nothing of this round trip has come yet)."""
        while True:
            try:
                reply = self.parser.next_reply()
            except RemoteProtocolError as error:
                raise _Failed(error.message) from None
            if reply is not NEED_DATA:
                return reply
            try:
                data = await self.stream.receive_some(_READ_SIZE)
            except OSError as error:
                raise _Failed(f"the connection failed ({error})", replied=not first) from None
            if not data:
                raise _Failed("the connection closed", replied=not first)
            first = False
            self.parser.receive_data(data)

    async def round_trip(self, payload: bytes, count: int) -> list[Any]:
        """Send ``payload`` (``count`` encoded commands); their replies."""
        await self.send(payload)
        return [await self.reply(first=i == 0) for i in range(count)]


class RedisClient:
    """A Redis client (:class:`~sansio_mcp.runtime.RedisCommands`) for ``url``
    (``redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]``, options in its query: see
    :class:`RedisAddress`) on ``backend``.

    ``execute`` and ``pipeline`` may be called from many tasks at once: each takes
    a connection of its own from a pool of at most ``max_connections``.  A command
    that a connection kept from before fails on before any reply came (Redis was
    restarted meanwhile) is sent once more on a new connection.
    """

    def __init__(self, url: str | RedisAddress, backend: Any) -> None:
        self.address = url if isinstance(url, RedisAddress) else RedisAddress.parse(url)
        #: The store's name in every error: the URL without its password.
        self.url = self.address.name
        self.backend = backend
        self._idle: list[_Connection] = []
        self._open = 0
        self._waiting: list[Signal] = []
        self._closed = False

    def unavailable(self, what: str) -> StoreUnavailable:
        return StoreUnavailable(self.url, what)

    async def execute(self, *args: Arg) -> Any:
        """One command's reply; :class:`StoreUnavailable` for an error reply or a failure."""
        return (await self.pipeline([args]))[0]

    async def pipeline(self, commands: list[tuple[Arg, ...]]) -> list[Any]:
        """The replies to ``commands``, sent in one round trip on one connection;
        :class:`StoreUnavailable` if any reply is an error, or for a failure."""
        if not commands:
            return []
        # A bad argument fails here, before any connection is spent.
        payload = b"".join(encode_command(*command) for command in commands)
        replies = await self._run(payload, len(commands))
        for reply in replies:
            if isinstance(reply, RedisError):
                raise self.unavailable(f"Redis refused {_command_name(commands)}: {reply.message}")
        return replies

    async def _run(self, payload: bytes, count: int) -> list[Any]:
        for attempt in range(2):
            conn = await self._acquire()
            done = False
            replies: list[Any] | None = None
            try:
                async with self.backend.move_on_after(self.address.command_timeout):
                    replies = await conn.round_trip(payload, count)
                if replies is None:
                    raise self.unavailable(
                        f"no reply within {self.address.command_timeout:g} s (command_timeout)"
                    )
                done = True
                return replies
            except _Failed as error:
                if attempt == 0 and conn.reused and not error.replied:
                    await self._forget_idle()  # they were opened before the same outage
                    continue
                raise self.unavailable(error.what) from None
            finally:
                if done and not self._closed:
                    self._release(conn)
                else:
                    await self._discard(conn)
        raise AssertionError("unreachable")

    async def connect(self) -> _Connection:
        """A new connection, authenticated and on its database."""
        address = self.address
        conn: _Connection | None = None
        try:
            async with self.backend.move_on_after(address.connect_timeout):
                stream = await self.backend.open_tcp_stream(address.host, address.port)
                opened = _Connection(stream)
                try:
                    await self._hello(opened)
                except BaseException:
                    await self.backend.shielded(stream.aclose)
                    raise
                conn = opened
        except OSError as error:
            raise self.unavailable(f"cannot connect ({error.strerror or error})") from None
        except _Failed as error:
            raise self.unavailable(error.what) from None
        if conn is None:
            raise self.unavailable(
                f"no connection within {address.connect_timeout:g} s (connect_timeout)"
            )
        return conn

    async def _hello(self, conn: _Connection) -> None:
        address = self.address
        commands: list[tuple[Arg, ...]] = []
        if address.password is not None:
            who = (address.username,) if address.username else ()
            commands.append(("AUTH", *who, address.password))
        if address.db:
            commands.append(("SELECT", address.db))
        if not commands:
            return
        payload = b"".join(encode_command(*command) for command in commands)
        replies = await conn.round_trip(payload, len(commands))
        for command, reply in zip(commands, replies, strict=True):
            if isinstance(reply, RedisError):
                raise _Failed(f"{_command_name([command])} refused: {reply.message}")

    async def _acquire(self) -> _Connection:
        while True:
            if self._closed:
                raise self.unavailable("the client is closed")
            if self._idle:
                conn = self._idle.pop()
                conn.reused = True
                return conn
            if self._open < self.address.max_connections:
                self._open += 1
                try:
                    return await self.connect()
                except BaseException:
                    self._open -= 1
                    self._wake()
                    raise
            signal = self.backend.new_signal()
            self._waiting.append(signal)
            await signal.wait()

    def _wake(self) -> None:
        # Every waiter looks again: one cancelled meanwhile cannot strand the rest.
        waiting, self._waiting = self._waiting, []
        for signal in waiting:
            signal.set()

    def _release(self, conn: _Connection) -> None:
        self._idle.append(conn)
        self._wake()

    async def _discard(self, conn: _Connection) -> None:
        self._open -= 1
        self._wake()
        await self.backend.shielded(conn.stream.aclose)

    async def _forget_idle(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await self._discard(conn)

    async def aclose(self) -> None:
        """Close every idle connection; later commands fail (those under way end as they do)."""
        self._closed = True
        await self._forget_idle()
        self._wake()


def _command_name(commands: list[tuple[Arg, ...]]) -> str:
    name = commands[0][0]
    text = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    return text.upper() if len(commands) == 1 else f"a pipeline ({text.upper()}, ...)"


class RedisReplayCache:
    """A :class:`~sansio_mcp.runtime.ReplayCache` shared by every replica: the first
    ``SET namespace:replay:KEY 1 NX PX ttl`` wins."""

    def __init__(self, redis: RedisClient, namespace: str) -> None:
        self.redis = redis
        self.namespace = namespace

    async def first_use(self, key: str, ttl: float) -> bool:
        reply = await self.redis.execute(
            "SET", namespaced(self.namespace, "replay", key), "1", "NX", "PX", expiry_ms(ttl)
        )
        return reply is not None


class RedisEventBus:
    """A :class:`~sansio_mcp.runtime.EventBus` over Redis pub/sub: channel NAME is
    Redis's ``namespace:NAME`` (``Stores.key(NAME)``), messages JSON objects.

    :meth:`run` (a task ``open_stores`` starts) holds the subscribed connection;
    after an outage it connects again and subscribes to every channel again
    (messages published meanwhile are missed, as the bus promises no history).
    ``publish`` first waits for this process's own pending subscriptions, so a
    listener subscribed before a publish of the same process hears it.
    """

    def __init__(self, redis: RedisClient, namespace: str) -> None:
        self.redis = redis
        self.namespace = namespace
        self.backend = redis.backend
        self._listeners: dict[str, list[Listener]] = {}
        self._confirmed: set[str] = set()
        # Set while the subscriber cannot reach Redis: publishing waits for no confirmation then.
        self._cut_off = False
        self._failures = 0
        self._changed: Signal = self.backend.new_signal()
        self._confirmations: Signal = self.backend.new_signal()

    def channel_key(self, channel: str) -> str:
        return namespaced(self.namespace, channel)

    async def publish(self, channel: str, message: dict[str, Any]) -> None:
        key = self.channel_key(channel)
        if key in self._listeners:
            await self._subscribed(key)
        await self.redis.execute("PUBLISH", key, _json.encode(message))

    def subscribe(self, channel: str, deliver: Callable[[dict[str, Any]], None]) -> Listener:
        subscription = Listener(
            self._listeners, self.channel_key(channel), deliver, lambda: self._changed.set()
        )
        listeners = self._listeners.setdefault(subscription.channel, [])
        listeners.append(subscription)
        if len(listeners) == 1:
            self._changed.set()
        return subscription

    async def settled(self) -> None:
        """Until Redis confirmed every subscription made so far (at most a command's
        time; not at all while cut off): a replica awaits it before it listens, so a
        message another replica publishes once it can reach this one is heard."""
        for key in list(self._listeners):
            await self._subscribed(key)

    async def _subscribed(self, key: str) -> None:
        """Until Redis confirmed ``key``'s subscription (at most a command's time;
        not at all while the subscriber is cut off)."""
        async with self.backend.move_on_after(self.redis.address.command_timeout):
            while not self._cut_off and key in self._listeners and key not in self._confirmed:
                signal = self._confirmations
                await signal.wait()

    async def run(self) -> None:
        """Hold the subscribed connection until cancelled."""
        while True:
            try:
                conn = await self.redis.connect()
            except StoreUnavailable:
                self._cut_off = True
                self._notify()
            else:
                self._cut_off = False
                try:
                    async with self.backend.open_task_group() as group:
                        group.start_soon(self._send_subscriptions, conn, group)
                        await self._read(conn)
                        group.cancel()
                finally:
                    self._cut_off = True
                    self._confirmed.clear()
                    self._notify()
                    await self.backend.shielded(conn.stream.aclose)
            # Also after a connection that ended: one Redis closes at once (maxclients)
            # must not make this a busy loop.
            await self.backend.sleep(_RETRY_DELAYS[min(self._failures, len(_RETRY_DELAYS) - 1)])
            self._failures += 1

    def _notify(self) -> None:
        signal, self._confirmations = self._confirmations, self.backend.new_signal()
        signal.set()

    async def _send_subscriptions(self, conn: _Connection, group: Any) -> None:
        sent: set[str] = set()
        try:
            while True:
                self._changed = self.backend.new_signal()
                wanted = set(self._listeners)
                new, gone = sorted(wanted - sent), sorted(sent - wanted)
                data = b""
                if new:
                    data += encode_command("SUBSCRIBE", *new)
                if gone:
                    data += encode_command("UNSUBSCRIBE", *gone)
                    self._confirmed.difference_update(gone)
                if data:
                    await conn.send(data)
                sent = wanted
                await self._changed.wait()
        except _Failed:
            group.cancel()

    async def _read(self, conn: _Connection) -> None:
        try:
            while True:
                reply = await conn.reply()
                if not (
                    isinstance(reply, list) and len(reply) == 3 and isinstance(reply[1], bytes)
                ):
                    continue
                kind, channel = reply[0], reply[1].decode(errors="replace")
                if kind == b"message":
                    self._deliver(channel, reply[2])
                elif kind == b"subscribe":
                    self._failures = 0  # a working connection: the next outage starts afresh
                    self._confirmed.add(channel)
                    self._notify()
                elif kind == b"unsubscribe":
                    self._confirmed.discard(channel)
        except _Failed:
            return

    def _deliver(self, channel: str, data: Any) -> None:
        try:
            message = _json.loads(data) if isinstance(data, bytes) else None
        except RemoteProtocolError:
            return  # not ours: every message we publish is a JSON object
        if not isinstance(message, dict):
            return
        for subscription in list(self._listeners.get(channel, ())):
            try:
                subscription.deliver(message)
            except Exception:
                # One listener's bug must not cut every other off the bus.
                _log.exception("a listener of %s failed", channel)
