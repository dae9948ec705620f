"""Tool calls, the bridge's hot path: a ``tool/call/req`` (or the same handed over
as its fields) is routed by its namespaced name to ``tools/call`` on the right
server, and the outcome comes back as a ToolResult; progress becomes
``tool/event`` messages.

A streaming call of a task-capable tool (and any call of a task-only one) runs as
a task upstream.  On 2025-11-25: ``params.task``, then ``tasks/result`` for the
outcome, the server's ``notifications/tasks/status`` as status changes.  On
2026-07-28 the call declares the tasks extension in its own ``_meta`` (the
bridge's session does not, so other calls stay plain); the task is polled with
``tasks/get`` at the server's pace, its input requests asked of the agent and
answered with ``tasks/update``.  Status changes reach the agent as ``tool/event``
messages of kind ``status``; a call that ends without its outcome (its time
limit, the agent gone) cancels the task (``tasks/cancel``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sansio_mcp import ErrorCode, MCPError, ProgressReceived, RequestTimeout
from sansio_mcp.capabilities import has_capability
from sansio_mcp.tasks import (
    CORE_TASKS_REVISION,
    TERMINAL_STATUSES,
    declares_tasks,
    declaring_tasks,
    poll_seconds,
    wants_tasks_declared,
)

from ._actions import ToolAnswer
from ._failures import Failure, Refused, failed_tool_result
from ._host_state import Call, HostState, ServerLink, ServerRecord
from ._link_states import LinkState
from ._messages import ToolCallRequest, ToolEvent
from ._models import MCPErrorCode
from ._translate import split_namespaced, tool_result

__all__ = ["ToolCall", "ToolCalls", "cancel_task", "AskAgent"]

#: Asks the agent what a server asked (``AgentAsks.ask``): link, method, params,
#: the request's name for the agent, then what to do with the answer or the failure.
AskAgent = Callable[
    [
        ServerLink,
        str,
        dict[str, Any],
        str,
        Callable[[dict[str, Any]], None],
        Callable[[MCPError], None],
    ],
    None,
]

_TERMINAL = frozenset(s.value for s in TERMINAL_STATUSES)


def _runs_as_task(link: ServerLink, tool: dict[str, Any], streaming: bool) -> bool:
    """Whether to ask the server to run this call as a task.  On 2025-11-25 (a server
    that runs tool calls as tasks): a streaming call of a task-capable tool, or any call
    of a task-only one (it cannot run otherwise).  On 2026-07-28 tools do not say, so a
    streaming call declares the extension to a server offering it and the server decides
    (a task-only tool's -32021 to another call has it retried declaring the extension)."""
    session = link.session
    if session.is_stateless:
        return streaming and declares_tasks(session.peer_capabilities)
    if session.protocol_version != CORE_TASKS_REVISION or not has_capability(
        session.peer_capabilities, ("tasks", "requests", "tools", "call")
    ):
        return False
    execution = tool.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support == "required" or (streaming and support == "optional")


def _task_params(link: ServerLink, params: dict[str, Any]) -> dict[str, Any]:
    """A task request's params: on 2026-07-28 each declares the extension itself."""
    return declaring_tasks(params) if link.session.is_stateless else params


def _unfollow(state: HostState, link: ServerLink, task_id: str) -> None:
    state.followed_tasks.pop((link.conn, task_id), None)
    state.task_polls.pop((link.conn, task_id), None)


def cancel_task(state: HostState, link: ServerLink, task_id: str) -> None:
    """``tasks/cancel`` for a task nobody waits for any more (its answer is not needed)."""
    _unfollow(state, link, task_id)
    params = _task_params(link, {"taskId": task_id})
    state.call(link, "tasks/cancel", params, lambda _: None, lambda _: None)


def _ms(seconds: float) -> float:
    """A duration in milliseconds, to the microsecond (round(x, 3) without its
    decimal rounding, which costs more than the rest of a ToolResult)."""
    return round(seconds * 1_000_000) / 1000


class ToolCall(Call):
    """One tool call from routing to its answer.  (One object per call, not three
    closures: this is the bridge's hot path.)"""

    __slots__ = (
        "_answers",
        "_ask",
        "_asked",
        "_retry",
        "_state",
        "limit",
        "req_id",
        "seq",
        "server",
        "started",
        "streaming",
        "task_id",
        "task_message",
        "task_status",
        "tool_name",
    )

    for_agent = True

    def __init__(
        self, state: HostState, req_id: str, tool_name: str, streaming: bool, ask: AskAgent
    ) -> None:
        self._state = state
        self._ask = ask
        #: A 2026-07-28 call's params, while it may be retried declaring the tasks extension.
        self._retry: dict[str, Any] | None = None
        self.req_id = req_id
        self.tool_name = tool_name
        # Progress only for an agent that wants events (A2E's own flag for that):
        # a progress token costs the server and the bridge on every call.
        self.wants_progress = self.streaming = streaming
        #: The upstream task the call runs as, once the server made it.
        self.task_id: str | None = None
        self.task_status: str | None = None
        self.task_message: Any = None
        self.server: ServerRecord | None = None
        #: The time limit the call got (its own, or its server's).
        self.limit: float | None = None
        self.started = state.now
        self.seq = 0

    def start(self, arguments: dict[str, Any], timeout: int) -> None:
        """Route the call and send ``tools/call``; raises :class:`Refused`."""
        state = self._state
        name = self.tool_name
        parsed = split_namespaced(name)
        server = state.servers.get(parsed[0]) if parsed else None
        if parsed is None or server is None:
            raise Refused(
                Failure(
                    MCPErrorCode.MCP_TOOL_NOT_FOUND,
                    f"no MCP server offers a tool named {name!r}",
                    {"tool_name": name},
                )
            )
        tool_name = parsed[1]
        if server.given_up:
            raise Refused(state.unavailable(server))  # (its tools left the listing)
        if tool_name not in server.tools:
            allowed = server.allows_tool(tool_name)
            raise Refused(
                Failure(
                    MCPErrorCode.MCP_TOOL_NOT_FOUND,
                    f"server {server.server_id!r} has no tool {tool_name!r}"
                    + ("" if allowed else " (not on its tool_allow_list)"),
                    {"server_id": server.server_id, "tool_name": name},
                )
            )
        link = server.link
        if link is None or link.state is not LinkState.READY:
            raise Refused(state.unavailable(server))
        self.server = server
        # The server's timeout, which the call's own (a positive one) can only shorten.
        limit = float(server.config.timeout)
        if timeout > 0:
            limit = min(limit, timeout)  # (compared as numbers: an int may exceed any float)
        self.limit = limit
        # The arguments are the host's own (see receive_agent_message, receive_tool_call).
        params: dict[str, Any] = {"name": tool_name, "arguments": arguments}
        if _runs_as_task(link, server.tools[tool_name], self.streaming):
            if link.session.is_stateless:
                params = declaring_tasks(params)
            else:
                params["task"] = {}
        elif link.session.is_stateless and declares_tasks(link.session.peer_capabilities):
            self._retry = params
        state.start_call(link, "tools/call", params, self, limit)

    def ok(self, result: dict[str, Any]) -> None:
        if self.task_id is None and "content" not in result:
            if result.get("resultType") == "task":
                self._follow_stateless(result)
                return
            if isinstance(result.get("task"), dict):
                self._follow(result["task"])
                return
        state = self._state
        if self.task_id is not None and self.server is not None and self.server.link is not None:
            _unfollow(state, self.server.link, self.task_id)
        now = state.now
        data = tool_result(self.tool_name, result, _ms(now - self.started))
        state.queued.append(ToolAnswer(self.req_id, data, now))

    def err(self, error: MCPError) -> None:
        link = self.server.link if self.server is not None else None
        params, self._retry = self._retry, None
        if params is not None and link is not None and wants_tasks_declared(error):
            # A task-only tool on 2026-07-28: the same call again, declaring the extension.
            left = None if self.limit is None else self.limit - (self._state.now - self.started)
            if left is None or left > 0:
                self._state.start_call(link, "tools/call", declaring_tasks(params), self, left)
                return
        if self.task_id is not None and link is not None:
            if self.task_status not in _TERMINAL:
                cancel_task(self._state, link, self.task_id)  # nobody waits for it now
            _unfollow(self._state, link, self.task_id)
        self.fail(self._state.classify(error, "tools/call", self.server, timeout=self.limit))

    def _follow(self, task: dict[str, Any]) -> None:
        """The server made a task: tell the agent, and ask for its outcome."""
        state = self._state
        assert self.server is not None and self.server.link is not None
        link = self.server.link
        self.task_id = str(task.get("taskId"))
        state.followed_tasks[(link.conn, self.task_id)] = self
        self.status(task)
        self.wants_progress = False  # tasks/result reports no progress
        left = None if self.limit is None else max(self.limit - (state.now - self.started), 0.001)
        state.start_call(link, "tasks/result", {"taskId": self.task_id}, self, left)

    # 2026-07-28 tasks: polled ---------------------------------------------------------

    def _follow_stateless(self, created: dict[str, Any]) -> None:
        """The server made a task (2026-07-28): tell the agent, and poll it."""
        assert self.server is not None and self.server.link is not None
        link = self.server.link
        task_id = created.get("taskId")
        if not isinstance(task_id, str) or not isinstance(created.get("status"), str):
            self.err(MCPError(ErrorCode.INVALID_REQUEST, "tools/call: a task without its id"))
            return
        self.task_id = task_id
        self._asked: set[str] = set()
        self._answers: dict[str, Any] = {}
        self._state.followed_tasks[(link.conn, task_id)] = self
        self.wants_progress = False  # the task's status messages say how it goes
        self._polled(created)

    def _following(self) -> ServerLink | None:
        """The link of the call's 2026-07-28 task while the call still waits for it."""
        link = self.server.link if self.server is not None else None
        if link is None or (link.conn, self.task_id) not in self._state.followed_tasks:
            return None
        return link

    def _poll_at(self, due: float) -> None:
        link = self._following()
        if link is None or self.task_id is None:
            return
        if self.limit is not None:
            due = min(due, self.started + self.limit)  # time out on time
        self._state.task_polls[(link.conn, self.task_id)] = due
        self._state.added(due)

    def poll(self) -> None:
        """``tasks/get``, when its time came (the host's timer)."""
        link = self._following()
        if link is None or self.task_id is None:
            return
        state = self._state
        state.task_polls.pop((link.conn, self.task_id), None)
        left = None if self.limit is None else self.limit - (state.now - self.started)
        if left is not None and left <= 0:
            self.err(RequestTimeout(message=f"tools/call timed out after {self.limit:g} s"))
            return
        params = _task_params(link, {"taskId": self.task_id})
        state.call(link, "tasks/get", params, self._polled, self.err, timeout=left, for_agent=True)

    def _polled(self, task: dict[str, Any]) -> None:
        """A task's state (created or polled): its outcome, or what it waits for."""
        if self._following() is None:
            return
        status = task.get("status")
        self.status(task)
        if status == "completed":
            result = task.get("result")
            if isinstance(result, dict):
                self.ok(result)
            else:
                self.err(MCPError(ErrorCode.INVALID_REQUEST, "a completed task without a result"))
        elif status == "failed":
            error = task.get("error")
            valid = isinstance(error, dict) and isinstance(error.get("code"), int)
            self.err(
                MCPError.from_dict(error)
                if valid and isinstance(error, dict) and isinstance(error.get("message"), str)
                else MCPError(ErrorCode.INTERNAL_ERROR, f"task {self.task_id} failed")
            )
        elif status == "cancelled":
            self.err(MCPError(ErrorCode.INTERNAL_ERROR, f"task {self.task_id} was cancelled"))
        elif status == "input_required":
            self._answer_inputs(task)
        else:
            self._poll_at(self._state.now + poll_seconds(task))

    def _answer_inputs(self, task: dict[str, Any]) -> None:
        """Ask the agent what the task waits on (each request once), then ``tasks/update``."""
        requests = task.get("inputRequests")
        if not isinstance(requests, dict):
            self._poll_at(self._state.now)  # a bare Task names no requests: fetch them
            return
        fresh = {k: v for k, v in requests.items() if k not in self._asked}
        if not fresh:
            self._poll_at(self._state.now + poll_seconds(task))
            return
        link = self._following()
        assert link is not None and self.task_id is not None
        self._asked.update(fresh)
        waiting = set(fresh)

        def answer(key: str) -> Callable[[dict[str, Any]], None]:
            def deliver(result: dict[str, Any]) -> None:
                if self._following() is None or key not in waiting:
                    return
                waiting.discard(key)
                self._answers[key] = result
                if not waiting:
                    self._update(link)

            return deliver

        for key, request in fresh.items():
            method = request.get("method") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if not isinstance(method, str):
                problem = f"input request {key!r} has no method"
                self.err(MCPError(ErrorCode.INVALID_REQUEST, problem))
                return
            self._ask(
                link,
                method,
                dict(params) if isinstance(params, dict) else {},
                f"{self.task_id}:{key}",
                answer(key),
                self._input_failed,
            )

    def _input_failed(self, error: MCPError) -> None:
        if self._following() is not None:
            self.err(error)

    def _update(self, link: ServerLink) -> None:
        answers, self._answers = self._answers, {}
        params = _task_params(link, {"taskId": self.task_id, "inputResponses": answers})
        state = self._state
        state.call(
            link,
            "tasks/update",
            params,
            lambda _: self._poll_at(state.now),
            self._input_failed,
            for_agent=True,
        )

    def status(self, task: dict[str, Any]) -> None:
        """A status of the call's upstream task: a ``tool/event`` for a streaming call."""
        status, message = task.get("status"), task.get("statusMessage")
        if not isinstance(status, str):
            return
        changed = status != self.task_status or message != self.task_message
        self.task_status, self.task_message = status, message
        if not changed or not self.streaming or self.server is None:
            return
        self.seq += 1
        data: dict[str, Any] = {
            "status": status,
            "task_id": self.task_id,
            "server_id": self.server.server_id,
        }
        if isinstance(message, str):
            data["message"] = message
        state = self._state
        state.send(
            ToolEvent(
                **state.envelope(), kind="status", req_id=self.req_id, data=data, seq=self.seq
            )
        )

    def fail(self, failure: Failure) -> None:
        """Answer with a failed ToolResult (the code in ``error_code``)."""
        state = self._state
        now = state.now
        result = failed_tool_result(self.tool_name, failure, _ms(now - self.started))
        state.queued.append(ToolAnswer(self.req_id, result, now))

    def progress(self, event: ProgressReceived) -> None:
        self.seq += 1
        assert self.server is not None  # progress only comes for a call that was sent
        data: dict[str, Any] = {"progress": event.progress, "server_id": self.server.server_id}
        if event.total is not None:
            data["total"] = event.total
        if event.message is not None:
            data["message"] = event.message
        state = self._state
        state.send(
            ToolEvent(
                **state.envelope(), kind="progress", req_id=self.req_id, data=data, seq=self.seq
            )
        )


class ToolCalls:
    """Starts tool calls, from a message or from its fields."""

    def __init__(self, state: HostState, ask: AskAgent) -> None:
        self._state = state
        self._ask = ask
        #: A 2026-07-28 call's params, while it may be retried declaring the tasks extension.
        self._retry: dict[str, Any] | None = None

    def on_tool_call(self, request: ToolCallRequest) -> None:
        # The request is the host's own copy (see receive_agent_message).
        call = ToolCall(self._state, request.id, request.tool_name, request.streaming, self._ask)
        call.start(request.arguments, request.timeout)

    def poll_due(self, now: float) -> None:
        """Poll the 2026-07-28 tasks whose time came."""
        state = self._state
        for key, due in list(state.task_polls.items()):
            call = state.followed_tasks.get(key)
            if call is None:
                del state.task_polls[key]
            elif due <= now:
                call.poll()

    def call_by_fields(
        self,
        req_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        timeout: int,
        streaming: bool,
    ) -> None:
        """A ``tool/call/req`` handed over as its fields: answered as the message
        would be, failures and bugs included."""
        call = ToolCall(self._state, req_id, tool_name, streaming, self._ask)
        try:
            call.start(arguments, timeout)
        except Refused as refused:
            call.fail(refused.failure)
        except Exception as exc:  # a bug here must not take the bridge down
            call.fail(self._state.bug(ToolCallRequest.TYPE, exc))
