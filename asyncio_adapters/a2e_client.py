"""The A2E client for Python agents, on asyncio: the same
:class:`~sansio_mcp.a2e.A2EClientBase` as on Trio (and so the same calls).

Open one with :func:`open_a2e_direct` (the bridge in this process and event
loop, no encoding), :func:`open_a2e_stdio` (``sansio-mcp bridge`` as a child
process, NDJSON on its stdin/stdout) or :func:`open_a2e_ws`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from sansio_mcp.a2e import A2EMessage, BridgeConfig, BridgeHost
from sansio_mcp.runtime.a2e import A2EClientBase, A2ERequestError
from sansio_mcp.runtime.a2e._connect import open_a2e_bridge, open_a2e_websocket
from sansio_mcp.runtime.a2e._connect import open_a2e_direct as open_a2e_direct_on
from sansio_mcp.runtime.a2e._runner import direct_bridge

from ._backend import PRIMITIVES

__all__ = ["A2EClient", "A2ERequestError", "open_a2e_direct", "open_a2e_stdio", "open_a2e_ws"]


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
        super().__init__(send, backend=PRIMITIVES, clock=clock, **options)


def _maker(options: dict[str, Any]) -> Callable[..., A2EClient]:
    return lambda send: A2EClient(send, **options)


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
    async with open_a2e_direct_on(_maker({"clock": clock, **options}), bridge) as client:
        yield client


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
    over its stdin/stdout (see :func:`trio_adapters.a2e_client.open_a2e_stdio`)."""
    return open_a2e_bridge(
        PRIMITIVES, _maker(options), command, config, bridge_args, env, cwd, shutdown_grace
    )


def open_a2e_ws(url: str, **options: Any) -> AbstractAsyncContextManager[A2EClient]:
    """An :class:`A2EClient` over WebSocket (``ws://host:port/a2e``)."""
    return open_a2e_websocket(PRIMITIVES, _maker(options), url)
