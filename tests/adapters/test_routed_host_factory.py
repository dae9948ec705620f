"""``RoutedOutput.factory``: the hosts of one HTTP service's sessions, made by one
constructor call each (a stateless request makes one), on both backends: each host has
a session, driver and handler table of its own; only what the service shares (its task
group, router, server and handlers' context) is shared."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from asyncio_adapters import http_server as asyncio_http
from asyncio_adapters.asgi import MCPApp
from asyncio_adapters.server import AsyncioContext
from bench.stateless_e2e import BASE, MODERN, _body, _call
from sansio_mcp.http import HTTPRequest
from sansio_mcp.runtime.hosting import streamable_http_router
from sansio_mcp_apps.example_server import build_server
from trio_adapters import http_server as trio_http
from trio_adapters.server import TrioContext


class _Group:
    """A task group that records what it is asked to run (nothing is run)."""

    def __init__(self) -> None:
        self.started: list[Any] = []

    def start_soon(self, fn: Any, *args: Any) -> None:
        self.started.append(fn)

    def start_cancellable(self, fn: Any, on_done: Any = None) -> Any:
        self.started.append(fn)
        return self

    def cancel(self) -> None:
        pass


HEADERS = {
    "host": "127.0.0.1",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


@pytest.mark.parametrize(
    ("host_class", "context"),
    [(asyncio_http._HTTPSessionHost, AsyncioContext), (trio_http._HTTPSessionHost, TrioContext)],
)
def test_factory_hosts_share_only_the_service(host_class: Any, context: Any) -> None:
    server = build_server()
    router = streamable_http_router(server)
    group = _Group()
    make = host_class.factory(group, router, server, context)
    requests = [HTTPRequest("POST", "/mcp", HEADERS, _body(i, True)) for i in (1, 2)]
    exchanges = [router.handle(request) for request in requests]
    hosts = [make(exchange.session) for exchange in exchanges]
    first, second = hosts
    assert type(first) is type(second) and isinstance(first, host_class)
    assert all(h.router is router and h._group is group for h in hosts)
    assert [h.session for h in hosts] == [e.session for e in exchanges]
    assert first.driver is not second.driver and first._handlers is not second._handlers
    assert first.driver.session is first.session
    assert group.started == []  # no timer (no deadline) and no flusher (output is routed)
    # Each host answers its own request with the server, its handlers' context made
    # on that host.
    seen: list[Any] = []
    begin = server.begin

    def recorded(ctx: Any) -> Any:
        seen.append(ctx)
        return begin(ctx)

    server.begin = recorded  # type: ignore[method-assign]
    for host, exchange in zip(hosts, exchanges, strict=True):
        host.driver.process_events()
        router.flush(exchange.session)
    assert [type(ctx) for ctx in seen] == [context, context]
    assert [ctx.host for ctx in seen] == hosts
    assert [ctx.session for ctx in seen] == [h.session for h in hosts]
    for i, exchange in enumerate(exchanges, start=1):
        assert b'"m%d"' % i in exchange.take()


def test_a_restarted_asgi_app_makes_its_hosts_in_its_new_task_group() -> None:
    async def main() -> list[int]:
        app = MCPApp(build_server())
        headers = [
            *BASE,
            (b"mcp-protocol-version", MODERN.encode()),
            (b"mcp-method", b"tools/call"),
            (b"mcp-name", b"echo"),
        ]
        statuses = []
        groups = []
        for i in range(2):
            reply = await _call(app, headers, _body(i, True))
            assert b'"m%d"' % i in reply["body"], reply
            statuses.append(reply["status"])
            groups.append(app._group)
            await app.aclose()
        assert groups[0] is not groups[1] and None not in groups
        return statuses

    assert asyncio.run(main()) == [200, 200]


@pytest.mark.parametrize(
    ("host_class", "context"),
    [(asyncio_http._HTTPSessionHost, AsyncioContext), (trio_http._HTTPSessionHost, TrioContext)],
)
def test_a_routed_host_attaches_as_its_class_says(host_class: Any, context: Any) -> None:
    """A routed host's ``attach`` honours its class: a timer at once where
    ``timer_on_demand`` is off, a flusher task where one is set (none by default)."""

    async def flusher() -> None:
        pass

    class Eager(host_class):
        timer_on_demand = False

    class Flushing(host_class):
        pass

    Flushing.flusher = staticmethod(flusher)
    server = build_server()
    router = streamable_http_router(server)
    started = {}
    for cls in (host_class, Eager, Flushing):
        group = _Group()
        exchange = router.handle(HTTPRequest("POST", "/mcp", HEADERS, _body(1, True)))
        host = cls.factory(group, router, server, context)(exchange.session)
        started[cls] = group.started
        assert (host._timer is not None) == (cls is Eager)
        exchange.disconnected()
    assert started[host_class] == []
    assert len(started[Eager]) == 1 and started[Eager][0].__name__ == "run_timer"
    assert started[Flushing] == [flusher]
