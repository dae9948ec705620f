"""A Context's primitives are its host's: each Context method reaches the
ContextHost it was given, and there is no Context without one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sansio_mcp import RequestId, RequestReceived
from sansio_mcp.runtime import Context, ContextHost, Server
from sansio_mcp.runtime._host import HostBase


class Flag:
    def set(self) -> None: ...

    async def wait(self) -> None: ...


class Handle:
    def cancel(self) -> None: ...


class RecordingHost:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.signal, self.handle = Flag(), Handle()

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        related_request: RequestId | None = None,
    ) -> dict[str, Any]:
        self.calls.append(("request", method, params, related_request))
        return {"asked": method}

    async def flush(self) -> None:
        self.calls.append(("flush",))

    async def sleep(self, seconds: float) -> None:
        self.calls.append(("sleep", seconds))

    def now(self) -> float:
        self.calls.append(("now",))
        return 42.5

    def new_signal(self) -> Flag:
        self.calls.append(("new_signal",))
        return self.signal

    def start_cancellable(self, fn: Callable[[], Awaitable[Any]]) -> Handle:
        self.calls.append(("start_cancellable", fn))
        return self.handle


class _NoOutput:
    flusher = None

    def schedule(self) -> None: ...

    def send_now(self) -> bool:
        return True

    async def flush(self) -> None: ...


def _context(host: ContextHost) -> Context:
    session = Server("ctx-host").create_session()
    event = RequestReceived(7, "tools/call", {"name": "t"}, None)
    return Context.for_request(event, session, now=0.0, host=host)


def test_every_primitive_is_the_hosts() -> None:
    host = RecordingHost()
    ctx = _context(host)

    async def fn() -> None: ...

    async def use() -> None:
        assert await ctx.send_request("roots/list", {"a": 1}) == {"asked": "roots/list"}
        await ctx.flush()
        await ctx.sleep(0.25)

    asyncio.run(use())
    assert ctx.clock() == 42.5
    assert ctx.new_signal() is host.signal
    assert ctx.start_background(fn) is host.handle
    assert host.calls == [
        ("request", "roots/list", {"a": 1}, 7),  # tied to the request that asked
        ("flush",),
        ("sleep", 0.25),
        ("now",),
        ("new_signal",),
        ("start_cancellable", fn),
    ]


def test_there_is_no_context_without_a_host() -> None:
    session = Server("ctx-host").create_session()
    event = RequestReceived(1, "ping", {}, None)
    with pytest.raises(TypeError, match="host"):
        Context.for_request(event, session, now=0.0)  # type: ignore[call-arg]


def test_the_session_hosts_are_context_hosts() -> None:
    # Statically checked where HostContext hands itself its host; kept here so a
    # renamed HostBase primitive fails a test, not only mypy.
    for name in ("request", "flush", "sleep", "now", "new_signal", "start_cancellable"):
        assert callable(getattr(HostBase, name)), name


def test_a_host_context_is_the_context_for_request_makes() -> None:
    """HostContext sets Context's fields itself (Context.__init__ inline, a context per
    request): every attribute Context.for_request gives a context, a HostContext of the
    same request has, equal (a field added to Context alone fails here)."""
    from sansio_mcp import RequestMeta
    from sansio_mcp.runtime.hosting import HostContext

    server = Server("ctx-host")
    session = server.create_session()
    session.auth = object()
    meta = RequestMeta("2026-07-28", {"roots": {}}, {"name": "c"}, "info")
    event = RequestReceived(7, "tools/call", {"name": "t", "_meta": {}}, "tok", meta)
    host = HostBase(session, handle_request=lambda event: {}, output=_NoOutput())
    made = HostContext(host, event, now=12.5)
    expected = Context.for_request(event, session, now=12.5, host=host)
    assert vars(made) == vars(expected)
    assert made.auth is session.auth and made.meta is meta and made.now == 12.5
