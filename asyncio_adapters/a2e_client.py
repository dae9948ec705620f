"""The A2E client for Python agents, on asyncio: the same
:class:`~sansio_mcp.a2e.A2EClientBase` as on Trio (and so the same calls).

Open one with :func:`open_a2e_direct` (the bridge in this process and event
loop, no encoding) or :func:`open_a2e_stdio` (``sansio-mcp bridge`` as a child
process, NDJSON on its stdin/stdout).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sansio_mcp._stdio import safe_environment
from sansio_mcp._util import unwrap_single_exception
from sansio_mcp.a2e import (
    A2EFramer,
    A2EMessage,
    BridgeConfig,
    BridgeHost,
    encode_line,
)
from sansio_mcp.runtime._backend import Signal
from sansio_mcp.runtime.a2e import A2EClientBase, A2ERequestError, AgentInbox
from sansio_mcp.runtime.a2e._client import bridge_invocation
from sansio_mcp.runtime.a2e._runner import direct_bridge

from ._backend import OneWaiterSignal
from ._process import drain_stderr, stop_process
from ._runner import shielded

__all__ = ["A2EClient", "A2ERequestError", "open_a2e_direct", "open_a2e_stdio"]


class A2EClient(A2EClientBase):
    """One agent's side of an A2E connection, on asyncio (see
    :class:`~sansio_mcp.a2e.A2EClientBase`).  A request that gets no answer in
    time raises :class:`TimeoutError`.  Its tasks (handlers, async callbacks)
    run in the task group given to :meth:`attach`: one that fails ends the
    ``async with`` that opened the client, as on Trio."""

    timeout_error = TimeoutError

    def __init__(
        self,
        send: Callable[[A2EMessage], Awaitable[None]],
        *,
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> None:
        super().__init__(send, clock=clock, **options)
        self._group: asyncio.TaskGroup | None = None
        self._loop: asyncio.AbstractEventLoop  # set by attach()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watchdog: asyncio.TimerHandle | None = None

    def attach(self, group: asyncio.TaskGroup) -> None:
        """Run the client's tasks in ``group``."""
        self._group = group
        self._loop = asyncio.get_running_loop()

    def start(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A task in the client's group, cancelled by :meth:`stop`."""
        assert self._group is not None, "the client is not open"
        task = self._group.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await fn()

        self.start(run())

    def monotonic(self) -> float:
        return self._loop.time()

    def wake_watchdog(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        delay = self.watchdog_delay()
        if delay != math.inf:
            self._watchdog = self._loop.call_later(delay, self._watchdog_due)

    def _watchdog_due(self) -> None:
        self._watchdog = None
        self.watchdog_fired()
        self.wake_watchdog()

    def stop(self) -> None:
        """The connection is over: waits fail, the client's tasks are cancelled."""
        self.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        for task in list(self._tasks):
            task.cancel()


@asynccontextmanager
async def _running(client: A2EClient) -> AsyncIterator[asyncio.TaskGroup]:
    """The client's task group; on the way out its tasks are stopped (and a lone
    failure among them comes out unwrapped, as from a Trio nursery)."""
    with unwrap_single_exception():
        async with asyncio.TaskGroup() as group:
            client.attach(group)
            try:
                yield group
            finally:
                client.stop()


@asynccontextmanager
async def open_a2e_direct(
    config: Mapping[str, Any] | BridgeConfig | None = None,
    *,
    host: BridgeHost | None = None,
    shutdown_grace: float = 2.0,
    clock: Callable[[], float] = time.time,
    **options: Any,
) -> AsyncIterator[A2EClient]:
    """The bridge in this process and event loop, and an :class:`A2EClient` talking
    to it directly (see :func:`trio_adapters.a2e_client.open_a2e_direct`: the
    same options and guarantees, on asyncio)."""
    from .bridge import AsyncioBridge

    bridge = direct_bridge(
        lambda host: AsyncioBridge(host, clock=clock, shutdown_grace=shutdown_grace),
        config,
        host,
        clock,
    )
    client = A2EClient(bridge.agent_send, clock=clock, **options)
    client.hand_over_call = bridge.agent_tool_call
    inbox = AgentInbox(client)
    async with _running(client):
        # The bridge stops its servers when its task is cancelled (shielded from
        # further cancellation); the group waits for that.
        client.start(bridge.run())
        client.start(inbox.run())
        await bridge.started.wait()
        bridge.connect_agent(inbox.deliver, inbox.answer)
        try:
            yield client
        finally:
            bridge.disconnect_agent()


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
    command, config_path = bridge_invocation(command, config, bridge_args)
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
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

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

    try:
        async with _running(client):
            client.start(drain_stderr(stderr, "a2e-bridge"))
            client.start(read())
            try:
                yield client
            finally:
                await shielded(lambda: stop_process(process, grace=shutdown_grace))
    finally:
        if process.returncode is None:
            await shielded(lambda: stop_process(process, grace=0))
        if config_path is not None:
            os.unlink(config_path)
