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

from sansio_mcp.a2e import (
    A2EMessage,
    BridgeConfig,
    BridgeHost,
)
from sansio_mcp.runtime.a2e import A2EClientBase, A2ERequestError
from sansio_mcp.runtime.a2e._connect import open_a2e_bridge, open_a2e_pipes, open_a2e_websocket
from sansio_mcp.runtime.a2e._connect import open_a2e_direct as open_a2e_direct_on
from sansio_mcp.runtime.a2e._runner import direct_bridge

from ._backend import PRIMITIVES, PipeStream

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


def open_a2e_ws(url: str, **options: Any) -> AbstractAsyncContextManager[A2EClient]:
    """An :class:`A2EClient` over WebSocket (``ws://host:port/a2e``)."""
    return open_a2e_websocket(PRIMITIVES, _maker(options), url)


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
