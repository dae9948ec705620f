"""sansio-mcp: a pure, I/O-free Model Context Protocol state machine.

Feed bytes or messages in, read events out, send what the session queues.
See ``docs/`` for the guide and the architecture (state tables).
"""

from ._errors import (
    ConnectionClosedError,
    ErrorCode,
    HeaderMismatch,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LocalProtocolError,
    MCPError,
    MethodNotFound,
    MissingRequiredClientCapability,
    ParseError,
    ProtocolError,
    RemoteProtocolError,
    RequestCancelled,
    RequestTimeout,
    ResourceNotFound,
    UnsupportedProtocolVersion,
    URLElicitationRequired,
)
from ._events import (
    CancelRequested,
    ConnectionClosed,
    Event,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SessionInitialized,
)
from ._jsonrpc import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    message_to_obj,
    parse_message,
)
from ._ndjson import NEED_DATA, NdjsonFramer
from ._params import LOG_LEVELS
from ._client import ClientAPI, ClientHandlers
from ._server import Context, Prompt, PromptArgument, Resource, ResourceTemplate, Server, Tool, ToolResult, text_content
from ._session import ClientSession, ServerSession, Session
from ._state import TRANSITIONS, Role, SessionState, Trigger
from ._versions import HANDSHAKE_REVISIONS, LATEST_HANDSHAKE_REVISION, REVISIONS, Era, Revision

__version__ = "0.1.0"

__all__ = [
    "CancelRequested",
    "ClientAPI",
    "ClientHandlers",
    "Context",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "Server",
    "Tool",
    "ToolResult",
    "text_content",
    "ClientSession",
    "ConnectionClosed",
    "ConnectionClosedError",
    "Era",
    "ErrorCode",
    "Event",
    "HANDSHAKE_REVISIONS",
    "HeaderMismatch",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JSONRPCError",
    "JSONRPCMessage",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResponse",
    "LATEST_HANDSHAKE_REVISION",
    "LOG_LEVELS",
    "LocalProtocolError",
    "MCPError",
    "MethodNotFound",
    "MissingRequiredClientCapability",
    "NEED_DATA",
    "NdjsonFramer",
    "NotificationReceived",
    "ParseError",
    "ProgressReceived",
    "ProtocolError",
    "ProtocolViolation",
    "REVISIONS",
    "RemoteProtocolError",
    "RequestCancelled",
    "RequestFailed",
    "RequestId",
    "RequestReceived",
    "RequestTimeout",
    "ResourceNotFound",
    "ResponseReceived",
    "Revision",
    "Role",
    "ServerSession",
    "Session",
    "SessionInitialized",
    "SessionState",
    "TRANSITIONS",
    "Trigger",
    "URLElicitationRequired",
    "UnsupportedProtocolVersion",
    "message_to_obj",
    "parse_message",
]
