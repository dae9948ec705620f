"""Serve the bundled example server over Streamable HTTP for the interop tests.

``python tests/interop/run_http_server.py`` binds 127.0.0.1 on a free port,
prints ``PORT <n>`` on stdout once it accepts connections, and serves both
eras at ``/mcp`` until its stdin is closed (or it is sent SIGTERM/SIGINT).
"""

from __future__ import annotations

import os
import sys

import trio

from sansio_mcp.runtime.example_server import build_server
from trio_adapters.http_server import serve_http


async def main() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_http, build_server())
        print(f"PORT {port}", flush=True)
        # Stop when the parent closes our stdin (its way of saying "shut down").
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        async with stdin:
            while await stdin.receive_some():
                pass
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
