"""What servers ask of the agent: sampling, roots and elicitation, as MCP
requests of a handshake session or as the input requests of a 2026-07-28
server's multi round-trip request; and the agent's answers, refusals, and
silence (a deadline, or the agent going away)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sansio_mcp import (
    ErrorCode,
    InputRequired,
    LocalProtocolError,
    MCPError,
    RequestId,
    RequestReceived,
    RequestTimeout,
    SessionState,
)

from ._failures import Failure, Refused, refusal
from ._fields import FieldProblem, copy_json
from ._host_state import AgentWait, HostState, ServerLink
from ._messages import (
    A2EError,
    A2EMessage,
    ElicitRequest,
    ElicitResponse,
    MCPRootsListRequest,
    MCPRootsListResponse,
    MCPSamplingResponse,
)
from ._models import A2EErrorCode, MCPRoot
from ._translate import (
    roots_problem,
    roots_result,
    sampling_request_from_mcp,
    sampling_result_from_a2e,
)

__all__ = ["AgentAsks"]


class AgentAsks:
    """Asks the agent on behalf of servers, and routes its answers back.

    ``pump`` hands a link's session events to the host (a failed input round
    fails the request it belongs to).
    """

    def __init__(self, state: HostState, *, pump: Callable[[ServerLink], None]) -> None:
        self._state = state
        self._pump = pump

    # Servers ask -------------------------------------------------------------------------

    def on_server_request(self, link: ServerLink, event: RequestReceived) -> None:
        session = link.session
        request_id = event.request_id
        state = self._state

        def deliver(result: dict[str, Any]) -> None:
            if session.state is not SessionState.CLOSED and request_id in session.open_requests:
                try:
                    session.respond(request_id, result)
                except LocalProtocolError as exc:
                    session.respond_error(request_id, ErrorCode.INTERNAL_ERROR, str(exc))
                state.touch(link)

        def fail(error: MCPError) -> None:
            if session.state is not SessionState.CLOSED and request_id in session.open_requests:
                session.respond_error(request_id, error)
                state.touch(link)

        self.ask(link, event.method, copy_json(event.params), str(request_id), deliver, fail)

    def ask(
        self,
        link: ServerLink,
        method: str,
        params: dict[str, Any],
        mcp_request_id: str,
        deliver: Callable[[dict[str, Any]], None],
        fail: Callable[[MCPError], None],
    ) -> None:
        """Answer a server's sampling / roots / elicitation request, asking the
        agent where needed."""
        state = self._state
        server = link.server
        if method == "roots/list" and state.roots is not None:
            deliver(roots_result(state.roots))
            return
        if state.agent_closed:
            fail(refusal(method, "no agent is connected to the bridge"))
            return
        env = state.envelope()
        kind: str
        message: A2EMessage
        if method == "sampling/createMessage":
            kind = "sample"
            message = sampling_request_from_mcp(
                params, server_id=server.server_id, mcp_request_id=mcp_request_id, **env
            )
        elif method == "roots/list":
            kind = "roots"
            message = MCPRootsListRequest(
                **env, server_id=server.server_id, mcp_request_id=mcp_request_id
            )
        elif method == "elicitation/create" and state.elicitation:
            kind = "elicit"
            message = ElicitRequest(
                **env, server_id=server.server_id, mcp_request_id=mcp_request_id, params=params
            )
        else:
            fail(MCPError(ErrorCode.METHOD_NOT_FOUND, f"the bridge does not serve {method!r}"))
            return
        wait = AgentWait(
            kind=kind,
            server_id=server.server_id,
            link=link,
            mcp_request_id=mcp_request_id,
            deliver=deliver,
            fail=fail,
            deadline=state.now + float(server.config.timeout),
        )
        state.waits[message.id] = wait
        state.added(wait.deadline)
        state.send(message)

    def on_input_required(self, link: ServerLink, event: InputRequired) -> None:
        """A 2026-07-28 server needs input to finish a request (MRTR): the same
        answers as for server-to-client requests, then the retry."""
        state = self._state
        session = link.session
        origin = event.request_id
        pending = dict(event.input_requests)
        responses: dict[str, Any] = {}
        round_state = {"failed": False}

        def finish() -> None:
            if round_state["failed"] or pending or origin not in session.pending_requests:
                return
            try:
                session.provide_input(origin, responses)
            except LocalProtocolError:
                return
            state.touch(link)

        def give_up(error: MCPError) -> None:
            if round_state["failed"]:
                return
            round_state["failed"] = True
            for key, wait in list(state.waits.items()):
                if wait.link is link and wait.mcp_request_id.startswith(f"{origin}:"):
                    del state.waits[key]
            if origin in session.pending_requests and session.state is not SessionState.CLOSED:
                session.fail_input(origin, error)
                self._pump(link)

        if not pending:
            finish()
            return
        for key, request in list(pending.items()):
            method = request.get("method") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if not isinstance(method, str):
                give_up(MCPError(ErrorCode.INVALID_REQUEST, f"input request {key!r} has no method"))
                return

            def deliver(result: dict[str, Any], key: str = key) -> None:
                pending.pop(key, None)
                responses[key] = result
                finish()

            self.ask(
                link,
                method,
                copy_json(params) if isinstance(params, dict) else {},
                f"{origin}:{key}",
                deliver,
                give_up,
            )
            if round_state["failed"]:
                return

    def server_cancelled(self, link: ServerLink, request_id: RequestId) -> None:
        """The server cancelled its request: the agent's answer is not wanted."""
        waits = self._state.waits
        for key, wait in list(waits.items()):
            if wait.link is link and wait.mcp_request_id == str(request_id):
                del waits[key]

    # The agent answers -------------------------------------------------------------------

    def _take_wait(
        self, response: A2EMessage, kind: str, server_id: str, mcp_request_id: str
    ) -> AgentWait:
        waits = self._state.waits
        req_id = getattr(response, "req_id", "")
        wait = waits.get(req_id)
        # Matched by server and MCP request id only when it names no req_id: a new
        # session of the server numbers its requests from 0 again, so a stale
        # answer's req_id must not find a newer request by those.
        if wait is None and not req_id and (server_id or mcp_request_id):
            wait = next(
                (
                    w
                    for w in waits.values()
                    if w.kind == kind
                    and w.server_id == server_id
                    and w.mcp_request_id == mcp_request_id
                ),
                None,
            )
        if wait is None or wait.kind != kind:
            raise Refused(
                Failure(
                    A2EErrorCode.INVALID_MESSAGE,
                    f"{response.type} answers no pending request (unknown or expired)",
                    {"req_id": getattr(response, "req_id", "")},
                )
            )
        for key, value in list(waits.items()):
            if value is wait:
                del waits[key]
        return wait

    def on_sample_response(self, response: MCPSamplingResponse) -> None:
        wait = self._take_wait(response, "sample", response.server_id, response.mcp_request_id)
        touch = self._state.touch
        if response.error:
            wait.fail(refusal("sampling", f"the agent refused to sample: {response.error}"))
        else:
            try:
                result = sampling_result_from_a2e(response)
            except ValueError as exc:
                wait.fail(
                    MCPError(ErrorCode.INTERNAL_ERROR, f"the agent's answer was invalid: {exc}")
                )
                touch(wait.link)
                raise Refused(
                    Failure(A2EErrorCode.SCHEMA_VIOLATION, f"invalid mcp/sample/resp: {exc}")
                ) from None
            wait.deliver(result)
        touch(wait.link)

    def on_roots_response(self, response: MCPRootsListResponse) -> None:
        state = self._state
        try:
            roots = [MCPRoot.from_dict(r, prefix="roots.") for r in response.roots]
        except FieldProblem as problem:
            raise Refused(
                Failure(A2EErrorCode.SCHEMA_VIOLATION, f"invalid roots: {problem}", problem.detail)
            ) from None
        problem_text = roots_problem(roots)
        if not response.req_id and not response.mcp_request_id:
            # Unsolicited: the agent sets the roots every server is told from now on.
            if problem_text:
                raise Refused(Failure(A2EErrorCode.SCHEMA_VIOLATION, problem_text))
            state.roots = roots
            for server in state.servers.values():
                link = server.link
                if server.ready and link is not None and not link.session.is_stateless:
                    try:
                        link.session.send_roots_list_changed()
                    except LocalProtocolError:
                        continue
                    state.touch(link)
            return
        wait = self._take_wait(response, "roots", response.server_id, response.mcp_request_id)
        if problem_text:
            wait.fail(
                MCPError(
                    ErrorCode.INTERNAL_ERROR, f"the agent's roots were invalid: {problem_text}"
                )
            )
            state.touch(wait.link)
            raise Refused(Failure(A2EErrorCode.SCHEMA_VIOLATION, problem_text))
        wait.deliver(roots_result(roots))
        state.touch(wait.link)

    def on_elicit_response(self, response: ElicitResponse) -> None:
        wait = self._take_wait(response, "elicit", response.server_id, response.mcp_request_id)
        touch = self._state.touch
        if response.error:
            wait.fail(refusal("elicitation", f"the agent refused to elicit: {response.error}"))
        elif response.action not in ("accept", "decline", "cancel"):
            wait.fail(MCPError(ErrorCode.INTERNAL_ERROR, "the agent's answer was invalid"))
            touch(wait.link)
            raise Refused(
                Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    f"action must be accept, decline or cancel, not {response.action!r}",
                    {"field": "action"},
                )
            )
        else:
            result: dict[str, Any] = {"action": response.action}
            if response.action == "accept":
                result["content"] = dict(response.content)
            wait.deliver(result)
        touch(wait.link)

    def on_agent_error(self, error: A2EError) -> None:
        """An ``error`` answering one of our requests is a refusal."""
        state = self._state
        wait = state.waits.get(error.req_id)
        if wait is None:
            return
        del state.waits[error.req_id]
        wait.fail(refusal(wait.kind, f"the agent refused: {error.message or error.code}"))
        state.touch(wait.link)

    # No answer ---------------------------------------------------------------------------

    def agent_gone(self) -> None:
        """Refuse everything still waiting for the agent."""
        state = self._state
        for key, wait in list(state.waits.items()):
            del state.waits[key]
            wait.fail(refusal(wait.kind, "the agent disconnected"))
            state.touch(wait.link)

    def expire(self, now: float) -> None:
        """Fail what the agent did not answer in time."""
        state = self._state
        for key, wait in list(state.waits.items()):
            if now >= wait.deadline:
                del state.waits[key]
                wait.fail(
                    RequestTimeout(
                        message=f"the agent did not answer the {wait.kind} request in time"
                    )
                )
                state.touch(wait.link)
