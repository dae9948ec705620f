"""The asyncio MCP client: ``open_client`` over a reader/writer pair,
``open_stdio_client`` over a server subprocess.  Same names and semantics
as :mod:`trio_adapters.client`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, Unpack

from sansio_mcp import ClientSession
from sansio_mcp.runtime import (
    ClientAPI,
    ClientHandlers,
    SessionOptions,
    StderrTail,
    drain_stderr,
    explained_exit,
    stop_process,
)
from sansio_mcp.runtime.hosting import ClientOptions, StdioChild, StdioOptions, hosted, run_client
from sansio_mcp.runtime.hosting import start_client as core_start_client

from ._backend import PRIMITIVES
from ._runner import AsyncioRunner, Framing

__all__ = [
    "Client",
    "ClientHandlers",
    "hosted",
    "open_client",
    "open_stdio_client",
    "running",
    "start_client",
]


logger = logging.getLogger("asyncio_adapters.stdio")


class Client(ClientAPI):
    """A connected, initialized MCP client (see :class:`ClientAPI` for the calls)."""


#: ``await start_client(host, session, handlers, initialize_timeout)``: run the
#: session's start (handshake or discover) and wrap it in a :class:`Client`.
start_client = partial(core_start_client, client_class=Client)


def running(runner: AsyncioRunner) -> AbstractAsyncContextManager[Any]:
    """The block in which ``runner`` reads its stream and runs its tasks."""
    return hosted(runner, runner._read_loop)


@asynccontextmanager
async def open_client(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    framing: Callable[[ClientSession], Framing] | None = None,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect over a reader/writer pair, start the session, and yield a :class:`Client`.

    The connection is the session's: on exit the writer is closed, and waited for,
    so the server reads the end of its input and its ``serve`` returns (a server
    task left running would be cancelled by ``asyncio.run`` at exit, which Python
    3.11 reports as a "CancelledError in callback" of ``asyncio.start_server``).
    """
    config = ClientOptions.of(options)
    handlers, session = config.handlers, config.new_session()

    runner = AsyncioRunner(
        session,
        reader,
        writer,
        **handlers.host_callbacks(),
        framing=framing(session) if framing is not None else None,
    )
    try:
        async with run_client(runner, session, config, Client, partial(running, runner)) as client:
            yield client
    finally:
        await close_writer(writer)


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close ``writer`` and wait until it is closed; a peer already gone is no error."""
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str], **options: Unpack[StdioOptions]
) -> AsyncIterator[Client]:
    """:func:`trio_adapters.open_stdio_client` on asyncio: the child's output is
    handed to the session as it arrives, with no reader task; a crashing server's
    :class:`~sansio_mcp.ConnectionClosedError` says how it ended."""
    child = StdioChild.of(command, options)
    cwd = None if child.cwd is None else os.fspath(child.cwd)
    process = await PRIMITIVES.open_process(child.command, env=child.env, cwd=cwd)
    pipes = process.native
    tail = StderrTail(PRIMITIVES.new_signal())
    drainer = asyncio.create_task(drain_stderr(process.stderr, child.name, logger, tail))
    try:
        config = child.client
        session = config.new_session()
        runner = AsyncioRunner(session, None, pipes.writer, **config.handlers.host_callbacks())
        pumping = partial(hosted, runner, partial(runner.pump, pipes.connect_output))
        async with (
            explained_exit(PRIMITIVES, process, tail),
            run_client(runner, session, config, Client, pumping) as client,
        ):
            yield client
    finally:
        await stop_process(PRIMITIVES, process, grace=child.shutdown_grace)
        with contextlib.suppress(asyncio.CancelledError):
            await drainer
