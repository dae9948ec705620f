"""``sansio-mcp a2a-bridge --config agents.json [--host H] [--port P] [--backend B]``:
A2A v1.0 agents as four MCP tools, served over Streamable HTTP at ``/mcp`` (the
2026-07-28 stateless route and the 2025-11-25 handshake route on one endpoint)."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from typing import Any

from sansio_mcp.http import LOOPBACK_HOSTS
from sansio_mcp.runtime import Stores, TransportBackend
from sansio_mcp_apps.a2a import BridgeConfig, ConfigError, load_config

from ._replicas import guarded, replica_options, serve_with_stores

__all__ = ["client_block", "run"]

ENDPOINT = "/mcp"


def client_block(url: str) -> str:
    """The configuration to paste into an MCP client."""
    return json.dumps({"mcpServers": {"a2a-bridge": {"type": "http", "url": url}}}, indent=2)


def _announcer(host: str, config: BridgeConfig) -> Any:
    def announce(port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}{ENDPOINT}"
        agents = ", ".join(a.alias for a in config.agents)
        print(f"sansio-mcp a2a-bridge: {url} (agents: {agents})", file=sys.stderr, flush=True)
        print("Paste this into your MCP client's configuration:", file=sys.stderr, flush=True)
        print(client_block(url), flush=True)

    return announce


def run(args: argparse.Namespace, backend: TransportBackend) -> int:
    return guarded("a2a-bridge", partial(_run, args, backend))


def _run(args: argparse.Namespace, backend: TransportBackend) -> int:
    options = replica_options(args)
    try:
        with open(args.config, "rb") as file:
            config = load_config(file.read())
    except OSError as exc:
        print(f"sansio-mcp a2a-bridge: cannot read {args.config}: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"sansio-mcp a2a-bridge: {args.config}: {exc}", file=sys.stderr)
        return 2
    try:
        from sansio_mcp_apps.a2a.runtime import A2ABridge
    except ModuleNotFoundError as exc:
        print(
            f"sansio-mcp a2a-bridge: this command needs the 'a2a' extra ({exc.name} is not "
            "installed): pip install 'sansio-mcp[a2a]'",
            file=sys.stderr,
        )
        return 2
    port = args.port if args.port is not None else config.port
    hosts = (*LOOPBACK_HOSTS, *config.allowed_hosts) if config.allowed_hosts else None
    listeners: dict[str, Any] = getattr(backend, "listeners")  # noqa: B009 - TransportTable's
    listener = partial(listeners["http"], endpoint=ENDPOINT, allowed_hosts=hosts)
    serve_network = getattr(backend, "serve_network")  # noqa: B009

    async def serve(stores: Stores) -> None:
        bridge = A2ABridge(config, backend, state_keys=options.state_keys, stores=stores)
        try:
            await stores.events.settled()  # other replicas' messages reach it once it listens
            await serve_network(
                listener, bridge.server, args.host, port, _announcer(args.host, config)
            )
        finally:
            await bridge.aclose()

    backend.run(backend.until_stopped, serve_with_stores, backend, options, serve)
    return 0
