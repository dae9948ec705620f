"""The A2A-to-MCP bridge: four MCP tools (``a2a_discover``, ``a2a_send_message``,
``a2a_get_task``, ``a2a_cancel_task``) on a :class:`Server`, backed by the configured
A2A v1.0 agents.  Backend-neutral: the agents are reached through the backend's TCP
(:class:`~.BackendTransport`), waits use its ``sleep``.

An INPUT_REQUIRED task becomes a form elicitation for clients that declared
elicitation: a real request on a handshake session, an MRTR ``input_required``
round on a stateless one (whose input key, ``a2a-answer:<taskHandle>:<round>``,
tells the re-run handler which task the answer is for).  Other clients get the
envelope with ``status: "input_required"`` and the ``taskHandle`` to answer with.

A 2026-07-28 call that declared the tasks extension runs as an MCP task instead
(:meth:`A2ABridge._run_task`): the agent followed by its stream or GetTask, its states
in the task's ``statusMessage``, its questions as the task's input requests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import attrs
import httpx

from sansio_mcp import InternalError
from sansio_mcp.runtime import (
    Backend,
    CancelTask,
    Context,
    Server,
    Stores,
    StoreUnavailable,
    TaskLimits,
    task_owner,
)
from sansio_mcp.tasks import TASKS_EXTENSION, declares_tasks

from ...a2a import (
    META_KEY,
    BridgeConfig,
    ExpiredHandle,
    HandleError,
    TooManyHandles,
    UnknownTaskState,
    a2a_error_result,
    bridge_failure,
    message_result,
    message_text,
    state_mapping,
    task_result,
)
from ._agents import A2ACallError, AgentFailure, AgentLink, AgentUnreachable
from ._handle_store import HandleStore, handle_store
from ._transport import BackendTransport

__all__ = ["TASKS_EXTENSION", "A2ABridge", "ContextRef", "TaskRef"]

_ANSWER_KEY = re.compile(r"a2a-answer:(?P<handle>[^:]+):(?P<round>[0-9]{1,6})")
_ANSWER_SCHEMA_FIELD = "answer"


@attrs.frozen
class TaskRef:
    """An agent's task; the task id names it (its context is along for the ride)."""

    agent: str
    task_id: str
    context_id: str = attrs.field(eq=False)


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
    """The bridge's :class:`Server`: a ``CreateTaskResult`` leaving it carries an empty
    ``content`` array, for clients that check every ``tools/call`` result against the
    plain result's schema (typescript-sdk issue 2637)."""

    def begin(self, ctx: Context) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        outcome = super().begin(ctx)
        if isinstance(outcome, dict):
            return _with_content(outcome)

        async def settled() -> dict[str, Any]:
            return _with_content(await outcome)

        return settled()


def _with_content(result: dict[str, Any]) -> dict[str, Any]:
    if result.get("resultType") == "task" and "content" not in result:
        return {**result, "content": []}
    return result


class A2ABridge:
    """The bridge's state (agents, handles) and its MCP :attr:`server`.

    ``clock`` dates the handles (seconds; the backend's clock by default: tests
    inject one); ``max_wait`` bounds how long ``a2a_send_message`` follows a task
    that is still working before it returns the envelope as it stands.  A streaming
    agent's task is followed by its stream (SubscribeToTask), given up for GetTask
    every ``poll_interval`` (doubling, to 1 s) when it stays silent ``stream_silence``
    seconds; the other agents' tasks by GetTask alone.  ``stores``
    (:func:`~sansio_mcp.runtime.open_stores`'s) says where the handles live: in this
    process (the default, or a ``memory`` bundle), or in the bundle's Redis, shared by
    every replica; it goes to :attr:`server` too, with ``state_keys`` (the
    requestState key ring), as :class:`Server`'s.
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
        stream_silence: float = 1.0,
        state_keys: Sequence[bytes] | None = None,
        stores: Stores | None = None,
    ) -> None:
        self.config = config
        self.state_keys = state_keys
        self.backend = backend
        self.clock = clock or backend.clock
        self.poll_interval = poll_interval
        self.max_wait = max_wait
        self.stream_silence = stream_silence
        ttl = config.handle_ttl_ms / 1000
        token: dict[str, Any] = {"new_token": new_token} if new_token else {}
        token.update(max_per_owner=config.max_handles_per_owner, max_total=config.max_handles)
        self.stores = stores if stores is not None else Stores.memory(self.clock)
        self.tasks: HandleStore[TaskRef] = handle_store(
            self.stores, "tk_", ttl, TaskRef, clock=self.clock, **token
        )
        self.contexts: HandleStore[ContextRef] = handle_store(
            self.stores, "cx_", ttl, ContextRef, clock=self.clock, **token
        )
        #: How the agents are reached (its ``pool`` keeps their connections).
        self.transport = BackendTransport(backend)
        self.http = httpx.AsyncClient(
            transport=self.transport,
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
            instructions=f"A2A v1.0 agents ({', '.join(aliases)}) as four tools: a2a_discover "
            "reads an agent's card, a2a_send_message talks to it, a2a_get_task and "
            "a2a_cancel_task follow and stop its tasks.",
            # An answer may come back as long as the task's handle lives.
            state_ttl=self.tasks.ttl,
            # A task no client asks about is given up (and its A2A task cancelled) when
            # its handle would expire: nobody could ask about it any more.
            task_limits=TaskLimits(unpolled_ttl_ms=self.config.handle_ttl_ms),
            task_ttl_ms=self.config.task_ttl_ms,
            # Tasks on the 2026-07-28 route only (the extension): the handshake route
            # advertises no tasks capability and its tasks/* are -32021.
            handshake_tasks=False,
            state_keys=self.state_keys,
            stores=self.stores,
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
            task="optional",
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
            ctx: Context,
            taskHandle: str,
            agent: str | None = None,
            historyLength: int | None = None,
        ) -> dict[str, Any]:
            owner = task_owner(ctx)

            async def get(link: AgentLink) -> dict[str, Any]:
                ref = await self._task(taskHandle, link.alias, owner)
                task = await link.get_task(ref.task_id, historyLength)
                return await self._task_result(link, task, owner, with_history=True)

            return await self._guard(agent, get)

        @server.tool(
            "a2a_cancel_task",
            description="Ask an A2A agent to cancel a task; returns the task as it then stands.",
            input_schema=schema({"taskHandle": task_handle}, ["taskHandle"]),
            annotations={"destructiveHint": True, "openWorldHint": True},
        )
        async def a2a_cancel_task(
            ctx: Context, taskHandle: str, agent: str | None = None
        ) -> dict[str, Any]:
            owner = task_owner(ctx)

            async def cancel(link: AgentLink) -> dict[str, Any]:
                ref = await self._task(taskHandle, link.alias, owner)
                return await self._task_result(link, await link.cancel_task(ref.task_id), owner)

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
        except StoreUnavailable as exc:
            return bridge_failure(str(exc), error="store_unavailable")
        except TooManyHandles as exc:
            return bridge_failure(str(exc), error="too_many_handles")
        except UnknownTaskState as exc:
            return bridge_failure(
                f"agent {link.alias!r}: {exc}", error="invalid_agent_response", agent=link.alias
            )

    async def _task(self, handle: str, alias: str, owner: str) -> TaskRef:
        """``owner``'s task handle (another's is unknown to them), of agent ``alias``."""
        ref = await self.tasks.resolve(handle, owner)
        if ref.agent != alias:
            raise _Refused(
                bridge_failure(
                    f"the task handle {handle!r} belongs to agent {ref.agent!r}, not {alias!r}",
                    error="wrong_agent",
                )
            )
        return ref

    async def _context_handle(
        self, link: AgentLink, context_id: str | None, owner: str
    ) -> str | None:
        if not context_id:
            return None
        return await self.contexts.mint(ContextRef(link.alias, context_id), owner)

    async def _task_handle(self, link: AgentLink, task: dict[str, Any], owner: str) -> str:
        ref = TaskRef(link.alias, task.get("id", ""), task.get("contextId", ""))
        try:
            return await self.tasks.mint(ref, owner)
        except TooManyHandles as exc:
            raise await self._unnamed(link, task, exc) from None

    async def _unnamed(
        self, link: AgentLink, task: dict[str, Any], exc: TooManyHandles
    ) -> _Refused:
        """The refusal of a handle ``task`` needs: a task no live handle names (one
        this call started) is cancelled at the agent (CancelTask), as nobody could
        follow or stop it any more; one a handle names is left as it is."""
        ref = TaskRef(link.alias, task.get("id", ""), task.get("contextId", ""))
        message = str(exc)
        phase = state_mapping((task.get("status") or {}).get("state")).phase
        if phase != "terminal" and await self.tasks.peek(ref) is None:
            await _cancel_quietly(link, ref.task_id)
            message += (
                f"; the bridge cancelled the agent's task {ref.task_id!r}, "
                "which no handle could name"
            )
        return _Refused(bridge_failure(message, error="too_many_handles", agent=link.alias))

    async def _task_result(
        self,
        link: AgentLink,
        task: dict[str, Any],
        owner: str,
        *,
        with_history: bool = False,
        notes: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        try:
            context_handle = await self._context_handle(link, task.get("contextId", ""), owner)
        except TooManyHandles as exc:
            raise await self._unnamed(link, task, exc) from None
        return task_result(
            task,
            context_handle=context_handle,
            task_handle=await self._task_handle(link, task, owner),
            with_history=with_history,
            notes=notes,
            limits=self.config.result_limits,
        )

    async def _message_result(
        self, link: AgentLink, message: dict[str, Any], owner: str
    ) -> dict[str, Any]:
        return message_result(
            message,
            context_handle=await self._context_handle(link, message.get("contextId"), owner),
            limits=self.config.result_limits,
        )

    async def _check_new_task(
        self, link: AgentLink, task: dict[str, Any], context_id: str | None
    ) -> None:
        """Refuse a task id the agent gave before, answering a message that named neither
        that task nor its conversation: its handle would reach another client's task.
        (Handles are their owner's, and an anonymous owner is every anonymous client.)"""
        ref = TaskRef(link.alias, task.get("id", ""), task.get("contextId", ""))
        known = await self.tasks.peek(ref)
        if known is not None and (context_id is None or known.context_id != context_id):
            raise AgentFailure(
                f"agent {link.alias!r} answered a new message with the id of a task the "
                "bridge already has a handle for, in another conversation; the bridge does "
                "not give one task's handle to two conversations"
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
        owner = task_owner(ctx)
        if task_handle is not None:
            ref = await self._task(task_handle, link.alias, owner)
            task_id, context_id = ref.task_id, ref.context_id
        elif context_handle is not None:
            found = await self.contexts.resolve(context_handle, owner)
            if found.agent != link.alias:
                raise _Refused(
                    bridge_failure(
                        f"the context handle {context_handle!r} belongs to agent "
                        f"{found.agent!r}, not {link.alias!r}",
                        error="wrong_agent",
                    )
                )
            context_id = found.context_id
        else:
            # The answer will need a handle: a store that cannot be reached fails the
            # call now, before the agent starts a task nobody could name.
            await self.tasks.check()
        if ctx.stateless and declares_tasks(ctx.client_capabilities):
            return await self._run_task(ctx, link, text, context_id, task_id)
        rounds = 0
        resumed = self._resumed(ctx)
        if resumed is not None:
            handle, rounds, answer = resumed
            ref = await self._task(handle, link.alias, owner)
            task_id, context_id = ref.task_id, ref.context_id
            if answer is None:
                return await self._declined(link, ref, owner)
            text = answer
        kind, value = await link.send_message(text, context_id=context_id, task_id=task_id)
        if kind == "task" and task_id is None:
            await self._check_new_task(link, value, context_id)
        while True:
            if kind == "message":
                return await self._message_result(link, value, owner)
            task, notes = await self._follow(link, value)
            state = state_mapping((task.get("status") or {}).get("state"))
            wants_input = state.a2a_state == "TASK_STATE_INPUT_REQUIRED"
            if not wants_input or "elicitation" not in ctx.client_capabilities:
                return await self._task_result(link, task, owner, notes=notes)
            rounds += 1
            handle = await self._task_handle(link, task, owner)
            answer = await self._ask(ctx, task, f"a2a-answer:{handle}:{rounds}")
            ref = TaskRef(link.alias, task.get("id", ""), task.get("contextId", ""))
            if answer is None:
                return await self._declined(link, ref, owner)
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

    async def _declined(self, link: AgentLink, ref: TaskRef, owner: str) -> dict[str, Any]:
        """The user declined the agent's question: the bridge cancels the task."""
        note = "the user declined to answer; the bridge cancelled the A2A task"
        try:
            task = await link.cancel_task(ref.task_id)
        except A2ACallError as exc:
            task = await link.get_task(ref.task_id)
            note += f" (the agent refused: A2A error {exc.code}, {exc.message})"
        return await self._task_result(link, task, owner, notes=(note,))

    async def _follow(
        self,
        link: AgentLink,
        task: dict[str, Any],
        *,
        limit: float | None = None,
        on_update: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """``task`` once it is terminal or interrupted, or as it stands after ``limit``
        seconds (``max_wait`` by default); ``on_update`` sees each state read.  A
        streaming agent's task is followed by its stream (SubscribeToTask), once; the
        others', and one whose stream ended early or fell silent, by GetTask every
        ``poll_interval`` (doubling, to 1 s)."""
        limit = self.max_wait if limit is None else limit
        deadline = self.backend.clock() + limit
        delay = self.poll_interval
        subscribe = link.streaming
        while _active(task):
            if on_update is not None:
                await on_update(task)
            if self.backend.clock() >= deadline:
                return task, (
                    f"the agent was still at it after {limit:g} s; "
                    "follow the task with a2a_get_task",
                )
            if subscribe:
                subscribe = False
                task, ended = await self._watch(link, task, deadline, on_update)
                if ended:
                    continue
                # Refused (a task already over: -32004), broken off or ended early: the
                # task as the agent keeps it, at once, and GetTask from there on.
            else:
                await self.backend.sleep(delay)
                delay = min(delay * 2, 1.0)
            task = await link.get_task(task.get("id", ""))
        return task, ()

    async def _watch(
        self,
        link: AgentLink,
        task: dict[str, Any],
        deadline: float,
        on_update: Callable[[dict[str, Any]], Awaitable[None]] | None,
    ) -> tuple[dict[str, Any], bool]:
        """``task`` followed by the agent's stream until it is no longer active or the
        deadline comes (True); False when the stream could not be had, broke off, ended
        with the task still active or stayed silent ``stream_silence`` seconds: GetTask
        takes over (an agent may keep a stream open on a task nobody works on any more,
        or one it forgot, and say nothing)."""
        events = link.subscribe(task.get("id", ""))
        try:
            while True:
                step: Any = None
                async with self.backend.move_on_after(
                    min(self.stream_silence, deadline - self.backend.clock())
                ):
                    step = await anext(events, _END)
                if step is None:
                    return task, self.backend.clock() >= deadline
                if step is _END:
                    return task, not _active(task)
                task = step
                if not _active(task):
                    return task, True
                if on_update is not None:
                    await on_update(task)
        except (AgentFailure, A2ACallError):
            return task, False
        finally:
            # The agent may hold the stream open past an interrupted state: closed here.
            await events.aclose()

    # The tasks extension ----------------------------------------------------------

    async def _run_task(
        self,
        ctx: Context,
        link: AgentLink,
        text: str,
        context_id: str | None,
        task_id: str | None,
    ) -> dict[str, Any]:
        """``a2a_send_message`` as an MCP task (the client declared the tasks extension).
        The MCP task is created when the agent reports a task (a direct Message is a
        plain result, no task).  The agent is followed with SendStreamingMessage when
        its card declares streaming, else with GetTask; its states become the task's
        ``statusMessage``, INPUT_REQUIRED parks the task on a form elicitation
        (``tasks/update`` answers it), and the final envelope is the task's result; an
        A2A task that ends CANCELED (by the agent, ``a2a_cancel_task`` or a declined
        question) ends the MCP task ``cancelled``.  ``tasks/cancel`` cancels the A2A
        task too; an agent that can no longer be reached fails the task, the A2A code
        in ``error.data``."""
        progress = _StatusReporter(ctx)
        owner = task_owner(ctx)
        rounds = 0
        try:
            while True:
                try:
                    with ctx.defer_task():  # until the agent shows a task
                        kind, value = await self._first_answer(
                            link, text, context_id, task_id, progress
                        )
                        if kind == "task":
                            await progress(value)  # the CreateTaskResult goes out
                except (AgentFailure, A2ACallError) as exc:
                    if not progress.task_id:
                        raise  # no A2A task yet: a tool error, as without the extension
                    raise _lost(link, exc) from None
                if kind == "message":
                    return await self._message_result(link, value, owner)
                try:
                    task, _ = await self._follow(link, value, limit=math.inf, on_update=progress)
                except (AgentFailure, A2ACallError) as exc:
                    raise _lost(link, exc) from None
                state = state_mapping((task.get("status") or {}).get("state"))
                if state.a2a_state != "TASK_STATE_INPUT_REQUIRED" or (
                    "elicitation" not in ctx.client_capabilities
                ):
                    return self._task_outcome(link, await self._task_result(link, task, owner))
                rounds += 1
                handle = await self._task_handle(link, task, owner)
                answer = await self._ask(ctx, task, f"a2a-answer:{handle}:{rounds}")
                task_id, context_id = task.get("id", ""), task.get("contextId", "")
                if answer is None:
                    ref = TaskRef(link.alias, task_id, context_id)
                    return self._task_outcome(link, await self._declined(link, ref, owner))
                text = answer
        except BaseException as exc:
            if not isinstance(exc, Exception) and progress.task_id:
                # Cancelled (tasks/cancel): the agent's task goes too, from a task of its
                # own, as this one may not wait any more.
                ctx.start_background(partial(_cancel_quietly, link, progress.task_id))
            raise

    @staticmethod
    def _task_outcome(link: AgentLink, result: dict[str, Any]) -> dict[str, Any]:
        """The MCP task's result, or :class:`CancelTask` (the task ends ``cancelled``,
        the handle and what was said in its ``statusMessage``) for a CANCELED task."""
        envelope = result["structuredContent"]
        if envelope.get("a2aState") != "TASK_STATE_CANCELED":
            return result
        said = [block["text"] for block in result["content"] if block.get("type") == "text"]
        note = [envelope["note"]] if envelope.get("note") else []
        head = f"agent {link.alias!r} cancelled the task (taskHandle {envelope['taskHandle']})"
        raise CancelTask("; ".join([head, *said[:1], *note]))

    async def _first_answer(
        self,
        link: AgentLink,
        text: str,
        context_id: str | None,
        task_id: str | None,
        progress: _StatusReporter,
    ) -> tuple[str, dict[str, Any]]:
        """The agent's answer to ``text``: a message, or its task once the stream ended
        (streaming agents) or as first returned (the others: GetTask follows)."""
        if not link.streaming:
            kind, value = await link.send_message(text, context_id=context_id, task_id=task_id)
            if kind == "task" and task_id is None:
                await self._check_new_task(link, value, context_id)
            return kind, value
        last: tuple[str, dict[str, Any]] | None = None
        try:
            async for kind, value in link.stream_message(
                text, context_id=context_id, task_id=task_id
            ):
                if kind == "task" and task_id is None and last is None:
                    await self._check_new_task(link, value, context_id)
                last = kind, value
                if kind == "task":
                    await progress(value)
        except AgentUnreachable:
            if last is None or last[0] != "task":
                raise
            # The stream broke off (or stayed silent past the read limit): GetTask goes
            # on from here, and fails in turn if the agent is really gone.
        if last is None:
            raise AgentFailure(f"agent {link.alias!r} ended its stream without an answer")
        if last[0] == "task":
            # The stream showed the way; the task as the agent keeps it is the result.
            return "task", await link.get_task(last[1].get("id", ""))
        return last

    async def _ask(self, ctx: Context, task: dict[str, Any], key: str) -> str | None:
        """The user's answer to the agent's question (a form with one string field),
        or None when they declined."""
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
            key=key,
        )
        return _accepted(reply)


_END = object()


def _active(task: dict[str, Any]) -> bool:
    return state_mapping((task.get("status") or {}).get("state")).active


def _accepted(reply: Any) -> str | None:
    """The answer of an ElicitResult, or None unless it was accepted with one."""
    if not isinstance(reply, dict) or reply.get("action") != "accept":
        return None
    content = reply.get("content")
    if not isinstance(content, dict):
        return None
    answer = content.get(_ANSWER_SCHEMA_FIELD)
    return answer if isinstance(answer, str) else None


class _StatusReporter:
    """Turns the agent's task states into the MCP task's ``statusMessage`` (each
    change once)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._last: str | None = None
        #: The A2A task followed (known from its first state on).
        self.task_id = ""

    async def __call__(self, task: dict[str, Any]) -> None:
        if self._ctx.task is None:
            await self._ctx.become_task()  # the agent made a task: so does the bridge
        self.task_id = task.get("id", "") or self.task_id
        status = task.get("status") or {}
        row = state_mapping(status.get("state"))
        said = message_text(status.get("message"))
        if row.a2a_state == "TASK_STATE_SUBMITTED":
            line = "submitted: the agent accepted the task and has not started it"
        else:
            line = row.status
        if said:
            line += f": {said}"
        if line != self._last:
            self._last = line
            await self._ctx.report_progress(0, None, line)


def _lost(link: AgentLink, exc: AgentFailure | A2ACallError) -> InternalError:
    """The MCP task's error when its A2A task can no longer be followed."""
    data: dict[str, Any] = {"agent": link.alias}
    if isinstance(exc, A2ACallError):
        data["a2aErrorCode"] = exc.code
    return InternalError(message=f"the agent's task can no longer be followed: {exc}", data=data)


async def _cancel_quietly(link: AgentLink, task_id: str) -> None:
    try:
        await link.cancel_task(task_id)
    except (AgentFailure, A2ACallError):
        pass  # gone already, or past cancelling: nothing is left to stop
