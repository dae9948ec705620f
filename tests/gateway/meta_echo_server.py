"""A fixture upstream for the gateway tests: its one tool, ``meta``, answers with
the ``_meta`` its request carried, as JSON.

    python tests/gateway/meta_echo_server.py [VERSION ...]   # stdio; all revisions by default
"""

from __future__ import annotations

import json
import sys

from sansio_mcp.runtime import Context, Server


def meta_echo_server(*versions: str) -> Server:
    """The server, speaking ``versions`` (every revision when none are given)."""
    server = Server("meta-echo", **({"supported_versions": versions} if versions else {}))

    @server.tool()
    def meta(ctx: Context) -> str:
        """The request's _meta as received, as JSON."""
        return json.dumps(ctx.params.get("_meta") or {})

    return server


if __name__ == "__main__":
    import trio

    from trio_adapters.server import serve_stdio

    trio.run(serve_stdio, meta_echo_server(*sys.argv[1:]))
