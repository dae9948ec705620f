"""The Trio MCP client: ``open_client`` over any stream pair, ``open_stdio_client``
over a server subprocess."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from sansio_mcp import LOG_LEVELS, ClientSession, LocalProtocolError, RequestReceived
from sansio_mcp._cache import ResultCache
from sansio_mcp._client import ClientAPI, ClientHandlers, ProgressCallback, new_client_session
from sansio_mcp._driver import SubscriptionSink
from sansio_mcp._versions import ALL_REVISIONS

from ._process import PIPE, drain_stderr, safe_environment, stop_process
from ._runner import TrioRunner, TrioSessionHost
from ._util import unwrap_single_exception

__all__ = ["Client", "ClientHandlers", "Subscription", "open_client", "open_stdio_client"]


class Client(ClientAPI):
    """A connected, initialized MCP client (see :class:`ClientAPI` for the calls)."""

    def __init__(
        self, runner: TrioSessionHost, session: ClientSession, handlers: ClientHandlers
    ) -> None:
        self._runner = runner
        self.session = session
        self.handlers = handlers
        if session.is_modern:
            self.cache = ResultCache()

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

    async def send_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        return await self._runner.request(method, params, timeout=timeout, on_progress=on_progress)

    def clock(self) -> float:
        return trio.current_time()

    async def send_roots_list_changed(self) -> None:
        self.session.send_roots_list_changed()
        await self._runner.flush()

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check the server is alive.

        2026-07-28 has no ping; there the check is a ``server/discover``.
        """
        if self.session.is_modern:
            await self.request("server/discover", None, timeout=timeout)
            return
        await super().ping(timeout=timeout)

    async def subscribe(self, uri: str) -> None:
        if self.session.is_modern:
            raise LocalProtocolError(
                "resources/subscribe does not exist in 2026-07-28: "
                "use Client.listen(resource_uris=[...])"
            )
        await super().subscribe(uri)

    async def set_logging_level(self, level: str) -> None:
        """Ask for log messages at ``level`` and above.

        On a stateless (2026-07-28) server the level travels in every
        request's ``_meta``; on a handshake session it is ``logging/setLevel``.
        """
        if self.session.is_modern:
            if level not in LOG_LEVELS:
                raise ValueError(f"unknown log level {level!r}")
            self.session.log_level = level
            return
        await super().set_logging_level(level)

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_uris: Sequence[str] = (),
        buffer: int = 1000,
    ) -> AsyncIterator[Subscription]:
        """Follow list changes and resource updates as an async iterator.

        On 2026-07-28 this is one ``subscriptions/listen`` request, ended with
        ``notifications/cancelled`` on exit; on a handshake session it
        subscribes to ``resource_uris`` and follows the session's
        notifications.  Iterate the yielded :class:`Subscription` for
        ``(method, params)`` pairs.
        """
        wanted = {
            "notifications/tools/list_changed": tools_list_changed,
            "notifications/prompts/list_changed": prompts_list_changed,
            "notifications/resources/list_changed": resources_list_changed,
        }
        uris = list(resource_uris)
        subscription = Subscription(buffer)
        driver = self._runner.driver
        if self.session.is_modern:
            filter_: dict[str, Any] = {}
            for key, on in (
                ("toolsListChanged", tools_list_changed),
                ("promptsListChanged", prompts_list_changed),
                ("resourcesListChanged", resources_list_changed),
            ):
                if on:
                    filter_[key] = True
            if uris:
                filter_["resourceSubscriptions"] = uris
            listen_id = self.session.send_request(
                "subscriptions/listen", {"notifications": filter_}
            )
            driver.subscriptions[listen_id] = subscription
            try:
                await self._runner.flush()
                await subscription.wait_acknowledged()
                yield subscription
            finally:
                driver.subscriptions.pop(listen_id, None)
                if listen_id in self.session.pending_requests:
                    self.session.cancel(listen_id, "the client stopped listening")
                    with trio.CancelScope(shield=True):
                        await self._runner.flush()
            return

        def wants(method: str, params: dict[str, Any]) -> bool:
            if method == "notifications/resources/updated":
                return params.get("uri") in uris
            return wanted.get(method, False)

        for uri in uris:
            await self.subscribe(uri)
        entry = (wants, subscription)
        driver.session_sinks.append(entry)
        subscription.acknowledged(
            {
                k: v
                for k, v in {
                    "toolsListChanged": tools_list_changed,
                    "promptsListChanged": prompts_list_changed,
                    "resourcesListChanged": resources_list_changed,
                }.items()
                if v
            }
            | ({"resourceSubscriptions": uris} if uris else {})
        )
        try:
            yield subscription
        finally:
            driver.session_sinks.remove(entry)
            with trio.CancelScope(shield=True):
                for uri in uris:
                    if not driver.closed:
                        await self.unsubscribe(uri)


class Subscription(SubscriptionSink):
    """Notifications of one :meth:`Client.listen`, as an async iterator of
    ``(method, params)``; ``acknowledged_filter`` says what the server agreed to send."""

    def __init__(self, buffer: int) -> None:
        self._send, self._receive = trio.open_memory_channel[tuple[str, dict[str, Any]]](buffer)
        self._acknowledged = trio.Event()
        self.acknowledged_filter: dict[str, Any] = {}
        self.dropped = 0

    def acknowledged(self, notifications: dict[str, Any]) -> None:
        self.acknowledged_filter = notifications
        self._acknowledged.set()

    def deliver(self, method: str, params: dict[str, Any]) -> None:
        try:
            self._send.send_nowait((method, params))
        except trio.WouldBlock:
            # A consumer this far behind has lost the thread anyway; count, don't block I/O.
            self.dropped += 1

    async def wait_acknowledged(self) -> None:
        await self._acknowledged.wait()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> tuple[str, dict[str, Any]]:
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


async def start_client(
    host: TrioSessionHost,
    session: ClientSession,
    handlers: ClientHandlers,
    initialize_timeout: float | None,
) -> Client:
    """Run the session's start (handshake or discover) and wrap it in a :class:`Client`."""
    request_id = session.start(now=trio.current_time(), timeout=initialize_timeout)
    await host.wait_for(request_id, timed=initialize_timeout is not None)
    client = Client(host, session, handlers)
    host.driver.observe_notification = client.notification_seen
    return client


@asynccontextmanager
async def open_client(
    send_stream: trio.abc.SendStream,
    receive_stream: trio.abc.ReceiveStream,
    *,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str | None = None,
    mode: str = "auto",
    supported_versions: Sequence[str] = ALL_REVISIONS,
    initialize_timeout: float | None = 30.0,
    max_input_rounds: int = 10,
) -> AsyncIterator[Client]:
    """Connect over a stream pair, start the session, and yield a :class:`Client`.

    ``mode`` is ``"auto"`` (probe ``server/discover``, fall back to the
    handshake), ``"modern"`` or ``"legacy"``; a ``protocol_version`` implies
    the mode of its era.  ``max_input_rounds`` bounds how many times one call
    answers ``input_required`` before failing with ``InputRoundsExceeded``.
    """
    handlers = handlers or ClientHandlers()
    session = new_client_session(
        handlers,
        client_info=client_info,
        supported_versions=supported_versions,
        protocol_version=protocol_version,
        mode=mode,
        max_input_rounds=max_input_rounds,
    )

    async def handle_request(event: RequestReceived) -> dict[str, Any]:
        return await handlers.answer(event.method, event.params)

    runner = TrioRunner(
        session,
        send_stream,
        receive_stream,
        handle_request=handle_request,
        handle_notification=handlers.notify,
        answer_input=handlers.answer,
    )
    with unwrap_single_exception():
        async with trio.open_nursery() as nursery:
            try:
                await nursery.start(runner.run)
                client = await start_client(runner, session, handlers, initialize_timeout)
                yield client
            finally:
                nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str | None = None,
    mode: str = "auto",
    supported_versions: Sequence[str] = ALL_REVISIONS,
    initialize_timeout: float | None = 30.0,
    max_input_rounds: int = 10,
    shutdown_grace: float = 2.0,
) -> AsyncIterator[Client]:
    """Start ``command`` as an MCP server and connect to it over stdio.

    The child gets a minimal environment (PATH, HOME, …) plus ``env``, not
    the whole parent environment, unless ``inherit_env`` is set.  Its stderr
    is always drained to logging.  On exit its stdin is closed, then it is
    sent SIGTERM, then SIGKILL, each after ``shutdown_grace`` seconds.
    """
    if not command:
        raise ValueError("command must not be empty")
    child_env = dict(os.environ) if inherit_env else safe_environment()
    child_env.update(env or {})
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
        with unwrap_single_exception():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain_stderr, process.stderr, os.path.basename(command[0]))
                try:
                    async with open_client(
                        process.stdin,
                        process.stdout,
                        handlers=handlers,
                        client_info=client_info,
                        protocol_version=protocol_version,
                        mode=mode,
                        supported_versions=supported_versions,
                        initialize_timeout=initialize_timeout,
                        max_input_rounds=max_input_rounds,
                    ) as client:
                        yield client
                finally:
                    await stop_process(process, grace=shutdown_grace)
    finally:
        if process.returncode is None:
            await stop_process(process, grace=0)
