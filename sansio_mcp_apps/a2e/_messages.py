# The *_field() helpers return attrs fields, which ruff cannot tell:
# ruff: noqa: RUF009
"""A2E messages: the envelope, the 21 ``mcp/*`` types of the MCP bridge
capability, the core tool messages the bridge feeds, ``ping``/``pong``,
``error``, and the ``x-mcp/elicit`` extension pair.

Every message is a frozen attrs class whose fields, types and defaults are
the spec's.  The envelope is ``type``, ``id`` (a random UUID's 32 hex digits unless given),
``version`` (``"1.0"``; the code's name for it, not the older docs' ``a2e``)
and ``ts``.  The core never reads a clock: ``ts`` is 0.0 unless the sender
stamps it (the bridge host stamps everything it sends with the ``now`` it
was given).  Unknown keys are kept in ``extra`` and written back out.
What the agent sends must carry every field the spec marks "Required: Yes"
(``REQUIRED``; ``version`` and ``ts`` excepted, as a tolerant reader): a
default taken in silence would fail later, or not at all.
"""

from __future__ import annotations

import os
import random
from typing import Any, ClassVar, TypeVar

import attrs

from ._fields import (
    Model,
    any_field,
    bool_field,
    dict_field,
    dicts_field,
    float_field,
    int_field,
    str_field,
    strs_field,
)

__all__ = [
    "A2E_VERSION",
    "AGENT_TO_HOST",
    "HOST_TO_AGENT",
    "MCP_MESSAGE_TYPES",
    "MESSAGE_TYPES",
    "A2EError",
    "A2EMessage",
    "ElicitRequest",
    "ElicitResponse",
    "HandshakeRequest",
    "HandshakeResponse",
    "MCPPromptGetRequest",
    "MCPPromptGetResponse",
    "MCPPromptListRequest",
    "MCPPromptListResponse",
    "MCPResourceListRequest",
    "MCPResourceListResponse",
    "MCPResourceReadRequest",
    "MCPResourceReadResponse",
    "MCPResourceSubscribeRequest",
    "MCPResourceSubscribeResponse",
    "MCPRootsListRequest",
    "MCPRootsListResponse",
    "MCPSamplingRequest",
    "MCPSamplingResponse",
    "MCPServerListRequest",
    "MCPServerListResponse",
    "MCPServerPush",
    "MCPServerRegisterRequest",
    "MCPServerRegisterResponse",
    "MCPServerUnregisterRequest",
    "MCPServerUnregisterResponse",
    "Ping",
    "Pong",
    "ToolCallRequest",
    "ToolCallResponse",
    "ToolEvent",
    "ToolListRequest",
    "ToolListResponse",
    "new_message_id",
]

A2E_VERSION = "1.0"
#: Directions: who may send a type.
AGENT_TO_HOST = "agent"
HOST_TO_AGENT = "host"
BOTH = "both"

M = TypeVar("M", bound="A2EMessage")

#: Every message class by its ``type``.
MESSAGE_TYPES: dict[str, type[A2EMessage]] = {}
#: The 21 ``mcp/*`` types of the spec, in the spec's order.
MCP_MESSAGE_TYPES: list[str] = []


class _IdSource:
    """A private generator, seeded from the OS at its first id, and again in a forked
    child (which would otherwise repeat its parent's ids): uuid4() reads the OS for
    every id, which showed in the bridge's profile (two ids per tool call).  The fork
    is noticed by the process id, so importing this module changes no process state."""

    def __init__(self) -> None:
        self.pid = -1
        self.random = random.Random(0)

    def getrandbits(self, bits: int) -> int:
        pid = os.getpid()
        if pid != self.pid:
            self.pid = pid
            self.random.seed()
        return self.random.getrandbits(bits)


_ids = _IdSource()
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_message_id() -> str:
    """A fresh message id: a random RFC 4122 version-4 UUID as 32 hex digits, the
    A2E default (the reference SDK's ``uuid4().hex``).

    Ids correlate requests and responses; they are unique per bridge (122 random
    bits) but not secrets (the generator is not a CSPRNG): nothing in A2E is
    authorized by knowing one.
    """
    return (_ids.getrandbits(128) & _UUID4_CLEAR | _UUID4_SET).to_bytes(16, "big").hex()


def _message(direction: str) -> Any:
    def register(cls: type[M]) -> type[M]:
        type_name = attrs.fields(cls).type.default
        assert isinstance(type_name, str) and type_name not in MESSAGE_TYPES
        cls.TYPE = type_name
        cls.DIRECTION = direction
        MESSAGE_TYPES[type_name] = cls
        if type_name.startswith("mcp/"):
            MCP_MESSAGE_TYPES.append(type_name)
        return cls

    return register


@attrs.frozen(kw_only=True)
class A2EMessage(Model):
    """The envelope every A2E message shares."""

    TYPE: ClassVar[str] = ""
    DIRECTION: ClassVar[str] = BOTH

    type: str = str_field("")
    id: str = attrs.field(factory=new_message_id, metadata={"a2e_kind": "str"})
    version: str = str_field(A2E_VERSION)
    ts: float = float_field(0.0)
    extra: dict[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.TYPE and self.type != self.TYPE:
            raise ValueError(f"{type(self).__name__}.type must be {self.TYPE!r}, not {self.type!r}")


# Server management (7) --------------------------------------------------------------


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPServerListRequest(A2EMessage):
    type: str = str_field("mcp/server/list/req")
    status_filter: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPServerListResponse(A2EMessage):
    type: str = str_field("mcp/server/list/resp")
    req_id: str = str_field()
    servers: list[dict[str, Any]] = dicts_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPServerRegisterRequest(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"config"})
    type: str = str_field("mcp/server/register/req")
    config: dict[str, Any] = dict_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPServerRegisterResponse(A2EMessage):
    type: str = str_field("mcp/server/register/resp")
    req_id: str = str_field()
    ok: bool = bool_field(False)
    server: dict[str, Any] = dict_field()
    error: str = str_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPServerUnregisterRequest(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"server_id"})
    type: str = str_field("mcp/server/unregister/req")
    server_id: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPServerUnregisterResponse(A2EMessage):
    type: str = str_field("mcp/server/unregister/resp")
    req_id: str = str_field()
    ok: bool = bool_field(False)
    server_id: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPServerPush(A2EMessage):
    type: str = str_field("mcp/server/push")
    server_id: str = str_field()
    method: str = str_field()
    params: dict[str, Any] = dict_field()


# Resources (6) ----------------------------------------------------------------------


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPResourceListRequest(A2EMessage):
    type: str = str_field("mcp/resource/list/req")
    server_id: str = str_field()
    cursor: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPResourceListResponse(A2EMessage):
    type: str = str_field("mcp/resource/list/resp")
    req_id: str = str_field()
    resources: list[dict[str, Any]] = dicts_field()
    next_cursor: str = str_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPResourceReadRequest(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"uri"})
    type: str = str_field("mcp/resource/read/req")
    uri: str = str_field()
    server_id: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPResourceReadResponse(A2EMessage):
    type: str = str_field("mcp/resource/read/resp")
    req_id: str = str_field()
    contents: list[dict[str, Any]] = dicts_field()
    server_id: str = str_field()
    error: str = str_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPResourceSubscribeRequest(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"uri"})
    type: str = str_field("mcp/resource/subscribe/req")
    uri: str = str_field()
    server_id: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPResourceSubscribeResponse(A2EMessage):
    type: str = str_field("mcp/resource/subscribe/resp")
    req_id: str = str_field()
    ok: bool = bool_field(False)
    error: str = str_field()


# Prompts (4) ------------------------------------------------------------------------


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPPromptListRequest(A2EMessage):
    type: str = str_field("mcp/prompt/list/req")
    server_id: str = str_field()
    cursor: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPPromptListResponse(A2EMessage):
    type: str = str_field("mcp/prompt/list/resp")
    req_id: str = str_field()
    prompts: list[dict[str, Any]] = dicts_field()
    next_cursor: str = str_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPPromptGetRequest(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"name"})
    type: str = str_field("mcp/prompt/get/req")
    name: str = str_field()
    arguments: dict[str, Any] = dict_field()
    server_id: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPPromptGetResponse(A2EMessage):
    type: str = str_field("mcp/prompt/get/resp")
    req_id: str = str_field()
    description: str = str_field()
    messages: list[dict[str, Any]] = dicts_field()
    server_id: str = str_field()
    error: str = str_field()


# Sampling (2) -----------------------------------------------------------------------


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPSamplingRequest(A2EMessage):
    type: str = str_field("mcp/sample/req")
    server_id: str = str_field()
    mcp_request_id: str = str_field()
    messages: list[dict[str, Any]] = dicts_field()
    model_preferences: dict[str, Any] = dict_field()
    system_prompt: str = str_field()
    include_context: str = str_field("none")
    temperature: float = float_field(1.0)
    max_tokens: int = int_field(1024)
    stop_sequences: list[str] = strs_field()
    metadata: dict[str, Any] = dict_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPSamplingResponse(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset(
        {"req_id", "server_id", "mcp_request_id", "role", "content"}
    )
    # The reference SDK defaults this type to "mcp/sample/req" (defect 2); it is /resp.
    type: str = str_field("mcp/sample/resp")
    req_id: str = str_field()
    server_id: str = str_field()
    mcp_request_id: str = str_field()
    role: str = str_field("assistant")
    content: dict[str, Any] = dict_field()
    model: str = str_field()
    stop_reason: str = str_field()
    error: str = str_field()


# Roots (2) --------------------------------------------------------------------------


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class MCPRootsListRequest(A2EMessage):
    type: str = str_field("mcp/root/list/req")
    server_id: str = str_field()
    mcp_request_id: str = str_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class MCPRootsListResponse(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset(
        {"req_id", "server_id", "mcp_request_id", "roots"}
    )
    type: str = str_field("mcp/root/list/resp")
    req_id: str = str_field()
    server_id: str = str_field()
    mcp_request_id: str = str_field()
    roots: list[dict[str, Any]] = dicts_field()


# Core tool messages (the shapes of the reference SDK's tools capability) -----------


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class ToolListRequest(A2EMessage):
    type: str = str_field("tool/list/req")
    filter_kind: str = str_field()
    filter_tags: list[str] = strs_field()
    query: str = str_field()
    include_deferred: bool = bool_field(False)


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class ToolListResponse(A2EMessage):
    type: str = str_field("tool/list/resp")
    req_id: str = str_field()
    tools: list[dict[str, Any]] = dicts_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class ToolCallRequest(A2EMessage):
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"tool_name", "arguments"})

    type: str = str_field("tool/call/req")
    session_id: str = str_field()
    tool_name: str = str_field()
    arguments: dict[str, Any] = dict_field()
    correlation_id: str = str_field()
    streaming: bool = bool_field(False)
    #: Seconds; 0 (the default here): none of its own, so the server's ``timeout``
    #: applies (the core's 30 would cut every MCP tool call short of it, 300 s by
    #: default); a positive one can only shorten the server's.
    timeout: int = int_field(0)


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class ToolCallResponse(A2EMessage):
    type: str = str_field("tool/call/resp")
    req_id: str = str_field()
    #: A ToolResult: success, tool_name, data, summary, truncated, exit_code,
    #: error, error_code, duration_ms, events.
    data: dict[str, Any] = dict_field()
    created_at: float = float_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class ToolEvent(A2EMessage):
    type: str = str_field("tool/event")
    kind: str = str_field("progress")
    req_id: str = str_field()
    data: Any = any_field(None)
    seq: int = int_field(0)


# Core: handshake, ping, pong, error ---------------------------------------------------


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class HandshakeRequest(A2EMessage):
    """The A2E core handshake (optional here: the bridge answers without one)."""

    type: str = str_field("handshake/req")
    agent_id: str = str_field()
    agent_caps: list[str] = strs_field()
    auth_token: str = str_field()


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class HandshakeResponse(A2EMessage):
    type: str = str_field("handshake/resp")
    req_id: str = str_field()
    session_id: str = str_field()
    #: ``{capability, enabled, metadata}`` per capability.
    accepted_caps: list[dict[str, Any]] = dicts_field()
    max_parallel: int = int_field(4)
    ok: bool = bool_field(False)
    reason: str = str_field()


@_message(BOTH)
@attrs.frozen(kw_only=True)
class Ping(A2EMessage):
    type: str = str_field("ping")


@_message(BOTH)
@attrs.frozen(kw_only=True)
class Pong(A2EMessage):
    type: str = str_field("pong")
    req_id: str = str_field()


@_message(BOTH)
@attrs.frozen(kw_only=True)
class A2EError(A2EMessage):
    type: str = str_field("error")
    req_id: str = str_field()
    code: str = str_field()
    message: str = str_field()
    detail: dict[str, Any] = dict_field()
    retryable: bool = bool_field(False)
    capability_name: str = str_field()


# Extension, beyond the spec: elicitation ------------------------------------------------


@_message(HOST_TO_AGENT)
@attrs.frozen(kw_only=True)
class ElicitRequest(A2EMessage):
    """``x-mcp/elicit/req`` (an extension: the spec has no elicitation).

    An MCP server asks the user for input; ``params`` is the MCP
    ``elicitation/create`` params verbatim (``mode``, ``message``,
    ``requestedSchema``, ``url``, ``elicitationId``).
    """

    type: str = str_field("x-mcp/elicit/req")
    server_id: str = str_field()
    mcp_request_id: str = str_field()
    params: dict[str, Any] = dict_field()


@_message(AGENT_TO_HOST)
@attrs.frozen(kw_only=True)
class ElicitResponse(A2EMessage):
    """``x-mcp/elicit/resp`` (an extension): the MCP ElicitResult
    (``action`` accept/decline/cancel, ``content``), or ``error``."""

    type: str = str_field("x-mcp/elicit/resp")
    req_id: str = str_field()
    server_id: str = str_field()
    mcp_request_id: str = str_field()
    action: str = str_field("cancel")
    content: dict[str, Any] = dict_field()
    error: str = str_field()


assert len(MCP_MESSAGE_TYPES) == 21, MCP_MESSAGE_TYPES
