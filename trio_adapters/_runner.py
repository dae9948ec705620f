"""Trio drivers for a sans-IO session: :class:`TrioSessionHost` (requests,
handler tasks, timers; any transport) and :class:`TrioRunner` (a session over
one byte stream pair: stdio, TCP, memory)."""

from __future__ import annotations

import errno
import logging
import math
import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from sansio_mcp import RequestId, Session
from sansio_mcp._driver import InputHandler, NotificationHandler, RequestHandler
from sansio_mcp._host import HostBase, Signal

__all__ = ["TrioRunner", "TrioSessionHost"]

logger = logging.getLogger("trio_adapters")

_READ_SIZE = 65536


class TrioSessionHost(HostBase):
    """What every Trio transport needs around a session: concurrent handler
    tasks (cancellable one by one), awaitable requests, and the timer.

    Subclasses say how queued output leaves (:meth:`flush`).
    """

    def __init__(
        self,
        session: Session,
        *,
        handle_request: RequestHandler,
        handle_notification: NotificationHandler | None = None,
        answer_input: InputHandler | None = None,
    ) -> None:
        super().__init__(
            session,
            handle_request=handle_request,
            handle_notification=handle_notification,
            answer_input=answer_input,
            spawn=self._spawn,
            cancel=self._cancel_handler,
        )
        self._nursery: trio.Nursery | None = None
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        self._timer_changed = trio.Event()
        self._timer_scope = trio.CancelScope()
        self._flush_wanted = trio.Event()
        self._flush_scope = trio.CancelScope()
        self.driver.on_output = self._schedule_flush

    # Primitives for HostBase --------------------------------------------------------

    def new_signal(self) -> Signal:
        return trio.Event()

    def now(self) -> float:
        return trio.current_time()

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None:
        with trio.CancelScope(shield=True):
            await step()

    def rearm_timer(self) -> None:
        self._timer_changed.set()

    # Tasks --------------------------------------------------------------------------

    def attach(self, nursery: trio.Nursery) -> None:
        """Run handler tasks (and the timer) in ``nursery``."""
        self._nursery = nursery
        nursery.start_soon(self._timer_loop)
        nursery.start_soon(self._flush_loop)

    async def _timer_loop(self) -> None:
        with self._timer_scope:
            while True:
                deadline = self.session.next_deadline()
                with trio.move_on_at(deadline if deadline is not None else math.inf):
                    await self._timer_changed.wait()
                    self._timer_changed = trio.Event()
                    continue
                self.session.handle_timer(trio.current_time())
                self.driver.process_events()
                await self.flush()

    def _schedule_flush(self) -> None:
        self._flush_wanted.set()

    async def _flush_loop(self) -> None:
        # One long-lived task sends what handlers queue: spawning a task per
        # output cost about a fifth of a stdio server's time per request.
        with self._flush_scope:
            while True:
                await self._flush_wanted.wait()
                self._flush_wanted = trio.Event()
                await self.flush()

    def _spawn(self, request_id: RequestId | None, fn: Callable[[], Awaitable[None]]) -> None:
        assert self._nursery is not None, "attach() the host to a nursery first"
        if request_id is None:
            self._nursery.start_soon(fn)
            return
        scope = trio.CancelScope()
        self._scopes[request_id] = scope

        async def run() -> None:
            try:
                with scope:
                    await fn()
            finally:
                self._scopes.pop(request_id, None)

        self._nursery.start_soon(run)

    def _cancel_handler(self, request_id: RequestId) -> None:
        scope = self._scopes.get(request_id)
        if scope is not None:
            scope.cancel()

    def cancel_all_handlers(self) -> None:
        """The host is done (its HTTP exchange is over): cancel its handlers, its timer
        and its flusher."""
        for scope in list(self._scopes.values()):
            scope.cancel()
        # Otherwise every finished stateless request would leave those tasks parked.
        self._timer_scope.cancel()
        self._flush_scope.cancel()


class Framing(Protocol):
    """Turns bytes into session input and session output into bytes."""

    def receive_data(self, data: bytes | bytearray) -> None: ...

    def data_to_send(self) -> bytes: ...


class TrioRunner(TrioSessionHost):
    """Runs one session over ``receive_stream`` / ``send_stream``.

    ``await runner.run()`` reads until end of input (start it in a nursery);
    ``await runner.request(...)`` sends a request and waits for its result.
    Handlers for the peer's requests run concurrently in the runner's nursery.
    """

    def __init__(
        self,
        session: Session,
        send_stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream,
        *,
        handle_request: RequestHandler,
        handle_notification: NotificationHandler | None = None,
        answer_input: InputHandler | None = None,
        framing: Framing | None = None,
    ) -> None:
        super().__init__(
            session,
            handle_request=handle_request,
            handle_notification=handle_notification,
            answer_input=answer_input,
        )
        self._send_stream = send_stream
        self._receive_stream = receive_stream
        #: Bytes <-> messages: the session itself (NDJSON) unless told otherwise.
        self.framing: Framing = framing or session
        self._send_lock = trio.Lock()
        #: Bytes a pipe did not take at once, waiting for the sender.
        self._backlog = b""
        self._closed = trio.Event()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Read and dispatch until the peer closes its side."""
        async with trio.open_nursery() as nursery:
            self.attach(nursery)
            task_status.started()
            try:
                await self._read_loop()
            finally:
                self._finish()
                nursery.cancel_scope.cancel()

    async def _read_loop(self) -> None:
        # A pipe is read directly: FdStream.receive_some yields to the scheduler and
        # tries a read that fails before every wait, which in a sequential
        # request/response exchange is two wasted steps per message.
        pipe = _pipe(self._receive_stream)
        wait_first = False
        data: bytes | bytearray
        while not self.driver.closed:
            try:
                if pipe is not None:
                    data = await _read_pipe(pipe, wait_first)
                    wait_first = len(data) < _READ_SIZE
                else:
                    data = await self._receive_stream.receive_some(_READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            self.framing.receive_data(data)
            self.driver.process_events()
            if self.reading_waits_for_output:
                await self._flush_all()
            else:
                self._send_soon()
            if not data:
                break

    def _finish(self) -> None:
        self.session.close()
        self.driver.process_events()
        self._closed.set()

    # Output: at most one task sends at a time (it holds the send lock), and it
    # sends everything queued before it lets go, so no other task has to wait
    # for it.  Uncontended output to a pipe is written at once, without
    # yielding: FdStream.send_all would first give the scheduler a turn,
    # delaying every message by a pass.

    def _schedule_flush(self) -> None:
        self._send_soon()

    def _send_soon(self) -> None:
        """Send what is queued without waiting: now if the pipe takes it all,
        otherwise the flusher task sends the rest."""
        if self._send_lock.locked() or self._backlog:
            return  # the sender takes this too before it stops
        data = self.framing.data_to_send()
        if not data:
            return
        pipe = _pipe(self._send_stream)
        if pipe is not None:
            try:
                data = data[_write_pipe(pipe, data) :]
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._peer_gone(len(data))
                return
        if data:
            self._backlog = data
            self._flush_wanted.set()

    async def flush(self) -> None:
        """Send what the session queued.  This task waits only if it becomes
        the sender; when another task is sending, that one takes it along."""
        self._send_soon()
        if self._backlog and not self._send_lock.locked():
            async with self._send_lock:
                await self._send_queued()

    async def _flush_all(self) -> None:
        """Send what is queued and wait until no output is waiting at all."""
        self._send_soon()
        if self._backlog or self._send_lock.locked():
            async with self._send_lock:
                await self._send_queued()

    async def _send_queued(self) -> None:
        # Called with the send lock held.
        while True:
            data = self._backlog + self.framing.data_to_send()
            self._backlog = b""
            if not data:
                return
            try:
                await self._send_stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._peer_gone(len(data))
                return

    def _peer_gone(self, dropped: int) -> None:
        logger.debug("peer gone; dropped %d bytes", dropped)
        self.session.close()
        self.driver.process_events()

    async def wait_closed(self) -> None:
        await self._closed.wait()


_FdStream: Any = getattr(trio.lowlevel, "FdStream", None)  # Unix only


def _pipe(stream: object) -> Any:
    """``stream`` if it is a pipe we may read and write directly, else None."""
    return stream if _FdStream is not None and isinstance(stream, _FdStream) else None


def _fileno(pipe: Any) -> int:
    fd: int = pipe.fileno()
    if fd < 0:  # closed: the number may already belong to another file
        raise trio.ClosedResourceError("the pipe is closed")
    return fd


async def _read_pipe(pipe: Any, wait_first: bool) -> bytes:
    """The next bytes from a non-blocking pipe (``b""`` at its end)."""
    if wait_first:
        await trio.lowlevel.wait_readable(_fileno(pipe))
    while True:
        try:
            return os.read(_fileno(pipe), _READ_SIZE)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(_fileno(pipe))
        except OSError as exc:
            if exc.errno == errno.EBADF:
                raise trio.ClosedResourceError("the pipe is closed") from None
            raise trio.BrokenResourceError from exc


def _write_pipe(pipe: Any, data: bytes) -> int:
    """Write what a non-blocking pipe takes now; how many bytes it took."""
    try:
        return os.write(_fileno(pipe), data)
    except BlockingIOError:
        return 0
    except OSError as exc:
        if exc.errno == errno.EBADF:
            raise trio.ClosedResourceError("the pipe is closed") from None
        raise trio.BrokenResourceError from exc
