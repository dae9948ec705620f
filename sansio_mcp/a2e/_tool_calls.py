"""Tool calls, the bridge's hot path: a ``tool/call/req`` (or the same handed over
as its fields) is routed by its namespaced name to ``tools/call`` on the right
server, and the outcome comes back as a ToolResult; progress becomes
``tool/event`` messages."""

from __future__ import annotations

from typing import Any

from .._errors import MCPError
from .._events import ProgressReceived
from ._actions import ToolAnswer
from ._failures import Failure, Refused, failed_tool_result
from ._host_state import Call, HostState, ServerRecord
from ._link_states import LinkState
from ._messages import ToolCallRequest, ToolEvent
from ._models import MCPErrorCode
from ._translate import split_namespaced, tool_result

__all__ = ["ToolCall", "ToolCalls"]


def _ms(seconds: float) -> float:
    """A duration in milliseconds, to the microsecond (round(x, 3) without its
    decimal rounding, which costs more than the rest of a ToolResult)."""
    return round(seconds * 1_000_000) / 1000


class ToolCall(Call):
    """One tool call from routing to its answer.  (One object per call, not three
    closures: this is the bridge's hot path.)"""

    __slots__ = ("_state", "limit", "req_id", "seq", "server", "started", "tool_name")

    for_agent = True

    def __init__(self, state: HostState, req_id: str, tool_name: str, streaming: bool) -> None:
        self._state = state
        self.req_id = req_id
        self.tool_name = tool_name
        # Progress only for an agent that wants events (A2E's own flag for that):
        # a progress token costs the server and the bridge on every call.
        self.wants_progress = streaming
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
        state.start_call(
            link, "tools/call", {"name": tool_name, "arguments": arguments}, self, limit
        )

    def ok(self, result: dict[str, Any]) -> None:
        state = self._state
        now = state.now
        data = tool_result(self.tool_name, result, _ms(now - self.started))
        state.queued.append(ToolAnswer(self.req_id, data, now))

    def err(self, error: MCPError) -> None:
        self.fail(self._state.classify(error, "tools/call", self.server, timeout=self.limit))

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
