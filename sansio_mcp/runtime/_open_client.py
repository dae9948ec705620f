"""The body every ``open_*_client`` shares, written once: the host runs for
exactly as long as the client, the session starts (after the transport is
ready, where it must be), the client is handed out, and the session is ended
and closed the same way on every transport and backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from .._client_session import ClientSession
from .._errors import ConnectionClosedError
from .._util import unwrap_single_exception
from ._backend import Signal
from ._client import ClientAPI
from ._client_options import ClientOptions
from ._host import HostBase, start_client

__all__ = ["run_client"]

C = TypeVar("C", bound=ClientAPI)


@asynccontextmanager
async def run_client(
    host: HostBase,
    session: ClientSession,
    config: ClientOptions,
    client_class: type[C],
    hosted: Callable[[], AbstractAsyncContextManager[Any]],
    *,
    ready: Signal | None = None,
    end: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[C]:
    """Yield a started client of ``session`` on ``host``.

    ``hosted()`` is the adapter's block in which the host's tasks run (leaving it
    cancels them); ``ready``, if given, must be set (within ``initialize_timeout``)
    before the session may start, as the legacy SSE stream naming its POST
    endpoint; ``end``, run shielded when the caller is done, says goodbye (an
    HTTP session's DELETE, a WebSocket's closing handshake).  Errors leave as
    themselves, not as a task group's group of one."""
    with unwrap_single_exception():
        async with hosted():
            try:
                if ready is not None:
                    await _wait_ready(host, ready, config.initialize_timeout)
                    if host.driver.closed:
                        raise ConnectionClosedError(
                            message="the connection ended before the session could start"
                        )
                client = await start_client(
                    host, session, config.handlers, config.initialize_timeout, client_class
                )
                yield client
                if end is not None:
                    await host.shielded(end)
            finally:
                session.close()
                host.driver.process_events()


async def _wait_ready(host: HostBase, ready: Signal, limit: float | None) -> None:
    if limit is None:
        await ready.wait()
        return
    async with host.backend.fail_after(limit):
        await ready.wait()
