"""sansio-mcp: a pure, I/O-free Model Context Protocol state machine.

Feed bytes or messages in, read events out, send what the session queues.
The async layer (``Server``, ``Context``, ``ClientAPI``, ``ClientHandlers``,
the hosts and the driver) is :mod:`sansio_mcp.runtime`.
See ``docs/`` for the guide and the architecture (state tables).
"""

from ._cache import ResultCache
from ._client_session import ClientSession
from ._errors import (
    ConnectionClosedError,
    ErrorCode,
    HeaderMismatch,
    HTTPStatusError,
    InputRoundsExceeded,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LocalProtocolError,
    MCPError,
    MethodNotFound,
    MissingRequiredClientCapability,
    OversizedMessage,
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
    InputRequired,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestMeta,
    RequestReceived,
    ResponseReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
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

# What applications built on the library (an intermediary, a bridge) read and check as
# the sessions do; the transports' and the tasks' own public names are in
# sansio_mcp.http, .websocket, .tasks, .capabilities, .config and .jsontext.
from ._modern import CacheHints, end_to_end_meta, listen_filter
from ._ndjson import NEED_DATA, NdjsonFramer
from ._outbox import Outgoing
from ._params import LOG_LEVELS, check_params
from ._refusals import does_not_speak
from ._registry import (
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    SessionHub,
    Tool,
    ToolResult,
    decode_state_cursor,
    encode_state_cursor,
    text_content,
)
from ._request_state import MIN_STATE_KEY_BYTES, RequestStateSealer, parse_state_keys
from ._server_session import ServerSession
from ._session import Session
from ._state import TRANSITIONS, Role, SessionState, Trigger
from ._stdio import StderrLines, safe_environment
from ._uritemplate import UriTemplate
from ._versions import (
    ALL_REVISIONS,
    CACHEABLE_METHODS,
    HANDSHAKE_REVISIONS,
    LATEST_HANDSHAKE_REVISION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MODERN_REVISIONS,
    MRTR_METHODS,
    REVISIONS,
    Era,
    Revision,
    get_revision,
)

__version__ = "0.1.0"

__all__ = [
    "CancelRequested",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
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
    "HTTPStatusError",
    "InputRoundsExceeded",
    "InputRequired",
    "RequestMeta",
    "SubscriptionAcknowledged",
    "SessionHub",
    "RequestStateSealer",
    "MIN_STATE_KEY_BYTES",
    "parse_state_keys",
    "CacheHints",
    "ResultCache",
    "MODERN_REVISIONS",
    "ALL_REVISIONS",
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
    "Outgoing",
    "ParseError",
    "ProgressReceived",
    "ProtocolError",
    "ProtocolViolation",
    "REVISIONS",
    "RemoteProtocolError",
    "OversizedMessage",
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
    "META_SERVER_INFO",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SUBSCRIPTION_ID",
    "CACHEABLE_METHODS",
    "MRTR_METHODS",
    "StderrLines",
    "does_not_speak",
    "UriTemplate",
    "check_params",
    "decode_state_cursor",
    "encode_state_cursor",
    "end_to_end_meta",
    "get_revision",
    "listen_filter",
    "safe_environment",
]
