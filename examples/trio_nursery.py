"""Embedding in Trio: a server and a client in one nursery, and cancellation.

A Trio program that embeds MCP owns the nursery everything runs in. Here one nursery
holds the server (``trio_adapters.serve`` on one end of a socket pair) and the client
(``open_client`` on the other end). The client calls a slow tool inside a cancel
scope and cancels it as soon as the first progress report arrives; the cancellation
reaches the server as ``notifications/cancelled``, and the tool's handler sees
``trio.Cancelled`` at its next checkpoint. The session goes on. It shows:

* structured concurrency: nothing outlives the nursery, and no task is left behind;
* cancellation crossing the wire, and the server seeing it;
* who closes what: the client closes its end, ``serve`` reads the end of its input
  and returns, and the nursery ends by itself, with nothing left to cancel.

Run it: ``python examples/trio_nursery.py``.
"""

from __future__ import annotations

import trio

from sansio_mcp.runtime import Context, Server
from trio_adapters import open_client, serve

server = Server("nursery-demo", "1.0.0")
#: What the server saw, in order (the example prints it).
seen: list[str] = []
handler_cancelled = trio.Event()


@server.tool()
async def slow(ctx: Context, steps: int) -> str:
    """Work in ``steps`` steps of a second each, reporting progress."""
    try:
        for done in range(1, steps + 1):
            await ctx.report_progress(done, steps)
            await trio.sleep(1)
    except trio.Cancelled:
        seen.append(f"server: slow cancelled after step {done} of {steps}")
        handler_cancelled.set()
        raise  # a cancelled handler must let Cancelled out: Trio needs it
    return "finished"


@server.tool()
def echo(text: str) -> str:
    return text


async def run_server(stream: trio.SocketStream) -> None:
    await serve(server, stream, stream)
    seen.append("server: the client closed; serve returned")


async def main() -> None:
    server_socket, client_socket = trio.socket.socketpair()
    client_stream = trio.SocketStream(client_socket)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_server, trio.SocketStream(server_socket))
        async with open_client(client_stream, client_stream) as client:
            seen.append(f"client: tools {[tool['name'] for tool in await client.list_tools()]}")
            with trio.CancelScope() as scope:
                await client.call_tool(
                    "slow", {"steps": 30}, on_progress=lambda done, total, message: scope.cancel()
                )
            seen.append(f"client: gave up on slow (cancelled: {scope.cancelled_caught})")
            await handler_cancelled.wait()
            answer = await client.call_tool("echo", {"text": "still here"})
            seen.append(f"client: echo {answer['content'][0]['text']}")
        await client_stream.aclose()  # the streams are ours: closing ends the server's input
    seen.append("nursery closed")


if __name__ == "__main__":
    trio.run(main)
    for line in seen:
        print(line)
