"""The A2A bridge's configuration (``sansio-mcp a2a-bridge --config agents.json``)::

    {"agents": {"hello": {"url": "http://localhost:9999"},
                "planner": {"cardUrl": "https://planner.example.org/.well-known/agent-card.json"}},
     "port": 8931, "allowedHosts": [], "handleTtlMs": 900000,
     "maxHandlesPerOwner": 1000, "maxHandles": 100000,
     "maxResultParts": 1000, "maxResultBytes": 8388608}

Only ``agents`` is required.  Every problem is a :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from sansio_mcp.config import ConfigError, check_url, load_json, reject_unknown_keys

from ._envelope import DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_RESULT_PARTS, ResultLimits
from ._handles import DEFAULT_MAX_HANDLES, DEFAULT_MAX_HANDLES_PER_OWNER

__all__ = [
    "AGENT_CARD_PATH",
    "DEFAULT_HANDLE_TTL_MS",
    "DEFAULT_PORT",
    "AgentConfig",
    "BridgeConfig",
    "ConfigError",
    "load_config",
    "parse_config",
]

DEFAULT_PORT = 8931
DEFAULT_HANDLE_TTL_MS = 900_000
#: How long an MCP task of the bridge lives, from its creation (a day).
DEFAULT_TASK_TTL_MS = 86_400_000
#: Where an agent publishes its card (A2A v1.0 section 8.2).
AGENT_CARD_PATH = "/.well-known/agent-card.json"

_TOP_KEYS = frozenset(
    {
        "agents",
        "port",
        "allowedHosts",
        "handleTtlMs",
        "maxHandlesPerOwner",
        "maxHandles",
        "taskTtlMs",
        "maxResultParts",
        "maxResultBytes",
    }
)
_AGENT_KEYS = frozenset({"url", "cardUrl"})
_ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@attrs.frozen
class AgentConfig:
    """One agent: its alias, and where its card is."""

    alias: str
    url: str | None = None
    card_url: str | None = None

    @property
    def card_location(self) -> str:
        """The card's URL: ``cardUrl``, else the well-known path under ``url``."""
        if self.card_url is not None:
            return self.card_url
        assert self.url is not None
        return self.url.rstrip("/") + AGENT_CARD_PATH


@attrs.frozen
class BridgeConfig:
    agents: tuple[AgentConfig, ...]
    port: int = DEFAULT_PORT
    allowed_hosts: tuple[str, ...] = ()
    handle_ttl_ms: int = DEFAULT_HANDLE_TTL_MS
    #: Live handles of one kind (task, context) one client may hold (``maxHandlesPerOwner``).
    max_handles_per_owner: int = DEFAULT_MAX_HANDLES_PER_OWNER
    #: Live handles of one kind one bridge holds in memory (``maxHandles``).
    max_handles: int = DEFAULT_MAX_HANDLES
    #: An MCP task's life from its creation (``taskTtlMs``): one still running then is
    #: stopped, and its A2A task cancelled.
    task_ttl_ms: int = DEFAULT_TASK_TTL_MS
    #: The bounds of one translated tool result (``maxResultParts``, ``maxResultBytes``).
    result_limits: ResultLimits = attrs.field(factory=ResultLimits)

    def agent(self, alias: str) -> AgentConfig | None:
        return next((a for a in self.agents if a.alias == alias), None)


def load_config(text: str | bytes) -> BridgeConfig:
    """A config from a file's text."""
    return parse_config(load_json(text))


def _http_url(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(f"{where} must be an http:// or https:// URL, not {value!r}")
    check_url(value, where)
    return value


def _agent(alias: Any, raw: Any) -> AgentConfig:
    if not isinstance(alias, str) or not _ALIAS.fullmatch(alias):
        raise ConfigError(
            f"agent alias {alias!r} must be 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    where = f"agents.{alias}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be an object with 'url' or 'cardUrl'")
    reject_unknown_keys(raw, _AGENT_KEYS, where)
    if ("url" in raw) == ("cardUrl" in raw):
        raise ConfigError(f"{where} needs exactly one of 'url' and 'cardUrl'")
    if "url" in raw:
        return AgentConfig(alias, url=_http_url(raw["url"], f"{where}.url"))
    return AgentConfig(alias, card_url=_http_url(raw["cardUrl"], f"{where}.cardUrl"))


def _int(raw: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key} must be an integer from {low} to {high}, not {value!r}")
    return value


def parse_config(raw: Any) -> BridgeConfig:
    """A config from its JSON value."""
    if not isinstance(raw, Mapping):
        raise ConfigError("the config must be a JSON object")
    reject_unknown_keys(raw, _TOP_KEYS)
    agents = raw.get("agents")
    if not isinstance(agents, Mapping) or not agents:
        raise ConfigError("agents must be a non-empty object of alias: {url | cardUrl}")
    hosts = raw.get("allowedHosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise ConfigError(f"allowedHosts must be a list of host names, not {hosts!r}")
    return BridgeConfig(
        agents=tuple(_agent(alias, value) for alias, value in agents.items()),
        port=_int(raw, "port", DEFAULT_PORT, 0, 65535),
        allowed_hosts=tuple(h.lower() for h in hosts),
        handle_ttl_ms=_int(raw, "handleTtlMs", DEFAULT_HANDLE_TTL_MS, 1, 2**53),
        max_handles_per_owner=_int(
            raw, "maxHandlesPerOwner", DEFAULT_MAX_HANDLES_PER_OWNER, 1, 2**31
        ),
        max_handles=_int(raw, "maxHandles", DEFAULT_MAX_HANDLES, 1, 2**31),
        # At least the bridge's polling pace (500 ms), or a finished task could be gone
        # before its client's next poll.
        task_ttl_ms=_int(raw, "taskTtlMs", DEFAULT_TASK_TTL_MS, 1000, 2**53),
        result_limits=ResultLimits(
            max_parts=_int(raw, "maxResultParts", DEFAULT_MAX_RESULT_PARTS, 1, 2**31),
            max_bytes=_int(raw, "maxResultBytes", DEFAULT_MAX_RESULT_BYTES, 1024, 2**53),
        ),
    )
