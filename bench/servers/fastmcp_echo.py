"""The fastmcp 4.x peer: a ``FastMCP`` server with the same ``echo`` tool as ours.

It runs in its own venv (``python -m bench --setup-peers`` makes
``.bench-venvs/fastmcp`` from ``requirements/bench-fastmcp.lock``):
``.bench-venvs/fastmcp/bin/python bench/servers/fastmcp_echo.py stdio`` serves
over stdio; ``... http`` serves Streamable HTTP (fastmcp's Starlette app under
uvicorn) at ``/mcp`` on 127.0.0.1, on a free port, and prints ``PORT <n>`` once
it accepts connections.  It stops on SIGTERM, or when its stdin is closed
(HTTP mode).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import warnings

warnings.simplefilter("ignore")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

from fastmcp import FastMCP  # noqa: E402

server = FastMCP("fastmcp-bench-server")


@server.tool()
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


def serve_http() -> None:
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = server.http_app(path="/mcp")
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


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run(transport="stdio", show_banner=False)
