"""A small A2E client for Python agents, on Trio.

:class:`A2EClient` sends requests and waits for their responses by
``req_id``; what the bridge sends on its own (``mcp/server/push``,
``tool/event``) goes to callbacks, and what it asks (``mcp/sample/req``,
``mcp/root/list/req``, ``x-mcp/elicit/req``) to handlers whose return value
is sent back (the logic is :class:`~sansio_mcp.a2e.A2EClientBase`'s).  Open
one with :func:`open_a2e_direct` (the bridge in this process, no encoding),
:func:`open_a2e_stdio` (the bridge as a child process), :func:`open_a2e_ws`
or :func:`open_a2e_streams`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import trio

from sansio_mcp._websocket import WebSocketAddress
from sansio_mcp.a2e import (
    A2EMessage,
    A2EWebSocket,
    BridgeConfig,
    BridgeHost,
    decode_text,
    encode,
)
from sansio_mcp.runtime.a2e import A2EClientBase, A2ERequestError
from sansio_mcp.runtime.a2e._connect import open_a2e_bridge, open_a2e_pipes, running
from sansio_mcp.runtime.a2e._connect import open_a2e_direct as open_a2e_direct_on
from sansio_mcp.runtime.a2e._runner import direct_bridge

from ._backend import PRIMITIVES, PipeStream
from .websocket import open_ws_stream

__all__ = [
    "A2EClient",
    "A2ERequestError",
    "open_a2e_direct",
    "open_a2e_stdio",
    "open_a2e_streams",
    "open_a2e_ws",
]


class A2EClient(A2EClientBase):
    """One agent's side of an A2E connection, on Trio (see
    :class:`~sansio_mcp.a2e.A2EClientBase`).  A request that gets no answer in
    time raises :class:`trio.TooSlowError`."""

    timeout_error = trio.TooSlowError

    def __init__(
        self,
        send: Callable[[A2EMessage], Awaitable[None]],
        *,
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> None:
        super().__init__(send, backend=PRIMITIVES, clock=clock, **options)


def _maker(options: dict[str, Any]) -> Callable[..., A2EClient]:
    return lambda send: A2EClient(send, **options)


# Opening a client ---------------------------------------------------------------------------------


def open_a2e_streams(
    send_stream: trio.abc.SendStream, receive_stream: trio.abc.ReceiveStream, **options: Any
) -> AbstractAsyncContextManager[A2EClient]:
    """An :class:`A2EClient` over an NDJSON byte stream pair."""
    stream = PipeStream(send_stream, receive_stream)
    return open_a2e_pipes(_maker(options), stream, stream)


def open_a2e_stdio(
    command: Sequence[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    bridge_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shutdown_grace: float = 5.0,
    **options: Any,
) -> AbstractAsyncContextManager[A2EClient]:
    """Start the bridge (``sansio-mcp bridge``, or ``command``) and talk A2E to it
    over its stdin/stdout.  ``config`` is written to a temporary file and given
    as ``--config``; ``bridge_args`` are more options (``--backend asyncio``)."""
    return open_a2e_bridge(
        PRIMITIVES, _maker(options), command, config, bridge_args, env, cwd, shutdown_grace
    )


@asynccontextmanager
async def open_a2e_ws(url: str, **options: Any) -> AsyncIterator[A2EClient]:
    """An :class:`A2EClient` over WebSocket (``ws://host:port/a2e``)."""
    address = WebSocketAddress.parse(url)
    stream = await open_ws_stream(address)
    framing = A2EWebSocket(client=True, host=address.netloc, target=address.target)
    lock = trio.Lock()
    opened = trio.Event()

    async def flush() -> None:
        async with lock:
            data = framing.data_to_send()
            if data:
                await stream.send_all(data)

    async def send(message: A2EMessage) -> None:
        framing.send_text(encode(message))
        await flush()

    client = A2EClient(send, **options)

    finished = trio.Event()

    async def read() -> None:
        try:
            while not framing.closed:
                try:
                    data = await stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                for text in framing.receive_data(data):
                    client.feed(decode_text(text))
                if framing.open or framing.closed:
                    opened.set()
                await flush()
                if not data:
                    break
        finally:
            opened.set()
            finished.set()
            client.close()

    async with stream, running(client) as group:
        group.start_soon(read)
        await flush()
        with trio.fail_after(10):
            await opened.wait()
        if not framing.open:
            raise ConnectionError(f"the bridge refused the WebSocket (HTTP {framing.refused})")
        try:
            yield client
        finally:
            framing.close(1000, "agent done")
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await flush()
                await finished.wait()  # the bridge's close reply


@asynccontextmanager
async def open_a2e_direct(
    config: Mapping[str, Any] | BridgeConfig | None = None,
    *,
    host: BridgeHost | None = None,
    shutdown_grace: float = 2.0,
    clock: Callable[[], float] = time.time,
    **options: Any,
) -> AsyncIterator[A2EClient]:
    """The bridge in this process and this event loop, and an :class:`A2EClient`
    talking to it directly: messages pass as objects (no encoding, no pipe).

    ``config`` is what ``sansio-mcp bridge --config`` reads (``servers``,
    ``roots``, ``elicitation``, ``ping_interval``; a dict or a
    :class:`~sansio_mcp.a2e.BridgeConfig`); or give a ready ``host``.  Every
    message is checked as the codec would check it and copied on the way in,
    and the bridge keeps nothing of what it hands out, so neither side ever
    sees the other change a message.  On exit the servers are stopped
    (stdin closed, then SIGTERM, then SIGKILL after ``shutdown_grace``).
    """
    from .bridge import TrioBridge

    bridge = direct_bridge(
        lambda host: TrioBridge(host, clock=clock, shutdown_grace=shutdown_grace),
        config,
        host,
        clock,
    )
    async with open_a2e_direct_on(_maker({"clock": clock, **options}), bridge) as client:
        yield client
