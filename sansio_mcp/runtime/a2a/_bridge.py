"""The A2A-to-MCP bridge: four MCP tools (``a2a_discover``, ``a2a_send_message``,
``a2a_get_task``, ``a2a_cancel_task``) on a :class:`Server`, backed by the configured
A2A v1.0 agents.  Backend-neutral: the agents are reached through the backend's TCP
(:class:`~.BackendTransport`), waits use its ``sleep``.

An INPUT_REQUIRED task becomes a form elicitation for clients that declared
elicitation: a real request on a handshake session, an MRTR ``input_required``
round on a stateless one (whose input key, ``a2a-answer:<taskHandle>:<round>``,
tells the re-run handler which task the answer is for).  Other clients get the
envelope with ``status: "input_required"`` and the ``taskHandle`` to answer with.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx

from ..._errors import MissingRequiredClientCapability
from ...a2a import (
    META_KEY,
    BridgeConfig,
    ExpiredHandle,
    HandleError,
    HandleTable,
    UnknownTaskState,
    a2a_error_result,
    bridge_failure,
    message_result,
    message_text,
    state_mapping,
    task_result,
)
from .._backend import Backend
from .._server import Context, Server
from ._agents import A2ACallError, AgentFailure, AgentLink
from ._transport import BackendTransport

__all__ = ["TASKS_EXTENSION", "A2ABridge", "ContextRef", "TaskRef"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
_ANSWER_KEY = re.compile(r"a2a-answer:(?P<handle>[^:]+):(?P<round>[0-9]{1,6})")
_ANSWER_SCHEMA_FIELD = "answer"


@attrs.frozen
class TaskRef:
    agent: str
    task_id: str
    context_id: str


@attrs.frozen
class ContextRef:
    agent: str
    context_id: str


class _Refused(Exception):
    """A tool call the bridge answers with a tool error before asking any agent."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result["content"][0]["text"])
        self.result = result


class _BridgeServer(Server):
    """A :class:`Server` that answers the tasks extension's methods with -32021: the
    bridge does not serve the extension (yet), on either route."""

    def begin(self, ctx: Context) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        if ctx.method.startswith("tasks/"):
            raise MissingRequiredClientCapability(
                message=f"{ctx.method} belongs to the tasks extension, which this bridge "
                "does not serve; call the tools without it",
                data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )
        return super().begin(ctx)


class A2ABridge:
    """The bridge's state (agents, handles) and its MCP :attr:`server`.

    ``clock`` dates the handles (seconds; the backend's clock by default: tests
    inject one); ``max_wait`` bounds how long ``a2a_send_message`` follows a task
    that is still working before it returns the envelope as it stands.
    """

    def __init__(
        self,
        config: BridgeConfig,
        backend: Backend,
        *,
        clock: Callable[[], float] | None = None,
        new_token: Callable[[], str] | None = None,
        poll_interval: float = 0.05,
        max_wait: float = 300.0,
    ) -> None:
        self.config = config
        self.backend = backend
        self.clock = clock or backend.clock
        self.poll_interval = poll_interval
        self.max_wait = max_wait
        ttl = config.handle_ttl_ms / 1000
        token: dict[str, Any] = {"new_token": new_token} if new_token else {}
        self.tasks: HandleTable[TaskRef] = HandleTable("tk_", ttl, **token)
        self.contexts: HandleTable[ContextRef] = HandleTable("cx_", ttl, **token)
        self.http = httpx.AsyncClient(
            transport=BackendTransport(backend),
            headers={"A2A-Version": "1.0"},
            timeout=httpx.Timeout(30.0, read=max_wait + 30.0),
        )
        self.links = {agent.alias: AgentLink(agent, self.http) for agent in config.agents}
        self.server = self._build_server()

    async def aclose(self) -> None:
        await self.http.aclose()

    # Tools ----------------------------------------------------------------------

    def _build_server(self) -> Server:
        aliases = sorted(self.links)
        server = _BridgeServer(
            "sansio-mcp-a2a-bridge",
            "0.1.0",
            title="A2A agents as MCP tools",
            instructions="A2A v1.0 agents, reached through four tools: "
            + ", ".join(aliases)
            + ". Start with a2a_discover to read an agent's card.",
        )
        retention = self.tasks.describe_retention()
        one = len(aliases) == 1
        agent_schema: dict[str, Any] = {
            "type": "string",
            "enum": aliases,
            "description": "the agent's alias"
            + (f" (optional: only {aliases[0]!r} is configured)" if one else ""),
        }

        def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
            return {
                "type": "object",
                "properties": {"agent": agent_schema, **properties},
                "required": (required if one else ["agent", *required]),
                "additionalProperties": False,
            }

        task_handle = {
            "type": "string",
            "description": f"a taskHandle from an earlier result; {retention}",
        }

        @server.tool(
            "a2a_discover",
            description="Read an A2A agent's card: who it is, its skills, what it accepts.",
            input_schema=schema({}, []),
            annotations={"readOnlyHint": True, "openWorldHint": True},
        )
        async def a2a_discover(agent: str | None = None) -> dict[str, Any]:
            return await self._guard(agent, self._discover)

        @server.tool(
            "a2a_send_message",
            description="Send a text message to an A2A agent and return its reply (a message, "
            "or a task with its state and artifacts). Pass contextHandle to continue a "
            "conversation, taskHandle to answer a task that waits for input. " + retention + ".",
            input_schema=schema(
                {
                    "text": {"type": "string", "description": "the message"},
                    "contextHandle": {
                        "type": "string",
                        "description": "continue this conversation",
                    },
                    "taskHandle": task_handle,
                },
                ["text"],
            ),
            annotations={"openWorldHint": True},
        )
        async def a2a_send_message(
            ctx: Context,
            text: str,
            agent: str | None = None,
            contextHandle: str | None = None,
            taskHandle: str | None = None,
        ) -> dict[str, Any]:
            async def send(link: AgentLink) -> dict[str, Any]:
                return await self._send(ctx, link, text, contextHandle, taskHandle)

            return await self._guard(agent, send)

        @server.tool(
            "a2a_get_task",
            description="Read a task of an A2A agent: its state, artifacts and history.",
            input_schema=schema(
                {
                    "taskHandle": task_handle,
                    "historyLength": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "at most this many history messages",
                    },
                },
                ["taskHandle"],
            ),
            annotations={"readOnlyHint": True, "openWorldHint": True},
        )
        async def a2a_get_task(
            taskHandle: str,
            agent: str | None = None,
            historyLength: int | None = None,
        ) -> dict[str, Any]:
            async def get(link: AgentLink) -> dict[str, Any]:
                ref = self._task(taskHandle, link.alias)
                task = await link.get_task(ref.task_id, historyLength)
                return self._task_result(link, task, with_history=True)

            return await self._guard(agent, get)

        @server.tool(
            "a2a_cancel_task",
            description="Ask an A2A agent to cancel a task; returns the task as it then stands.",
            input_schema=schema({"taskHandle": task_handle}, ["taskHandle"]),
            annotations={"destructiveHint": True, "openWorldHint": True},
        )
        async def a2a_cancel_task(taskHandle: str, agent: str | None = None) -> dict[str, Any]:
            async def cancel(link: AgentLink) -> dict[str, Any]:
                ref = self._task(taskHandle, link.alias)
                return self._task_result(link, await link.cancel_task(ref.task_id))

            return await self._guard(agent, cancel)

        return server

    # Plumbing -------------------------------------------------------------------

    def _link(self, agent: str | None) -> AgentLink:
        if agent is None:
            if len(self.links) == 1:
                return next(iter(self.links.values()))
            raise _Refused(
                bridge_failure(
                    "say which agent: one of " + ", ".join(sorted(self.links)),
                    error="unknown_agent",
                )
            )
        link = self.links.get(agent)
        if link is None:
            raise _Refused(
                bridge_failure(
                    f"no agent {agent!r} is configured; the agents are "
                    + ", ".join(sorted(self.links)),
                    error="unknown_agent",
                )
            )
        return link

    async def _guard(
        self, agent: str | None, work: Callable[[AgentLink], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        """``work``'s result, or the tool error its failure means."""
        try:
            link = self._link(agent)
            return await work(link)
        except _Refused as refused:
            return refused.result
        except A2ACallError as exc:
            return a2a_error_result(exc.code, exc.message, agent=link.alias)
        except AgentFailure as exc:
            return bridge_failure(str(exc), error=exc.kind, agent=link.alias)
        except HandleError as exc:
            kind = "expired_handle" if isinstance(exc, ExpiredHandle) else "unknown_handle"
            return bridge_failure(str(exc), error=kind)
        except UnknownTaskState as exc:
            return bridge_failure(
                f"agent {link.alias!r}: {exc}", error="invalid_agent_response", agent=link.alias
            )

    def _task(self, handle: str, alias: str) -> TaskRef:
        ref = self.tasks.resolve(handle, self.clock())
        if ref.agent != alias:
            raise _Refused(
                bridge_failure(
                    f"the task handle {handle!r} belongs to agent {ref.agent!r}, not {alias!r}",
                    error="wrong_agent",
                )
            )
        return ref

    def _context_handle(self, link: AgentLink, context_id: str | None) -> str | None:
        if not context_id:
            return None
        return self.contexts.mint(ContextRef(link.alias, context_id), self.clock())

    def _task_result(
        self,
        link: AgentLink,
        task: dict[str, Any],
        *,
        with_history: bool = False,
        notes: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        context_id = task.get("contextId", "")
        handle = self.tasks.mint(TaskRef(link.alias, task.get("id", ""), context_id), self.clock())
        return task_result(
            task,
            context_handle=self._context_handle(link, context_id),
            task_handle=handle,
            with_history=with_history,
            notes=notes,
        )

    async def _discover(self, link: AgentLink) -> dict[str, Any]:
        card = await link.fetch_card()
        skills = ", ".join(s.get("name") or s.get("id", "?") for s in card.get("skills", ()))
        caps = card.get("capabilities") or {}
        summary = (
            f"{card.get('name')} (version {card.get('version')}): {card.get('description')}\n"
            f"skills: {skills or 'none'}\n"
            f"streaming: {'yes' if caps.get('streaming') else 'no'}; input: "
            f"{', '.join(card.get('defaultInputModes', ()))}; output: "
            f"{', '.join(card.get('defaultOutputModes', ()))}"
        )
        return {
            "content": [{"type": "text", "text": summary}],
            "structuredContent": card,
            "isError": False,
            "_meta": {META_KEY: {"cardUrl": link.config.card_location}},
        }

    # Sending ----------------------------------------------------------------------

    async def _send(
        self,
        ctx: Context,
        link: AgentLink,
        text: str,
        context_handle: str | None,
        task_handle: str | None,
    ) -> dict[str, Any]:
        context_id = task_id = None
        if task_handle is not None:
            ref = self._task(task_handle, link.alias)
            task_id, context_id = ref.task_id, ref.context_id
        elif context_handle is not None:
            found = self.contexts.resolve(context_handle, self.clock())
            if found.agent != link.alias:
                raise _Refused(
                    bridge_failure(
                        f"the context handle {context_handle!r} belongs to agent "
                        f"{found.agent!r}, not {link.alias!r}",
                        error="wrong_agent",
                    )
                )
            context_id = found.context_id
        rounds = 0
        resumed = self._resumed(ctx)
        if resumed is not None:
            handle, rounds, answer = resumed
            ref = self._task(handle, link.alias)
            task_id, context_id = ref.task_id, ref.context_id
            if answer is None:
                return await self._declined(link, ref)
            text = answer
        kind, value = await link.send_message(text, context_id=context_id, task_id=task_id)
        while True:
            if kind == "message":
                return message_result(
                    value, context_handle=self._context_handle(link, value.get("contextId"))
                )
            task, notes = await self._follow(link, value)
            state = state_mapping((task.get("status") or {}).get("state"))
            wants_input = state.a2a_state == "TASK_STATE_INPUT_REQUIRED"
            if not wants_input or "elicitation" not in ctx.client_capabilities:
                return self._task_result(link, task, notes=notes)
            rounds += 1
            result = self._task_result(link, task, notes=notes)
            handle = result["structuredContent"]["taskHandle"]
            question = message_text((task.get("status") or {}).get("message"))
            reply = await ctx.elicit(
                question or "The agent needs more input.",
                {
                    "type": "object",
                    "properties": {
                        _ANSWER_SCHEMA_FIELD: {
                            "type": "string",
                            "title": "Answer",
                            "description": question or "your answer to the agent",
                        }
                    },
                    "required": [_ANSWER_SCHEMA_FIELD],
                },
                key=f"a2a-answer:{handle}:{rounds}",
            )
            answer = _accepted(reply)
            ref = TaskRef(link.alias, task.get("id", ""), task.get("contextId", ""))
            if answer is None:
                return await self._declined(link, ref)
            kind, value = await link.send_message(
                answer, context_id=ref.context_id, task_id=ref.task_id
            )

    def _resumed(self, ctx: Context) -> tuple[str, int, str | None] | None:
        """On a stateless retry, the answer it brings: (taskHandle, round, the text,
        or None when the user declined)."""
        responses = ctx.params.get("inputResponses") if ctx.stateless else None
        if not isinstance(responses, dict):
            return None
        found = [
            (int(m["round"]), m["handle"], value)
            for key, value in responses.items()
            if (m := _ANSWER_KEY.fullmatch(key)) is not None
        ]
        if not found:
            return None
        rounds, handle, value = max(found, key=lambda item: item[0])
        return handle, rounds, _accepted(value)

    async def _declined(self, link: AgentLink, ref: TaskRef) -> dict[str, Any]:
        """The user declined the agent's question: the bridge cancels the task."""
        note = "the user declined to answer; the bridge cancelled the A2A task"
        try:
            task = await link.cancel_task(ref.task_id)
        except A2ACallError as exc:
            task = await link.get_task(ref.task_id)
            note += f" (the agent refused: A2A error {exc.code}, {exc.message})"
        return self._task_result(link, task, notes=(note,))

    async def _follow(
        self, link: AgentLink, task: dict[str, Any]
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """``task`` once it is terminal or interrupted (polled with GetTask), or as it
        stands after ``max_wait`` seconds."""
        deadline = self.backend.clock() + self.max_wait
        delay = self.poll_interval
        while state_mapping((task.get("status") or {}).get("state")).active:
            if self.backend.clock() >= deadline:
                return task, (
                    f"the agent was still at it after {self.max_wait:g} s; "
                    "follow the task with a2a_get_task",
                )
            await self.backend.sleep(delay)
            delay = min(delay * 2, 1.0)
            task = await link.get_task(task.get("id", ""))
        return task, ()


def _accepted(reply: Any) -> str | None:
    """The answer of an ElicitResult, or None unless it was accepted with one."""
    if not isinstance(reply, dict) or reply.get("action") != "accept":
        return None
    content = reply.get("content")
    if not isinstance(content, dict):
        return None
    answer = content.get(_ANSWER_SCHEMA_FIELD)
    return answer if isinstance(answer, str) else None
