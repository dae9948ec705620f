"""The example server plus probes, served over stdio on either backend.

``python stdio_server.py --backend trio|asyncio [--chatty N] [--stubborn]``

Tools beyond the example server's: ``block`` (waits, reporting progress once;
prints ``block cancelled`` to stderr when cancelled, which the client's
stderr drain logs), ``env`` (this process's environment) and ``pid``.
``--chatty N`` writes N KiB to stderr before serving; ``--stubborn`` ignores
SIGTERM and keeps running after stdin closes.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import asyncio_adapters
import trio_adapters
from sansio_mcp.runtime import Context
from sansio_mcp_apps.example_server import build_server

BACKENDS = {"trio": trio_adapters.BACKEND, "asyncio": asyncio_adapters.BACKEND}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=sorted(BACKENDS), required=True)
    parser.add_argument("--chatty", type=int, default=0)
    parser.add_argument("--stubborn", action="store_true")
    args = parser.parse_args()

    server = build_server()

    @server.tool()
    async def block(ctx: Context, seconds: float = 30.0) -> str:
        """Wait ``seconds`` unless cancelled."""
        try:
            await ctx.report_progress(0, 1, "started")
            await ctx.sleep(seconds)
        except BaseException:  # trio.Cancelled or asyncio.CancelledError
            print("block cancelled", file=sys.stderr, flush=True)
            raise
        return "finished"

    @server.tool()
    def env() -> dict[str, str]:
        """This process's environment."""
        return dict(os.environ)

    @server.tool()
    def pid() -> str:
        """This process's id."""
        return str(os.getpid())

    if args.chatty:
        line = b"x" * 1023 + b"\n"
        for _ in range(args.chatty):
            os.write(2, line)
    if args.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    backend = BACKENDS[args.backend]
    backend.run(backend.serve, server, "stdio", "127.0.0.1", 0)
    if args.stubborn:
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
