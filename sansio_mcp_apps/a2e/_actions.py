"""What the bridge host asks its runner to do, and what it hands to the agent.

The host never does I/O: it queues these, and a runner carries them out (see
:meth:`~sansio_mcp_apps.a2e.BridgeHost.actions` and
:meth:`~sansio_mcp_apps.a2e.BridgeHost.drain`).
"""

from __future__ import annotations

from typing import Any

import attrs

from sansio_mcp import ClientSession

from ._messages import A2EMessage
from ._models import MCPServerConfig

__all__ = [
    "Action",
    "ConnectServer",
    "DisconnectServer",
    "FlushServer",
    "Output",
    "SendToAgent",
    "ToolAnswer",
]


@attrs.frozen
class SendToAgent:
    """Send ``message`` to the agent (encode it with :func:`~sansio_mcp_apps.a2e.encode`)."""

    message: A2EMessage


@attrs.frozen
class ConnectServer:
    """Open a transport to a server as ``config`` says and wire ``session`` to it;
    then report :meth:`BridgeHost.connection_opened` (or ``connection_lost``)."""

    connection: int
    server_id: str
    config: MCPServerConfig
    session: ClientSession = attrs.field(eq=False, repr=False)


@attrs.frozen
class FlushServer:
    """The session of ``connection`` has output queued: send it."""

    connection: int


@attrs.frozen
class DisconnectServer:
    """Tear the transport of ``connection`` down (stop the process, close the socket)."""

    connection: int
    server_id: str
    reason: str


Action = SendToAgent | ConnectServer | FlushServer | DisconnectServer


class ToolAnswer:
    """A ``tool/call/resp`` to send, kept as its fields until the message is needed
    (:meth:`BridgeHost.message_of`): an agent in this process wants only the
    ToolResult, and building the message (an id, a frozen object of eight fields)
    was a good part of a bridged call's cost."""

    __slots__ = ("data", "req_id", "ts")

    def __init__(self, req_id: str, data: dict[str, Any], ts: float) -> None:
        self.req_id = req_id
        #: The ToolResult (the message's ``data``).
        self.data = data
        #: The message's ``ts`` and ``created_at``.
        self.ts = ts


#: What :meth:`BridgeHost.drain` gives: an action, or what to send to the agent.
Output = A2EMessage | ToolAnswer | ConnectServer | FlushServer | DisconnectServer
