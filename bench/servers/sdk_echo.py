"""The ``mcp`` SDK peer: an ``MCPServer`` with the same ``echo`` tool as ours.

``python bench/servers/sdk_echo.py stdio`` serves over stdio;
``python bench/servers/sdk_echo.py http`` serves Streamable HTTP (the SDK's
Starlette app under uvicorn) on 127.0.0.1, on a free port, and prints
``PORT <n>`` once it accepts connections.  It stops on SIGTERM, or when its
stdin is closed (HTTP mode).
"""

from __future__ import annotations

import logging
import sys
import warnings

warnings.simplefilter("ignore")

from mcp.server.mcpserver import MCPServer  # noqa: E402

server = MCPServer("sdk-bench-server", version="1.0.0")


@server.tool()
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    if sys.argv[1:] == ["http"]:
        from _uvicorn import serve_http  # beside this file

        serve_http(server.streamable_http_app(host="127.0.0.1"))
    else:
        server.run()
