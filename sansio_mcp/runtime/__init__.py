"""The backend-neutral async layer, above the pure state machines of
:mod:`sansio_mcp` and below the Trio and asyncio adapters.

Here live the session hosts, the :class:`Driver`, the declarative
:class:`Server` and its :class:`Context`, the high-level :class:`ClientAPI`
and :class:`ClientHandlers`, and what applications build their own hosts from
(the backend primitives, the senders, the process helpers).  They await only the
:class:`Backend` primitives and import no event loop.
"""

from typing import TYPE_CHECKING

from .._util import lazy_names, unwrap_single_exception

# Each name is imported from its module when first used: a stdio server never loads the
# HTTP service, the Redis stores nor the OAuth client (import time, issue 37).
if TYPE_CHECKING:
    from .._tasks import TaskLimits
    from ._backend import (
        Backend,
        ByteStream,
        Deadline,
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
    from ._driver import Driver, HostHandlers, ProgressCallback
    from ._host import HostBase
    from ._http_openers import HTTPClientSessionHost, SSEClientSessionHost
    from ._http_service import ServerLimits
    from ._oauth import FileTokenStore, MemoryTokenStore, OAuthProvider, TokenStore
    from ._process import StderrTail, drain_stderr, explained_exit, stop_process
    from ._redis import RedisAddress, RedisClient, RedisEventBus, RedisReplayCache
    from ._sender import Sender
    from ._serve_options import ListenOptions
    from ._server import Context, ContextHost, Server, answer_request
    from ._session_store import (
        HandshakeSessionStore,
        MemoryHandshakeSessionStore,
        RedisHandshakeSessionStore,
        ReplayBounds,
        SessionRecord,
        SharedSessions,
        handshake_session_store,
        shared_sessions,
    )
    from ._stores import (
        EventBus,
        EventSubscription,
        MemoryEventBus,
        MemoryReplayCache,
        RedisCommands,
        ReplayCache,
        Stores,
        StoreUnavailable,
        default_replica_id,
        open_stores,
    )
    from ._task_client import TaskCancelled, ToolTask
    from ._task_store import (
        DEFAULT_TASK_LEASE,
        MemorySharedTaskStore,
        RedisSharedTaskStore,
        SharedTaskStore,
        StoredTask,
        TaskConflict,
        TaskStores,
        shared_task_store,
    )
    from ._tasks import CancelTask, TaskStore, task_owner
    from ._transports import Listener, TransportTable, stop_signals

lazy_names(
    __name__,
    {
        ".._tasks": ("TaskLimits",),
        "._backend": (
            "Backend",
            "ByteStream",
            "Deadline",
            "OnBound",
            "Process",
            "Signal",
            "TaskGroup",
            "TimedOut",
            "Timer",
            "TransportBackend",
        ),
        "._client": (
            "ClientAPI",
            "ClientHandlers",
            "Subscription",
        ),
        "._client_options": ("SessionOptions",),
        "._driver": (
            "Driver",
            "HostHandlers",
            "ProgressCallback",
        ),
        "._host": ("HostBase",),
        "._http_service": ("ServerLimits",),
        "._http_openers": ("HTTPClientSessionHost", "SSEClientSessionHost"),
        "._process": (
            "StderrTail",
            "drain_stderr",
            "explained_exit",
            "stop_process",
        ),
        "._redis": (
            "RedisAddress",
            "RedisClient",
            "RedisEventBus",
            "RedisReplayCache",
        ),
        "._sender": ("Sender",),
        "._serve_options": ("ListenOptions",),
        "._server": (
            "Context",
            "ContextHost",
            "Server",
            "answer_request",
        ),
        "._session_store": (
            "HandshakeSessionStore",
            "MemoryHandshakeSessionStore",
            "RedisHandshakeSessionStore",
            "ReplayBounds",
            "SessionRecord",
            "SharedSessions",
            "handshake_session_store",
            "shared_sessions",
        ),
        "._stores": (
            "EventBus",
            "EventSubscription",
            "MemoryEventBus",
            "MemoryReplayCache",
            "RedisCommands",
            "ReplayCache",
            "Stores",
            "StoreUnavailable",
            "default_replica_id",
            "open_stores",
        ),
        "._task_client": (
            "TaskCancelled",
            "ToolTask",
        ),
        "._task_store": (
            "DEFAULT_TASK_LEASE",
            "MemorySharedTaskStore",
            "RedisSharedTaskStore",
            "SharedTaskStore",
            "StoredTask",
            "TaskConflict",
            "TaskStores",
            "shared_task_store",
        ),
        "._tasks": (
            "CancelTask",
            "TaskStore",
            "task_owner",
        ),
        "._transports": (
            "Listener",
            "TransportTable",
            "stop_signals",
        ),
        "._oauth": ("FileTokenStore", "MemoryTokenStore", "OAuthProvider", "TokenStore"),
    },
)

__all__ = [
    "Backend",
    "ByteStream",
    "CancelTask",
    "ClientAPI",
    "ClientHandlers",
    "Context",
    "ContextHost",
    "Driver",
    "HostHandlers",
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuthProvider",
    "ProgressCallback",
    "Server",
    "ServerLimits",
    "Signal",
    "Subscription",
    "TaskGroup",
    "TaskCancelled",
    "TaskLimits",
    "TaskStore",
    "TimedOut",
    "Deadline",
    "ToolTask",
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
    "StderrTail",
    "drain_stderr",
    "explained_exit",
    "stop_process",
    "task_owner",
    "DEFAULT_TASK_LEASE",
    "MemorySharedTaskStore",
    "HandshakeSessionStore",
    "MemoryHandshakeSessionStore",
    "RedisHandshakeSessionStore",
    "ReplayBounds",
    "SessionRecord",
    "SharedSessions",
    "handshake_session_store",
    "shared_sessions",
    "RedisSharedTaskStore",
    "SharedTaskStore",
    "StoredTask",
    "TaskConflict",
    "TaskStores",
    "shared_task_store",
    "unwrap_single_exception",
    "EventBus",
    "EventSubscription",
    "MemoryEventBus",
    "MemoryReplayCache",
    "RedisAddress",
    "RedisClient",
    "RedisCommands",
    "RedisEventBus",
    "RedisReplayCache",
    "ReplayCache",
    "Stores",
    "StoreUnavailable",
    "default_replica_id",
    "open_stores",
    "HostBase",
    "Listener",
    "TransportTable",
    "stop_signals",
]
