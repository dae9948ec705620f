"""Serve the bundled example server over Streamable HTTP for the interop tests.

``python tests/interop/run_http_server.py`` binds 127.0.0.1 on a free port,
prints ``PORT <n>`` on stdout once it accepts connections, and serves both
eras at ``/mcp`` until its stdin is closed (or it is sent SIGTERM/SIGINT).
``run_http_server.py path/to/script.py`` serves that script's ``build_server()``
instead.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

import trio

from sansio_mcp_apps.example_server import build_server
from trio_adapters.http_server import serve_http


def _server() -> Any:
    if len(sys.argv) < 2:
        return build_server()
    spec = importlib.util.spec_from_file_location("served_script", sys.argv[1])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_server()


async def main() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_http, _server())
        print(f"PORT {port}", flush=True)
        # Stop when the parent closes our stdin (its way of saying "shut down").
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        async with stdin:
            while await stdin.receive_some():
                pass
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
