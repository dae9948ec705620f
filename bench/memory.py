"""Row 6b: memory per idle session (tracemalloc, after the handshake).

* ``ours``: N :class:`sansio_mcp.ServerSession` objects from the example
  server, each fed ``initialize`` + ``notifications/initialized`` and its
  output taken.  A sans-IO session is the whole per-connection state; the
  I/O adapter around it adds a reader task and a stream pair.
* ``ours_asyncio``: the same sessions each driven by an asyncio runner over an
  in-memory stream pair (its reader task waiting), i.e. an idle connection
  as our asyncio adapter holds it, minus the OS pipe/socket.
* ``sdk``: N ``mcp`` SDK low-level ``Server.run`` loops, each over a pair of
  the SDK's own in-memory streams, fed the same two messages: an idle SDK
  connection is a running task group (its receive loop), not a plain
  object, so that is what is measured.

Bytes per session = (traced memory after N sessions - before) / N, after a
warm-up session and ``gc.collect()``.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1.0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def _ours(n: int) -> dict[str, Any]:
    from sansio_mcp import NEED_DATA
    from sansio_mcp_apps.example_server import build_server

    server = build_server()
    init, inited = _line(INITIALIZE), _line(INITIALIZED)

    def one() -> Any:
        session = server.create_session()
        session.receive_data(init)
        session.data_to_send()
        session.receive_data(inited)
        while session.next_event() is not NEED_DATA:
            pass
        return session

    one()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    sessions = [one() for _ in range(n)]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(sessions) == n
    return {"sessions": n, "bytes_per_session": (after - before) / n}


def _ours_asyncio(n: int) -> dict[str, Any]:
    import asyncio

    from asyncio_adapters._runner import AsyncioRunner
    from sansio_mcp_apps.example_server import build_server

    server = build_server()
    init, inited = _line(INITIALIZE), _line(INITIALIZED)

    class _Transport:
        """The transport of a pipe whose peer takes everything (the runner writes to
        the transport itself)."""

        def get_write_buffer_size(self) -> int:
            return 0

        def get_protocol(self) -> None:
            return None

        def write(self, data: bytes) -> None:
            pass

        def is_closing(self) -> bool:
            return False

    class _Sink:
        """A writer that keeps nothing (the peer's side of a pipe)."""

        transport = _Transport()

        def write(self, data: bytes) -> None:
            pass

        async def drain(self) -> None:
            pass

        def close(self) -> None:
            pass

        async def wait_closed(self) -> None:
            pass

        def is_closing(self) -> bool:
            return False

    async def handle(event: Any) -> dict[str, Any]:
        return {}

    async def main() -> dict[str, Any]:
        tasks: list[asyncio.Task[None]] = []
        sessions: list[Any] = []

        async def one() -> None:
            reader = asyncio.StreamReader()
            session = server.create_session()
            runner = AsyncioRunner(session, reader, _Sink(), handle_request=handle)  # type: ignore[arg-type]
            sessions.append(session)
            tasks.append(asyncio.create_task(runner.run()))
            reader.feed_data(init + inited)
            await asyncio.sleep(0)

        await one()
        await asyncio.sleep(0.05)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(n):
            await one()
        await asyncio.sleep(0.1)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        ready = sum(1 for s in sessions if s.state.name == "READY")
        if ready != len(sessions) or any(t.done() for t in tasks):
            raise RuntimeError(f"only {ready} of {len(sessions)} sessions are idle and ready")
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return {"sessions": n, "bytes_per_session": (after - before) / n}

    return asyncio.run(main())


def _sdk(n: int) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")
    import anyio
    from mcp import types
    from mcp.server.mcpserver import MCPServer
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    server = MCPServer("sdk-bench-server", version="1.0.0")

    @server.tool()
    def echo(message: str) -> str:
        return message

    low = server._lowlevel_server
    options = low.create_initialization_options()
    adapter = types.jsonrpc_message_adapter
    keep: list[Any] = []

    async def main() -> dict[str, Any]:
        async with anyio.create_task_group() as group:

            async def one() -> None:
                to_server, server_reads = create_context_streams[Any](1)
                server_writes, from_server = create_context_streams[Any](1)
                group.start_soon(low.run, server_reads, server_writes, options)
                await to_server.send(SessionMessage(adapter.validate_python(INITIALIZE)))
                await from_server.receive()
                await to_server.send(SessionMessage(adapter.validate_python(INITIALIZED)))
                keep.append((to_server, from_server))

            await one()
            await anyio.sleep(0.05)
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(n):
                await one()
            await anyio.sleep(0.1)
            gc.collect()
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            group.cancel_scope.cancel()
        return {"sessions": n, "bytes_per_session": (after - before) / n}

    return anyio.run(main, backend="asyncio")


def run_memory(impl: str, sessions: int) -> dict[str, Any]:
    return {"ours": _ours, "ours_asyncio": _ours_asyncio, "sdk": _sdk}[impl](sessions)
