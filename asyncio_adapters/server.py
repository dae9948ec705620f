"""Serving a :class:`sansio_mcp.Server` on asyncio streams and on stdio."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from sansio_mcp import ServerSession
from sansio_mcp.runtime import Server, unwrap_single_exception
from sansio_mcp.runtime.hosting import HostContext, serving

from ._runner import AsyncioRunner, Connector, Framing, OutputPipeProtocol

__all__ = ["AsyncioContext", "serve", "serve_stdio"]


class AsyncioContext(HostContext):
    """The handler context on asyncio."""

    #: Dates a request's sealed state (read once per request, without a hop).
    wall_clock = staticmethod(time.time)


async def serve(
    server: Server,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    framing: Callable[[ServerSession], Framing] | None = None,
    **session_options: Any,
) -> ServerSession:
    """Serve one client on a reader/writer pair until it closes; returns the session.

    The connection is the session's: when the client closes its side, or this is
    cancelled, the writer is closed and waited for (as ``asyncio.start_server``
    leaves to its callback), so nothing is left open for the event loop's teardown.
    """
    try:
        return await _serve(server, reader, writer, framing=framing, **session_options)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


async def _serve(
    server: Server,
    reader: asyncio.StreamReader | None,
    writer: asyncio.StreamWriter,
    *,
    framing: Callable[[ServerSession], Framing] | None = None,
    connect_input: Connector | None = None,
    **session_options: Any,
) -> ServerSession:
    session = server.create_session(**session_options)
    framed = framing(session) if framing is not None else None
    runner = serving(
        server, AsyncioContext, partial(AsyncioRunner, session, reader, writer, framing=framed)
    )
    server.hub.add(session, runner._schedule_flush)
    try:
        with unwrap_single_exception():
            await runner.run(connect_input=connect_input)
    except asyncio.CancelledError:
        if not runner.ended_by_peer:
            raise
        # The client had closed: the session was over and only its teardown was cut
        # short (asyncio.run cancelling what is left as the program ends). Ending as
        # cancelled would make asyncio.start_server (Python 3.11) print a traceback.
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
    finally:
        server.hub.remove(session)
    return session


async def serve_stdio(server: Server, **session_options: Any) -> None:
    """Serve on this process's stdin and stdout; returns at end of stdin."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(OutputPipeProtocol, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    try:
        # Input is pushed to the session as it arrives (no reader task to wake).
        await _serve(
            server,
            None,
            writer,
            connect_input=lambda protocol: loop.connect_read_pipe(protocol, sys.stdin),
            **session_options,
        )
    finally:
        transport.close()
