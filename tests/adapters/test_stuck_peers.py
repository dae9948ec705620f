"""Peers that stop reading, on both backends: cancelling or timing out a request
whose bytes are still going out loses nothing and leaves no half message on the
wire, a peer that never reads cannot hold a time limit or a cancellation up, and
a peer that closes its input ends the session.  The peer is tests/adapters/stuck_peer.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import trio

import asyncio_adapters
import trio_adapters
from asyncio_adapters.server import _serve as asyncio_serve
from sansio_mcp import ConnectionClosedError, RequestTimeout
from sansio_mcp.runtime import Server
from tests.transports.helpers import INITIALIZED, initialize
from trio_adapters import serve as trio_serve

PEER = [sys.executable, str(Path(__file__).with_name("stuck_peer.py"))]
BIG = {"s": "x" * 2_000_000}  # far more than a pipe holds
BACKENDS = ["trio", "asyncio"]


def _run(backend: str, trio_main: Any, asyncio_main: Any) -> Any:
    if backend == "trio":
        return trio.run(trio_main)
    return asyncio.run(asyncio_main())


def _logged(log: Path, count: int) -> list[str]:
    """The peer's log once it has ``count`` lines (it reads late, on purpose)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines()
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    return log.read_text().splitlines()


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancelling_a_request_mid_send_leaves_whole_messages(backend: str, tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    log.touch()
    command = [*PEER, "slow", str(log)]

    async def trio_main() -> Any:
        async with trio_adapters.open_stdio_client(command, env={"SLOW": "1.0"}) as client:
            with trio.move_on_after(0.3) as scope:
                await client.call_tool("big", BIG)
            assert scope.cancelled_caught
            with trio.fail_after(20):
                return await client.call_tool("after", {})

    async def asyncio_main() -> Any:
        async with asyncio_adapters.open_stdio_client(command, env={"SLOW": "1.0"}) as client:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    await client.call_tool("big", BIG)
            async with asyncio.timeout(20):
                return await client.call_tool("after", {})

    after = _run(backend, trio_main, asyncio_main)
    assert after["content"][0]["text"] == "pong"
    lines = _logged(log, 3)
    assert not [line for line in lines if line.startswith("BAD")], lines
    methods = Counter(line.split()[1] for line in lines)
    assert methods == {"tools/call": 2, "notifications/cancelled": 1}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["timeout", "cancel"])
def test_a_peer_that_never_reads_cannot_hold_up_a_time_limit(backend: str, how: str) -> None:
    """It lives a minute and reads nothing: the call ends after its second, and
    the client closes within its shutdown grace, not when the peer would exit."""
    command = [*PEER, "never_read"]
    env = {"PEER_LIFE": "60"}
    outcome: list[str] = []

    async def trio_main() -> None:
        with trio.fail_after(20):
            async with trio_adapters.open_stdio_client(
                command, env=env, shutdown_grace=0.5
            ) as client:
                if how == "timeout":
                    for _ in range(2):  # the timer must not wait for output either
                        with pytest.raises(RequestTimeout):
                            await client.call_tool("t", BIG, timeout=1)
                else:
                    with trio.move_on_after(1):
                        await client.call_tool("t", BIG)
                outcome.append("ended")

    async def asyncio_main() -> None:
        async with asyncio.timeout(20):
            async with asyncio_adapters.open_stdio_client(
                command, env=env, shutdown_grace=0.5
            ) as client:
                if how == "timeout":
                    for _ in range(2):
                        with pytest.raises(RequestTimeout):
                            await client.call_tool("t", BIG, timeout=1)
                else:
                    with pytest.raises(TimeoutError):
                        async with asyncio.timeout(1):
                            await client.call_tool("t", BIG)
                outcome.append("ended")

    _run(backend, trio_main, asyncio_main)
    assert outcome == ["ended"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", [0, 2_000_000])
def test_a_peer_that_closes_its_input_ends_the_session(backend: str, size: int) -> None:
    """Writing gets EPIPE: the request fails with ConnectionClosedError at once
    (it has no time limit to wait for)."""
    command = [*PEER, "closein"]
    arguments = {"s": "x" * size}

    async def trio_main() -> None:
        with trio.fail_after(20):
            async with trio_adapters.open_stdio_client(command, shutdown_grace=0.5) as client:
                with pytest.raises(ConnectionClosedError):
                    await client.call_tool("t", arguments)

    async def asyncio_main() -> None:
        async with asyncio.timeout(20):
            async with asyncio_adapters.open_stdio_client(command, shutdown_grace=0.5) as client:
                with pytest.raises(ConnectionClosedError):
                    await client.call_tool("t", arguments)

    _run(backend, trio_main, asyncio_main)


# A server whose handler is cancelled while its output is still going out ------------------


def _progressing_server() -> Server:
    server = Server("stuck")

    @server.tool()
    async def big(ctx: Any) -> str:
        await ctx.report_progress(1, None, "m" * 1_000_000)  # more than the pipe holds
        await ctx.sleep(30)
        return "done"

    return server


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


_OPENING = b"".join(
    _line(m)
    for m in [
        initialize(0),
        INITIALIZED,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "big", "arguments": {}, "_meta": {"progressToken": "t"}},
        },
    ]
)
_CANCEL_THEN_PING = _line(
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
) + _line({"jsonrpc": "2.0", "id": 99, "method": "ping"})


def _read_until_pong(fd: int, deadline: float) -> list[Any]:
    os.set_blocking(fd, False)
    data = b""
    while b'"id":99' not in data and time.monotonic() < deadline:
        try:
            data += os.read(fd, 1 << 20)
        except BlockingIOError:
            time.sleep(0.01)
    return [json.loads(line) for line in data.splitlines()]  # a half line fails here


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_handler_cancelled_mid_send_leaves_whole_messages(backend: str) -> None:
    server_in, client_out = os.pipe()
    client_in, server_out = os.pipe()
    os.write(client_out, _OPENING)
    received: list[Any] = []

    async def trio_main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                trio_serve,
                _progressing_server(),
                trio.lowlevel.FdStream(server_out),
                trio.lowlevel.FdStream(server_in),
            )
            await trio.sleep(0.3)  # the handler is sending its progress, stuck
            os.write(client_out, _CANCEL_THEN_PING)
            await trio.sleep(0.3)
            received.extend(
                await trio.to_thread.run_sync(_read_until_pong, client_in, time.monotonic() + 10)
            )
            nursery.cancel_scope.cancel()

    async def asyncio_main() -> None:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(server_out, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        server_input = os.fdopen(server_in, "rb", buffering=0)
        serving = asyncio.create_task(
            asyncio_serve(
                _progressing_server(),
                None,
                writer,
                connect_input=lambda p: loop.connect_read_pipe(p, server_input),
            )
        )
        await asyncio.sleep(0.3)
        os.write(client_out, _CANCEL_THEN_PING)
        await asyncio.sleep(0.3)
        received.extend(await asyncio.to_thread(_read_until_pong, client_in, time.monotonic() + 10))
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving
        transport.close()

    try:
        _run(backend, trio_main, asyncio_main)
    finally:
        for fd in (client_in, client_out):
            os.close(fd)
    kinds = [m.get("id", m.get("method")) for m in received]
    assert kinds == [0, "notifications/progress", 99]
