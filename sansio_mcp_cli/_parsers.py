"""The options of the subcommands that run an application (``bridge``, ``a2a-bridge``,
``gateway``), apart from their code: building the parser (every start, ``--help``)
loads none of the applications (start-up time, issue 37)."""

from __future__ import annotations

import argparse
from typing import Any

from ._args import port_number
from ._replicas import add_replica_arguments

__all__ = ["add_a2a_bridge_parser", "add_bridge_parser", "add_gateway_parser"]


def add_bridge_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``bridge`` subcommand's options (called by the main parser)."""
    bridge = sub.add_parser(
        "bridge",
        parents=[common],
        help="run the A2E MCP bridge: an A2E agent on stdio (or WebSocket) drives MCP servers",
    )
    bridge.add_argument(
        "--config",
        metavar="FILE",
        help='JSON: {"servers": [MCPServerConfig...], "roots": [MCPRoot...]} '
        '(optional: "elicitation": true, "ping_interval": seconds)',
    )
    bridge.add_argument(
        "--listen",
        default="stdio",
        metavar="stdio|ws://HOST:PORT",
        help="where the agent connects: stdio (default, NDJSON) or a WebSocket address (path /a2e)",
    )
    bridge.add_argument(
        "--elicitation",
        action="store_true",
        help="forward MCP elicitation to the agent (the x-mcp/elicit extension)",
    )


def add_a2a_bridge_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``a2a-bridge`` subcommand's options (called by the main parser)."""
    parser = sub.add_parser(
        "a2a-bridge",
        parents=[common],
        help="serve A2A v1.0 agents as four MCP tools over Streamable HTTP at /mcp",
    )
    parser.add_argument("--config", required=True, help="the agents.json file")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port",
        type=port_number,
        default=None,
        help="port to listen on (default: the config's port, else 8931; 0: any free port)",
    )
    add_replica_arguments(parser)


def add_gateway_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``gateway`` subcommand's options (called by the main parser)."""
    gateway = sub.add_parser(
        "gateway",
        parents=[common],
        help="serve the tools of many MCP servers at one Streamable HTTP endpoint (/mcp)",
    )
    gateway.add_argument("--config", required=True, help="the gateway.json file")
    gateway.add_argument("--host", default="127.0.0.1", help="address to listen on")
    gateway.add_argument("--port", type=port_number, default=8931, help="port (0: any free port)")
    add_replica_arguments(gateway)
