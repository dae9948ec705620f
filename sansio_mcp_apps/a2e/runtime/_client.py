"""The agent's side of A2E, backend-neutral: requests and their responses by
``req_id``, pushes and tool events to callbacks, the bridge's own requests
(sampling, roots, elicitation) to handlers, and the typed conveniences.

Like :class:`~sansio_mcp.runtime._host.HostBase` it does no I/O: its
:class:`~sansio_mcp.runtime.Backend` gives it signals, the clock and one
:class:`~sansio_mcp.runtime.Timer` (the watchdog), the task group given to
:meth:`A2EClientBase.attach` runs its tasks, and the transport supplies
``send``.  Time limits are deadlines the one watchdog enforces, not a cancel
scope per request (a Trio cancel scope costs more than the rest of a bridged
call's bookkeeping).
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import json
import logging
import math
import os
import sys
import tempfile
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from sansio_mcp.runtime import Backend, Signal, TaskGroup, Timer

from ...a2e._codec import DecodeError
from ...a2e._config import bridge_command
from ...a2e._fields import copy_json
from ...a2e._messages import (
    A2EError,
    A2EMessage,
    ElicitRequest,
    ElicitResponse,
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
    MCPSamplingRequest,
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

__all__ = ["A2EClientBase", "A2ERequestError", "AgentInbox", "Handler", "bridge_invocation"]

logger = logging.getLogger("sansio_mcp_apps.a2e")

R = TypeVar("R", bound=A2EMessage)
T = TypeVar("T")
Handler = Callable[[Any], Any]

#: Messages that reach user code (handlers, callbacks) rather than a waiting request.
_DISPATCHED = frozenset(
    {MCPSamplingRequest, MCPRootsListRequest, ElicitRequest, ToolEvent, MCPServerPush, Ping}
)


class A2ERequestError(Exception):
    """The bridge answered a request with an ``error`` message, or with a response
    carrying ``error_code`` (see :meth:`A2EClientBase.check`)."""

    def __init__(self, code: str, message: str, *, retryable: bool, response: A2EMessage) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.response = response


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class _Pending:
    """One wait of the agent: a request's response, or a push, until a deadline."""

    __slots__ = ("done", "expired", "response", "signal")

    def __init__(self, signal: Signal) -> None:
        self.signal = signal
        self.response: A2EMessage | None = None
        self.expired = False
        #: The waiter has finished (its deadline entry is stale).
        self.done = False


class _ToolWait(_Pending):
    """A :meth:`A2EClientBase.call_tool` handed to a bridge in this process by its
    fields: its answer may come as the bare ToolResult (``result``)."""

    __slots__ = ("result",)

    def __init__(self, signal: Signal) -> None:  # _Pending's, without the call to it
        self.signal = signal
        self.response: A2EMessage | None = None
        self.expired = False
        self.done = False
        self.result: dict[str, Any] | None = None


def own_arguments(arguments: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A tool call's arguments as a bridge in this process may take them: a copy
    nobody else holds, exactly what :func:`~sansio_mcp_apps.a2e.adopt` makes of them in
    a ``tool/call/req``; None when adopting would not take them as they are (a value
    JSON cannot hold, a tuple, a non-string key, too deep): such a call goes as a
    message, and fails or is changed as on the wire."""
    try:
        # Depth 2: the arguments sit inside the message object.
        copied = copy_json(arguments if type(arguments) is dict else dict(arguments or {}), 2)
    except (TypeError, ValueError):  # TooDeep is a ValueError
        return None
    return copied if type(copied) is dict else None


def bridge_invocation(
    command: Sequence[str] | None, config: Mapping[str, Any] | None, bridge_args: Sequence[str]
) -> tuple[list[str], str | None]:
    """The command that starts an agent's bridge child, and the private temporary
    file holding ``config`` it reads (``--config``; None when there is none), which
    the caller removes once the child is done.  A given ``command`` is used as is."""
    if command is not None:
        return list(command), None
    config_path: str | None = None
    if config is not None:
        handle, config_path = tempfile.mkstemp(suffix=".json", prefix="a2e-bridge-")
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            json.dump(dict(config), f)
    return bridge_command(sys.executable, bridge_args, config_path), config_path


class A2EClientBase:
    """One agent's side of an A2E connection.

    ``on_sample(MCPSamplingRequest)`` returns an :class:`MCPSamplingResponse`
    or a dict of its fields (``content``, ``model``, ``stop_reason``, or
    ``error`` to refuse); ``on_roots(MCPRootsListRequest)`` returns a list of
    roots; ``on_elicit(ElicitRequest)`` returns an ElicitResult dict.
    Without a handler the request is refused.  ``on_push`` and ``on_event``
    see pushes and tool events; every message in either direction also goes
    to ``on_message(direction, message)`` (``"->"`` sent, ``"<-"`` received).
    """

    #: What a wait raises when its time limit passes (the backend's own error).
    timeout_error: type[Exception] = TimeoutError
    #: The event-loop primitives (an adapter's client class names its own).
    backend: Backend

    def __init__(
        self,
        send: Callable[[A2EMessage], Awaitable[None]],
        *,
        backend: Backend | None = None,
        clock: Callable[[], float] | None = None,
        on_sample: Handler | None = None,
        on_roots: Handler | None = None,
        on_elicit: Handler | None = None,
        on_push: Handler | None = None,
        on_event: Handler | None = None,
        on_message: Callable[[str, A2EMessage], None] | None = None,
        history: int = 1000,
    ) -> None:
        self._send_raw = send
        if backend is not None:
            self.backend = backend
        self._group: TaskGroup | None = None
        self._watchdog: Timer | None = None
        #: How many pushes and tool events :attr:`pushes` and :attr:`events` keep.
        self.history = history
        # Pushes dropped from the front of self.pushes (wait_for_push counts from 0).
        self._pushes_dropped = 0
        #: An in-process bridge's ``agent_tool_call(req_id, tool_name, arguments,
        #: timeout, streaming)``: takes a tool call as its fields (:meth:`call_tool`).
        self.hand_over_call: Callable[[str, str, dict[str, Any], int, bool], None] | None = None
        self.on_sample = on_sample
        self.on_roots = on_roots
        self.on_elicit = on_elicit
        self.on_push = on_push
        self.on_event = on_event
        self.on_message = on_message
        #: Stamps ``ts`` (seconds since the epoch): the backend's wall clock unless told.
        self.clock = clock if clock is not None else self.backend.wall_clock
        self._waiters: dict[str, _Pending] = {}
        self._push_waiters: list[_Pending] = []
        #: A heap of (monotonic deadline, order, wait) for every wait with a time
        #: limit; finished waits leave it when they reach the top, or in a sweep.
        self._deadlines: list[tuple[float, int, _Pending]] = []
        self._order = itertools.count()
        self._armed = math.inf
        self.closed = False
        #: The last :attr:`history` pushes and tool events received (every one also
        #: goes to the callbacks).
        self.pushes: list[MCPServerPush] = []
        self.events: list[ToolEvent] = []
        #: Inputs the client could not decode (a misbehaving bridge).
        self.undecodable: list[DecodeError] = []

    # Tasks and the watchdog -------------------------------------------------------

    def attach(self, group: TaskGroup) -> None:
        """Run the client's tasks (handlers, async callbacks, the watchdog) in ``group``."""
        self._group = group
        self._watchdog = self.backend.start_timer(group, self._watchdog_due)
        self.wake_watchdog()

    def stop(self) -> None:
        """The connection is over: every wait fails, and the watchdog stops (the
        owner of the group cancels the client's tasks)."""
        self.close()
        if self._watchdog is not None:
            self._watchdog.cancel()

    def new_signal(self) -> Signal:
        return self.backend.new_signal()

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn()`` concurrently, in the client's task group."""
        assert self._group is not None, "the client is not open"
        self._group.start_soon(fn)

    def monotonic(self) -> float:
        """The event loop's clock (seconds), for time limits."""
        return self.backend.clock()

    def wake_watchdog(self) -> None:
        """A time limit earlier than the one the watchdog waits for was set: it must
        look again (:meth:`watchdog_delay`, then :meth:`watchdog_fired` when it is due)."""
        if self._watchdog is not None:
            self._watchdog.set(self.watchdog_delay())

    def _watchdog_due(self) -> None:
        self.watchdog_fired()
        self.wake_watchdog()

    # Time limits --------------------------------------------------------------------

    def _limit(self, pending: _Pending, timeout: float | None) -> None:
        if timeout is None:
            return
        deadline = self.monotonic() + timeout
        heap = self._deadlines
        heapq.heappush(heap, (deadline, next(self._order), pending))
        if len(heap) > 64 + 2 * len(self._waiters):
            # Finished waits would stay until due (a long limit: for minutes): sweep.
            heap[:] = [entry for entry in heap if not entry[2].done]
            heapq.heapify(heap)
        if deadline < self._armed:
            self._armed = deadline
            self.wake_watchdog()

    def watchdog_delay(self) -> float:
        """Seconds until the earliest time limit of a wait still running (inf: none)."""
        heap = self._deadlines
        while heap and heap[0][2].done:
            heapq.heappop(heap)
        earliest = heap[0][0] if heap else math.inf
        self._armed = earliest
        return max(0.0, earliest - self.monotonic())

    def watchdog_fired(self) -> None:
        """End every wait whose time limit has passed."""
        now = self.monotonic()
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            pending = heapq.heappop(heap)[2]
            if not pending.done:
                pending.expired = True
                pending.signal.set()

    # Plumbing ------------------------------------------------------------------------

    async def send(self, message: A2EMessage) -> None:
        if self.on_message is not None:
            self.on_message("->", message)
        await self._send_raw(message)

    def stamp(self, cls: type[R], **fields: Any) -> R:
        """A message of ``cls`` stamped with the client's clock."""
        return cls(ts=self.clock(), **fields)

    def resolve(self, message: A2EMessage) -> bool:
        """Hand ``message`` to the request waiting for it, if that runs no user code
        (no ``on_message``, not a push, event or request); False otherwise."""
        if self.on_message is not None or type(message) in _DISPATCHED:
            return False
        req_id = getattr(message, "req_id", "")
        pending = self._waiters.get(req_id) if req_id else None
        if pending is None:
            return False
        if pending.response is None:
            pending.response = message
            pending.signal.set()
        return True

    def feed(self, item: A2EMessage | DecodeError) -> None:
        """One message from the bridge (the transport's reader calls this)."""
        if isinstance(item, DecodeError):
            self.undecodable.append(item)
            return
        if self.on_message is not None:
            self.on_message("<-", item)
        if isinstance(item, MCPSamplingRequest | MCPRootsListRequest | ElicitRequest):
            self.spawn(lambda: self._answer(item))
            return
        if isinstance(item, ToolEvent):
            self.events.append(item)
            if len(self.events) > 2 * self.history:
                del self.events[: -self.history]
            self._callback(self.on_event, item)
            return
        if isinstance(item, MCPServerPush):
            self.pushes.append(item)
            if len(self.pushes) > 2 * self.history:
                dropped = len(self.pushes) - self.history
                del self.pushes[:dropped]
                self._pushes_dropped += dropped
            self._wake_push_waiters()
            self._callback(self.on_push, item)
            return
        if isinstance(item, Ping):
            pong = self.stamp(Pong, req_id=item.id)
            self.spawn(lambda: self.send(pong))
            return
        req_id = getattr(item, "req_id", "")
        pending = self._waiters.get(req_id) if req_id else None
        if pending is not None:
            if pending.response is None:
                pending.response = item
                pending.signal.set()
        else:
            logger.debug("unsolicited %s", item.type)

    def _callback(self, callback: Handler | None, item: A2EMessage) -> None:
        if callback is None:
            return
        result = callback(item)
        if inspect.isawaitable(result):
            awaitable = result

            async def run() -> None:
                await awaitable

            self.spawn(run)

    def _wake_push_waiters(self) -> None:
        waiters, self._push_waiters = self._push_waiters, []
        for pending in waiters:
            pending.signal.set()

    def close(self) -> None:
        """The connection ended: every waiting request fails."""
        self.closed = True
        for pending in self._waiters.values():
            pending.signal.set()
        self._wake_push_waiters()

    async def _answer(self, request: A2EMessage) -> None:
        reply: A2EMessage
        try:
            if isinstance(request, MCPSamplingRequest):
                reply = await self._answer_sample(request)
            elif isinstance(request, MCPRootsListRequest):
                roots = await _maybe_await(self.on_roots(request)) if self.on_roots else []
                reply = self.stamp(
                    MCPRootsListResponse,
                    req_id=request.id,
                    server_id=request.server_id,
                    mcp_request_id=request.mcp_request_id,
                    roots=[dict(r) for r in roots],
                )
            else:
                assert isinstance(request, ElicitRequest)
                if self.on_elicit is None:
                    answer: Mapping[str, Any] = {"action": "decline"}
                else:
                    answer = await _maybe_await(self.on_elicit(request))
                reply = self.stamp(
                    ElicitResponse,
                    req_id=request.id,
                    server_id=request.server_id,
                    mcp_request_id=request.mcp_request_id,
                    action=str(answer.get("action", "cancel")),
                    content=dict(answer.get("content") or {}),
                )
        except Exception as exc:
            logger.exception("the handler for %s failed", request.type)
            reply = self.stamp(
                A2EError,
                req_id=request.id,
                code="runtime_error",
                message=f"the agent's handler failed: {exc}",
            )
        await self.send(reply)

    async def _answer_sample(self, request: MCPSamplingRequest) -> MCPSamplingResponse:
        ids = {
            "req_id": request.id,
            "server_id": request.server_id,
            "mcp_request_id": request.mcp_request_id,
        }
        if self.on_sample is None:
            return self.stamp(MCPSamplingResponse, **ids, error="this agent does not sample")
        answer = await _maybe_await(self.on_sample(request))
        if isinstance(answer, MCPSamplingResponse):
            return answer
        return self.stamp(MCPSamplingResponse, **ids, **dict(answer))

    # Requests ------------------------------------------------------------------------

    async def request(
        self,
        message: A2EMessage,
        *,
        timeout: float | None = 60.0,
        expect: type[A2EMessage] | None = None,
    ) -> A2EMessage:
        """Send ``message`` and return the response whose ``req_id`` is its id.

        An ``error`` message raises :class:`A2ERequestError`, a response that
        is not an ``expect`` ``TypeError``; a connection that ends first raises
        ``ConnectionError``, and no answer within ``timeout`` seconds
        :attr:`timeout_error`.
        """
        return await self._request(message, timeout, expect)

    async def _request(
        self,
        message: A2EMessage,
        timeout: float | None,
        expect: type[A2EMessage] | None,
    ) -> A2EMessage:
        if self.closed:
            raise ConnectionError("the bridge closed the connection")
        pending = _Pending(self.new_signal())
        waiters = self._waiters
        waiters[message.id] = pending
        try:
            # Everything is set up before sending: once the message is out the
            # peer may run on this CPU, and little should be left to do here.
            self._limit(pending, timeout)
            await self.send(message)
            await pending.signal.wait()
        finally:
            pending.done = True
            del waiters[message.id]
        return self._outcome(pending, message.type, timeout, expect)

    def _outcome(
        self,
        pending: _Pending,
        type_name: str,
        timeout: float | None,
        expect: type[A2EMessage] | None,
    ) -> A2EMessage:
        """The response a finished wait got, or what it raises."""
        response = pending.response
        if response is None:
            if pending.expired:
                raise self.timeout_error(f"no answer to {type_name} within {timeout:g} s")
            raise ConnectionError("the bridge closed the connection")
        if type(response) is not expect:
            if isinstance(response, A2EError):
                raise A2ERequestError(
                    response.code,
                    response.message,
                    retryable=response.retryable,
                    response=response,
                )
            if expect is not None and not isinstance(response, expect):
                raise TypeError(f"expected {expect.TYPE}, got {response.type}")
        return response

    async def expect(self, message: A2EMessage, cls: type[R], *, timeout: float | None = 60.0) -> R:
        response = await self.request(message, timeout=timeout, expect=cls)
        assert isinstance(response, cls)
        return response

    @staticmethod
    def check(response: R) -> R:
        """Raise :class:`A2ERequestError` if ``response`` reports a failure
        (``error_code``, the bridge's extension field on typed responses)."""
        code = response.extra.get("error_code")
        if isinstance(code, str) and code:
            message = getattr(response, "error", "") or response.extra.get("error", "")
            raise A2ERequestError(
                code,
                str(message),
                retryable=bool(response.extra.get("retryable")),
                response=response,
            )
        return response

    # Conveniences --------------------------------------------------------------------

    async def ping(self) -> Pong:
        return await self.expect(self.stamp(Ping), Pong)

    async def register(self, config: Mapping[str, Any], *, timeout: float = 60.0) -> dict[str, Any]:
        """Register a server; its MCPServerInfo (raises when registration fails)."""
        response = await self.expect(
            self.stamp(MCPServerRegisterRequest, config=dict(config)),
            MCPServerRegisterResponse,
            timeout=timeout,
        )
        return self.check(response).server

    async def unregister(self, server_id: str) -> MCPServerUnregisterResponse:
        response = await self.expect(
            self.stamp(MCPServerUnregisterRequest, server_id=server_id),
            MCPServerUnregisterResponse,
        )
        return self.check(response)

    async def list_servers(self, status_filter: str = "") -> list[dict[str, Any]]:
        response = await self.expect(
            self.stamp(MCPServerListRequest, status_filter=status_filter), MCPServerListResponse
        )
        return response.servers

    async def list_tools(self, **filters: Any) -> list[dict[str, Any]]:
        response = await self.expect(self.stamp(ToolListRequest, **filters), ToolListResponse)
        return response.tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: int = 0,
        streaming: bool = False,
    ) -> dict[str, Any]:
        """The ToolResult (``success``, ``data``, ``error``, ``error_code``, ``duration_ms``).

        ``timeout`` (seconds) shortens the server's own time limit; 0: the server's.

        ``streaming``: the agent wants the call's progress as ``tool/event``
        messages (``on_event``, :attr:`events`).
        """
        hand_over = self.hand_over_call
        if (
            hand_over is not None
            and self.on_message is None
            and type(name) is str
            and type(timeout) is int
            and type(streaming) is bool
            and (copied := own_arguments(arguments)) is not None
        ):
            # To a bridge in this process, the hot path: the call goes over as its
            # fields, of their kinds and copied for the bridge alone, and the answer
            # comes back as the bare ToolResult; neither message is built (the two
            # were half of the bridge's own work).  Anything unusual takes the
            # general path below.  No second time limit either: that bridge
            # enforces ``timeout`` itself and answers every call (the 30 s more
            # are for one behind a pipe).
            if self.closed:
                raise ConnectionError("the bridge closed the connection")
            req_id = new_message_id()
            pending = _ToolWait(self.new_signal())
            waiters = self._waiters
            waiters[req_id] = pending
            try:
                hand_over(req_id, name, copied, timeout, streaming)
                await pending.signal.wait()
            finally:
                del waiters[req_id]
            if pending.result is not None:
                return pending.result
            response = self._outcome(pending, ToolCallRequest.TYPE, None, ToolCallResponse)
        else:
            message = ToolCallRequest(
                ts=self.clock(),
                tool_name=name,
                arguments=dict(arguments or {}),
                timeout=timeout,
                streaming=streaming,
            )
            # The bridge answers every call within its limit (the server's when the
            # call has none, which only the bridge knows): 30 s more for the pipe.
            wait = timeout + 30 if timeout > 0 else None
            response = await self.request(message, timeout=wait, expect=ToolCallResponse)
        assert isinstance(response, ToolCallResponse)
        return response.data

    async def _pages(
        self,
        request: type[MCPResourceListRequest | MCPPromptListRequest],
        server_id: str,
        all_pages: bool,
    ) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = ""
        while True:
            response = await self.request(
                self.stamp(request, server_id=server_id, cursor=cursor),
                expect=MCPResourceListResponse
                if request is MCPResourceListRequest
                else MCPPromptListResponse,
            )
            assert isinstance(response, MCPResourceListResponse | MCPPromptListResponse)
            items.extend(
                response.resources
                if isinstance(response, MCPResourceListResponse)
                else response.prompts
            )
            cursor = response.next_cursor
            if not cursor or not all_pages:
                return items

    async def list_resources(
        self, server_id: str = "", *, all_pages: bool = True
    ) -> list[dict[str, Any]]:
        return await self._pages(MCPResourceListRequest, server_id, all_pages)

    async def read_resource(self, uri: str, server_id: str = "") -> MCPResourceReadResponse:
        response = await self.expect(
            self.stamp(MCPResourceReadRequest, uri=uri, server_id=server_id),
            MCPResourceReadResponse,
        )
        return self.check(response)

    async def subscribe(self, uri: str, server_id: str = "") -> MCPResourceSubscribeResponse:
        response = await self.expect(
            self.stamp(MCPResourceSubscribeRequest, uri=uri, server_id=server_id),
            MCPResourceSubscribeResponse,
        )
        return self.check(response)

    async def list_prompts(self, server_id: str = "") -> list[dict[str, Any]]:
        return await self._pages(MCPPromptListRequest, server_id, True)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None, server_id: str = ""
    ) -> MCPPromptGetResponse:
        response = await self.expect(
            self.stamp(
                MCPPromptGetRequest,
                name=name,
                arguments=dict(arguments or {}),
                server_id=server_id,
            ),
            MCPPromptGetResponse,
        )
        return self.check(response)

    async def set_roots(self, roots: Sequence[Mapping[str, Any]]) -> None:
        """Tell the bridge the roots to offer servers from now on (an unsolicited
        ``mcp/root/list/resp``)."""
        await self.send(self.stamp(MCPRootsListResponse, roots=[dict(r) for r in roots]))

    async def wait_for_push(
        self, predicate: Callable[[MCPServerPush], bool], *, timeout: float = 10.0
    ) -> MCPServerPush:
        """The first push (already received or to come) that ``predicate`` accepts."""
        pending = _Pending(self.new_signal())
        self._limit(pending, timeout)
        try:
            seen = self._pushes_dropped  # counted over every push ever received
            while True:
                for push in self.pushes[max(0, seen - self._pushes_dropped) :]:
                    if predicate(push):
                        return push
                seen = self._pushes_dropped + len(self.pushes)
                if pending.expired:
                    raise self.timeout_error(f"no matching push within {timeout:g} s")
                if self.closed:
                    raise ConnectionError("the bridge closed the connection")
                self._push_waiters.append(pending)
                await pending.signal.wait()
                pending.signal = self.new_signal()
        finally:
            pending.done = True


class AgentInbox:
    """What an in-process bridge hands its agent, in order.

    :meth:`deliver` is called by the bridge, in the bridge's task: a response
    to a waiting request is handed over at once when nothing is queued ahead
    of it (no user code runs there); everything else waits for :meth:`run`,
    the agent's own task, which feeds the client as a stream transport's
    reader would (so callbacks and handlers run on the agent's side).
    """

    def __init__(self, client: A2EClientBase) -> None:
        self._client = client
        self._queue: deque[A2EMessage] = deque()
        self._signal = client.new_signal()

    def deliver(self, message: A2EMessage) -> None:
        if not self._queue and self._client.resolve(message):
            return
        self._queue.append(message)
        self._signal.set()

    def answer(self, req_id: str, result: dict[str, Any]) -> bool:
        """A tool call's ToolResult, handed without the message to the
        :meth:`~A2EClientBase.call_tool` waiting for it, if that call went over by
        its fields, nothing is queued ahead of it, and no ``on_message`` wants to
        see the message; False: it must go as a message (:meth:`deliver`)."""
        client = self._client
        pending = client._waiters.get(req_id)
        if type(pending) is not _ToolWait or self._queue or client.on_message is not None:
            return False
        if pending.response is None and pending.result is None:
            pending.result = result
            pending.signal.set()
        return True

    async def run(self) -> None:
        """Feed the client until cancelled."""
        queue = self._queue
        while True:
            await self._signal.wait()
            self._signal = self._client.new_signal()
            while queue:
                self._client.feed(queue.popleft())
