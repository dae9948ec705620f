"""The legacy HTTP+SSE transport (2024-11-05), ours <-> ours: ``serve_sse`` with
``open_sse_client``, relative and absolute ``endpoint`` URLs, and the raw HTTP
rules (unknown session, wrong content type, stream close ends the session)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import trio

from sansio_mcp import ConnectionClosedError, MCPError, RemoteProtocolError
from sansio_mcp._http import HTTPRequest
from sansio_mcp._legacy_sse import LegacySSEServer
from sansio_mcp._streamable_http import Exchange
from sansio_mcp_apps.example_server import build_server
from trio_adapters.http_server import serve_router
from trio_adapters.sse import open_sse_client, serve_sse

from .helpers import (
    COUNTER_URI,
    EXAMPLE_TOOLS,
    INITIALIZED,
    NEWEST_HANDSHAKE,
    ROOT,
    Answers,
    RawHTTP,
    initialize,
    post,
    request,
    serving,
    texts,
)

BUDGET = 20


def sse_url(port: int, path: str = "/sse") -> str:
    return f"http://127.0.0.1:{port}{path}"


class AbsoluteEndpoint:
    """A LegacySSEServer whose ``endpoint`` event names an absolute URL (as some
    servers send), on this server's origin or on ``origin`` if given."""

    def __init__(self, inner: LegacySSEServer, origin: str | None = None) -> None:
        self.inner = inner
        self.origin = origin
        self.endpoints: list[str] = []

    def handle(self, request: HTTPRequest) -> Exchange:
        exchange = self.inner.handle(request)
        if request.path == self.inner.sse_path and exchange.status == 200:
            origin = self.origin or f"http://{request.headers['host']}"
            take = exchange.take

            def absolute() -> bytes:
                data = take()
                marker = f"data: {self.inner.message_path}".encode()
                if marker in data:
                    data = data.replace(marker, f"data: {origin}{self.inner.message_path}".encode())
                    line = data.split(b"data: ", 1)[1].split(b"\n", 1)[0]
                    self.endpoints.append(line.decode())
                    exchange.take = take  # type: ignore[method-assign]
                return data

            exchange.take = absolute  # type: ignore[method-assign]
        return exchange

    def flush(self, session: Any) -> None:
        self.inner.flush(session)

    def owns(self, session: Any) -> bool:
        return self.inner.owns(session)


async def test_ours_to_ours_over_legacy_sse() -> None:
    answers = Answers()
    with trio.fail_after(BUDGET):
        async with serving(serve_sse, build_server()) as port:
            async with open_sse_client(sse_url(port), handlers=answers.handlers()) as client:
                assert client.protocol_version == NEWEST_HANDSHAKE
                assert client.server_info["name"] == "sansio-mcp-example"
                assert {t["name"] for t in await client.list_tools()} == EXAMPLE_TOOLS
                added = await client.call_tool("add", {"a": 40, "b": 2})
                assert added["structuredContent"] == {"sum": 42}

                progress: list[float] = []
                slow = await client.call_tool(
                    "slow",
                    {"seconds": 0.1, "steps": 2},
                    on_progress=lambda p, t, m: progress.append(p),
                )
                assert texts(slow) == "done after 0.1 seconds in 2 steps"
                assert progress == [1, 2]

                # Server-to-client requests travel on the SSE stream; answers are POSTed.
                assert texts(await client.call_tool("sample", {"prompt": "hi?"})) == "forty-two"
                elicited = await client.call_tool("elicit", {"question": "why?"})
                assert elicited["structuredContent"]["answer"] == "answer to why?"
                roots = await client.call_tool("list_roots", {})
                assert roots["structuredContent"] == {"roots": [ROOT]}
                assert answers.sampled == ["hi?"] and answers.elicited == ["why?"]
                await client.ping()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", NEWEST_HANDSHAKE])
async def test_handshake_revisions_and_listen(version: str) -> None:
    """Any handshake revision works over HTTP+SSE; listen() follows another
    client's change on the session's one stream."""
    with trio.fail_after(BUDGET):
        async with serving(serve_sse, build_server()) as port:
            async with (
                open_sse_client(sse_url(port), protocol_version=version) as listener,
                open_sse_client(sse_url(port)) as actor,
            ):
                assert listener.protocol_version == version
                async with listener.listen(resource_uris=[COUNTER_URI]) as subscription:
                    assert texts(await actor.call_tool("increment", {})) == "1"
                    method, params = await subscription.__anext__()
                    assert (method, params["uri"]) == (
                        "notifications/resources/updated",
                        COUNTER_URI,
                    )


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
@pytest.mark.parametrize(
    ("sse_path", "message_path"),
    [("/sse", "/messages"), ("/rpc/v1/events", "/rpc/v1/messages/")],
)
async def test_relative_and_absolute_endpoint_urls(
    absolute: bool, sse_path: str, message_path: str
) -> None:
    server = build_server()
    machine = LegacySSEServer(server.create_session, sse_path=sse_path, message_path=message_path)
    router: Any = AbsoluteEndpoint(machine) if absolute else machine
    with trio.fail_after(BUDGET):
        async with serving(serve_router, server, router=router) as port:
            async with open_sse_client(sse_url(port, sse_path)) as client:
                assert texts(await client.call_tool("echo", {"message": "via endpoint"})) == (
                    "via endpoint"
                )
    if absolute:
        (endpoint,) = router.endpoints
        assert endpoint.startswith(f"http://127.0.0.1:{port}{message_path}?session_id=")


async def test_endpoint_on_another_origin_is_refused() -> None:
    """An endpoint event naming another origin must not redirect our POSTs there."""
    server = build_server()
    router = AbsoluteEndpoint(LegacySSEServer(server.create_session), origin="http://evil.example")
    with trio.fail_after(BUDGET):
        async with serving(serve_router, server, router=router) as port:
            with pytest.raises(RemoteProtocolError, match="origin"):
                async with open_sse_client(sse_url(port)):
                    pass  # pragma: no cover


async def open_raw_stream(conn: RawHTTP) -> str:
    """GET /sse on ``conn``; the endpoint (with session id) the first event names."""
    await conn.send_request("GET", "/sse", {"accept": "text/event-stream"})
    status, headers = await conn.head()
    assert status == 200 and headers["content-type"] == "text/event-stream"
    event = await conn.next_sse()
    assert event is not None and event.event == "endpoint"
    assert event.data.startswith("/messages?session_id=")
    return event.data


async def test_raw_http_rules() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_sse, build_server()) as port:
            async with RawHTTP.connect(port) as stream:
                endpoint = await open_raw_stream(stream)

                unknown = await post(port, initialize(), target="/messages?session_id=nope")
                assert unknown.status == 404
                missing = await post(port, initialize(), target="/messages")
                assert missing.status == 404
                wrong_type = await request(
                    port, "POST", endpoint, {"content-type": "text/plain"}, initialize()
                )
                assert wrong_type.status == 415
                garbage = await post(port, b"{nope", target=endpoint)
                assert garbage.status == 400 and garbage.json()["error"]["code"] == -32700
                assert (await request(port, "POST", "/sse", {}, b"")).status == 405
                assert (await request(port, "GET", "/messages", {})).status == 405
                assert (await request(port, "GET", "/elsewhere", {})).status == 404
                evil_host = await request(port, "GET", "/sse", {}, host="evil.example")
                assert evil_host.status == 403
                evil_origin = await post(
                    port, initialize(), {"origin": "http://evil.example"}, target=endpoint
                )
                assert evil_origin.status == 403

                # A good POST is accepted; its answer arrives on the stream.
                accepted = await post(port, initialize(), target=endpoint)
                assert accepted.status == 202
                answer = await stream.next_message()
                assert answer["id"] == 1 and answer["result"]["protocolVersion"] == NEWEST_HANDSHAKE
                assert (await post(port, INITIALIZED, target=endpoint)).status == 202
                listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
                assert (await post(port, listed, target=endpoint)).status == 202
                answer = await stream.next_message()
                assert {t["name"] for t in answer["result"]["tools"]} == EXAMPLE_TOOLS


async def test_closing_the_stream_ends_the_session() -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_sse, build_server()) as port:
            async with RawHTTP.connect(port) as stream:
                endpoint = await open_raw_stream(stream)
                assert (await post(port, initialize(), target=endpoint)).status == 202
                assert (await stream.next_message())["id"] == 1
            # The server notices the closed stream and forgets the session.
            while (await post(port, INITIALIZED, target=endpoint)).status != 404:
                await trio.sleep(0.01)
            # Others are unaffected.
            async with open_sse_client(sse_url(port)) as client:
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


async def test_server_going_away_fails_pending_calls() -> None:
    """When the server stops, the stream ends and the client's calls fail promptly
    with ConnectionClosedError instead of hanging."""
    with trio.fail_after(BUDGET):
        async with trio.open_nursery() as outer:
            server_scope = trio.CancelScope()

            async def run_server(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
                with server_scope:
                    await serve_sse(build_server(), port=0, task_status=task_status)

            port = await outer.start(run_server)
            async with open_sse_client(sse_url(port)) as client:
                assert texts(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
                async with trio.open_nursery() as nursery:

                    async def pending() -> None:
                        with pytest.raises((ConnectionClosedError, MCPError)):
                            await client.call_tool("slow", {"seconds": 30, "steps": 1})

                    nursery.start_soon(pending)
                    await trio.sleep(0.1)
                    server_scope.cancel()
                with pytest.raises((ConnectionClosedError, MCPError)):
                    await client.call_tool("add", {"a": 1, "b": 2})


def test_endpoint_event_is_valid_sse() -> None:
    """The endpoint event is the stream's first event, with the session in its query."""
    machine = LegacySSEServer(build_server().create_session, new_session_id=lambda: "abc123")
    exchange = machine.handle(HTTPRequest("GET", "/sse", {"host": "localhost"}))
    assert exchange.streaming and exchange.status == 200
    assert exchange.take() == b"event: endpoint\ndata: /messages?session_id=abc123\n\n"
    body = json.dumps(initialize()).encode()
    posted = machine.handle(
        HTTPRequest(
            "POST",
            "/messages?session_id=abc123",
            {"host": "localhost", "content-type": "application/json"},
            body,
        )
    )
    assert posted.status == 202


def test_a_stream_nobody_reads_stops_taking_posts() -> None:
    """Answers wait on the stream until the client reads it; past ``max_unread``
    bytes a POST gets 503 (retry later), so memory stays bounded, and once the
    stream is read the session goes on."""
    machine = LegacySSEServer(
        build_server().create_session, new_session_id=lambda: "s", max_unread=4096
    )
    stream = machine.handle(HTTPRequest("GET", "/sse", {"host": "localhost"}))
    headers = {"host": "localhost", "content-type": "application/json"}

    def post(message: dict[str, Any]) -> int:
        body = json.dumps(message).encode()
        return machine.handle(HTTPRequest("POST", "/messages?session_id=s", headers, body)).status

    assert post(initialize()) == 202
    statuses = [post({"jsonrpc": "2.0", "id": n, "method": "ping"}) for n in range(2, 200)]
    assert statuses[0] == 202 and statuses[-1] == 503
    assert stream.unsent <= 4096 + 200
    stream.take()  # the client reads
    assert post({"jsonrpc": "2.0", "id": 500, "method": "ping"}) == 202


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize("initialize_timeout", [30.0, None])
def test_a_stream_that_ends_before_naming_its_endpoint_fails_at_once(
    backend: str, initialize_timeout: float | None
) -> None:
    """No endpoint event, then the end of the stream: ConnectionClosedError at once,
    not a wait for the initialize timeout (or for ever, without one)."""
    import asyncio
    import socket
    import threading

    import asyncio_adapters.sse

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve_once() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Content-Length: 12\r\n\r\n: keepalive\n"
            )

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/sse"

    async def on_trio() -> None:
        with trio.fail_after(10), pytest.raises(ConnectionClosedError):
            async with open_sse_client(url, initialize_timeout=initialize_timeout):
                pass

    async def on_asyncio() -> None:
        async with asyncio.timeout(10):
            with pytest.raises(ConnectionClosedError):
                async with asyncio_adapters.sse.open_sse_client(
                    url, initialize_timeout=initialize_timeout
                ):
                    pass

    try:
        if backend == "trio":
            trio.run(on_trio)
        else:
            asyncio.run(on_asyncio())
    finally:
        thread.join(timeout=5)
        listener.close()


async def test_a_client_leaving_mid_write_is_not_logged_as_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The stream's client goes while its answers are being written: a normal
    end of a connection, not an error with a traceback in the server's log."""
    import socket

    def client(port: int) -> None:
        stream = socket.socket()
        stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stream.connect(("127.0.0.1", port))
        stream.sendall(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        seen = b""
        while b"\n\n" not in seen.split(b"session_id=", 1)[-1] or b"session_id=" not in seen:
            seen += stream.recv(4096)
        endpoint = b"/messages?session_id=" + seen.split(b"session_id=", 1)[1].split(b"\n")[0]
        opening = [initialize(0, "2024-11-05"), INITIALIZED]
        calls = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(1, 300)]
        with socket.create_connection(("127.0.0.1", port)) as posts:
            for message in opening + calls:
                body = json.dumps(message).encode()
                posts.sendall(
                    b"POST " + endpoint + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\n\r\n"
                    + body
                )
                answer = b""
                while b"Accepted" not in answer:
                    answer += posts.recv(4096)
        stream.close()  # with answers unread: the server is writing them

    with trio.fail_after(BUDGET):
        async with serving(serve_sse, build_server()) as port:
            await trio.to_thread.run_sync(client, port)
            await trio.sleep(0.5)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
