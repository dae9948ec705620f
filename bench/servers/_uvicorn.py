"""Serve an ASGI app the way every Python peer server of the bench does: uvicorn on
127.0.0.1, on a free port, ``PORT <n>`` printed once it accepts connections, stopped
when the parent closes our stdin (or by SIGTERM).  Imported by the peer scripts by
file location, so that it runs in whichever venv runs them (it needs anyio and
uvicorn)."""

from __future__ import annotations

import socket
import sys
import threading
from typing import Any


def serve_http(app: Any) -> None:
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, backlog=4096, timeout_keep_alive=30
    )
    uv = uvicorn.Server(config)

    def watch_stdin() -> None:
        # The parent closes our stdin to say "stop".
        while sys.stdin.buffer.read(4096):
            pass
        uv.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(uv.serve, [sock])
            while not uv.started:
                if uv.should_exit:
                    return
                await anyio.sleep(0.01)
            print(f"PORT {port}", flush=True)

    anyio.run(main)
