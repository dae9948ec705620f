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
import sys
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


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    if sys.argv[1:] == ["http"]:
        from _uvicorn import serve_http  # beside this file

        serve_http(server.http_app(path="/mcp"))
    else:
        server.run(transport="stdio", show_banner=False)
