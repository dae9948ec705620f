"""Tool calls, the bridge's hot path: a ``tool/call/req`` (or the same handed over
as its fields) is routed by its namespaced name to ``tools/call`` on the right
server, and the outcome comes back as a ToolResult; progress becomes
``tool/event`` messages.

A streaming call of a task-capable tool on a 2025-11-25 server (and any call of a
task-only one there) runs as a task upstream: ``params.task``, then
``tasks/result`` for the outcome; the server's ``notifications/tasks/status``
reach the agent as ``tool/event`` messages of kind ``status``, and a call that
ends without its outcome (its time limit, the agent gone) cancels the task."""

from __future__ import annotations

from typing import Any

from .._errors import MCPError
from .._events import ProgressReceived
from .._gates import has_capability
from .._tasks import LEGACY_TASKS_REVISION, TERMINAL_STATUSES
from ._actions import ToolAnswer
from ._failures import Failure, Refused, failed_tool_result
from ._host_state import Call, HostState, ServerLink, ServerRecord
from ._link_states import LinkState
from ._messages import ToolCallRequest, ToolEvent
from ._models import MCPErrorCode
from ._translate import split_namespaced, tool_result

__all__ = ["ToolCall", "ToolCalls", "cancel_task"]

_TERMINAL = frozenset(s.value for s in TERMINAL_STATUSES)


def _runs_as_task(link: ServerLink, tool: dict[str, Any], streaming: bool) -> bool:
    """Whether to ask a 2025-11-25 server to run this call as a task: a streaming call of
    a task-capable tool, or any call of a task-only one (it cannot run otherwise)."""
    session = link.session
    if session.protocol_version != LEGACY_TASKS_REVISION:
        return False
    if not has_capability(session.peer_capabilities, ("tasks", "requests", "tools", "call")):
        return False
    execution = tool.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support == "required" or (streaming and support == "optional")


def cancel_task(state: HostState, link: ServerLink, task_id: str) -> None:
    """``tasks/cancel`` for a task nobody waits for any more (its answer is not needed)."""
    state.followed_tasks.pop((link.conn, task_id), None)
    state.call(link, "tasks/cancel", {"taskId": task_id}, lambda _: None, lambda _: None)


def _ms(seconds: float) -> float:
    """A duration in milliseconds, to the microsecond (round(x, 3) without its
    decimal rounding, which costs more than the rest of a ToolResult)."""
    return round(seconds * 1_000_000) / 1000


class ToolCall(Call):
    """One tool call from routing to its answer.  (One object per call, not three
    closures: this is the bridge's hot path.)"""

    __slots__ = (
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

    def __init__(self, state: HostState, req_id: str, tool_name: str, streaming: bool) -> None:
        self._state = state
        self.req_id = req_id
        self.tool_name = tool_name
        # Progress only for an agent that wants events (A2E's own flag for that):
        # a progress token costs the server and the bridge on every call.
        self.wants_progress = self.streaming = streaming
        #: The upstream task the call runs as (2025-11-25), once the server made it.
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
            params["task"] = {}
        state.start_call(link, "tools/call", params, self, limit)

    def ok(self, result: dict[str, Any]) -> None:
        if (
            self.task_id is None
            and "content" not in result
            and isinstance(result.get("task"), dict)
        ):
            self._follow(result["task"])
            return
        state = self._state
        if self.task_id is not None and self.server is not None and self.server.link is not None:
            state.followed_tasks.pop((self.server.link.conn, self.task_id), None)
        now = state.now
        data = tool_result(self.tool_name, result, _ms(now - self.started))
        state.queued.append(ToolAnswer(self.req_id, data, now))

    def err(self, error: MCPError) -> None:
        link = self.server.link if self.server is not None else None
        if self.task_id is not None and link is not None:
            if self.task_status not in _TERMINAL:
                cancel_task(self._state, link, self.task_id)  # nobody waits for it now
            self._state.followed_tasks.pop((link.conn, self.task_id), None)
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

    def __init__(self, state: HostState) -> None:
        self._state = state

    def on_tool_call(self, request: ToolCallRequest) -> None:
        # The request is the host's own copy (see receive_agent_message).
        call = ToolCall(self._state, request.id, request.tool_name, request.streaming)
        call.start(request.arguments, request.timeout)

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
        call = ToolCall(self._state, req_id, tool_name, streaming)
        try:
            call.start(arguments, timeout)
        except Refused as refused:
            call.fail(refused.failure)
        except Exception as exc:  # a bug here must not take the bridge down
            call.fail(self._state.bug(ToolCallRequest.TYPE, exc))
