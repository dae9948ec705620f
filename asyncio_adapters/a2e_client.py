"""The A2E client for Python agents, on asyncio: the same
:class:`~sansio_mcp.a2e.A2EClientBase` as on Trio (and so the same calls).

Open one with :func:`open_a2e_stdio` (``sansio-mcp bridge`` as a child
process, NDJSON on its stdin/stdout).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sansio_mcp._host import Signal
from sansio_mcp._stdio import safe_environment
from sansio_mcp.a2e import (
    A2EClientBase,
    A2EFramer,
    A2EMessage,
    A2ERequestError,
    encode_line,
)

from ._process import drain_stderr, stop_process
from ._runner import _Signal, shielded

__all__ = ["A2EClient", "A2ERequestError", "open_a2e_stdio"]


class A2EClient(A2EClientBase):
    """One agent's side of an A2E connection, on asyncio (see
    :class:`~sansio_mcp.a2e.A2EClientBase`).  A request that gets no answer in
    time raises :class:`TimeoutError`."""

    timeout_error = TimeoutError

    def __init__(
        self,
        send: Callable[[A2EMessage], Awaitable[None]],
        *,
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> None:
        super().__init__(send, clock=clock, **options)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watchdog: asyncio.TimerHandle | None = None
        self._failure: BaseException | None = None

    def new_signal(self) -> Signal:
        return _Signal()

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await fn()

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and self._failure is None:
            # A callback failed: like a stream transport's reader, the client stops.
            self._failure = task.exception()
            self.close()

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def wake_watchdog(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        delay = self.watchdog_delay()
        if delay != float("inf"):
            self._watchdog = asyncio.get_running_loop().call_later(delay, self._watchdog_due)

    def _watchdog_due(self) -> None:
        self._watchdog = None
        self.watchdog_fired()
        self.wake_watchdog()

    async def aclose(self) -> None:
        """Stop the client's tasks (handlers, callbacks) and its watchdog."""
        self.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def raise_failure(self) -> None:
        """Raise what a callback or handler task of this client raised, if any."""
        if self._failure is not None:
            raise self._failure


@asynccontextmanager
async def open_a2e_stdio(
    command: Sequence[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    bridge_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shutdown_grace: float = 5.0,
    **options: Any,
) -> AsyncIterator[A2EClient]:
    """Start the bridge (``sansio-mcp bridge``, or ``command``) and talk A2E to it
    over its stdin/stdout (see :func:`trio_adapters.a2e_client.open_a2e_stdio`)."""
    config_path: str | None = None
    if command is None:
        command = [sys.executable, "-m", "sansio_mcp_cli", "bridge", *bridge_args]
        if config is not None:
            handle, config_path = tempfile.mkstemp(suffix=".json", prefix="a2e-bridge-")
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                json.dump(dict(config), f)
            command = [*command, "--config", config_path]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=safe_environment(os.environ, env),
        cwd=cwd,
        start_new_session=os.name != "nt",
        limit=2**24,
    )
    assert process.stdin and process.stdout and process.stderr
    stdin, stdout = process.stdin, process.stdout

    async def send(message: A2EMessage) -> None:
        stdin.write(encode_line(message))
        await stdin.drain()

    client = A2EClient(send, **options)
    framer = A2EFramer()

    async def read() -> None:
        try:
            while True:
                try:
                    data = await stdout.read(65536)
                except (ConnectionError, OSError):
                    data = b""
                for item in framer.feed(data):
                    client.feed(item)
                if not data:
                    return
        finally:
            client.close()

    drainer = asyncio.ensure_future(drain_stderr(process.stderr, "a2e-bridge"))
    reading = asyncio.ensure_future(read())
    try:
        yield client
        client.raise_failure()
        if reading.done():
            reading.result()  # a callback that raised ended the reader
    finally:
        reading.cancel()
        await client.aclose()
        await shielded(lambda: _stop(process, reading, drainer, shutdown_grace))
        if config_path is not None:
            os.unlink(config_path)


async def _stop(
    process: asyncio.subprocess.Process,
    reading: asyncio.Task[Any],
    drainer: asyncio.Task[Any],
    grace: float,
) -> None:
    with contextlib.suppress(BaseException):
        await reading
    await stop_process(process, grace=grace)
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(drainer, 2)
