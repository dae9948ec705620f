"""Serving a :class:`sansio_mcp.Server` on Trio streams and on stdio."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable
from typing import Any

import trio

from sansio_mcp import RequestReceived, ServerSession
from sansio_mcp.runtime._server import Context, Server

from ._runner import TrioRunner, TrioSessionHost
from ._util import unwrap_single_exception

__all__ = ["TrioContext", "serve", "serve_stdio"]


class TrioContext(Context):
    """The handler context on Trio."""

    def __init__(self, runner: TrioSessionHost, event: RequestReceived) -> None:
        assert isinstance(runner.session, ServerSession)
        super().__init__(
            request_id=event.request_id,
            method=event.method,
            params=event.params,
            progress_token=event.progress_token,
            session=runner.session,
            meta=event.meta,
            now=time.time(),
        )
        self._runner = runner

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return await self._runner.request(method, params, related_request=self.request_id)

    async def flush(self) -> None:
        await self._runner.flush()
        # A handler's await is a checkpoint, as everywhere in Trio (the runner's
        # flush may finish without one): a loop reporting progress stays
        # cancellable and lets other tasks run.
        await trio.lowlevel.checkpoint()

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


async def serve(
    server: Server,
    send_stream: trio.abc.SendStream,
    receive_stream: trio.abc.ReceiveStream,
    **session_options: Any,
) -> ServerSession:
    """Serve one client on a stream pair until it closes; returns the session."""
    session = server.create_session(**session_options)
    runner: TrioRunner

    def handle_request(event: RequestReceived) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        return server.begin(TrioContext(runner, event))

    runner = TrioRunner(session, send_stream, receive_stream, handle_request=handle_request)
    server.hub.add(session, runner._schedule_flush)
    try:
        with unwrap_single_exception():
            await runner.run()
    finally:
        server.hub.remove(session)
    return session


async def serve_stdio(server: Server, **session_options: Any) -> None:
    """Serve on this process's stdin and stdout; returns at end of stdin."""
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    async with stdin, stdout:
        await serve(server, stdout, stdin, **session_options)
