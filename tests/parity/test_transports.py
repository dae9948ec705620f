"""Every network transport with the server on one backend and the client on the
other (and on the same): Streamable HTTP and WebSocket in both eras, legacy
HTTP+SSE in both eras (an explicit 2026-07-28); plus each transport's error paths on both
server backends.

The server runs in a thread with an event loop of its own (see
:func:`tests.parity.harness.serving`), so the client's backend is free; the
raw-request error paths use plain blocking sockets from the test thread.
"""

from __future__ import annotations

import json
import socket

import pytest

from sansio_mcp import ConnectionClosedError, HTTPStatusError, InvalidParams, MCPError

from .harness import (
    BACKEND_NAMES,
    BACKENDS,
    COUNTER_URI,
    EXAMPLE_TOOLS,
    INITIALIZE,
    POST_HEADERS,
    ROOT,
    Answers,
    Probe,
    cancellable,
    parity_server,
    raw_request,
    run,
    serving,
    serving_in_loop,
    texts,
    url_for,
    wait_until,
)

#: (transport, mode) cells.  Legacy HTTP+SSE carries 2026-07-28 too: that revision
#: deprecates the transport but keeps it working (``auto`` stays handshake-first there).
CELLS = [
    ("http", "legacy"),
    ("http", "modern"),
    ("sse", "legacy"),
    ("sse", "modern"),
    ("ws", "legacy"),
    ("ws", "modern"),
]
VERSIONS = {"legacy": "2025-11-25", "modern": "2026-07-28"}
BUDGET = 20.0


@pytest.fixture(params=CELLS, ids=[f"{t}-{m}" for t, m in CELLS])
def cell(request: pytest.FixtureRequest) -> tuple[str, str]:
    transport, mode = request.param
    return str(transport), str(mode)


# The feature matrix: (transport, mode) x (server backend, client backend) ------------------


def test_tools_progress_and_survey(cell: tuple[str, str], pair: tuple[str, str]) -> None:
    """tools/list, a structured result, progress, and a two-question survey (two
    server-to-client elicitations, or two MRTR rounds on 2026-07-28), plus sampling
    and roots."""
    transport, mode = cell
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]
    answers = Answers()

    async def body(port: int) -> None:
        async with backend.connect(
            [], url_for(transport, port), transport, mode=mode, handlers=answers.handlers()
        ) as client:
            assert client.protocol_version == VERSIONS[mode]
            assert {t["name"] for t in await client.list_tools()} == EXAMPLE_TOOLS | {"block"}
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert added["structuredContent"] == {"sum": 3}

            progress: list[tuple[float, float | None]] = []
            slow = await client.call_tool(
                "slow",
                {"seconds": 0.1, "steps": 2},
                on_progress=lambda p, t, m: progress.append((p, t)),
            )
            assert texts(slow) == "done after 0.1 seconds in 2 steps"
            assert progress == [(1, 2), (2, 2)]

            survey = await client.call_tool("survey", {"questions": ["a?", "b?"]})
            assert survey["structuredContent"] == {
                "answers": {"a?": "answer to a?", "b?": "answer to b?"},
                "completed": True,
            }
            assert texts(await client.call_tool("sample", {"prompt": "why?"})) == "forty-two"
            roots = await client.call_tool("list_roots", {})
            assert roots["structuredContent"] == {"roots": [ROOT]}

            with pytest.raises(InvalidParams, match="unknown tool"):
                await client.call_tool("no-such-tool", {})
            await client.ping()

    with serving(server_backend, transport, parity_server()) as port:
        run(client_backend, body, port, budget=BUDGET)
    assert answers.elicited == ["a?", "b?"]
    assert answers.sampled == ["why?"]
    assert answers.roots_asked == 1


def test_cancellation(cell: tuple[str, str], pair: tuple[str, str]) -> None:
    """Giving up on a call cancels the server's handler (notifications/cancelled, or
    the closed response stream on stateless HTTP); the session goes on."""
    transport, mode = cell
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]
    probe = Probe()

    async def body(port: int) -> None:
        async with backend.connect([], url_for(transport, port), transport, mode=mode) as client:
            async with cancellable(client_backend) as cancel:
                await client.call_tool("block", {"seconds": 30}, on_progress=lambda *_: cancel())
                raise AssertionError("the call was not cancelled")
            assert probe.started.is_set()
            assert client.session.pending_requests == frozenset()
            await wait_until(backend, probe.stopped.is_set)
            assert probe.cancelled and not probe.finished
            assert texts(await client.call_tool("echo", {"message": "after"})) == "after"

    with serving(server_backend, transport, parity_server(probe)) as port:
        run(client_backend, body, port, budget=BUDGET)


def test_listen(cell: tuple[str, str], pair: tuple[str, str]) -> None:
    """One client listens to the counter resource; another increments it."""
    transport, mode = cell
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]

    async def body(port: int) -> None:
        url = url_for(transport, port)
        async with (
            backend.connect([], url, transport, mode=mode) as listener,
            backend.connect([], url, transport, mode=mode) as actor,
        ):
            async with listener.listen(resource_uris=[COUNTER_URI]) as subscription:
                assert texts(await actor.call_tool("increment", {})) == "1"
                async with backend.fail_after(5):
                    method, params = await subscription.__anext__()
                assert (method, params["uri"]) == ("notifications/resources/updated", COUNTER_URI)

    with serving(server_backend, transport, parity_server()) as port:
        run(client_backend, body, port, budget=BUDGET)


def test_server_and_client_in_one_loop(cell: tuple[str, str], backend: str) -> None:
    """The way an application embeds both: server and client tasks in the same event
    loop (no threads); when the server is cancelled, nothing of it is left."""
    transport, mode = cell
    api = BACKENDS[backend]
    probe = Probe()
    answers = Answers()

    async def body() -> None:
        async with serving_in_loop(backend, transport, parity_server(probe)) as port:
            url = url_for(transport, port)
            async with api.connect([], url, transport, mode=mode, handlers=answers.handlers()) as c:
                survey = await c.call_tool("survey", {"questions": ["x?", "y?"]})
                assert survey["structuredContent"]["completed"] is True
                async with cancellable(backend) as cancel:
                    await c.call_tool("block", {"seconds": 30}, on_progress=lambda *_: cancel())
                await wait_until(api, probe.stopped.is_set)
                assert probe.cancelled
                assert texts(await c.call_tool("echo", {"message": "on"})) == "on"

    run(backend, body, budget=BUDGET)
    assert answers.elicited == ["x?", "y?"]


# Error paths ------------------------------------------------------------------------------


TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


@pytest.mark.parametrize("server_backend", BACKEND_NAMES)
def test_http_raw_error_paths(server_backend: str) -> None:
    with serving(server_backend, "http", parity_server()) as port:
        unknown = {**POST_HEADERS, "mcp-session-id": "f" * 32, "mcp-protocol-version": "2025-11-25"}
        status, _, _ = raw_request(port, "POST", "/mcp", unknown, TOOLS_LIST)
        assert status == 404
        status, _, _ = raw_request(
            port, "POST", "/mcp", {**POST_HEADERS, "host": "evil.example"}, INITIALIZE
        )
        assert status == 403
        status, headers, body = raw_request(port, "POST", "/mcp", POST_HEADERS, INITIALIZE)
        assert status == 200 and headers["mcp-session-id"]
        assert json.loads(body)["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("server_backend", BACKEND_NAMES)
def test_sse_raw_error_paths(server_backend: str) -> None:
    with serving(server_backend, "sse", parity_server()) as port:
        status, _, _ = raw_request(
            port, "POST", "/messages?session_id=nope", POST_HEADERS, INITIALIZE
        )
        assert status == 404
        status, _, _ = raw_request(port, "GET", "/sse", {"host": "evil.example"})
        assert status == 403


@pytest.mark.parametrize("server_backend", BACKEND_NAMES)
@pytest.mark.parametrize(
    ("extra", "expected"),
    [({}, 400), ({"sec-websocket-protocol": "graphql-ws"}, 400)],
    ids=["no-subprotocol", "other-subprotocol"],
)
def test_ws_refuses_handshake_without_mcp_subprotocol(
    server_backend: str, extra: dict[str, str], expected: int
) -> None:
    upgrade = {
        "connection": "Upgrade",
        "upgrade": "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        **extra,
    }
    with serving(server_backend, "ws", parity_server()) as port:
        status, _, _ = raw_request(port, "GET", "/mcp", upgrade)
        assert status == expected
        status, _, _ = raw_request(
            port, "GET", "/mcp", {**upgrade, "sec-websocket-protocol": "mcp"}
        )
        assert status == 101


def test_http_session_ended_is_a_typed_error(pair: tuple[str, str]) -> None:
    """The server forgets the client's session (DELETEd behind its back): the next call
    fails with ConnectionClosedError (HTTP 404 on a known session), on every pair."""
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]

    async def body(port: int) -> None:
        url = url_for("http", port)
        async with backend.connect([], url, "http", mode="legacy") as client:
            session_id = client._host.transport.session_id  # type: ignore[attr-defined]
            assert session_id
            headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
            status, _, _ = await backend.to_thread(raw_request, port, "DELETE", "/mcp", headers)
            assert status == 200
            with pytest.raises(ConnectionClosedError, match="HTTP 404"):
                await client.call_tool("echo", {"message": "anyone?"})

    with serving(server_backend, "http", parity_server()) as port:
        run(client_backend, body, port, budget=BUDGET)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("transport", "expected"),
    [("http", HTTPStatusError), ("sse", OSError), ("ws", OSError)],
)
def test_refused_connection_is_a_plain_error(
    backend: str, transport: str, expected: type[BaseException]
) -> None:
    """Nothing listening: the same error type on both backends, never an ExceptionGroup
    (regression: the asyncio clients raised their TaskGroup's group of one)."""
    api = BACKENDS[backend]
    url = url_for(transport, _closed_port())

    async def body() -> None:
        async with api.connect([], url, transport, mode="legacy", initialize_timeout=5):
            raise AssertionError("connected to nothing")

    with pytest.raises(expected) as excinfo:
        run(backend, body, budget=BUDGET)
    assert not isinstance(excinfo.value, BaseExceptionGroup)


@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
def test_error_inside_the_client_block_leaves_as_itself(backend: str, transport: str) -> None:
    """An MCPError escaping ``async with connect(...)`` is not wrapped in a group
    (regression: on asyncio it came out as an ExceptionGroup)."""
    api = BACKENDS[backend]

    async def body(port: int) -> None:
        async with api.connect([], url_for(transport, port), transport, mode="legacy") as c:
            await c.call_tool("no-such-tool", {})

    with serving(backend, transport, parity_server()) as port:
        with pytest.raises(MCPError) as excinfo:
            run(backend, body, port, budget=BUDGET)
    assert isinstance(excinfo.value, InvalidParams)
