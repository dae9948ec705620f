"""A small A2E client for Python agents, on Trio.

:class:`A2EClient` sends requests and waits for their responses by
``req_id``; what the bridge sends on its own (``mcp/server/push``,
``tool/event``) goes to callbacks, and what it asks (``mcp/sample/req``,
``mcp/root/list/req``, ``x-mcp/elicit/req``) to handlers whose return value
is sent back (the logic is :class:`~sansio_mcp_apps.a2e.runtime.A2EClientBase`'s,
opening one :mod:`sansio_mcp_apps.a2e.runtime._connect`'s).  Open one with
:func:`open_a2e_direct` (the bridge in this process, no encoding),
:func:`open_a2e_stdio` (the bridge as a child process), :func:`open_a2e_ws`
or :func:`open_a2e_streams`.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import trio

from sansio_mcp_apps.a2e import BridgeHost
from sansio_mcp_apps.a2e.runtime import A2EClientBase, A2ERequestError
from sansio_mcp_apps.a2e.runtime._connect import A2EOpeners, open_a2e_pipes
from sansio_mcp_apps.a2e.runtime._runner import BridgeRunner
from trio_adapters import BACKEND, PipeStream

__all__ = [
    "A2EClient",
    "A2ERequestError",
    "open_a2e_direct",
    "open_a2e_stdio",
    "open_a2e_streams",
    "open_a2e_ws",
]


class A2EClient(A2EClientBase):
    """One agent's side of an A2E connection, on Trio.  A request that gets no
    answer in time raises :class:`trio.TooSlowError`."""

    backend = BACKEND
    timeout_error = trio.TooSlowError


def _bridge(host: BridgeHost, **options: Any) -> BridgeRunner:
    from sansio_mcp_apps.a2e.adapters.trio_bridge import (
        TrioBridge,  # the bridge's transports load only when used
    )

    return TrioBridge(host, **options)


_OPENERS = A2EOpeners(A2EClient, _bridge)
open_a2e_stdio = _OPENERS.stdio
open_a2e_ws = _OPENERS.ws
open_a2e_direct = _OPENERS.direct


def open_a2e_streams(
    send_stream: trio.abc.SendStream, receive_stream: trio.abc.ReceiveStream, **options: Any
) -> AbstractAsyncContextManager[A2EClient]:
    """An :class:`A2EClient` over an NDJSON byte stream pair."""
    stream = PipeStream(send_stream, receive_stream)
    return open_a2e_pipes(lambda send: A2EClient(send, **options), stream, stream)
