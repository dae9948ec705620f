"""The bridge's HTTP links, written once: a server reached over Streamable HTTP or
legacy HTTP+SSE is driven by the runtime's HTTP client hosts on the bridge's
backend.  (The stdio and WebSocket links move bytes over the adapter's own
stream runners, so each adapter writes those two.)"""

from __future__ import annotations

import math
from typing import ClassVar

from sansio_mcp.runtime import HTTPClientSessionHost, SSEClientSessionHost

from ...a2e._actions import ConnectServer
from ._runner import BridgeRunner, Connection

__all__ = ["HTTPLinks"]


class HTTPLinks:
    """The ``http`` and ``sse`` parts of a :class:`~sansio_mcp_apps.a2e.runtime.BridgeLinks`;
    an adapter's links name its host classes (:attr:`http_host`, :attr:`sse_host`)."""

    http_host: ClassVar[type[HTTPClientSessionHost]]
    sse_host: ClassVar[type[SSEClientSessionHost]]

    async def http(
        self, runner: BridgeRunner, action: ConnectServer, connection: Connection
    ) -> str:
        """Streamable HTTP: the link lasts until cancelled; then the session's DELETE."""
        host = runner.link_host(self.http_host, action)
        backend = runner.backend
        async with backend.open_task_group() as group:
            host.attach(group)
            connection.flush_now = host.schedule
            runner.connection_opened(action.connection)
            try:
                await backend.sleep(math.inf)
            finally:
                try:
                    await backend.shielded(host.end_session)
                finally:
                    group.cancel()
        return "closed"  # pragma: no cover - only cancellation ends it

    async def sse(self, runner: BridgeRunner, action: ConnectServer, connection: Connection) -> str:
        """Legacy HTTP+SSE: open once the stream names its POST endpoint (within the
        connect timeout), until the stream ends."""
        config, backend = action.config, runner.backend
        host = runner.link_host(self.sse_host, action)
        ready, ended = backend.new_signal(), backend.new_signal()
        stream_over = False

        async def stream() -> None:
            nonlocal stream_over
            try:
                await host.run_stream(config.url, ready)
            finally:
                stream_over = True
                ready.set()
                ended.set()

        async with backend.open_task_group() as group:
            host.attach(group)
            connection.flush_now = host.schedule
            group.start_soon(stream)
            try:
                async with backend.fail_after(min(config.timeout, runner.host.connect_timeout)):
                    await ready.wait()
                if not stream_over:
                    runner.connection_opened(action.connection)
                    await ended.wait()
            finally:
                group.cancel()
        return "the SSE stream ended"
