"""The backend-neutral high-level client: typed conveniences over one
abstract ``request`` primitive, and the answers to server-to-client requests.

Adapters subclass :class:`ClientAPI` and implement :meth:`ClientAPI.request`.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

import attrs

from .._client_session import ClientSession
from .._errors import ErrorCode, LocalProtocolError, MCPError, RemoteProtocolError
from .._events import RequestReceived
from .._gates import has_capability
from .._http_headers import x_mcp_header_problems
from .._json import DEFAULT_MAX_MESSAGE_SIZE
from .._jsonrpc import RequestId
from .._params import LOG_LEVELS
from .._stateless import listen_filter
from .._tasks import CORE_TASKS_REVISION, TASKS_EXTENSION
from ._driver import Driver, ProgressCallback, SubscriptionSink
from ._primitives import Signal, Sleeper
from ._task_client import StatusCallback, ToolTask

if TYPE_CHECKING:
    from .._cache import ResultCache

__all__ = [
    "ClientAPI",
    "ClientHost",
    "ClientHandlers",
    "ProgressCallback",
    "Subscription",
    "new_client_session",
]

SamplingHandler = Callable[[dict[str, Any]], Any]
ElicitationHandler = Callable[[dict[str, Any]], Any]
RootsProvider = Sequence[dict[str, Any]] | Callable[[], Any]
NotificationHandler = Callable[[str, dict[str, Any]], Any]


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


@attrs.define
class ClientHandlers:
    """How a client answers the server: each handler present advertises its capability.

    * ``sampling(params) -> CreateMessageResult``
      (``sampling_tools``: it may offer the model tools, 2025-11-25 on)
    * ``elicitation(params) -> ElicitResult`` (``elicitation_modes`` says which modes)
    * ``roots``: a list of roots, or a function returning one
    * ``on_notification(method, params)``: every server notification
      (logs, list changes, resource updates)
    """

    sampling: SamplingHandler | None = None
    sampling_tools: bool = False
    elicitation: ElicitationHandler | None = None
    elicitation_modes: tuple[str, ...] = ("form",)
    roots: RootsProvider | None = None
    roots_list_changed: bool = True
    on_notification: NotificationHandler | None = None
    #: Declare the tasks extension (2026-07-28): task-capable tools may then answer
    #: with a task, which :meth:`ClientAPI.call_tool` follows.
    tasks: bool = False

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if self.tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        if self.sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.roots is not None:
            caps["roots"] = {"listChanged": self.roots_list_changed}
        return caps

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result for a server-to-client request; raises MCPError."""
        if method == "sampling/createMessage" and self.sampling is not None:
            return dict(await _maybe_await(self.sampling(params)))
        if method == "elicitation/create" and self.elicitation is not None:
            return dict(await _maybe_await(self.elicitation(params)))
        if method == "roots/list" and self.roots is not None:
            roots = self.roots() if callable(self.roots) else self.roots
            return {"roots": list(await _maybe_await(roots))}
        raise MCPError(ErrorCode.METHOD_NOT_FOUND, f"method not found: {method!r}")

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        if self.on_notification is not None:
            await _maybe_await(self.on_notification(method, params))

    async def handle_request(self, event: RequestReceived) -> dict[str, Any]:
        """Answer a server-to-client request event."""
        return await self.answer(event.method, event.params)

    def host_callbacks(self) -> dict[str, Any]:
        """The callbacks a client-side session host takes, wired to these handlers."""
        return {
            "handle_request": self.handle_request,
            "handle_notification": self.notify,
            "answer_input": self.answer,
        }


def new_client_session(
    handlers: ClientHandlers,
    *,
    client_info: dict[str, Any] | None = None,
    supported_versions: Sequence[str] | None = None,
    protocol_version: str | None = None,
    mode: str = "auto",
    max_input_rounds: int = 10,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> ClientSession:
    """A :class:`ClientSession` advertising what ``handlers`` can answer."""
    options: dict[str, Any] = {}
    if supported_versions is not None:
        options["supported_versions"] = supported_versions
    return ClientSession(
        capabilities=handlers.capabilities(),
        client_info=client_info,
        protocol_version=protocol_version,
        mode=mode,
        max_input_rounds=max_input_rounds,
        max_message_size=max_message_size,
        **options,
    )


class Subscription(SubscriptionSink):
    """Notifications of one :meth:`ClientAPI.listen`: an async iterator of
    ``(method, params)``; ``acknowledged_filter`` is what the server agreed to send.
    Buffered up to ``buffer`` (beyond it they are counted in ``dropped``), and woken
    by the backend's signals (``new_signal``); one consumer."""

    def __init__(self, buffer: int, new_signal: Callable[[], Signal]) -> None:
        self._items: deque[tuple[str, dict[str, Any]]] = deque()
        self._buffer = buffer
        self._new_signal = new_signal
        self._ready = new_signal()
        self._acknowledged = new_signal()
        self.acknowledged_filter: dict[str, Any] = {}
        self.dropped = 0
        self._was_acknowledged = False
        self._ended = False
        self._error: MCPError | None = None

    def acknowledged(self, notifications: dict[str, Any]) -> None:
        self.acknowledged_filter = notifications
        self._was_acknowledged = True
        self._acknowledged.set()

    def deliver(self, method: str, params: dict[str, Any]) -> None:
        if len(self._items) >= self._buffer:
            # A consumer this far behind has lost the thread anyway; count, don't block I/O.
            self.dropped += 1
            return
        self._items.append((method, params))
        self._ready.set()

    def ended(self, error: MCPError | None) -> None:
        self._ended, self._error = True, error
        self._ready.set()
        self._acknowledged.set()

    async def wait_acknowledged(self) -> None:
        await self._acknowledged.wait()
        if self._error is not None and not self._was_acknowledged:
            raise self._error  # refused, or failed before it began

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> tuple[str, dict[str, Any]]:
        """The next notification; once the subscription ended and what came is
        read, its error (the stream broke, the connection closed), or the end."""
        while not self._items:
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            await self._ready.wait()
            self._ready = self._new_signal()
        return self._items.popleft()


class ClientHost(Protocol):
    """What a client runs on: a session host (:class:`~sansio_mcp.runtime._host.HostBase`)."""

    driver: Driver

    @property
    def backend(self) -> Sleeper: ...

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        related_request: RequestId | None = None,
        owner: object = None,
    ) -> dict[str, Any]: ...

    async def flush(self) -> None: ...

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None: ...

    def now(self) -> float: ...

    def new_signal(self) -> Signal: ...


def _task_support(tool: dict[str, Any]) -> Any:
    execution = tool.get("execution")
    return execution.get("taskSupport") if isinstance(execution, dict) else None


class ClientAPI:
    """Typed MCP calls on a session host (:class:`ClientHost`): requests, flushing,
    shielding, the clock and subscriptions are the host's.

    On a stateless (2026-07-28) server, cacheable results are served from
    :attr:`cache` while their ``ttlMs`` says they are fresh.
    """

    session: ClientSession
    driver: Driver
    #: Results kept per the server's cache hints (None: no caching).
    cache: ResultCache | None = None

    def __init__(self, host: ClientHost, session: ClientSession, handlers: ClientHandlers) -> None:
        self._host = host
        self.session = session
        self.driver = driver = host.driver
        self.handlers = handlers
        #: 2025-11-25 tools that may run as tasks: name -> ``execution.taskSupport``
        #: (from list_tools; None until it ran).
        self._task_tools: dict[Any, str] | None = None
        if session.is_stateless:
            from .._cache import ResultCache  # only a stateless session caches

            self.cache = ResultCache()
        driver.observe_notification = self.notification_seen

    @property
    def protocol_version(self) -> str:
        assert self.session.protocol_version is not None
        return self.session.protocol_version

    @property
    def server_info(self) -> dict[str, Any]:
        return self.session.peer_info or {}

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.session.peer_capabilities or {}

    @property
    def instructions(self) -> str | None:
        return self.session.instructions

    # The host's primitives ---------------------------------------------------------

    def send_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        owner: object = None,
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """Send a request and wait for its result (no cache); await it.  ``owner`` says
        whose it is: a server request sent with it is for that owner
        (``driver.owner_of(event.related_request)``, where the transport tells)."""
        # The host's coroutine itself, not one awaiting it: every wake of a waiting
        # request resumes each frame on its stack (a gateway relays each call so).
        return self._host.request(
            method, params, timeout=timeout, on_progress=on_progress, owner=owner
        )

    async def flush(self) -> None:
        """Send what the session queued."""
        await self._host.flush()

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run ``step`` even while being cancelled."""
        await self._host.shielded(step)

    def clock(self) -> float:
        """Seconds on the host's monotonic clock (for caching)."""
        return self._host.now()

    def new_subscription(self, buffer: int) -> Subscription:
        """An empty :class:`Subscription` on the host."""
        return Subscription(buffer, self._host.new_signal)

    # Requests --------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        fresh: bool = False,
    ) -> dict[str, Any]:
        """Send a request and wait for its result; raises MCPError on an error response.

        ``fresh`` skips the cache.
        """
        cache = self.cache
        if cache is not None and not fresh:
            hit = cache.get(method, params, now=self.clock())
            if hit is not None:
                return hit
        result = await self.send_request(method, params, timeout=timeout, on_progress=on_progress)
        if cache is not None:
            cache.put(method, params, result, now=self.clock())
        return result

    def notification_seen(self, method: str, params: dict[str, Any]) -> None:
        """Drop cached results a notification makes stale."""
        if self.cache is not None:
            self.cache.invalidate(method, params)

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check the server is alive (2026-07-28 has no ping: there it is ``server/discover``)."""
        if self.session.is_stateless:
            await self.request("server/discover", None, timeout=timeout, fresh=True)
            return
        await self.request("ping", timeout=timeout)

    async def send_roots_list_changed(self) -> None:
        self.session.send_roots_list_changed()
        await self.flush()

    async def _all_pages(
        self, method: str, key: str, params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            page_params = dict(params or {})
            if cursor is not None:
                page_params["cursor"] = cursor
            result = await self.request(method, page_params or None)
            page = result.get(key)
            if not isinstance(page, list):
                raise RemoteProtocolError(f"{method} result has no {key!r} list")
            items.extend(page)
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str):
                return items
            if next_cursor in seen:
                raise RemoteProtocolError(f"{method} returned cursor {next_cursor!r} twice")
            seen.add(next_cursor)
            cursor = next_cursor

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool, across all pages.

        On 2026-07-28, tools whose ``x-mcp-header`` annotations are invalid are
        left out: clients must not use them (SEP-2243).
        """
        tools = await self._all_pages("tools/list", "tools")
        if not self.session.is_stateless:
            # 2025-11-25: remember which tools may run as tasks (call_tool asks for one).
            self._task_tools = {
                t.get("name"): support
                for t in tools
                if (support := _task_support(t)) in ("optional", "required")
            }
            return tools
        return [t for t in tools if not x_mcp_header_problems(t.get("inputSchema"))]

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        task: Literal[False] = False,
        on_status: StatusCallback | None = None,
    ) -> dict[str, Any]: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        task: Literal[True],
        on_status: StatusCallback | None = None,
    ) -> ToolTask: ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        task: bool = False,
        on_status: StatusCallback | None = None,
    ) -> dict[str, Any] | ToolTask:
        """Call a tool; returns the CallToolResult (check ``isError``).

        When the server runs the call as a task (the client declared the tasks
        extension: ``ClientHandlers(tasks=True)``), the task is followed to its
        result (``on_status`` sees its changes); with ``task=True`` its
        :class:`ToolTask` handle is returned instead (a finished one if the
        server answered at once).  On 2025-11-25, ``task=True`` asks a server that
        offers tool tasks for one (``params.task``) if the tool's
        ``execution.taskSupport`` allows it (the listing is fetched once to know), as
        does a plain call of a tool :meth:`list_tools` saw as task-only (the task is
        followed to its result).
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        core_task = False
        if self._core_tool_tasks:
            if task and self._task_tools is None:
                await self.list_tools()  # which tools may run as tasks (the spec's check)
            support = (self._task_tools or {}).get(name)
            core_task = support == "required" or (task and support == "optional")
        if core_task:
            params["task"] = {}
        result = await self.request("tools/call", params, timeout=timeout, on_progress=on_progress)
        if task:
            return ToolTask(self, result)
        if result.get("resultType") == "task" or core_task:
            return await ToolTask(self, result).result(on_status=on_status)
        return result

    @property
    def _core_tool_tasks(self) -> bool:
        """Whether this is a 2025-11-25 session with a server that runs tool calls as tasks."""
        return self.protocol_version == CORE_TASKS_REVISION and has_capability(
            self.server_capabilities, ("tasks", "requests", "tools", "call")
        )

    async def sleep(self, seconds: float) -> None:
        """Sleep on the host's backend (polling pace)."""
        await self._host.backend.sleep(seconds)

    async def answer_input(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer an input request (a task's, an MRTR round's) with the handlers."""
        return await self.handlers.answer(method, params)

    async def list_resources(self) -> list[dict[str, Any]]:
        return await self._all_pages("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._all_pages("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """The ReadResourceResult (``contents``) of ``uri``."""
        return await self.request("resources/read", {"uri": uri})

    async def subscribe(self, uri: str) -> None:
        if self.session.is_stateless:
            raise LocalProtocolError(
                "resources/subscribe does not exist in 2026-07-28: "
                "use Client.listen(resource_uris=[...])"
            )
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._all_pages("prompts/list", "prompts")

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("prompts/get", params)

    async def complete(
        self,
        ref: dict[str, Any],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """``completion/complete``; returns the ``completion`` object."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            params["context"] = {"arguments": context}
        result = await self.request("completion/complete", params)
        completion = result.get("completion")
        if not isinstance(completion, dict):
            raise RemoteProtocolError("completion/complete result has no completion object")
        return completion

    async def set_logging_level(self, level: str) -> None:
        """Ask for log messages at ``level`` and above.

        On a stateless (2026-07-28) server the level travels in every
        request's ``_meta``; on a handshake session it is ``logging/setLevel``.
        """
        if self.session.is_stateless:
            if level not in LOG_LEVELS:
                raise ValueError(f"unknown log level {level!r}")
            self.session.log_level = level
            return
        await self.request("logging/setLevel", {"level": level})

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
        buffer: int = 1000,
    ) -> AsyncIterator[Subscription]:
        """Follow list changes and resource updates as an async iterator.

        On 2026-07-28 this is one ``subscriptions/listen`` request, ended with
        ``notifications/cancelled`` on exit; on a handshake session it
        subscribes to ``resource_uris`` and follows the session's
        notifications.  Iterate the yielded :class:`Subscription` for
        ``(method, params)`` pairs.  ``task_ids`` (2026-07-28, tasks extension)
        asks for ``notifications/tasks`` about those tasks.
        """
        uris = list(resource_uris)
        wanted = listen_filter(
            tools=tools_list_changed,
            prompts=prompts_list_changed,
            resources=resources_list_changed,
            uris=uris,
            task_ids=task_ids if self.session.is_stateless else (),
        )
        subscription = self.new_subscription(buffer)
        driver = self.driver
        if self.session.is_stateless:
            listen_id = self.session.send_request("subscriptions/listen", {"notifications": wanted})
            driver.subscriptions[listen_id] = subscription
            try:
                await self.flush()
                await subscription.wait_acknowledged()
                yield subscription
            finally:
                driver.subscriptions.pop(listen_id, None)
                if listen_id in self.session.pending_requests:
                    self.session.cancel(listen_id, "the client stopped listening")
                    await self.shielded(self.flush)
            return

        kinds = {
            "notifications/tools/list_changed": tools_list_changed,
            "notifications/prompts/list_changed": prompts_list_changed,
            "notifications/resources/list_changed": resources_list_changed,
        }

        def wants(method: str, params: dict[str, Any]) -> bool:
            if method == "notifications/resources/updated":
                return params.get("uri") in uris
            return kinds.get(method, False)

        for uri in uris:
            await self.subscribe(uri)
        entry = (wants, subscription)
        driver.session_sinks.append(entry)
        subscription.acknowledged(wanted)

        async def unsubscribe_all() -> None:
            for uri in uris:
                if not driver.closed:
                    await self.unsubscribe(uri)

        try:
            yield subscription
        finally:
            driver.session_sinks.remove(entry)
            await self.shielded(unsubscribe_all)
