"""The library's exceptions.

Two families, kept apart on purpose:

* :class:`ProtocolError` (with :class:`LocalProtocolError` and
  :class:`RemoteProtocolError`) means somebody broke the protocol: we tried to
  send something illegal, or the peer sent us something illegal.
* :class:`MCPError` is an ordinary JSON-RPC error *response*: the protocol
  worked, the request failed.  Subclasses exist per well-known code so that
  callers can ``except MethodNotFound``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

__all__ = [
    "ErrorCode",
    "ProtocolError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "OversizedMessage",
    "MCPError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "ResourceNotFound",
    "URLElicitationRequired",
    "HeaderMismatch",
    "MissingRequiredClientCapability",
    "UnsupportedProtocolVersion",
    "RequestTimeout",
    "ConnectionClosedError",
    "RequestCancelled",
    "InputRoundsExceeded",
    "HTTPStatusError",
]


class ErrorCode(IntEnum):
    """JSON-RPC and MCP error codes."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    # Implementation-defined range; matches the official SDKs' usage.
    CONNECTION_CLOSED = -32000
    REQUEST_TIMEOUT = -32001
    RESOURCE_NOT_FOUND = -32002
    URL_ELICITATION_REQUIRED = -32042
    HEADER_MISMATCH = -32020
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    UNSUPPORTED_PROTOCOL_VERSION = -32022


class ProtocolError(Exception):
    """Base class for protocol violations.

    ``code`` is the JSON-RPC error code that describes the violation, and
    ``request_id`` the id of the offending request when it could be read (so
    an error response can be addressed to it).
    """

    def __init__(
        self,
        message: str,
        *,
        code: int = ErrorCode.INVALID_REQUEST,
        request_id: str | int | None = None,
        data: Any = None,
    ) -> None:
        if type(self) is ProtocolError:
            raise TypeError("use LocalProtocolError or RemoteProtocolError")
        super().__init__(message)
        self.message = message
        self.code = int(code)
        self.request_id = request_id
        self.data = data
        #: Whether the peer should be sent an error response for this.
        self.answer = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code})"


class LocalProtocolError(ProtocolError):
    """We tried to do something the protocol forbids; nothing was sent."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids."""


class OversizedMessage(RemoteProtocolError):
    """The peer sent a message over the size limit (``max_message_size``)."""


_BY_CODE: dict[int, type[MCPError]] = {}


class MCPError(Exception):
    """A JSON-RPC error response: ``code``, ``message`` and optional ``data``.

    ``MCPError(code, message)`` builds the subclass registered for ``code``
    (``MCPError(-32601, "x")`` is a :class:`MethodNotFound`).  A subclass
    declared with ``local=True`` names a failure this library detects itself
    (the connection closed, a deadline passed): it is never built from a
    code, so a peer's error response with the same code (a server's own
    -32000) stays a plain :class:`MCPError` and cannot pass for one.
    """

    code: int = ErrorCode.INTERNAL_ERROR

    def __new__(cls, code: int | None = None, message: str = "", data: Any = None) -> MCPError:
        target = cls
        if cls is MCPError and code is not None:
            target = _BY_CODE.get(int(code), MCPError)
        return super().__new__(target)

    def __init__(self, code: int | None = None, message: str = "", data: Any = None) -> None:
        if code is None:
            code = type(self).code
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data = data

    def __init_subclass__(cls, *, local: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not local:
            _BY_CODE.setdefault(int(cls.code), cls)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_dict(cls, error: dict[str, Any]) -> MCPError:
        """Build the right subclass from a JSON-RPC ``error`` object."""
        return MCPError(error["code"], error["message"], error.get("data"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MCPError):
            return NotImplemented
        return (self.code, self.message, self.data) == (other.code, other.message, other.data)

    def __hash__(self) -> int:
        return hash((self.code, self.message))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.code, self.message, self.data))


class ParseError(MCPError):
    code = ErrorCode.PARSE_ERROR


class InvalidRequest(MCPError):
    code = ErrorCode.INVALID_REQUEST


class MethodNotFound(MCPError):
    code = ErrorCode.METHOD_NOT_FOUND


class InvalidParams(MCPError):
    code = ErrorCode.INVALID_PARAMS


class InternalError(MCPError):
    code = ErrorCode.INTERNAL_ERROR


class ConnectionClosedError(MCPError, local=True):
    """The connection ended before the request was answered."""

    code = ErrorCode.CONNECTION_CLOSED


class RequestTimeout(MCPError, local=True):
    """The request's deadline passed; it was cancelled on the wire."""

    code = ErrorCode.REQUEST_TIMEOUT


class ResourceNotFound(MCPError):
    code = ErrorCode.RESOURCE_NOT_FOUND


class URLElicitationRequired(MCPError):
    """-32042 (2025-11-25): ``data.elicitations`` lists URL elicitations."""

    code = ErrorCode.URL_ELICITATION_REQUIRED


class HeaderMismatch(MCPError):
    code = ErrorCode.HEADER_MISMATCH


class MissingRequiredClientCapability(MCPError):
    code = ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY


class UnsupportedProtocolVersion(MCPError):
    """The peers share no protocol revision; ``data`` has ``supported`` and ``requested``."""

    code = ErrorCode.UNSUPPORTED_PROTOCOL_VERSION


class RequestCancelled(MCPError, local=True):
    """We cancelled the request ourselves (never sent by a peer)."""

    # Not a wire code: the spec says a cancelled request gets no response at all.
    code = -1


class InputRoundsExceeded(MCPError, local=True):
    """The server kept asking for input past the client's round limit (never on the wire)."""

    code = -2


class HTTPStatusError(MCPError, local=True):
    """An HTTP transport answered a request with a failure status and no
    JSON-RPC error; ``data`` has ``status`` and ``body`` (never on the wire)."""

    code = -3
