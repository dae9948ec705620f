"""The MCP bridge host, sans-IO: A2E to one agent, MCP to many servers.

:class:`BridgeHost` never does I/O and never reads a clock.  A runner feeds
it what arrived (A2E input from the agent; "this connection has input" for a
server, whose :class:`~sansio_mcp.ClientSession` the host owns) together with
the current time, and executes the :class:`Action` objects it queues:
:class:`SendToAgent`, :class:`ConnectServer`, :class:`FlushServer` and
:class:`DisconnectServer` (a runner may take them as :meth:`BridgeHost.drain` gives
them instead).  Timers are :meth:`BridgeHost.next_deadline` /
:meth:`BridgeHost.handle_timer`, as for a session.

One clock serves everything: ``now`` is seconds since the epoch (the runner
passes the wall-clock time), so it stamps ``ts`` and measures deadlines alike.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .._errors import (
    ConnectionClosedError,
    ErrorCode,
    HTTPStatusError,
    InputRoundsExceeded,
    LocalProtocolError,
    MCPError,
    RequestTimeout,
)
from .._events import (
    CancelRequested,
    ConnectionClosed,
    Event,
    InputRequired,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
)
from .._jsonrpc import RequestId
from .._modern import listen_filter
from .._ndjson import NEED_DATA
from .._session import ClientSession
from .._state import SessionState
from .._uritemplate import UriTemplate
from .._versions import ALL_REVISIONS, HANDSHAKE_REVISIONS, MODERN_REVISIONS
from ._codec import A2EFramer, DecodeError, adopt, decode, decode_text
from ._fields import FieldProblem, TooDeep, copy_json
from ._messages import (
    AGENT_TO_HOST,
    BOTH,
    A2EError,
    A2EMessage,
    ElicitRequest,
    ElicitResponse,
    HandshakeRequest,
    HandshakeResponse,
    MCPPromptGetRequest,
    MCPPromptGetResponse,
    MCPPromptListRequest,
    MCPPromptListResponse,
    MCPResourceListRequest,
    MCPResourceListResponse,
    MCPResourceReadRequest,
    MCPResourceReadResponse,
    MCPResourceSubscribeRequest,
    MCPResourceSubscribeResponse,
    MCPRootsListRequest,
    MCPRootsListResponse,
    MCPSamplingResponse,
    MCPServerListRequest,
    MCPServerListResponse,
    MCPServerPush,
    MCPServerRegisterRequest,
    MCPServerRegisterResponse,
    MCPServerUnregisterRequest,
    MCPServerUnregisterResponse,
    Ping,
    Pong,
    ToolCallRequest,
    ToolCallResponse,
    ToolEvent,
    ToolListRequest,
    ToolListResponse,
    new_message_id,
)
from ._models import (
    A2EErrorCode,
    MCPErrorCode,
    MCPRoot,
    MCPServerConfig,
    MCPServerInfo,
    MCPServerStatus,
    MCPTransport,
    is_retryable,
)
from ._translate import (
    decode_cursor,
    encode_cursor,
    prompt_arguments,
    prompt_from_mcp,
    prompt_message_from_mcp,
    resource_content_from_mcp,
    resource_from_mcp,
    roots_problem,
    roots_result,
    sampling_request_from_mcp,
    sampling_result_from_a2e,
    split_namespaced,
    template_from_mcp,
    tool_definition,
    tool_result,
)

__all__ = [
    "Action",
    "BRIDGE_INFO",
    "BridgeHost",
    "ConnectServer",
    "DisconnectServer",
    "FlushServer",
    "SendToAgent",
    "ToolAnswer",
]

BRIDGE_INFO: dict[str, Any] = {"name": "sansio-mcp-a2e-bridge", "version": "0.1.0"}
CAPABILITY = "mcp"

CONNECTING = MCPServerStatus.CONNECTING.value
READY = MCPServerStatus.READY.value
ERROR = MCPServerStatus.ERROR.value
DISCONNECTED = MCPServerStatus.DISCONNECTED.value
_STATUSES = (CONNECTING, READY, ERROR, DISCONNECTED)


# Actions ---------------------------------------------------------------------------------


@attrs.frozen
class SendToAgent:
    """Send ``message`` to the agent (encode it with :func:`~sansio_mcp.a2e.encode`)."""

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


# Internal state --------------------------------------------------------------------------


@attrs.frozen
class _Failure:
    code: str
    message: str
    detail: dict[str, Any] = attrs.field(factory=dict)

    @property
    def retryable(self) -> bool:
        return is_retryable(self.code)


class _Refused(Exception):
    def __init__(self, failure: _Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class _Call:
    """What to do with the outcome of one MCP request the host sent."""

    __slots__ = ("_err_fn", "_ok_fn", "_progress_fn", "wants_progress")

    #: Made for the agent (it dies with the agent), not for the host's own upkeep.
    for_agent = False

    def __init__(
        self,
        on_ok: Callable[[dict[str, Any]], None],
        on_err: Callable[[MCPError], None],
        on_progress: Callable[[ProgressReceived], None] | None = None,
    ) -> None:
        self._ok_fn = on_ok
        self._err_fn = on_err
        self._progress_fn = on_progress
        #: Ask the server for progress notifications.
        self.wants_progress = on_progress is not None

    def ok(self, result: dict[str, Any]) -> None:
        self._ok_fn(result)

    def err(self, error: MCPError) -> None:
        self._err_fn(error)

    def progress(self, event: ProgressReceived) -> None:
        if self._progress_fn is not None:
            self._progress_fn(event)


class _AgentCall(_Call):
    """A request made for one of the agent's requests (a read, a listing, a prompt)."""

    __slots__ = ()

    for_agent = True


class _ToolCall(_Call):
    """A ``tool/call/req`` (or the same handed over as its fields) from routing to
    its answer: the MCP outcome becomes the ToolResult of a ``tool/call/resp``,
    progress becomes ``tool/event`` messages.  (One object per call, not three
    closures: this is the bridge's hot path.)"""

    __slots__ = ("host", "req_id", "seq", "server", "started", "tool_name")

    for_agent = True

    def __init__(self, host: BridgeHost, req_id: str, tool_name: str, streaming: bool) -> None:
        self.host = host
        self.req_id = req_id
        self.tool_name = tool_name
        # Progress only for an agent that wants events (A2E's own flag for that):
        # a progress token costs the server and the bridge on every call.
        self.wants_progress = streaming
        self.server: _Server | None = None
        self.started = host._now
        self.seq = 0

    def start(self, arguments: dict[str, Any], timeout: int) -> None:
        """Route the call and send ``tools/call``; raises :class:`_Refused`."""
        host = self.host
        name = self.tool_name
        parsed = split_namespaced(name)
        server = host._servers.get(parsed[0]) if parsed else None
        if parsed is None or server is None:
            raise _Refused(
                _Failure(
                    MCPErrorCode.MCP_TOOL_NOT_FOUND,
                    f"no MCP server offers a tool named {name!r}",
                    {"tool_name": name},
                )
            )
        tool_name = parsed[1]
        if tool_name not in server.tools:
            allowed = server.allows_tool(tool_name)
            raise _Refused(
                _Failure(
                    MCPErrorCode.MCP_TOOL_NOT_FOUND,
                    f"server {server.server_id!r} has no tool {tool_name!r}"
                    + ("" if allowed else " (not on its tool_allow_list)"),
                    {"server_id": server.server_id, "tool_name": name},
                )
            )
        link = server.link
        if link is None or server.status != READY:
            raise _Refused(host._unavailable(server))
        self.server = server
        limit = float(server.config.timeout)
        if timeout > 0:
            limit = min(limit, timeout)  # (compared as numbers: an int may exceed any float)
        # The arguments are the host's own (see receive_agent_message, receive_tool_call).
        host._start_call(
            link, "tools/call", {"name": tool_name, "arguments": arguments}, self, limit
        )

    def ok(self, result: dict[str, Any]) -> None:
        host = self.host
        now = host._now
        data = tool_result(self.tool_name, result, _ms(now - self.started))
        host.queued.append(ToolAnswer(self.req_id, data, now))

    def err(self, error: MCPError) -> None:
        self.fail(self.host._classify(error, "tools/call", self.server))

    def fail(self, failure: _Failure) -> None:
        """Answer with a failed ToolResult (the code in ``error_code``)."""
        host = self.host
        now = host._now
        result = {
            "success": False,
            "tool_name": self.tool_name,
            "data": None,
            "summary": "",
            "truncated": False,
            "exit_code": None,
            "error": failure.message,
            "error_code": str(failure.code),
            "duration_ms": _ms(now - self.started),
            "events": [],
            "retryable": failure.retryable,
        }
        if failure.detail:
            result["detail"] = dict(failure.detail)
        host.queued.append(ToolAnswer(self.req_id, result, now))

    def progress(self, event: ProgressReceived) -> None:
        self.seq += 1
        assert self.server is not None  # progress only comes for a call that was sent
        data: dict[str, Any] = {"progress": event.progress, "server_id": self.server.server_id}
        if event.total is not None:
            data["total"] = event.total
        if event.message is not None:
            data["message"] = event.message
        host = self.host
        host._send(
            ToolEvent(
                **host._envelope(), kind="progress", req_id=self.req_id, data=data, seq=self.seq
            )
        )


def _ms(seconds: float) -> float:
    """A duration in milliseconds, to the microsecond (round(x, 3) without its
    decimal rounding, which costs more than the rest of a ToolResult)."""
    return round(seconds * 1_000_000) / 1000


@attrs.define(eq=False)
class _Link:
    """One connection attempt to a server, with its own session."""

    conn: int
    server: _Server
    session: ClientSession
    calls: dict[RequestId, _Call] = attrs.field(factory=dict)
    connect_deadline: float | None = None
    started: bool = False
    ping_at: float | None = None
    ping_id: RequestId | None = None
    listen_id: RequestId | None = None
    #: subscribe requests waiting for the listen acknowledgement (modern servers): (uri, answer)
    listen_waiters: list[tuple[str, Callable[[_Failure | None], None]]] = attrs.field(factory=list)
    #: The one FlushServer action of this connection (actions are immutable).
    flush: FlushServer = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.flush = FlushServer(self.conn)


@attrs.define(eq=False)
class _Server:
    config: MCPServerConfig
    server_id: str
    status: str = CONNECTING
    error: str = ""
    link: _Link | None = None
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
    ever_ready: bool = False
    removed: bool = False
    reconnect_at: float | None = None
    attempts: int = 0

    def allows_tool(self, name: str) -> bool:
        return _allowed(self.config.tool_allow_list, name)

    def allows_resource(self, uri: str) -> bool:
        return _allowed(self.config.resource_allow_list, uri)

    @property
    def ready(self) -> bool:
        return self.status == READY and self.link is not None


@attrs.define(eq=False)
class _AgentWait:
    """A request sent to the agent on behalf of a server (sampling, roots, elicitation)."""

    kind: str
    server_id: str
    link: _Link
    mcp_request_id: str
    deliver: Callable[[dict[str, Any]], None]
    fail: Callable[[MCPError], None]
    deadline: float


def _allowed(allow_list: Sequence[str], value: str) -> bool:
    """Empty: everything.  Entries are exact values or ``fnmatch`` patterns (``*``, ``?``)."""
    if not allow_list:
        return True
    return any(value == entry or fnmatch.fnmatchcase(value, entry) for entry in allow_list)


def _refusal(kind: str, message: str) -> MCPError:
    """The agent would not (or could not) answer a server's request.

    Sampling refusals carry -1 (the MCP spec's "user rejected sampling
    request") and become ``mcp_sampling_refused``; the others are internal
    errors for the server and ``mcp_capability_missing`` for the agent.
    """
    if kind in ("sample", "sampling", "sampling/createMessage"):
        return MCPError(-1, message, {"a2e_code": MCPErrorCode.MCP_SAMPLING_REFUSED.value})
    return MCPError(
        ErrorCode.INTERNAL_ERROR, message, {"a2e_code": MCPErrorCode.MCP_CAPABILITY_MISSING.value}
    )


class BridgeHost:
    """The MCP bridge: A2E in and out on one side, MCP sessions on the other.

    ``roots`` are the roots every server that asks is told at once; None
    means the agent is asked (``mcp/root/list/req``).  ``elicitation``
    advertises MCP elicitation and forwards it through the ``x-mcp/elicit``
    extension pair; off, servers are told the bridge cannot elicit.
    ``ping_interval`` (seconds, None: never) pings ready servers (``ping``;
    ``server/discover`` on 2026-07-28).  ``new_id`` makes message ids and
    ``rng`` jitters the reconnect backoff (both injectable for tests).
    """

    def __init__(
        self,
        *,
        roots: Sequence[MCPRoot | Mapping[str, Any]] | None = None,
        elicitation: bool = False,
        ping_interval: float | None = 30.0,
        ping_timeout: float = 10.0,
        connect_timeout: float = 30.0,
        reconnect_base: float = 0.5,
        reconnect_max: float = 30.0,
        max_pages: int = 100,
        client_info: dict[str, Any] | None = None,
        new_id: Callable[[], str] = new_message_id,
        rng: random.Random | None = None,
    ) -> None:
        self.roots: list[MCPRoot] | None = None if roots is None else [_as_root(r) for r in roots]
        if self.roots is not None:
            problem = roots_problem(self.roots)
            if problem:
                raise ValueError(problem)
        self.elicitation = elicitation
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.connect_timeout = connect_timeout
        self.reconnect_base = reconnect_base
        self.reconnect_max = reconnect_max
        self.max_pages = max_pages
        self.client_info = dict(client_info or BRIDGE_INFO)
        self._new_id = new_id
        self._rng = rng or random.Random()
        self._now = 0.0
        self._servers: dict[str, _Server] = {}
        self._links: dict[int, _Link] = {}
        self._next_conn = 1
        #: What is queued for the runner, in order (take it with :meth:`drain` or
        #: :meth:`actions`; a runner may look whether there is any without a call).
        self.queued: list[Output] = []
        self._dirty: set[int] = set()
        self._waits: dict[str, _AgentWait] = {}
        self._framer = A2EFramer()
        self._handlers = self._handler_table()
        self._earliest_added: float | None = None
        #: Set once the agent's input ended.
        self.agent_closed = False
        #: Exceptions the host caught in its own code (answered as runtime_error or
        #: dropped); empty unless something is wrong with the bridge itself.
        self.internal_errors: list[str] = []

    # Public: the agent side --------------------------------------------------------------

    def receive_agent_data(self, data: bytes | bytearray, now: float) -> None:
        """Bytes of the agent's NDJSON stream; ``b""`` means it ended."""
        self._now = now
        try:
            for item in self._framer.feed(data):
                self._on_agent(item)
            if not data:
                self._agent_gone()
        finally:
            self._finish()

    def receive_agent_text(self, text: str | bytes, now: float) -> None:
        """One whole A2E message as JSON text (a WebSocket text frame)."""
        self._now = now
        try:
            self._on_agent(decode_text(text))
        finally:
            self._finish()

    def receive_agent_message(self, message: A2EMessage | Mapping[str, Any], now: float) -> None:
        """One A2E message handed over in process, as an object or a JSON object.

        It is read by the rules of the codec (the same errors as on a byte
        stream) and copied first (:func:`~sansio_mcp.a2e.adopt`), so the host
        keeps nothing the sender may change later.  In a message object, a value
        that cannot be encoded raises ``TypeError``/``ValueError``, as encoding
        it would; in a JSON object it is answered as ``parse_error``.
        """
        self._now = now
        try:
            if isinstance(message, A2EMessage):
                self._on_agent(adopt(message))
            else:
                try:
                    obj = copy_json(dict(message))
                except TooDeep as exc:
                    self._on_agent(DecodeError(A2EErrorCode.PARSE_ERROR, str(exc)))
                except (TypeError, ValueError) as exc:
                    # No JSON text has such a value: answered as text that does not parse.
                    self._on_agent(
                        DecodeError(A2EErrorCode.PARSE_ERROR, f"the message is not JSON: {exc}")
                    )
                else:
                    self._on_agent(decode(obj))
        finally:
            self._finish()

    def receive_tool_call(
        self,
        req_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        timeout: int,
        now: float,
        *,
        streaming: bool = False,
    ) -> None:
        """A ``tool/call/req`` handed over in process as its fields (an in-process
        agent's hot path): handled as that message would be, with the same routing,
        answers and errors, but no message object on the way in.

        The caller vouches for what :func:`~sansio_mcp.a2e.adopt` would otherwise
        check and copy: ``req_id`` is a fresh, non-empty id, ``tool_name`` a
        ``str``, ``timeout`` an ``int``, and ``arguments`` a dict of JSON values
        within the nesting limit that nobody else holds.  The answer is queued as
        a :class:`ToolAnswer`.
        """
        self._now = now
        try:
            call = _ToolCall(self, req_id, tool_name, streaming)
            try:
                call.start(arguments, timeout)
            except _Refused as refused:
                call.fail(refused.failure)
            except Exception as exc:  # a bug here must not take the bridge down
                call.fail(self._bug(ToolCallRequest.TYPE, exc))
        finally:
            if self._dirty:
                self._finish()

    def agent_disconnected(self, now: float) -> None:
        """The agent went away: what servers asked of it is refused."""
        self._now = now
        try:
            self._agent_gone()
        finally:
            self._finish()

    def agent_connected(self, now: float) -> None:
        """A (new) agent is attached (WebSocket): input may flow again."""
        self._now = now
        self.agent_closed = False
        self._framer = A2EFramer()

    # Public: the server side -----------------------------------------------------------

    def register(self, config: MCPServerConfig | Mapping[str, Any], now: float) -> str:
        """Register a server without an agent request (a config file); returns its id.

        Raises ``ValueError`` for an invalid config.  Such a server is kept
        (and retried, per ``auto_reconnect``) even when its first connection fails.
        """
        self._now = now
        try:
            parsed = self._parse_config(config)
            if isinstance(parsed, _Failure):
                raise ValueError(parsed.message)
            return self._add_server(parsed, None).server_id
        finally:
            self._finish()

    def connection_opened(self, connection: int, now: float) -> None:
        """The transport of ``connection`` is up: the MCP session starts."""
        self._now = now
        try:
            link = self._links.get(connection)
            if link is None or link.started:
                return
            link.started = True
            link.connect_deadline = None
            config = link.server.config
            try:
                timeout = self._start_timeout(config)
                start_id = link.session.start(now=now, timeout=timeout)
                self._added(now + timeout)
            except LocalProtocolError as exc:
                self._drop_link(link, f"the session could not start: {exc}", status=ERROR)
                return
            link.calls[start_id] = _Call(
                lambda result: self._on_started(link),
                lambda error: self._on_start_failed(link, error),
            )
            self._touch(link)
        finally:
            self._finish()

    def connection_input(self, connection: int, now: float) -> None:
        """The session of ``connection`` was fed input (or closed): act on its events."""
        self._now = now
        try:
            link = self._links.get(connection)
            if link is not None:
                self._pump(link)
        finally:
            if self._dirty:  # an answer to a call makes nothing to send: no call more
                self._finish()

    def connection_lost(self, connection: int, reason: str, now: float) -> None:
        """The transport of ``connection`` failed or ended (or never came up)."""
        self._now = now
        try:
            link = self._links.get(connection)
            if link is not None:
                self._drop_link(
                    link,
                    reason or "the connection ended",
                    status=DISCONNECTED if link.started else ERROR,
                )
                return
            # Already handled (the session saw its end first): keep the better reason.
            for server in self._servers.values():
                if server.last_conn == connection and server.link is None and reason:
                    if server.status in (DISCONNECTED, ERROR):
                        server.error = reason
        finally:
            self._finish()

    def close(self, now: float) -> None:
        """Disconnect every server (the bridge is stopping)."""
        self._now = now
        try:
            for server in list(self._servers.values()):
                self._remove(server, "the bridge is shutting down")
        finally:
            self._finish()

    # Public: time and output -----------------------------------------------------------

    def next_deadline(self) -> float | None:
        deadlines: list[float] = []
        for link in self._links.values():
            session_deadline = link.session.next_deadline()
            for value in (session_deadline, link.connect_deadline, link.ping_at):
                if value is not None:
                    deadlines.append(value)
        deadlines.extend(
            s.reconnect_at for s in self._servers.values() if s.reconnect_at is not None
        )
        deadlines.extend(w.deadline for w in self._waits.values())
        return min(deadlines) if deadlines else None

    def deadline_added(self) -> float | None:
        """The earliest deadline armed since the last call (None: none).

        Every deadline that can be earlier than :meth:`next_deadline` was when
        last asked is armed here (the sessions' own re-arming only happens on
        :meth:`handle_timer` and never moves a deadline earlier), so a runner
        re-arms its timer when this is earlier than what it waits for, without
        recomputing :meth:`next_deadline` after every input.
        """
        earliest, self._earliest_added = self._earliest_added, None
        return earliest

    def _added(self, deadline: float) -> None:
        if self._earliest_added is None or deadline < self._earliest_added:
            self._earliest_added = deadline

    def handle_timer(self, now: float) -> None:
        self._now = now
        try:
            for link in list(self._links.values()):
                if link.connect_deadline is not None and now >= link.connect_deadline:
                    self._drop_link(
                        link,
                        f"no connection within {self._start_timeout(link.server.config):g} s",
                        status=ERROR,
                    )
                    continue
                if link.session.handle_timer(now):
                    self._touch(link)  # notifications/cancelled for what expired
                self._pump(link)
                if (
                    link.ping_at is not None
                    and now >= link.ping_at
                    and link.server.link is link
                    and link.server.ready
                ):
                    self._ping(link)
            for server in list(self._servers.values()):
                if server.reconnect_at is not None and now >= server.reconnect_at:
                    server.reconnect_at = None
                    self._connect(server)
            for key, wait in list(self._waits.items()):
                if now >= wait.deadline:
                    del self._waits[key]
                    wait.fail(
                        RequestTimeout(
                            message=f"the agent did not answer the {wait.kind} request in time"
                        )
                    )
                    self._touch(wait.link)
        finally:
            self._finish()

    def actions(self) -> list[Action]:
        """Take the queued actions, in order."""
        return [
            item
            if isinstance(item, ConnectServer | FlushServer | DisconnectServer)
            else SendToAgent(self.message_of(item))
            for item in self.drain()
        ]

    def drain(self) -> list[Output]:
        """Take the queued actions as a runner carries them out (the list of
        :meth:`actions` without its wrapping): what goes to the agent is the
        message itself rather than a :class:`SendToAgent`, or a :class:`ToolAnswer`
        (a runner that needs the message asks :meth:`message_of`)."""
        out, self.queued = self.queued, []
        return out

    def message_of(self, item: A2EMessage | ToolAnswer) -> A2EMessage:
        """The message to send for what :meth:`drain` gave."""
        if isinstance(item, ToolAnswer):
            return ToolCallResponse(
                id=self._new_id(),
                ts=item.ts,
                req_id=item.req_id,
                data=item.data,
                created_at=item.ts,
            )
        return item

    # Public: inspection ------------------------------------------------------------------

    def server_infos(self) -> list[MCPServerInfo]:
        return [self._info(s) for s in self._servers.values()]

    def server_info(self, server_id: str) -> MCPServerInfo | None:
        server = self._servers.get(server_id)
        return self._info(server) if server is not None else None

    def tool_definitions(self) -> list[dict[str, Any]]:
        # From a copy: the agent may change what it is given without changing the host.
        return [
            tool_definition(server.server_id, copy_json(tool))
            for server in self._servers.values()
            for tool in server.tools.values()
        ]

    # Plumbing ----------------------------------------------------------------------------

    def _finish(self) -> None:
        dirty = self._dirty
        if not dirty:
            return
        links = self._links
        for conn in sorted(dirty) if len(dirty) > 1 else dirty:
            link = links.get(conn)
            if link is not None:
                self.queued.append(link.flush)
        dirty.clear()

    def _touch(self, link: _Link) -> None:
        self._dirty.add(link.conn)

    def _envelope(self) -> dict[str, Any]:
        return {"id": self._new_id(), "ts": self._now}

    def _send(self, message: A2EMessage) -> None:
        self.queued.append(message)

    def _start_timeout(self, config: MCPServerConfig) -> float:
        return float(min(config.timeout, self.connect_timeout))

    # Agent input -------------------------------------------------------------------------

    def _on_agent(self, item: A2EMessage | DecodeError) -> None:
        if isinstance(item, DecodeError):
            self._send(item.to_error(**self._envelope()))
            return
        if item.DIRECTION not in (AGENT_TO_HOST, BOTH):
            self._send_error(
                item.id,
                _Failure(
                    A2EErrorCode.INVALID_MESSAGE,
                    f"{item.type} is sent by the host, not the agent",
                    {"type": item.type},
                ),
            )
            return
        handler = self._handlers.get(type(item))
        if handler is None:
            return  # pong, and the like: nothing to do
        try:
            handler(item)
        except _Refused as refused:
            self._reply_failure(item, refused.failure)
        except Exception as exc:  # a bug here must not take the bridge down
            self._reply_failure(item, self._bug(item.type, exc))

    def _bug(self, type_name: str, exc: Exception) -> _Failure:
        """An exception in the host's own code while handling ``type_name`` from the
        agent: recorded, and answered as ``runtime_error``."""
        self.internal_errors.append(f"{type_name}: {type(exc).__name__}: {exc}")
        return _Failure(A2EErrorCode.RUNTIME_ERROR, f"the bridge failed on {type_name}: {exc}")

    def _handler_table(self) -> dict[type[A2EMessage], Callable[[Any], None]]:
        return {
            MCPServerListRequest: self._on_server_list,
            MCPServerRegisterRequest: self._on_register,
            MCPServerUnregisterRequest: self._on_unregister,
            MCPResourceListRequest: self._on_resource_list,
            MCPResourceReadRequest: self._on_resource_read,
            MCPResourceSubscribeRequest: self._on_subscribe,
            MCPPromptListRequest: self._on_prompt_list,
            MCPPromptGetRequest: self._on_prompt_get,
            MCPSamplingResponse: self._on_sample_response,
            MCPRootsListResponse: self._on_roots_response,
            ElicitResponse: self._on_elicit_response,
            ToolListRequest: self._on_tool_list,
            ToolCallRequest: self._on_tool_call,
            Ping: self._on_ping,
            HandshakeRequest: self._on_handshake,
            A2EError: self._on_agent_error,
        }

    def _send_error(self, req_id: str, failure: _Failure) -> None:
        self._send(
            A2EError(
                **self._envelope(),
                req_id=req_id,
                code=str(failure.code),
                message=failure.message,
                detail=dict(failure.detail),
                retryable=failure.retryable,
                capability_name=CAPABILITY,
            )
        )

    def _reply_failure(self, request: A2EMessage, failure: _Failure) -> None:
        """Answer a failed request: in its own response type where the spec gives it
        an ``ok``/``error`` field (with the code in the extension fields
        ``error_code`` and ``retryable``), otherwise with an ``error`` message."""
        if isinstance(request, ToolCallRequest):
            _ToolCall(self, request.id, request.tool_name, request.streaming).fail(failure)
            return
        code = str(failure.code)
        ext = {"error_code": code, "retryable": failure.retryable}
        if failure.detail:
            ext["detail"] = dict(failure.detail)
        env = self._envelope()
        rid = request.id
        server_id = str(failure.detail.get("server_id", ""))
        if isinstance(request, MCPServerRegisterRequest):
            server = failure.detail.get("server")
            if "detail" in ext:
                ext["detail"] = _without(failure.detail, "server")
            self._send(
                MCPServerRegisterResponse(
                    **env,
                    req_id=rid,
                    ok=False,
                    server=dict(server) if isinstance(server, dict) else {},
                    error=failure.message,
                    extra=ext,
                )
            )
        elif isinstance(request, MCPServerUnregisterRequest):
            self._send(
                MCPServerUnregisterResponse(
                    **env,
                    req_id=rid,
                    ok=False,
                    server_id=request.server_id,
                    extra={"error": failure.message, **ext},
                )
            )
        elif isinstance(request, MCPResourceReadRequest):
            self._send(
                MCPResourceReadResponse(
                    **env, req_id=rid, server_id=server_id, error=failure.message, extra=ext
                )
            )
        elif isinstance(request, MCPResourceSubscribeRequest):
            self._send(
                MCPResourceSubscribeResponse(
                    **env, req_id=rid, ok=False, error=failure.message, extra=ext
                )
            )
        elif isinstance(request, MCPPromptGetRequest):
            self._send(
                MCPPromptGetResponse(
                    **env, req_id=rid, server_id=server_id, error=failure.message, extra=ext
                )
            )
        else:
            self._send_error(rid, failure)

    # Server management -------------------------------------------------------------------

    def _on_server_list(self, request: MCPServerListRequest) -> None:
        wanted = request.status_filter
        if wanted and wanted not in _STATUSES:
            raise _Refused(
                _Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    f"unknown status {wanted!r}: use one of {', '.join(_STATUSES)} (or empty)",
                    {"field": "status_filter"},
                )
            )
        servers = [
            self._info(s).to_dict()
            for s in self._servers.values()
            if not wanted or s.status == wanted
        ]
        self._send(MCPServerListResponse(**self._envelope(), req_id=request.id, servers=servers))

    def _parse_config(self, raw: MCPServerConfig | Mapping[str, Any]) -> MCPServerConfig | _Failure:
        try:
            config = (
                raw
                if isinstance(raw, MCPServerConfig)
                else MCPServerConfig.from_dict(raw, prefix="config.")
            )
        except FieldProblem as problem:
            return _Failure(
                A2EErrorCode.SCHEMA_VIOLATION, f"invalid config: {problem}", problem.detail
            )
        problems = config.problems()
        version = config.protocol_version
        if config.transport == MCPTransport.SSE and (
            version == "modern" or version in MODERN_REVISIONS
        ):
            problems.append(
                FieldProblem(
                    "config.protocol_version",
                    "a handshake revision",
                    version,
                    message="the legacy HTTP+SSE transport has no stateless (2026-07-28) era",
                )
            )
        if version not in ("auto", "legacy", "modern", *ALL_REVISIONS):
            problems.append(
                FieldProblem(
                    "config.protocol_version",
                    "auto, legacy, modern or a revision",
                    version,
                    message=f"unknown protocol_version {version!r}",
                )
            )
        if problems:
            return _Failure(
                A2EErrorCode.SCHEMA_VIOLATION,
                "invalid config: " + "; ".join(str(p) for p in problems),
                {"problems": [p.detail | {"message": str(p)} for p in problems]},
            )
        server_id = config.server_id
        if server_id and server_id in self._servers:
            return _Failure(
                A2EErrorCode.SCHEMA_VIOLATION,
                f"a server with id {server_id!r} is already registered",
                {"field": "config.server_id", "server_id": server_id, "reason": "duplicate"},
            )
        if not server_id:
            while not server_id or server_id in self._servers:
                server_id = self._new_id()[:8]
            config = attrs.evolve(config, server_id=server_id)
        return config

    def _on_register(self, request: MCPServerRegisterRequest) -> None:
        parsed = self._parse_config(request.config)
        if isinstance(parsed, _Failure):
            raise _Refused(parsed)
        self._add_server(parsed, request)

    def _add_server(
        self, config: MCPServerConfig, request: MCPServerRegisterRequest | None
    ) -> _Server:
        server = _Server(config=config, server_id=config.server_id, registering=request)
        self._servers[server.server_id] = server
        self._connect(server)
        return server

    def _on_unregister(self, request: MCPServerUnregisterRequest) -> None:
        server = self._servers.get(request.server_id)
        if server is None:
            raise _Refused(self._not_found(request.server_id))
        self._remove(server, "unregistered by the agent")
        self._send(
            MCPServerUnregisterResponse(
                **self._envelope(), req_id=request.id, ok=True, server_id=server.server_id
            )
        )

    def _remove(self, server: _Server, reason: str) -> None:
        server.removed = True
        server.reconnect_at = None
        self._servers.pop(server.server_id, None)
        if server.registering is not None:
            request, server.registering = server.registering, None
            self._reply_failure(
                request,
                _Failure(
                    MCPErrorCode.MCP_SERVER_UNAVAILABLE,
                    f"server {server.server_id!r} was removed before it was ready: {reason}",
                    {"server_id": server.server_id},
                ),
            )
        if server.link is not None:
            self._drop_link(server.link, reason, status=DISCONNECTED)

    def _info(self, server: _Server) -> MCPServerInfo:
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

    def _not_found(self, server_id: str) -> _Failure:
        return _Failure(
            MCPErrorCode.MCP_SERVER_NOT_FOUND,
            f"no server {server_id!r} is registered",
            {"server_id": server_id},
        )

    def _unavailable(self, server: _Server) -> _Failure:
        why = f": {server.error}" if server.error else ""
        return _Failure(
            MCPErrorCode.MCP_SERVER_UNAVAILABLE,
            f"server {server.server_id!r} is {server.status}{why}",
            {"server_id": server.server_id, "status": server.status},
        )

    # Connections ---------------------------------------------------------------------------

    def _new_session(self, config: MCPServerConfig) -> ClientSession:
        capabilities: dict[str, Any] = {"sampling": {}, "roots": {"listChanged": True}}
        if self.elicitation:
            capabilities["elicitation"] = {"form": {}}
        options: dict[str, Any] = {}
        version = config.protocol_version
        if config.transport == MCPTransport.SSE:
            # The legacy HTTP+SSE transport has no stateless era.
            options["supported_versions"] = HANDSHAKE_REVISIONS
            options["mode"] = "legacy"
            if version in HANDSHAKE_REVISIONS:
                options["protocol_version"] = version
                options["supported_versions"] = (version,)
        elif version in ("auto", "legacy", "modern"):
            options["mode"] = version
        else:
            # One revision, insisted on: a server that answers with another is refused.
            options["protocol_version"] = version
            options["supported_versions"] = (version,)
        return ClientSession(capabilities=capabilities, client_info=self.client_info, **options)

    def _connect(self, server: _Server) -> None:
        conn = self._next_conn
        self._next_conn += 1
        try:
            session = self._new_session(server.config)
        except LocalProtocolError as exc:
            server.status, server.error = ERROR, str(exc)
            return
        connect_deadline = self._now + self._start_timeout(server.config)
        link = _Link(conn=conn, server=server, session=session, connect_deadline=connect_deadline)
        self._added(connect_deadline)
        server.link = link
        server.last_conn = conn
        server.status = CONNECTING
        self._links[conn] = link
        self.queued.append(ConnectServer(conn, server.server_id, server.config, session))

    def _on_started(self, link: _Link) -> None:
        server = link.server
        if server.link is not link:
            return
        session = link.session
        server.mcp_version = session.protocol_version or ""
        info = session.peer_info or {}
        name, version = info.get("name"), info.get("version")
        server.server_name = name if isinstance(name, str) else ""
        server.server_version = version if isinstance(version, str) else ""
        server.capabilities = dict(session.peer_capabilities or {})
        kinds = [k for k in ("tools", "resources", "prompts") if k in server.capabilities]
        for kind in ("tools", "resources", "prompts"):
            if kind not in server.capabilities:
                self._store(server, kind, [], [])
        server.syncing = set(kinds)
        for kind in kinds:
            self._sync(link, kind)
        self._maybe_ready(link)

    def _on_start_failed(self, link: _Link, error: MCPError) -> None:
        if link.server.link is not link:
            return
        failure = self._classify(error, "start", link.server)
        self._drop_link(
            link, f"the MCP session did not start: {failure.message}", status=ERROR, failure=failure
        )

    def _maybe_ready(self, link: _Link) -> None:
        server = link.server
        if server.link is not link or server.syncing or server.status == READY:
            return
        server.status = READY
        server.error = ""
        server.connected_at = self._now
        server.attempts = 0
        server.ever_ready = True
        if self.ping_interval is not None:
            link.ping_at = self._now + self.ping_interval
            self._added(link.ping_at)
        if link.session.is_modern:
            self._open_listen(link)
        else:
            for uri in sorted(server.subscriptions):
                self._call(
                    link, "resources/subscribe", {"uri": uri}, lambda r: None, lambda e: None
                )
        if server.registering is not None:
            request, server.registering = server.registering, None
            self._send(
                MCPServerRegisterResponse(
                    **self._envelope(),
                    req_id=request.id,
                    ok=True,
                    server=self._info(server).to_dict(),
                )
            )

    def _drop_link(
        self,
        link: _Link,
        reason: str,
        *,
        status: str,
        failure: _Failure | None = None,
    ) -> None:
        """End a connection: tear the transport down, fail what was pending on it,
        and decide what becomes of its server (retry, or give up)."""
        if self._links.pop(link.conn, None) is None:
            return
        server = link.server
        self.queued.append(DisconnectServer(link.conn, server.server_id, reason))
        self._dirty.discard(link.conn)
        for key, wait in list(self._waits.items()):
            if wait.link is link:
                del self._waits[key]
        waiters, link.listen_waiters = link.listen_waiters, []
        for _, waiter in waiters:
            waiter(
                _Failure(MCPErrorCode.MCP_TRANSPORT_ERROR, reason, {"server_id": server.server_id})
            )
        current = server.link is link
        if current:
            server.link = None
            server.syncing.clear()
            server.resync.clear()
        link.session.close()
        self._pump(link)
        if not current or server.removed:
            return
        server.status = status
        server.error = reason
        if server.registering is not None:
            # A registration that never reached ready is not kept.
            request, server.registering = server.registering, None
            self._servers.pop(server.server_id, None)
            server.removed = True
            failure = failure or _Failure(MCPErrorCode.MCP_TRANSPORT_ERROR, reason)
            self._reply_failure(
                request,
                attrs.evolve(
                    failure,
                    message=f"could not register {server.server_id!r}: {reason}",
                    detail={
                        **failure.detail,
                        "server_id": server.server_id,
                        "server": self._info(server).to_dict(),
                    },
                ),
            )
            return
        if server.config.auto_reconnect:
            delay = min(self.reconnect_max, self.reconnect_base * (2**server.attempts))
            delay = delay / 2 + self._rng.random() * delay / 2  # "equal jitter"
            server.attempts += 1
            server.reconnect_at = self._now + delay
            self._added(server.reconnect_at)

    # MCP events -----------------------------------------------------------------------------

    def _pump(self, link: _Link) -> None:
        session = link.session
        while True:
            event = session.next_event()
            if event is NEED_DATA:
                return
            assert not isinstance(event, type)
            try:
                if type(event) is ResponseReceived:  # the commonest by far: no call more
                    call = link.calls.pop(event.request_id, None)
                    if call is not None:
                        call.ok(event.result)
                else:
                    self._on_event(link, event)
            except Exception as exc:  # a hostile server must not take the bridge down
                self.internal_errors.append(
                    f"{link.server.server_id}: {type(event).__name__}: {type(exc).__name__}: {exc}"
                )
                if isinstance(event, RequestReceived) and event.request_id in session.open_requests:
                    # Its request must still be answered, or the server waits for good.
                    session.respond_error(
                        event.request_id, ErrorCode.INTERNAL_ERROR, f"the bridge failed: {exc}"
                    )

    def _on_event(self, link: _Link, event: Event) -> None:
        # (ResponseReceived is handled by _pump itself.)
        if isinstance(event, RequestFailed):
            call = link.calls.pop(event.request_id, None)
            if call is not None:
                call.err(event.error)
            self._maybe_transport_failure(link, event.error)
        elif isinstance(event, ProgressReceived):
            progress_call = link.calls.get(event.request_id)
            if progress_call is not None:
                progress_call.progress(event)
            params: dict[str, Any] = {
                "progressToken": event.progress_token,
                "progress": event.progress,
            }
            if event.total is not None:
                params["total"] = event.total
            if event.message is not None:
                params["message"] = event.message
            self._push(link, "notifications/progress", params)
        elif isinstance(event, NotificationReceived):
            self._on_notification(link, event)
        elif isinstance(event, RequestReceived):
            self._on_server_request(link, event)
        elif isinstance(event, InputRequired):
            self._on_input_required(link, event)
        elif isinstance(event, SubscriptionAcknowledged):
            if event.request_id == link.listen_id:
                honoured = event.notifications.get("resourceSubscriptions")
                honoured = honoured if isinstance(honoured, list) else []
                waiters, link.listen_waiters = link.listen_waiters, []
                for uri, waiter in waiters:
                    waiter(
                        None
                        if uri in honoured
                        else _Failure(
                            MCPErrorCode.MCP_CAPABILITY_MISSING,
                            f"the server did not accept a subscription to {uri!r}",
                            {"server_id": link.server.server_id, "uri": uri},
                        )
                    )
        elif isinstance(event, CancelRequested):
            for key, wait in list(self._waits.items()):
                if wait.link is link and wait.mcp_request_id == str(event.request_id):
                    del self._waits[key]
        elif isinstance(event, ConnectionClosed):
            self._drop_link(link, "the connection closed", status=DISCONNECTED)
        elif isinstance(event, SessionInitialized | ProtocolViolation):
            pass  # the start call's result carries the former; the core answered the latter

    def _maybe_transport_failure(self, link: _Link, error: MCPError) -> None:
        """Over HTTP there is no connection to lose: a request that could not reach
        the server, or a session the server ended, is what losing it looks like."""
        if link.server.link is not link or link.session.state is SessionState.CLOSED:
            return
        data = error.data if isinstance(error.data, dict) else {}
        if isinstance(error, ConnectionClosedError) or (
            isinstance(error, HTTPStatusError) and data.get("status") in (0, None)
        ):
            self._drop_link(link, error.message, status=DISCONNECTED)

    def _push(self, link: _Link, method: str, params: dict[str, Any]) -> None:
        self._send(
            MCPServerPush(
                **self._envelope(), server_id=link.server.server_id, method=method, params=params
            )
        )

    def _on_notification(self, link: _Link, event: NotificationReceived) -> None:
        self._push(link, event.method, copy_json(event.params))
        kind = {
            "notifications/tools/list_changed": "tools",
            "notifications/resources/list_changed": "resources",
            "notifications/prompts/list_changed": "prompts",
        }.get(event.method)
        # Also while the first sync (or a reconnect's) runs: a list it has already
        # read may be stale now (_resync waits for a list still being read).
        if kind is not None and link.server.link is link:
            self._resync(link, kind)

    # Calls to servers -------------------------------------------------------------------------

    def _call(
        self,
        link: _Link,
        method: str,
        params: dict[str, Any] | None,
        on_ok: Callable[[dict[str, Any]], None],
        on_err: Callable[[MCPError], None],
        *,
        timeout: float | None = -1.0,
        on_progress: Callable[[ProgressReceived], None] | None = None,
        for_agent: bool = False,
    ) -> RequestId | None:
        if timeout is not None and timeout < 0:
            timeout = float(link.server.config.timeout)
        call = (_AgentCall if for_agent else _Call)(on_ok, on_err, on_progress)
        return self._start_call(link, method, params, call, timeout)

    def _start_call(
        self,
        link: _Link,
        method: str,
        params: dict[str, Any] | None,
        call: _Call,
        timeout: float | None,
    ) -> RequestId | None:
        session = link.session
        if session.state is SessionState.CLOSED:
            call.err(ConnectionClosedError(message="the connection is closed"))
            return None
        try:
            request_id = session.send_request(
                method,
                params,
                now=self._now,
                timeout=timeout,
                progress=call.wants_progress,
            )
        except LocalProtocolError as exc:
            call.err(MCPError(ErrorCode.METHOD_NOT_FOUND, str(exc), {"local": True}))
            return None
        link.calls[request_id] = call
        if timeout is not None:
            self._added(self._now + timeout)
        self._dirty.add(link.conn)
        return request_id

    def _classify(self, error: MCPError, method: str, server: _Server | None) -> _Failure:
        """An MCP failure as the A2E code that names it."""
        detail: dict[str, Any] = {}
        if server is not None:
            detail["server_id"] = server.server_id
        data = error.data if isinstance(error.data, dict) else {}
        if isinstance(data.get("a2e_code"), str):
            return _Failure(data["a2e_code"], error.message, detail)
        if not isinstance(error, ConnectionClosedError | HTTPStatusError | RequestTimeout):
            detail["mcp_error"] = {"code": error.code, "message": error.message}
            if error.data is not None:
                detail["mcp_error"]["data"] = error.data
        if isinstance(error, ConnectionClosedError):
            code: str = MCPErrorCode.MCP_TRANSPORT_ERROR
            message = f"the connection to the server closed: {error.message}"
        elif isinstance(error, HTTPStatusError):
            code, message = MCPErrorCode.MCP_TRANSPORT_ERROR, f"HTTP transport: {error.message}"
            detail["http_status"] = data.get("status")
        elif isinstance(error, RequestTimeout):
            code, message = A2EErrorCode.TIMEOUT, f"{method} timed out"
            if server is not None:
                detail["timeout"] = server.config.timeout
        elif error.code == ErrorCode.RESOURCE_NOT_FOUND:
            code, message = MCPErrorCode.MCP_RESOURCE_NOT_FOUND, error.message
        elif error.code in (
            ErrorCode.METHOD_NOT_FOUND,
            ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        ):
            code, message = MCPErrorCode.MCP_CAPABILITY_MISSING, error.message
        elif isinstance(error, InputRoundsExceeded):
            code, message = MCPErrorCode.MCP_PROTOCOL_ERROR, error.message
        else:
            code, message = MCPErrorCode.MCP_PROTOCOL_ERROR, error.message
        return _Failure(code, message, detail)

    def _fail_with(
        self, request: A2EMessage, server: _Server, method: str
    ) -> Callable[[MCPError], None]:
        def fail(error: MCPError) -> None:
            self._reply_failure(request, self._classify(error, method, server))

        return fail

    # Sync ----------------------------------------------------------------------------------

    def _list_all(
        self,
        link: _Link,
        method: str,
        key: str,
        done: Callable[[list[dict[str, Any]]], None],
        failed: Callable[[MCPError], None],
    ) -> None:
        """Every item of a paginated list, one page after the other."""
        items: list[dict[str, Any]] = []
        seen: set[str] = set()

        def page(cursor: str | None) -> None:
            self._call(link, method, {"cursor": cursor} if cursor else None, got, failed)

        def got(result: dict[str, Any]) -> None:
            batch = result.get(key)
            if isinstance(batch, list):
                items.extend(item for item in batch if isinstance(item, dict))
            cursor = result.get("nextCursor")
            if isinstance(cursor, str) and cursor not in seen and len(seen) < self.max_pages:
                seen.add(cursor)
                page(cursor)
            else:
                done(items)

        page(None)

    def _sync(self, link: _Link, kind: str) -> None:
        server = link.server

        def finished(kind_done: str) -> None:
            server.syncing.discard(kind_done)
            if kind_done in server.resync and server.link is link:
                server.resync.discard(kind_done)
                server.syncing.add(kind_done)
                self._sync(link, kind_done)
                return
            self._maybe_ready(link)

        def failed(error: MCPError) -> None:
            if server.link is not link:
                return
            # Not fatal: the server stays usable without this list.
            self._store(server, kind, [], [])
            finished(kind)

        if kind == "resources":

            def got_resources(resources: list[dict[str, Any]]) -> None:
                if server.link is not link:
                    return

                def got_templates(templates: list[dict[str, Any]]) -> None:
                    if server.link is not link:
                        return
                    self._store(server, kind, resources, templates)
                    finished(kind)

                def no_templates(error: MCPError) -> None:
                    if server.link is not link:
                        return
                    self._store(server, kind, resources, [])
                    finished(kind)

                self._list_all(
                    link,
                    "resources/templates/list",
                    "resourceTemplates",
                    got_templates,
                    no_templates,
                )

            self._list_all(link, "resources/list", "resources", got_resources, failed)
            return

        def got(items: list[dict[str, Any]]) -> None:
            if server.link is not link:
                return
            self._store(server, kind, items, [])
            finished(kind)

        self._list_all(link, f"{kind}/list", kind, got, failed)

    def _resync(self, link: _Link, kind: str) -> None:
        server = link.server
        if kind not in server.capabilities:
            return
        if kind in server.syncing:
            server.resync.add(kind)
            return
        server.syncing.add(kind)
        self._sync(link, kind)

    def _store(
        self,
        server: _Server,
        kind: str,
        items: list[dict[str, Any]],
        templates: list[dict[str, Any]],
    ) -> None:
        if kind == "tools":
            server.tools = {
                t["name"]: t
                for t in items
                if isinstance(t.get("name"), str) and server.allows_tool(t["name"])
            }
        elif kind == "resources":
            server.resources = {
                r["uri"]: r
                for r in items
                if isinstance(r.get("uri"), str) and server.allows_resource(r["uri"])
            }
            server.templates = []
            for template in templates:
                text = template.get("uriTemplate")
                if not isinstance(text, str):
                    continue
                try:
                    server.templates.append((UriTemplate(text), template))
                except (ValueError, KeyError):
                    continue
        elif kind == "prompts":
            server.prompts = {p["name"]: p for p in items if isinstance(p.get("name"), str)}

    # Ping and listen ---------------------------------------------------------------------------

    def _ping(self, link: _Link) -> None:
        link.ping_at = None
        sent = self._now
        method = "server/discover" if link.session.is_modern else "ping"
        timeout = min(float(link.server.config.timeout), self.ping_timeout)

        def ok(result: dict[str, Any]) -> None:
            link.ping_id = None
            link.server.last_ping_ms = round((self._now - sent) * 1000, 3)
            if self.ping_interval is not None and link.server.link is link:
                link.ping_at = self._now + self.ping_interval
                self._added(link.ping_at)

        def err(error: MCPError) -> None:
            link.ping_id = None
            if link.server.link is not link:
                return
            if isinstance(error, RequestTimeout):
                self._drop_link(link, f"no answer to {method} within {timeout:g} s", status=ERROR)
            elif self.ping_interval is not None:
                link.ping_at = self._now + self.ping_interval
                self._added(link.ping_at)

        link.ping_id = self._call(link, method, None, ok, err, timeout=timeout)

    def _open_listen(self, link: _Link) -> None:
        """2026-07-28 servers send list changes and resource updates only on a
        ``subscriptions/listen`` stream: keep one open per server."""
        server = link.server
        caps = server.capabilities
        wanted = listen_filter(
            tools=bool((caps.get("tools") or {}).get("listChanged")),
            prompts=bool((caps.get("prompts") or {}).get("listChanged")),
            resources=bool((caps.get("resources") or {}).get("listChanged")),
            uris=sorted(server.subscriptions),
        )
        old = link.listen_id
        if old is not None:
            link.listen_id = None
            link.calls.pop(old, None)
            if old in link.session.pending_requests:
                link.session.cancel(old, "the bridge replaces its subscription")
                self._touch(link)
        if not wanted:
            return

        def ended(error: MCPError) -> None:
            if link.listen_id is not None and link.server.link is link:
                link.listen_id = None
            failure = self._classify(error, "subscriptions/listen", server)
            waiters, link.listen_waiters = link.listen_waiters, []
            for _, waiter in waiters:
                waiter(failure)

        link.listen_id = self._call(
            link,
            "subscriptions/listen",
            {"notifications": wanted},
            lambda result: None,
            ended,
            timeout=None,
        )

    # Tools -------------------------------------------------------------------------------------

    def _on_tool_list(self, request: ToolListRequest) -> None:
        query = request.query.lower()
        tools = []
        for definition in self.tool_definitions():
            if request.filter_kind and request.filter_kind != definition["source"]:
                continue
            if any(tag not in definition["tags"] for tag in request.filter_tags):
                continue
            if query and not any(
                query in text.lower()
                for text in (definition["name"], definition["description"], *definition["tags"])
            ):
                continue
            tools.append(definition)
        self._send(ToolListResponse(**self._envelope(), req_id=request.id, tools=tools))

    def _on_tool_call(self, request: ToolCallRequest) -> None:
        # The request is the host's own copy (see receive_agent_message).
        call = _ToolCall(self, request.id, request.tool_name, request.streaming)
        call.start(request.arguments, request.timeout)

    # Resources ---------------------------------------------------------------------------------

    def _targets(self, server_id: str) -> list[_Server]:
        if server_id:
            server = self._servers.get(server_id)
            if server is None:
                raise _Refused(self._not_found(server_id))
            if not server.ready:
                raise _Refused(self._unavailable(server))
            return [server]
        return list(self._servers.values())

    def _cursor_state(
        self, request: MCPResourceListRequest | MCPPromptListRequest, phases: tuple[str, ...]
    ) -> tuple[str, str, str, str | None] | None:
        """(scope, server id, phase, MCP cursor) of a list request's cursor."""
        if not request.cursor:
            return None
        state = decode_cursor(request.cursor)
        if (
            state is None
            or len(state) != 4
            or not all(isinstance(v, str) for v in state[:3])
            or not (state[3] is None or isinstance(state[3], str))
            or state[2] not in phases
        ):
            raise _Refused(
                _Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    "the cursor was not issued by this bridge",
                    {"field": "cursor"},
                )
            )
        scope, server_id, phase, cursor = state
        if request.server_id and request.server_id != scope:
            raise _Refused(
                _Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    "the cursor belongs to a listing of another server",
                    {"field": "cursor", "server_id": request.server_id},
                )
            )
        return scope, server_id, phase, cursor

    def _on_resource_list(self, request: MCPResourceListRequest) -> None:
        self._paged_list(
            request,
            capability="resources",
            phases=(
                ("resources", "resources/list", "resources"),
                ("templates", "resources/templates/list", "resourceTemplates"),
            ),
        )

    def _on_prompt_list(self, request: MCPPromptListRequest) -> None:
        self._paged_list(
            request, capability="prompts", phases=(("prompts", "prompts/list", "prompts"),)
        )

    def _paged_list(
        self,
        request: MCPResourceListRequest | MCPPromptListRequest,
        *,
        capability: str,
        phases: tuple[tuple[str, str, str], ...],
    ) -> None:
        """One page of a listing across servers.

        Pages of the servers are gathered in order (for resources: each
        server's resources, then its templates) until one server says it has
        more; the agent's ``next_cursor`` then points there.  The cursor is
        opaque: it names the scope, the server, the phase and that server's
        own cursor.  With no pagination anywhere, one response has everything.
        """
        phase_names = tuple(p[0] for p in phases)
        state = self._cursor_state(request, phase_names)
        scope = request.server_id if state is None else state[0]
        targets = self._targets(scope) if scope else list(self._servers.values())
        order = [s.server_id for s in targets]
        position: tuple[str, str, str | None] | None
        if state is None:
            position = (order[0], phase_names[0], None) if order else None
        else:
            _, server_id, phase, cursor = state
            if server_id not in order:
                raise _Refused(
                    _Failure(
                        MCPErrorCode.MCP_SERVER_NOT_FOUND,
                        f"server {server_id!r} of this cursor is no longer registered",
                        {"server_id": server_id, "field": "cursor"},
                    )
                )
            position = (server_id, phase, cursor)
        collected: list[dict[str, Any]] = []
        skipped: list[str] = []
        hops = 0

        def after(server_id: str, phase: str) -> tuple[str, str, str | None] | None:
            index = phase_names.index(phase)
            if index + 1 < len(phase_names):
                return server_id, phase_names[index + 1], None
            at = order.index(server_id)
            return (order[at + 1], phase_names[0], None) if at + 1 < len(order) else None

        def respond(nxt: tuple[str, str, str | None] | None) -> None:
            next_cursor = encode_cursor([scope, *nxt]) if nxt is not None else ""
            extra = {"skipped_servers": skipped} if skipped else {}
            env = self._envelope()
            if isinstance(request, MCPResourceListRequest):
                self._send(
                    MCPResourceListResponse(
                        **env,
                        req_id=request.id,
                        resources=collected,
                        next_cursor=next_cursor,
                        extra=extra,
                    )
                )
            else:
                self._send(
                    MCPPromptListResponse(
                        **env,
                        req_id=request.id,
                        prompts=collected,
                        next_cursor=next_cursor,
                        extra=extra,
                    )
                )

        def step(pos: tuple[str, str, str | None] | None) -> None:
            nonlocal hops
            while pos is not None:
                hops += 1
                if hops > self.max_pages:
                    respond(pos)  # enough for one answer: the agent continues from here
                    return
                server_id, phase, cursor = pos
                server = self._servers.get(server_id)
                if server is None or not server.ready or server.link is None:
                    if server_id not in skipped:
                        skipped.append(server_id)
                    pos = after(server_id, phase)
                    continue
                if capability not in server.capabilities:
                    pos = after(server_id, phase)
                    continue
                fetch(server, server.link, phase, cursor)
                return
            respond(None)

        def fetch(server: _Server, link: _Link, phase: str, cursor: str | None) -> None:
            _, method, key = phases[phase_names.index(phase)]

            def ok(result: dict[str, Any]) -> None:
                raw = result.get(key)
                entries = [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
                collected.extend(self._page_items(server, phase, entries))
                more = result.get("nextCursor")
                if isinstance(more, str) and more and more != cursor:
                    respond((server.server_id, phase, more))
                else:
                    step(after(server.server_id, phase))

            def err(error: MCPError) -> None:
                if phase == "templates" and error.code == ErrorCode.METHOD_NOT_FOUND:
                    step(after(server.server_id, phase))  # no templates here
                    return
                self._reply_failure(request, self._classify(error, method, server))

            self._call(
                link, method, {"cursor": cursor} if cursor else None, ok, err, for_agent=True
            )

        step(position)

    def _page_items(
        self, server: _Server, phase: str, entries: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        sid = server.server_id
        out: list[dict[str, Any]] = []
        if phase == "resources":
            for entry in entries:
                uri = entry.get("uri")
                if isinstance(uri, str) and server.allows_resource(uri):
                    server.resources[uri] = entry  # routing learns from every listing
                    out.append(resource_from_mcp(sid, copy_json(entry)).to_dict())
        elif phase == "templates":
            known = {t.template for t, _ in server.templates}
            for entry in entries:
                text = entry.get("uriTemplate")
                if not isinstance(text, str) or not server.allows_resource(text):
                    continue
                if text not in known:
                    try:
                        server.templates.append((UriTemplate(text), entry))
                    except (ValueError, KeyError):
                        pass
                out.append(template_from_mcp(sid, copy_json(entry)).to_dict())
        else:
            for entry in entries:
                if isinstance(entry.get("name"), str):
                    server.prompts[entry["name"]] = entry
                    out.append(prompt_from_mcp(sid, copy_json(entry)).to_dict())
        return out

    def _route_uri(self, uri: str, server_id: str) -> _Server:
        """The one server a URI belongs to: the hint, else the server that listed it,
        else the one whose template matches.  Never a first-server guess."""
        if not uri:
            raise _Refused(
                _Failure(A2EErrorCode.SCHEMA_VIOLATION, "uri must not be empty", {"field": "uri"})
            )
        if server_id:
            server = self._servers.get(server_id)
            if server is None:
                raise _Refused(self._not_found(server_id))
            candidates = [server]
        else:
            candidates = [s for s in self._servers.values() if uri in s.resources]
            if not candidates:
                candidates = [
                    s
                    for s in self._servers.values()
                    if any(t.match(uri) is not None for t, _ in s.templates)
                ]
        if len(candidates) != 1:
            reason = "several servers offer it" if candidates else "no server lists it"
            raise _Refused(
                _Failure(
                    MCPErrorCode.MCP_RESOURCE_NOT_FOUND,
                    f"cannot route {uri!r}: {reason}" + (" (give server_id)" if candidates else ""),
                    {"uri": uri, "candidates": [s.server_id for s in candidates]},
                )
            )
        server = candidates[0]
        if not server.allows_resource(uri):
            raise _Refused(
                _Failure(
                    MCPErrorCode.MCP_RESOURCE_NOT_FOUND,
                    f"{uri!r} is not on server {server.server_id!r}'s resource_allow_list",
                    {"uri": uri, "server_id": server.server_id},
                )
            )
        if not server.ready:
            raise _Refused(self._unavailable(server))
        return server

    def _on_resource_read(self, request: MCPResourceReadRequest) -> None:
        server = self._route_uri(request.uri, request.server_id)
        assert server.link is not None

        def ok(result: dict[str, Any]) -> None:
            raw = result.get("contents")
            contents = [
                resource_content_from_mcp(c).to_dict()
                for c in (raw if isinstance(raw, list) else [])
                if isinstance(c, dict)
            ]
            self._send(
                MCPResourceReadResponse(
                    **self._envelope(),
                    req_id=request.id,
                    contents=contents,
                    server_id=server.server_id,
                )
            )

        self._call(
            server.link,
            "resources/read",
            {"uri": request.uri},
            ok,
            self._fail_with(request, server, "resources/read"),
            for_agent=True,
        )

    def _on_subscribe(self, request: MCPResourceSubscribeRequest) -> None:
        server = self._route_uri(request.uri, request.server_id)
        link = server.link
        assert link is not None
        if not (server.capabilities.get("resources") or {}).get("subscribe"):
            raise _Refused(
                _Failure(
                    MCPErrorCode.MCP_CAPABILITY_MISSING,
                    f"server {server.server_id!r} does not offer resource subscriptions",
                    {"server_id": server.server_id, "uri": request.uri},
                )
            )

        def answer(failure: _Failure | None) -> None:
            if failure is not None:
                self._reply_failure(request, failure)
                return
            self._send(MCPResourceSubscribeResponse(**self._envelope(), req_id=request.id, ok=True))

        if link.session.is_modern:
            server.subscriptions.add(request.uri)
            link.listen_waiters.append((request.uri, answer))
            self._open_listen(link)
            return

        def ok(result: dict[str, Any]) -> None:
            server.subscriptions.add(request.uri)
            answer(None)

        self._call(
            link,
            "resources/subscribe",
            {"uri": request.uri},
            ok,
            self._fail_with(request, server, "resources/subscribe"),
            for_agent=True,
        )

    # Prompts -----------------------------------------------------------------------------------

    def _on_prompt_get(self, request: MCPPromptGetRequest) -> None:
        name = request.name
        if not name:
            raise _Refused(
                _Failure(A2EErrorCode.SCHEMA_VIOLATION, "name must not be empty", {"field": "name"})
            )
        if request.server_id:
            server = self._servers.get(request.server_id)
            if server is None:
                raise _Refused(self._not_found(request.server_id))
        else:
            candidates = [s for s in self._servers.values() if name in s.prompts]
            if len(candidates) != 1:
                raise _Refused(
                    _Failure(
                        MCPErrorCode.MCP_PROMPT_NOT_FOUND,
                        f"no server offers a prompt {name!r}"
                        if not candidates
                        else f"several servers offer a prompt {name!r}: give server_id",
                        {"name": name, "candidates": [s.server_id for s in candidates]},
                    )
                )
            server = candidates[0]
        if not server.ready or server.link is None:
            raise _Refused(self._unavailable(server))
        if "prompts" not in server.capabilities:
            raise _Refused(
                _Failure(
                    MCPErrorCode.MCP_CAPABILITY_MISSING,
                    f"server {server.server_id!r} offers no prompts",
                    {"server_id": server.server_id},
                )
            )
        known = name in server.prompts

        def ok(result: dict[str, Any]) -> None:
            raw = result.get("messages")
            messages = [
                prompt_message_from_mcp(m).to_dict()
                for m in (raw if isinstance(raw, list) else [])
                if isinstance(m, dict)
            ]
            description = result.get("description")
            self._send(
                MCPPromptGetResponse(
                    **self._envelope(),
                    req_id=request.id,
                    description=description if isinstance(description, str) else "",
                    messages=messages,
                    server_id=server.server_id,
                )
            )

        def err(error: MCPError) -> None:
            failure = self._classify(error, "prompts/get", server)
            if not known and error.code == ErrorCode.INVALID_PARAMS:
                failure = attrs.evolve(failure, code=MCPErrorCode.MCP_PROMPT_NOT_FOUND)
            self._reply_failure(request, failure)

        params: dict[str, Any] = {"name": name}
        if request.arguments:
            params["arguments"] = prompt_arguments(request.arguments)
        self._call(server.link, "prompts/get", params, ok, err, for_agent=True)

    # Server-initiated requests ----------------------------------------------------------------

    def _on_server_request(self, link: _Link, event: RequestReceived) -> None:
        session = link.session
        request_id = event.request_id

        def deliver(result: dict[str, Any]) -> None:
            if session.state is not SessionState.CLOSED and request_id in session.open_requests:
                try:
                    session.respond(request_id, result)
                except LocalProtocolError as exc:
                    session.respond_error(request_id, ErrorCode.INTERNAL_ERROR, str(exc))
                self._touch(link)

        def fail(error: MCPError) -> None:
            if session.state is not SessionState.CLOSED and request_id in session.open_requests:
                session.respond_error(request_id, error)
                self._touch(link)

        self._ask_agent(link, event.method, copy_json(event.params), str(request_id), deliver, fail)

    def _ask_agent(
        self,
        link: _Link,
        method: str,
        params: dict[str, Any],
        mcp_request_id: str,
        deliver: Callable[[dict[str, Any]], None],
        fail: Callable[[MCPError], None],
    ) -> None:
        """Answer a server's sampling / roots / elicitation request, asking the
        agent where needed."""
        server = link.server
        if method == "roots/list" and self.roots is not None:
            deliver(roots_result(self.roots))
            return
        if self.agent_closed:
            fail(_refusal(method, "no agent is connected to the bridge"))
            return
        env = self._envelope()
        kind: str
        message: A2EMessage
        if method == "sampling/createMessage":
            kind = "sample"
            message = sampling_request_from_mcp(
                params, server_id=server.server_id, mcp_request_id=mcp_request_id, **env
            )
        elif method == "roots/list":
            kind = "roots"
            message = MCPRootsListRequest(
                **env, server_id=server.server_id, mcp_request_id=mcp_request_id
            )
        elif method == "elicitation/create" and self.elicitation:
            kind = "elicit"
            message = ElicitRequest(
                **env, server_id=server.server_id, mcp_request_id=mcp_request_id, params=params
            )
        else:
            fail(MCPError(ErrorCode.METHOD_NOT_FOUND, f"the bridge does not serve {method!r}"))
            return
        self._waits[message.id] = _AgentWait(
            kind=kind,
            server_id=server.server_id,
            link=link,
            mcp_request_id=mcp_request_id,
            deliver=deliver,
            fail=fail,
            deadline=self._now + float(server.config.timeout),
        )
        self._added(self._waits[message.id].deadline)
        self._send(message)

    def _on_input_required(self, link: _Link, event: InputRequired) -> None:
        """A 2026-07-28 server needs input to finish a request (MRTR): the same
        answers as for server-to-client requests, then the retry."""
        session = link.session
        origin = event.request_id
        pending = dict(event.input_requests)
        responses: dict[str, Any] = {}
        state = {"failed": False}

        def finish() -> None:
            if state["failed"] or pending or origin not in session.pending_requests:
                return
            try:
                session.provide_input(origin, responses)
            except LocalProtocolError:
                return
            self._touch(link)

        def give_up(error: MCPError) -> None:
            if state["failed"]:
                return
            state["failed"] = True
            for key, wait in list(self._waits.items()):
                if wait.link is link and wait.mcp_request_id.startswith(f"{origin}:"):
                    del self._waits[key]
            if origin in session.pending_requests and session.state is not SessionState.CLOSED:
                session.fail_input(origin, error)
                self._pump(link)

        if not pending:
            finish()
            return
        for key, request in list(pending.items()):
            method = request.get("method") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if not isinstance(method, str):
                give_up(MCPError(ErrorCode.INVALID_REQUEST, f"input request {key!r} has no method"))
                return

            def deliver(result: dict[str, Any], key: str = key) -> None:
                pending.pop(key, None)
                responses[key] = result
                finish()

            self._ask_agent(
                link,
                method,
                copy_json(params) if isinstance(params, dict) else {},
                f"{origin}:{key}",
                deliver,
                give_up,
            )
            if state["failed"]:
                return

    def _take_wait(
        self, response: A2EMessage, kind: str, server_id: str, mcp_request_id: str
    ) -> _AgentWait:
        req_id = getattr(response, "req_id", "")
        wait = self._waits.get(req_id)
        # Matched by server and MCP request id only when it names no req_id: a new
        # session of the server numbers its requests from 0 again, so a stale
        # answer's req_id must not find a newer request by those.
        if wait is None and not req_id and (server_id or mcp_request_id):
            wait = next(
                (
                    w
                    for w in self._waits.values()
                    if w.kind == kind
                    and w.server_id == server_id
                    and w.mcp_request_id == mcp_request_id
                ),
                None,
            )
        if wait is None or wait.kind != kind:
            raise _Refused(
                _Failure(
                    A2EErrorCode.INVALID_MESSAGE,
                    f"{response.type} answers no pending request (unknown or expired)",
                    {"req_id": getattr(response, "req_id", "")},
                )
            )
        for key, value in list(self._waits.items()):
            if value is wait:
                del self._waits[key]
        return wait

    def _on_sample_response(self, response: MCPSamplingResponse) -> None:
        wait = self._take_wait(response, "sample", response.server_id, response.mcp_request_id)
        if response.error:
            wait.fail(_refusal("sampling", f"the agent refused to sample: {response.error}"))
        else:
            try:
                result = sampling_result_from_a2e(response)
            except ValueError as exc:
                wait.fail(
                    MCPError(ErrorCode.INTERNAL_ERROR, f"the agent's answer was invalid: {exc}")
                )
                self._touch(wait.link)
                raise _Refused(
                    _Failure(A2EErrorCode.SCHEMA_VIOLATION, f"invalid mcp/sample/resp: {exc}")
                ) from None
            wait.deliver(result)
        self._touch(wait.link)

    def _on_roots_response(self, response: MCPRootsListResponse) -> None:
        try:
            roots = [MCPRoot.from_dict(r, prefix="roots.") for r in response.roots]
        except FieldProblem as problem:
            raise _Refused(
                _Failure(A2EErrorCode.SCHEMA_VIOLATION, f"invalid roots: {problem}", problem.detail)
            ) from None
        problem_text = roots_problem(roots)
        if not response.req_id and not response.mcp_request_id:
            # Unsolicited: the agent sets the roots every server is told from now on.
            if problem_text:
                raise _Refused(_Failure(A2EErrorCode.SCHEMA_VIOLATION, problem_text))
            self.roots = roots
            for server in self._servers.values():
                link = server.link
                if server.ready and link is not None and not link.session.is_modern:
                    try:
                        link.session.send_roots_list_changed()
                    except LocalProtocolError:
                        continue
                    self._touch(link)
            return
        wait = self._take_wait(response, "roots", response.server_id, response.mcp_request_id)
        if problem_text:
            wait.fail(
                MCPError(
                    ErrorCode.INTERNAL_ERROR, f"the agent's roots were invalid: {problem_text}"
                )
            )
            self._touch(wait.link)
            raise _Refused(_Failure(A2EErrorCode.SCHEMA_VIOLATION, problem_text))
        wait.deliver(roots_result(roots))
        self._touch(wait.link)

    def _on_elicit_response(self, response: ElicitResponse) -> None:
        wait = self._take_wait(response, "elicit", response.server_id, response.mcp_request_id)
        if response.error:
            wait.fail(_refusal("elicitation", f"the agent refused to elicit: {response.error}"))
        elif response.action not in ("accept", "decline", "cancel"):
            wait.fail(MCPError(ErrorCode.INTERNAL_ERROR, "the agent's answer was invalid"))
            self._touch(wait.link)
            raise _Refused(
                _Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    f"action must be accept, decline or cancel, not {response.action!r}",
                    {"field": "action"},
                )
            )
        else:
            result: dict[str, Any] = {"action": response.action}
            if response.action == "accept":
                result["content"] = dict(response.content)
            wait.deliver(result)
        self._touch(wait.link)

    def _on_agent_error(self, error: A2EError) -> None:
        """An ``error`` answering one of our requests is a refusal."""
        wait = self._waits.get(error.req_id)
        if wait is None:
            return
        del self._waits[error.req_id]
        wait.fail(_refusal(wait.kind, f"the agent refused: {error.message or error.code}"))
        self._touch(wait.link)

    def _agent_gone(self) -> None:
        self.agent_closed = True
        for key, wait in list(self._waits.items()):
            del self._waits[key]
            wait.fail(_refusal(wait.kind, "the agent disconnected"))
            self._touch(wait.link)
        # What servers still do for it is cancelled, and their answers dropped: an
        # agent that connects next must not get them (servers outlive agents on
        # WebSocket).
        for link in self._links.values():
            mine = [rid for rid, call in link.calls.items() if call.for_agent]
            for request_id in mine:
                del link.calls[request_id]
                if request_id in link.session.pending_requests:
                    try:
                        link.session.cancel(request_id, "the agent disconnected")
                    except LocalProtocolError:
                        link.session.forget(request_id)
            if mine:
                self._dirty.add(link.conn)

    def _on_handshake(self, request: HandshakeRequest) -> None:
        """The bridge serves two capabilities: ``mcp`` and the ``tools`` its MCP
        tools appear under.  An agent that names others is told they are off."""
        served = ("mcp", "tools")
        wanted = request.agent_caps or list(served)
        accepted = [
            {
                "capability": cap,
                "enabled": cap in served,
                "metadata": {"elicitation": "x-mcp/elicit"}
                if cap == "mcp" and self.elicitation
                else {},
            }
            for cap in wanted
        ]
        ok = any(entry["enabled"] for entry in accepted)
        self._send(
            HandshakeResponse(
                **self._envelope(),
                req_id=request.id,
                session_id=self._new_id(),
                accepted_caps=accepted,
                ok=ok,
                reason="" if ok else "this host serves only the mcp and tools capabilities",
            )
        )

    def _on_ping(self, request: Ping) -> None:
        self._send(Pong(**self._envelope(), req_id=request.id))


def _as_root(root: MCPRoot | Mapping[str, Any]) -> MCPRoot:
    return root if isinstance(root, MCPRoot) else MCPRoot.from_dict(root)


def _without(mapping: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}
