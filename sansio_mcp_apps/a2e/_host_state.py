"""What every concern of the bridge host shares: its servers, their links, the
queue for the runner, the clock it was given, and the primitives that act on them.

:class:`HostState` is handed to each concern (the link lifecycle, the catalog,
tool calls, the agent's asks, resources and prompts, the registry); none of
them knows the public :class:`~sansio_mcp_apps.a2e.BridgeHost` that routes between
them.  It does no I/O and reads no clock: ``now`` is what the runner passed.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from sansio_mcp import (
    ClientSession,
    ConnectionClosedError,
    ErrorCode,
    LocalProtocolError,
    MCPError,
    ProgressReceived,
    RequestId,
    SessionState,
    UriTemplate,
)

from ._actions import FlushServer, Output, ToolAnswer
from ._failures import Failure, classify, error_message, failed_tool_result, failure_reply
from ._link_states import (
    LINK_TERMINAL_STATES,
    SERVER_STATUS,
    LinkState,
    LinkTrigger,
    next_link_state,
)
from ._messages import (
    A2EMessage,
    MCPServerPush,
    MCPServerRegisterRequest,
    ToolCallRequest,
)
from ._models import (
    A2EErrorCode,
    MCPErrorCode,
    MCPRoot,
    MCPServerConfig,
    MCPServerInfo,
    MCPServerStatus,
)

__all__ = [
    "AgentCall",
    "AgentWait",
    "Call",
    "HostState",
    "ServerLink",
    "ServerRecord",
    "allowed",
]

CONNECTING = MCPServerStatus.CONNECTING.value


class Call:
    """What to do with the outcome of one MCP request the host sent."""

    __slots__ = ("_err_fn", "_ok_fn", "wants_progress")

    #: Made for the agent (it dies with the agent), not for the host's own upkeep.
    for_agent = False

    def __init__(
        self,
        on_ok: Callable[[dict[str, Any]], None],
        on_err: Callable[[MCPError], None],
    ) -> None:
        self._ok_fn = on_ok
        self._err_fn = on_err
        #: Ask the server for progress notifications (only tool calls do).
        self.wants_progress = False

    def ok(self, result: dict[str, Any]) -> None:
        self._ok_fn(result)

    def err(self, error: MCPError) -> None:
        self._err_fn(error)

    def progress(self, event: ProgressReceived) -> None:
        """A progress notification for this request (only tool calls ask for one)."""


class AgentCall(Call):
    """A request made for one of the agent's requests (a read, a listing, a prompt)."""

    __slots__ = ()

    for_agent = True


@attrs.define(eq=False)
class ServerLink:
    """One connection attempt to a server, with its own session."""

    conn: int
    server: ServerRecord
    session: ClientSession
    #: Where it is in its lifecycle; moved only by :meth:`advance`, by the table.
    state: LinkState = LinkState.CONNECTING
    calls: dict[RequestId, Call] = attrs.field(factory=dict)
    connect_deadline: float | None = None
    ping_at: float | None = None
    listen_id: RequestId | None = None
    #: subscribe requests waiting for the listen acknowledgement (modern servers): (uri, answer)
    listen_waiters: list[tuple[str, Callable[[Failure | None], None]]] = attrs.field(factory=list)
    #: The one FlushServer action of this connection (actions are immutable).
    flush: FlushServer = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.flush = FlushServer(self.conn)

    @property
    def closed(self) -> bool:
        """The link has ended (its server has moved on to a new link, or none)."""
        return self.state in LINK_TERMINAL_STATES

    def advance(self, trigger: LinkTrigger) -> LinkState:
        """Take ``trigger`` by :data:`~._link_states.LINK_TRANSITIONS` (raises
        :class:`~._link_states.IllegalLinkTransition` when it has no such move);
        the server's status follows the new state."""
        self.state = next_link_state(self.state, trigger)
        status = SERVER_STATUS.get(self.state)
        if status is not None:
            self.server.status = status
        return self.state


@attrs.define(eq=False)
class ServerRecord:
    """A registered server: its config, what it offers, and its current link."""

    config: MCPServerConfig
    server_id: str
    status: str = CONNECTING
    error: str = ""
    #: The open link (None between attempts): the one whose state is not terminal.
    link: ServerLink | None = None
    last_conn: int | None = None
    mcp_version: str = ""
    server_name: str = ""
    server_version: str = ""
    capabilities: dict[str, Any] = attrs.field(factory=dict)
    connected_at: float = 0.0
    last_ping_ms: float = 0.0
    #: MCP tool objects (allowed ones), in the server's order
    tools: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    resources: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    templates: list[tuple[UriTemplate, dict[str, Any]]] = attrs.field(factory=list)
    prompts: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: sync kinds in flight, and kinds to run again once they end
    syncing: set[str] = attrs.field(factory=set)
    resync: set[str] = attrs.field(factory=set)
    subscriptions: set[str] = attrs.field(factory=set)
    #: the register request waiting for the first ready (None: registered from config)
    registering: MCPServerRegisterRequest | None = None
    reconnect_at: float | None = None
    attempts: int = 0

    def allows_tool(self, name: str) -> bool:
        return allowed(self.config.tool_allow_list, name)

    def allows_resource(self, uri: str) -> bool:
        return allowed(self.config.resource_allow_list, uri)

    @property
    def ready(self) -> bool:
        link = self.link
        return link is not None and link.state is LinkState.READY

    @property
    def given_up(self) -> bool:
        """Down, with no reconnect coming (``auto_reconnect`` off, or it could not
        even start one): only registering it again brings it back."""
        return self.link is None and self.reconnect_at is None


@attrs.define(eq=False)
class AgentWait:
    """A request sent to the agent on behalf of a server (sampling, roots, elicitation)."""

    kind: str
    server_id: str
    link: ServerLink
    mcp_request_id: str
    deliver: Callable[[dict[str, Any]], None]
    fail: Callable[[MCPError], None]
    deadline: float


def allowed(allow_list: Sequence[str], value: str) -> bool:
    """Empty: everything.  Entries are exact values or ``fnmatch`` patterns (``*``, ``?``)."""
    if not allow_list:
        return True
    return any(value == entry or fnmatch.fnmatchcase(value, entry) for entry in allow_list)


class HostState:
    """The bridge host's shared state and the primitives every concern uses."""

    def __init__(
        self,
        *,
        roots: list[MCPRoot] | None,
        elicitation: bool,
        ping_interval: float | None,
        ping_timeout: float,
        connect_timeout: float,
        reconnect_base: float,
        reconnect_max: float,
        max_pages: int,
        client_info: dict[str, Any],
        new_id: Callable[[], str],
        rng: random.Random,
    ) -> None:
        self.roots = roots
        self.elicitation = elicitation
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.connect_timeout = connect_timeout
        self.reconnect_base = reconnect_base
        self.reconnect_max = reconnect_max
        self.max_pages = max_pages
        self.client_info = client_info
        self.new_id = new_id
        self.rng = rng
        #: The time the runner passed with what it is handling now.
        self.now = 0.0
        self.servers: dict[str, ServerRecord] = {}
        #: Open links by connection number (a link leaves when it ends).
        self.links: dict[int, ServerLink] = {}
        self.next_conn = 1
        self.queued: list[Output] = []
        #: Connections whose session queued output since the last :meth:`finish`.
        self.dirty: set[int] = set()
        #: What servers asked of the agent, by the id of the message that asked.
        self.waits: dict[str, AgentWait] = {}
        #: Tool calls running as tasks upstream, by (connection, task id).
        self.followed_tasks: dict[tuple[int, str], Any] = {}
        #: When each followed 2026-07-28 task is polled next (same keys).
        self.task_polls: dict[tuple[int, str], float] = {}
        self.earliest_added: float | None = None
        self.agent_closed = False
        self.internal_errors: list[str] = []

    # Output ------------------------------------------------------------------------------

    def finish(self) -> None:
        """Queue one FlushServer for each connection that has output, in order."""
        dirty = self.dirty
        if not dirty:
            return
        links = self.links
        for conn in sorted(dirty) if len(dirty) > 1 else dirty:
            link = links.get(conn)
            if link is not None:
                self.queued.append(link.flush)
        dirty.clear()

    def touch(self, link: ServerLink) -> None:
        self.dirty.add(link.conn)

    def envelope(self) -> dict[str, Any]:
        return {"id": self.new_id(), "ts": self.now}

    def send(self, message: A2EMessage) -> None:
        self.queued.append(message)

    def push(self, link: ServerLink, method: str, params: dict[str, Any]) -> None:
        """Forward a server's notification to the agent."""
        self.send(
            MCPServerPush(
                **self.envelope(), server_id=link.server.server_id, method=method, params=params
            )
        )

    def added(self, deadline: float) -> None:
        """Note a deadline armed now (see ``BridgeHost.deadline_added``)."""
        if self.earliest_added is None or deadline < self.earliest_added:
            self.earliest_added = deadline

    def start_timeout(self, config: MCPServerConfig) -> float:
        return float(min(config.timeout, self.connect_timeout))

    # Failures ----------------------------------------------------------------------------

    def send_error(self, req_id: str, failure: Failure) -> None:
        self.send(error_message(req_id, failure, self.envelope()))

    def reply_failure(self, request: A2EMessage, failure: Failure) -> None:
        """Answer a failed request of the agent (see :func:`~._failures.failure_reply`)."""
        if isinstance(request, ToolCallRequest):
            result = failed_tool_result(request.tool_name, failure, 0.0)
            self.queued.append(ToolAnswer(request.id, result, self.now))
            return
        self.send(failure_reply(request, failure, self.envelope()))

    def bug(self, type_name: str, exc: Exception) -> Failure:
        """An exception in the host's own code while handling ``type_name`` from the
        agent: recorded, and answered as ``runtime_error``."""
        self.internal_errors.append(f"{type_name}: {type(exc).__name__}: {exc}")
        return Failure(A2EErrorCode.RUNTIME_ERROR, f"the bridge failed on {type_name}: {exc}")

    def classify(
        self,
        error: MCPError,
        method: str,
        server: ServerRecord | None,
        *,
        timeout: float | None = None,
        uri: str | None = None,
    ) -> Failure:
        """An MCP failure as the A2E code that names it (``timeout``: the limit the
        request had, when not the server's own; ``uri``: the resource it was about)."""
        if server is None:
            return classify(error, method, None, uri=uri)
        limit = server.config.timeout if timeout is None else timeout
        return classify(error, method, server.server_id, limit, uri=uri)

    def fail_with(
        self, request: A2EMessage, server: ServerRecord, method: str, *, uri: str | None = None
    ) -> Callable[[MCPError], None]:
        def fail(error: MCPError) -> None:
            self.reply_failure(request, self.classify(error, method, server, uri=uri))

        return fail

    def not_found(self, server_id: str) -> Failure:
        return Failure(
            MCPErrorCode.MCP_SERVER_NOT_FOUND,
            f"no server {server_id!r} is registered",
            {"server_id": server_id},
        )

    def unavailable(self, server: ServerRecord) -> Failure:
        why = f": {server.error}" if server.error else ""
        return Failure(
            MCPErrorCode.MCP_SERVER_UNAVAILABLE,
            f"server {server.server_id!r} is {server.status}{why}",
            {"server_id": server.server_id, "status": server.status},
        )

    def info(self, server: ServerRecord) -> MCPServerInfo:
        return MCPServerInfo(
            server_id=server.server_id,
            name=server.config.name,
            transport=server.config.transport,
            status=server.status,
            mcp_version=server.mcp_version,
            server_name=server.server_name,
            server_version=server.server_version,
            tools_count=len(server.tools),
            resources_count=len(server.resources),
            prompts_count=len(server.prompts),
            last_ping_ms=server.last_ping_ms,
            error=server.error,
            connected_at=server.connected_at,
        )

    # Calls to servers --------------------------------------------------------------------

    def call(
        self,
        link: ServerLink,
        method: str,
        params: dict[str, Any] | None,
        on_ok: Callable[[dict[str, Any]], None],
        on_err: Callable[[MCPError], None],
        *,
        timeout: float | None = -1.0,
        for_agent: bool = False,
    ) -> RequestId | None:
        """Send an MCP request on ``link`` (``timeout`` -1: the server's own)."""
        if timeout is not None and timeout < 0:
            timeout = float(link.server.config.timeout)
        call = (AgentCall if for_agent else Call)(on_ok, on_err)
        return self.start_call(link, method, params, call, timeout)

    def start_call(
        self,
        link: ServerLink,
        method: str,
        params: dict[str, Any] | None,
        call: Call,
        timeout: float | None,
    ) -> RequestId | None:
        """Send ``method``; ``call`` gets the outcome (at once when it cannot go)."""
        session = link.session
        if session.state is SessionState.CLOSED:
            call.err(ConnectionClosedError(message="the connection is closed"))
            return None
        try:
            request_id = session.send_request(
                method,
                params,
                now=self.now,
                timeout=timeout,
                progress=call.wants_progress,
            )
        except LocalProtocolError as exc:
            call.err(MCPError(ErrorCode.METHOD_NOT_FOUND, str(exc), {"local": True}))
            return None
        link.calls[request_id] = call
        if timeout is not None:
            self.added(self.now + timeout)
        self.dirty.add(link.conn)
        return request_id
