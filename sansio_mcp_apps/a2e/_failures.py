"""How the bridge names and answers a failure.

A failed agent request is a :class:`Failure` (an A2E or MCP error code, a
message, detail); :class:`Refused` carries one out of a handler.
:func:`classify` names an MCP error by the A2E code, and
:func:`failure_reply` builds the answer where the spec puts it: in the
request's own response where its shape has an outcome field, else an
``error`` message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from sansio_mcp import ConnectionClosedError, ErrorCode, HTTPStatusError, MCPError, RequestTimeout

from ._messages import (
    A2EError,
    A2EMessage,
    MCPPromptGetRequest,
    MCPPromptGetResponse,
    MCPResourceReadRequest,
    MCPResourceReadResponse,
    MCPResourceSubscribeRequest,
    MCPResourceSubscribeResponse,
    MCPServerRegisterRequest,
    MCPServerRegisterResponse,
    MCPServerUnregisterRequest,
    MCPServerUnregisterResponse,
)
from ._models import A2EErrorCode, MCPErrorCode, is_retryable

__all__ = [
    "CAPABILITY",
    "AgentRefusal",
    "SamplingRefused",
    "Failure",
    "Refused",
    "classify",
    "error_message",
    "failed_tool_result",
    "failure_reply",
    "refusal",
]

#: The capability every ``error`` message of the bridge names.
CAPABILITY = "mcp"


@attrs.frozen
class Failure:
    #: Only the spec's MCP codes and the A2E core codes: the bridge decides.
    code: MCPErrorCode | A2EErrorCode
    message: str
    detail: dict[str, Any] = attrs.field(factory=dict)

    @property
    def retryable(self) -> bool:
        return is_retryable(self.code)


class Refused(Exception):
    """A handler cannot serve the agent's request: answered with ``failure``."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class AgentRefusal(MCPError, local=True):
    """The agent would not (or could not) answer what a server asked of it.

    The bridge makes it itself (``local``: no server's error response becomes
    one), so the A2E code it stands for, :attr:`a2e_code`, is the bridge's
    decision.  The server is sent only ``code`` and ``message``.
    """

    # (code: -32603, MCPError's own)
    a2e_code: ClassVar[MCPErrorCode] = MCPErrorCode.MCP_CAPABILITY_MISSING


class SamplingRefused(AgentRefusal, local=True):
    """-1, the MCP spec's "user rejected sampling request"."""

    code = -1
    a2e_code = MCPErrorCode.MCP_SAMPLING_REFUSED


def classify(
    error: MCPError,
    method: str,
    server_id: str | None,
    timeout: float | None = None,
    *,
    uri: str | None = None,
) -> Failure:
    """An MCP failure as the A2E code that names it (``server_id`` None: no server).

    The code is always the bridge's own choice, from the spec's closed set:
    what a server sends (its ``code``, its ``data``) is evidence, never the
    answer.  Only failures this library detected itself (the connection
    closed, an HTTP failure, the bridge's own deadline) are transport errors
    or timeouts; a server's error response with the same numbers (-32000,
    -32001) is the server's own error.  ``timeout`` is the limit the request
    had; ``uri`` the resource a ``resources/*`` request was about.
    """
    detail: dict[str, Any] = {}
    if server_id is not None:
        detail["server_id"] = server_id
    if isinstance(error, AgentRefusal):
        return Failure(error.a2e_code, error.message, detail)
    if not isinstance(error, ConnectionClosedError | HTTPStatusError | RequestTimeout):
        detail["mcp_error"] = {"code": error.code, "message": error.message}
        if error.data is not None:
            detail["mcp_error"]["data"] = error.data
    code: MCPErrorCode | A2EErrorCode
    if isinstance(error, ConnectionClosedError):
        code = MCPErrorCode.MCP_TRANSPORT_ERROR
        message = f"the connection to the server closed: {error.message}"
    elif isinstance(error, HTTPStatusError):
        code, message = MCPErrorCode.MCP_TRANSPORT_ERROR, f"HTTP transport: {error.message}"
        data = error.data if isinstance(error.data, dict) else {}
        detail["http_status"] = data.get("status")
    elif isinstance(error, RequestTimeout):
        code, message = A2EErrorCode.TIMEOUT, f"{method} timed out"
        if server_id is not None:
            detail["timeout"] = timeout
    elif error.code == ErrorCode.RESOURCE_NOT_FOUND or (
        uri is not None and _names_unknown_resource(error, uri)
    ):
        code, message = MCPErrorCode.MCP_RESOURCE_NOT_FOUND, error.message
    elif error.code in (
        ErrorCode.METHOD_NOT_FOUND,
        ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
    ):
        code, message = MCPErrorCode.MCP_CAPABILITY_MISSING, error.message
    else:
        code, message = MCPErrorCode.MCP_PROTOCOL_ERROR, error.message
    return Failure(code, message, detail)


def _names_unknown_resource(error: MCPError, uri: str) -> bool:
    """-32602 about the one URI a request named: how 2026-07-28 (SEP-2164) says
    "no such resource" (``data.uri``, as the spec's example), and how servers of
    older revisions often said it too (the URI in the message)."""
    if error.code != ErrorCode.INVALID_PARAMS:
        return False
    data = error.data if isinstance(error.data, dict) else {}
    return data.get("uri") == uri or (bool(uri) and uri in error.message)


def refusal(kind: str, message: str) -> AgentRefusal:
    """The agent would not (or could not) answer a server's request.

    Sampling refusals carry -1 and become ``mcp_sampling_refused``; the others
    are internal errors for the server and ``mcp_capability_missing`` for the
    agent.
    """
    if kind in ("sample", "sampling", "sampling/createMessage"):
        return SamplingRefused(message=message)
    return AgentRefusal(message=message)


def failed_tool_result(tool_name: str, failure: Failure, duration_ms: float) -> dict[str, Any]:
    """The ToolResult of a call that failed (the code in ``error_code``)."""
    result = {
        "success": False,
        "tool_name": tool_name,
        "data": None,
        "summary": "",
        "truncated": False,
        "exit_code": None,
        "error": failure.message,
        "error_code": str(failure.code),
        "duration_ms": duration_ms,
        "events": [],
        "retryable": failure.retryable,
    }
    if failure.detail:
        result["detail"] = dict(failure.detail)
    return result


def error_message(req_id: str, failure: Failure, envelope: dict[str, Any]) -> A2EError:
    """An A2E ``error`` message answering ``req_id``."""
    return A2EError(
        **envelope,
        req_id=req_id,
        code=str(failure.code),
        message=failure.message,
        detail=dict(failure.detail),
        retryable=failure.retryable,
        capability_name=CAPABILITY,
    )


def failure_reply(request: A2EMessage, failure: Failure, envelope: dict[str, Any]) -> A2EMessage:
    """The answer to a failed request (not a tool call: see :func:`failed_tool_result`):
    in its own response type where the spec gives it an ``ok``/``error`` field
    (with the code in the extension fields ``error_code`` and ``retryable``),
    otherwise an ``error`` message."""
    code = str(failure.code)
    ext = {"error_code": code, "retryable": failure.retryable}
    if failure.detail:
        ext["detail"] = dict(failure.detail)
    rid = request.id
    server_id = str(failure.detail.get("server_id", ""))
    if isinstance(request, MCPServerRegisterRequest):
        server = failure.detail.get("server")
        if "detail" in ext:
            ext["detail"] = _without(failure.detail, "server")
        return MCPServerRegisterResponse(
            **envelope,
            req_id=rid,
            ok=False,
            server=dict(server) if isinstance(server, dict) else {},
            error=failure.message,
            extra=ext,
        )
    if isinstance(request, MCPServerUnregisterRequest):
        return MCPServerUnregisterResponse(
            **envelope,
            req_id=rid,
            ok=False,
            server_id=request.server_id,
            extra={"error": failure.message, **ext},
        )
    if isinstance(request, MCPResourceReadRequest):
        return MCPResourceReadResponse(
            **envelope, req_id=rid, server_id=server_id, error=failure.message, extra=ext
        )
    if isinstance(request, MCPResourceSubscribeRequest):
        return MCPResourceSubscribeResponse(
            **envelope, req_id=rid, ok=False, error=failure.message, extra=ext
        )
    if isinstance(request, MCPPromptGetRequest):
        return MCPPromptGetResponse(
            **envelope, req_id=rid, server_id=server_id, error=failure.message, extra=ext
        )
    return error_message(rid, failure, envelope)


def _without(mapping: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}
