"""``sansio-mcp example-server`` with two tools more, for the kill tests:
``count_then_wait(path, seconds)`` appends this process's pid to ``path`` (one
``O_APPEND`` write, outside every replica), then waits ``seconds``; ``announce`` says
the tool list changed (a hint the listeners of every replica hear).

    python tests/replicas/counting_server.py [example-server options]
"""

from __future__ import annotations

import os
import sys
from typing import Any

import sansio_mcp_cli.main as cli
from sansio_mcp.runtime import Context, Server
from sansio_mcp_apps.example_server import build_server


def build_counting_server(**options: Any) -> Server:
    server = build_server(**options)

    @server.tool()
    async def count_then_wait(ctx: Context, path: str, seconds: float = 60.0) -> str:
        """Count this run in ``path``, then wait ``seconds``."""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        await ctx.sleep(seconds)
        return "waited"

    @server.tool()
    async def announce(ctx: Context) -> str:
        """Say the tool list changed."""
        await ctx.list_changed("tools")
        return "announced"

    return server


if __name__ == "__main__":
    # The command as it is, serving this server instead of the plain example.
    cli.build_server = build_counting_server
    sys.exit(cli.main(["example-server", *sys.argv[1:]]))
