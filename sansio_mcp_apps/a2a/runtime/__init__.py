"""The async half of the A2A-to-MCP bridge: the agents reached with the a2a-sdk's
JSON-RPC client over the backend's own TCP (:class:`BackendTransport`), and the MCP
:class:`~sansio_mcp.runtime.Server` with the four tools (:class:`A2ABridge`).
Needs the ``a2a`` extra (``pip install 'sansio-mcp[a2a]'``); the pure half is
:mod:`sansio_mcp_apps.a2a`."""

from ._agents import A2ACallError, AgentFailure, AgentLink, AgentUnreachable
from ._bridge import TASKS_EXTENSION, A2ABridge, ContextRef, TaskRef
from ._handle_store import HandleStore, MemoryHandleStore, RedisHandleStore, handle_store
from ._transport import BackendTransport

__all__ = [
    "TASKS_EXTENSION",
    "A2ABridge",
    "A2ACallError",
    "AgentFailure",
    "AgentLink",
    "AgentUnreachable",
    "BackendTransport",
    "ContextRef",
    "HandleStore",
    "MemoryHandleStore",
    "RedisHandleStore",
    "TaskRef",
    "handle_store",
]
