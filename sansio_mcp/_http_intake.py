"""What every MCP HTTP request is checked for before a session sees it (both HTTP
server transports): the DNS-rebinding guard on ``Host`` and ``Origin``, a POST's
media types and JSON-RPC body, and (Streamable HTTP) its protocol version header
against the era and revision it is served in."""

from __future__ import annotations

from typing import Any

import attrs

from . import _json
from ._errors import ErrorCode, MCPError, RemoteProtocolError
from ._events import RequestMeta
from ._exchange import Exchange, json_error
from ._exchange import text_reply as _text
from ._http import HTTPRequest, media_types, url_hostname
from ._http_headers import (
    ToolHeaderParams,
    mirrored_values,
    plainly_mirrored,
    validate_request_headers,
)
from ._jsonrpc import request_id_problem
from ._stateless import request_meta_of
from ._versions import META_PROTOCOL_VERSION, Revision

__all__ = [
    "LOOPBACK_HOSTS",
    "PostBody",
    "check_host_and_origin",
    "handshake_post_refusal",
    "no_session_refusal",
    "read_post",
    "read_stateless_request",
    "stateless_claim_refusal",
    "stateless_only_refusal",
]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def check_host_and_origin(
    request: HTTPRequest, allowed_hosts: set[str], allowed_origins: set[str]
) -> Exchange | None:
    """DNS-rebinding protection: a 403 exchange unless Host (and Origin, when
    present) name an allowed host (by default: loopback only)."""
    host = request.headers.get("host", "")
    hostname = url_hostname(f"//{host}")
    if hostname is None:
        return json_error(400, None, ErrorCode.INVALID_REQUEST, f"malformed Host {host!r}")
    if hostname not in allowed_hosts and host.lower() not in allowed_hosts:
        return json_error(403, None, ErrorCode.INVALID_REQUEST, f"host {host!r} is not allowed")
    origin = request.headers.get("origin")
    if origin is not None:
        if origin.lower().rstrip("/") in allowed_origins:
            return None
        if allowed_origins or url_hostname(origin) not in allowed_hosts:
            return json_error(
                403, None, ErrorCode.INVALID_REQUEST, f"origin {origin!r} is not allowed"
            )
    return None


@attrs.frozen
class PostBody:
    """A POST's JSON-RPC body: ``obj`` as sent (a message or a batch), and its messages."""

    obj: Any
    messages: list[dict[str, Any]]


def read_post(request: HTTPRequest) -> PostBody | Exchange:
    """The body of a Streamable HTTP POST, or the refusal it gets: 415 without JSON,
    406 unless it accepts both JSON and SSE, 400 for a body that is no JSON-RPC
    message (or batch of them) or carries an id JSON-RPC does not allow."""
    if "application/json" not in media_types(request.headers.get("content-type")):
        return _text(415, "the body must be application/json")
    accept = media_types(request.headers.get("accept"))
    if not ({"application/json", "text/event-stream"} <= accept or "*/*" in accept):
        return _text(406, "Accept must list both application/json and text/event-stream")
    try:
        obj = _json.loads(request.body)
    except RemoteProtocolError as exc:
        return json_error(400, None, ErrorCode.PARSE_ERROR, exc.message)
    messages = obj if isinstance(obj, list) else [obj]
    if not messages:
        return _not_a_message()
    for message in messages:  # (one loop, no generator: most bodies are one message)
        if not isinstance(message, dict):
            return _not_a_message()
    for message in messages:
        problem = request_id_problem(message)
        if problem is not None:
            # Neither a request nor a notification: its answer has nowhere else to go.
            return json_error(400, None, ErrorCode.INVALID_REQUEST, problem)
    return PostBody(obj, messages)


def _not_a_message() -> Exchange:
    return json_error(400, None, ErrorCode.INVALID_REQUEST, "the body must be a JSON-RPC message")


def read_stateless_request(
    request: HTTPRequest,
    message: dict[str, Any],
    params: dict[str, Any],
    header_params: ToolHeaderParams,
) -> RequestMeta | Exchange | None:
    """A stateless request's ``_meta``, read once for both its ``Mcp-*`` header check
    and its session (None: unreadable, which the session refuses once the headers
    are checked as ever), or the 400 its headers earn."""
    try:
        meta: RequestMeta | None = request_meta_of(params["_meta"])
    except MCPError:
        meta = None
    method = message.get("method")
    found = header_params.of_tool(params.get("name")) if method == "tools/call" else {}
    expected = None
    if meta is not None and type(method) is str:
        if not found and plainly_mirrored(request.headers, params, meta.protocol_version, method):
            return meta
        expected = mirrored_values(params, meta.protocol_version, method, found)
    mismatch = validate_request_headers(request.headers, message, found=found, expected=expected)
    if mismatch is not None:
        return json_error(400, message.get("id"), mismatch.code, mismatch.message)
    return meta


def stateless_claim_refusal(
    request: HTTPRequest, message: dict[str, Any], stateless_versions: tuple[str, ...]
) -> Exchange | None:
    """The 400 (-32602) for a request that is stateless by its ``MCP-Protocol-Version``
    but whose ``_meta`` lacks the version: malformed params, not a missing session."""
    version = request.headers.get("mcp-protocol-version")
    if (
        version not in stateless_versions
        or "id" not in message
        or message.get("method") == "initialize"
        or "mcp-session-id" in request.headers
    ):
        return None
    return json_error(
        400,
        message.get("id"),
        ErrorCode.INVALID_PARAMS,
        f"params._meta[{META_PROTOCOL_VERSION!r}] is required (MCP-Protocol-Version {version})",
    )


def handshake_post_refusal(
    request: HTTPRequest, obj: Any, revision: Revision | None, versions: tuple[str, ...]
) -> Exchange | None:
    """The 400 a POST on a handshake session at ``revision`` gets for an
    ``MCP-Protocol-Version`` other than ``versions``, or a batch its revision lacks."""
    version = request.headers.get("mcp-protocol-version")
    if version is not None and version not in versions:
        return json_error(
            400, None, ErrorCode.INVALID_REQUEST, f"unsupported MCP-Protocol-Version {version!r}"
        )
    if isinstance(obj, list) and revision is not None and not revision.batching:
        return json_error(
            400,
            None,
            ErrorCode.INVALID_REQUEST,
            f"JSON-RPC batches are not part of revision {revision.name}",
        )
    return None


def stateless_only_refusal(message: dict[str, Any]) -> Exchange:
    """The 400 (-32602) for a POST that is no stateless request, at a server that
    speaks only the stateless era."""
    return json_error(
        400,
        message.get("id"),
        ErrorCode.INVALID_PARAMS,
        f"params._meta[{META_PROTOCOL_VERSION!r}] is required (this server speaks 2026-07-28)",
    )


def no_session_refusal(request: HTTPRequest) -> Exchange:
    """The 400 for a request that needs a handshake session and names none, or the
    404 for one that names a session not (or no longer) held."""
    if "mcp-session-id" not in request.headers:
        return json_error(400, None, ErrorCode.INVALID_REQUEST, "Mcp-Session-Id header is required")
    return json_error(404, None, ErrorCode.INVALID_REQUEST, "unknown or ended session")
