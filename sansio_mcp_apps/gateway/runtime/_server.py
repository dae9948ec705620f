"""The gateway as a :class:`Server`: it lists the aggregated catalog and routes
``tools/call`` upstream; nothing else is served (resources and prompts are not
proxied), and the capabilities it declares say so."""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import attrs

from sansio_mcp import (
    LATEST_HANDSHAKE_REVISION,
    META_SERVER_INFO,
    CacheHints,
    ErrorCode,
    InvalidParams,
    LocalProtocolError,
    MCPError,
    MethodNotFound,
    MissingRequiredClientCapability,
    Revision,
    ServerSession,
    ToolResult,
    check_params,
    end_to_end_meta,
    get_revision,
    jsontext,
)
from sansio_mcp.capabilities import (
    INPUT_REQUEST_CAPABILITIES,
    check_input_required,
    declared_elicitation_modes,
    missing_input_capabilities,
)
from sansio_mcp.runtime import (
    Context,
    ProgressCallback,
    Server,
    Stores,
    StoreUnavailable,
    TaskGroup,
)
from sansio_mcp.tasks import (
    CORE_TASKS_REVISION,
    RELATED_TASK,
    TASKS_EXTENSION,
    TERMINAL_STATUSES,
    declares_tasks,
    declaring_tasks,
    poll_seconds,
    task_only_refusal,
)

from ...gateway import Access, Catalog, fit_input_request, fit_tool_result, split_tool_name
from .._tasks import TaskRoute, TaskRoutes, core_task, task_support
from ._parked import PARKED_STATE_PREFIX, ParkedCall, ParkingLot, Question
from ._record import CallRecord
from ._replicas import ReplicaLink
from ._task_routes import MemoryTaskRouteStore, TaskRouteStore
from ._upstream import Ask, ConnectorUnavailable, Upstream

__all__ = ["META_MISSING_CONNECTORS", "GatewayServer"]

logger = logging.getLogger("sansio_mcp_apps.gateway")
T = TypeVar("T")

#: The ``_meta`` key of a tools/list result that names the connectors left out.
META_MISSING_CONNECTORS = "sansio-mcp/missingConnectors"
#: Discovery is private and stale at once: a deployment may change it any time.
GATEWAY_CACHE_HINTS = CacheHints(ttl_ms={"server/discover": 0}, scope="private")
#: What the gateway passes upstream of a tools/call's params (MRTR included) beside
#: the tool's upstream name.
_PASSED_KEYS = ("arguments", "inputResponses", "requestState")
_REFUSALS = (ErrorCode.METHOD_NOT_FOUND, ErrorCode.INVALID_REQUEST)
#: Every input capability in its plain form (elicitation: form mode only).
_PLAIN_CAPABILITIES: dict[str, Any] = {c: {} for c in INPUT_REQUEST_CAPABILITIES.values()}
#: What a 2026-07-28 result carries that a handshake-era client's does not.
_STATELESS_RESULT_KEYS = ("resultType", "ttlMs", "cacheScope")
#: Rounds of input a handshake-era client is asked for in one call, at most.
MAX_INPUT_ROUNDS = 10
#: What a task's client may ask of it through the gateway (2025-11-25's ``tasks/list``
#: is not served: its capability is not declared).
_TASK_METHODS = ("tasks/get", "tasks/result", "tasks/update", "tasks/cancel")
#: The gateway's tasks capability on 2025-11-25 (tool calls, cancellable; no list).
_CORE_TASKS: dict[str, Any] = {"cancel": {}, "requests": {"tools": {"call": {}}}}
#: The shortest pause between two polls of a task followed for listening clients.
FOLLOW_INTERVAL = 1.0
_ENDED = frozenset(s.value for s in TERMINAL_STATUSES)
#: Tools remembered as task-only from their upstream's refusals, at most.
_MAX_TASK_ONLY = 10_000


class GatewayServer(Server):
    """Answers tools/list from ``catalog()`` and tools/call through ``upstreams``.

    A session whose ``access`` names a virtual MCP is served that one's catalog
    (``virtual_catalogs``).  ``record``, if given, is told of every tools/call
    (timed with ``clock``, dated with ``wall_clock``).  ``relay_questions`` puts
    what an upstream asks to handshake-era clients (outside the spec: they are
    taken to have declared what they may not have); without it they get -32021.
    ``parking``, when running, parks the call of a 2026-07-28 client whose
    handshake-era upstream asks mid-call, and asks the client by MRTR; with
    ``replicas`` a retry of a call parked on another replica is forwarded there.
    ``state_keys`` and ``stores``: as :class:`Server`'s (replicas share both).
    ``task_routes`` maps the ids of tasks run through the gateway to their
    connector and upstream task (bounded: :class:`TaskRouteLimits`)."""

    def __init__(
        self,
        catalog: Callable[[], Catalog],
        upstreams: Mapping[str, Upstream],
        *,
        name: str,
        version: str,
        page_size: int,
        virtual_catalogs: Mapping[str, Callable[[], Catalog]] | None = None,
        access: Mapping[ServerSession, Access] | None = None,
        record: Callable[[CallRecord], None] | None = None,
        clock: Callable[[], float] | None = None,
        wall_clock: Callable[[], float] | None = None,
        relay_questions: bool = False,
        parking: ParkingLot | None = None,
        replicas: ReplicaLink | None = None,
        state_keys: Sequence[bytes] | None = None,
        stores: Stores | None = None,
        task_routes: TaskRoutes | None = None,
    ) -> None:
        super().__init__(
            name,
            version,
            page_size=page_size,
            logging=False,
            cache_hints=GATEWAY_CACHE_HINTS,
            state_keys=state_keys,
            stores=stores,
        )
        self.catalog = catalog
        self.upstreams = upstreams
        self.virtual_catalogs = dict(virtual_catalogs or {})
        self.access: Mapping[ServerSession, Access] = (
            access if access is not None else weakref.WeakKeyDictionary()
        )
        if record is not None and clock is None:
            raise TypeError("GatewayServer: record needs a clock to time each call")
        self.record = record
        self.clock = clock
        self.wall_clock = wall_clock
        self.relay_questions = relay_questions
        self.parking = parking
        #: The task ids this replica made or served; :attr:`route_store` keeps them
        #: all (here alone, or shared by replicas: :meth:`use_task_store`).
        self.task_routes = task_routes if task_routes is not None else TaskRoutes()
        self.route_store: TaskRouteStore = MemoryTaskRouteStore(self.task_routes)
        # Tools a 2026-07-28 upstream refused to run but as a task (it lists no
        # taskSupport): listed as task-only from then on.  Bounded by the catalog.
        self._task_only: set[tuple[str, str]] = set()
        #: Where the status of a task a client listens for is followed (set by
        #: :class:`Gateway` while it runs; None: no status is relayed).
        self.task_group: TaskGroup | None = None
        # The host of each handshake-era request that may be asking its client: an
        # answer forwarded by another replica is driven into its session there.
        # (Weakly both ways: a host holds its session.)
        self._asking: weakref.WeakKeyDictionary[ServerSession, weakref.ref[Any]] = (
            weakref.WeakKeyDictionary()
        )
        self.replicas: ReplicaLink | None = None
        if replicas is not None:
            self.use_replicas(replicas)

    def answer_taken(self, session: ServerSession) -> None:
        """``session`` (of a handshake-era request) was handed its client's answer
        from outside a request of its own: its waiting handler goes on."""
        host = self._asking.get(session)
        driver = getattr(host() if host is not None else None, "driver", None)
        if driver is not None:
            driver.process_events()

    def use_replicas(self, replicas: ReplicaLink) -> None:
        """Forward retries of calls parked elsewhere through ``replicas``, and serve
        those forwarded here."""
        self.replicas = replicas
        replicas.serve = self._serve_forwarded

    def _access(self, ctx: Context) -> Access:
        return self.access.get(ctx.session) or Access()

    def _catalog(self, ctx: Context) -> Catalog:
        """The catalog the session's endpoint serves (a virtual MCP's, or all)."""
        access = self.access.get(ctx.session)  # (_access, a call less)
        endpoint = access.endpoint if access is not None else None
        if endpoint is None:
            return self.catalog()
        return self.virtual_catalogs[endpoint]()

    def create_session(self, **options: Any) -> ServerSession:
        session = Server.create_session(self, **options)  # (by name: no super object)
        session.task_visible = partial(self._listened, weakref.ref(session))
        return session

    def _listened(self, session: weakref.ref[ServerSession], task_id: str, _owner: str) -> bool:
        """Whether ``session``'s client may listen for ``task_id`` (its principal's
        task); if so its status is followed upstream, and relayed, from now on."""
        held = session()
        access = self.access.get(held) if held is not None else None
        now = self.wall_clock() if self.wall_clock is not None else 0.0
        try:
            route = self.task_routes.get(task_id, access.principal if access else None, now)
        except InvalidParams:
            return False
        if self.task_group is not None and not route.followed:
            route.followed = True
            self.task_group.start_soon(self._follow, task_id, route)
        return True

    async def _follow(self, task_id: str, route: TaskRoute) -> None:
        """Poll ``route``'s task upstream (at its ``pollIntervalMs``, at least
        :data:`FOLLOW_INTERVAL` s) and tell listening clients of each change, until
        it ends or its id expires."""
        upstream = self.upstreams.get(route.connector)
        seen: tuple[Any, ...] | None = None
        now = self.wall_clock or (lambda: 0.0)
        try:
            while upstream is not None and now() <= route.expires:
                got = await _task_upstream(upstream, route, task_id, "tasks/get", {})
                key = (got.get("status"), got.get("statusMessage"), got.get("lastUpdatedAt"))
                if key != seen:
                    seen = key
                    self.hub.task_status(_detailed(got, task_id))
                if got.get("status") in _ENDED:
                    return
                await upstream.backend.sleep(max(FOLLOW_INTERVAL, poll_seconds(got)))
        except Exception as exc:  # its connector down, the task gone: listeners poll
            # (Nothing of one task's may end the gateway's task group.)
            logger.debug("task %s no longer followed: %s", task_id, exc)
        finally:
            route.followed = False

    @property
    def capabilities(self) -> dict[str, Any]:
        # Tasks in both forms: the session keeps each to the revisions that have it.
        return {
            "tools": {"listChanged": True},
            "extensions": {TASKS_EXTENSION: {}},
            "tasks": dict(_CORE_TASKS),
        }

    def begin(self, ctx: Context) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        ctx.hub = self.hub
        if ctx.method == "tools/list":
            return self._list(ctx)
        if ctx.method == "tools/call":
            given = ctx.params
            name = given.get("name")
            if not isinstance(name, str):
                raise InvalidParams(message="tools/call needs a tool name")
            connector, tool = self._catalog(ctx).resolve(name)
            params: dict[str, Any] = {"name": tool}
            for key in _PASSED_KEYS:
                if key in given:
                    params[key] = given[key]
            if "_meta" in given:
                meta = end_to_end_meta(given["_meta"])
                if meta:
                    params["_meta"] = meta  # the upstream hop adds its own protocol keys
            if self.record is None:
                return self._call(ctx, connector, params)
            return self._recorded(ctx, connector, params)
        # 2025-11-25 has no tasks/update (input comes by requests), 2026-07-28 no tasks/result.
        if ctx.method in _TASK_METHODS and ctx.method != (
            "tasks/result" if ctx.stateless else "tasks/update"
        ):
            return self._task_request(ctx)
        raise MethodNotFound(message=f"method not found: {ctx.method!r} (the gateway serves tools)")

    def _list(self, ctx: Context) -> dict[str, Any]:
        catalog = self._catalog(ctx)
        tools, cursor = catalog.page(ctx.params.get("cursor"), self.page_size)
        result: dict[str, Any] = {"tools": self._fit_task_support(ctx, tools)}
        if cursor is not None:
            result["nextCursor"] = cursor
        missing = catalog.missing
        if missing:
            result["_meta"] = {META_MISSING_CONNECTORS: missing}
        if ctx.stateless:
            result["ttlMs"] = catalog.ttl_ms()
            result["cacheScope"] = "private"
        return result

    # Tasks -------------------------------------------------------------------------

    def _wants_task(self, ctx: Context) -> bool:
        """Whether the client asks for its tools/call to run as a task: a 2026-07-28
        one declaring the extension, a 2025-11-25 one by ``params.task``."""
        if ctx.meta is not None:  # stateless
            return declares_tasks(ctx.meta.client_capabilities)
        # (params.task first: most calls have none, and it spares them the version.)
        return "task" in ctx.params and (
            isinstance(ctx.params["task"], dict) and ctx.protocol_version == CORE_TASKS_REVISION
        )

    def _task_forms_of(self, ctx: Context) -> tuple[str, ...]:
        """The upstream task forms the gateway can run ``ctx``'s client's tasks on: a
        2026-07-28 client that declared the extension, the extension's alone; a
        2025-11-25 one, both (the gateway keeps no handshake session, so the revision
        tells, not what it declared); none for any other."""
        if ctx.stateless:
            return ("extension",) if declares_tasks(ctx.client_capabilities) else ()
        return ("extension", "core") if ctx.protocol_version == CORE_TASKS_REVISION else ()

    def _fit_task_support(self, ctx: Context, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``tools`` as ``ctx``'s client may use them: a task-only one left out unless
        the client can run it as a task through the gateway; one learned task-only
        marked so."""
        fitted: list[dict[str, Any]] = []
        forms = self._task_forms_of(ctx)
        for tool in tools:
            support = task_support(tool)
            connector, name = split_tool_name(tool["name"])
            if support != "required" and (connector, name) in self._task_only:
                support = "required"
                tool = {**tool, "execution": {"taskSupport": support}}
            if support == "required":
                upstream = self.upstreams.get(connector)
                if _task_form(upstream.client if upstream else None) not in forms:
                    continue
            fitted.append(tool)
        return fitted

    async def _task_created(
        self, ctx: Context, connector: str, result: dict[str, Any]
    ) -> dict[str, Any]:
        """An upstream's ``CreateTaskResult``, its task mapped to an id of the
        gateway's, in the client's form."""
        core = "resultType" not in result  # 2025-11-25's {"task": Task}
        made = result["task"] if core else result
        upstream_id = made.get("taskId")
        if not isinstance(upstream_id, str):
            raise MCPError(
                ErrorCode.INTERNAL_ERROR, f"connector {connector!r} made a task with no id"
            )
        ttl = made.get("ttl" if core else "ttlMs")
        principal = self._access(ctx).principal
        task_id = await _stored(
            self.route_store.add(connector, upstream_id, principal, ttl, ctx.now, core=core)
        )
        if ctx.stateless:
            return {**_without_server_info(result), "taskId": task_id}
        return {"task": core_task(made, task_id, core=core)}

    async def _task_request(self, ctx: Context) -> dict[str, Any]:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel`` (and 2025-11-25's
        ``tasks/result``) of a task run through the gateway, sent to its connector."""
        task_id = ctx.params.get("taskId")
        route = await _stored(self.route_store.get(task_id, self._access(ctx).principal, ctx.now))
        assert isinstance(task_id, str)
        upstream = self.upstreams.get(route.connector)
        if upstream is None:  # its connector left the config
            raise InvalidParams(message=f"unknown task: {task_id!r}")
        ask = partial(_task_upstream, upstream, route, task_id)
        method = ctx.method
        if method == "tasks/update":
            await ask(method, {"inputResponses": ctx.params.get("inputResponses")})
            return {}
        if route.core:  # a 2025-11-25 upstream's task: its own tasks/*, relayed
            if method == "tasks/result":
                relay = partial(_relay if self.relay_questions else _not_asked, ctx, [])
                got = await _task_upstream(upstream, route, task_id, method, {}, ask=relay)
                return _related(_downstream(ctx, got), task_id)
            return core_task(await ask(method, {}), task_id, core=True)
        if method == "tasks/result":
            return await self._core_result(ctx, route, task_id, ask)
        if method == "tasks/cancel":
            await ask(method, {})
            if ctx.stateless:
                return {}
        got = await ask("tasks/get", {})
        return _detailed(got, task_id) if ctx.stateless else core_task(got, task_id)

    async def _core_result(
        self, ctx: Context, route: TaskRoute, task_id: str, ask: Any
    ) -> dict[str, Any]:
        """2025-11-25's ``tasks/result`` of a task a 2026-07-28 upstream runs: the
        upstream polled until the task ends, what it asks meanwhile put to the client
        (as a tools/call's questions are) and answered upstream by ``tasks/update``."""
        while True:
            got = await ask("tasks/get", {})
            status = got.get("status")
            outcome = got.get("result")
            if status in ("completed", "failed") and isinstance(outcome, dict):
                return _related(_downstream(ctx, outcome), task_id)
            error = got.get("error")
            if status == "failed" and isinstance(error, dict):
                raise MCPError.from_dict(error)
            if status in ("completed", "failed", "cancelled"):
                raise InvalidParams(message=f"task {task_id} is {status}: it has no result")
            asked = got.get("inputRequests")
            pending = {
                key: request
                for key, request in (asked if isinstance(asked, dict) else {}).items()
                if key not in route.answered
            }
            if status == "input_required" and pending:
                question = {"resultType": "input_required", "inputRequests": pending}
                answers = await _ask(ctx, question, self.relay_questions)
                await ask("tasks/update", {"inputResponses": answers})
                route.answered.update(answers)
                continue
            await ctx.sleep(poll_seconds(got))

    async def _recorded(
        self, ctx: Context, connector: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """:meth:`_call`, its record made however it ends."""
        assert self.record is not None and self.clock is not None
        started, dated = self.clock(), self.wall_clock() if self.wall_clock else 0.0
        # What is left when the call ends otherwise (its client gone, the gateway stopping).
        outcome: str | int = "cancelled"
        result: dict[str, Any] | None = None
        try:
            result = await self._call(ctx, connector, params)
            outcome = "ok"
            if result.get("isError") is True:
                outcome = "tool_error"
            elif result.get("resultType") == "input_required":
                outcome = "input_required"  # a round of the call, not its end
            return result
        except MCPError as exc:
            outcome = exc.code
            raise
        except Exception:
            outcome = ErrorCode.INTERNAL_ERROR
            raise
        finally:
            access = self._access(ctx)
            self.record(
                CallRecord(
                    time=dated,
                    endpoint=access.endpoint,
                    principal=access.principal,
                    connector=connector,
                    tool=params["name"],
                    duration_ms=(self.clock() - started) * 1000,
                    outcome=outcome if isinstance(outcome, str) else int(outcome),
                    request_bytes=len(jsontext.encode(ctx.params)),
                    response_bytes=len(jsontext.encode(result)) if result is not None else 0,
                )
            )

    async def _call(self, ctx: Context, connector: str, params: dict[str, Any]) -> dict[str, Any]:
        if "requestState" in params:
            state = params["requestState"]
            if isinstance(state, str) and state.startswith(PARKED_STATE_PREFIX):
                return await self._retry(self._round_of(ctx), state[len(PARKED_STATE_PREFIX) :])
        stateless = ctx.meta is not None  # (ctx.stateless, read once)
        upstream = self.upstreams[connector]
        client = upstream.client
        form = _task_form(client) if self._wants_task(ctx) else None
        as_task = form is not None and (form == "extension" or not stateless)
        if as_task:
            # Checked before the upstream makes a task whose id could not be kept.
            await _stored(self.route_store.check_room(self._access(ctx).principal, ctx.now))
            if form == "extension":
                params = declaring_tasks(params)
            else:  # a 2025-11-25 upstream, for a 2025-11-25 client: its own params.task
                params = {**params, "task": ctx.params["task"]}
        if (
            stateless
            and self.parking is not None
            and self.parking.running
            and not (client is not None and client.session.is_stateless)
        ):
            return await self._park(ctx, connector, params)
        # What a handshake-era upstream asked mid-call that this client could not be asked.
        refused: list[MCPError] = []
        ask: Any = None
        if not stateless:
            ask = partial(_relay if self.relay_questions else _not_asked, ctx, refused)
            if self.relay_questions:
                host = getattr(ctx, "host", None)
                if host is not None:
                    self._asking[ctx.session] = weakref.ref(host)
        progress = None if ctx.progress_token is None else _progress_relay(ctx)
        try:
            # The first call awaited here, not through _send: a coroutine frame fewer
            # for every wake of the waiting call (most calls take one round).
            try:
                result = await upstream.call(params, on_progress=progress, ask=ask)
            except MCPError as exc:
                result = self._refused_upstream(ctx, connector, params, exc, refused)
            for _ in range(MAX_INPUT_ROUNDS):
                if stateless or result.get("resultType") != "input_required":
                    break
                # A handshake-era client answers by server-to-client requests, and the
                # gateway retries upstream with the answers (MRTR on the client's behalf).
                answers = await _ask(ctx, result, self.relay_questions)
                params = {**params, "inputResponses": answers}
                params.pop("requestState", None)
                if "requestState" in result:
                    params["requestState"] = result["requestState"]
                result = await self._send(
                    ctx, connector, params, ask=ask, refused=refused, on_progress=progress
                )
        except ConnectorUnavailable as exc:
            return _unavailable(connector, exc)
        if refused and result.get("isError") is True:
            raise refused[0]
        if as_task and (result.get("resultType") == "task" or isinstance(result.get("task"), dict)):
            return await self._task_created(ctx, connector, result)
        return _downstream(ctx, result)

    async def _send(
        self,
        ctx: Context,
        connector: str,
        params: dict[str, Any],
        *,
        ask: Ask | None,
        refused: list[MCPError],
        on_progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        """One tools/call upstream, its errors as the client is told them."""
        try:
            return await self.upstreams[connector].call(params, on_progress=on_progress, ask=ask)
        except MCPError as exc:
            return self._refused_upstream(ctx, connector, params, exc, refused)

    def _refused_upstream(
        self,
        ctx: Context,
        connector: str,
        params: dict[str, Any],
        exc: MCPError,
        refused: list[MCPError],
    ) -> dict[str, Any]:
        """A tools/call refused upstream with ``exc``: the error the client is told (or,
        for URL elicitation, the result it gets)."""
        if refused:
            raise refused[0] from None  # what the client lacks, not how it failed
        if task_only_refusal(exc) and len(self._task_only) < _MAX_TASK_ONLY:
            self._task_only.add((connector, params["name"]))
        if exc.code == ErrorCode.URL_ELICITATION_REQUIRED:
            return _url_elicitation(ctx, exc, self.relay_questions)
        # The client called connector.tool: say which upstream answered so.
        message = f"connector {connector!r}: {exc.message}"
        raise MCPError(exc.code, message, exc.data) from None

    # Questions across eras: a handshake-era upstream asks a 2026-07-28 client --------

    async def _park(self, ctx: Context, connector: str, params: dict[str, Any]) -> dict[str, Any]:
        """Call upstream from the parking lot: a question it asks mid-call parks the
        call and goes to the client as ``input_required``."""
        assert self.parking is not None

        async def work(call: ParkedCall) -> dict[str, Any]:
            ask = partial(self._parked_question, ctx, call)
            send = self._send(
                ctx,
                connector,
                params,
                ask=ask,
                refused=call.refused,
                on_progress=call.relay_progress,
            )
            try:
                return await send
            except ConnectorUnavailable as exc:
                return _unavailable(connector, exc)

        call = self.parking.start(self._access(ctx).principal, _request_of(ctx.params), work)
        return await self._round(self._round_of(ctx), call)

    def _round_of(self, ctx: Context) -> RoundOf:
        return RoundOf(
            self._access(ctx).principal,
            ctx.params,
            ctx.client_capabilities,
            ctx.now,
            _progress_relay(ctx),
        )

    async def _parked_question(
        self, ctx: Context, call: ParkedCall, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """The upstream's mid-call question, put to the client of ``call`` by MRTR
        when it declared what the question needs; -32021 naming what it lacks, else."""
        assert self.parking is not None
        params = fit_input_request(method, params, _client_revision(ctx))
        requests = {"asked": {"method": method, "params": params}}
        problem = check_params(method, params)
        missing = missing_input_capabilities(requests, call.capabilities)
        try:
            if problem:
                raise MCPError(ErrorCode.INTERNAL_ERROR, f"the upstream asked invalidly: {problem}")
            if missing:
                raise MissingRequiredClientCapability(
                    message=f"the upstream needs input this client did not declare "
                    f"({json.dumps(missing)})",
                    data={"requiredCapabilities": missing},
                )
            self.parking.admit(call)
        except MCPError as exc:
            call.refused.append(exc)
            raise
        return await self.parking.ask(call, method, params)

    async def _round(self, step: RoundOf, call: ParkedCall) -> dict[str, Any]:
        """Wait for the parked ``call``'s next question (an ``input_required`` whose
        sealed ``requestState`` names the call) or its end (its result)."""
        assert self.parking is not None
        call.capabilities = step.capabilities
        call.progress = step.progress
        try:
            question = await self.parking.next_step(call)
        finally:
            call.progress = None
        if question is not None:
            if self.replicas is not None:
                await self._record_owner(call)
            return _parked_input_required(self, step.now, call, question)
        if call.error is not None:
            raise call.error
        if call.result is None:
            raise MCPError(
                ErrorCode.INTERNAL_ERROR, "the call was cancelled (the gateway is stopping)"
            )
        if call.refused and call.result.get("isError") is True:
            raise call.refused[0]
        return _without_server_info(call.result)

    async def _record_owner(self, call: ParkedCall) -> None:
        """Note that this replica holds ``call`` (for its parked time, and a little
        more: a late retry reaching it is told precisely that it is gone)."""
        assert self.replicas is not None and self.parking is not None
        try:
            await self.replicas.owners.record(
                call.id, self.replicas.replica_id, self.parking.limits.timeout + 60
            )
        except StoreUnavailable as exc:
            self.parking.release(call, "the store of parked calls is unavailable")
            raise MCPError(ErrorCode.INTERNAL_ERROR, str(exc)) from None

    async def _retry(self, step: RoundOf, state: str) -> dict[str, Any]:
        """A retry of a parked call (``state``: its ``requestState`` past the prefix),
        served here or, with :attr:`replicas`, by the replica that parked it."""
        call_id = state.partition(":")[0]
        if self.replicas is not None and (self.parking is None or not self.parking.get(call_id)):
            try:
                owner = await self.replicas.owners.owner(call_id)
                if owner is not None and owner != self.replicas.replica_id:
                    return await self.replicas.forward(owner, _forwarded(step, state))
            except StoreUnavailable as exc:
                raise MCPError(ErrorCode.INTERNAL_ERROR, str(exc)) from None
        return await self.resume(step, state)

    async def _serve_forwarded(self, message: dict[str, Any]) -> dict[str, Any]:
        """A retry another replica forwarded here (see :func:`_forwarded`)."""
        principal, params, capabilities = (
            message.get("principal"),
            message.get("params"),
            message.get("capabilities"),
        )
        now, state = message.get("now"), message.get("state")
        if (
            not (principal is None or isinstance(principal, str))
            or not isinstance(params, dict)
            or not isinstance(capabilities, dict)
            or not isinstance(now, (int, float))
            or not isinstance(state, str)
        ):
            raise MCPError(ErrorCode.INTERNAL_ERROR, "another gateway replica forwarded nonsense")
        return await self.resume(RoundOf(principal, params, capabilities, now), state)

    async def resume(self, step: RoundOf, state: str) -> dict[str, Any]:
        """A client's retry of a call parked here (``state``: its ``requestState``
        past the prefix, ``CALL_ID:SEALED``): its answer to the upstream's question,
        then the call's next round."""
        call_id, _, token = state.partition(":")
        data = self.sealer.unseal(token, now=step.now)
        if not isinstance(data, dict) or data.get("call") != call_id:
            raise InvalidParams(message="requestState is malformed")
        if data.get("principal") != step.principal:
            raise InvalidParams(message="requestState belongs to another principal's call")
        parking = self.parking
        call = parking.get(str(data.get("call"))) if parking is not None else None
        if parking is None or call is None:
            raise InvalidParams(
                message="the call this requestState names is no longer parked (released "
                "when no retry came within the gateway's parked_call_timeout, or answered "
                "already): call again without it"
            )
        if call.request != _request_of(step.params):
            raise InvalidParams(message="requestState belongs to a different request")
        question = call.question
        if question is None or question.key != data.get("key") or question.answer is not None:
            raise InvalidParams(message="requestState names a question answered already")
        responses = step.params.get("inputResponses")
        answer = responses.get(question.key) if isinstance(responses, dict) else None
        if not isinstance(answer, dict):
            raise InvalidParams(
                message=f"inputResponses needs an object under {question.key!r}: the answer "
                "to the question this requestState names"
            )
        parking.answer(call, question, answer)
        return await self._round(step, call)


@attrs.frozen
class RoundOf:
    """What a round of a parked call takes from the client's request (made here,
    or forwarded by another replica): who sent it, its tools/call ``params``, what
    it declared, when it came (``now``, wall clock), where progress goes."""

    principal: str | None
    params: Mapping[str, Any]
    capabilities: dict[str, Any]
    now: float
    progress: ProgressCallback | None = None


def _detailed(got: dict[str, Any], task_id: str) -> dict[str, Any]:
    """An upstream's ``DetailedTask`` as the client sees it: under the gateway's id."""
    detailed = {**_without_server_info(got), "taskId": task_id}
    if isinstance(detailed.get("result"), dict):
        detailed["result"] = _without_server_info(detailed["result"])
    return detailed


async def _stored(pending: Awaitable[T]) -> T:
    """What the task id store answers; -32603 when it is unavailable."""
    try:
        return await pending
    except StoreUnavailable as exc:
        raise MCPError(ErrorCode.INTERNAL_ERROR, f"the gateway's task ids: {exc}") from None


def _task_form(client: Any) -> str | None:
    """How ``client``'s upstream runs tool calls as tasks: ``extension`` (2026-07-28),
    ``core`` (2025-11-25, its tasks capability), or None (it cannot, or is down)."""
    if client is None:
        return None
    if client.session.is_stateless:
        return "extension"
    caps = client.server_capabilities.get("tasks")
    requests = caps.get("requests") if isinstance(caps, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    if client.protocol_version == CORE_TASKS_REVISION and isinstance(tools, dict):
        return "core" if isinstance(tools.get("call"), dict) else None
    return None


def _related(result: dict[str, Any], task_id: str) -> dict[str, Any]:
    """A task's outcome as 2025-11-25's ``tasks/result`` answers it: tied to the task."""
    meta = result.get("_meta")
    related = {RELATED_TASK: {"taskId": task_id}}
    result["_meta"] = {**meta, **related} if isinstance(meta, dict) else related
    return result


async def _task_upstream(
    upstream: Upstream,
    route: TaskRoute,
    task_id: str,
    method: str,
    params: dict[str, Any],
    *,
    ask: Ask | None = None,
) -> dict[str, Any]:
    """``method`` upstream about ``route``'s task (``ask``: how what the upstream asks
    meanwhile is put to the client); its errors as the client is told them: an id
    the upstream no longer knows is as unknown here."""
    try:
        return await upstream.task_request(method, {**params, "taskId": route.upstream_id}, ask=ask)
    except ConnectorUnavailable as exc:
        reason = f": {exc.args[1]}" if len(exc.args) > 1 else ""
        raise MCPError(
            ErrorCode.INTERNAL_ERROR,
            f"the connector of task {task_id!r} is unavailable{reason}; try again shortly",
        ) from None
    except MCPError as exc:
        if exc.code == ErrorCode.INVALID_PARAMS and method != "tasks/update":
            raise InvalidParams(message=f"unknown task: {task_id!r}") from None
        raise MCPError(
            exc.code, f"connector {route.connector!r}: {exc.message}", exc.data
        ) from None


def _forwarded(step: RoundOf, state: str) -> dict[str, Any]:
    """A retry as another replica is sent it (progress stays here: it is not relayed)."""
    return {
        "state": state,
        "principal": step.principal,
        "params": dict(step.params),
        "capabilities": step.capabilities,
        "now": step.now,
    }


def _request_of(params: Mapping[str, Any]) -> tuple[Any, ...]:
    """What names a client's call across its rounds: its tool and arguments."""
    return (params.get("name"), params.get("arguments"))


def _parked_input_required(
    server: Server, now: float, call: ParkedCall, question: Question
) -> dict[str, Any]:
    """The ``input_required`` putting ``question`` to the client, its sealed
    ``requestState`` naming the parked ``call``."""
    sealed = server.sealer.seal(
        {"call": call.id, "key": question.key, "principal": call.principal}, now=now
    )
    return {
        "resultType": "input_required",
        "inputRequests": {question.key: {"method": question.method, "params": question.params}},
        "requestState": f"{PARKED_STATE_PREFIX}{call.id}:{sealed}",
    }


def _unavailable(connector: str, exc: ConnectorUnavailable) -> dict[str, Any]:
    """A tool error saying the connector is down (and why, as last seen)."""
    reason = f": {exc.args[1]}" if len(exc.args) > 1 else ""
    return ToolResult.text(
        f"connector {connector!r} is unavailable{reason}; the gateway is reconnecting, "
        "try again shortly",
        is_error=True,
    ).to_result()


async def _ask(ctx: Context, result: dict[str, Any], relay: bool) -> dict[str, Any]:
    """Put an upstream's input requests (its ``input_required`` ``result``) to a
    handshake-era client, one by one, if ``relay``; -32021 naming what it lacks
    when it cannot answer (it refuses the method, or its revision has no such
    request), or naming what is needed, unasked, without ``relay``."""
    try:
        check_input_required("tools/call", result)
    except ValueError as exc:
        raise MCPError(ErrorCode.INTERNAL_ERROR, f"the upstream's input_required: {exc}") from None
    requests = result.get("inputRequests")
    if not requests:
        raise MCPError(ErrorCode.INVALID_REQUEST, "the upstream's input_required asks nothing")
    revision = _client_revision(ctx)
    fitted = {
        key: {**r, "params": fit_input_request(r["method"], r.get("params") or {}, revision)}
        for key, r in requests.items()
    }
    if not relay:
        raise _unasked(fitted)
    try:
        return await ctx.request_many(fitted)
    except (MCPError, LocalProtocolError) as exc:
        raise _lacking(ctx, fitted, exc) from None


def _client_revision(ctx: Context) -> Revision:
    """The revision of the handshake-era client a request came from."""
    revision = ctx.session.revision if ctx.meta is None else None
    if revision is not None:  # the session's (adopted or negotiated): found already
        return revision
    return get_revision(ctx.protocol_version or LATEST_HANDSHAKE_REVISION)


async def _relay(
    ctx: Context, refused: list[MCPError], method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """A handshake-era upstream's mid-call request, fitted to the client's revision
    and put to it.  What the client cannot be asked is refused to the upstream with
    -32021, and kept in ``refused`` for the call's client to be told."""
    params = fit_input_request(method, params, _client_revision(ctx))
    try:
        return await ctx.request(method, params)
    except (MCPError, LocalProtocolError) as exc:
        error = _lacking(ctx, {"relayed": {"method": method, "params": params}}, exc)
        refused.append(error)
        raise error from None


async def _not_asked(
    ctx: Context, refused: list[MCPError], method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """A handshake-era upstream's mid-call request, not put to a handshake-era
    client (it keeps no session here: what it declared is unknown): -32021 naming
    what is needed, to the upstream and kept in ``refused`` for the client."""
    error = _unasked({"relayed": {"method": method, "params": params}})
    refused.append(error)
    raise error


def _unasked(requests: dict[str, Any]) -> MCPError:
    """-32021 naming what ``requests`` need of a handshake-era client, which is
    not asked (-32603 when no client may be asked them)."""
    for request in requests.values():
        problem = check_params(request["method"], request.get("params") or {})
        if problem:
            return MCPError(ErrorCode.INTERNAL_ERROR, f"the upstream asked invalidly: {problem}")
    missing = missing_input_capabilities(requests, {})
    return MissingRequiredClientCapability(
        message=(
            f"the upstream needs input ({json.dumps(missing)}), which this gateway asks "
            "no handshake-era client for (it keeps no session, so it cannot know what "
            "the client declared): call with MCP 2026-07-28, which answers it by "
            "input_required"
        ),
        data={"requiredCapabilities": missing},
    )


def _lacking(
    ctx: Context, requests: dict[str, Any], exc: MCPError | LocalProtocolError
) -> MCPError:
    """-32021 naming what the client lacks for ``requests``, when ``exc`` says it
    cannot answer them; -32603 when the upstream asked what no client may be asked;
    the client's own error otherwise."""
    for request in requests.values():
        problem = check_params(request["method"], request.get("params") or {})
        if problem:  # invalid in every revision: no capability would help
            return MCPError(ErrorCode.INTERNAL_ERROR, f"the upstream asked invalidly: {problem}")
    # A handshake-era client's declaration is not kept (no session): what the requests
    # need beyond each capability's plain form (URL mode, sampling with tools) is what
    # it lacks, else the capability itself.
    beyond_plain = missing_input_capabilities(requests, _PLAIN_CAPABILITIES)
    # A client without the capability answers -32601 (or, as the Python SDK does,
    # -32600); one without the mode -32602; a request its session may not send fails
    # locally.  Any other error is the client's own, passed on.
    if isinstance(exc, MCPError) and exc.code not in _REFUSALS:
        if not (exc.code == ErrorCode.INVALID_PARAMS and beyond_plain):
            return exc
    missing = beyond_plain or missing_input_capabilities(requests, {})
    return MissingRequiredClientCapability(
        message=f"the upstream needs input this client cannot give ({json.dumps(missing)}): {exc}",
        data={"requiredCapabilities": missing},
    )


def _url_elicitation(ctx: Context, exc: MCPError, relay: bool) -> dict[str, Any]:
    """An upstream's -32042 (URL elicitation required, 2025-11-25 only) as the
    client can take it: an ``input_required`` asking the same URLs on 2026-07-28
    (which may not emit -32042; its session checks the client declared URL mode),
    the error itself for a 2025-11-25 client that declared URL mode, else -32021."""
    data = exc.data if isinstance(exc.data, dict) else {}
    asked = [e for e in data.get("elicitations") or [] if isinstance(e, dict)]
    if ctx.stateless and asked:
        requests = {
            f"url-{n}": {
                "method": "elicitation/create",
                "params": {k: v for k, v in e.items() if k != "elicitationId"},
            }
            for n, e in enumerate(asked, 1)
        }
        return {"resultType": "input_required", "inputRequests": requests}
    if (
        not ctx.stateless
        and relay
        and "url" in _client_revision(ctx).elicitation_modes
        and "url" in declared_elicitation_modes(ctx.client_capabilities)
    ):
        raise exc
    raise MissingRequiredClientCapability(
        message=f"the upstream needs URL elicitation, which this client cannot do: {exc.message}",
        data={"requiredCapabilities": {"elicitation": {"url": {}}}, "elicitations": asked},
    )


def _progress_relay(ctx: Context) -> ProgressCallback | None:
    """Pass the upstream's progress on to a client that asked for progress."""
    if ctx.progress_token is None:
        return None
    schedule_flush = getattr(getattr(ctx, "host", None), "_schedule_flush", None)

    def relay(progress: float, total: float | None, message: str | None) -> None:
        try:
            sent = ctx.session.send_progress(ctx.request_id, progress, total, message)
        except LocalProtocolError:
            return  # an upstream whose progress did not increase: not passed on
        if sent and schedule_flush is not None:
            schedule_flush()

    return relay


def _without_server_info(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without its upstream's server info (the gateway's goes in)."""
    out = dict(result)
    if "_meta" in out:
        meta = out.pop("_meta")
        if isinstance(meta, dict):  # (one that is no object is no valid _meta: left out)
            if META_SERVER_INFO in meta:
                meta = dict(meta)
                del meta[META_SERVER_INFO]
            if meta:
                out["_meta"] = meta
    return out


def _downstream(ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
    """An upstream's tools/call result as the gateway's client gets it: the
    upstream's server info dropped (the gateway's goes in), and for a handshake
    client the 2026-07-28 fields too, or -32021 if it needs input that client
    cannot give here."""
    out = _without_server_info(result)
    if ctx.meta is not None:  # stateless
        return out  # an input_required is checked against the client's capabilities by its session
    if out.get("resultType") == "input_required":
        raise MCPError(
            ErrorCode.INTERNAL_ERROR,
            f"the upstream still needed input after {MAX_INPUT_ROUNDS} rounds",
        )
    for key in _STATELESS_RESULT_KEYS:
        if key in out:
            del out[key]
    # (_client_revision's first answer, read here: a handshake-era session's own)
    return fit_tool_result(out, ctx.session.revision or _client_revision(ctx))
