"""A small A2E client for Python agents, on Trio.

:class:`A2EClient` sends requests and waits for their responses by
``req_id``; what the bridge sends on its own (``mcp/server/push``,
``tool/event``) goes to callbacks, and what it asks (``mcp/sample/req``,
``mcp/root/list/req``, ``x-mcp/elicit/req``) to handlers whose return value
is sent back.  Open one with :func:`open_a2e_stdio` (the bridge as a child
process), :func:`open_a2e_ws` or :func:`open_a2e_streams`.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import ssl
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import trio

from sansio_mcp._stdio import safe_environment
from sansio_mcp.a2e import (
    A2EError,
    A2EFramer,
    A2EMessage,
    A2EWebSocket,
    DecodeError,
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
    decode_text,
    encode,
    encode_line,
)

from ._process import PIPE, drain_stderr, stop_process
from ._util import unwrap_single_exception

__all__ = [
    "A2EClient",
    "A2ERequestError",
    "open_a2e_stdio",
    "open_a2e_streams",
    "open_a2e_ws",
]

logger = logging.getLogger("trio_adapters.a2e")

R = TypeVar("R", bound=A2EMessage)
Handler = Callable[[Any], Any]


class A2ERequestError(Exception):
    """The bridge answered a request with an ``error`` message, or with a response
    carrying ``error_code`` (see :meth:`A2EClient.check`)."""

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


class A2EClient:
    """One agent's side of an A2E connection.

    ``on_sample(MCPSamplingRequest)`` returns an :class:`MCPSamplingResponse`
    or a dict of its fields (``content``, ``model``, ``stop_reason``, or
    ``error`` to refuse); ``on_roots(MCPRootsListRequest)`` returns a list of
    roots; ``on_elicit(ElicitRequest)`` returns an ElicitResult dict.
    Without a handler the request is refused.  ``on_push`` and ``on_event``
    see pushes and tool events; every message in either direction also goes
    to ``on_message(direction, message)`` (``"->"`` sent, ``"<-"`` received).
    """

    def __init__(
        self,
        send: Callable[[A2EMessage], Awaitable[None]],
        *,
        on_sample: Handler | None = None,
        on_roots: Handler | None = None,
        on_elicit: Handler | None = None,
        on_push: Handler | None = None,
        on_event: Handler | None = None,
        on_message: Callable[[str, A2EMessage], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._send_raw = send
        self.on_sample = on_sample
        self.on_roots = on_roots
        self.on_elicit = on_elicit
        self.on_push = on_push
        self.on_event = on_event
        self.on_message = on_message
        self.clock = clock
        self._waiters: dict[str, tuple[trio.Event, list[A2EMessage]]] = {}
        self._nursery: trio.Nursery | None = None
        self.closed = False
        #: Pushes and tool events received so far (also given to the callbacks).
        self.pushes: list[MCPServerPush] = []
        self.events: list[ToolEvent] = []
        #: Inputs the client could not decode (a misbehaving bridge).
        self.undecodable: list[DecodeError] = []

    # Plumbing ------------------------------------------------------------------------

    async def send(self, message: A2EMessage) -> None:
        if self.on_message is not None:
            self.on_message("->", message)
        await self._send_raw(message)

    def stamp(self, cls: type[R], **fields: Any) -> R:
        """A message of ``cls`` stamped with the client's clock."""
        return cls(ts=self.clock(), **fields)

    def feed(self, item: A2EMessage | DecodeError) -> None:
        """One message from the bridge (the reader loop calls this)."""
        if isinstance(item, DecodeError):
            self.undecodable.append(item)
            return
        if self.on_message is not None:
            self.on_message("<-", item)
        req_id = getattr(item, "req_id", "")
        if isinstance(item, MCPSamplingRequest | MCPRootsListRequest | ElicitRequest):
            assert self._nursery is not None
            self._nursery.start_soon(self._answer, item)
            return
        if isinstance(item, ToolEvent):
            self.events.append(item)
            self._callback(self.on_event, item)
            return
        if isinstance(item, MCPServerPush):
            self.pushes.append(item)
            self._callback(self.on_push, item)
            return
        if isinstance(item, Ping):
            assert self._nursery is not None
            self._nursery.start_soon(self.send, self.stamp(Pong, req_id=item.id))
            return
        waiter = self._waiters.get(req_id) if req_id else None
        if waiter is not None:
            waiter[1].append(item)
            waiter[0].set()
        else:
            logger.debug("unsolicited %s", item.type)

    def _callback(self, callback: Handler | None, item: A2EMessage) -> None:
        if callback is None:
            return
        result = callback(item)
        if inspect.isawaitable(result):
            assert self._nursery is not None

            async def run() -> None:
                await result

            self._nursery.start_soon(run)

    def close(self) -> None:
        self.closed = True
        for event, _ in self._waiters.values():
            event.set()

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

    async def request(self, message: A2EMessage, *, timeout: float | None = 60.0) -> A2EMessage:
        """Send ``message`` and return the response whose ``req_id`` is its id.

        An ``error`` message raises :class:`A2ERequestError`.
        """
        event = trio.Event()
        slot: list[A2EMessage] = []
        self._waiters[message.id] = (event, slot)
        try:
            await self.send(message)
            with trio.fail_after(timeout if timeout is not None else math.inf):
                await event.wait()
        finally:
            del self._waiters[message.id]
        if not slot:
            raise ConnectionError("the bridge closed the connection")
        response = slot[0]
        if isinstance(response, A2EError):
            raise A2ERequestError(
                response.code, response.message, retryable=response.retryable, response=response
            )
        return response

    async def expect(self, message: A2EMessage, cls: type[R], *, timeout: float | None = 60.0) -> R:
        response = await self.request(message, timeout=timeout)
        if not isinstance(response, cls):
            raise TypeError(f"expected {cls.TYPE}, got {response.type}")
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
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: int = 30
    ) -> dict[str, Any]:
        """The ToolResult (``success``, ``data``, ``error``, ``error_code``, ``duration_ms``)."""
        response = await self.expect(
            self.stamp(
                ToolCallRequest, tool_name=name, arguments=dict(arguments or {}), timeout=timeout
            ),
            ToolCallResponse,
            timeout=timeout + 30,
        )
        return response.data

    async def list_resources(
        self, server_id: str = "", *, all_pages: bool = True
    ) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = ""
        while True:
            response = await self.expect(
                self.stamp(MCPResourceListRequest, server_id=server_id, cursor=cursor),
                MCPResourceListResponse,
            )
            items.extend(response.resources)
            cursor = response.next_cursor
            if not cursor or not all_pages:
                return items

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
        items: list[dict[str, Any]] = []
        cursor = ""
        while True:
            response = await self.expect(
                self.stamp(MCPPromptListRequest, server_id=server_id, cursor=cursor),
                MCPPromptListResponse,
            )
            items.extend(response.prompts)
            cursor = response.next_cursor
            if not cursor:
                return items

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
        with trio.fail_after(timeout):
            while True:
                for push in self.pushes:
                    if predicate(push):
                        return push
                await trio.sleep(0.01)


# Opening a client ---------------------------------------------------------------------------------


@asynccontextmanager
async def open_a2e_streams(
    send_stream: trio.abc.SendStream, receive_stream: trio.abc.ReceiveStream, **options: Any
) -> AsyncIterator[A2EClient]:
    """An :class:`A2EClient` over an NDJSON byte stream pair."""
    lock = trio.Lock()

    async def send(message: A2EMessage) -> None:
        async with lock:
            await send_stream.send_all(encode_line(message))

    client = A2EClient(send, **options)
    framer = A2EFramer()

    async def read() -> None:
        try:
            while True:
                try:
                    data = await receive_stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                for item in framer.feed(data):
                    client.feed(item)
                if not data:
                    return
        finally:
            client.close()

    with unwrap_single_exception():
        async with trio.open_nursery() as nursery:
            client._nursery = nursery
            nursery.start_soon(read)
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_a2e_stdio(
    command: Sequence[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    bridge_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shutdown_grace: float = 5.0,
    **options: Any,
) -> AsyncIterator[A2EClient]:
    """Start the bridge (``sansio-mcp bridge``, or ``command``) and talk A2E to it
    over its stdin/stdout.  ``config`` is written to a temporary file and given
    as ``--config``; ``bridge_args`` are more options (``--backend asyncio``)."""
    import json
    import tempfile

    config_path: str | None = None
    if command is None:
        command = [sys.executable, "-m", "sansio_mcp_cli", "bridge", *bridge_args]
        if config is not None:
            handle, config_path = tempfile.mkstemp(suffix=".json", prefix="a2e-bridge-")
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                json.dump(dict(config), f)
            command = [*command, "--config", config_path]
    child_env = safe_environment(os.environ, env)
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        env=child_env,
        cwd=cwd,
        start_new_session=os.name != "nt",
    )
    try:
        assert process.stdin and process.stdout and process.stderr
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain_stderr, process.stderr, "a2e-bridge")
            try:
                async with open_a2e_streams(process.stdin, process.stdout, **options) as client:
                    yield client
            finally:
                await stop_process(process, grace=shutdown_grace)
    finally:
        if process.returncode is None:
            await stop_process(process, grace=0)
        if config_path is not None:
            os.unlink(config_path)


@asynccontextmanager
async def open_a2e_ws(url: str, **options: Any) -> AsyncIterator[A2EClient]:
    """An :class:`A2EClient` over WebSocket (``ws://host:port/a2e``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a ws:// URL: {url!r}")
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    stream: trio.abc.Stream = await trio.open_tcp_stream(parts.hostname, port)
    if parts.scheme == "wss":
        stream = trio.SSLStream(
            stream, ssl.create_default_context(), server_hostname=parts.hostname
        )
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    framing = A2EWebSocket(client=True, host=parts.netloc, target=target)
    lock = trio.Lock()
    opened = trio.Event()

    async def flush() -> None:
        async with lock:
            data = framing.data_to_send()
            if data:
                await stream.send_all(data)

    async def send(message: A2EMessage) -> None:
        framing.send_text(encode(message))
        await flush()

    client = A2EClient(send, **options)

    finished = trio.Event()

    async def read() -> None:
        try:
            while not framing.closed:
                try:
                    data = await stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                for text in framing.receive_data(data):
                    client.feed(decode_text(text))
                if framing.open or framing.closed:
                    opened.set()
                await flush()
                if not data:
                    break
        finally:
            opened.set()
            finished.set()
            client.close()

    async with stream:
        with unwrap_single_exception():
            async with trio.open_nursery() as nursery:
                client._nursery = nursery
                nursery.start_soon(read)
                await flush()
                with trio.fail_after(10):
                    await opened.wait()
                if not framing.open:
                    raise ConnectionError(
                        f"the bridge refused the WebSocket (HTTP {framing.refused})"
                    )
                try:
                    yield client
                finally:
                    framing.close(1000, "agent done")
                    with trio.CancelScope(shield=True), trio.move_on_after(2):
                        await flush()
                        await finished.wait()  # the bridge's close reply
                    nursery.cancel_scope.cancel()
