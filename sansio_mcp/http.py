"""The HTTP side of the library, sans-IO: HTTP/1.1 client connections and their pool,
the request and response heads, the Streamable HTTP server (to subclass: a router
that answers some requests itself) and client state machines, and the checks of
``x-mcp-header`` input schemas."""

from ._exchange import Exchange, json_error
from ._handshake_sessions import HandshakeSession, HandshakeSessions
from ._http import (
    ConnectionEnded,
    HTTPClientConnection,
    HTTPError,
    HTTPRequest,
    HTTPResponseHead,
)
from ._http_headers import x_mcp_header_problems
from ._http_intake import LOOPBACK_HOSTS
from ._http_pool import ConnectionPool, PooledConnection
from ._replay import EventKeeper
from ._shared_sessions import ReplicaSessions, SessionRelay
from ._sse import SSEParser
from ._streamable_http import StreamableHTTPServer
from ._streamable_http_client import Endpoint, StreamableHTTPClient

__all__ = [
    "LOOPBACK_HOSTS",
    "ConnectionEnded",
    "ConnectionPool",
    "Endpoint",
    "EventKeeper",
    "Exchange",
    "HTTPClientConnection",
    "HTTPError",
    "HTTPRequest",
    "HTTPResponseHead",
    "HandshakeSession",
    "HandshakeSessions",
    "PooledConnection",
    "ReplicaSessions",
    "SSEParser",
    "SessionRelay",
    "StreamableHTTPClient",
    "StreamableHTTPServer",
    "json_error",
    "x_mcp_header_problems",
]
