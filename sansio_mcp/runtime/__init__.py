"""The backend-neutral async layer, above the pure state machines of
:mod:`sansio_mcp` and below the Trio and asyncio adapters.

Here live the session hosts, the :class:`Driver`, the declarative
:class:`Server` and its :class:`Context`, the high-level :class:`ClientAPI`
and :class:`ClientHandlers`, and the A2E client and bridge runner
(:mod:`sansio_mcp.runtime.a2e`).  They await only the :class:`Backend`
primitives (``_backend``) and import no event loop.
"""

from .._tasks import TaskLimits
from ._backend import Backend, ByteStream, Signal, TaskGroup, TimedOut, TransportBackend
from ._client import ClientAPI, ClientHandlers, Subscription
from ._driver import Driver, ProgressCallback
from ._http_service import ServerLimits
from ._oauth import FileTokenStore, MemoryTokenStore, OAuthProvider, TokenStore
from ._server import Context, Server, answer_request
from ._tasks import CancelTask

__all__ = [
    "Backend",
    "ByteStream",
    "CancelTask",
    "ClientAPI",
    "ClientHandlers",
    "Context",
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
]
