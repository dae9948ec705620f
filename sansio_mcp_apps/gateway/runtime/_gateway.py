"""The gateway: its connectors' upstreams, the catalog they make, the
:class:`GatewayServer` that serves it, and the hints that tell listening
clients the list changed."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import attrs

from sansio_mcp import ServerSession
from sansio_mcp.http import LOOPBACK_HOSTS
from sansio_mcp.runtime import Backend, Signal, Stores, TransportBackend

from ...gateway import (
    DEFAULT_TTL_MS,
    Access,
    Catalog,
    CatalogView,
    ConnectorConfig,
    GatewayConfig,
    GatewayHTTPServer,
    GatewayOAuthRouter,
    GatewayStore,
    MemoryStore,
    StatusTrigger,
    move,
    status_report,
)
from .._tasks import TaskRouteLimits, TaskRoutes
from ._parked import ParkingLimits, ParkingLot
from ._record import CallRecorder
from ._replicas import ParkedCallOwners, ReplicaLink, parked_call_owners
from ._server import GatewayServer
from ._task_routes import task_route_store
from ._upstream import Opener, Upstream, UpstreamSettings

__all__ = ["Gateway", "transport_opener"]


def transport_opener(backend: TransportBackend) -> Opener:
    """Open a connector's upstream with ``backend``'s transports."""

    def opener(connector: ConnectorConfig, **options: Any) -> Any:
        if connector.transport == "stdio":
            return backend.connect(
                list(connector.cmd),
                None,
                None,
                env=dict(connector.env) or None,
                cwd=connector.cwd or None,
                **options,
            )
        if connector.transport == "http":
            return backend.connect(
                [], connector.url, "http", headers=dict(connector.headers) or None, **options
            )
        return backend.connect([], connector.url, connector.transport, **options)

    return opener


class Gateway:
    """Many MCP servers behind one Streamable HTTP endpoint.

    :meth:`run` keeps every connector connected (reconnecting with ``backoff``)
    and the hints flowing; serve :attr:`server` with :meth:`router` on any
    backend's ``serve_router``.  ``store`` holds connector status and tools
    (in memory by default); ``settings`` say how upstreams are kept.  ``stores``
    (shared by replicas behind one load balancer) let a retry of a call parked on
    another replica reach it; ``parked_owners`` overrides the store of who parked
    what that ``stores`` call for.  ``state_keys`` (the requestState key ring) and
    ``stores`` go to :attr:`server` too.
    """

    def __init__(
        self,
        config: GatewayConfig,
        backend: Backend,
        opener: Opener,
        *,
        store: GatewayStore | None = None,
        name: str = "sansio-mcp-gateway",
        version: str = "0.1.0",
        page_size: int = 100,
        default_ttl_ms: int = DEFAULT_TTL_MS,
        settings: UpstreamSettings | None = None,
        hint_interval: float = 0.25,
        state_keys: Sequence[bytes] | None = None,
        stores: Stores | None = None,
        parked_owners: ParkedCallOwners | None = None,
    ) -> None:
        self.config = config
        self.backend = backend
        self.store: GatewayStore = store or MemoryStore([c.name for c in config.connectors])
        self.default_ttl_ms = default_ttl_ms
        self._catalogs = CatalogView(self.store, self.config, default_ttl_ms)
        # Each virtual MCP's catalog: the store's, with its connectors alone.
        virtual_catalogs = {
            v.id: CatalogView(
                self.store,
                attrs.evolve(
                    config, connectors=tuple(c for c in config.connectors if c.name in v.connectors)
                ),
                default_ttl_ms,
            )
            for v in config.virtual_mcps
        }
        # Each session's endpoint and principal, as the router found them.
        self.access: weakref.WeakKeyDictionary[ServerSession, Access] = weakref.WeakKeyDictionary()
        #: Records every tools/call (the config's ``call_log`` and ``metrics``).
        self.recorder = CallRecorder(
            self.store,
            tuple(c.name for c in config.connectors),
            call_log=config.call_log,
            metrics=config.metrics,
        )
        recording = config.call_log is not None or config.metrics
        settings = settings or UpstreamSettings(client_info={"name": name, "version": version})
        #: Seconds between two list-changed hints: a burst within them is one hint.
        self.hint_interval = hint_interval
        self.upstreams = {
            c.name: Upstream(
                c,
                backend,
                self.store,
                opener,
                settings,
                on_change=self.tools_changed,
                on_tried=self.first_attempt_over,
            )
            for c in config.connectors
        }
        #: Calls of handshake-era upstreams whose question waits for a 2026-07-28
        #: client's retry (docs/gateway.md, "Questions across eras").
        self.parking = ParkingLot(
            backend,
            ParkingLimits(
                config.parked_call_timeout,
                config.max_parked_calls,
                config.max_parked_calls_per_principal,
            ),
        )
        #: This replica among others sharing stores (None: a single process).
        self.replicas: ReplicaLink | None = None
        self._settings = settings
        # The HTTP machines serving this gateway (see router()).
        self._routers: list[GatewayHTTPServer] = []
        self.server = GatewayServer(
            self._catalogs,  # (what catalog() calls: a call less per request)
            self.upstreams,
            name=name,
            version=version,
            page_size=page_size,
            virtual_catalogs=virtual_catalogs,
            access=self.access,
            record=self.recorder.record if recording else None,
            clock=backend.clock,
            wall_clock=backend.wall_clock,
            relay_questions=config.relay_questions_to_handshake_clients,
            parking=self.parking,
            state_keys=state_keys,
            stores=stores,
            task_routes=TaskRoutes(
                TaskRouteLimits(
                    config.max_tasks, config.max_tasks_per_principal, config.task_max_ttl
                )
            ),
        )
        if stores is not None:
            self.use_stores(stores, parked_owners)
        # The connectors changed since the last hint (None: every endpoint's news).
        self._hint_pending: set[str | None] = set()
        # Each virtual MCP's connectors: its listeners hear only of these.
        self._virtual_connectors = {v.id: frozenset(v.connectors) for v in config.virtual_mcps}
        self._hint_wake: Signal | None = None
        self._started: Signal = backend.new_signal()
        #: How many hints went out (each to every listening client).
        self.hints_sent = 0

    def use_stores(self, stores: Stores, parked_owners: ParkedCallOwners | None = None) -> None:
        """Share parked calls and task ids with the other replicas of ``stores``
        (before :meth:`run`)."""
        self.server.stores = stores
        self.replicas = ReplicaLink(
            stores,
            parked_owners or parked_call_owners(stores, self.backend.clock),
            self.backend,
            # A forwarded round lasts as long as the upstream call may.
            outcome_timeout=(self._settings.call_timeout or 3600.0) + 5.0,
        )
        self.server.use_replicas(self.replicas)
        # Task ids too: tasks/* on a task made here are served by any replica.
        self.server.route_store = task_route_store(stores, self.server.task_routes)
        self.replicas.take_answer = self._take_answer
        for router in self._routers:
            router.join_replicas(self.replicas.tag, self.replicas.forward_answer)

    def _take_answer(self, answer: dict[str, Any], authorization: str) -> None:
        """A handshake-era client's answer to a question of this replica's, which
        reached another: to the session that asked, as if it had come here."""
        for router in self._routers:
            session = router.take_answer(answer, authorization)
            if session is not None:
                self.server.answer_taken(session)
                return

    def catalog(self) -> Catalog:
        return self._catalogs()

    def status(self) -> dict[str, Any]:
        """Each connector's status, as JSON."""
        return status_report(self.store, self.config)

    def router(
        self, *, endpoint: str = "/mcp", **options: Any
    ) -> GatewayHTTPServer | GatewayOAuthRouter:
        """The HTTP machine serving :attr:`server`: the config's API keys, virtual
        MCPs (at ``{endpoint}/{id}``) and ``GET /metrics``, Host and Origin limited
        to loopback and the config's ``allowed_hosts``; behind the config's
        ``oauth`` (a :class:`GatewayOAuthRouter`) when it has one."""
        allowed = (*LOOPBACK_HOSTS, *self.config.allowed_hosts)
        config = self.config
        router = GatewayHTTPServer(
            self.server.create_session,
            api_keys=config.api_keys,
            virtual_mcps={v.id: v.api_keys for v in config.virtual_mcps},
            access=self.access,
            metrics=self.recorder.exposition if config.metrics else None,
            relay_questions=config.relay_questions_to_handshake_clients,
            endpoint=endpoint,
            allowed_hosts=allowed,
            tool_input_schema=lambda name: self.catalog().input_schema(name),
            **options,
        )
        self._routers.append(router)
        if self.replicas is not None:
            router.join_replicas(self.replicas.tag, self.replicas.forward_answer)
        return router if config.oauth is None else GatewayOAuthRouter(router, config.oauth)

    # Hints -------------------------------------------------------------------------

    def tools_changed(self, connector: str | None = None) -> None:
        """``connector``'s tools (any tools when None) may have changed: a hint goes
        soon to the clients listening at ``/mcp`` and at the virtual MCPs holding it."""
        self._hint_pending.add(connector)
        if self._hint_wake is not None:
            self._hint_wake.set()

    async def _send_hints(self) -> None:
        while True:
            if not self._hint_pending:
                self._hint_wake = self.backend.new_signal()
                await self._hint_wake.wait()
            changed, self._hint_pending = self._hint_pending, set()
            endpoints = self._endpoints_told(changed)
            self.server.hub.list_changed("tools", only=partial(self._told, endpoints))
            self.hints_sent += 1
            # Changes until then coalesce into the next hint: one per interval at most.
            await self.backend.sleep(self.hint_interval)

    def _endpoints_told(self, changed: set[str | None]) -> set[str | None]:
        """The endpoints (None: ``/mcp``) whose tool list ``changed`` touches."""
        if None in changed:
            return {None, *self._virtual_connectors}
        told = {v for v, connectors in self._virtual_connectors.items() if connectors & changed}
        return {None, *told}

    def _told(self, endpoints: set[str | None], session: ServerSession) -> bool:
        access = self.access.get(session)
        return (None if access is None else access.endpoint) in endpoints

    # Running -----------------------------------------------------------------------

    def first_attempt_over(self) -> None:
        if all(u.tried for u in self.upstreams.values()):
            self._started.set()

    async def run(
        self, serve: Callable[[], Awaitable[None]] | None = None, *, startup_wait: float = 15.0
    ) -> None:
        """Connect every connector, wait (up to ``startup_wait`` s) until each has
        been tried once, then run ``serve()`` beside them until cancelled."""
        try:
            async with self.backend.open_task_group() as group:
                group.start_soon(self.parking.run)
                self.server.task_group = group
                if self.replicas is not None:
                    group.start_soon(self.replicas.run)
                for upstream in self.upstreams.values():
                    group.start_soon(upstream.run)
                async with self.backend.move_on_after(startup_wait):
                    await self._started.wait()
                group.start_soon(self._send_hints)
                if self.replicas is not None:
                    # Listening only once the bus hears this replica's channels: a retry
                    # or an answer another replica forwards here is not lost meanwhile.
                    await self.replicas.ready()
                if serve is not None:
                    await serve()
                    group.cancel()
        finally:
            self.server.task_group = None
            for name in self.upstreams:
                move(self.store, name, StatusTrigger.STOP)
