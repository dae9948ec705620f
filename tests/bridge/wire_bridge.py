"""`sansio-mcp bridge` as a child process, driven with raw A2E frames: what an
agent written in any language sends, byte for byte, and everything it gets."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from sansio_mcp_apps.a2e import bridge_command

Frame = dict[str, Any]


class WireBridge:
    """Frames in (JSON objects written as NDJSON), frames out (every line the
    bridge wrote, in :attr:`seen`)."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._buffer = b""
        self._ids = itertools.count(1)
        #: Every frame the bridge wrote, in order.
        self.seen: list[Frame] = []
        self._unread: list[Frame] = []

    async def send(self, frame: Frame) -> str:
        """Write ``frame`` (an ``id`` is added when it has none); its id."""
        if "id" not in frame:
            frame = {**frame, "id": f"f{next(self._ids)}"}
        await self._stdin.send_all(json.dumps(frame).encode() + b"\n")
        return str(frame["id"])

    async def _read(self) -> Frame:
        while b"\n" not in self._buffer:
            data = await self._stdout.receive_some(65536)
            if not data:
                raise EOFError("the bridge closed its stdout")
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        frame: Frame = json.loads(line)
        self.seen.append(frame)
        return frame

    async def wait_for(self, wanted: Callable[[Frame], bool], *, timeout: float = 20) -> Frame:
        """The first frame not taken yet that ``wanted`` accepts."""
        with trio.fail_after(timeout):
            for frame in self._unread:
                if wanted(frame):
                    self._unread.remove(frame)
                    return frame
            while True:
                frame = await self._read()
                if wanted(frame):
                    return frame
                self._unread.append(frame)

    async def answer(self, req_id: str, *, timeout: float = 20) -> Frame:
        return await self.wait_for(lambda f: f.get("req_id") == req_id, timeout=timeout)

    async def request(self, frame: Frame, *, timeout: float = 20) -> Frame:
        """Send ``frame`` and wait for the frame that answers it."""
        return await self.answer(await self.send(frame), timeout=timeout)

    async def register(self, config: Frame) -> Frame:
        reply = await self.request({"type": "mcp/server/register/req", "config": config})
        assert reply["type"] == "mcp/server/register/resp", reply
        return reply

    async def call(self, tool: str, arguments: Frame | None = None, **fields: Any) -> Frame:
        """A ``tool/call/req``; its ToolResult."""
        frame = {"type": "tool/call/req", "tool_name": tool, "arguments": arguments or {}}
        reply = await self.request({**frame, **fields}, timeout=60)
        assert reply["type"] == "tool/call/resp", reply
        result: Frame = reply["data"]
        return result

    async def tool_names(self) -> list[str]:
        reply = await self.request({"type": "tool/list/req"})
        return [t["name"] for t in reply["tools"]]

    async def server(self, server_id: str) -> Frame:
        reply = await self.request({"type": "mcp/server/list/req"})
        (info,) = [s for s in reply["servers"] if s["server_id"] == server_id]
        return info  # type: ignore[no-any-return]


@asynccontextmanager
async def wire_bridge(backend: str) -> AsyncIterator[WireBridge]:
    """The command on ``backend`` (``trio``, ``asyncio``); stopped at the end of
    its stdin, as an agent stops it."""
    command = bridge_command(sys.executable, ["--backend", backend])
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        yield WireBridge(process)
    finally:
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.aclose()
        with trio.move_on_after(15):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stdout.aclose()
