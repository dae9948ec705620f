"""The Trio MCP client: ``open_client`` over any stream pair, ``open_stdio_client``
over a server subprocess."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Unpack

import trio

from sansio_mcp.runtime import ClientAPI, ClientHandlers, SessionOptions, StderrTail, explained_exit
from sansio_mcp.runtime.hosting import ClientOptions, StdioChild, StdioOptions, hosted, run_client
from sansio_mcp.runtime.hosting import start_client as core_start_client

from ._backend import PRIMITIVES, child_process
from ._process import PIPE, drain_stderr, stop_process
from ._runner import TrioRunner
from ._util import unwrap_single_exception

__all__ = ["Client", "ClientHandlers", "hosted", "open_client", "open_stdio_client", "running"]


class Client(ClientAPI):
    """A connected, initialized MCP client (see :class:`ClientAPI` for the calls)."""


#: ``await start_client(host, session, handlers, initialize_timeout)``: run the
#: session's start (handshake or discover) and wrap it in a :class:`Client`.
start_client = partial(core_start_client, client_class=Client)


@asynccontextmanager
async def running(runner: TrioRunner) -> AsyncIterator[None]:
    """The block in which ``runner`` reads its stream and runs its tasks."""
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        try:
            yield
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_client(
    send_stream: trio.abc.SendStream,
    receive_stream: trio.abc.ReceiveStream,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect over a stream pair, start the session, and yield a :class:`Client`.

    ``mode`` is ``"auto"`` (probe ``server/discover``, fall back to the
    handshake), ``"stateless"`` or ``"handshake"`` (``"modern"`` and
    ``"legacy"``: deprecated spellings); a ``protocol_version`` implies the mode
    of its era.  ``max_input_rounds`` bounds how many times one call answers
    ``input_required`` before failing with ``InputRoundsExceeded``.
    """
    config = ClientOptions.of(options)
    session = config.new_session()
    runner = TrioRunner(session, send_stream, receive_stream, **config.handlers.host_callbacks())
    async with run_client(runner, session, config, Client, partial(running, runner)) as client:
        yield client


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str], **options: Unpack[StdioOptions]
) -> AsyncIterator[Client]:
    """Start ``command`` as an MCP server and connect to it over stdio (see
    :class:`~sansio_mcp.runtime._client_options.StdioChild` for its environment and
    its end); its stderr is always drained to logging.  If the connection closes,
    the :class:`~sansio_mcp.ConnectionClosedError` says how the server ended and
    the last lines of its stderr."""
    child = StdioChild.of(command, options)
    process = await trio.lowlevel.open_process(
        child.command,
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        env=child.env,
        cwd=child.cwd,
        start_new_session=os.name != "nt",
    )
    tail = StderrTail(PRIMITIVES.new_signal())
    try:
        assert process.stdin and process.stdout and process.stderr
        with unwrap_single_exception():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain_stderr, process.stderr, child.name, tail)
                try:
                    keywords = child.client.keywords()
                    async with (
                        explained_exit(PRIMITIVES, child_process(process), tail),
                        open_client(process.stdin, process.stdout, **keywords) as client,
                    ):
                        yield client
                finally:
                    await stop_process(process, grace=child.shutdown_grace)
    finally:
        if process.returncode is None:
            await stop_process(process, grace=0)
