"""The ``mcp`` SDK peer: an ``MCPServer`` with the same ``echo`` tool as ours.

``python bench/servers/sdk_echo.py stdio`` serves over stdio;
``python bench/servers/sdk_echo.py http`` serves Streamable HTTP (the SDK's
Starlette app under uvicorn) on 127.0.0.1, on a free port, and prints
``PORT <n>`` once it accepts connections.  It stops on SIGTERM, or when its
stdin is closed (HTTP mode).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import warnings

warnings.simplefilter("ignore")

from mcp.server.mcpserver import MCPServer  # noqa: E402

server = MCPServer("sdk-bench-server", version="1.0.0")


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
    app = server.streamable_http_app(host="127.0.0.1")
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
        server.run()
