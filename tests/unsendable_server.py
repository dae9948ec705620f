"""The example server plus ``unsendable``, a tool whose result JSON cannot carry (an
infinite number in its structured content): a handler's bug, which the server must
answer with -32603 and go on (the example server's own tools give no such result).

    python tests/unsendable_server.py --backend trio|asyncio --transport stdio|http|sse|ws

On the network it listens on an ephemeral loopback port and prints its URL to stderr
as ``sansio-mcp example-server`` does; it stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial

from sansio_mcp import ToolResult
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_cli.main import TRANSPORT_PATHS, backend_named


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="trio")
    parser.add_argument("--transport", default="stdio")
    args = parser.parse_args()
    server = build_server()

    @server.tool()
    def unsendable() -> ToolResult:
        """A result with an infinite number in it."""
        return ToolResult.text("infinity", structured={"value": float("inf")})

    def announce(port: int) -> None:
        scheme = "ws" if args.transport == "ws" else "http"
        path = TRANSPORT_PATHS[args.transport]
        print(f"unsendable server: {scheme}://127.0.0.1:{port}{path}", file=sys.stderr, flush=True)

    backend = backend_named(args.backend)
    serve = partial(backend.serve, server, args.transport, "127.0.0.1", 0, on_bound=announce)
    backend.run(backend.until_stopped, serve)


if __name__ == "__main__":
    main()
