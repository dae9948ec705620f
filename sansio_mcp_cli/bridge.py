"""``sansio-mcp bridge``: the A2E MCP bridge as a command.

The agent speaks A2E on stdin/stdout (NDJSON, the default) or over
WebSocket (``--listen ws://127.0.0.1:PORT``, path ``/a2e``).  A config file
(``--config bridge.json``) registers servers at start and sets the roots:
``{"servers": [MCPServerConfig, ...], "roots": [MCPRoot, ...]}``, plus the
optional ``"elicitation": true`` and ``"ping_interval": seconds``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import trio

from sansio_mcp.runtime import stop_signals
from sansio_mcp_apps.a2e import BridgeConfig, BridgeHost, load_config
from sansio_mcp_apps.a2e.runtime._agents import serve_agent_pipes
from sansio_mcp_apps.a2e.runtime._runner import BridgeRunner
from trio_adapters._transports import stop_on_signal as trio_stop_on_signal

__all__ = ["BridgeConfig", "load_config", "run_bridge", "run_command"]


def parse_listen(listen: str) -> tuple[str, int, str] | None:
    """None for stdio, else (host, port, path) of a ``ws://host:port[/path]`` address."""
    if listen == "stdio":
        return None
    parts = urlsplit(listen)
    if parts.scheme != "ws" or not parts.hostname or parts.port is None:
        raise ValueError(f"--listen takes 'stdio' or ws://HOST:PORT, not {listen!r}")
    return parts.hostname, parts.port, parts.path or "/a2e"


async def run_bridge(config: BridgeConfig, listen: str, elicitation: bool = False) -> int:
    """Run the bridge until the agent's stdin ends (stdio) or until interrupted (ws)."""
    from sansio_mcp_apps.a2e.adapters.trio_bridge import TrioBridge

    address = parse_listen(listen)
    host = _host(config, elicitation)
    bridge = TrioBridge(host)
    for server in config.servers:
        host.register(server, bridge.now())
    async with trio.open_nursery() as nursery:
        await nursery.start(trio_stop_on_signal, nursery.cancel_scope)
        await nursery.start(bridge.run)
        if address is None:
            await _serve_stdio_agent(bridge)
        else:
            name, port, path = address
            bound = await nursery.start(_serve_ws, bridge, name, port, path)
            shown = f"[{name}]" if ":" in name else name
            print(f"sansio-mcp bridge: ws://{shown}:{bound}{path}", file=sys.stderr, flush=True)
            await trio.sleep_forever()
        nursery.cancel_scope.cancel()
    return 0


async def _serve_ws(
    bridge: Any, name: str, port: int, path: str, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    from sansio_mcp_apps.a2e.adapters.trio_bridge import serve_agent_ws

    await serve_agent_ws(bridge, host=name, port=port, path=path, task_status=task_status)


async def _serve_stdio_agent(bridge: BridgeRunner) -> None:
    """The agent on this process's stdin and stdout (NDJSON), until its input ends."""
    stream = await bridge.backend.open_stdio()
    try:
        await serve_agent_pipes(bridge, stream, stream)
    finally:
        await stream.aclose()


def run_command(args: argparse.Namespace, backend: Any) -> int:
    """``sansio-mcp bridge`` and ``sansio-mcp demo`` (the bridge tour)."""
    if args.command == "demo":
        from .bridge_demo import run_bridge_demo

        return trio.run(run_bridge_demo, backend.name)
    config = BridgeConfig([], None)
    if args.config:
        path = Path(args.config)
        try:
            config = load_config(path.read_text(encoding="utf-8"), base=path.resolve().parent)
        except (OSError, ValueError) as exc:
            print(f"sansio-mcp bridge: {args.config}: {exc}", file=sys.stderr)
            return 2
    try:
        parse_listen(args.listen)
    except ValueError as exc:
        print(f"sansio-mcp bridge: {exc}", file=sys.stderr)
        return 2
    if backend.name == "asyncio":
        import asyncio

        return asyncio.run(run_bridge_asyncio(config, args.listen, args.elicitation))
    return trio.run(run_bridge, config, args.listen, args.elicitation)


def _host(config: BridgeConfig, elicitation: bool) -> BridgeHost:
    return config.new_host(elicitation=config.elicitation or elicitation)


async def run_bridge_asyncio(config: BridgeConfig, listen: str, elicitation: bool = False) -> int:
    """:func:`run_bridge` on asyncio (``--backend asyncio``)."""
    import asyncio

    from sansio_mcp_apps.a2e.adapters.asyncio_bridge import AsyncioBridge, serve_agent_ws

    address = parse_listen(listen)
    bridge = AsyncioBridge(_host(config, elicitation))
    for server in config.servers:
        bridge.host.register(server, bridge.now())
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    # A stop signal cancels this task: the bridge shuts its servers down and exits 0.
    for sig in stop_signals():
        loop.add_signal_handler(sig, main.cancel)
    runner = asyncio.ensure_future(bridge.run())
    try:
        await bridge.started.wait()
        if address is None:
            await _serve_stdio_agent(bridge)
        else:
            name, port, path = address
            started: asyncio.Future[int] = loop.create_future()
            serving = asyncio.ensure_future(
                serve_agent_ws(bridge, host=name, port=port, path=path, started=started)
            )
            bound = await started
            shown = f"[{name}]" if ":" in name else name
            print(f"sansio-mcp bridge: ws://{shown}:{bound}{path}", file=sys.stderr, flush=True)
            await serving
    except asyncio.CancelledError:
        pass
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    return 0
