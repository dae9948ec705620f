"""An HTTP MCP service, written once for every backend: which session host
drives which session, when a finished stateless request's session can be
dropped, how long and how many connections a peer may hold
(:class:`ServerLimits`, :func:`serve_requests`, :class:`ConnectionGate`), and
how an answer is written and streamed while the client-gone watch runs
(:func:`answer_exchange`, :class:`HTTPService`).  The adapters only accept
connections (a :class:`Connection` each) or, for ASGI, move messages."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    Protocol,
    TypedDict,
    TypeVar,
    Unpack,
    overload,
)

from .._errors import LocalProtocolError
from .._events import CancelRequested, RequestReceived, SessionInitialized
from .._http import ConnectionEnded, HTTPError, HTTPRequest, HTTPServerConnection
from .._jsonrpc import RequestId
from .._legacy_sse import LegacySSEServer
from .._requests import NO_ENTRIES
from .._server_session import ServerSession
from .._session import Session
from .._state import SessionState
from .._streamable_http import Exchange, StreamableHTTPServer
from ..auth._router import ProtectedRouter, Router
from ._auth import Verdict, verify_request
from ._backend import Backend, Cancellable, Connection, Deadline, Signal, TaskGroup, Timer
from ._driver import Driver, refused_result, respond_with_failure
from ._host import Output
from ._server import Context, Server, _answer_later
from ._serving import serving
from ._session_store import SharedSessions, shared_sessions

_log = logging.getLogger("sansio_mcp.http")

__all__ = [
    "DEFAULT_LIMITS",
    "ConnectionGate",
    "HTTPService",
    "ResponseWriter",
    "RoutedOutput",
    "Router",
    "ServerLimits",
    "SessionHost",
    "SingleRequestHost",
    "SessionHosts",
    "SessionOptions",
    "answer_exchange",
    "legacy_sse_router",
    "refuse_connection",
    "serve_requests",
    "streamable_http_router",
]

_READ_SIZE = 65536
#: What a connection's next request is (anything else: more bytes are needed).
_REQUEST_READ = (HTTPRequest, HTTPError, ConnectionEnded)
#: Session hosts a service holds before it first looks for those of ended sessions.
_FIRST_SWEEP = 64


def _default_max_connections() -> int:
    """1,000, or half the process's open-file limit where that is lower: a listener
    that took every descriptor would leave none for its sessions and would have to
    drop new peers unanswered, where under the cap they get a 503."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # no such limit here (Windows)
        return 1000
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 1000
    return max(1, min(1000, soft // 2))


@dataclass(frozen=True)
class ServerLimits:
    """How long and how many connections the HTTP listeners (Streamable HTTP,
    legacy SSE) let peers hold, so that slow or idle peers cannot take every
    socket: ``serve_http``, ``serve_sse`` and ``serve_router`` take one as ``limits=``.

    * ``request_timeout``: seconds for a request's head and body, from its first
      byte (from the accept for a connection's first request); slower, the peer
      gets 408 and the connection is closed.  A response in progress, an SSE
      stream included, is not under it.
    * ``keep_alive_timeout``: seconds a kept-alive connection may wait, idle,
      for its next request; then it is closed quietly.
    * ``max_connections``: connections open at once (1,000, or half the open-file
      limit where that is lower); one more gets an immediate 503 with
      ``Retry-After: retry_after`` and is closed.
    * ``max_read_ahead``: bytes a connection may hold unparsed while its request is
      answered (64 KiB): what a client sends meanwhile (a pipelined request) is read
      up to it, and then no more until the answer is over, so that TCP holds the
      client back.  While reading waits, a client's leaving is noticed only when
      the answer's next write fails.
    """

    request_timeout: float = 20.0
    keep_alive_timeout: float = 15.0
    max_connections: int = field(default_factory=_default_max_connections)
    retry_after: int = 1
    max_read_ahead: int = 64 * 1024

    def __post_init__(self) -> None:
        if self.request_timeout <= 0 or self.keep_alive_timeout <= 0:
            raise ValueError("request_timeout and keep_alive_timeout must be positive")
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if self.max_read_ahead < 1:
            raise ValueError("max_read_ahead must be at least 1")

    def overloaded_response(self) -> bytes:
        """What a connection beyond ``max_connections`` gets before it is closed
        (written whole, as the connection has read nothing)."""
        body = b"too many connections; try again later\n"
        head = (
            "HTTP/1.1 503 Service Unavailable\r\n"
            f"retry-after: {self.retry_after}\r\n"
            "content-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\n"
            "connection: close\r\n\r\n"
        )
        return head.encode("ascii") + body


#: The limits of a listener given none.
DEFAULT_LIMITS = ServerLimits()


class ConnectionGate:
    """Counts a listener's open connections against ``ServerLimits.max_connections``."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.open = 0

    def enter(self) -> bool:
        """Admit a new connection (True; call :meth:`leave` when it closes), or
        refuse it (False: answer ``limits.overloaded_response()`` and close)."""
        if self.open >= self.limits.max_connections:
            return False
        self.open += 1
        return True

    def leave(self) -> None:
        self.open -= 1


#: How long a refused connection is read from after its 503, at the most.
REFUSAL_LINGER = 1.0


async def refuse_connection(stream: Connection, backend: Backend, limits: ServerLimits) -> None:
    """Answer a connection beyond ``max_connections`` (an HTTP listener's, or a
    WebSocket one's before its handshake) with 503, then end our side and read what
    the peer sent until it closes (``REFUSAL_LINGER`` s at most): closing a socket
    with unread bytes resets it, and the peer would lose the 503 with it.  A peer
    that left first is no error.  The caller closes the connection."""
    try:
        async with backend.move_on_after(REFUSAL_LINGER):
            await stream.send_all(limits.overloaded_response())
            await stream.send_eof()
            while await stream.receive_some(_READ_SIZE):
                pass
    except OSError:
        pass


def route(
    router: Router,
    request: HTTPRequest,
    now: float,
    wall_clock: float | None = None,
    verdict: Verdict | None = None,
) -> Exchange:
    """``router``'s exchange for ``request``, after it has seen the time (a router with
    ``expire_idle``, as :class:`StreamableHTTPServer`, ends its idle sessions then; a
    :class:`~sansio_mcp.auth.ProtectedRouter` judges token expiry by ``wall_clock``,
    and takes the ``verdict`` :func:`verify_request` awaited for it)."""
    expire_idle = getattr(router, "expire_idle", None)
    if expire_idle is not None:
        expire_idle(now)
    set_time = getattr(router, "set_time", None)
    if set_time is not None and wall_clock is not None:
        set_time(wall_clock)
    if verdict is not None and isinstance(router, ProtectedRouter):
        return router.handle_verified(request, *verdict)
    return router.handle(request)


class SessionHost(Protocol):
    """What an adapter's session host offers the service."""

    driver: Driver
    #: While set, the next request handler the driver starts is held (:attr:`held`).
    holding: bool
    held: HeldHandler | None

    def _schedule_flush(self) -> None: ...

    #: Whether it joined the server's hub (see :meth:`SessionHosts.host_for`).
    joined: bool

    def process_events(self) -> None:
        """Act on the session's events (its driver's)."""

    def cancel_all_handlers(self) -> None: ...

    def end(self) -> None:
        """The exchange is over: cancel the handlers, then release the host."""

    def release(self) -> None: ...


H = TypeVar("H", bound=SessionHost)
R = TypeVar("R", bound=Router)
RH = TypeVar("RH", bound="RoutedOutput")


class SessionHosts(Generic[H]):
    """One host per live session; a stateless request's host lives as long as its exchange."""

    def __init__(
        self, server: Server, router: Router, make_host: Callable[[ServerSession], H]
    ) -> None:
        self.server = server
        self.router = router
        #: What makes the host of a request served alone (a :class:`SingleRequestHost`),
        #: when ``make_host`` is a :meth:`RoutedOutput.factory` class (else ``make_host``).
        self.make_single: Callable[[ServerSession], Any] = make_host
        #: What makes a new session's host (an adapter whose task group starts later,
        #: as the ASGI app's, sets it then: see :meth:`RoutedOutput.factory`).
        self.make_host = make_host
        self._hosts: dict[int, H] = {}
        self._sessions: dict[int, ServerSession] = {}
        # Hosts held when the next sweep for ended sessions is due (see host_for).
        self._sweep_at = _FIRST_SWEEP
        #: Handshake sessions shared with other replicas (a shared store), or None.
        self.shared: SharedSessions | None = None

    @property
    def make_host(self) -> Callable[[ServerSession], H]:
        return self._make_host

    @make_host.setter
    def make_host(self, make_host: Callable[[ServerSession], H]) -> None:
        self._make_host = make_host
        self.make_single = getattr(make_host, "single", make_host)

    def __len__(self) -> int:
        return len(self._hosts)

    def host_for(self, session: ServerSession, *, alone: bool = False) -> H:
        """``session``'s host, made if it has none (``alone``: a request served on a
        session of its own, whose host is a :class:`SingleRequestHost`)."""
        key = id(session)
        host = self._hosts.get(key)
        if host is None:
            if len(self._hosts) >= self._sweep_at:
                self._sweep()
            host = (self.make_single if alone else self._make_host)(session)
            self._hosts[key] = host
            self._sessions[key] = session
            # A session of its own joins the hub only if the hub can reach it (a
            # subscription): told nothing, it would be a hub member for nothing.
            if not alone:
                self.server.hub.add(session, host._schedule_flush)
            elif session.reached_by_broadcasts:
                self.server.hub.add(session, host._schedule_flush)
                host.joined = True
        return host

    def _sweep(self) -> None:
        """Drop the hosts of sessions the router ended without a request saying so
        (idle expiry, room made for a new one, a DELETE at another replica): done when
        the hosts have doubled since the last sweep, so it costs O(1) a session."""
        for session in list(self._sessions.values()):
            if session.state is SessionState.CLOSED and not self.router.owns(session):
                self._drop(session)
        self._sweep_at = max(_FIRST_SWEEP, 2 * len(self._hosts))

    def _drop(self, session: ServerSession) -> None:
        key = id(session)
        host = self._hosts.pop(key, None)
        self._sessions.pop(key, None)
        self.server.hub.remove(session)
        if host is not None:
            host.cancel_all_handlers()
            host.release()

    @overload
    def begin(self, exchange: Exchange) -> H | None: ...

    @overload
    def begin(self, exchange: Exchange, *, hold: Literal[True]) -> HeldHandler | None: ...

    def begin(self, exchange: Exchange, *, hold: bool = False) -> H | HeldHandler | None:
        """Drive what the request fed into its session (handlers start here); its
        host, or with ``hold`` the request's handler held for the caller to run
        (None: none is left to run)."""
        session = exchange.session
        if session is None:
            return None
        alone = exchange.alone
        host = self._hosts.get(id(session))  # host_for's first step, a call less
        if host is None:
            host = self.host_for(session, alone=alone)
        if not hold:
            if alone:
                host.process_events()
            else:
                host.driver.process_events()  # a hop fewer
            self.router.flush(session)
            return host
        host.holding = True
        try:
            if alone:
                host.process_events()
            else:
                host.driver.process_events()
        finally:
            host.holding = False
        held, host.held = host.held, None
        self.router.flush(session)
        return held

    def disconnected(self, exchange: Exchange) -> None:
        """The client went away mid-response."""
        exchange.disconnected()
        session = exchange.session
        if session is not None and id(session) in self._hosts:
            self._hosts[id(session)].process_events()

    def finish(self, exchange: Exchange) -> None:
        """The response is over: drop a stateless request's host and session."""
        session = exchange.session
        if session is None or not exchange.finished:
            return
        if not exchange.alone:
            if not self.router.owns(session):
                self._drop(session)
            return
        # A session of its own, never the router's: _drop's, a few calls fewer.
        key = id(session)
        host = self._hosts.pop(key, None)
        if host is not None:
            del self._sessions[key]
            if host.joined:
                self.server.hub.remove(session)
            host.end()


#: What a connection is doing (:attr:`_Connection.phase`): what its deadline or
#: its timer ends when reached.
_IDLE, _READING, _HEAD, _HANDLER, _UNTIMED = range(5)


class HeldHandler:
    """A request's handler that :meth:`RoutedOutput._spawn_handler` held for the
    connection serving its exchange, which runs it in its own task (no task per
    request).  Cancelling it (the request cancelled, the client gone, the session
    dropped) ends that connection's deadline block; :func:`serve_requests` goes on
    after it."""

    __slots__ = ("_deadline", "_handlers", "cancelled", "done", "fn", "request_id")

    def __init__(
        self,
        request_id: RequestId,
        fn: Callable[[], Awaitable[None]],
        handlers: dict[RequestId, Cancellable],
    ) -> None:
        self.request_id = request_id
        self.fn = fn
        self.cancelled = False
        self.done = False
        self._deadline: Deadline | None = None
        #: The host's running handlers, where this one is while it runs.
        self._handlers = handlers
        handlers[request_id] = self

    async def run(self, deadline: Deadline) -> None:
        """Run the handler (unless cancelled already) under ``deadline``."""
        try:
            if not self.cancelled:
                self._deadline = deadline
                await self.fn()
        finally:
            self._deadline = None
            if self._handlers.get(self.request_id) is self:
                del self._handlers[self.request_id]
        self.done = True

    def cancel(self) -> None:
        if self.done or self.cancelled:
            return
        self.cancelled = True
        if self._deadline is not None:
            self._deadline.set(0.0)


async def serve_requests(
    conn: HTTPServerConnection,
    receive: Callable[[], Awaitable[bytes | bytearray]],
    send_all: Callable[[bytes], Awaitable[None]],
    answer: Callable[[Exchange], Awaitable[bool]],
    hosts: SessionHosts[Any],
    backend: Backend,
    limits: ServerLimits,
) -> None:
    """One connection's requests, one after another while it is kept alive: each is
    read under ``limits``, routed to an exchange whose session ``hosts`` drive, its
    head given the exchange's grace, and answered by ``answer`` (the adapter's byte
    moving; False when the client went away).  A request's handler runs in this
    task (:class:`HeldHandler`); should the head's grace end or a stream open
    meanwhile, the answer is written by a task of its own beside it.  One
    :class:`Deadline` per connection times every wait with a limit (idle, reading,
    the head), set anew for each; when one is reached the connection closes
    (quietly, or with 408), or the exchange's answer goes on as a stream and the
    next request gets a new deadline.  Returns when the connection should close;
    the caller closes it, and handles what its streams raise."""
    async with backend.open_task_group() as group:
        served = _Connection(conn, receive, send_all, answer, hosts, backend, limits, group)
        try:
            await served.run()
        except BaseException:
            group.cancel()  # an answer's writer task, if any
            raise
        finally:
            served.close()


class _Connection:
    """:func:`serve_requests`' state: what the connection is doing (:attr:`phase`),
    the handler it runs, and the task writing an answer beside that handler.

    The limits that end most requests' waits in time, the idle wait's and the held
    handler's head grace, are kept by one timer that is not moved for each request:
    it is armed for the earliest due, and when it fires, what is not due yet arms
    it again.  An idle connection past its due has its deadline set to now, which
    ends the block; the rest (a request arriving in pieces, a head awaited without
    a held handler) set the deadline itself."""

    def __init__(
        self,
        conn: HTTPServerConnection,
        receive: Callable[[], Awaitable[bytes | bytearray]],
        send_all: Callable[[bytes], Awaitable[None]],
        answer: Callable[[Exchange], Awaitable[bool]],
        hosts: SessionHosts[Any],
        backend: Backend,
        limits: ServerLimits,
        group: TaskGroup,
    ) -> None:
        self.conn = conn
        self.receive = receive
        self.send_all = send_all
        self.answer = answer
        self.hosts = hosts
        self.backend = backend
        self.limits = limits
        self.group = group
        self.phase = _READING
        self.kept_alive = False
        #: The exchange of a request being handled (for what follows its deadline).
        self.exchange: Exchange | None = None
        self._deadline: Deadline | None = None
        #: Whether the deadline is set (else it is at infinity).
        self._deadline_set = False
        #: The idle time ran out: the deadline is set to now.
        self._closing = False
        self._timer: Timer | None = None
        self._timer_at = math.inf
        self._idle_due = math.inf
        self._grace_due = math.inf
        #: The exchange whose held handler runs, and its writer task's outcome.
        self._held_exchange: Exchange | None = None
        self._writing: _Writing | None = None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    async def run(self) -> None:
        while True:
            async with self.backend.open_deadline() as deadline:
                self._deadline, self._deadline_set = deadline, False
                await self._serve(deadline)
                return
            # The deadline ended the block: what was under way says what follows.
            if self.phase == _READING:
                reason = f"request not received within {self.limits.request_timeout:g} s"
                await self.send_all(self.conn.send_error_response(408, reason))
                return
            exchange, self.exchange = self.exchange, None
            self.phase = _UNTIMED
            if exchange is None:
                return  # idle past keep_alive_timeout
            # The head's grace is over (the answer goes on as a stream, untimed), or
            # the handler was cancelled (its answer, if any, goes as it comes).
            if not await self._answer(exchange) or not self.conn.start_next():
                return
            self.kept_alive = True

    async def _untimed(self, deadline: Deadline) -> None:
        """Unset the deadline after a wait it timed ended; if it was reached meanwhile
        its cancellation is under way: take it here, in the phase that was timed
        (which says what follows), not later in another."""
        self._set_deadline(deadline, math.inf)
        if deadline.expired:
            await self.backend.sleep(0)

    def _set_deadline(self, deadline: Deadline, seconds: float) -> None:
        self._deadline_set = seconds != math.inf
        deadline.set(seconds)

    async def _read_request(self, deadline: Deadline) -> HTTPRequest | HTTPError | ConnectionEnded:
        """The connection's next request, read under ``limits``: the idle wait of a
        kept-alive connection by the timer, the request's head and body (from its
        first byte, or from the accept for the first request) by the deadline."""
        conn = self.conn
        event = conn.next_request()
        if isinstance(event, _REQUEST_READ):
            return event  # pipelined: it came with the previous one
        if self.kept_alive:
            self.phase = _IDLE
            self._idle_due = due = self.backend.clock() + self.limits.keep_alive_timeout
            if due < self._timer_at:
                self._arm(due)
            data = await self.receive()
            if self._closing:
                # The idle time ran out as these bytes came: the connection is closing
                # (its deadline reached), as if they had come a moment later.
                return ConnectionEnded()
            conn.receive_data(data)
            event = conn.next_request()
            if isinstance(event, _REQUEST_READ):
                return event  # whole in one read, as most are: no request time limit to set
        self.phase = _READING
        self._set_deadline(deadline, self.limits.request_timeout)
        while True:
            event = conn.next_request()
            if isinstance(event, _REQUEST_READ):
                return event
            conn.receive_data(await self.receive())

    async def _serve(self, deadline: Deadline) -> None:
        """The loop under one deadline: returns when the connection should close, or
        is ended by the deadline (:attr:`phase` says in which phase)."""
        conn, hosts, backend = self.conn, self.hosts, self.backend
        while True:
            request = await self._read_request(deadline)
            if self._deadline_set:  # what follows is not the request's reading
                await self._untimed(deadline)  # reached as it came: 408
            self.phase = _UNTIMED
            if isinstance(request, ConnectionEnded):
                return
            if isinstance(request, HTTPError):
                await self.send_all(conn.send_error_response(request.status, request.reason))
                return
            verdict = None
            shared = hosts.shared
            if isinstance(hosts.router, ProtectedRouter):
                verdict = await verify_request(hosts.router, request, backend, hosts.server.stores)
            try:
                if shared is not None:
                    await shared.before(request, verdict)
                exchange = route(
                    hosts.router, request, backend.clock(), backend.wall_clock(), verdict
                )
                if shared is not None:
                    await shared.after(request, exchange)
            except Exception:
                # A bug met by one request must not take the whole server down with it.
                _log.exception("internal error routing %s %s", request.method, request.target)
                await self.send_all(conn.send_error_response(500, "internal server error"))
                return
            # A handler whose answer this exchange waits for runs here; one answered
            # by another (a 202 now, its answer on an SSE stream) runs in a task.
            if exchange.head_ready:
                held = None
                hosts.begin(exchange)
            else:
                held = hosts.begin(exchange, hold=True)
            if held is not None:
                self.phase, self.exchange = _HANDLER, exchange
                await self._run_held(held, exchange, deadline)
            if not exchange.head_ready and self._writing is None:
                self.phase, self.exchange = _HEAD, exchange
                self._set_deadline(deadline, exchange.head_grace)
                try:
                    while not exchange.head_ready:
                        await _news(exchange, backend)
                except BaseException:
                    if not deadline.expired:  # cancelled (the server stops): the exchange ends
                        _end(exchange, hosts)
                    raise
                await self._untimed(deadline)  # a response is under no limit
            self.phase, self.exchange = _UNTIMED, None
            if not await self._answer(exchange) or not conn.start_next():
                return
            self.kept_alive = True

    async def _run_held(self, held: HeldHandler, exchange: Exchange, deadline: Deadline) -> None:
        """Run ``held`` in this task; an answer that must go out meanwhile (the head's
        grace is over, a stream opened) is written by a task of its own."""
        self._held_exchange = exchange
        exchange.wake = self._news_while_held
        self._grace_due = due = self.backend.clock() + exchange.head_grace
        if due < self._timer_at:
            self._arm(due)
        try:
            await held.run(deadline)
            if held.cancelled:
                # Cancelled as it ended: the deadline is reached; let it end the block
                # here, not in the middle of the answer.
                await self.backend.sleep(0)
        except BaseException:
            if not deadline.expired:  # cancelled (the server stops): the exchange ends
                _end(exchange, self.hosts)
            raise
        finally:
            self._held_exchange = None

    def _arm(self, due: float) -> None:
        """Have the timer fire at ``due`` (on the backend's clock)."""
        timer = self._timer
        if timer is None:
            timer = self._timer = self.backend.start_timer(self.group, self._timer_fired)
        self._timer_at = due
        timer.set(max(0.0, due - self.backend.clock()))

    def _timer_fired(self) -> None:
        """End what is due (an idle wait, a held handler's head grace); arm the timer
        for what is not due yet."""
        self._timer_at = math.inf
        now = self.backend.clock()
        due = math.inf
        if self.phase == _IDLE:
            if self._idle_due <= now:
                if self._deadline is not None:
                    self._closing = True
                    self._deadline.set(0.0)  # ends the block: the connection closes
            else:
                due = self._idle_due
        exchange = self._held_exchange
        if exchange is not None and self._writing is None:
            if self._grace_due <= now:
                self._start_writing(exchange)
            else:
                due = min(due, self._grace_due)
        if due != math.inf:
            self._arm(due)

    def _news_while_held(self) -> None:
        exchange = self._held_exchange
        if exchange is not None and self._writing is None and exchange.streaming:
            if exchange.head_ready and not exchange.finished:
                self._start_writing(exchange)  # a stream opened before the handler's end

    def _start_writing(self, exchange: Exchange) -> None:
        writing = self._writing = _Writing(self.backend)

        async def write() -> None:
            try:
                writing.answered = await self._write_answer(exchange)
            except OSError:
                pass  # the client went away: the exchange ends with its handler
            except Exception:
                _log.exception("error while answering an HTTP request; closing the connection")
            finally:
                writing.done.set()

        self.group.start_soon(write)

    async def _write_answer(self, exchange: Exchange) -> bool:
        shared = self.hosts.shared
        if shared is not None:
            # A change its handler made to a shared session's level or subscriptions
            # reaches the other replicas before the answer does.
            await shared.answering(exchange)
        return await self.answer(exchange)

    async def _answer(self, exchange: Exchange) -> bool:
        """``exchange``'s answer (written here, or by the writer task, waited for),
        then its end; False when the client went away."""
        try:
            writing, self._writing = self._writing, None
            if writing is None:
                return await self._write_answer(exchange)
            await writing.done.wait()
            return writing.answered
        finally:
            _end(exchange, self.hosts)


class _Writing:
    """An answer being written by a task of its own (see :meth:`_Connection._run_held`)."""

    __slots__ = ("answered", "done")

    def __init__(self, backend: Backend) -> None:
        self.answered = False
        self.done = backend.new_signal()


def _end(exchange: Exchange, hosts: SessionHosts[Any]) -> None:
    if not exchange.finished:
        hosts.disconnected(exchange)  # the answer broke off
    hosts.finish(exchange)


class RoutedOutput:
    """Mixed into a session host (before it) whose session is served over HTTP:
    its output is routed to the exchanges, which never blocks, so it is done at
    once rather than in a task.  :meth:`serving` makes one."""

    router: Router
    # A stateless request's host spawns no timer task unless it gets a deadline.
    timer_on_demand = True
    #: Routed at once: there is nothing for a flusher task to send.
    flusher = None
    #: While set (:meth:`SessionHosts.begin`), a request's handler is held for the
    #: connection to run rather than given a task: the first one, in :attr:`held`.
    holding = False
    held: HeldHandler | None = None

    @property
    def output(self) -> Output:
        """The host itself (the session host's constructor is given no ``output``):
        not kept as an attribute, which would make the host refer to itself and
        leave it (and its session) to the collector."""
        return self

    @output.setter
    def output(self, output: Output) -> None:
        if output is not self:
            raise AttributeError("a host whose output is routed is its own output")

    @classmethod
    def serving(
        cls: type[RH],
        router: Router,
        server: Server,
        context: Callable[[RH, RequestReceived], Context],
        session: ServerSession,
    ) -> RH:
        """A host of ``session`` answering with ``server`` (handlers see
        ``context(host, event)``), its output routed by ``router``."""
        make: Callable[..., RH] = cls  # the session host after it in the MRO takes these
        host = serving(server, context, make, session)
        host.router = router
        return host

    @classmethod
    def attached(
        cls: type[RH],
        group: Any,
        router: Router,
        server: Server,
        context: Callable[[RH, RequestReceived], Context],
        session: ServerSession,
    ) -> RH:
        """:meth:`serving`, its tasks run in ``group`` (the adapter's nursery or task group)."""
        make: Callable[..., RH] = cls
        host = serving(server, context, make, session)  # cls.serving's, a call less
        host.router = router
        host.attach(group)
        return host

    @classmethod
    def factory(
        cls: type[RH],
        group: Any,
        router: Router,
        server: Server,
        context: Callable[[RH, RequestReceived], Context],
    ) -> Callable[[ServerSession], RH]:
        """What makes the hosts of one service's sessions, as :meth:`attached` does
        (``factory(group, router, server, context)(session)``): a subclass of ``cls``
        made once, whose methods hold what all its hosts share (the group, the router,
        the server and the handlers' context), so that a host (one per stateless
        request) is made by one constructor call, with no closure of its own."""
        # The session host's constructor (after this class in the MRO).
        base_init: Callable[..., None] = cls.__init__

        # What :func:`serving`'s closure does, one function for every host (the names
        # are this function's cells, read faster than class attributes).
        def answer_request(
            self: RH, event: RequestReceived
        ) -> dict[str, Any] | Awaitable[dict[str, Any]]:
            return server.begin(context(self, event))

        def __init__(self: RH, session: ServerSession) -> None:
            self.router = router
            base_init(self, session, handle_request=self._answer_request)
            self.attach(group)

        namespace = {
            "__init__": __init__,
            "_answer_request": answer_request,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        }
        made = type(cls.__name__, (cls,), namespace)

        # The host of a request served alone, its class holding the same (see
        # SingleRequestHost).
        made.single = type(  # type: ignore[attr-defined]
            "SingleRequestHost",
            (_ForwardingRest if _foreign(made) else SingleRequestHost,),
            {
                **_forwarded(made),
                "__slots__": (),
                "__module__": SingleRequestHost.__module__,
                "backend": cls.backend,  # type: ignore[attr-defined]
                "_group": group,
                "_router": router,
                "_server": server,
                "_context": staticmethod(context),
                "_full_class": made,
            },
        )
        return made

    if TYPE_CHECKING:

        def _answer_request(
            self, event: RequestReceived
        ) -> dict[str, Any] | Awaitable[dict[str, Any]]:
            """A :meth:`factory` host's request handler."""

    def attach(self, group: Any) -> None:
        """The session host's, its output being itself (read so, not by the ``output``
        property): the timer when :attr:`timer_on_demand` says, a flusher if one is set."""
        self._group = group
        if not self.timer_on_demand or self.session.next_deadline() is not None:
            self._start_timer()
        if self.flusher is not None:
            self._flusher = group.start_cancellable(self.flusher)

    if TYPE_CHECKING:
        session: ServerSession | Any
        _handlers: dict[RequestId, Cancellable]
        _group: Any
        _flusher: Any

        def _start_timer(self) -> None:
            """The session host's (after this class in the MRO)."""

    #: Whether it joined the server's hub (every session's host does, but that of a
    #: session of its own the hub cannot reach: see :meth:`SessionHosts.host_for`).
    joined = True

    def process_events(self) -> None:
        """Act on the session's events (what :class:`SessionHosts` calls)."""
        self.driver.process_events()

    def end(self) -> None:
        """The exchange is over: cancel the handlers, then release the host."""
        self.cancel_all_handlers()  # type: ignore[attr-defined]
        self.release()  # type: ignore[attr-defined]

    if TYPE_CHECKING:
        driver: Driver

    def _spawn_handler(
        self, request_id: RequestId | None, fn: Callable[[], Awaitable[None]]
    ) -> None:
        if not self.holding or request_id is None or self.held is not None:
            super()._spawn_handler(request_id, fn)  # type: ignore[misc]
            return
        self.held = HeldHandler(request_id, fn, self._handlers)

    def schedule(self) -> None:
        assert isinstance(self.session, ServerSession)
        self.router.flush(self.session)

    def send_now(self) -> bool:
        self.schedule()
        return True

    async def flush(self) -> None:
        self.schedule()


class _Ended:
    """What a :class:`SingleRequestHost` holds for its full host once its request is
    over: nothing left to cancel or release, and none to make (see ``full``)."""

    __slots__ = ()

    def cancel_all_handlers(self) -> None:
        pass

    def release(self) -> None:
        pass


_ENDED: Any = _Ended()


class SingleRequestHost:
    """The host of a request served on a session of its own (every stateless request),
    made by :meth:`RoutedOutput.factory`'s service (its ``single`` class, whose class
    attributes are what the service's hosts share: task group, router, server, the
    handlers' context, the backend).

    One small object per request, with the request's session its own for life (set
    once, never swapped): a handler's context that outlives its request can reach only
    that request's session and stream.  It drives that session itself, without a
    :class:`Driver`: the request's handler and its cancellation.  Anything else (another
    kind of event, a request to the client, the rest of a session host's API) is done
    by a full host of the service's class, made for this session on first need
    (:meth:`full`), which then drives the session's events; once the request is over
    (:meth:`end`) none is made: what needs one raises :class:`LocalProtocolError`."""

    # A weak reference allowed: what outlives a request may key by its host (the gateway).
    __slots__ = ("__weakref__", "_full", "_handlers", "held", "holding", "joined", "session")

    # What the service's hosts share (set on the class :meth:`RoutedOutput.factory` makes).
    backend: Backend
    _group: TaskGroup
    _router: Router
    _server: Server
    #: What makes a handler's context: ``context(host, event)``.
    _context: Callable[[Any, RequestReceived], Context]
    #: The service's full host class, made by the same factory.
    _full_class: Callable[[ServerSession], Any]

    def __init__(self, session: ServerSession) -> None:
        self.session = session
        #: The running handler task, by request id (its session has one request): the
        #: shared read-only NO_ENTRIES until one runs (most are answered at once).
        self._handlers: dict[RequestId, Cancellable] = NO_ENTRIES
        self.holding = False
        self.held: HeldHandler | None = None
        self._full: Any = None
        #: Whether it joined the server's hub (:meth:`SessionHosts.host_for`).
        self.joined = False

    def full(self) -> Any:
        """The full host of this session (made on first need, attached to the service's
        task group, sharing this host's handler table), which drives its events from now on."""
        full = self._full
        if full is None:
            full = self._full = self._full_class(self.session)
            if self._handlers is NO_ENTRIES:
                self._handlers = {}
            full._handlers = self._handlers
        elif full is _ENDED:
            # A context kept past its request: a host made now would never be ended.
            raise LocalProtocolError(
                "this request is over: its session (a session of its own) takes no "
                "more requests to the client, notifications or tasks from its host"
            )
        return full

    # A session host's API beyond the primitives (notify, shielded, spawn_task, driver,
    # ...) is the full host's: a property each on the class RoutedOutput.factory makes
    # (_forwarded), not a __getattr__, which would make every read of a slot here a
    # slower, unspecialized one (about 4,700 instructions a stateless request).

    # What the service asks of a session host ------------------------------------------

    def process_events(self) -> None:
        """Act on the session's events: a request starts its handler, a cancellation
        cancels it; at any other kind the full host takes over (from that event on)."""
        full = self._full
        if full is None and type(self.session).next_event is Session.next_event:
            events = self.session.event_queue()
            while events:
                event = events[0]
                kind = type(event)
                if kind is RequestReceived:
                    events.popleft()
                    if TYPE_CHECKING:  # no isinstance call per request
                        assert isinstance(event, RequestReceived)
                    self._begin(event)
                elif kind is CancelRequested:
                    events.popleft()
                    if TYPE_CHECKING:
                        assert isinstance(event, CancelRequested)
                    handle = self._handlers.get(event.request_id)
                    if handle is not None:
                        handle.cancel()
                elif kind is SessionInitialized:
                    # A handshake-era request served alone (a router keeping no
                    # sessions) comes after one; a server's driver only notes it.
                    events.popleft()
                else:
                    break
            else:
                return
        # The full host acts from here on, holding the request's handler as this one
        # would (for the connection to run it: see SessionHosts.begin).
        full = self.full()
        full.holding = self.holding
        try:
            full.driver.process_events()
        finally:
            full.holding = False
        if self.held is None:
            self.held, full.held = full.held, None

    def _begin(self, event: RequestReceived) -> None:
        """Answer ``event`` at once if its handler can, else in a task (or held)."""
        # answer_request's, its context made here and its answer inline (calls fewer
        # per request); what must wait is answered by the same _answer_later.
        session = self.session
        try:
            ctx = self._context(self, event)
            outcome = self._server.begin(ctx)
        except Exception as exc:
            respond_with_failure(session, event.request_id, event.method, exc)
            return
        if isinstance(outcome, dict):
            try:
                session.respond(event.request_id, outcome)
            except LocalProtocolError as exc:
                refused_result(session, event.request_id, event.method, exc)
            return
        self._spawn(event.request_id, partial(self._finish, ctx, outcome))

    async def _finish(self, ctx: Context, outcome: Awaitable[dict[str, Any]]) -> None:
        await _answer_later(ctx, outcome)
        self.schedule()

    def _spawn(self, request_id: RequestId, fn: Callable[[], Awaitable[None]]) -> None:
        handlers = self._handlers
        if handlers is NO_ENTRIES:
            handlers = self._handlers = {}
        if self.holding and self.held is None:
            self.held = HeldHandler(request_id, fn, handlers)
            return

        def forget() -> None:
            if handlers.get(request_id) is handle:
                del handlers[request_id]

        handle = self._group.start_cancellable(fn, forget)
        handlers[request_id] = handle

    def cancel_all_handlers(self) -> None:
        """The exchange is over: cancel the handler (and the full host's tasks)."""
        if self._handlers:
            for handle in list(self._handlers.values()):
                handle.cancel()
        if self._full is not None:
            self._full.cancel_all_handlers()

    def release(self) -> None:
        if self._full is not None:
            self._full.release()

    def end(self) -> None:
        """The exchange is over: :meth:`cancel_all_handlers`, then :meth:`release`
        (neither has anything to do for a request answered at once)."""
        if self._handlers or self._full is not None:
            self.cancel_all_handlers()
            self.release()
        self._full = _ENDED

    # Output: routed to this request's exchange -------------------------------------------

    def schedule(self) -> None:
        """Route what the session queued to its exchange (the hub calls it too)."""
        self._router.flush(self.session)

    _schedule_flush = schedule

    def send_now(self) -> bool:
        self.schedule()
        return True

    # A handler context's primitives (ContextHost) -----------------------------------------

    async def flush(self) -> None:
        self.schedule()

    async def sleep(self, seconds: float) -> None:
        await self.backend.sleep(seconds)

    def now(self) -> float:
        return self.backend.clock()

    def new_signal(self) -> Signal:
        return self.backend.new_signal()

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> Cancellable:
        return self._group.start_cancellable(fn, on_done)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, **options: Any
    ) -> dict[str, Any]:
        """Send a request to the client and wait for its result (the full host's)."""
        result: dict[str, Any] = await self.full().request(method, params, **options)
        return result


#: What a full host has that its class does not name when :meth:`RoutedOutput.factory`
#: makes the slim class: set by ``HostBase.__init__`` (``driver``), by the factory's
#: constructor (``router``) and on the class after (``single``); ``tests/adapters``
#: check the list is whole.
FULL_HOST_FIELDS = ("driver", "router", "single")


#: The packages whose host classes set no attribute their class does not name beyond
#: FULL_HOST_FIELDS (tests/adapters hold them to it).
_OWN_HOST_PACKAGES = frozenset(
    {"sansio_mcp", "trio_adapters", "asyncio_adapters", "builtins", "typing", "abc"}
)


def _foreign(full_class: type) -> bool:
    """Whether a class of ``full_class``'s hosts comes from elsewhere (a user's)."""
    return any(
        klass.__module__.partition(".")[0] not in _OWN_HOST_PACKAGES
        for klass in full_class.__mro__[1:]  # the first is the factory's own
    )


class _ForwardingRest(SingleRequestHost):
    """The slim host of a service whose host class is a user's: any other name (an
    attribute its ``__init__`` sets) is the full host's as well.  Only this class has
    ``__getattr__``, whose hook keeps CPython from specializing reads of the slots."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.full(), name)


def _forward(name: str) -> property:
    return property(lambda host: getattr(host.full(), name), doc=f"The full host's ``{name}``.")


def _forwarded(full_class: type) -> dict[str, property]:
    """A :class:`SingleRequestHost` property for each name of ``full_class``'s hosts it
    has none of its own for: read, it makes the full host (:meth:`~SingleRequestHost.full`)
    and reads it there."""
    own = {name for klass in SingleRequestHost.__mro__ for name in vars(klass)}
    names = {name for klass in full_class.__mro__ for name in vars(klass)}
    return {
        name: _forward(name)
        for name in sorted(names.union(FULL_HOST_FIELDS) - own)
        if not name.startswith("__")
    }


class SessionOptions(TypedDict, total=False):
    """The Streamable HTTP machine's bounds, as ``serve_http``, ``MCPApp`` and
    :func:`streamable_http_router` take them (defaults and what each does:
    ``docs/limits.md``): ``max_sessions``, ``session_idle_timeout`` (None: never),
    ``replay_memory`` / ``replay_streams`` (events kept per stream, streams per
    session), ``replay_bytes`` (bytes of them kept per session), ``max_unread``
    (bytes a stream may hold unread), ``retry_interval`` (the SSE ``retry`` hint,
    None: none), and among replicas sharing sessions ``follow_check``, ``max_queue``
    (messages queued for the bus and the store) and ``stop_grace`` (seconds a stopping
    replica spends on them), kept by ``router.replicas``."""

    max_sessions: int
    session_idle_timeout: float | None
    replay_memory: int
    replay_streams: int
    max_unread: int
    retry_interval: float | None
    replay_bytes: int
    follow_check: float
    max_queue: int
    stop_grace: float


def streamable_http_router(
    server: Server,
    *,
    endpoint: str = "/mcp",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    json_response: bool = False,
    **bounds: Unpack[SessionOptions],
) -> StreamableHTTPServer | ProtectedRouter:
    """The Streamable HTTP machine for ``server`` (``serve_http`` on every backend),
    behind ``server.auth`` when the server is protected; ``bounds`` are its
    :class:`SessionOptions` (a ValueError names one out of range)."""
    machine = StreamableHTTPServer(
        server.create_session,
        endpoint=endpoint,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        json_response=json_response,
        tool_input_schema=lambda name: (
            tool.input_schema if (tool := server.tools.get(name)) else None
        ),
        **bounds,
    )
    return _protected(server, machine, endpoint)


def _protected(server: Server, router: R, endpoint: str) -> R | ProtectedRouter:
    """``router`` behind the server's bearer-token check, if it has one."""
    if server.auth is None:
        return router
    return ProtectedRouter(
        router, server.auth, endpoint=endpoint, scopes_for=server.operation_scopes
    )


def legacy_sse_router(
    server: Server,
    *,
    sse_path: str = "/sse",
    message_path: str = "/messages",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
) -> LegacySSEServer | ProtectedRouter:
    """The legacy HTTP+SSE machine for ``server`` (``serve_sse`` on every backend),
    behind ``server.auth`` when the server is protected."""
    machine = LegacySSEServer(
        server.create_session,
        sse_path=sse_path,
        message_path=message_path,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
    return _protected(server, machine, sse_path)


class ResponseWriter(Protocol):
    """How an adapter puts a response on the wire (HTTP/1.1 bytes, ASGI messages)."""

    async def whole(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        """A complete response with a known length."""
        ...

    async def head(self, status: int, headers: Mapping[str, str]) -> None:
        """The head of a streamed response."""
        ...

    async def body(self, chunk: bytes) -> None:
        """A chunk of a streamed response."""
        ...

    async def end(self) -> None:
        """The end of a streamed response."""
        ...


async def _news(exchange: Exchange, backend: Backend) -> None:
    """Until the exchange has news (output, its end), which may have come already
    (while a chunk was being sent)."""
    if not exchange.has_news:
        ready = backend.new_signal()
        exchange.wake = ready.set
        await ready.wait()


async def answer_exchange(
    exchange: Exchange,
    writer: ResponseWriter,
    until_gone: Callable[[], Awaitable[None]],
    hosts: SessionHosts[Any],
    backend: Backend,
    *,
    grace: bool = True,
) -> bool:
    """Write ``exchange``'s response with ``writer``; False if the client went away.

    With ``grace``, the head waits up to ``head_grace`` for the request's first
    output (a plain JSON answer needs no stream); without, the caller has waited.
    While a stream is open ``until_gone`` (returning when the client has
    disconnected) runs beside it: a client that leaves ends the
    exchange (:meth:`SessionHosts.disconnected`) and breaks off the writing, which
    a client that stopped reading could otherwise hold for good."""
    if grace and not exchange.head_ready:
        async with backend.move_on_after(exchange.head_grace):
            while not exchange.head_ready:
                await _news(exchange, backend)
    if not exchange.streaming:
        await writer.whole(exchange.status, exchange.headers, exchange.take())
        return True
    exchange.commit_head()
    gone = False
    async with backend.open_task_group() as group:

        async def watch() -> None:
            nonlocal gone
            await until_gone()
            gone = True
            hosts.disconnected(exchange)
            group.cancel()

        group.start_soon(watch)
        await writer.head(exchange.status, exchange.headers)
        while True:
            # Read ``finished`` before taking: output may arrive while a chunk is sent.
            finished = exchange.finished
            chunk = exchange.take()
            if chunk:
                await writer.body(chunk)
            if finished:
                break
            await _news(exchange, backend)
        group.cancel()
    if gone:
        return False
    await writer.end()
    return True


class _ConnectionWriter:
    """A :class:`ResponseWriter` onto an HTTP/1.1 connection's byte stream."""

    __slots__ = ("_conn", "_stream")

    def __init__(self, stream: Connection, conn: HTTPServerConnection) -> None:
        self._stream = stream
        self._conn = conn

    async def whole(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        await self._stream.send_all(self._conn.send_response(status, headers, body))

    async def head(self, status: int, headers: Mapping[str, str]) -> None:
        await self._stream.send_all(self._conn.send_head(status, headers))

    async def body(self, chunk: bytes) -> None:
        await self._stream.send_all(self._conn.send_body(chunk))

    async def end(self) -> None:
        await self._stream.send_all(self._conn.end())


class HTTPService(Generic[H]):
    """An HTTP transport machine (``router``) served on accepted connections:
    :meth:`connection` serves one until it should close (the listener closes it).
    ``make_host`` makes the adapter's session host of a new session, running in
    the listener's task group."""

    def __init__(
        self,
        server: Server,
        router: Router,
        make_host: Callable[[ServerSession], H],
        backend: Backend,
        max_body: int,
        limits: ServerLimits,
    ) -> None:
        self.router = router
        self.backend = backend
        self.max_body = max_body
        self.limits = limits
        self.gate = ConnectionGate(limits)
        self.hosts = SessionHosts(server, router, make_host)
        # Replicas sharing a store share handshake sessions: any serves any session.
        self.hosts.shared = shared_sessions(router, self.hosts, server.stores, backend)

    @property
    def shared(self) -> SharedSessions | None:
        """The replica's side of shared handshake sessions (its :meth:`SharedSessions.run`
        must run beside the listener), or None."""
        return self.hosts.shared

    async def connection(self, stream: Connection) -> None:
        """Serve one connection (a 503 beyond ``max_connections``)."""
        if not self.gate.enter():
            await refuse_connection(stream, self.backend, self.limits)
            return
        receive = partial(stream.receive_some, _READ_SIZE)
        conn = HTTPServerConnection(max_body=self.max_body)
        try:
            await serve_requests(
                conn,
                receive,
                stream.send_all,
                partial(self._answer, stream, conn),
                self.hosts,
                self.backend,
                self.limits,
            )
        except* OSError:
            pass  # the client went away (alone, or from inside the answer's task group)
        except* Exception:
            # One broken connection must never take the server (and every other client) down.
            _log.exception("error while serving an HTTP connection; closing it")
        finally:
            self.gate.leave()

    async def _answer(
        self, stream: Connection, conn: HTTPServerConnection, exchange: Exchange
    ) -> bool:
        async def until_gone() -> None:
            # Reading on is how a client's leaving shows; what it sends meanwhile (a
            # pipelined request) waits in the parser, up to max_read_ahead.  Beyond it
            # nothing is read until the answer is over: TCP holds the client back.
            room = self.limits.max_read_ahead - conn.buffered
            try:
                while room > 0:
                    data = await stream.receive_some(min(_READ_SIZE, room))
                    if not data:
                        return
                    room -= len(data)
                    conn.receive_data(data)
            except OSError:
                return
            await self.backend.new_signal().wait()  # never set: the answer's end cancels it

        writer = _ConnectionWriter(stream, conn)
        hosts, backend = self.hosts, self.backend
        return await answer_exchange(exchange, writer, until_gone, hosts, backend, grace=False)
