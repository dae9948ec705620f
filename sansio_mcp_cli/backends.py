"""The two event-loop backends the command line can run on (``--backend``).

Each gives the same few things: run a coroutine function, open a client for
a command or URL, serve a server on a transport, and time-outs.  The
commands themselves are written once against this interface.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import trio

from sansio_mcp.runtime._client import ClientAPI
from sansio_mcp.runtime._server import Server

__all__ = ["BACKENDS", "Backend", "TimedOut"]

T = TypeVar("T")
TRANSPORT_PATHS = {"http": "/mcp", "sse": "/sse", "ws": "/mcp"}


class TimedOut(Exception):
    """A command's overall time limit passed."""


def _announce(transport: str, host: str, port: int) -> None:
    scheme = "ws" if transport == "ws" else "http"
    shown = f"[{host}]" if ":" in host else host
    print(
        f"sansio-mcp example server: {scheme}://{shown}:{port}{TRANSPORT_PATHS[transport]}",
        file=sys.stderr,
        flush=True,
    )


class Backend:
    """What a command needs from an event loop."""

    name: str

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        raise NotImplementedError

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        """A client for a stdio command, or a URL (HTTP, legacy SSE, WebSocket)."""
        raise NotImplementedError

    async def serve(self, server: Server, transport: str, host: str, port: int) -> None:
        raise NotImplementedError

    def fail_after(self, seconds: float) -> AbstractAsyncContextManager[None]:
        """Raise :class:`TimedOut` if the block takes longer than ``seconds``."""
        raise NotImplementedError

    def move_on_after(self, seconds: float) -> AbstractAsyncContextManager[None]:
        """Quietly cancel the block after ``seconds``."""
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        raise NotImplementedError


class TrioBackend(Backend):
    name = "trio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return trio.run(fn, *args)

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        if url is None:
            from trio_adapters.client import open_stdio_client

            return open_stdio_client(command, **options)
        if url.startswith(("ws://", "wss://")):
            from trio_adapters.websocket import open_ws_client

            return open_ws_client(url, **options)
        if transport == "sse":
            from trio_adapters.sse import open_sse_client

            return open_sse_client(url, **options)
        from trio_adapters.http_client import open_http_client

        return open_http_client(url, **options)

    async def serve(self, server: Server, transport: str, host: str, port: int) -> None:
        if transport == "stdio":
            from trio_adapters.server import serve_stdio

            await serve_stdio(server)
            return
        from trio_adapters.http_server import serve_http
        from trio_adapters.sse import serve_sse
        from trio_adapters.websocket import serve_ws

        serves: dict[str, Callable[..., Awaitable[None]]] = {
            "http": serve_http,
            "sse": serve_sse,
            "ws": serve_ws,
        }
        serve = serves[transport]
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(partial(serve, server, host=host, port=port))
            _announce(transport, host, bound)

    @asynccontextmanager
    async def fail_after(self, seconds: float) -> AsyncIterator[None]:
        try:
            with trio.fail_after(seconds):
                yield
        except trio.TooSlowError:
            raise TimedOut(f"timed out after {seconds:g} s") from None

    @asynccontextmanager
    async def move_on_after(self, seconds: float) -> AsyncIterator[None]:
        with trio.move_on_after(seconds):
            yield

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args)


class AsyncioBackend(Backend):
    name = "asyncio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        async def main() -> T:
            return await fn(*args)

        return asyncio.run(main())

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        if url is None:
            from asyncio_adapters.client import open_stdio_client

            return open_stdio_client(command, **options)
        if url.startswith(("ws://", "wss://")):
            from asyncio_adapters.websocket import open_ws_client

            return open_ws_client(url, **options)
        if transport == "sse":
            from asyncio_adapters.sse import open_sse_client

            return open_sse_client(url, **options)
        from asyncio_adapters.http_client import open_http_client

        return open_http_client(url, **options)

    async def serve(self, server: Server, transport: str, host: str, port: int) -> None:
        if transport == "stdio":
            from asyncio_adapters.server import serve_stdio

            await serve_stdio(server)
            return
        from asyncio_adapters.http_server import serve_http
        from asyncio_adapters.sse import serve_sse
        from asyncio_adapters.websocket import serve_ws

        serves: dict[str, Callable[..., Coroutine[Any, Any, None]]] = {
            "http": serve_http,
            "sse": serve_sse,
            "ws": serve_ws,
        }
        serve = serves[transport]
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(server, host=host, port=port, started=started))
        try:
            _announce(transport, host, await started)
            await task
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @asynccontextmanager
    async def fail_after(self, seconds: float) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(seconds):
                yield
        except TimeoutError:
            raise TimedOut(f"timed out after {seconds:g} s") from None

    @asynccontextmanager
    async def move_on_after(self, seconds: float) -> AsyncIterator[None]:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                yield

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)


BACKENDS: dict[str, Backend] = {"trio": TrioBackend(), "asyncio": AsyncioBackend()}
