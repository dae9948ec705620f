"""A WebSocket agent that stops answering pings is disconnected, freeing the
bridge's one agent slot (without it, a dead agent's half-open connection keeps
every later agent out with 409 for good)."""

from __future__ import annotations

import asyncio
from functools import partial

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import Request

from sansio_mcp_apps.a2e import BridgeHost
from sansio_mcp_apps.a2e.adapters import asyncio_bridge, trio_bridge

KEEPALIVE = {"ping_interval": 0.2, "pong_timeout": 0.3}


def _opening(port: int) -> bytes:
    client = WSConnection(ConnectionType.CLIENT)
    return client.send(Request(host=f"127.0.0.1:{port}", target="/a2e", subprotocols=["a2e"]))


def _status(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])


async def _trio_handshake(port: int) -> tuple[trio.SocketStream, int]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(_opening(port))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = await stream.receive_some(4096)
        assert chunk, head
        head += chunk
    return stream, _status(head)


async def test_silent_agent_frees_the_slot_on_trio() -> None:
    bridge = trio_bridge.TrioBridge(BridgeHost(ping_interval=None))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(bridge.run)
            port = await nursery.start(partial(trio_bridge.serve_agent_ws, bridge, **KEEPALIVE))
            silent, status = await _trio_handshake(port)  # then reads nothing: no pong
            assert status == 101
            refused, status = await _trio_handshake(port)
            await refused.aclose()
            assert status == 409
            while True:
                later, status = await _trio_handshake(port)
                await later.aclose()
                if status == 101:
                    break
                assert status == 409
                await trio.sleep(0.05)
            await silent.aclose()
            nursery.cancel_scope.cancel()


async def _asyncio_handshake(
    port: int,
) -> tuple[asyncio.StreamWriter, int]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_opening(port))
    head = await reader.readuntil(b"\r\n\r\n")
    return writer, _status(head)


def test_silent_agent_frees_the_slot_on_asyncio() -> None:
    async def main() -> None:
        bridge = asyncio_bridge.AsyncioBridge(BridgeHost(ping_interval=None))
        running = asyncio.ensure_future(bridge.run())
        bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        serving = asyncio.ensure_future(
            asyncio_bridge.serve_agent_ws(bridge, started=bound, **KEEPALIVE)
        )
        try:
            port = await bound
            silent, status = await _asyncio_handshake(port)
            assert status == 101
            refused, status = await _asyncio_handshake(port)
            refused.close()
            assert status == 409
            while True:
                later, status = await _asyncio_handshake(port)
                later.close()
                if status == 101:
                    break
                assert status == 409
                await asyncio.sleep(0.05)
            silent.close()
        finally:
            for task in (serving, running):
                task.cancel()
            await asyncio.gather(serving, running, return_exceptions=True)

    asyncio.run(asyncio.wait_for(main(), 20))


async def test_agent_that_answers_pings_stays_connected() -> None:
    from sansio_mcp_apps.a2e.adapters.trio_client import open_a2e_ws

    bridge = trio_bridge.TrioBridge(BridgeHost(ping_interval=None))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(bridge.run)
            port = await nursery.start(partial(trio_bridge.serve_agent_ws, bridge, **KEEPALIVE))
            async with open_a2e_ws(f"ws://127.0.0.1:{port}/a2e") as agent:
                # Across ten pong deadlines the agent (whose framing answers each
                # ping as it reads) keeps the slot and its requests answered.
                deadline = trio.current_time() + 10 * KEEPALIVE["pong_timeout"]
                while trio.current_time() < deadline:
                    await agent.ping()
                    await trio.sleep(0.05)
                refused, status = await _trio_handshake(port)
                await refused.aclose()
                assert status == 409
            nursery.cancel_scope.cancel()
