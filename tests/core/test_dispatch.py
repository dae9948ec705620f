"""How the driver answers a peer's request: at once when the handler needs no
waiting (plain-function tools, lists), in a task of its own otherwise."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from helpers import initialize_params, line, notification, out, request
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import NEED_DATA, MCPError, RequestReceived, ServerSession
from sansio_mcp.runtime import Context, Server, answer_request
from sansio_mcp.runtime._driver import Driver
from tests.stateless.helpers import HarnessHost

Spawned = list[tuple[Any, Callable[[], Awaitable[None]]]]


def _serving(server: Server) -> tuple[ServerSession, Driver, Spawned]:
    """A handshaken session whose driver records what it spawns instead of running it."""
    session = server.create_session()
    spawned: Spawned = []

    def handle_request(event: RequestReceived) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        return server.begin(Context.for_request(event, session, now=0.0, host=HarnessHost()))

    driver = Driver(
        session,
        handle_request=handle_request,
        handle_notification=None,
        spawn=lambda request_id, fn: spawned.append((request_id, fn)),
        cancel=lambda request_id: None,
    )
    session.receive_data(line(request(0, "initialize", initialize_params("2025-11-25"))))
    session.receive_data(line(notification("notifications/initialized")))
    driver.process_events()
    out(session)
    return session, driver, spawned


def _call(session: ServerSession, driver: Driver, id_: int, tool: str, arguments: Any) -> None:
    params = {"name": tool, "arguments": arguments}
    session.receive_data(line(request(id_, "tools/call", params)))
    driver.process_events()


def _server() -> Server:
    server = Server("dispatch")

    @server.tool()
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool()
    async def add_later(a: int, b: int) -> str:
        return str(a + b)

    async def _sum(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(input_schema={"type": "object"})
    def add_via_coroutine(a: int, b: int) -> Awaitable[str]:
        # A plain function that hands back an awaitable (an undecorated wrapper, say).
        return _sum(a, b)

    @server.tool()
    def broken() -> str:
        raise ValueError("no luck")

    @server.tool()
    def refuses() -> str:
        raise MCPError(-32001, "not today")

    @server.resource("mem://broken")
    def broken_resource() -> str:
        raise RuntimeError("disk on fire")

    return server


def test_a_plain_function_tool_is_answered_inside_process_events() -> None:
    session, driver, spawned = _serving(_server())
    _call(session, driver, 7, "add", {"a": 2, "b": 40})
    assert spawned == []
    [response] = out(session)
    assert response["id"] == 7
    assert response["result"]["content"] == [{"type": "text", "text": "42"}]
    assert session.open_requests == frozenset()


def test_lists_need_no_task() -> None:
    session, driver, spawned = _serving(_server())
    session.receive_data(line(request(3, "tools/list")))
    driver.process_events()
    assert spawned == []
    [response] = out(session)
    assert {t["name"] for t in response["result"]["tools"]} >= {"add", "add_later"}


def test_an_async_tool_runs_in_a_task_of_its_own() -> None:
    session, driver, spawned = _serving(_server())
    _call(session, driver, 8, "add_later", {"a": 1, "b": 2})
    assert [request_id for request_id, _ in spawned] == [8]
    assert out(session) == []  # nothing until the task has run
    asyncio.run(spawned[0][1]())
    [response] = out(session)
    assert response["id"] == 8 and response["result"]["content"][0]["text"] == "3"


def test_a_plain_function_returning_an_awaitable_is_awaited_in_a_task() -> None:
    session, driver, spawned = _serving(_server())
    _call(session, driver, 9, "add_via_coroutine", {"a": 20, "b": 22})
    assert [request_id for request_id, _ in spawned] == [9]
    asyncio.run(spawned[0][1]())
    [response] = out(session)
    assert response["result"]["content"][0]["text"] == "42"


def test_failures_are_answered_at_once_and_precisely(caplog: Any) -> None:
    session, driver, spawned = _serving(_server())
    _call(session, driver, 1, "broken", {})
    _call(session, driver, 2, "refuses", {})
    _call(session, driver, 3, "nonexistent", {})
    _call(session, driver, 4, "add", {"a": "two", "b": 2})
    with caplog.at_level(logging.ERROR, logger="sansio_mcp"):
        session.receive_data(line(request(5, "resources/read", {"uri": "mem://broken"})))
        driver.process_events()
    assert spawned == []
    by_id = {message["id"]: message for message in out(session)}
    # A failing tool is a result the model can read; protocol errors are errors.
    assert by_id[1]["result"]["isError"] is True
    assert by_id[1]["result"]["content"][0]["text"] == "ValueError: no luck"
    assert by_id[2]["error"] == {"code": -32001, "message": "not today"}
    assert by_id[3]["error"]["code"] == -32602
    assert by_id[4]["result"]["isError"] is True
    assert "invalid arguments for add" in by_id[4]["result"]["content"][0]["text"]
    assert by_id[5]["error"]["code"] == -32603
    assert "disk on fire" in by_id[5]["error"]["message"]
    assert "handler for resources/read failed" in caplog.text
    assert session.open_requests == frozenset()


# The same calls give the same answers whether the tools are plain functions
# (answered inline) or async ones (answered from a task).

_CALLS = st.lists(
    st.tuples(
        st.sampled_from(["ok", "raises", "refuses", "missing"]),
        st.one_of(st.integers(-5, 5), st.text(max_size=3)),
    ),
    max_size=8,
)


def _twin_servers() -> tuple[Server, Server]:
    plain, coroutine = Server("plain"), Server("async")

    def ok(n: int) -> dict[str, Any]:
        return {"double": n * 2}

    def raises(n: int) -> str:
        raise ArithmeticError(f"cannot {n}")

    def refuses(n: int) -> str:
        raise MCPError(-32000 - abs(n), f"refused {n}")

    for impl in (ok, raises, refuses):
        plain.tool(impl.__name__)(impl)

        def make(f: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
            async def wrapped(n: int) -> Any:
                return f(n)

            return wrapped

        coroutine.tool(impl.__name__)(make(impl))
    return plain, coroutine


@settings(max_examples=60, deadline=None)
@given(_CALLS)
def test_inline_and_task_answers_are_the_same(calls: list[tuple[str, Any]]) -> None:
    answers = []
    for server in _twin_servers():
        session, driver, spawned = _serving(server)
        for i, (tool, n) in enumerate(calls):
            _call(session, driver, i + 1, tool, {"n": n})
        for _, fn in spawned:
            asyncio.run(fn())
        answers.append(sorted(out(session), key=lambda m: m["id"]))
    assert answers[0] == answers[1]
    assert [m["id"] for m in answers[0]] == list(range(1, len(calls) + 1))


# answer_request: the same dispatch for a transport that drives the session itself.


def _handshaken(server: Server) -> ServerSession:
    session = server.create_session()
    session.receive_data(line(request(0, "initialize", initialize_params("2025-11-25"))))
    session.receive_data(line(notification("notifications/initialized")))
    while session.next_event() is not NEED_DATA:
        pass
    out(session)
    return session


def _answer(server: Server, session: ServerSession, id_: int, tool: str, arguments: Any) -> Any:
    session.receive_data(line(request(id_, "tools/call", {"name": tool, "arguments": arguments})))
    event = session.next_event()
    assert isinstance(event, RequestReceived)
    return answer_request(server, Context.for_request(event, session, now=0.0, host=HarnessHost()))


def test_answer_request_answers_plain_handlers_at_once_and_async_ones_when_awaited() -> None:
    server = _server()
    session = _handshaken(server)
    assert _answer(server, session, 1, "add", {"a": 2, "b": 40}) is None
    [response] = out(session)
    assert response == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": "42"}], "isError": False},
    }
    pending = _answer(server, session, 2, "add_later", {"a": 1, "b": 2})
    assert pending is not None and out(session) == []

    async def finish() -> None:
        await pending

    asyncio.run(finish())
    [response] = out(session)
    assert response["id"] == 2 and response["result"]["content"][0]["text"] == "3"


def test_answer_request_answers_errors_instead_of_raising(caplog: Any) -> None:
    server = _server()
    session = _handshaken(server)
    assert _answer(server, session, 1, "nonexistent", {}) is None
    assert _answer(server, session, 2, "refuses", {}) is None
    with caplog.at_level(logging.ERROR, logger="sansio_mcp"):
        session.receive_data(line(request(3, "resources/read", {"uri": "mem://broken"})))
        event = session.next_event()
        assert isinstance(event, RequestReceived)
        assert (
            answer_request(server, Context.for_request(event, session, now=0.0, host=HarnessHost()))
            is None
        )
    by_id = {message["id"]: message for message in out(session)}
    assert by_id[1]["error"]["code"] == -32602
    assert by_id[2]["error"] == {"code": -32001, "message": "not today"}
    assert by_id[3]["error"]["code"] == -32603
    assert "handler for resources/read failed" in caplog.text
    assert session.open_requests == frozenset()
