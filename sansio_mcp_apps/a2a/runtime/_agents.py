"""Talking to one A2A v1.0 agent: its card, and SendMessage, SendStreamingMessage,
SubscribeToTask, GetTask, CancelTask over the JSON-RPC binding.  The a2a-sdk makes and
reads the JSON-RPC messages (its protobuf types and its ``JsonRpcTransport``); the
bytes go through :class:`~.BackendTransport`.  Answers come back in ProtoJSON form for the pure
translation of :mod:`sansio_mcp_apps.a2a`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import httpx

from ...a2a import AgentConfig

if TYPE_CHECKING:
    from a2a.client.transports.jsonrpc import JsonRpcTransport
    from a2a.types import AgentCard

__all__ = ["A2ACallError", "AgentFailure", "AgentLink", "AgentUnreachable", "CARD_FIELDS"]

#: What an A2A v1.0 card must have (section 4.4.1).
CARD_FIELDS = (
    "name",
    "description",
    "supportedInterfaces",
    "version",
    "capabilities",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
)


class AgentFailure(Exception):
    """The agent could not be used (a bad card, a malformed answer)."""

    kind = "agent_failure"


class AgentUnreachable(AgentFailure):
    """The agent could not be reached, or went away mid-answer."""

    kind = "agent_unreachable"


class A2ACallError(Exception):
    """The agent answered a typed A2A error (-32001 to -32009)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"A2A error {code}: {message}")
        self.code = code
        self.message = message


def _to_dict(message: Any) -> dict[str, Any]:
    from google.protobuf import json_format  # type: ignore[import-untyped]

    value: dict[str, Any] = json_format.MessageToDict(message)
    return value


def _malformed(alias: str, what: str, exc: Exception) -> AgentFailure:
    """An answer the SDK could not read or we could not carry (a number JSON cannot
    hold, nesting past Python's recursion limit, a result that is no object), as the
    documented ``agent_failure``: what was wrong in words, not the exception's text."""
    text = str(exc).lower()
    if isinstance(exc, RecursionError) or "too deep" in text:
        why = "it is nested too deeply"
    elif "nan" in text or "infinity" in text or "inf " in text:
        why = "it holds a number JSON cannot carry (NaN or infinity)"
    else:
        why = "it is not an A2A 1.0 answer of that kind"
    return AgentFailure(f"agent {alias!r} sent a malformed answer to {what}: {why}")


class AgentLink:
    """One configured agent, reached through ``http`` (the bridge's client)."""

    def __init__(self, config: AgentConfig, http: httpx.AsyncClient) -> None:
        self.config = config
        self.alias = config.alias
        self._http = http
        self.card: dict[str, Any] | None = None
        self._rpc: JsonRpcTransport | None = None

    async def fetch_card(self) -> dict[str, Any]:
        """The agent's card, fetched again and structure-checked."""
        from a2a.types import AgentCard
        from google.protobuf import json_format

        location = self.config.card_location
        try:
            response = await self._http.get(location)
        except httpx.TransportError as exc:
            raise AgentUnreachable(f"agent {self.alias!r}: no card from {location}: {exc}") from exc
        if response.status_code != 200:
            raise AgentFailure(
                f"agent {self.alias!r}: {location} answered HTTP {response.status_code}"
            )
        try:
            raw = response.json()
        except RecursionError as exc:
            raise _malformed(self.alias, f"the card request ({location})", exc) from None
        except ValueError:
            raise AgentFailure(
                f"agent {self.alias!r}: the card at {location} is not JSON"
            ) from None
        if not isinstance(raw, dict):
            raise AgentFailure(f"agent {self.alias!r}: the card at {location} is not an object")
        missing = [name for name in CARD_FIELDS if name not in raw]
        if missing:
            raise AgentFailure(
                f"agent {self.alias!r}: the card at {location} lacks {', '.join(missing)}"
            )
        card = AgentCard()
        try:
            json_format.ParseDict(raw, card, ignore_unknown_fields=True)
            shown = _to_dict(card)
        except json_format.ParseError as exc:
            if "too deep" in str(exc):
                raise _malformed(self.alias, f"the card request ({location})", exc) from None
            raise AgentFailure(f"agent {self.alias!r}: the card at {location}: {exc}") from None
        except Exception as exc:
            raise _malformed(self.alias, f"the card request ({location})", exc) from None
        self._rpc = self._transport(card)
        self.card = shown
        return self.card

    def _transport(self, card: AgentCard) -> JsonRpcTransport:
        from a2a.client.transports.jsonrpc import JsonRpcTransport

        endpoint = next(
            (
                i.url
                for i in card.supported_interfaces
                if i.protocol_binding.upper() == "JSONRPC" and i.protocol_version in ("", "1.0")
            ),
            None,
        )
        if endpoint is None:
            if self.config.url is None:
                raise AgentFailure(
                    f"agent {self.alias!r} offers no A2A 1.0 JSON-RPC interface in its card"
                )
            endpoint = self.config.url
        return JsonRpcTransport(self._http, card, endpoint, is_shared_httpx=True)

    @property
    def streaming(self) -> bool:
        return bool(((self.card or {}).get("capabilities") or {}).get("streaming"))

    async def _client(self) -> JsonRpcTransport:
        if self._rpc is None:
            await self.fetch_card()
        assert self._rpc is not None
        return self._rpc

    def _failure(self, exc: Exception) -> Exception:
        """What an a2a-sdk client exception means here."""
        from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError

        # The SDK's client errors are A2AErrors too: a transport failure is told first.
        if isinstance(exc.__cause__, httpx.TransportError):
            return AgentUnreachable(f"agent {self.alias!r} could not be reached: {exc.__cause__}")
        code = JSON_RPC_ERROR_CODE_MAP.get(type(exc)) if isinstance(exc, A2AError) else None
        if code is not None and -32009 <= code <= -32001:
            return A2ACallError(code, getattr(exc, "message", str(exc)))
        if code is not None:
            return AgentFailure(f"agent {self.alias!r} answered error {code}: {exc}")
        return AgentFailure(f"agent {self.alias!r}: {exc}")

    async def _call(self, method: str, request: Any) -> dict[str, Any]:
        """The agent's answer to ``method``, in ProtoJSON form."""
        from a2a.client.errors import A2AClientError
        from a2a.utils.errors import A2AError

        rpc = await self._client()
        try:
            return _to_dict(await getattr(rpc, method)(request))
        except (A2AError, A2AClientError) as exc:
            raise self._failure(exc) from None
        except Exception as exc:  # the SDK's parsing of what the agent sent, or ours
            raise _malformed(self.alias, method, exc) from None

    def _request(self, text: str, context_id: str | None, task_id: str | None) -> Any:
        from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest

        message = Message(
            message_id=uuid.uuid4().hex,
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            context_id=context_id or "",
            task_id=task_id or "",
        )
        return SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=True)
        )

    async def stream_message(
        self, text: str, *, context_id: str | None, task_id: str | None
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Send ``text`` with SendStreamingMessage: ``("message", value)``, or the task
        as it stands after each event, ``("task", value)``, until the agent ends the
        stream (at a terminal or interrupted state)."""
        rpc = await self._client()
        events = rpc.send_message_streaming(self._request(text, context_id, task_id))
        async with aclosing(self._events(events, task_id, "send_message_streaming")) as stream:
            async for kind, value in stream:
                yield kind, value

    async def subscribe(self, task_id: str) -> AsyncGenerator[dict[str, Any], None]:
        """Follow the task ``task_id`` with SubscribeToTask (A2A v1.0, streaming agents):
        the task as it stands after each event, the first the task as the agent keeps
        it, until the agent ends the stream (the a2a-sdk server keeps it open past an
        interrupted state).  An agent refuses a task already terminal (-32004):
        :class:`A2ACallError`."""
        from a2a.types import SubscribeToTaskRequest

        rpc = await self._client()
        events = rpc.subscribe(SubscribeToTaskRequest(id=task_id))
        async with aclosing(self._events(events, task_id, "subscribe")) as stream:
            async for kind, value in stream:
                if kind == "task":
                    yield value

    async def _events(
        self, events: AsyncGenerator[Any, None], task_id: str | None, what: str
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """An SDK stream's events as ``("message", value)`` (the stream's last), or the
        task as it stands after each event, ``("task", value)``."""
        from a2a.client.errors import A2AClientError
        from a2a.utils.errors import A2AError

        task: dict[str, Any] | None = None
        try:
            async for event in events:
                update = _to_dict(event)
                if "message" in update:
                    yield "message", update["message"]
                    return
                if "task" in update:
                    task = update["task"]
                    yield "task", task
                    continue
                if task is None:
                    # An answer on a task that exists streams its updates only: start
                    # from the task as it stands.
                    changed = update.get("statusUpdate") or update.get("artifactUpdate") or {}
                    task = await self.get_task(changed.get("taskId") or task_id or "")
                if "statusUpdate" in update:
                    task["status"] = update["statusUpdate"].get("status", {})
                elif "artifactUpdate" in update:
                    _merge_artifact(task, update["artifactUpdate"])
                else:
                    continue
                yield "task", task
        except (A2AError, A2AClientError) as exc:
            raise self._failure(exc) from None
        except (AgentFailure, A2ACallError):
            raise
        except Exception as exc:
            raise _malformed(self.alias, what, exc) from None
        finally:
            await events.aclose()

    async def send_message(
        self, text: str, *, context_id: str | None, task_id: str | None
    ) -> tuple[str, dict[str, Any]]:
        """Send ``text``; ``("message" | "task", value)``.  The agent answers as soon as
        it has a task (``returnImmediately``): the bridge follows it (SubscribeToTask
        on a streaming agent, else GetTask), so that its own time limit, not the
        agent's, bounds the wait."""
        response = await self._call("send_message", self._request(text, context_id, task_id))
        if "task" in response:
            return "task", response["task"]
        if "message" in response:
            return "message", response["message"]
        raise AgentFailure(
            f"agent {self.alias!r} answered SendMessage with neither task nor message"
        )

    async def get_task(self, task_id: str, history_length: int | None = None) -> dict[str, Any]:
        from a2a.types import GetTaskRequest

        request = GetTaskRequest(id=task_id)
        if history_length is not None:
            request.history_length = history_length
        return await self._call("get_task", request)

    async def cancel_task(self, task_id: str) -> dict[str, Any]:
        from a2a.types import CancelTaskRequest

        return await self._call("cancel_task", CancelTaskRequest(id=task_id))


def _merge_artifact(task: dict[str, Any], update: dict[str, Any]) -> None:
    """Apply a TaskArtifactUpdateEvent: a new artifact, a replaced one, or (``append``)
    more parts for one already there."""
    artifact = update.get("artifact") or {}
    artifacts: list[dict[str, Any]] = task.setdefault("artifacts", [])
    for known in artifacts:
        if known.get("artifactId") == artifact.get("artifactId"):
            if update.get("append"):
                known.setdefault("parts", []).extend(artifact.get("parts", []))
            else:
                known.clear()
                known.update(artifact)
            return
    artifacts.append(artifact)
