"""A driver detached from its host (``HostBase.release``) calls back into nothing
more, but a notification handler's task started before that still runs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from helpers import initialize_params, line, make_pair, notification, request

from sansio_mcp import RequestReceived, ServerSession
from sansio_mcp._jsonrpc import RequestId
from sansio_mcp.runtime._driver import Driver


def _driver(
    server: ServerSession,
    spawn: Callable[[RequestId | None, Callable[[], Awaitable[None]]], None],
    **handlers: Any,
) -> Driver:
    """A driver of ``server`` whose tasks ``spawn`` takes; ``handlers`` as Driver's."""
    handlers.setdefault("handle_request", _no_request)
    handlers.setdefault("handle_notification", None)
    return Driver(server, spawn=spawn, cancel=lambda request_id: None, **handlers)


async def _no_request(event: Any) -> dict[str, Any]:
    raise AssertionError("no request here")


def test_a_notification_task_started_before_detach_still_runs() -> None:
    _client, server = make_pair()
    started: list[Callable[[], Awaitable[None]]] = []
    heard: list[tuple[str, dict[str, Any]]] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        heard.append((method, params))

    def spawn(request_id: RequestId | None, fn: Callable[[], Awaitable[None]]) -> None:
        started.append(fn)

    driver = _driver(server, spawn, handle_notification=on_notification)
    server.receive_data(line(notification("notifications/roots/list_changed")))
    driver.process_events()
    assert len(started) == 1
    driver.detach()
    asyncio.run(started[0]())  # the task runs after its host let the driver go
    assert heard == [("notifications/roots/list_changed", {})]


def test_a_session_that_refines_next_event_is_asked_for_each_event() -> None:
    """The driver pops the session's queue itself, unless a subclass refines
    ``next_event`` (to audit or filter): then every event goes through it."""
    seen: list[str] = []

    class Audited(ServerSession):
        def next_event(self) -> Any:
            event = super().next_event()
            seen.append(type(event).__name__)
            return event

    server = Audited(capabilities={"tools": {}})
    handled: list[Any] = []

    async def on_request(event: Any) -> dict[str, Any]:
        return {}

    def spawn(request_id: RequestId | None, fn: Callable[[], Awaitable[None]]) -> None:
        handled.append(request_id)

    driver = _driver(server, spawn, handle_request=on_request)
    server.receive_data(line(request(1, "initialize", initialize_params("2025-11-25"))))
    server.receive_data(line(notification("notifications/initialized")))
    server.receive_data(line(request(2, "tools/list")))
    driver.process_events()
    assert seen[-1] == "NEED_DATA" and RequestReceived.__name__ in seen
    assert handled == [2] and not server.event_queue()
