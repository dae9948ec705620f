"""What the command line tells a person when something failed: what happened and
what to try, in words, never a bare JSON-RPC code."""

from __future__ import annotations

from sansio_mcp import (
    ConnectionClosedError,
    HTTPStatusError,
    InvalidParams,
    MCPError,
    MethodNotFound,
    MissingRequiredClientCapability,
    RequestTimeout,
)

__all__ = ["explain"]


def explain(exc: BaseException, *, bearer: bool = False, verbose: bool = False) -> str:
    """One message for ``exc``; ``bearer``: the user gave ``--bearer``, ``verbose``: ``-v``."""
    if isinstance(exc, HTTPStatusError):
        return _explain_http(exc, bearer)
    from sansio_mcp.auth import AuthorizationError  # the OAuth client's, loaded when needed

    if isinstance(exc, AuthorizationError):
        status = exc.data.get("status") if isinstance(exc.data, dict) else None
        if bearer and status in (401, 403):
            return f"the server refused the token given with --bearer (HTTP {status})"
        return f"authorization failed: {exc.message}"
    if isinstance(exc, ConnectionClosedError):
        text = exc.message
        data = exc.data if isinstance(exc.data, dict) else {}
        if data.get("stderr") and not verbose:
            text += "\n(-v shows all of its stderr)"
        return text
    if isinstance(exc, RequestTimeout):
        return f"{exc.message}: the server did not answer in time (--timeout sets how long to wait)"
    if isinstance(exc, MethodNotFound):
        return f"the server does not support this: {exc.message}"
    if isinstance(exc, InvalidParams):
        return f"the server refused the request's parameters: {exc.message}"
    if isinstance(exc, MissingRequiredClientCapability):
        return f"the server needs a client capability this command cannot offer: {exc.message}"
    if isinstance(exc, MCPError):
        return f"the server answered with an error: {exc.message}"
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"cannot start {exc.filename}: no such program (is it installed, and on PATH?)"
    return str(exc) or type(exc).__name__


def _explain_http(exc: HTTPStatusError, bearer: bool) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    status = data.get("status")
    body = str(data.get("body") or "").strip()
    said = f": {body}" if body else ""
    if status == 401:
        if bearer:
            return f"the server refused the token given with --bearer (HTTP 401{said})"
        return (
            f"the server requires authorization (HTTP 401{said}); give --bearer TOKEN, "
            "or --oauth to authorize in a browser"
        )
    if status == 403:
        return f"the server refused access with these credentials (HTTP 403{said})"
    if not status:
        return f"{body or exc.message} (is the server running, and is the URL right?)"
    return exc.message
