"""The gateway's configuration (``gateway.json``), checked whole before anything starts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from sansio_mcp.config import ConfigError, check_url, reject_unknown_keys

__all__ = [
    "CONNECTOR_NAME",
    "DEFAULT_MAX_TOOLS_PER_CONNECTOR",
    "TRANSPORTS",
    "ConfigError",
    "ConnectorConfig",
    "GatewayConfig",
    "ToolOverride",
    "parse_config",
]

#: A connector's name: no dot, so ``{connector}.{tool}`` splits on the first one.
CONNECTOR_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,48}$")
TRANSPORTS = ("stdio", "http", "sse", "ws")
#: Tools the gateway takes from one upstream at most (``max_tools_per_connector``):
#: an upstream listing 400,000 would cost hundreds of MB and slow every page.
DEFAULT_MAX_TOOLS_PER_CONNECTOR = 10_000

_CONNECTOR_KEYS = {
    "stdio": {"transport", "cmd", "env", "cwd", "tools"},
    "http": {"transport", "url", "headers", "tools"},
    "sse": {"transport", "url", "tools"},
    "ws": {"transport", "url", "tools"},
}
_TOP_KEYS = {"connectors", "api_keys", "allowed_hosts", "max_tools_per_connector"}
_TOKEN = re.compile(r"\A[\x21-\x7e]+\Z")
_HEADER_NAME = re.compile(r"\A[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_BAD_HEADER_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@attrs.frozen
class ToolOverride:
    """What a connector's config says of one upstream tool."""

    enabled: bool = True
    description: str | None = None


@attrs.frozen
class ConnectorConfig:
    """One upstream server."""

    name: str
    transport: str
    cmd: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    tools: Mapping[str, ToolOverride] = attrs.field(factory=dict)
    #: Its upstream's tools taken at most (the config's ``max_tools_per_connector``);
    #: the rest are left out, and its status says so.
    max_tools: int = DEFAULT_MAX_TOOLS_PER_CONNECTOR


@attrs.frozen
class GatewayConfig:
    """Every connector, the API keys (empty: no authentication) and the extra
    Host/Origin names accepted besides loopback."""

    connectors: tuple[ConnectorConfig, ...]
    api_keys: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()

    def connector(self, name: str) -> ConnectorConfig | None:
        return next((c for c in self.connectors if c.name == name), None)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{where} must be an object of strings")
    return dict(value)


def _override(value: Any, where: str) -> ToolOverride:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object")
    reject_unknown_keys(value, ("enabled", "description"), where)
    enabled = value.get("enabled", True)
    description = value.get("description")
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.enabled must be true or false")
    if description is not None and not isinstance(description, str):
        raise ConfigError(f"{where}.description must be a string")
    return ToolOverride(enabled, description)


def _connector(name: Any, value: Any) -> ConnectorConfig:
    where = f"connectors.{name}"
    if not isinstance(name, str) or not CONNECTOR_NAME.match(name):
        raise ConfigError(f"connector name {name!r} must match {CONNECTOR_NAME.pattern} (no dot)")
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object")
    transport = value.get("transport")
    if transport not in TRANSPORTS:
        raise ConfigError(f"{where}.transport must be one of {', '.join(TRANSPORTS)}")
    reject_unknown_keys(value, _CONNECTOR_KEYS[transport], where, context=transport)
    tools_value = value.get("tools", {})
    if not isinstance(tools_value, dict):
        raise ConfigError(f"{where}.tools must be an object")
    tools = {k: _override(v, f"{where}.tools.{k}") for k, v in tools_value.items()}
    if transport == "stdio":
        cmd = _strings(value.get("cmd"), f"{where}.cmd")
        if not cmd:
            raise ConfigError(f"{where}.cmd must name a program")
        cwd = value.get("cwd", "")
        if not isinstance(cwd, str):
            raise ConfigError(f"{where}.cwd must be a string")
        env = _string_map(value.get("env", {}), f"{where}.env")
        return ConnectorConfig(name, transport, cmd=cmd, env=env, cwd=cwd, tools=tools)
    url = value.get("url")
    schemes = ("ws://", "wss://") if transport == "ws" else ("http://", "https://")
    if not isinstance(url, str) or not url.startswith(schemes):
        raise ConfigError(f"{where}.url must be a {' or '.join(s[:-3] for s in schemes)} URL")
    check_url(url, f"{where}.url")
    headers = _string_map(value.get("headers", {}), f"{where}.headers")
    for header, text in headers.items():
        if not _HEADER_NAME.match(header) or _BAD_HEADER_VALUE.search(text):
            raise ConfigError(f"{where}.headers: {header!r} is not a valid HTTP header line")
    return ConnectorConfig(name, transport, url=url, headers=headers, tools=tools)


def parse_config(obj: Any) -> GatewayConfig:
    """The :class:`GatewayConfig` a decoded ``gateway.json`` describes; raises
    :class:`ConfigError` naming the first problem."""
    if not isinstance(obj, dict):
        raise ConfigError("the configuration must be a JSON object")
    reject_unknown_keys(obj, _TOP_KEYS)
    connectors = obj.get("connectors")
    if not isinstance(connectors, dict) or not connectors:
        raise ConfigError("connectors must be an object naming at least one connector")
    api_keys = _strings(obj.get("api_keys", []), "api_keys")
    if any(not key for key in api_keys):
        raise ConfigError("api_keys must not contain an empty key")
    if any(not _TOKEN.match(key) for key in api_keys):
        # A key no Authorization header could carry would lock every client out.
        raise ConfigError("api_keys must be visible ASCII without spaces (Bearer tokens)")
    max_tools = obj.get("max_tools_per_connector", DEFAULT_MAX_TOOLS_PER_CONNECTOR)
    if isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1:
        raise ConfigError("max_tools_per_connector must be a positive integer")
    return GatewayConfig(
        tuple(
            attrs.evolve(_connector(name, value), max_tools=max_tools)
            for name, value in connectors.items()
        ),
        api_keys=api_keys,
        allowed_hosts=_strings(obj.get("allowed_hosts", []), "allowed_hosts"),
    )
