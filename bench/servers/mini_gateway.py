"""A minimal pass-through MCP gateway, the yardstick for ours (issue 37).

``python bench/servers/mini_gateway.py PREFIX -- UPSTREAM COMMAND...`` starts the
upstream over stdio, initializes it (2025-11-25), listens on a free loopback port,
prints ``PORT <n>`` and serves handshake-era Streamable HTTP at ``/mcp``: it answers
``initialize`` itself, forwards every other request with its tool renamed
(``PREFIX.name`` -> ``name``) under an id of its own, and relays the answer under
the client's id.  Plain asyncio and ``json``, no checks beyond what forwarding
needs: whatever a real gateway does on top of this is what it costs.  It stops on
SIGTERM or when its stdin closes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import sys
from typing import Any

VERSION = "2025-11-25"
SESSION = "mini-gateway-session"


class Upstream:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}

    async def read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            message = json.loads(line)
            future = self.waiting.pop(message.get("id"), None)
            if future is not None and "method" not in message:
                future.set_result(message)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        wire_id = next(self.ids)
        future = self.waiting[wire_id] = asyncio.get_running_loop().create_future()
        message = {"jsonrpc": "2.0", "id": wire_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        return await future

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")


async def handle(upstream: Upstream, prefix: str, message: dict[str, Any]) -> dict[str, Any]:
    """The answer to one downstream request."""
    if message["method"] == "initialize":
        result = {
            "protocolVersion": VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mini-gateway", "version": "1"},
        }
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}
    params = dict(message.get("params") or {})
    if message["method"] == "tools/call":
        params["name"] = params["name"].removeprefix(prefix + ".")
    answer = await upstream.request(message["method"], params)
    if message["method"] == "tools/list" and "result" in answer:
        for tool in answer["result"]["tools"]:
            tool["name"] = f"{prefix}.{tool['name']}"
    return {**answer, "id": message["id"]}


async def serve(upstream: Upstream, prefix: str, reader: Any, writer: Any) -> None:
    try:
        while head := await reader.readuntil(b"\r\n\r\n"):
            lines = head.decode("latin-1").split("\r\n")
            method = lines[0].split(" ", 1)[0]
            headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method != "POST":
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                continue
            message = json.loads(body)
            if "id" not in message:  # a notification: nothing to answer
                writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                continue
            out = json.dumps(await handle(upstream, prefix, message)).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"mcp-session-id: " + SESSION.encode() + b"\r\n"
                b"content-length: " + str(len(out)).encode() + b"\r\n\r\n" + out
            )
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(prefix: str, command: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 24
    )
    upstream = Upstream(process)
    reading = asyncio.create_task(upstream.read())
    init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "mini"}}
    await upstream.request("initialize", init)
    upstream.notify("notifications/initialized")
    server = await asyncio.start_server(lambda r, w: serve(upstream, prefix, r, w), "127.0.0.1", 0)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    stopped = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stopped.cancel)
    loop.add_reader(sys.stdin.fileno(), lambda: sys.stdin.buffer.read1() or stopped.cancel())
    try:
        await stopped
    except asyncio.CancelledError:
        pass
    server.close()
    reading.cancel()
    process.terminate()
    await process.wait()


if __name__ == "__main__":
    separator = sys.argv.index("--")
    asyncio.run(main(sys.argv[1], sys.argv[separator + 1 :]))
