"""The bridge's configuration (``sansio-mcp bridge --config``, or the ``config``
of an in-process bridge): servers registered at start, the roots, and options.

``{"servers": [MCPServerConfig, ...], "roots": [MCPRoot, ...],
"elicitation": false, "ping_interval": 30}``, every key optional.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from sansio_mcp.config import load_json, reject_unknown_keys

from ._fields import FieldProblem, copy_json
from ._host import BridgeHost
from ._models import MCPRoot, MCPServerConfig

__all__ = ["BridgeConfig", "bridge_command", "load_config", "parse_config"]

_KEYS = frozenset({"servers", "roots", "elicitation", "ping_interval"})


@attrs.frozen
class BridgeConfig:
    servers: list[MCPServerConfig] = attrs.field(factory=list)
    #: None: servers that ask for roots are told what the agent says.
    roots: list[MCPRoot] | None = None
    elicitation: bool = False
    ping_interval: float | None = 30.0

    def new_host(self, **options: Any) -> BridgeHost:
        """A :class:`BridgeHost` with these roots and options (``options`` win),
        its servers not yet registered (the runner does that with its clock)."""
        settings: dict[str, Any] = {
            "roots": self.roots,
            "elicitation": self.elicitation,
            "ping_interval": self.ping_interval,
        }
        settings.update(options)
        return BridgeHost(**settings)


def load_config(text: str, *, base: str | os.PathLike[str] | None = None) -> BridgeConfig:
    """Parse a config file's text; ValueError says what is wrong."""
    return parse_config(load_json(text), base=base)


def parse_config(raw: Any, *, base: str | os.PathLike[str] | None = None) -> BridgeConfig:
    """A config from its JSON value; ValueError says what is wrong.  Relative
    ``cwd`` values are taken from ``base`` (the config file's folder)."""
    if not isinstance(raw, Mapping):
        raise ValueError("the config must be a JSON object")
    try:
        # The bridge keeps what it is given: nothing of the caller's may be shared.
        raw = copy_json(dict(raw))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the config is not JSON: {exc}") from None
    reject_unknown_keys(raw, _KEYS)
    servers_raw = raw.get("servers", [])
    if not isinstance(servers_raw, list):
        raise ValueError("'servers' must be an array of server configs")
    servers: list[MCPServerConfig] = []
    seen: set[str] = set()
    for index, entry in enumerate(servers_raw):
        try:
            config = MCPServerConfig.from_dict(entry, prefix=f"servers[{index}].")
        except FieldProblem as problem:
            raise ValueError(str(problem)) from None
        problems = config.problems()
        if problems:
            raise ValueError(f"servers[{index}]: " + "; ".join(str(p) for p in problems))
        if config.server_id and config.server_id in seen:
            raise ValueError(f"servers[{index}]: server id {config.server_id!r} appears twice")
        seen.add(config.server_id)
        if base is not None and config.cwd and not os.path.isabs(config.cwd):
            config = attrs.evolve(config, cwd=os.path.join(base, config.cwd))
        servers.append(config)
    roots: list[MCPRoot] | None = None
    if "roots" in raw:
        if not isinstance(raw["roots"], list):
            raise ValueError("'roots' must be an array of {uri, name}")
        try:
            roots = [
                MCPRoot.from_dict(r, prefix=f"roots[{i}].") for i, r in enumerate(raw["roots"])
            ]
        except FieldProblem as problem:
            raise ValueError(str(problem)) from None
    elicitation = raw.get("elicitation", False)
    if not isinstance(elicitation, bool):
        raise ValueError("'elicitation' must be true or false")
    ping = raw.get("ping_interval", 30.0)
    if ping is not None and (
        isinstance(ping, bool) or not isinstance(ping, int | float) or ping <= 0
    ):
        raise ValueError("'ping_interval' must be a positive number of seconds, or null")
    return BridgeConfig(servers, roots, elicitation, float(ping) if ping is not None else None)


def bridge_command(
    python: str, bridge_args: Sequence[str] = (), config_path: str | None = None
) -> list[str]:
    """The command line of ``sansio-mcp bridge`` run by ``python`` (an agent's child)."""
    command = [python, "-m", "sansio_mcp_cli", "bridge", *bridge_args]
    return [*command, "--config", config_path] if config_path is not None else command
