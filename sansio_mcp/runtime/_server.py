"""A declarative MCP server: register tools, resources, templates and prompts;
:meth:`Server.handle` answers requests.

Everything here is backend-neutral.  Handlers may be plain or ``async``
functions; the only things they can await are the :class:`Context` methods,
built on the primitives of its :class:`ContextHost` (a session host of an
adapter, or an embedder's own).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import secrets
import typing
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from .._errors import ErrorCode, InvalidParams, MCPError, MethodNotFound, failure_text
from .._events import RequestMeta, RequestReceived
from .._jsonrpc import RequestId
from .._registry import (
    HandlerCall,
    NeedInput,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    SessionHub,
    Tool,
    ToolResult,
    completion_result,
    decode_cursor,
    describe,
    encode_cursor,
    input_request,
    resource_contents,
    text_content,
    tool_result,
)
from .._request_state import RequestStateSealer, request_binding
from .._schema import (
    argument_check,
    argument_names_problem,
    argument_values_problem,
    schema_for_function,
    signature_problem,
)
from .._server_session import ServerSession
from .._stateless import CacheHints
from .._tasks import (
    CORE_TASKS_CAPABILITY,
    CORE_TASKS_REVISION,
    TASK_METHODS,
    TASK_SUPPORT,
    TASKS_EXTENSION,
    TaskLimits,
    random_task_id,
    runs_as_core_task,
    runs_as_task,
)
from .._versions import ALL_REVISIONS, MRTR_METHODS
from ._driver import respond_with_failure, respond_with_result
from ._primitives import Cancellable, Signal
from ._store_base import StoreUnavailable
from ._task_store import DEFAULT_TASK_LEASE
from ._tasks import RunningTask, TaskRunner, TaskStart, TaskStore, task_owner

if TYPE_CHECKING:  # annotations only: a server without OAuth or Redis never loads them
    from ..auth._server import AccessToken, ResourceServer
    from ._stores import Stores

__all__ = ["Context", "ContextHost", "Server", "answer_request"]

_log = logging.getLogger("sansio_mcp.server")
#: The bus channel (under the stores' namespace) of hints shared between replicas.
HINTS_CHANNEL = "hints"

F = TypeVar("F", bound=Callable[..., Any])
Handler = Callable[..., Any]


#: A tool call's HandlerCall is made with this (one per call): a named tuple's own
#: ``__new__`` is Python code, and costs a call more.
_new_call = tuple.__new__


class ContextHost(Protocol):
    """What runs a :class:`Context`'s handler: the six primitives every other
    context method is built on.  The session hosts (:class:`HostBase`) are one;
    an embedder with a transport of its own writes one (docs/embedding.md)."""

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        related_request: RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request to the client and wait for its result (handshake era)."""
        ...

    async def flush(self) -> None:
        """Write what the session has queued."""

    async def sleep(self, seconds: float) -> None: ...

    def now(self) -> float:
        """The backend's monotonic clock, in seconds."""
        ...

    def new_signal(self) -> Signal: ...

    def start_cancellable(self, fn: Callable[[], Awaitable[Any]]) -> Cancellable:
        """Run ``fn()`` in a task that outlives the request; ``cancel()`` ends it."""
        ...


class Context:
    """What a handler can do while it runs.

    Its primitives (ask the client, write output, sleep, the clock, signals,
    background tasks) are its :class:`ContextHost`'s; everything else is built
    on those here, once.
    """

    # Class defaults of what most requests never set (one context is made per
    # request); setting one sets it on that context alone.
    #: The answers a stateless request's earlier input rounds gathered (read-only
    #: here; :meth:`Server.begin` gives the context its own).
    _answers: Mapping[str, Any] = MappingProxyType({})
    _inputs_asked = 0
    #: The server's live sessions (set by :meth:`Server.handle`).
    hub: SessionHub | None = None
    #: Publishes a hint (list changed, resource updated) to the other replicas
    #: sharing the server's stores, or None (set by :meth:`Server.handle`).
    share_hint: Callable[[dict[str, Any]], Awaitable[None]] | None = None
    #: The task this handler runs as (tasks extension), once it is one.
    task: RunningTask | None = None
    #: When a task-capable call's task is to be created (set by the runner).
    task_start: TaskStart | None = None

    def __init__(
        self,
        *,
        request_id: RequestId,
        method: str,
        params: dict[str, Any],
        progress_token: str | int | None,
        session: ServerSession,
        host: ContextHost,
        meta: RequestMeta | None = None,
        now: float = 0.0,
    ) -> None:
        self.request_id = request_id
        self.method = method
        self.params = params
        self.progress_token = progress_token
        self.session = session
        #: Who runs the handler: its primitives.
        self.host = host
        #: The request's ``_meta`` when it is stateless (2026-07-28).
        self.meta = meta
        #: Wall-clock time when the request arrived (seals and checks requestState).
        self.now = now
        #: The verified access token of the HTTP request this came in (subject, scopes,
        #: client, claims, expiry), or None when the server is not protected.
        self.auth: AccessToken | None = session.auth

    @classmethod
    def for_request(
        cls, event: RequestReceived, session: ServerSession, *, now: float, host: ContextHost
    ) -> Self:
        """The context of ``event``, read from ``session``, run by ``host``; ``now`` is
        the wall-clock time in seconds since the epoch (it dates the sealed
        ``requestState``)."""
        return cls(
            request_id=event.request_id,
            method=event.method,
            params=event.params,
            progress_token=event.progress_token,
            session=session,
            host=host,
            meta=event.meta,
            now=now,
        )

    @property
    def stateless(self) -> bool:
        """Whether this request came in the stateless era (input arrives by MRTR)."""
        return self.meta is not None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        if self.meta is not None:
            return self.meta.client_capabilities
        return self.session.peer_capabilities or {}

    @property
    def client_info(self) -> dict[str, Any]:
        if self.meta is not None:
            return self.meta.client_info or {}
        return self.session.peer_info or {}

    @property
    def protocol_version(self) -> str | None:
        if self.meta is not None:
            return self.meta.protocol_version
        return self.session.protocol_version

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, key: str | None = None
    ) -> dict[str, Any]:
        """Ask the client (sampling, elicitation, roots) and return its answer.

        On a handshake session this is a real server-to-client request.  On a
        stateless request it is a multi round-trip: the first time, the
        handler stops and the client is sent ``input_required``; the client
        retries with the answer and the handler runs again, this time
        getting the answer here.  Handlers must therefore ask in the same
        order on every run.  ``key`` names the input request in
        ``inputRequests`` (default: ``input-N``, N counting the asks).
        """
        answers = await self.request_many({key or self._next_key(): input_request(method, params)})
        return next(iter(answers.values()))

    async def request_many(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Ask several things at once; ``requests`` maps a key to ``{"method", "params"}``.

        Returns the answers by key.  On a stateless request every missing
        answer is asked for in one ``input_required`` round; on a handshake
        session the requests are sent one after another.
        """
        if self.task is not None:
            return await self.task.ask(requests)
        if self.meta is None:
            return {
                key: await self.send_request(request["method"], request.get("params"))
                for key, request in requests.items()
            }
        answers = {key: self._answers.get(key) for key in requests}
        missing = {
            key: requests[key] for key, answer in answers.items() if not isinstance(answer, dict)
        }
        if missing:
            raise NeedInput(missing)
        return typing.cast(dict[str, dict[str, Any]], answers)

    def _next_key(self) -> str:
        self._inputs_asked += 1
        return f"input-{self._inputs_asked}"

    # Primitives (the host's) ------------------------------------------------------

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send a request to the client and wait for its result (handshake era)."""
        return await self.host.request(method, params, related_request=self.request_id)

    async def flush(self) -> None:
        """Write what the session has queued."""
        await self.host.flush()

    async def sleep(self, seconds: float) -> None:
        await self.host.sleep(seconds)

    async def become_task(self) -> None:
        """In a call that runs as a task, create the task now: the client gets its
        ``CreateTaskResult``, and input asked for from here on parks the task
        (``tasks/update``) instead of going back in MRTR rounds.  The task is
        otherwise created at the handler's first real wait.  Elsewhere a no-op."""
        if self.task is None:
            if self.task_start is not None:
                self.task_start.now()
            await self.sleep(0)

    @contextlib.contextmanager
    def defer_task(self) -> Iterator[None]:
        """Waits inside this block do not create the call's task: the ``tools/call``
        stays open until the handler returns (a plain result) or calls
        :meth:`become_task` (for a tool that learns only by waiting whether its work
        is long).  Elsewhere a no-op."""
        start = self.task_start
        if start is None or start.done:
            yield
            return
        start.held += 1
        try:
            yield
        finally:
            start.held -= 1

    def clock(self) -> float:
        """The backend's monotonic clock, in seconds."""
        return self.host.now()

    def new_signal(self) -> Signal:
        return self.host.new_signal()

    def start_background(self, fn: Callable[[], Awaitable[Any]]) -> Cancellable:
        """Run ``fn()`` in a task that outlives this request (a task's tool)."""
        return self.host.start_cancellable(fn)

    # Conveniences ---------------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress if the client asked for it (a no-op otherwise).  In a
        task, ``message`` becomes the task's ``statusMessage`` instead."""
        if self.task is not None:
            self.task.report(message)
            return
        if self.session.send_progress(self.request_id, progress, total, message):
            await self.flush()

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message, unless logging is off or below the client's level
        (or this is a task: tasks have no log notifications)."""
        if self.task is not None or "logging" not in self.session.capabilities:
            return
        if self.session.send_log_message(level, data, logger, request_id=self.request_id):
            await self.flush()

    async def resource_updated(self, uri: str) -> None:
        """Tell every client that subscribed to ``uri`` that it changed (on every
        replica sharing the server's stores)."""
        if self.hub is not None:
            self.hub.resource_updated(uri)
            if self.share_hint is not None:
                await self.share_hint({"resourceUpdated": uri})
        elif self.session.send_resource_updated(uri):
            await self.flush()

    async def list_changed(self, kind: str) -> None:
        """Tell the clients following it that the list of ``kind`` changed (on every
        replica sharing the server's stores)."""
        if self.hub is not None:
            self.hub.list_changed(kind)
            if self.share_hint is not None:
                await self.share_hint({"listChanged": kind})
        elif self.session.send_list_changed(kind):
            await self.flush()

    async def sample(
        self,
        prompt: str | Sequence[dict[str, Any]],
        *,
        max_tokens: int = 256,
        system_prompt: str | None = None,
        key: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion; returns the CreateMessageResult."""
        if isinstance(prompt, str):
            messages: list[dict[str, Any]] = [{"role": "user", "content": text_content(prompt)}]
        else:
            messages = list(prompt)
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **extra}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        return await self.request("sampling/createMessage", params, key=key)

    async def elicit(
        self, message: str, requested_schema: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Ask the user for structured input (form mode); returns the ElicitResult."""
        params: dict[str, Any] = {"message": message, "requestedSchema": requested_schema}
        if (self.protocol_version or "") >= "2025-11-25":
            params = {"mode": "form", **params}
        return await self.request("elicitation/create", params, key=key)

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, key: str | None = None
    ) -> dict[str, Any]:
        """Send the user to ``url`` (URL mode, 2025-11-25)."""
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return await self.request("elicitation/create", params, key=key)

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots."""
        result = await self.request("roots/list", key=key)
        roots = result.get("roots")
        return roots if isinstance(roots, list) else []


#: What a plain handler returns most often; none of them is awaitable (the exact
#: types: a subclass may be), so the check is skipped for them.
_PLAIN_VALUES = frozenset({str, dict, list, int, float, bool, type(None)})


def _core_tasks(ctx: Context) -> bool:
    """Whether ``ctx`` is a request of a 2025-11-25 session (the core's own tasks)."""
    return not ctx.stateless and ctx.protocol_version == CORE_TASKS_REVISION


def _context_param(func: Handler) -> str | None:
    """The parameter that receives the :class:`Context`, if any."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable annotations: fall back to the name
        hints = {}
    for name in inspect.signature(func).parameters:
        hint = hints.get(name)
        if (isinstance(hint, type) and issubclass(hint, Context)) or name == "ctx":
            return name
    return None


def _same(value: dict[str, Any]) -> dict[str, Any]:
    return value


V = TypeVar("V")

#: The registries of a :class:`Server`, each a :class:`_Registry` of its own.
_REGISTRIES = frozenset({"tools", "resources", "templates", "prompts"})
#: Attributes of a :class:`Server` set without counting as a change (what is
#: derived from the others, and the count itself).
_UNCOUNTED = frozenset({"_changes", "_plain_registries", "_session_memo"})


class _Registry(dict[str, V]):
    """One of a server's registries (tools, resources, templates, prompts): a dict
    each of whose changes counts as a change of the server (:meth:`Server._changed`),
    so what is derived from them is known current without reading them all."""

    __slots__ = ("_server",)

    def __init__(self, server: Server) -> None:
        super().__init__()
        self._server = server

    def __setitem__(self, key: str, value: V) -> None:
        super().__setitem__(key, value)
        self._server._changed()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._server._changed()

    def __ior__(self, other: Any) -> Self:  # type: ignore[override,misc]
        super().__ior__(other)
        self._server._changed()
        return self

    def pop(self, *args: Any) -> Any:
        try:
            return super().pop(*args)
        finally:
            self._server._changed()

    def popitem(self) -> tuple[str, V]:
        try:
            return super().popitem()
        finally:
            self._server._changed()

    def setdefault(self, key: str, default: Any = None) -> Any:
        try:
            return super().setdefault(key, default)
        finally:
            self._server._changed()

    def update(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().update(*args, **kwargs)
        finally:
            self._server._changed()

    def clear(self) -> None:
        super().clear()
        self._server._changed()


class Server:
    """A registry of tools, resources, resource templates and prompts.

    ``handle(ctx)`` answers any request a :class:`ServerSession` hands over;
    capabilities are derived from what is registered.  ``new_task_id`` makes the
    ids of tasks (random UUIDs by default; inject a source for predictable ids).

    ``state_keys`` is the ``requestState`` key ring (the first key seals, every key
    unseals: :class:`~sansio_mcp.RequestStateSealer`); ``state_key`` one key alone;
    neither, a random key valid in this process only.  Replicas behind a load
    balancer need the same ring.  ``stores`` (:func:`~sansio_mcp.runtime.open_stores`)
    whose store is shared makes replicas share tasks, each running one renewing an
    owner lease of ``task_lease`` seconds (see :class:`~sansio_mcp.runtime.TaskRunner`),
    and DPoP proofs' ``jti``s; plain calls never touch it.  Kept as :attr:`stores`.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int = 100,
        logging: bool = True,
        supported_versions: Iterable[str] = ALL_REVISIONS,
        state_key: bytes | None = None,
        state_keys: Sequence[bytes] | None = None,
        state_ttl: float = 600.0,
        cache_hints: CacheHints | None = None,
        auth: ResourceServer | None = None,
        task_store: TaskStore | None = None,
        task_ttl_ms: int | None = 300_000,
        task_poll_interval_ms: int | None = 500,
        task_limits: TaskLimits | None = None,
        handshake_tasks: bool = True,
        new_task_id: Callable[[], str] = random_task_id,
        stores: Stores | None = None,
        task_lease: float = DEFAULT_TASK_LEASE,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.name = name
        self.version = version
        #: Bearer-token protection over HTTP (its verifier, scopes, metadata), or None.
        self.auth = auth
        #: The stores shared with other replicas (:func:`open_stores`), or None: this
        #: process alone.  A DPoP proof's ``jti`` goes to their replay cache.
        self.stores = stores
        self.title = title
        self.instructions = instructions
        self.page_size = page_size
        self.logging = logging
        self.supported_versions = tuple(supported_versions)
        #: Whether 2025-11-25 sessions may run tools as tasks (the core's ``tasks``
        #: capability); False: tasks only through the extension, on 2026-07-28 requests.
        self.handshake_tasks = handshake_tasks
        if state_key is not None and state_keys is not None:
            raise ValueError("give state_key or state_keys, not both")
        # A random key keeps requestState valid for this process only; give a key
        # ring of your own when several processes serve the same clients.
        ring = state_keys if state_keys is not None else [state_key or secrets.token_bytes(32)]
        self.sealer = RequestStateSealer(ring, ttl=state_ttl)
        #: The stores this server's state may live in (shared between replicas when
        #: they are Redis), or None: each kind of state then keeps its own in memory.
        self.stores = stores
        #: Every live session of this server (adapters register them).
        self.hub = SessionHub()
        self.cache_hints = cache_hints
        # Each a _Registry: a change to one counts as the server's (see _changed).
        self.tools: dict[str, Tool] = _Registry(self)
        self.resources: dict[str, Resource] = _Registry(self)
        self.templates: dict[str, ResourceTemplate] = _Registry(self)
        self.prompts: dict[str, Prompt] = _Registry(self)
        # The session new ones are copied from, and what its settings depend on.
        self._session_memo: tuple[Any, ServerSession] | None = None
        # Each tool's quick argument check (argument_check), made at its first call
        # and kept while the same Tool is registered under its name.
        self._argument_checks: dict[str, tuple[Tool, Callable[[dict[str, Any]], bool]]] = {}
        #: Tools running as tasks, and the ``tasks/*`` answers (tasks extension).
        self.tasks = TaskRunner(
            task_store,
            ttl_ms=task_ttl_ms,
            poll_interval_ms=task_poll_interval_ms,
            limits=task_limits,
            new_id=new_task_id,
            stores=stores,
            lease=task_lease,
        )
        self.tasks.hub = self.hub
        # Hints (a list changed, a resource updated) reach the listeners of every
        # replica sharing the stores: each publishes its own and tells its sessions
        # those of the others.
        self._hint_stores = stores
        self._hint_subscription = (
            stores.events.subscribe(HINTS_CHANNEL, self._on_hint) if stores is not None else None
        )
        # What answers each request method (tasks/* aside: see _plan_unlisted).
        self._planners: dict[str, Callable[[Context], dict[str, Any] | HandlerCall]] = {
            "tools/list": self._plan_tool_listing,
            "tools/call": self._plan_tool_call,
            "resources/list": self._plan_resource_listing,
            "resources/templates/list": self._plan_template_listing,
            "resources/read": self._plan_read,
            "resources/subscribe": self._plan_subscription,
            "resources/unsubscribe": self._plan_subscription,
            "prompts/list": self._plan_prompt_listing,
            "prompts/get": self._plan_prompt,
            "completion/complete": self._plan_completion,
        }

    def operation_scopes(self, method: str, name: str | None) -> tuple[str, ...]:
        """The scopes a request needs beyond ``auth``'s: a scoped tool's, for its calls."""
        tool = self.tools.get(name) if method == "tools/call" and name else None
        return tool.scopes if tool is not None else ()

    # Registration ---------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        title: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None,
        task: str | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]:
        """Register a function as a tool; its signature gives the input schema.

        ``task="optional"`` runs it as a task (tasks extension) for a request
        that declared the extension, and at once for any other; ``"required"``
        runs it only as a task (-32021 to a request without the extension).
        ``scopes``: what a call needs beyond ``auth``'s ``required_scopes`` when the
        server is protected (403 ``insufficient_scope`` without them).

        A tool's input schema is read at its first call and its checks kept while
        the same :class:`Tool` is registered under its name: to change a schema,
        register the tool again (a schema changed in place is not seen).
        """
        if isinstance(scopes, str):
            raise ValueError("scopes must be a list of scopes, not one string")
        scopes = tuple(scopes)
        if task is not None and task not in TASK_SUPPORT:
            raise ValueError(f"task must be one of {sorted(TASK_SUPPORT)} or None")

        def register(func: F) -> F:
            context_param = _context_param(func)
            skip = frozenset({context_param}) if context_param else frozenset()
            tool = Tool(
                name=name or func.__name__,
                handler=func,
                input_schema=input_schema or schema_for_function(func, skip=skip),
                description=describe(func, description),
                title=title,
                output_schema=output_schema,
                annotations=annotations,
                context_param=context_param,
                task_support=task,
                scopes=scopes,
            )
            self.tools[tool.name] = tool
            return func

        return register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
    ) -> Callable[[F], F]:
        """Register a function returning the content (str, bytes or content dicts) of ``uri``."""

        def register(func: F) -> F:
            self.resources[uri] = Resource(
                uri=uri,
                name=name or func.__name__,
                handler=func,
                description=describe(func, description),
                mime_type=mime_type,
                title=title,
            )
            return func

        return register

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        completers: dict[str, Handler] | None = None,
    ) -> Callable[[F], F]:
        """Register a function called with the template's variables as keywords."""

        def register(func: F) -> F:
            self.templates[uri_template] = ResourceTemplate(
                uri_template=uri_template,
                name=name or func.__name__,
                handler=func,
                description=describe(func, description),
                mime_type=mime_type,
                title=title,
                completers=dict(completers or {}),
            )
            return func

        return register

    def prompt(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        title: str | None = None,
        completers: dict[str, Handler] | None = None,
    ) -> Callable[[F], F]:
        """Register a function returning the prompt's messages (or one string)."""

        def register(func: F) -> F:
            context_param = _context_param(func)
            arguments = tuple(
                PromptArgument(
                    name=p.name,
                    required=p.default is inspect.Parameter.empty,
                )
                for p in inspect.signature(func).parameters.values()
                if p.name != context_param
            )
            prompt = Prompt(
                name=name or func.__name__,
                handler=func,
                arguments=arguments,
                description=describe(func, description),
                title=title,
                completers=dict(completers or {}),
                context_param=context_param,
            )
            self.prompts[prompt.name] = prompt
            return func

        return register

    # Hints across replicas ------------------------------------------------------

    async def _share_hint(self, hint: dict[str, Any]) -> None:
        stores = self._hint_stores
        assert stores is not None
        try:
            await stores.events.publish(HINTS_CHANNEL, {**hint, "replica": stores.replica_id})
        except StoreUnavailable as exc:
            # Hints are at most once: this replica's own listeners were told.
            _log.warning("a hint was not shared with the other replicas: %s", exc)

    def _on_hint(self, message: dict[str, Any]) -> None:
        stores = self._hint_stores
        if stores is None or message.get("replica") == stores.replica_id:
            return  # told already, by the replica that published it
        kind = message.get("listChanged")
        if kind in ("tools", "prompts", "resources"):
            self.hub.list_changed(kind)
        uri = message.get("resourceUpdated")
        if isinstance(uri, str):
            self.hub.resource_updated(uri)

    # Session --------------------------------------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if self.tools:
            caps["tools"] = {"listChanged": True}
        if self.resources or self.templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts:
            caps["prompts"] = {"listChanged": True}
        if self.logging:
            caps["logging"] = {}
        if self._offers_tasks():
            caps["extensions"] = {TASKS_EXTENSION: {}}
            if self.handshake_tasks:
                # 2025-11-25's own tasks (trimmed away on every other revision).
                caps["tasks"] = dict(CORE_TASKS_CAPABILITY)
        if any(t.completers for t in self.templates.values()) or any(
            p.completers for p in self.prompts.values()
        ):
            caps["completions"] = {}
        return caps

    def _offers_tasks(self) -> bool:
        """Whether a tool runs as a task (the tasks extension is advertised)."""
        return any(t.task_support for t in self.tools.values())

    def _advertises_core_tasks(self) -> bool:
        """Whether :attr:`capabilities` has 2025-11-25's ``tasks`` (asked per call:
        cheaper than building the capabilities)."""
        return self.handshake_tasks and self._offers_tasks()

    # The changes of the server counted so far: every attribute set (a name, a
    # setting, a registry replaced) and every change to a registry counts one.
    _changes = 0
    # The registries replaced by a plain dict (whose own changes are not counted).
    _plain_registries: frozenset[str] = frozenset()

    if not TYPE_CHECKING:
        # Hidden from type checkers: a class with __setattr__ lets mypy accept any
        # attribute name, and a misspelled setting must stay an error.
        def __setattr__(self, name: str, value: Any) -> None:
            object.__setattr__(self, name, value)
            if name in _UNCOUNTED:
                return
            self._changed()
            if name in _REGISTRIES:
                plain = not (type(value) is _Registry and value._server is self)
                names = self._plain_registries
                self._plain_registries = names | {name} if plain else names - {name}

    def __copy__(self) -> Self:
        """A shallow copy shares the original's registries, whose changes count on the
        original: the copy reads its settings in full (as with a plain dict) and makes
        its own session template."""
        duplicate = object.__new__(type(self))
        duplicate.__dict__.update(self.__dict__)
        object.__setattr__(duplicate, "_session_memo", None)
        object.__setattr__(duplicate, "_plain_registries", _REGISTRIES)
        return duplicate

    def _changed(self) -> None:
        """Count a change (anything a new session's settings derive from may differ)."""
        object.__setattr__(self, "_changes", self._changes + 1)

    def _session_basis(self) -> Any:
        """What a new session's settings depend on (see :meth:`create_session`): the
        count of the server's changes, unless a registry is a plain dict (changed
        uncounted), then what the settings are derived from."""
        if not self._plain_registries:
            return self._changes
        return (
            tuple(self.tools.values()),
            tuple(self.templates.values()),
            tuple(self.prompts.values()),
            bool(self.resources),
            self.logging,
            self.handshake_tasks,
            self.name,
            self.version,
            self.title,
            self.instructions,
            self.supported_versions,
            self.cache_hints,
        )

    @property
    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title:
            info["title"] = self.title
        return info

    def create_session(self, **options: Any) -> ServerSession:
        """A :class:`ServerSession` advertising this server, with capability objects of
        its own.  A stateless request makes one per request: without ``options`` it is
        a copy of one made when what it advertises last changed."""
        if options:
            return self._build_session(options)
        # _session_basis()'s first case inlined (one call less per stateless request).
        basis = self._changes if not self._plain_registries else self._session_basis()
        memo = self._session_memo
        if memo is None or memo[0] != basis:
            memo = self._session_memo = (basis, self._build_session({}))
        return memo[1]._fresh_copy()

    def _build_session(self, options: dict[str, Any]) -> ServerSession:
        options.setdefault("supported_versions", self.supported_versions)
        options.setdefault("cache_hints", self.cache_hints)
        session = ServerSession(
            capabilities=self.capabilities,
            server_info=self.info,
            instructions=self.instructions,
            **options,
        )
        session.task_visible = self._task_visible
        return session

    def _task_visible(self, task_id: str, owner: str) -> bool:
        return self.tasks.visible(task_id, owner)

    # Dispatch -------------------------------------------------------------------

    async def handle(self, ctx: Context) -> dict[str, Any]:
        """The result for ``ctx.method``; raises :class:`MCPError` for errors."""
        outcome = self.begin(ctx)
        if isinstance(outcome, dict):
            return outcome
        return await outcome

    def begin(self, ctx: Context) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """Start answering ``ctx.method``: the result itself when no handler has to
        wait (lists, plain-function handlers), else an awaitable of it (``async``
        handlers); raises :class:`MCPError` for errors.

        An adapter answers the first kind at once, without a task.  For a
        stateless request that may need input (tools/call, prompts/get,
        resources/read), answers gathered in earlier rounds come back from the
        sealed ``requestState``; a handler still lacking one makes the result
        ``input_required``.
        """
        ctx.hub = self.hub
        if self._hint_stores is not None:
            ctx.share_hint = self._share_hint
        # Only a stateless request may ask (asked here: most requests are not one).
        may_ask = ctx.meta is not None and self._recall_answers(ctx)
        planner = self._planners.get(ctx.method)
        call = planner(ctx) if planner is not None else self._plan_unlisted(ctx)
        if isinstance(call, dict):
            return call
        if call.task:
            # A partial, not a lambda: a closure would make cells on every request.
            failed = functools.partial(self._failed, ctx, call, may_ask=may_ask)
            return self.tasks.start(ctx, call, failed)
        try:
            value = call.handler(**call.kwargs)
        except Exception as exc:
            return self._failed(ctx, call, exc, may_ask)
        if type(value) not in _PLAIN_VALUES and inspect.isawaitable(value):
            return self._settle(ctx, call, value, may_ask)
        return call.finish(value)

    def _recall_answers(self, ctx: Context) -> bool:
        """Put the input gathered so far on ``ctx``; whether it is a stateless
        request that may ask for more."""
        if ctx.meta is None or ctx.method not in MRTR_METHODS:
            return False
        answers: dict[str, Any] = {}
        if "requestState" in ctx.params:
            binding = request_binding(ctx.method, ctx.params)
            sealed = self.sealer.unseal(
                ctx.params["requestState"], now=ctx.now, binding=binding, principal=task_owner(ctx)
            )
            if isinstance(sealed, dict):
                answers.update(sealed)
        responses = ctx.params.get("inputResponses")
        if isinstance(responses, dict):
            answers.update(responses)
        ctx._answers = answers
        return True

    async def _settle(
        self, ctx: Context, call: HandlerCall, pending: Awaitable[Any], may_ask: bool
    ) -> dict[str, Any]:
        try:
            value = await pending
        except Exception as exc:
            return self._failed(ctx, call, exc, may_ask)
        return call.finish(value)

    def _failed(
        self, ctx: Context, call: HandlerCall, exc: Exception, may_ask: bool
    ) -> dict[str, Any]:
        """The result when a handler raised ``exc`` (or raise it on)."""
        if isinstance(exc, NeedInput) and may_ask:
            # The binding is worked out only now: most requests never ask.
            binding = request_binding(ctx.method, ctx.params)
            return {
                "resultType": "input_required",
                "inputRequests": exc.requests,
                "requestState": self.sealer.seal(
                    ctx._answers, now=ctx.now, binding=binding, principal=task_owner(ctx)
                ),
            }
        if isinstance(exc, (MCPError, NeedInput)) or not call.tool:
            raise exc
        # A failing tool is a result, not a protocol error.
        return ToolResult.text(failure_text(exc), is_error=True).to_result()

    def _plan_unlisted(self, ctx: Context) -> dict[str, Any] | HandlerCall:
        """:meth:`begin`'s plan for a method without a planner: ``tasks/*``, or none."""
        if ctx.method.startswith("tasks/"):
            return self._plan_task(ctx)
        raise MethodNotFound(message=f"method not found: {ctx.method!r}")

    def _plan_tool_listing(self, ctx: Context) -> dict[str, Any]:
        return self._page(ctx.params, "tools", self._tool_listing(ctx))

    def _plan_resource_listing(self, ctx: Context) -> dict[str, Any]:
        return self._page(ctx.params, "resources", [r.to_dict() for r in self.resources.values()])

    def _plan_template_listing(self, ctx: Context) -> dict[str, Any]:
        items = [t.to_dict() for t in self.templates.values()]
        return self._page(ctx.params, "resourceTemplates", items)

    def _plan_subscription(self, ctx: Context) -> dict[str, Any]:
        """``resources/subscribe`` and ``resources/unsubscribe``: the resource must exist."""
        self._find_resource(ctx.params["uri"])
        return {}

    def _plan_prompt_listing(self, ctx: Context) -> dict[str, Any]:
        return self._page(ctx.params, "prompts", [p.to_dict() for p in self.prompts.values()])

    def _plan_task(self, ctx: Context) -> dict[str, Any] | HandlerCall:
        """The ``tasks/*`` requests: 2025-11-25's own on such a session, else the extension's."""
        if _core_tasks(ctx):
            return self._plan_core_task(ctx)
        if ctx.method in TASK_METHODS:
            if self.tasks.shared is not None:
                kwargs = {"ctx": ctx, "method": ctx.method}
                return HandlerCall(self.tasks.handle_shared, kwargs, _same)
            return self.tasks.handle(ctx, ctx.method)
        raise MethodNotFound(message=f"method not found: {ctx.method!r}")

    def _tool_listing(self, ctx: Context) -> list[dict[str, Any]]:
        tools = [t.to_dict() for t in self.tools.values()]
        if _core_tasks(ctx) and self._advertises_core_tasks():
            for tool, listed in zip(self.tools.values(), tools, strict=True):
                listed["execution"] = {"taskSupport": tool.task_support or "forbidden"}
        return tools

    def _plan_core_task(self, ctx: Context) -> dict[str, Any] | HandlerCall:
        """2025-11-25's ``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``."""
        shared = self.tasks.shared is not None
        if ctx.method == "tasks/list":
            if shared:
                page = functools.partial(self._page, ctx.params, "tasks")
                return HandlerCall(self.tasks.listing_shared, {"ctx": ctx}, page)
            return self._page(ctx.params, "tasks", self.tasks.listing(ctx))
        if ctx.method == "tasks/result":
            return HandlerCall(self.tasks.payload, {"ctx": ctx}, _same)
        if shared:
            kwargs = {"ctx": ctx, "method": ctx.method}
            return HandlerCall(self.tasks.handle_core_shared, kwargs, _same)
        return self.tasks.handle_core(ctx, ctx.method)

    def _page(
        self, params: dict[str, Any], key: str, items: list[dict[str, Any]]
    ) -> dict[str, Any]:
        start = decode_cursor(params.get("cursor"), len(items))
        end = start + self.page_size
        result: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = encode_cursor(end)
        return result

    def _plan_tool_call(self, ctx: Context) -> dict[str, Any] | HandlerCall:
        params = ctx.params
        name = params["name"]
        tool = self.tools.get(name)
        if tool is None:
            self._argument_checks.pop(name, None)
            raise InvalidParams(message=f"unknown tool: {name!r}")
        arguments = params.get("arguments") or {}
        checked = self._argument_checks.get(name)
        if checked is None or checked[0] is not tool:
            given = frozenset({tool.context_param}) if tool.context_param else frozenset()
            check = argument_check(tool.input_schema, tool.handler, given=given)
            checked = self._argument_checks[name] = (tool, check)
        if not checked[1](arguments):
            problem = self._argument_problem(name, tool, arguments)
            if problem is not None:
                return problem
        if tool.context_param:
            kwargs = dict(arguments)
            kwargs[tool.context_param] = ctx
        else:
            kwargs = arguments  # only ever unpacked (**kwargs), never changed: no copy
        if tool.task_support is None and params.get("task") is None:
            task = False  # what both rules below say of it, found without them
        elif _core_tasks(ctx) and self._advertises_core_tasks():
            task = runs_as_core_task(tool.task_support, params.get("task"))
        else:
            task = runs_as_task(tool.task_support, ctx.client_capabilities, modern=ctx.stateless)
        # The tuple's own __new__ (the named tuple's is Python code), every field given.
        return _new_call(HandlerCall, (tool.handler, kwargs, tool_result, True, task))

    def _argument_problem(
        self, name: str, tool: Tool, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """What is wrong with ``arguments`` (the quick check said something may be):
        names the tool cannot take raise -32602, found before the call so that no
        ``TypeError`` naming the function reaches the peer; a bad value is a tool error
        result the model can act on (SEP-1303)."""
        given = frozenset({tool.context_param}) if tool.context_param else frozenset()
        names_problem = argument_names_problem(tool.input_schema, arguments) or signature_problem(
            tool.handler, arguments, given=given
        )
        if names_problem:
            raise InvalidParams(message=f"invalid arguments for tool {name!r}: {names_problem}")
        problem = argument_values_problem(tool.input_schema, arguments)
        if problem:
            return ToolResult.text(
                f"invalid arguments for {name}: {problem}", is_error=True
            ).to_result()
        return None

    def _find_resource(self, uri: str) -> tuple[Handler, dict[str, str], str | None]:
        resource = self.resources.get(uri)
        if resource is not None:
            return resource.handler, {}, resource.mime_type
        for template in self.templates.values():
            variables = template.matcher.match(uri)
            if variables is not None:
                return template.handler, variables, template.mime_type
        raise MCPError(ErrorCode.RESOURCE_NOT_FOUND, f"resource not found: {uri}", {"uri": uri})

    def _plan_read(self, ctx: Context) -> HandlerCall:
        uri = ctx.params["uri"]
        try:
            handler, variables, mime_type = self._find_resource(uri)
        except MCPError as error:
            if ctx.stateless and error.code == ErrorCode.RESOURCE_NOT_FOUND:
                # SEP-2164: 2026-07-28 reports an unknown resource as -32602, never -32002.
                raise InvalidParams(message=error.message, data=error.data) from None
            raise

        def finish(value: Any) -> dict[str, Any]:
            return {"contents": resource_contents(uri, value, mime_type)}

        return HandlerCall(handler, variables, finish)

    def _plan_prompt(self, ctx: Context) -> HandlerCall:
        name = ctx.params["name"]
        prompt = self.prompts.get(name)
        if prompt is None:
            raise InvalidParams(message=f"unknown prompt: {name!r}")
        arguments = dict(ctx.params.get("arguments") or {})
        known = {a.name for a in prompt.arguments}
        missing = [a.name for a in prompt.arguments if a.required and a.name not in arguments]
        if missing:
            raise InvalidParams(message=f"prompt {name!r} needs argument(s) {', '.join(missing)}")
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise InvalidParams(message=f"prompt {name!r} has no argument(s) {', '.join(unknown)}")
        if prompt.context_param:
            arguments[prompt.context_param] = ctx

        def finish(value: Any) -> dict[str, Any]:
            if isinstance(value, dict) and "messages" in value:
                return value
            if isinstance(value, str):
                messages = [{"role": "user", "content": text_content(value)}]
            else:
                messages = list(value)
            result: dict[str, Any] = {"messages": messages}
            if prompt.description:
                result["description"] = prompt.description
            return result

        return HandlerCall(prompt.handler, arguments, finish)

    def _plan_completion(self, ctx: Context) -> dict[str, Any] | HandlerCall:
        params = ctx.params
        ref, argument = params["ref"], params["argument"]
        completers: Mapping[str, Handler]
        if ref["type"] == "ref/prompt":
            prompt = self.prompts.get(ref["name"])
            if prompt is None:
                raise InvalidParams(message=f"unknown prompt: {ref['name']!r}")
            completers = prompt.completers
        else:
            template = self.templates.get(ref["uri"])
            if template is None:
                raise InvalidParams(message=f"unknown resource template: {ref['uri']!r}")
            completers = template.completers
        completer = completers.get(argument["name"])
        if completer is None:
            return completion_result([])
        context = params.get("context") or {}
        kwargs = {"value": argument["value"], "context": context.get("arguments") or {}}
        return HandlerCall(completer, kwargs, completion_result)


def answer_request(server: Server, ctx: Context) -> Awaitable[None] | None:
    """Answer the request ``ctx`` describes with ``server``, on ``ctx.session``.

    Returns None when the request is answered already (lists, plain-function
    handlers: no task is needed), else an awaitable that answers it when it
    completes (``async`` handlers): run it concurrently, in a task of your own,
    so a slow handler holds up nobody, and cancel that task when the client
    cancels the request (a cancelled request is not answered).  Either way the
    answer is queued on the session, never sent: ship its output afterwards.
    Errors are answered, not raised: an :class:`MCPError` (unknown tool, bad
    arguments) as itself, any other exception as -32603, logged.
    """
    try:
        outcome = server.begin(ctx)
    except Exception as exc:
        respond_with_failure(ctx.session, ctx.request_id, ctx.method, exc)
        return None
    if isinstance(outcome, dict):
        respond_with_result(ctx.session, ctx.request_id, ctx.method, outcome)
        return None
    return _answer_later(ctx, outcome)


async def _answer_later(ctx: Context, outcome: Awaitable[dict[str, Any]]) -> None:
    try:
        result = await outcome
    except Exception as exc:
        respond_with_failure(ctx.session, ctx.request_id, ctx.method, exc)
    else:
        respond_with_result(ctx.session, ctx.request_id, ctx.method, result)
