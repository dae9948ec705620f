"""Bytes that synchronous code queues for one stream, sent in order."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ._backend import Backend, ByteStream, Pipe, Signal

__all__ = ["Sender"]

logger = logging.getLogger("sansio_mcp.runtime")


class Sender:
    """Sends what synchronous code :meth:`write`\\ s to one stream, in order: at once
    what a :class:`Pipe` takes without waiting, the rest from one task (:meth:`run`),
    so that a task that is cancelled never leaves half a message on the wire.  Once
    sending fails the stream is ``broken``: ``on_broken`` is called once and what
    is written from then on is dropped."""

    def __init__(
        self, backend: Backend, stream: ByteStream, on_broken: Callable[[], None] = lambda: None
    ) -> None:
        self._backend = backend
        self._stream = stream
        self._nowait = stream.send_nowait if isinstance(stream, Pipe) else None
        self._queued: list[bytes] = []
        #: How many bytes wait for the task.
        self.pending = 0
        self._sending = False
        self._wanted = backend.new_signal()
        self._idle: list[Signal] = []
        self.broken = False
        self._on_broken = on_broken

    def write(self, data: bytes) -> bool:
        """Queue ``data``; send now what goes without waiting.  True when nothing
        is left for the task to send (:attr:`idle`)."""
        if self.broken:
            return True
        if self._nowait is not None and not self._queued and not self._sending:
            try:
                sent = self._nowait(data)
            except OSError:
                self._break(len(data))
                return True
            if sent == len(data):
                return True
            data = data[sent:]
        self._queued.append(data)
        self.pending += len(data)
        self._wanted.set()
        return False

    async def run(self) -> None:
        """The one task that sends what could not go at once; runs until cancelled."""
        while True:
            await self._wanted.wait()
            self._wanted = self._backend.new_signal()
            self._sending = True
            try:
                while self._queued and not self.broken:
                    queued = self._queued
                    data = queued[0] if len(queued) == 1 else b"".join(queued)
                    queued.clear()
                    self.pending = 0
                    try:
                        await self._stream.send_all(data)
                    except OSError:
                        self._break(len(data))
            finally:
                self._sending = False
                idle, self._idle = self._idle, []
                for signal in idle:
                    signal.set()

    @property
    def idle(self) -> bool:
        """Whether everything written has been sent (or dropped)."""
        return self.broken or not (self._queued or self._sending)

    async def flushed(self) -> None:
        """Wait until everything written has been sent (or dropped)."""
        while (self._queued or self._sending) and not self.broken:
            signal = self._backend.new_signal()
            self._idle.append(signal)
            await signal.wait()

    async def drained(self, timeout: float) -> None:
        """:meth:`flushed`, for at most ``timeout`` seconds."""
        async with self._backend.move_on_after(timeout):
            await self.flushed()

    def _break(self, dropped: int) -> None:
        logger.debug("peer gone; dropped %d bytes", dropped)
        self.broken = True
        self._queued.clear()
        self.pending = 0
        self._on_broken()
