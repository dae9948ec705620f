"""A fixture upstream for the gateway tests: the example server speaking the
handshake revisions alone, so it asks mid-call by requests of its own.

    python tests/gateway/handshake_example_server.py   # stdio
"""

from __future__ import annotations

from sansio_mcp import HANDSHAKE_REVISIONS
from sansio_mcp.runtime import Server
from sansio_mcp_apps.example_server import build_server


def handshake_example_server() -> Server:
    server = build_server()
    server.supported_versions = tuple(HANDSHAKE_REVISIONS)
    return server


if __name__ == "__main__":
    import trio

    from trio_adapters.server import serve_stdio

    trio.run(serve_stdio, handshake_example_server())
