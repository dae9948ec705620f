"""Trio's TCP stream writes what the socket takes at once itself (no scheduler pass):
the bytes must still all arrive, in order, whatever the socket's room, and a closed
stream must never write to a descriptor number the process has since reused."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from trio_adapters._backend import DIRECT_WRITES_PER_YIELD, TCPStream


async def _connected_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listener.accept()
    await listener.aclose()
    return client, server


async def test_large_writes_arrive_whole_and_in_order() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(client, client.socket)
    # Far more than a loopback socket's buffer: each write is partial at first, the
    # rest waits for room through Trio's stream.
    pieces = [bytes([n]) * 3_000_000 for n in range(1, 4)]
    received = bytearray()

    async def read_all() -> None:
        while len(received) < sum(map(len, pieces)):
            received.extend(await server.receive_some(1 << 20))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_all)
        for piece in pieces:
            await stream.send_all(piece)
    assert bytes(received) == b"".join(pieces)
    await stream.aclose()
    await server.aclose()


async def test_a_small_write_does_not_yield_to_the_scheduler() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(client, client.socket)
    ran = []

    async def other() -> None:
        ran.append("other")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        await stream.send_all(b"hello")  # written at once: the other task has not run
        assert ran == []
    assert ran == ["other"]
    assert await server.receive_some(100) == b"hello"
    await stream.aclose()
    await server.aclose()


async def test_a_closed_stream_never_writes_to_a_reused_descriptor() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(client, client.socket)
    await stream.aclose()
    # The next connection very likely gets the number the closed one freed.
    other_client, other_server = await _connected_pair()
    raised = None
    try:
        await stream.send_all(b"not for you")
    except (trio.ClosedResourceError, OSError) as exc:
        raised = exc
    assert raised is not None
    await other_client.send_all(b"ping")
    assert await other_server.receive_some(100) == b"ping"  # and nothing else
    with trio.move_on_after(0.2):
        extra = await other_client.receive_some(100)
        raise AssertionError(f"the reused descriptor received {extra!r}")
    for s in (server, other_client, other_server):
        await s.aclose()


async def _turns_of_another_task(loop: Callable[[], Awaitable[object]]) -> int:
    """How many turns a task that only yields gets while ``loop`` runs."""
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            turns += 1
            await trio.sleep(0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        await trio.sleep(0)
        before = turns
        await loop()
        nursery.cancel_scope.cancel()
    return turns - before


async def test_a_loop_that_only_sends_still_lets_other_tasks_run() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(client, client.socket)

    async def send() -> None:
        for _ in range(DIRECT_WRITES_PER_YIELD * 4):
            await stream.send_all(b"x")  # each taken at once by the socket

    assert await _turns_of_another_task(send) >= 3  # the other task ran while it sent
    received = b""
    while len(received) < DIRECT_WRITES_PER_YIELD * 4:
        received += await server.receive_some(1 << 16)
    assert received == b"x" * (DIRECT_WRITES_PER_YIELD * 4)
    await stream.aclose()
    await server.aclose()


async def test_a_cancelled_task_does_not_send() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(client, client.socket)
    with trio.CancelScope() as scope:
        scope.cancel()
        await stream.send_all(b"too late")
        raise AssertionError("send_all went on in a cancelled scope")
    await stream.send_all(b"on time")
    assert await server.receive_some(100) == b"on time"
    await stream.aclose()
    await server.aclose()


# Reads: what the socket holds already is taken without a scheduler pass, as a write is.


async def test_a_read_of_waiting_bytes_does_not_yield_to_the_scheduler() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(server, server.socket)
    await client.send_all(b"hello")
    await trio.testing.wait_all_tasks_blocked()
    ran = []

    async def other() -> None:
        ran.append("other")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        got = b""
        for _ in range(5):  # (a yield lets the other task run half the time: five, ~97%)
            got += await stream.receive_some(1)  # there already: the other task waits
        assert ran == []
    assert got == b"hello" and ran == ["other"]
    await stream.aclose()
    await client.aclose()


async def test_a_read_waits_for_bytes_then_sees_the_end() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(server, server.socket)

    async def send_later() -> None:
        await trio.sleep(0.05)
        await client.send_all(b"late")
        await client.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_later)
        got = b""
        while chunk := await stream.receive_some(100):
            got += chunk
    assert got == b"late"
    assert await stream.receive_some(100) == b""  # the end, again
    await stream.aclose()


async def test_a_loop_that_only_reads_still_lets_other_tasks_run() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(server, server.socket)
    await client.send_all(b"x" * (DIRECT_WRITES_PER_YIELD * 4))
    await trio.testing.wait_all_tasks_blocked()
    got = bytearray()

    async def read() -> None:
        for _ in range(DIRECT_WRITES_PER_YIELD * 4):
            got.extend(await stream.receive_some(1))  # each there already

    assert await _turns_of_another_task(read) >= 3  # the other task ran while it read
    assert got == b"x" * (DIRECT_WRITES_PER_YIELD * 4)
    await stream.aclose()
    await client.aclose()


async def test_a_cancelled_task_does_not_read() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(server, server.socket)
    await client.send_all(b"kept")
    await trio.testing.wait_all_tasks_blocked()
    with trio.CancelScope() as scope:
        scope.cancel()
        await stream.receive_some(100)
        raise AssertionError("receive_some went on in a cancelled scope")
    assert await stream.receive_some(100) == b"kept"  # left for the next read
    await stream.aclose()
    await client.aclose()


async def test_a_closed_stream_never_reads_a_reused_descriptor() -> None:
    client, server = await _connected_pair()
    stream = TCPStream(server, server.socket)
    await stream.aclose()
    other_client, other_server = await _connected_pair()
    await other_client.send_all(b"not for you")
    raised = None
    try:
        await stream.receive_some(100)
    except (trio.ClosedResourceError, OSError) as exc:
        raised = exc
    assert raised is not None
    assert await other_server.receive_some(100) == b"not for you"  # all of it, still there
    for s in (client, other_client, other_server):
        await s.aclose()


async def test_a_stream_closed_as_its_read_wakes_never_reads_a_reused_descriptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read woken (its socket readable) while another task closes the stream and a
    new connection takes the freed number, before the reader runs again: the
    descriptor is asked again after the wait, so the new connection's bytes stay its
    own.  The wait is replaced by one that does exactly that, then returns."""
    client, server = await _connected_pair()
    stream = TCPStream(server, server.socket)
    number = server.socket.fileno()
    reused: list[socket.socket] = []
    wait_readable = trio.lowlevel.wait_readable

    async def woken_after_the_close(fd: int) -> None:
        await client.send_all(b"y")
        await wait_readable(fd)  # readable: the woken read's turn would come next
        server.socket.close()
        a, b = socket.socketpair()  # the lowest free numbers: the one just freed
        reused.extend((a, b))
        for end in reused:
            end.setblocking(False)  # (a read of the wrong one must not hang the test)
            end.sendall(b"not for you")

    monkeypatch.setattr(trio.lowlevel, "wait_readable", woken_after_the_close)
    with pytest.raises((trio.ClosedResourceError, OSError)):
        await stream.receive_some(100)
    assert number in (s.fileno() for s in reused)  # the number was indeed reused
    for end in reused:
        assert end.recv(100) == b"not for you"  # all of it, still there
    for s in reused:
        s.close()
    await client.aclose()
