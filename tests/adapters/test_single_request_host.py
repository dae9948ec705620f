"""The host of a request served on a session of its own (every stateless request): a
:class:`SingleRequestHost`, one small object per request with no driver of its own,
its session fixed for life.  A handler's context kept after its request ended (user
code holding it) can act only on that request's session: nothing it does reaches
another request's stream, on either backend.  What the slim host does not do itself
(a request to the client, the rest of a host's API) a full host made for the same
session does, on first need."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from asyncio_adapters import http_server as asyncio_http
from asyncio_adapters.asgi import MCPApp
from asyncio_adapters.server import AsyncioContext
from bench.stateless_e2e import BASE, _call
from sansio_mcp import LocalProtocolError, ProtocolViolation, RemoteProtocolError
from sansio_mcp.http import HTTPRequest
from sansio_mcp.runtime import Context, Server
from sansio_mcp.runtime._http_service import FULL_HOST_FIELDS, HeldHandler, SingleRequestHost
from sansio_mcp.runtime.hosting import SessionHosts, streamable_http_router
from tests.adapters.test_routed_host_factory import _Group
from tests.transports.helpers import post_stateless, serving, stateless_headers, stateless_request
from trio_adapters import http_server as trio_http
from trio_adapters.server import TrioContext

BACKENDS = ["asyncio", "trio"]


class _Held:
    """What the test's server records: the contexts it keeps, the signals its ``hold``
    tool waits on, and a callback telling the test ``hold`` has started."""

    def __init__(self) -> None:
        self.kept: list[Context] = []
        self.holds: list[Any] = []
        self.started: Callable[[], None] = lambda: None


def _server(held: _Held) -> Server:
    server = Server("kept-contexts")

    @server.tool()
    def keep(ctx: Context) -> str:
        """Return at once, the context kept (as user code may)."""
        held.kept.append(ctx)
        return "kept"

    @server.tool()
    async def hold(ctx: Context) -> str:
        """Wait until the test lets it go."""
        signal = ctx.new_signal()
        held.holds.append(signal)
        held.started()
        await signal.wait()
        return "held"

    return server


async def _misuse(ctx: Context) -> None:
    """All a kept context may try once its request is over: progress (refused: its
    request is not open), a log message, a flush, and a request to the client or the
    rest of a full host's API (refused at once: a full host made now for the session
    would never be ended, and a request on it never answered)."""
    with pytest.raises(LocalProtocolError, match="no open request"):
        await ctx.report_progress(1, 2, "leak")
    await ctx.log("error", "leak")
    await ctx.flush()
    late = "this request is over: its session"
    async with ctx.host.backend.fail_after(10):  # (before the fix: never answered)
        with pytest.raises(LocalProtocolError, match=late):
            await ctx.host.request("ping")
    with pytest.raises(LocalProtocolError, match=late):
        ctx.host.notify("notifications/message", {"level": "error", "data": "leak"})
    assert type(ctx.host._full).__name__ == "_Ended"  # no full host was made
    await ctx.flush()


def _body(name: str, token: str) -> dict[str, Any]:
    message = stateless_request("tools/call", {"name": name, "arguments": {}})
    message["params"]["_meta"]["progressToken"] = token
    return message


def _messages(body: bytes, content_type: str) -> list[dict[str, Any]]:
    if "text/event-stream" in content_type:
        return [
            json.loads(line[5:])
            for line in body.decode().splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    return [json.loads(body)]


def _only_its_answer(messages: list[dict[str, Any]]) -> None:
    """The held request's stream carries its answer and nothing of the kept context."""
    assert [m.get("method") for m in messages if "method" in m] == [], messages
    assert len(messages) == 1 and messages[0]["result"]["content"][0]["text"] == "held"
    assert "leak" not in json.dumps(messages)


async def _asyncio_case(held: _Held) -> list[dict[str, Any]]:
    app = MCPApp(_server(held))
    started = asyncio.Event()
    held.started = started.set

    def headers(message: dict[str, Any]) -> list[tuple[bytes, bytes]]:
        mirrored = stateless_headers(message)
        return [*BASE, *((k.lower().encode(), v.encode()) for k, v in mirrored.items())]

    try:
        first = _body("keep", "a")
        reply = await _call(app, headers(first), json.dumps(first).encode())
        assert json.loads(reply["body"])["result"]["content"][0]["text"] == "kept"
        second = _body("hold", "b")
        waiting = asyncio.ensure_future(_call(app, headers(second), json.dumps(second).encode()))
        await started.wait()
        await _misuse(held.kept[0])
        held.holds[0].set()
        reply = await waiting
        content_type = reply["headers"][b"content-type"].decode()
        return _messages(reply["body"], content_type)
    finally:
        await app.aclose()


async def _trio_case(held: _Held) -> list[dict[str, Any]]:
    started = trio.Event()
    held.started = started.set
    async with serving(trio_http.serve_http, _server(held)) as port:
        reply = await post_stateless(port, _body("keep", "a"))
        assert reply.json()["result"]["content"][0]["text"] == "kept"
        out: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def second() -> None:
                out.append(await post_stateless(port, _body("hold", "b")))

            nursery.start_soon(second)
            await started.wait()
            await _misuse(held.kept[0])
            held.holds[0].set()
        return out[0].messages()  # type: ignore[no-any-return]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_kept_context_reaches_only_its_own_request(backend: str) -> None:
    held = _Held()
    run: Callable[[], Awaitable[list[dict[str, Any]]]] = lambda: (  # noqa: E731
        _asyncio_case(held) if backend == "asyncio" else _trio_case(held)
    )
    messages = asyncio.run(run()) if backend == "asyncio" else trio.run(run)
    _only_its_answer(messages)
    kept = held.kept[0]
    assert isinstance(kept.host, SingleRequestHost)
    assert kept.host.session is kept.session


def _exchange(router: Any, message: dict[str, Any]) -> Any:
    headers = {
        "host": "127.0.0.1",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **{k.lower(): v for k, v in stateless_headers(message).items()},
    }
    return router.handle(HTTPRequest("POST", "/mcp", headers, json.dumps(message).encode()))


@pytest.mark.parametrize(
    ("host_class", "context"),
    [(asyncio_http._HTTPSessionHost, AsyncioContext), (trio_http._HTTPSessionHost, TrioContext)],
)
def test_a_stateless_request_gets_a_slim_host_and_a_full_one_on_need(
    host_class: Any, context: Any
) -> None:
    held = _Held()
    server = _server(held)
    router = streamable_http_router(server)
    hosts = SessionHosts(server, router, host_class.factory(_Group(), router, server, context))
    exchange = _exchange(router, _body("keep", "a"))
    host = hosts.begin(exchange)
    assert isinstance(host, SingleRequestHost) and not hasattr(host, "__dict__")
    assert held.kept[0].host is host and host.session is exchange.session
    # Answered at once, by the host itself: no driver, no full host, not in the hub
    # (which could tell a session with no subscription nothing).
    assert host._full is None and not host.joined and len(server.hub) == 0
    assert json.loads(exchange.take())["result"]["content"][0]["text"] == "kept"
    # The rest of a host's API is a full host's, made for the same session on first
    # need, sharing the handler table; the session's events go to its driver from then on.
    driver = host.driver
    full = host._full
    assert isinstance(full, host_class) and full.session is host.session
    assert driver is full.driver and driver.session is host.session
    assert full._handlers is host._handlers
    hosts.finish(exchange)
    assert len(hosts) == 0


@pytest.mark.parametrize(
    ("host_class", "context"),
    [(asyncio_http._HTTPSessionHost, AsyncioContext), (trio_http._HTTPSessionHost, TrioContext)],
)
def test_the_slim_host_offers_everything_a_full_host_has(host_class: Any, context: Any) -> None:
    """Whatever a full host has (its class's names and what its constructors set) a slim
    host has too, its own or read from the full host made for the same session: a name
    added to a host (or to ``HostBase.__init__``, then to ``FULL_HOST_FIELDS``) is
    not lost to a stateless request's handler."""
    server = _server(_Held())
    router = streamable_http_router(server)
    hosts = SessionHosts(server, router, host_class.factory(_Group(), router, server, context))
    exchange = _exchange(router, _body("keep", "a"))
    host = hosts.begin(exchange)
    assert isinstance(host, SingleRequestHost) and host._full is None
    full = host.full()
    names = {name for name in dir(full) if not name.startswith("__")}
    assert set(vars(full)) <= names  # (what the constructors set is among them)
    assert set(FULL_HOST_FIELDS) <= names
    for name in sorted(names):
        assert hasattr(host, name), name
    # Read through the slim host, the full host's own (a method bound to it).
    assert host.driver is full.driver and host.router is full.router is router
    assert host.notify.__self__ is full and host.spawn_task.__self__ is full
    # What the slim host does itself stays its own.
    assert host.process_events.__self__ is host and host.schedule.__self__ is host
    hosts.finish(exchange)


@pytest.mark.parametrize(
    ("host_class", "context"),
    [(asyncio_http._HTTPSessionHost, AsyncioContext), (trio_http._HTTPSessionHost, TrioContext)],
)
def test_the_slim_host_of_a_users_host_class_reaches_what_its_init_sets(
    host_class: Any, context: Any
) -> None:
    """A user's host class may set attributes its class does not name: a stateless
    request's slim host reads them from the full host too (the built-in classes'
    slim hosts, whose names are all known, go without that fallback)."""

    class Tenanted(host_class):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.tenant = "acme"

    server = _server(_Held())
    router = streamable_http_router(server)
    hosts = SessionHosts(server, router, Tenanted.factory(_Group(), router, server, context))
    exchange = _exchange(router, _body("keep", "a"))
    host = hosts.begin(exchange)
    assert isinstance(host, SingleRequestHost) and host._full is None
    assert host.tenant == "acme" and host._full is not None
    with pytest.raises(AttributeError):
        host.no_such_name  # noqa: B018
    hosts.finish(exchange)
    plain = host_class.factory(_Group(), router, server, context).single
    assert "__getattr__" not in {name for klass in plain.__mro__ for name in vars(klass)}


@pytest.mark.parametrize(
    ("host_class", "context"),
    [(asyncio_http._HTTPSessionHost, AsyncioContext), (trio_http._HTTPSessionHost, TrioContext)],
)
def test_a_subscription_joins_the_hub_and_leaves_it(host_class: Any, context: Any) -> None:
    server = _server(_Held())
    router = streamable_http_router(server)
    hosts = SessionHosts(server, router, host_class.factory(_Group(), router, server, context))
    listen = stateless_request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    exchange = _exchange(router, listen)
    host = hosts.begin(exchange)
    assert isinstance(host, SingleRequestHost) and host.joined and len(server.hub) == 1
    # The hub reaches it: a list change goes out on its stream.
    assert server.hub.list_changed("tools") == 1
    assert b"notifications/tools/list_changed" in exchange.take()
    exchange.disconnected()
    hosts.finish(exchange)
    assert len(server.hub) == 0 and len(hosts) == 0


@pytest.mark.parametrize(
    ("host_class", "context"),
    [(asyncio_http._HTTPSessionHost, AsyncioContext), (trio_http._HTTPSessionHost, TrioContext)],
)
def test_the_full_host_taking_over_holds_the_handler_as_the_slim_one_would(
    host_class: Any, context: Any
) -> None:
    """An event the slim host leaves to the full host (here a protocol violation before
    the request) hands the rest of the queue over, the request among it: its handler is
    still held for the connection to run, not given a task of its own."""
    held = _Held()
    server = _server(held)
    router = streamable_http_router(server)
    group = _Group()
    hosts = SessionHosts(server, router, host_class.factory(group, router, server, context))
    exchange = _exchange(router, _body("hold", "a"))
    violation = ProtocolViolation(RemoteProtocolError("a test's violation"), refused=True)
    exchange.session.event_queue().appendleft(violation)
    handler = hosts.begin(exchange, hold=True)
    host = hosts.host_for(exchange.session)
    assert isinstance(host, SingleRequestHost) and host._full is not None
    assert isinstance(handler, HeldHandler) and group.started == []
    assert host.held is None and host._full.held is None and not host._full.holding
    assert host._handlers[handler.request_id] is handler
