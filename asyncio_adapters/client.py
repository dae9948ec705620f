"""The asyncio MCP client: ``open_client`` over a reader/writer pair,
``open_stdio_client`` over a server subprocess.  Same names and semantics
as :mod:`trio_adapters.client`."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Unpack

from sansio_mcp import ClientSession, ConnectionClosedError
from sansio_mcp._stdio import safe_environment
from sansio_mcp._util import unwrap_single_exception
from sansio_mcp.runtime._client import ClientAPI, ClientHandlers
from sansio_mcp.runtime._client_options import ClientOptions, SessionOptions
from sansio_mcp.runtime._host import start_client as core_start_client

from ._process import drain_stderr, start_child, stop_process
from ._runner import AsyncioRunner, AsyncioSessionHost, Framing, shielded

__all__ = [
    "Client",
    "ClientHandlers",
    "open_client",
    "open_stdio_client",
    "start_client",
]


class Client(ClientAPI):
    """A connected, initialized MCP client (see :class:`ClientAPI` for the calls)."""


async def start_client(
    host: AsyncioSessionHost,
    session: ClientSession,
    handlers: ClientHandlers,
    initialize_timeout: float | None,
) -> Client:
    """Run the session's start (handshake or discover) and wrap it in a :class:`Client`."""
    return await core_start_client(host, session, handlers, initialize_timeout, Client)


@asynccontextmanager
async def run_client(
    host: AsyncioSessionHost,
    session: ClientSession,
    handlers: ClientHandlers,
    initialize_timeout: float | None,
    run: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ready: asyncio.Event | None = None,
) -> AsyncIterator[Client]:
    """The shared body of every ``open_*_client``: a task group that lives
    exactly as long as the client, started and torn down the same way.
    ``run`` is the transport's reader; ``ready``, if given, must be set
    before the session may start (the legacy SSE endpoint is known)."""
    # Errors leave as themselves, not as a TaskGroup's group of one (as on Trio).
    with unwrap_single_exception():
        async with asyncio.TaskGroup() as group:
            host.attach(group)
            if run is not None:
                host.start(run())
            try:
                if ready is not None:
                    async with asyncio.timeout(initialize_timeout):
                        await ready.wait()
                    if host.driver.closed:
                        raise ConnectionClosedError(
                            message="the connection ended before the session could start"
                        )
                client = await start_client(host, session, handlers, initialize_timeout)
                yield client
            finally:
                session.close()
                host.driver.process_events()
                host.stop()


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
        async with run_client(
            runner, session, handlers, config.initialize_timeout, runner._read_loop
        ) as c:
            yield c
    finally:
        await close_writer(writer)


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close ``writer`` and wait until it is closed; a peer already gone is no error."""
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    shutdown_grace: float = 2.0,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Start ``command`` as an MCP server and connect to it over stdio.

    The child gets a minimal environment (PATH, HOME, …) plus ``env`` unless
    ``inherit_env`` is set; its stderr is always drained to logging; on exit
    its stdin is closed, then it is sent SIGTERM, then SIGKILL.
    """
    if not command:
        raise ValueError("command must not be empty")
    child_env = dict(os.environ) if inherit_env else safe_environment(os.environ)
    child_env.update(env or {})
    child = await start_child(command, env=child_env, cwd=cwd)
    process = child.process
    assert process.stderr
    drainer = asyncio.create_task(drain_stderr(process.stderr, os.path.basename(command[0])))
    try:
        config = ClientOptions.of(options)
        handlers, session = config.handlers, config.new_session()
        runner = AsyncioRunner(session, None, child.writer, **handlers.host_callbacks())

        def pump() -> Coroutine[Any, Any, None]:
            return runner.pump(child.connect_output)

        async with run_client(runner, session, handlers, config.initialize_timeout, pump) as client:
            yield client
    finally:
        await shielded(lambda: stop_process(process, grace=shutdown_grace, stdin=child.stdin))
        with contextlib.suppress(asyncio.CancelledError):
            await drainer
