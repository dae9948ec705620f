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

The host is the router of a few parts, one concern each, which share a
:class:`~._host_state.HostState` and know nothing of the host: the link
lifecycle (:mod:`._link_lifecycle`, by the table in :mod:`._link_states`), the
registry, the catalog, tool calls, resources and prompts, and what servers
ask of the agent.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from sansio_mcp import (
    NEED_DATA,
    CancelRequested,
    ConnectionClosed,
    ErrorCode,
    Event,
    InputRequired,
    LocalProtocolError,
    NotificationReceived,
    ProgressReceived,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SubscriptionAcknowledged,
)

from ._actions import (
    Action,
    ConnectServer,
    DisconnectServer,
    FlushServer,
    Output,
    SendToAgent,
    ToolAnswer,
)
from ._agent_asks import AgentAsks
from ._catalog import Catalog
from ._codec import A2EFramer, DecodeError, adopt, decode, decode_text
from ._failures import Failure, Refused
from ._fields import TooDeep, copy_json
from ._host_state import HostState, ServerLink
from ._link_lifecycle import LinkLifecycle
from ._link_states import LinkTrigger
from ._messages import (
    AGENT_TO_HOST,
    BOTH,
    A2EError,
    A2EMessage,
    ElicitResponse,
    HandshakeRequest,
    HandshakeResponse,
    MCPPromptGetRequest,
    MCPPromptListRequest,
    MCPResourceListRequest,
    MCPResourceReadRequest,
    MCPResourceSubscribeRequest,
    MCPRootsListResponse,
    MCPSamplingResponse,
    MCPServerListRequest,
    MCPServerRegisterRequest,
    MCPServerUnregisterRequest,
    Ping,
    Pong,
    ToolCallRequest,
    ToolCallResponse,
    ToolListRequest,
    new_message_id,
)
from ._models import A2EErrorCode, MCPRoot, MCPServerConfig, MCPServerInfo
from ._registry import Registry
from ._resources_prompts import ResourcesAndPrompts
from ._tool_calls import ToolCalls, cancel_task
from ._translate import roots_problem

__all__ = ["BRIDGE_INFO", "BridgeHost"]

BRIDGE_INFO: dict[str, Any] = {"name": "sansio-mcp-a2e-bridge", "version": "0.1.0"}

_T = TypeVar("_T")


class _Shared(Generic[_T]):
    """A public attribute of the host that lives in the state its parts share
    (read and set through the host as before the host had parts)."""

    def __set_name__(self, owner: type[BridgeHost], name: str) -> None:
        self._name = name

    def __get__(self, host: BridgeHost, owner: type[BridgeHost] | None = None) -> _T:
        value: _T = getattr(host._state, self._name)
        return value

    def __set__(self, host: BridgeHost, value: _T) -> None:
        setattr(host._state, self._name, value)


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

    roots: _Shared[list[MCPRoot] | None] = _Shared()
    elicitation: _Shared[bool] = _Shared()
    ping_interval: _Shared[float | None] = _Shared()
    ping_timeout: _Shared[float] = _Shared()
    connect_timeout: _Shared[float] = _Shared()
    reconnect_base: _Shared[float] = _Shared()
    reconnect_max: _Shared[float] = _Shared()
    max_pages: _Shared[int] = _Shared()
    client_info: _Shared[dict[str, Any]] = _Shared()
    #: What is queued for the runner, in order (take it with :meth:`drain` or
    #: :meth:`actions`; a runner may look whether there is any without a call).
    queued: _Shared[list[Output]] = _Shared()
    #: Set once the agent's input ended.
    agent_closed: _Shared[bool] = _Shared()
    #: Exceptions the host caught in its own code (answered as runtime_error or
    #: dropped); empty unless something is wrong with the bridge itself.
    internal_errors: _Shared[list[str]] = _Shared()

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
        own_roots = None if roots is None else [_as_root(r) for r in roots]
        if own_roots is not None:
            problem = roots_problem(own_roots)
            if problem:
                raise ValueError(problem)
        state = HostState(
            roots=own_roots,
            elicitation=elicitation,
            ping_interval=ping_interval,
            ping_timeout=ping_timeout,
            connect_timeout=connect_timeout,
            reconnect_base=reconnect_base,
            reconnect_max=reconnect_max,
            max_pages=max_pages,
            client_info=dict(client_info or BRIDGE_INFO),
            new_id=new_id,
            rng=rng or random.Random(),
        )
        self._state = state
        #: The open links by connection (the state's own dict, never replaced).
        self._links = state.links
        self._resources = ResourcesAndPrompts(state)
        self._lifecycle = LinkLifecycle(
            state,
            pump=self._pump,
            on_started=self._link_started,
            on_ready=self._resources.renew_subscriptions,
            on_given_up=self._link_given_up,
        )
        self._catalog = Catalog(state, synced=self._lifecycle.synced)
        self._registry = Registry(state, self._lifecycle)
        self._asks = AgentAsks(state, pump=self._pump)
        self._tool_calls = ToolCalls(state, self._asks.ask)
        self._framer = A2EFramer()
        self._handlers = self._handler_table()

    # Public: the agent side --------------------------------------------------------------

    def receive_agent_data(self, data: bytes | bytearray, now: float) -> None:
        """Bytes of the agent's NDJSON stream; ``b""`` means it ended."""
        self._state.now = now
        try:
            for item in self._framer.feed(data):
                self._on_agent(item)
            if not data:
                self._agent_gone()
        finally:
            self._state.finish()

    def receive_agent_text(self, text: str | bytes, now: float) -> None:
        """One whole A2E message as JSON text (a WebSocket text frame)."""
        self._state.now = now
        try:
            self._on_agent(decode_text(text))
        finally:
            self._state.finish()

    def receive_agent_message(self, message: A2EMessage | Mapping[str, Any], now: float) -> None:
        """One A2E message handed over in process, as an object or a JSON object.

        It is read by the rules of the codec (the same errors as on a byte
        stream) and copied first (:func:`~sansio_mcp_apps.a2e.adopt`), so the host
        keeps nothing the sender may change later.  In a message object, a value
        that cannot be encoded raises ``TypeError``/``ValueError``, as encoding
        it would; in a JSON object it is answered as ``parse_error``.
        """
        self._state.now = now
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
            self._state.finish()

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

        The caller vouches for what :func:`~sansio_mcp_apps.a2e.adopt` would otherwise
        check and copy: ``req_id`` is a fresh, non-empty id, ``tool_name`` a
        ``str``, ``timeout`` an ``int``, and ``arguments`` a dict of JSON values
        within the nesting limit that nobody else holds.  The answer is queued as
        a :class:`ToolAnswer`.
        """
        state = self._state
        state.now = now
        try:
            self._tool_calls.call_by_fields(req_id, tool_name, arguments, timeout, streaming)
        finally:
            if state.dirty:
                state.finish()

    def agent_disconnected(self, now: float) -> None:
        """The agent went away: what servers asked of it is refused."""
        self._state.now = now
        try:
            self._agent_gone()
        finally:
            self._state.finish()

    def agent_connected(self, now: float) -> None:
        """A (new) agent is attached (WebSocket): input may flow again."""
        self._state.now = now
        self._state.agent_closed = False
        self._framer = A2EFramer()

    # Public: the server side -----------------------------------------------------------

    def register(self, config: MCPServerConfig | Mapping[str, Any], now: float) -> str:
        """Register a server without an agent request (a config file); returns its id.

        Raises ``ValueError`` for an invalid config.  Such a server is kept
        (and retried, per ``auto_reconnect``) even when its first connection fails.
        """
        self._state.now = now
        try:
            parsed = self._registry.parse_config(config)
            if isinstance(parsed, Failure):
                raise ValueError(parsed.message)
            return self._registry.add(parsed, None).server_id
        finally:
            self._state.finish()

    def connection_opened(self, connection: int, now: float) -> None:
        """The transport of ``connection`` is up: the MCP session starts."""
        self._state.now = now
        try:
            self._lifecycle.connection_opened(connection)
        finally:
            self._state.finish()

    def connection_input(self, connection: int, now: float) -> None:
        """The session of ``connection`` was fed input (or closed): act on its events."""
        state = self._state
        state.now = now
        try:
            link = state.links.get(connection)
            if link is not None:
                self._pump(link)
        finally:
            if state.dirty:  # an answer to a call makes nothing to send: no call more
                state.finish()

    def connection_lost(self, connection: int, reason: str, now: float) -> None:
        """The transport of ``connection`` failed or ended (or never came up)."""
        self._state.now = now
        try:
            self._lifecycle.connection_lost(connection, reason)
        finally:
            self._state.finish()

    def close(self, now: float) -> None:
        """Disconnect every server (the bridge is stopping)."""
        self._state.now = now
        try:
            self._registry.remove_all("the bridge is shutting down")
        finally:
            self._state.finish()

    # Public: time and output -----------------------------------------------------------

    def next_deadline(self) -> float | None:
        state = self._state
        deadlines: list[float] = []
        for link in state.links.values():
            session_deadline = link.session.next_deadline()
            for value in (session_deadline, link.connect_deadline, link.ping_at):
                if value is not None:
                    deadlines.append(value)
        deadlines.extend(
            s.reconnect_at for s in state.servers.values() if s.reconnect_at is not None
        )
        deadlines.extend(w.deadline for w in state.waits.values())
        deadlines.extend(state.task_polls.values())
        return min(deadlines) if deadlines else None

    def deadline_added(self) -> float | None:
        """The earliest deadline armed since the last call (None: none).

        Every deadline that can be earlier than :meth:`next_deadline` was when
        last asked is armed here (the sessions' own re-arming only happens on
        :meth:`handle_timer` and never moves a deadline earlier), so a runner
        re-arms its timer when this is earlier than what it waits for, without
        recomputing :meth:`next_deadline` after every input.
        """
        state = self._state
        earliest, state.earliest_added = state.earliest_added, None
        return earliest

    def handle_timer(self, now: float) -> None:
        state = self._state
        lifecycle = self._lifecycle
        state.now = now
        try:
            for link in list(state.links.values()):
                if lifecycle.connect_expired(link, now):
                    continue
                if link.session.handle_timer(now):
                    state.touch(link)  # notifications/cancelled for what expired
                self._pump(link)
                lifecycle.ping_if_due(link, now)
            lifecycle.reconnect_due(now)
            self._asks.expire(now)
            self._tool_calls.poll_due(now)
        finally:
            state.finish()

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
        state = self._state
        out, state.queued = state.queued, []
        return out

    def message_of(self, item: A2EMessage | ToolAnswer) -> A2EMessage:
        """The message to send for what :meth:`drain` gave."""
        if isinstance(item, ToolAnswer):
            return ToolCallResponse(
                id=self._state.new_id(),
                ts=item.ts,
                req_id=item.req_id,
                data=item.data,
                created_at=item.ts,
            )
        return item

    # Public: inspection ------------------------------------------------------------------

    def server_infos(self) -> list[MCPServerInfo]:
        state = self._state
        return [state.info(s) for s in state.servers.values()]

    def server_info(self, server_id: str) -> MCPServerInfo | None:
        state = self._state
        server = state.servers.get(server_id)
        return state.info(server) if server is not None else None

    def tool_definitions(self) -> list[dict[str, Any]]:
        return self._catalog.tool_definitions()

    # The agent's messages ----------------------------------------------------------------

    def _handler_table(self) -> dict[type[A2EMessage], Callable[[Any], None]]:
        registry, catalog, resources = self._registry, self._catalog, self._resources
        asks = self._asks
        return {
            MCPServerListRequest: registry.on_server_list,
            MCPServerRegisterRequest: registry.on_register,
            MCPServerUnregisterRequest: registry.on_unregister,
            MCPResourceListRequest: catalog.on_resource_list,
            MCPResourceReadRequest: resources.on_resource_read,
            MCPResourceSubscribeRequest: resources.on_subscribe,
            MCPPromptListRequest: catalog.on_prompt_list,
            MCPPromptGetRequest: resources.on_prompt_get,
            MCPSamplingResponse: asks.on_sample_response,
            MCPRootsListResponse: asks.on_roots_response,
            ElicitResponse: asks.on_elicit_response,
            ToolListRequest: catalog.on_tool_list,
            ToolCallRequest: self._tool_calls.on_tool_call,
            Ping: self._on_ping,
            HandshakeRequest: self._on_handshake,
            A2EError: asks.on_agent_error,
        }

    def _on_agent(self, item: A2EMessage | DecodeError) -> None:
        state = self._state
        if isinstance(item, DecodeError):
            state.send(item.to_error(**state.envelope()))
            return
        if item.DIRECTION not in (AGENT_TO_HOST, BOTH):
            state.send_error(
                item.id,
                Failure(
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
        except Refused as refused:
            state.reply_failure(item, refused.failure)
        except Exception as exc:  # a bug here must not take the bridge down
            state.reply_failure(item, state.bug(item.type, exc))

    def _agent_gone(self) -> None:
        self._state.agent_closed = True
        self._asks.agent_gone()
        # What servers still do for it is cancelled, and their answers dropped: an
        # agent that connects next must not get them (servers outlive agents on
        # WebSocket).
        for link in self._state.links.values():
            mine = [rid for rid, call in link.calls.items() if call.for_agent]
            for request_id in mine:
                del link.calls[request_id]
                if request_id in link.session.pending_requests:
                    try:
                        link.session.cancel(request_id, "the agent disconnected")
                    except LocalProtocolError:
                        link.session.forget(request_id)
            # Tasks run for its calls are cancelled too (tasks/result's own cancel does not).
            tasks = [task_id for conn, task_id in self._state.followed_tasks if conn == link.conn]
            for task_id in tasks:
                cancel_task(self._state, link, task_id)
            if mine or tasks:
                self._state.touch(link)

    def _on_handshake(self, request: HandshakeRequest) -> None:
        """The bridge serves two capabilities: ``mcp`` and the ``tools`` its MCP
        tools appear under.  An agent that names others is told they are off."""
        state = self._state
        served = ("mcp", "tools")
        wanted = request.agent_caps or list(served)
        accepted = [
            {
                "capability": cap,
                "enabled": cap in served,
                "metadata": {"elicitation": "x-mcp/elicit"}
                if cap == "mcp" and state.elicitation
                else {},
            }
            for cap in wanted
        ]
        ok = any(entry["enabled"] for entry in accepted)
        state.send(
            HandshakeResponse(
                **state.envelope(),
                req_id=request.id,
                session_id=state.new_id(),
                accepted_caps=accepted,
                ok=ok,
                reason="" if ok else "this host serves only the mcp and tools capabilities",
            )
        )

    def _on_ping(self, request: Ping) -> None:
        state = self._state
        state.send(Pong(**state.envelope(), req_id=request.id))

    # The servers' events -----------------------------------------------------------------

    def _link_started(self, link: ServerLink) -> None:
        self._catalog.start_sync(link)

    def _link_given_up(self, link: ServerLink) -> None:
        self._catalog.withdraw_tools(link)

    def _pump(self, link: ServerLink) -> None:
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
                self._state.internal_errors.append(
                    f"{link.server.server_id}: {type(event).__name__}: {type(exc).__name__}: {exc}"
                )
                if isinstance(event, RequestReceived) and event.request_id in session.open_requests:
                    # Its request must still be answered, or the server waits for good.
                    session.respond_error(
                        event.request_id, ErrorCode.INTERNAL_ERROR, f"the bridge failed: {exc}"
                    )

    def _on_event(self, link: ServerLink, event: Event) -> None:
        # (ResponseReceived is handled by _pump itself; SessionInitialized's news comes
        # with the start call's result, and the core already answered a ProtocolViolation.)
        if isinstance(event, RequestFailed):
            call = link.calls.pop(event.request_id, None)
            if call is not None:
                call.err(event.error)
            self._lifecycle.transport_failed(link, event.error)
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
            self._state.push(link, "notifications/progress", params)
        elif isinstance(event, NotificationReceived):
            followed = (
                self._state.followed_tasks.get((link.conn, str(event.params.get("taskId"))))
                if event.method == "notifications/tasks/status"
                else None
            )
            if followed is not None:
                followed.status(event.params)  # a tool call's task: a tool/event
                return
            self._state.push(link, event.method, copy_json(event.params))
            self._catalog.list_changed(link, event.method)
        elif isinstance(event, RequestReceived):
            self._asks.on_server_request(link, event)
        elif isinstance(event, InputRequired):
            self._asks.on_input_required(link, event)
        elif isinstance(event, SubscriptionAcknowledged):
            self._resources.listen_acknowledged(link, event)
        elif isinstance(event, CancelRequested):
            self._asks.server_cancelled(link, event.request_id)
        elif isinstance(event, ConnectionClosed):
            self._lifecycle.drop(link, "the connection closed", LinkTrigger.SESSION_CLOSED)


def _as_root(root: MCPRoot | Mapping[str, Any]) -> MCPRoot:
    return root if isinstance(root, MCPRoot) else MCPRoot.from_dict(root)
