"""Closing an embedded asyncio server and client is quiet.

A program that serves with ``asyncio_adapters.serve`` from ``asyncio.start_server``
and talks to it with ``open_client`` printed "Exception in callback ...
CancelledError" on Python 3.11 as it ended: ``open_client`` left its writer open,
so the server task was still running when ``asyncio.run`` cancelled it, and
``asyncio.start_server`` reports a cancelled callback as an error.  Each program here
runs as a user runs it, and its stderr must stay empty.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import asyncio
import contextlib
import logging

from asyncio_adapters import serve
from asyncio_adapters.client import open_client
from sansio_mcp_apps.example_server import build_server

logging.basicConfig(level=logging.WARNING)


async def main() -> None:
    server = build_server()

    async def connection(reader, writer):
        await serve(server, reader, writer)

    listener = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    async with open_client(reader, writer) as client:
        answer = await client.call_tool("echo", {"message": "hi"})
        print(answer["content"][0]["text"])
        {extra}
    listener.close()


asyncio.run(main())
"""

#: What the client still has going on as it leaves.
EXTRAS = {
    "nothing": "pass",
    # A slow call still running on the server when the client leaves.
    "a running call": textwrap.dedent(
        """
        slow = asyncio.create_task(client.call_tool("slow", {"seconds": 5}))
        await asyncio.sleep(0.2)
        slow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await slow
        """
    ).replace("\n", "\n        "),
}


@pytest.mark.parametrize("extra", list(EXTRAS), ids=list(EXTRAS))
def test_serve_and_open_client_close_quietly(extra: str) -> None:
    program = PROGRAM.replace("{extra}", EXTRAS[extra])
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n"
    assert done.stderr == ""
