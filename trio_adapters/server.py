"""Serving a :class:`sansio_mcp.Server` on Trio streams and on stdio."""

from __future__ import annotations

import os
import time
from functools import partial
from typing import Any

import trio

from sansio_mcp import ServerSession
from sansio_mcp.runtime import Server
from sansio_mcp.runtime.hosting import HostContext, serving

from ._runner import TrioRunner
from ._util import unwrap_single_exception

__all__ = ["TrioContext", "serve", "serve_stdio"]


class TrioContext(HostContext):
    """The handler context on Trio."""

    #: Dates a request's sealed state (read once per request, without a hop).
    wall_clock = staticmethod(time.time)

    async def flush(self) -> None:
        await super().flush()
        # A handler's await is a checkpoint, as everywhere in Trio (the runner's
        # flush may finish without one): a loop reporting progress stays
        # cancellable and lets other tasks run.
        await trio.lowlevel.checkpoint()


async def serve(
    server: Server,
    send_stream: trio.abc.SendStream,
    receive_stream: trio.abc.ReceiveStream,
    **session_options: Any,
) -> ServerSession:
    """Serve one client on a stream pair until it closes; returns the session."""
    session = server.create_session(**session_options)
    streams = partial(TrioRunner, session, send_stream, receive_stream)
    runner = serving(server, TrioContext, streams)
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
