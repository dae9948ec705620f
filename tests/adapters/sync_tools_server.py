"""A stdio server whose tools are mostly plain functions, answered as their request is
read (``--backend trio`` or ``asyncio``); ``slow`` is ``async``: it reports progress once
it waits, and waits until ``release`` is called."""

from __future__ import annotations

import argparse

from sansio_mcp import InvalidParams
from sansio_mcp.runtime import Context, Server


def build() -> Server:
    server = Server("sync-tools", "1.0")
    gate: list[object] = []

    @server.tool()
    def echo(message: str) -> str:
        return message

    @server.tool()
    def boom(message: str) -> str:
        raise ValueError(f"boom: {message}")

    @server.tool()
    def refuse() -> str:
        raise InvalidParams(message="refused by the tool")

    @server.tool()
    def whoami(ctx: Context, suffix: str = "") -> str:
        return f"{ctx.request_id} {ctx.client_info.get('name')} {ctx.protocol_version}{suffix}"

    @server.tool()
    async def slow(ctx: Context) -> str:
        signal = ctx.new_signal()
        gate.append(signal)
        await ctx.report_progress(0, message="waiting")  # the client may release it now
        await signal.wait()
        return "slow done"

    @server.tool()
    def release() -> str:
        for signal in gate:
            signal.set()  # type: ignore[attr-defined]
        gate.clear()
        return "released"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["trio", "asyncio"], default="trio")
    args = parser.parse_args()
    server = build()
    if args.backend == "trio":
        import trio

        from trio_adapters import serve_stdio

        trio.run(serve_stdio, server)
    else:
        import asyncio

        from asyncio_adapters import serve_stdio as asyncio_serve_stdio

        asyncio.run(asyncio_serve_stdio(server))


if __name__ == "__main__":
    main()
