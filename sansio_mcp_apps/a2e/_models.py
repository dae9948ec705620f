# The *_field() helpers return attrs fields, which ruff cannot tell:
# ruff: noqa: RUF009
"""The MCP bridge's data models and error codes (the spec's "Data Models" and
"Error Codes" sections), as frozen attrs classes.

Field names, types and defaults are the spec's.  Each model keeps unknown
keys in ``extra`` and writes them back out.  :class:`MCPServerConfig` also
knows ``http`` (Streamable HTTP), which the spec's ``stdio | sse | ws`` lacks,
and checks itself (:meth:`MCPServerConfig.problems`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar
from urllib.parse import urlsplit

import attrs

from ._fields import (
    FieldProblem,
    Model,
    bool_field,
    dict_field,
    dicts_field,
    float_field,
    int_field,
    str_field,
    strs_field,
)

__all__ = [
    "A2EErrorCode",
    "MCPErrorCode",
    "MCPPrompt",
    "MCPPromptMessage",
    "MCPResource",
    "MCPResourceContent",
    "MCPRoot",
    "MCPServerConfig",
    "MCPServerInfo",
    "MCPServerStatus",
    "MCPTransport",
    "SEPARATOR",
    "is_retryable",
    "server_id_problem",
]

#: Between a server id and an MCP tool name in a namespaced tool name.
SEPARATOR = "__"


class MCPTransport(StrEnum):
    STDIO = "stdio"
    SSE = "sse"  # the legacy HTTP+SSE transport (2024-11-05)
    WS = "ws"
    HTTP = "http"  # Streamable HTTP (beyond the spec's list: the current MCP transport)


class MCPServerStatus(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    ERROR = "error"
    DISCONNECTED = "disconnected"


class MCPErrorCode(StrEnum):
    """The spec's MCP error codes; :attr:`retryable` is the spec's column."""

    MCP_SERVER_NOT_FOUND = "mcp_server_not_found"
    MCP_SERVER_UNAVAILABLE = "mcp_server_unavailable"
    MCP_TOOL_NOT_FOUND = "mcp_tool_not_found"
    MCP_RESOURCE_NOT_FOUND = "mcp_resource_not_found"
    MCP_PROMPT_NOT_FOUND = "mcp_prompt_not_found"
    MCP_TRANSPORT_ERROR = "mcp_transport_error"
    MCP_PROTOCOL_ERROR = "mcp_protocol_error"
    MCP_SAMPLING_REFUSED = "mcp_sampling_refused"
    MCP_CAPABILITY_MISSING = "mcp_capability_missing"

    @property
    def retryable(self) -> bool:
        return self in (MCPErrorCode.MCP_SERVER_UNAVAILABLE, MCPErrorCode.MCP_TRANSPORT_ERROR)


class A2EErrorCode(StrEnum):
    """The A2E core and tool error codes the bridge uses besides the MCP ones."""

    PARSE_ERROR = "parse_error"
    RUNTIME_ERROR = "runtime_error"
    INVALID_MESSAGE = "invalid_message"
    VERSION_MISMATCH = "version_mismatch"
    UNAUTHORIZED = "unauthorized"
    SCHEMA_VIOLATION = "schema_violation"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out_of_memory"
    SANDBOX_CRASH = "sandbox_crash"
    UNKNOWN_TOOL = "unknown_tool"
    TOOL_DENIED = "tool_denied"
    TOOL_ERROR = "tool_error"

    @property
    def retryable(self) -> bool:
        return self is A2EErrorCode.TIMEOUT


def is_retryable(code: str) -> bool:
    """The retryable flag of any code the bridge sends (unknown codes: False)."""
    for enum in (MCPErrorCode, A2EErrorCode):
        try:
            return enum(code).retryable
        except ValueError:
            continue
    return False


def server_id_problem(server_id: str) -> str | None:
    """Why ``server_id`` cannot name a server, or None.

    It must be non-empty, at most 64 characters, without whitespace or
    control characters, must not contain the ``__`` separator and must not end
    with ``_`` (``a_`` + ``__`` + ``b`` would read back as ``a`` + ``__`` + ``_b``).
    """
    if not server_id:
        return "a server id must not be empty"
    if len(server_id) > 64:
        return "a server id must be at most 64 characters"
    if SEPARATOR in server_id:
        return f"a server id must not contain the tool-name separator {SEPARATOR!r}"
    if server_id.endswith("_"):
        return "a server id must not end with '_' (it would run into the '__' separator)"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in server_id):
        return "a server id must not contain whitespace or control characters"
    return None


@attrs.frozen(kw_only=True)
class MCPServerConfig(Model):
    """How to reach one MCP server (``server_id`` empty: the host picks ``hex[:8]``).

    Extension keys the bridge understands (kept in ``extra``):
    ``protocol_version`` (``"auto"``, the default, or an MCP revision to insist on).
    """

    server_id: str = str_field()
    name: str = str_field()
    transport: str = str_field("stdio")
    cmd: list[str] = strs_field()
    cwd: str = str_field()
    env: dict[str, Any] = dict_field()
    url: str = str_field()
    headers: dict[str, Any] = dict_field()
    timeout: int = int_field(300)
    auto_reconnect: bool = bool_field(True)
    tool_allow_list: list[str] = strs_field()
    resource_allow_list: list[str] = strs_field()
    extra: dict[str, Any] = attrs.field(factory=dict)

    def problems(self) -> list[FieldProblem]:
        """What is wrong with this config (an empty list when it is usable)."""
        found: list[FieldProblem] = []
        if self.transport not in MCPTransport.__members__.values():
            found.append(
                FieldProblem(
                    "config.transport",
                    "one of stdio, sse, ws, http",
                    self.transport,
                    message=f"unknown transport {self.transport!r}: use stdio, sse, ws or http",
                )
            )
        if self.server_id:
            problem = server_id_problem(self.server_id)
            if problem:
                found.append(
                    FieldProblem("config.server_id", "a valid id", self.server_id, message=problem)
                )
        if self.timeout <= 0:
            found.append(
                FieldProblem(
                    "config.timeout",
                    "a positive number of seconds",
                    self.timeout,
                    message=f"config.timeout must be positive, not {self.timeout}",
                )
            )
        if self.transport == MCPTransport.STDIO:
            if not self.cmd or not self.cmd[0]:
                found.append(FieldProblem("config.cmd", "a non-empty command", self.cmd))
        elif self.transport in MCPTransport.__members__.values():
            schemes = ("ws", "wss") if self.transport == MCPTransport.WS else ("http", "https")
            parts = urlsplit(self.url)
            if parts.scheme not in schemes or not parts.hostname:
                found.append(
                    FieldProblem(
                        "config.url", f"a {' or '.join(s + '://' for s in schemes)} URL", self.url
                    )
                )
        for key in ("env", "headers"):
            mapping = getattr(self, key)
            if not all(isinstance(v, str) for v in mapping.values()):
                found.append(FieldProblem(f"config.{key}", "an object of strings", mapping))
        version = self.extra.get("protocol_version", "auto")
        if not isinstance(version, str):
            found.append(FieldProblem("config.protocol_version", "a string", version))
        return found

    @property
    def http_headers(self) -> dict[str, str]:
        """``headers`` as sent on every HTTP-based transport: Streamable HTTP, the
        legacy SSE stream's GET and its POSTs, the WebSocket opening handshake."""
        return {str(k): str(v) for k, v in self.headers.items()}

    @property
    def protocol_version(self) -> str:
        version = self.extra.get("protocol_version", "auto")
        return version if isinstance(version, str) else "auto"


@attrs.frozen(kw_only=True)
class MCPServerInfo(Model):
    server_id: str = str_field()
    name: str = str_field()
    transport: str = str_field()
    status: str = str_field(MCPServerStatus.CONNECTING.value)
    mcp_version: str = str_field()
    server_name: str = str_field()
    server_version: str = str_field()
    tools_count: int = int_field()
    resources_count: int = int_field()
    prompts_count: int = int_field()
    last_ping_ms: float = float_field()
    error: str = str_field()
    connected_at: float = float_field()
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class MCPResource(Model):
    uri: str = str_field()
    name: str = str_field()
    description: str = str_field()
    mime_type: str = str_field()
    server_id: str = str_field()
    annotations: dict[str, Any] = dict_field()
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class MCPResourceContent(Model):
    uri: str = str_field()
    mime_type: str = str_field("text/plain")
    text: str = str_field()
    blob: str = str_field()
    type: str = str_field("text")
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class MCPPrompt(Model):
    name: str = str_field()
    description: str = str_field()
    server_id: str = str_field()
    arguments: list[dict[str, Any]] = dicts_field()
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class MCPPromptMessage(Model):
    role: str = str_field()
    content: dict[str, Any] = dict_field()
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class MCPRoot(Model):
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"uri"})

    uri: str = str_field()
    name: str = str_field()
    extra: dict[str, Any] = attrs.field(factory=dict)
