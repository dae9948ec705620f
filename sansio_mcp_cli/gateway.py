"""``sansio-mcp gateway --config gateway.json``: many MCP servers behind one
Streamable HTTP endpoint at ``/mcp`` (see docs/gateway.md)."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import cast

from sansio_mcp.config import load_json
from sansio_mcp.runtime import Listener, Stores, TransportBackend, TransportTable
from sansio_mcp_apps.gateway import ConfigError, GatewayConfig, parse_config
from sansio_mcp_apps.gateway.runtime import Gateway, transport_opener

from ._replicas import (
    ReplicaOptions,
    guarded,
    replica_options,
    serve_with_stores,
)

__all__ = ["load_config_file", "router_listener", "run"]


def load_config_file(path: str) -> GatewayConfig:
    """The config in ``path``; ConfigError naming the file and the problem."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    try:
        return parse_config(load_json(text))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def router_listener(backend_name: str, gateway: Gateway) -> Listener:
    """The backend's ``serve_router`` bound to the gateway's HTTP machine."""
    if backend_name == "asyncio":
        from asyncio_adapters.http_server import serve_router as asyncio_serve_router

        return partial(asyncio_serve_router, router=gateway.router())
    from trio_adapters.http_server import serve_router as trio_serve_router

    return partial(trio_serve_router, router=gateway.router())


def run(args: argparse.Namespace, backend: TransportBackend) -> int:
    return guarded("gateway", partial(_run, args, backend))


def _run(args: argparse.Namespace, backend: TransportBackend) -> int:
    options: ReplicaOptions = replica_options(args)
    try:
        config = load_config_file(args.config)
        if config.call_log is not None:
            try:  # a log that cannot be written is said at start, not at the first call
                with open(config.call_log, "a", encoding="utf-8"):
                    pass
            except OSError as exc:
                problem = exc.strerror or exc
                raise ConfigError(f"{args.config}: call_log {config.call_log}: {problem}") from None
        gateway = Gateway(config, backend, transport_opener(backend), state_keys=options.state_keys)
    except ConfigError as exc:
        print(f"sansio-mcp gateway: {exc}", file=sys.stderr)
        return 2
    table = cast(TransportTable, backend)
    host = args.host

    def announce(port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        print(f"sansio-mcp gateway: http://{shown}:{port}/mcp", file=sys.stderr, flush=True)
        for virtual in config.virtual_mcps:
            print(
                f"virtual MCP {virtual.id}: http://{shown}:{port}/mcp/{virtual.id}",
                file=sys.stderr,
                flush=True,
            )
        print(f"connectors: {json.dumps(gateway.status())}", file=sys.stderr, flush=True)

    serve = partial(
        table.serve_network,
        router_listener(backend.name, gateway),
        gateway.server,
        host,
        args.port,
        announce,
    )

    async def run_with(stores: Stores) -> None:
        gateway.server.stores = stores
        if stores.shared:
            gateway.use_stores(stores)
        await gateway.run(serve)

    backend.run(backend.until_stopped, serve_with_stores, backend, options, run_with)
    return 0
