"""The backend-neutral async layer, above the pure state machines of
:mod:`sansio_mcp` and below the Trio and asyncio adapters.

Here live the session hosts, the :class:`Driver`, the declarative
:class:`Server` and its :class:`Context`, the high-level :class:`ClientAPI`
and :class:`ClientHandlers`, and what applications build their own hosts from
(the backend primitives, the senders, the process helpers).  They await only the
:class:`Backend` primitives and import no event loop.
"""

from .._tasks import TaskLimits
from .._util import unwrap_single_exception
from ._backend import (
    Backend,
    ByteStream,
    OnBound,
    Process,
    Signal,
    TaskGroup,
    TimedOut,
    Timer,
    TransportBackend,
)
from ._client import ClientAPI, ClientHandlers, Subscription
from ._client_options import SessionOptions
from ._driver import Driver, ProgressCallback
from ._http_service import ServerLimits
from ._oauth import FileTokenStore, MemoryTokenStore, OAuthProvider, TokenStore
from ._open_client import HTTPClientSessionHost, SSEClientSessionHost
from ._process import drain_stderr, stop_process
from ._sender import Sender
from ._serve_options import ListenOptions
from ._server import Context, ContextHost, Server, answer_request
from ._tasks import CancelTask

__all__ = [
    "Backend",
    "ByteStream",
    "CancelTask",
    "ClientAPI",
    "ClientHandlers",
    "Context",
    "ContextHost",
    "Driver",
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuthProvider",
    "ProgressCallback",
    "Server",
    "ServerLimits",
    "Signal",
    "Subscription",
    "TaskGroup",
    "TaskLimits",
    "TimedOut",
    "TokenStore",
    "TransportBackend",
    "answer_request",
    "HTTPClientSessionHost",
    "ListenOptions",
    "OnBound",
    "Process",
    "SSEClientSessionHost",
    "Sender",
    "SessionOptions",
    "Timer",
    "drain_stderr",
    "stop_process",
    "unwrap_single_exception",
]
