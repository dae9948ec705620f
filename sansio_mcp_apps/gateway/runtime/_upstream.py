"""One connector's upstream connection: connected, listed, watched, and
reconnected with backoff when it fails; tool calls go through it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any

import attrs

from sansio_mcp import (
    ConnectionClosedError,
    ErrorCode,
    HTTPStatusError,
    MCPError,
    RequestReceived,
    RequestTimeout,
)
from sansio_mcp.http import x_mcp_header_problems
from sansio_mcp.runtime import (
    Backend,
    ClientAPI,
    ClientHandlers,
    ProgressCallback,
    SessionOptions,
    Signal,
    TimedOut,
)
from sansio_mcp.tasks import declaring_tasks

from ...gateway import (
    Backoff,
    ConnectorConfig,
    ConnectorStatus,
    ConnectorTools,
    GatewayStore,
    StatusTrigger,
    backoff_delay,
    move,
)

__all__ = ["Ask", "ConnectorUnavailable", "Opener", "Upstream", "UpstreamSettings"]

logger = logging.getLogger("sansio_mcp_apps.gateway")

#: ``opener(connector, **options)``: a client of the connector's upstream.
Opener = Callable[..., AbstractAsyncContextManager[ClientAPI]]

#: Seconds before listening again to an upstream alive but whose stream ended.
RELISTEN_PAUSE = 1.0
#: Failures that say the connection, not the request, went wrong.
_TRANSPORT_FAILURES = (ConnectionClosedError, HTTPStatusError, RequestTimeout, OSError, TimedOut)
#: What of a tools/call's params goes to a handshake-era upstream.
_HANDSHAKE_CALL_KEYS = frozenset({"name", "arguments", "task", "_meta"})


@attrs.define(eq=False)
class _Call:
    """One tools/call through the gateway: how its client is asked (None: it
    cannot be), and the upstream connection that has not answered it yet."""

    ask: Ask | None
    unanswered: ClientAPI | None = None


async def _unrelated(*_: Any) -> Any:
    # Never reached: _RelayingHandlers routes each request itself.  What comes by
    # MRTR (a 2026-07-28 upstream) is passed through, not answered here.
    raise MCPError(ErrorCode.INTERNAL_ERROR, "the gateway answers no request by itself")


@attrs.define
class _RelayingHandlers(ClientHandlers):
    """Handlers declaring every input capability, whose requests go to ``relay``
    with the event (which says which of our requests each came with)."""

    relay: Callable[[RequestReceived], Awaitable[dict[str, Any]]] = attrs.field(kw_only=True)

    async def handle_request(self, event: RequestReceived) -> dict[str, Any]:
        return await self.relay(event)


class ConnectorUnavailable(Exception):
    """The connector has no live upstream connection (down, or reconnecting)."""


#: How a call's own client is asked something (a handshake-era client: by a
#: server-to-client request): ``ask(method, params) -> result``.
Ask = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@attrs.frozen
class UpstreamSettings:
    """How every connector's upstream is kept: the reconnect ``backoff``, a ping
    every ``ping_interval`` s, ``call_timeout`` per tools/call, ``list_timeout`` per
    page of its tools/list (an upstream that never lists is retried, not waited on
    for ever), and how long a call whose upstream lost its session waits for the new
    one (``reconnect_wait``)."""

    backoff: Backoff = attrs.field(factory=Backoff)
    ping_interval: float = 10.0
    call_timeout: float | None = 300.0
    list_timeout: float = 30.0
    reconnect_wait: float = 5.0
    client_info: dict[str, Any] = attrs.field(
        factory=lambda: {"name": "sansio-mcp-gateway", "version": "0.1.0"}
    )


class Upstream:
    """The live connection of one connector (None while down).  ``on_change`` is
    told (with the connector's name) when its tools may have changed, ``on_tried``
    when its first attempt to connect is over."""

    def __init__(
        self,
        config: ConnectorConfig,
        backend: Backend,
        store: GatewayStore,
        opener: Opener,
        settings: UpstreamSettings,
        *,
        on_change: Callable[[str], None],
        on_tried: Callable[[], None],
    ) -> None:
        self.config = config
        self.backend = backend
        self.store = store
        self.opener = opener
        self.settings = settings
        self._on_change = on_change
        self._on_tried = on_tried
        self.name = config.name
        self.client: ClientAPI | None = None
        self._lost: Signal | None = None
        self._lost_reason: str | None = None
        self._ready_waiters: list[Signal] = []
        # The calls in flight, each with how its client can be asked.
        self._in_flight: list[_Call] = []
        # Calls of this connection given up without the upstream's answer (cancelled,
        # timed out): it may still be working on them, and ask for them.
        self._abandoned = 0
        #: Whether the first attempt to connect is over (either way).
        self.tried = False

    # The connection loop ---------------------------------------------------------

    async def run(self) -> None:
        """Connect, list, watch; on failure wait out the backoff and again, until cancelled."""
        backend, store = self.backend, self.store
        while True:
            try:
                await self._connect_once()
            except Exception as exc:  # any failure of the upstream: reconnect later
                error = _describe(exc)
            else:
                error = self._lost_reason or "the connection ended"
            self.client = None
            listed = store.record(self.name).status is ConnectorStatus.READY
            record = move(store, self.name, StatusTrigger.FAILED, error=error)
            # Said once per outage; the retries that fail again are only debug news.
            level = logging.WARNING if record.attempts == 1 else logging.DEBUG
            logger.log(level, "connector %s is down (%s); reconnecting", self.name, error)
            self._tried()
            if listed:  # its tools left the catalog; a failed retry changes nothing
                self._on_change(self.name)
            await backend.sleep(backoff_delay(record.attempts - 1, self.settings.backoff))
            move(store, self.name, StatusTrigger.RETRY)

    async def _connect_once(self) -> None:
        options = SessionOptions(
            handlers=self._handlers(), client_info=dict(self.settings.client_info)
        )
        async with self.opener(self.config, **options) as client:
            client.session.pass_input_required = True
            tools = await self._list(client)
            self._warn_of_unknown_overrides(tools)
            self._lost = self.backend.new_signal()
            self._lost_reason = None
            self._abandoned = 0
            self.client = client
            # A peer that goes away (a stdio child exiting, a socket closing) is
            # seen at once, not at the next ping.
            client.driver.on_closed = partial(self.lost, "the connection closed")
            if client.driver.closed:
                self.lost("the connection closed")
            move(self.store, self.name, StatusTrigger.LISTED, tools=tools)
            self._tried()
            for waiter in self._ready_waiters:
                waiter.set()
            self._ready_waiters.clear()
            self._on_change(self.name)
            async with self.backend.open_task_group() as group:
                group.start_soon(self._follow_changes, client)
                group.start_soon(self._keep_alive, client)
                await self._lost.wait()
                group.cancel()

    def _handlers(self) -> ClientHandlers:
        # Every input capability is declared so that a 2026-07-28 upstream asks (by
        # MRTR, passed through) rather than refuses; the gateway's own session then
        # checks what its client declared.  A handshake-era upstream asks by a request
        # of its own, relayed to the client of the call it belongs to.
        return _RelayingHandlers(
            sampling=_unrelated,
            sampling_tools=True,
            elicitation=_unrelated,
            elicitation_modes=("form", "url"),
            roots=_unrelated,
            relay=self._relay,
        )

    async def _relay(self, event: RequestReceived) -> dict[str, Any]:
        """A handshake-era upstream's request, put to the client of the call it
        belongs to, and to no other: the call whose stream it came on (Streamable
        HTTP says), else (stdio and other one-stream transports say nothing) the one
        call the upstream may still be working on.  Refused when that call is over,
        when there is none or several, or when its client asks by MRTR."""
        client = self.client
        call: _Call | None = None
        if event.relation_known:
            owner = client.driver.owner_of(event.related_request) if client else None
            call = owner if isinstance(owner, _Call) else None
            why = (
                "it came with no call of this gateway's"
                if event.related_request is None
                else "the call it belongs to is over"
            )
        else:
            calls = list(self._in_flight)
            unfinished = len(calls) + self._abandoned
            if unfinished == 1 and calls:
                call = calls[0]
            why = "nothing says which call it belongs to, and " + (
                "no call is in flight"
                if not unfinished
                else f"{unfinished} calls the upstream may still be working on "
                f"({self._abandoned} of them given up) could be the one"
            )
        if call is not None and call.ask is None:
            why, call = "its client asks by MRTR, which cannot carry a request made mid-call", None
        if call is None or call.ask is None:
            raise MCPError(
                ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"the gateway cannot relay {event.method} from this upstream to a client: {why}",
            )
        return await call.ask(event.method, event.params)

    def _warn_of_unknown_overrides(self, tools: ConnectorTools) -> None:
        # A typo ("wirte_file": {"enabled": false}) would leave the tool it meant on.
        listed = {t.get("name") for t in tools.tools}
        unknown = sorted(name for name in self.config.tools if name not in listed)
        if unknown:
            logger.warning(
                "connector %s lists no tool named %s, which its config's tools name "
                "(a typo? the override does nothing)",
                self.name,
                ", ".join(map(repr, unknown)),
            )

    def _tried(self) -> None:
        if not self.tried:
            self.tried = True
            self._on_tried()

    async def _list(self, client: ClientAPI) -> ConnectorTools:
        """Every tool of the upstream (all pages, fresh), with the shortest ``ttlMs``."""
        if "tools" not in client.server_capabilities:
            return ConnectorTools(())
        tools: list[dict[str, Any]] = []
        ttls: list[int] = []
        cursor: str | None = None
        for _ in range(1000):  # an upstream cycling its cursors cannot hold us forever
            params = {"cursor": cursor} if cursor is not None else None
            result = await client.request(
                "tools/list", params, fresh=True, timeout=self.settings.list_timeout
            )
            page = result.get("tools")
            if not isinstance(page, list):
                raise MCPError(ErrorCode.INVALID_PARAMS, "the upstream's tools/list has no tools")
            # Tools a client must not use (SEP-2243) are not offered to ours either.
            tools.extend(
                t
                for t in page
                if isinstance(t, dict)
                and not (
                    client.session.is_stateless and x_mcp_header_problems(t.get("inputSchema"))
                )
            )
            if isinstance(result.get("ttlMs"), int):
                ttls.append(result["ttlMs"])
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or len(tools) > self.config.max_tools:
                break  # past the limit the rest is left out: no need to fetch it
        return ConnectorTools.capped(tools, min(ttls) if ttls else None, self.config.max_tools)

    async def _follow_changes(self, client: ClientAPI) -> None:
        caps = client.server_capabilities.get("tools")
        if not isinstance(caps, dict) or not caps.get("listChanged"):
            return
        while True:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _method, _params in subscription:
                        tools = await self._list(client)
                        move(self.store, self.name, StatusTrigger.LIST_CHANGED, tools=tools)
                        self._on_change(self.name)
            except MCPError as exc:
                if not isinstance(exc, _TRANSPORT_FAILURES):
                    return  # it does not follow list changes; keep-alive still watches it
            except _TRANSPORT_FAILURES:
                pass
            # The stream ended or broke: most often the upstream went away (an HTTP
            # upstream has no other standing connection to tell us so).
            if not await self._alive(client):
                return
            await self.backend.sleep(RELISTEN_PAUSE)

    async def _keep_alive(self, client: ClientAPI) -> None:
        interval = self.settings.ping_interval
        while True:
            # A ping every interval, or at once when the transport lost a stream.
            trouble = self.backend.new_signal()
            client.driver.on_trouble = trouble.set
            async with self.backend.move_on_after(interval):
                await trouble.wait()
            if client.driver.closed:
                self.lost("the connection closed")
                return
            if not await self._alive(client):
                return

    async def _alive(self, client: ClientAPI) -> bool:
        """Ping the upstream; False, the connection marked lost, if it does not answer."""
        try:
            await client.ping(timeout=self.settings.ping_interval)
        except _TRANSPORT_FAILURES as exc:
            self.lost(f"ping failed: {_describe(exc)}")
            return False
        except MCPError:
            pass  # answered, if with an error: it is alive
        return True

    def lost(self, reason: str | None = None) -> None:
        """The connection failed (seen by a call or the keep-alive): reconnect."""
        if self._lost is not None:
            self._lost_reason = self._lost_reason or reason
            self._lost.set()

    async def wait_ready(self, timeout: float) -> ClientAPI | None:
        """The live client, waiting up to ``timeout`` seconds for a reconnection."""
        if self.client is not None:
            return self.client
        signal = self.backend.new_signal()
        self._ready_waiters.append(signal)
        async with self.backend.move_on_after(timeout):
            await signal.wait()
        return self.client

    # Calls -----------------------------------------------------------------------

    async def call(
        self,
        params: dict[str, Any],
        *,
        on_progress: ProgressCallback | None = None,
        ask: Ask | None = None,
    ) -> dict[str, Any]:
        """``tools/call`` upstream with ``params``; :class:`ConnectorUnavailable` when
        it is down.  A session the upstream lost (HTTP 404) is re-initialized and the
        call sent again once: the upstream never saw it.  ``ask`` puts what a
        handshake-era upstream asks mid-call to the call's client."""
        # One coroutine for the whole call (no helpers awaited on the way): every wake
        # of the waiting call resumes each frame of its stack.
        call = _Call(ask)
        self._in_flight.append(call)
        try:
            client = self.client
            if (
                client is None
                and self.store.record(self.name).status is not ConnectorStatus.BACKOFF
            ):
                # Lost a moment ago, or connecting: the new connection is worth a short wait.
                client = await self.wait_ready(self.settings.reconnect_wait)
            for attempt in range(2):
                if client is None:
                    # Why it is down, as last seen: the caller can tell a typo from an outage.
                    error = self.store.record(self.name).error
                    raise ConnectorUnavailable(self.name, *([error] if error else []))
                sent = params
                if not client.session.is_stateless:
                    sent = {k: v for k, v in params.items() if k in _HANDSHAKE_CALL_KEYS}
                # Whether the upstream answered: a call timed out or cancelled may go on
                # upstream anyway (see _relay).
                call.unanswered = client
                try:
                    result = await client.send_request(
                        "tools/call",
                        sent,
                        timeout=self.settings.call_timeout,
                        on_progress=on_progress,
                        owner=call,
                    )
                except (HTTPStatusError, ConnectionClosedError) as exc:
                    call.unanswered = None
                    self._failed(client, exc)
                    status = exc.data.get("status") if isinstance(exc.data, dict) else None
                    if status != 404 or attempt:
                        raise ConnectorUnavailable(self.name, _describe(exc)) from exc
                    client = await self.wait_ready(self.settings.reconnect_wait)
                    continue
                except MCPError as exc:
                    if not isinstance(exc, RequestTimeout):
                        call.unanswered = None
                    if isinstance(exc, _TRANSPORT_FAILURES):
                        self._failed(client, exc)
                        raise ConnectorUnavailable(self.name, _describe(exc)) from exc
                    raise
                except _TRANSPORT_FAILURES as exc:
                    self._failed(client, exc)
                    raise ConnectorUnavailable(self.name, _describe(exc)) from exc
                call.unanswered = None
                return result
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            self._in_flight.remove(call)
            if call.unanswered is not None and call.unanswered is self.client:
                # Cancelled or timed out: the upstream may still be working on it,
                # and ask for it (see _relay).
                self._abandoned += 1

    async def task_request(
        self, method: str, params: dict[str, Any], *, ask: Ask | None = None
    ) -> dict[str, Any]:
        """A ``tasks/*`` request upstream, declaring the tasks extension on a
        2026-07-28 upstream; :class:`ConnectorUnavailable` when it is down.  ``ask``
        puts what a 2025-11-25 upstream asks while its ``tasks/result`` waits to the
        client (as a call's questions are)."""
        client = self.client or await self.wait_ready(self.settings.reconnect_wait)
        if client is None:
            error = self.store.record(self.name).error
            raise ConnectorUnavailable(self.name, *([error] if error else []))
        if client.session.is_stateless:
            params = declaring_tasks(params)
        call = _Call(ask)
        if ask is not None:
            self._in_flight.append(call)
        try:
            return await client.send_request(
                method, params, timeout=self.settings.call_timeout, owner=call
            )
        except _TRANSPORT_FAILURES as exc:
            self._failed(client, exc)
            raise ConnectorUnavailable(self.name, _describe(exc)) from exc
        finally:
            if ask is not None:
                self._in_flight.remove(call)

    def _failed(self, client: ClientAPI, exc: BaseException) -> None:
        if self.client is client:
            self.client = None
            self.lost(_describe(exc))


def _describe(exc: BaseException) -> str:
    """Why a connector is down, for its status and the log: what happened, in words
    (an error's message, not its JSON-RPC code, which names nothing to a person)."""
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return _describe(exc.exceptions[0])
    if isinstance(exc, MCPError):
        return exc.message or type(exc).__name__
    return str(exc) or type(exc).__name__
