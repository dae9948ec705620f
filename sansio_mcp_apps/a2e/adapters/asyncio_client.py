"""The A2E client for Python agents, on asyncio: the same
:class:`~sansio_mcp_apps.a2e.runtime.A2EClientBase` as on Trio (and so the same calls).

Open one with :func:`open_a2e_direct` (the bridge in this process and event
loop, no encoding), :func:`open_a2e_stdio` (``sansio-mcp bridge`` as a child
process, NDJSON on its stdin/stdout) or :func:`open_a2e_ws`.  Its tasks
(handlers, async callbacks) run in a task group: one that fails ends the
``async with`` that opened the client, as on Trio.
"""

from __future__ import annotations

from typing import Any

from asyncio_adapters import BACKEND
from sansio_mcp_apps.a2e import BridgeHost
from sansio_mcp_apps.a2e.runtime import A2EClientBase, A2ERequestError
from sansio_mcp_apps.a2e.runtime._connect import A2EOpeners
from sansio_mcp_apps.a2e.runtime._runner import BridgeRunner

__all__ = ["A2EClient", "A2ERequestError", "open_a2e_direct", "open_a2e_stdio", "open_a2e_ws"]


class A2EClient(A2EClientBase):
    """One agent's side of an A2E connection, on asyncio.  A request that gets no
    answer in time raises :class:`TimeoutError`."""

    backend = BACKEND


def _make_bridge(host: BridgeHost, **options: Any) -> BridgeRunner:
    from sansio_mcp_apps.a2e.adapters.asyncio_bridge import AsyncioBridge

    return AsyncioBridge(host, **options)


_OPENERS = A2EOpeners(A2EClient, _make_bridge)
open_a2e_stdio = _OPENERS.stdio
open_a2e_ws = _OPENERS.ws
open_a2e_direct = _OPENERS.direct
