"""How the runners move bytes: how many event-loop passes a call costs over a
pipe, and how a server holds back when its client does not read."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import select
import selectors
import sys
from typing import Any

import pytest
import trio

from asyncio_adapters import open_stdio_client as asyncio_stdio_client
from asyncio_adapters.server import _serve as asyncio_serve
from sansio_mcp.runtime import Context, Server
from sansio_mcp.runtime._sender import Sender
from trio_adapters import open_client as trio_open_client
from trio_adapters import open_stdio_client as trio_stdio_client
from trio_adapters import serve as trio_serve
from trio_adapters._backend import PRIMITIVES, PipeStream, reader

SERVER = [sys.executable, "-m", "sansio_mcp_cli", "example-server"]
CALLS = 200


class _CountWaits(trio.abc.Instrument):
    def __init__(self) -> None:
        self.waits = 0

    def before_io_wait(self, timeout: float) -> None:
        self.waits += 1


async def test_trio_call_over_a_pipe_takes_two_scheduler_passes() -> None:
    # One pass to wait for the answer, one to resume the caller: the request is
    # written without yielding, and the answer is read without a failed read first.
    async with trio_stdio_client(SERVER, mode="legacy") as client:
        for _ in range(20):
            await client.call_tool("echo", {"message": "warm"})
        counter = _CountWaits()
        trio.lowlevel.add_instrument(counter)
        try:
            for i in range(CALLS):
                answer = await client.call_tool("echo", {"message": f"m{i}"})
                assert answer["content"][0]["text"] == f"m{i}"
        finally:
            trio.lowlevel.remove_instrument(counter)
    assert counter.waits <= CALLS * 2 + 5, counter.waits / CALLS


class _CountingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    polls = 0

    def select(self, timeout: float | None = None) -> Any:
        type(self).polls += 1
        return super().select(timeout)


def test_asyncio_call_over_a_pipe_takes_two_loop_iterations() -> None:
    # The answer is handed to the session by the pipe's protocol, so no reader
    # task needs a wake-up of its own.
    async def main() -> int:
        async with asyncio_stdio_client(SERVER, mode="legacy") as client:
            for _ in range(20):
                await client.call_tool("echo", {"message": "warm"})
            before = _CountingSelector.polls
            for i in range(CALLS):
                answer = await client.call_tool("echo", {"message": f"m{i}"})
                assert answer["content"][0]["text"] == f"m{i}"
            return _CountingSelector.polls - before

    loop = asyncio.SelectorEventLoop(_CountingSelector())
    try:
        polls = loop.run_until_complete(main())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    assert polls <= CALLS * 2 + 5, polls / CALLS


def test_asyncio_server_stops_reading_while_its_client_does_not() -> None:
    """A client that floods requests and reads nothing cannot make the server
    buffer its answers without bound; once it reads, every answer arrives."""
    server = Server("flood")
    answer = "z" * 200_000

    @server.tool()
    def big(i: int, padding: str) -> str:
        return f"{i}:{answer}"

    requests = 60

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server_in, client_out = os.pipe()
        client_in, server_out = os.pipe()
        w_transport, w_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(server_out, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(w_transport, w_protocol, None, loop)
        server_input = os.fdopen(server_in, "rb", buffering=0)
        serving = asyncio.create_task(
            asyncio_serve(
                server,
                None,
                writer,
                connect_input=lambda protocol: loop.connect_read_pipe(protocol, server_input),
            )
        )
        lines = [
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "flood", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ] + [
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "big", "arguments": {"i": i, "padding": "p" * 20_000}},
            }
            for i in range(1, requests + 1)
        ]
        flood = b"".join(json.dumps(m).encode() + b"\n" for m in lines)
        os.set_blocking(client_out, False)
        sent = 0
        for _ in range(200):  # write what the server takes, reading nothing back
            try:
                sent += os.write(client_out, flood[sent:])
            except BlockingIOError:
                pass
            await asyncio.sleep(0.005)
            if sent == len(flood):
                break
        # Far from everything went in: the server stopped reading, holding no
        # more than the answers to one read's worth of requests.
        assert sent < len(flood) // 2, (sent, len(flood))
        assert w_transport.get_write_buffer_size() < 8 * len(answer)

        received = bytearray()
        os.set_blocking(client_in, False)
        async with asyncio.timeout(20):
            while received.count(b"\n") < requests + 1:
                if sent < len(flood):
                    try:
                        sent += os.write(client_out, flood[sent:])
                    except BlockingIOError:
                        pass
                try:
                    received += os.read(client_in, 1 << 20)
                except BlockingIOError:
                    await asyncio.sleep(0.001)
        os.close(client_out)
        await asyncio.wait_for(serving, 10)
        os.close(client_in)
        answers = [json.loads(x) for x in bytes(received).splitlines()]
        texts = {a["id"]: a["result"]["content"][0]["text"] for a in answers if a["id"]}
        assert texts == {i: f"{i}:{answer}" for i in range(1, requests + 1)}

    asyncio.run(main())


async def test_trio_handler_awaits_stay_checkpoints_over_a_pipe() -> None:
    """Over a pipe the runner's flush may finish without yielding, but a handler's
    ``await ctx.report_progress()`` must still be a checkpoint: a loop of them stays
    cancellable and lets the connection go on."""
    server = Server("spin")
    seen: dict[str, Any] = {}

    @server.tool()
    async def spin(ctx: Context) -> str:
        i = 0
        try:
            for i in range(1, 50_001):
                await ctx.report_progress(i)
            seen["finished"] = True
            return "finished"
        except trio.Cancelled:
            seen["cancelled at"] = i
            raise

    @server.tool()
    def echo(message: str) -> str:
        return message

    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    server_out, server_in = trio.lowlevel.FdStream(to_client_w), trio.lowlevel.FdStream(to_server_r)
    client_out, client_in = trio.lowlevel.FdStream(to_server_w), trio.lowlevel.FdStream(to_client_r)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio_serve, server, server_out, server_in)
            async with trio_open_client(client_out, client_in, mode="legacy") as client:
                with trio.CancelScope() as scope:
                    await client.call_tool("spin", {}, on_progress=lambda *_: scope.cancel())
                echoed = await client.call_tool("echo", {"message": "on"})
                assert echoed["content"][0]["text"] == "on"
                while "cancelled at" not in seen and "finished" not in seen:
                    await trio.sleep(0.01)
            await client_out.aclose()
            await client_in.aclose()
        await server_out.aclose()
        await server_in.aclose()
    # Cancelled within a few reports: long before the pipe fills and a write would yield.
    assert "finished" not in seen and seen["cancelled at"] < 100, seen


async def test_a_sender_on_a_trio_pipe_writes_in_order_and_notices_a_gone_reader() -> None:
    """A Sender (bytes queued by synchronous code: the bridge's agent side) writes
    what a pipe takes at once and sends the rest from its task, in order, however
    much piles up; once the reader is gone it is broken, says so once, and drops
    output.  The pipe stream reads what arrives, and its end as b""."""
    out_r, out_w = os.pipe()
    in_r, in_w = os.pipe()
    broken: list[bool] = []
    send, receive = trio.lowlevel.FdStream(out_w), trio.lowlevel.FdStream(in_r)
    stream = PipeStream(send, receive)
    sender = Sender(PRIMITIVES, stream, lambda: broken.append(True))
    chunks = [bytes([65 + i % 26]) * 50_000 for i in range(40)]  # 2 MB: far more than a pipe holds
    got: list[bytes] = []

    async def read_all() -> None:
        while data := await stream.receive_some():
            got.append(data)
        got.append(b"")

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender.run)
            nursery.start_soon(read_all)
            # Never waits; says whether anything was left for the task to send.
            left_nothing = [sender.write(chunk) for chunk in chunks]
            assert left_nothing[0] and not left_nothing[-1]
            assert sender.pending  # the pipe did not take it all: the task sends the rest
            assert not sender.idle
            received = bytearray()
            reader_fd = trio.lowlevel.FdStream(out_r)
            while len(received) < sum(map(len, chunks)):
                received += await reader_fd.receive_some(1 << 16)
            assert bytes(received) == b"".join(chunks)
            await sender.drained(5)
            assert not sender.pending and sender.idle
            os.write(in_w, b"input")
            os.close(in_w)
            while not got or got[-1]:
                await trio.sleep(0.01)
            assert b"".join(got) == b"input"
            await reader_fd.aclose()
            assert sender.write(b"x" * 100_000)  # the reader is gone: nothing left to send
            assert sender.broken and broken == [True] and sender.idle
            sender.write(b"more")  # dropped without a word
            assert broken == [True]
            nursery.cancel_scope.cancel()
        await send.aclose()
        await receive.aclose()


async def test_a_trio_pipe_that_stays_full_does_not_starve_other_tasks() -> None:
    """A peer that writes faster than we read keeps the pipe full, so every read
    returns at once; the reader still lets other tasks run (here a sleeper that
    must wake while the flood is still coming), or a flooding server would keep
    its client from timers, cancellation and signals until it stopped."""
    read_fd, write_fd = os.pipe()
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux: room for many reads' worth
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    total = 64 << 20
    received = 0
    woke_at: list[int] = []

    def flood() -> None:
        block = b"x" * (1 << 16)
        with open(write_fd, "wb", buffering=0) as pipe:
            for _ in range(total // len(block)):
                pipe.write(block)

    async def read_all() -> None:
        nonlocal received
        read = reader(trio.lowlevel.FdStream(read_fd))
        while data := await read():
            received += len(data)

    async def sleeper() -> None:
        await trio.sleep(0.01)
        woke_at.append(received)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, flood)
            while not select.select([read_fd], [], [], 0)[0]:
                await trio.sleep(0.001)  # the flood has begun: the pipe is full from here
            nursery.start_soon(sleeper)
            await read_all()
    assert received == total
    assert woke_at and woke_at[0] < total, "the sleeper woke only once the flood ended"


def test_asyncio_transports_read_in_small_chunks() -> None:
    """asyncio's transports read 256 KiB per call by default, and allocating that
    for every small message costs more than the message: ours read 64 KiB."""
    import socket

    from asyncio_adapters._runner import AsyncioRunner, PushProtocol
    from sansio_mcp import ClientSession

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=ours)
        assert writer.transport.max_size > 65536  # type: ignore[attr-defined]
        AsyncioRunner(ClientSession(), reader, writer, handle_request=lambda event: {})
        assert writer.transport.max_size == 65536  # type: ignore[attr-defined]
        writer.close()
        theirs.close()

        read_end, write_end = os.pipe()
        runner = AsyncioRunner(ClientSession(), None, writer, handle_request=lambda event: {})
        transport, _ = await loop.connect_read_pipe(
            lambda: PushProtocol(runner), os.fdopen(read_end, "rb", buffering=0)
        )
        assert transport.max_size == 65536  # type: ignore[attr-defined]
        transport.close()
        os.close(write_end)

    asyncio.run(main())


async def test_trio_pipes_are_read_and_written_through_their_fd_holder() -> None:
    """Trio's FdStream keeps its descriptor in a holder that says -1 once the pipe is
    closed: the pipe reader and writer read the holder directly (two calls fewer per
    message than fileno()), and so still refuse a closed pipe rather than touch a number
    another file may have taken since."""
    from trio_adapters._backend import PipeReader, fd_holder

    read_fd, write_fd = os.pipe()
    receive, send = trio.lowlevel.FdStream(read_fd), trio.lowlevel.FdStream(write_fd)
    assert fd_holder(send) is send._fd_holder  # this Trio keeps one: the fast path is used
    pipe, stream = PipeReader(receive), PipeStream(send)
    assert pipe.read_ready() is None  # nothing there: no waiting, no error
    assert stream.send_nowait(b"abc") == 3
    with trio.fail_after(5):
        assert await pipe.read() == b"abc"
    await receive.aclose()
    await send.aclose()
    with pytest.raises(trio.ClosedResourceError):
        pipe.read_ready()
    with pytest.raises(trio.ClosedResourceError):
        await pipe.read()
    with pytest.raises(BrokenPipeError):
        stream.send_nowait(b"x")

    class Other:
        def fileno(self) -> int:
            return 7

    assert fd_holder(Other()).fd == 7  # any other pipe is asked its fileno()

    class Holder:  # an fd but no ``closed``: nothing says a -1 marks it closed
        fd = 9

    class Unsaid(Other):
        _fd_holder = Holder()

    assert fd_holder(Unsaid()).fd == 7  # so its pipe is asked its fileno()
