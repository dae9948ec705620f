"""A stdio test server built on the library, with misbehaviours on request.

``--chatty N`` writes N KiB to stderr before serving (a server that would
block on a full pipe if the client did not drain stderr).
``--stubborn`` ignores SIGTERM and keeps running after stdin closes.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import trio

from sansio_mcp.runtime import Context, Server
from trio_adapters import serve_stdio


def build() -> Server:
    server = Server("fixture", "1.0")

    @server.tool()
    def env() -> dict[str, str]:
        """This process's environment."""
        return dict(os.environ)

    @server.tool()
    def pid() -> str:
        return str(os.getpid())

    @server.tool()
    async def wait(ctx: Context, seconds: float) -> str:
        try:
            await ctx.sleep(seconds)
        except BaseException:
            print("wait cancelled", file=sys.stderr, flush=True)
            raise
        return "waited"

    @server.tool()
    def echo(message: str) -> str:
        return message

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chatty", type=int, default=0)
    parser.add_argument("--stubborn", action="store_true")
    args = parser.parse_args()
    if args.chatty:
        line = b"x" * 1023 + b"\n"
        for _ in range(args.chatty):
            os.write(2, line)
    if args.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    trio.run(serve_stdio, build())
    if args.stubborn:
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
