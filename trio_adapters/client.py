"""The Trio MCP client: ``open_client`` over any stream pair, ``open_stdio_client``
over a server subprocess."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from sansio_mcp import HANDSHAKE_REVISIONS, ClientSession, RequestReceived
from sansio_mcp._client import ClientAPI, ClientHandlers, ProgressCallback

from ._process import PIPE, drain_stderr, safe_environment, stop_process
from ._runner import TrioRunner
from ._util import unwrap_single_exception

__all__ = ["Client", "ClientHandlers", "open_client", "open_stdio_client"]


class Client(ClientAPI):
    """A connected, initialized MCP client (see :class:`ClientAPI` for the calls)."""

    def __init__(
        self, runner: TrioRunner, session: ClientSession, handlers: ClientHandlers
    ) -> None:
        self._runner = runner
        self.session = session
        self.handlers = handlers

    @property
    def protocol_version(self) -> str:
        assert self.session.protocol_version is not None
        return self.session.protocol_version

    @property
    def server_info(self) -> dict[str, Any]:
        return self.session.peer_info or {}

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.session.peer_capabilities or {}

    @property
    def instructions(self) -> str | None:
        return self.session.instructions

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        return await self._runner.request(method, params, timeout=timeout, on_progress=on_progress)

    async def send_roots_list_changed(self) -> None:
        self.session.send_roots_list_changed()
        await self._runner.flush()


@asynccontextmanager
async def open_client(
    send_stream: trio.abc.SendStream,
    receive_stream: trio.abc.ReceiveStream,
    *,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str | None = None,
    supported_versions: Sequence[str] = HANDSHAKE_REVISIONS,
    initialize_timeout: float | None = 30.0,
) -> AsyncIterator[Client]:
    """Connect over a stream pair, run the handshake, and yield a :class:`Client`."""
    handlers = handlers or ClientHandlers()
    session = ClientSession(
        capabilities=handlers.capabilities(),
        client_info=client_info,
        supported_versions=supported_versions,
        protocol_version=protocol_version,
    )

    async def handle_request(event: RequestReceived) -> dict[str, Any]:
        return await handlers.answer(event.method, event.params)

    runner = TrioRunner(
        session,
        send_stream,
        receive_stream,
        handle_request=handle_request,
        handle_notification=handlers.notify,
    )
    with unwrap_single_exception():
        async with trio.open_nursery() as nursery:
            try:
                await nursery.start(runner.run)
                request_id = session.initialize(now=trio.current_time(), timeout=initialize_timeout)
                await runner.wait_for(request_id, timed=initialize_timeout is not None)
                yield Client(runner, session, handlers)
            finally:
                nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str | None = None,
    supported_versions: Sequence[str] = HANDSHAKE_REVISIONS,
    initialize_timeout: float | None = 30.0,
    shutdown_grace: float = 2.0,
) -> AsyncIterator[Client]:
    """Start ``command`` as an MCP server and connect to it over stdio.

    The child gets a minimal environment (PATH, HOME, …) plus ``env``, not
    the whole parent environment, unless ``inherit_env`` is set.  Its stderr
    is always drained to logging.  On exit its stdin is closed, then it is
    sent SIGTERM, then SIGKILL, each after ``shutdown_grace`` seconds.
    """
    if not command:
        raise ValueError("command must not be empty")
    child_env = dict(os.environ) if inherit_env else safe_environment()
    child_env.update(env or {})
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        env=child_env,
        cwd=cwd,
        start_new_session=os.name != "nt",
    )
    try:
        assert process.stdin and process.stdout and process.stderr
        with unwrap_single_exception():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain_stderr, process.stderr, os.path.basename(command[0]))
                try:
                    async with open_client(
                        process.stdin,
                        process.stdout,
                        handlers=handlers,
                        client_info=client_info,
                        protocol_version=protocol_version,
                        supported_versions=supported_versions,
                        initialize_timeout=initialize_timeout,
                    ) as client:
                        yield client
                finally:
                    await stop_process(process, grace=shutdown_grace)
    finally:
        if process.returncode is None:
            await stop_process(process, grace=0)
