"""The gateway's configuration (``gateway.json``), checked whole before anything starts."""

from __future__ import annotations

import math
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
    "GatewayOAuth",
    "ToolOverride",
    "VirtualMCP",
    "parse_config",
]

#: A connector's name: no dot, so ``{connector}.{tool}`` splits on the first one.
CONNECTOR_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,48}$")
TRANSPORTS = ("stdio", "http", "sse", "ws")
#: Tools the gateway takes from one upstream at most (``max_tools_per_connector``):
#: an upstream listing 400,000 would cost hundreds of MB and slow every page.
DEFAULT_MAX_TOOLS_PER_CONNECTOR = 10_000
#: How long a parked call waits for its client's retry (seconds), and how many may
#: wait at once, in all and per principal (see docs/gateway.md, "Questions across eras").
DEFAULT_PARKED_CALL_TIMEOUT = 60.0
DEFAULT_MAX_PARKED_CALLS = 1000
DEFAULT_MAX_PARKED_CALLS_PER_PRINCIPAL = 100

_CONNECTOR_KEYS = {
    "stdio": {"transport", "cmd", "env", "cwd", "tools"},
    "http": {"transport", "url", "headers", "tools"},
    "sse": {"transport", "url", "tools"},
    "ws": {"transport", "url", "tools"},
}
_TOP_KEYS = {
    "connectors",
    "api_keys",
    "allowed_hosts",
    "max_tools_per_connector",
    "virtual_mcps",
    "call_log",
    "metrics",
    "relay_questions_to_handshake_clients",
    "oauth",
    "parked_call_timeout",
    "max_parked_calls",
    "max_parked_calls_per_principal",
}
_OAUTH_KEYS = ("issuer", "jwks_uri", "audience", "scopes")
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
class VirtualMCP:
    """An endpoint (``/mcp/{id}``) serving only some connectors' tools, with API
    keys that work there alone."""

    id: str
    connectors: tuple[str, ...]
    api_keys: tuple[str, ...] = ()


@attrs.frozen
class GatewayOAuth:
    """The config's ``oauth``: the gateway is an OAuth 2.1 resource server for
    tokens ``issuer`` signs (keys from ``jwks_uri``, else from the issuer's
    metadata), issued for ``audience`` (``/mcp``'s URL; a virtual MCP's is it
    plus ``/{id}``; None: each endpoint's URL as its request's Host names it),
    with every scope in ``scopes``."""

    issuer: str
    jwks_uri: str | None = None
    audience: str | None = None
    scopes: tuple[str, ...] = ()


@attrs.frozen
class GatewayConfig:
    """Every connector, the API keys (empty: no authentication) and the extra
    Host/Origin names accepted besides loopback; the virtual MCPs, where each call
    is recorded (``call_log``, a JSON-lines file), whether ``GET /metrics`` is
    served, and whether handshake-era clients are asked questions on assumed
    capabilities (outside the spec; off by default); ``oauth``: OAuth tokens
    accepted as well as API keys."""

    connectors: tuple[ConnectorConfig, ...]
    api_keys: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    virtual_mcps: tuple[VirtualMCP, ...] = ()
    call_log: str | None = None
    metrics: bool = False
    relay_questions_to_handshake_clients: bool = False
    oauth: GatewayOAuth | None = None
    #: Seconds a handshake-era upstream's call, parked while a 2026-07-28 client
    #: answers its question by MRTR, waits for the client's retry before it is released.
    parked_call_timeout: float = DEFAULT_PARKED_CALL_TIMEOUT
    #: Calls parked at once, in all and per principal; past them a question is refused.
    max_parked_calls: int = DEFAULT_MAX_PARKED_CALLS
    max_parked_calls_per_principal: int = DEFAULT_MAX_PARKED_CALLS_PER_PRINCIPAL

    def virtual_mcp(self, id: str) -> VirtualMCP | None:
        return next((v for v in self.virtual_mcps if v.id == id), None)

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


def _api_keys(value: Any, where: str) -> tuple[str, ...]:
    keys = _strings(value, where)
    if any(not key for key in keys):
        raise ConfigError(f"{where} must not contain an empty key")
    if any(not _TOKEN.match(key) for key in keys):
        # A key no Authorization header could carry would lock every client out.
        raise ConfigError(f"{where} must be visible ASCII without spaces (Bearer tokens)")
    return keys


def _virtual_mcps(value: Any, connectors: Mapping[str, Any]) -> tuple[VirtualMCP, ...]:
    if not isinstance(value, dict):
        raise ConfigError("virtual_mcps must be an object of virtual MCPs by id")
    found: list[VirtualMCP] = []
    for id, entry in value.items():
        where = f"virtual_mcps.{id}"
        if not isinstance(id, str) or not CONNECTOR_NAME.match(id):
            raise ConfigError(f"virtual MCP id {id!r} must match {CONNECTOR_NAME.pattern}")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object")
        reject_unknown_keys(entry, ("connectors", "api_keys"), where)
        names = _strings(entry.get("connectors"), f"{where}.connectors")
        if not names:
            raise ConfigError(f"{where}.connectors must name at least one connector")
        unknown = [n for n in names if n not in connectors]
        if unknown:
            raise ConfigError(
                f"{where}.connectors: no connector named {', '.join(map(repr, unknown))} "
                f"(the connectors are {', '.join(map(repr, connectors))})"
            )
        keys = _api_keys(entry.get("api_keys", []), f"{where}.api_keys")
        found.append(VirtualMCP(id, tuple(dict.fromkeys(names)), keys))
    return tuple(found)


def _oauth(value: Any) -> GatewayOAuth:
    if not isinstance(value, dict):
        raise ConfigError("oauth must be an object with an issuer")
    reject_unknown_keys(value, _OAUTH_KEYS, "oauth")
    urls: dict[str, str | None] = {}
    for key in ("issuer", "jwks_uri", "audience"):
        url = value.get(key)
        if url is None and key != "issuer":
            urls[key] = None
            continue
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"oauth.{key} must be an http or https URL")
        check_url(url, f"oauth.{key}")
        if "#" in url or (key != "jwks_uri" and "?" in url):
            # An issuer or resource identifier has no query or fragment (RFC 8414, RFC 9728).
            raise ConfigError(f"oauth.{key} must have no query or fragment")
        urls[key] = url
    scopes = _strings(value.get("scopes", []), "oauth.scopes")
    if any(not _TOKEN.match(s) or '"' in s or "\\" in s for s in scopes):
        raise ConfigError(
            "oauth.scopes must be scope names (visible ASCII, no space, quote or backslash)"
        )
    issuer = urls["issuer"]
    assert issuer is not None
    audience = urls["audience"]
    return GatewayOAuth(
        issuer,
        jwks_uri=urls["jwks_uri"],
        audience=audience.rstrip("/") if audience else None,
        scopes=tuple(dict.fromkeys(scopes)),
    )


def parse_config(obj: Any) -> GatewayConfig:
    """The :class:`GatewayConfig` a decoded ``gateway.json`` describes; raises
    :class:`ConfigError` naming the first problem."""
    if not isinstance(obj, dict):
        raise ConfigError("the configuration must be a JSON object")
    reject_unknown_keys(obj, _TOP_KEYS)
    connectors = obj.get("connectors")
    if not isinstance(connectors, dict) or not connectors:
        raise ConfigError("connectors must be an object naming at least one connector")
    api_keys = _api_keys(obj.get("api_keys", []), "api_keys")
    max_tools = obj.get("max_tools_per_connector", DEFAULT_MAX_TOOLS_PER_CONNECTOR)
    if isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1:
        raise ConfigError("max_tools_per_connector must be a positive integer")
    virtual = _virtual_mcps(obj.get("virtual_mcps", {}), connectors)
    if any(v.api_keys for v in virtual) and not api_keys:
        # Else /mcp, which serves every connector, would be open to all while the
        # virtual MCPs, serving fewer, need a key.
        raise ConfigError(
            "virtual_mcps have api_keys but api_keys is empty: /mcp would serve every "
            "connector without one; set api_keys too"
        )
    call_log = obj.get("call_log")
    if call_log is not None and (not isinstance(call_log, str) or not call_log):
        raise ConfigError("call_log must be the path of a file")
    flags = {}
    for key in ("metrics", "relay_questions_to_handshake_clients"):
        flags[key] = obj.get(key, False)
        if not isinstance(flags[key], bool):
            raise ConfigError(f"{key} must be true or false")
    oauth = _oauth(obj["oauth"]) if "oauth" in obj else None
    timeout = obj.get("parked_call_timeout", DEFAULT_PARKED_CALL_TIMEOUT)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not timeout > 0
        or not math.isfinite(timeout)
    ):
        raise ConfigError("parked_call_timeout must be a positive number of seconds")
    bounds = {}
    for key, default in (
        ("max_parked_calls", DEFAULT_MAX_PARKED_CALLS),
        ("max_parked_calls_per_principal", DEFAULT_MAX_PARKED_CALLS_PER_PRINCIPAL),
    ):
        bounds[key] = obj.get(key, default)
        if isinstance(bounds[key], bool) or not isinstance(bounds[key], int) or bounds[key] < 0:
            raise ConfigError(f"{key} must be a non-negative integer (0: no call is parked)")
    return GatewayConfig(
        tuple(
            attrs.evolve(_connector(name, value), max_tools=max_tools)
            for name, value in connectors.items()
        ),
        api_keys=api_keys,
        allowed_hosts=_strings(obj.get("allowed_hosts", []), "allowed_hosts"),
        virtual_mcps=virtual,
        call_log=call_log,
        oauth=oauth,
        parked_call_timeout=float(timeout),
        **bounds,
        **flags,
    )
