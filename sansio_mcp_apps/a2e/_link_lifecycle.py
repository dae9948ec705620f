"""The life of a server's links: connect, start the session, sync, ready, ping,
end, and reconnect.

Every move of a link goes through :meth:`ServerLink.advance` and so through the
table in :mod:`._link_states`.  What a link's start and readiness mean for the
catalog (sync the lists) and for subscriptions (renew them) is the host's to
route: :class:`LinkLifecycle` is given those as ``on_started`` and ``on_ready``, and
what a server given up on means (its tools leave the listing) as ``on_given_up``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from sansio_mcp import (
    HANDSHAKE_REVISIONS,
    ClientSession,
    ConnectionClosedError,
    HTTPStatusError,
    LocalProtocolError,
    MCPError,
    RequestTimeout,
    SessionState,
)

from ._actions import ConnectServer, DisconnectServer
from ._failures import Failure
from ._host_state import Call, HostState, ServerLink, ServerRecord
from ._link_states import SERVER_STATUS, LinkState, LinkTrigger
from ._messages import MCPServerRegisterResponse
from ._models import MCPErrorCode, MCPServerConfig, MCPServerStatus, MCPTransport

__all__ = ["LinkLifecycle"]

_ENDED = (MCPServerStatus.DISCONNECTED.value, MCPServerStatus.ERROR.value)

LinkHook = Callable[[ServerLink], None]

#: The level asked of every server for its log messages, which reach the agent as
#: ``mcp/server/push`` (the spec forwards ``notifications/message``): all of them, the
#: agent keeps what it wants.  A 2026-07-28 server logs only for a request that asks
#: (``_meta`` ``io.modelcontextprotocol/logLevel``, on every request the bridge
#: sends); an older one is asked once per session (``logging/setLevel``).
SERVER_LOG_LEVEL = "debug"


class LinkLifecycle:
    """Connects servers and moves their links through the lifecycle table.

    ``pump`` hands a link's session events to the host (a closed session
    still reports what failed with it); ``on_started`` runs when a session
    has started (the catalog syncs), ``on_ready`` when a link became ready
    (subscriptions are renewed), ``on_given_up`` when a link ended and no
    reconnect will follow (``auto_reconnect`` off).
    """

    def __init__(
        self,
        state: HostState,
        *,
        pump: LinkHook,
        on_started: LinkHook,
        on_ready: LinkHook,
        on_given_up: LinkHook,
    ) -> None:
        self._state = state
        self._pump = pump
        self._on_started = on_started
        self._on_ready = on_ready
        self._on_given_up = on_given_up

    # Connecting --------------------------------------------------------------------------

    def new_session(self, config: MCPServerConfig) -> ClientSession:
        state = self._state
        capabilities: dict[str, Any] = {"sampling": {}, "roots": {"listChanged": True}}
        if state.elicitation:
            capabilities["elicitation"] = {"form": {}}
        options: dict[str, Any] = {}
        version = config.protocol_version
        if config.transport == MCPTransport.SSE:
            # The legacy HTTP+SSE transport has no stateless era.
            options["supported_versions"] = HANDSHAKE_REVISIONS
            options["mode"] = "handshake"
            if version in HANDSHAKE_REVISIONS:
                options["protocol_version"] = version
                options["supported_versions"] = (version,)
        elif version in ("auto", "handshake", "stateless", "legacy", "modern"):
            options["mode"] = version
        else:
            # One revision, insisted on: a server that answers with another is refused.
            options["protocol_version"] = version
            options["supported_versions"] = (version,)
        return ClientSession(
            capabilities=capabilities,
            client_info=state.client_info,
            log_level=SERVER_LOG_LEVEL,
            **options,
        )

    def connect(self, server: ServerRecord) -> None:
        """Start a new link to ``server``: the runner is asked to open a transport."""
        state = self._state
        conn = state.next_conn
        state.next_conn += 1
        try:
            session = self.new_session(server.config)
        except LocalProtocolError as exc:
            server.status, server.error = MCPServerStatus.ERROR.value, str(exc)
            return
        connect_deadline = state.now + state.start_timeout(server.config)
        link = ServerLink(conn=conn, server=server, session=session)
        link.connect_deadline = connect_deadline
        state.added(connect_deadline)
        server.link = link
        server.last_conn = conn
        server.status = SERVER_STATUS[link.state]
        state.links[conn] = link
        state.queued.append(ConnectServer(conn, server.server_id, server.config, session))

    def connection_opened(self, connection: int) -> None:
        """The runner opened the transport: the MCP session starts."""
        state = self._state
        link = state.links.get(connection)
        if link is None or link.state is not LinkState.CONNECTING:
            return
        link.advance(LinkTrigger.TRANSPORT_OPENED)
        link.connect_deadline = None
        try:
            timeout = state.start_timeout(link.server.config)
            start_id = link.session.start(now=state.now, timeout=timeout)
            state.added(state.now + timeout)
        except LocalProtocolError as exc:
            self.drop(link, f"the session could not start: {exc}", LinkTrigger.START_FAILED)
            return
        link.calls[start_id] = Call(
            lambda result: self._started(link),
            lambda error: self._start_failed(link, error),
        )
        state.touch(link)

    def _started(self, link: ServerLink) -> None:
        if link.state is not LinkState.STARTING:
            return
        link.advance(LinkTrigger.STARTED)
        server = link.server
        session = link.session
        server.mcp_version = session.protocol_version or ""
        info = session.peer_info or {}
        name, version = info.get("name"), info.get("version")
        server.server_name = name if isinstance(name, str) else ""
        server.server_version = version if isinstance(version, str) else ""
        server.capabilities = dict(session.peer_capabilities or {})
        if not session.is_stateless and "logging" in server.capabilities:
            # Not answered, or refused: the server logs as it likes (nothing to undo).
            self._state.call(
                link, "logging/setLevel", {"level": SERVER_LOG_LEVEL}, _ignore, _ignore
            )
        self._on_started(link)
        self.synced(link)

    def _start_failed(self, link: ServerLink, error: MCPError) -> None:
        if link.state is not LinkState.STARTING:
            return
        state = self._state
        failure = state.classify(
            error, "start", link.server, timeout=state.start_timeout(link.server.config)
        )
        self.drop(
            link,
            f"the MCP session did not start: {failure.message}",
            LinkTrigger.START_FAILED,
            failure=failure,
        )

    def synced(self, link: ServerLink) -> None:
        """A listing of the first sync ended: ready once none is left."""
        server = link.server
        if link.state is not LinkState.SYNCING or server.syncing:
            return
        state = self._state
        link.advance(LinkTrigger.SYNCED)
        server.error = ""
        server.connected_at = state.now
        server.attempts = 0
        if state.ping_interval is not None:
            link.ping_at = state.now + state.ping_interval
            state.added(link.ping_at)
        self._on_ready(link)
        if server.registering is not None:
            request, server.registering = server.registering, None
            state.send(
                MCPServerRegisterResponse(
                    **state.envelope(),
                    req_id=request.id,
                    ok=True,
                    server=state.info(server).to_dict(),
                )
            )

    # Ending ------------------------------------------------------------------------------

    def drop(
        self,
        link: ServerLink,
        reason: str,
        trigger: LinkTrigger,
        *,
        failure: Failure | None = None,
    ) -> None:
        """End a link by ``trigger``: tear the transport down, fail what was pending
        on it, and decide what becomes of its server (retry, or give up)."""
        if link.closed:
            return
        link.advance(trigger)  # first: a move outside the table changes nothing
        state = self._state
        del state.links[link.conn]
        server = link.server
        state.queued.append(DisconnectServer(link.conn, server.server_id, reason))
        state.dirty.discard(link.conn)
        for key, wait in list(state.waits.items()):
            if wait.link is link:
                del state.waits[key]
        waiters, link.listen_waiters = link.listen_waiters, []
        for _, waiter in waiters:
            waiter(
                Failure(MCPErrorCode.MCP_TRANSPORT_ERROR, reason, {"server_id": server.server_id})
            )
        server.link = None
        server.syncing.clear()
        server.resync.clear()
        link.session.close()
        self._pump(link)
        if link.state is LinkState.REMOVED:
            return
        server.error = reason
        if server.registering is not None:
            # A registration that never reached ready is not kept.
            request, server.registering = server.registering, None
            state.servers.pop(server.server_id, None)
            failure = failure or Failure(MCPErrorCode.MCP_TRANSPORT_ERROR, reason)
            state.reply_failure(
                request,
                attrs.evolve(
                    failure,
                    message=f"could not register {server.server_id!r}: {reason}",
                    detail={
                        **failure.detail,
                        "server_id": server.server_id,
                        "server": state.info(server).to_dict(),
                    },
                ),
            )
            return
        if server.config.auto_reconnect:
            delay = min(state.reconnect_max, state.reconnect_base * (2**server.attempts))
            delay = delay / 2 + state.rng.random() * delay / 2  # "equal jitter"
            server.attempts += 1
            server.reconnect_at = state.now + delay
            state.added(server.reconnect_at)
        else:
            self._on_given_up(link)

    def connection_lost(self, connection: int, reason: str) -> None:
        """The runner lost (or never got) the transport of ``connection``."""
        state = self._state
        link = state.links.get(connection)
        if link is not None:
            self.drop(link, reason or "the connection ended", LinkTrigger.TRANSPORT_LOST)
            return
        # Already handled (the session saw its end first): keep the better reason.
        for server in state.servers.values():
            if server.last_conn == connection and server.link is None and reason:
                if server.status in _ENDED:
                    server.error = reason

    def transport_failed(self, link: ServerLink, error: MCPError) -> None:
        """Over HTTP there is no connection to lose: a request that could not reach
        the server, or a session the server ended, is what losing it looks like."""
        if link.closed or link.session.state is SessionState.CLOSED:
            return
        data = error.data if isinstance(error.data, dict) else {}
        if isinstance(error, ConnectionClosedError) or (
            isinstance(error, HTTPStatusError) and data.get("status") in (0, None)
        ):
            self.drop(link, error.message, LinkTrigger.SESSION_CLOSED)

    # Timers ------------------------------------------------------------------------------

    def connect_expired(self, link: ServerLink, now: float) -> bool:
        """Drop a link whose transport did not open in time; True if it was."""
        if link.connect_deadline is None or now < link.connect_deadline:
            return False
        timeout = self._state.start_timeout(link.server.config)
        self.drop(link, f"no connection within {timeout:g} s", LinkTrigger.CONNECT_TIMED_OUT)
        return True

    def ping_if_due(self, link: ServerLink, now: float) -> None:
        if link.ping_at is not None and now >= link.ping_at and link.state is LinkState.READY:
            self._ping(link)

    def reconnect_due(self, now: float) -> None:
        for server in list(self._state.servers.values()):
            if server.reconnect_at is not None and now >= server.reconnect_at:
                server.reconnect_at = None
                self.connect(server)

    def _ping(self, link: ServerLink) -> None:
        state = self._state
        link.ping_at = None
        sent = state.now
        method = "server/discover" if link.session.is_stateless else "ping"
        timeout = min(float(link.server.config.timeout), state.ping_timeout)

        def ping_again() -> None:
            if state.ping_interval is not None:
                link.ping_at = state.now + state.ping_interval
                state.added(link.ping_at)

        def ok(result: dict[str, Any]) -> None:
            link.server.last_ping_ms = round((state.now - sent) * 1000, 3)
            if not link.closed:
                ping_again()

        def err(error: MCPError) -> None:
            if link.closed:
                return
            if isinstance(error, RequestTimeout):
                self.drop(
                    link, f"no answer to {method} within {timeout:g} s", LinkTrigger.PING_TIMED_OUT
                )
            else:
                ping_again()

        state.call(link, method, None, ok, err, timeout=timeout)


def _ignore(outcome: object) -> None:
    """The outcome of a request whose answer changes nothing."""
