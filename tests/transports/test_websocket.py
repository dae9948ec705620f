"""MCP over WebSocket (subprotocol ``mcp``): ours <-> ours in both eras, the
third-party ``websockets`` client speaking raw JSON-RPC frames to ``serve_ws``,
and the framing rules (subprotocol required, binary -> 1003, oversized ->
1009, ping/pong).

``websockets`` is asyncio/threads based: its sync client runs in a worker
thread (``trio.to_thread``) against the Trio server in the test's nursery,
every call with its own timeout.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
import trio
import wsproto
import wsproto.events as ws
from websockets.exceptions import ConnectionClosedError, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from sansio_mcp_apps.example_server import build_server
from trio_adapters.websocket import open_ws_client, serve_ws

from .helpers import (
    COUNTER_URI,
    EXAMPLE_TOOLS,
    INITIALIZED,
    NEWEST_HANDSHAKE,
    ROOT,
    STATELESS,
    Answers,
    initialize,
    serving,
    stateless_request,
    texts,
)

BUDGET = 20
T = TypeVar("T")


def ws_url(port: int, path: str = "/mcp") -> str:
    return f"ws://127.0.0.1:{port}{path}"


async def in_thread(fn: Callable[[], T]) -> T:
    return await trio.to_thread.run_sync(fn)


def third_party(port: int, **options: Any) -> ClientConnection:
    """A ``websockets`` client connection (subprotocol ``mcp`` unless overridden)."""
    options.setdefault("subprotocols", ["mcp"])
    path = options.pop("path", "/mcp")
    return connect(ws_url(port, path), open_timeout=5, close_timeout=2, proxy=None, **options)


def exchange(conn: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    """Send one request; the response with its id (notifications before it skipped)."""
    conn.send(json.dumps(message))
    while True:
        reply = json.loads(conn.recv(timeout=5))
        if reply.get("id") == message["id"] and "method" not in reply:
            return reply  # type: ignore[no-any-return]


# Ours <-> ours -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("legacy", NEWEST_HANDSHAKE), ("modern", STATELESS), ("auto", STATELESS)],
)
async def test_ours_to_ours(mode: str, expected: str) -> None:
    answers = Answers()
    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server()) as port:
            async with open_ws_client(ws_url(port), mode=mode, handlers=answers.handlers()) as c:
                assert c.protocol_version == expected
                assert {t["name"] for t in await c.list_tools()} == EXAMPLE_TOOLS
                assert (await c.call_tool("add", {"a": 1, "b": 2}))["structuredContent"] == {
                    "sum": 3
                }
                progress: list[float] = []
                await c.call_tool(
                    "slow",
                    {"seconds": 0.1, "steps": 2},
                    on_progress=lambda p, t, m: progress.append(p),
                )
                assert progress == [1, 2]
                assert texts(await c.call_tool("sample", {"prompt": "ws?"})) == "forty-two"
                survey = await c.call_tool("survey", {"questions": ["a?", "b?"]})
                assert survey["structuredContent"]["completed"] is True
                roots = await c.call_tool("list_roots", {})
                assert roots["structuredContent"] == {"roots": [ROOT]}
                assert answers.elicited == ["a?", "b?"] and answers.sampled == ["ws?"]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_listen_over_websocket(mode: str) -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server()) as port:
            async with (
                open_ws_client(ws_url(port), mode=mode) as listener,
                open_ws_client(ws_url(port), mode=mode) as actor,
            ):
                async with listener.listen(resource_uris=[COUNTER_URI]) as subscription:
                    assert texts(await actor.call_tool("increment", {})) == "1"
                    method, params = await subscription.__anext__()
                    assert (method, params["uri"]) == (
                        "notifications/resources/updated",
                        COUNTER_URI,
                    )


async def test_cancelling_a_call_over_websocket() -> None:
    from .helpers import Probe, probe_server

    probe = Probe()
    with trio.fail_after(BUDGET):
        async with serving(serve_ws, probe_server(probe)) as port:
            async with open_ws_client(ws_url(port), mode="modern") as client:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "block", {"seconds": 60})
                    await probe.started.wait()
                    nursery.cancel_scope.cancel()
                await probe.stopped.wait()
                assert probe.cancelled
                assert texts(await client.call_tool("add", {"a": 2, "b": 2})) == "4"


# The websockets library against serve_ws --------------------------------------------------


async def test_websockets_client_raw_json_rpc() -> None:
    """initialize / tools/list / tools/call as raw text frames, then a 2026-07-28
    request on a second connection, from an independent WebSocket implementation."""

    def handshake_era(port: int) -> None:
        with third_party(port) as conn:
            assert conn.subprotocol == "mcp"
            init = exchange(conn, initialize(1))
            assert init["result"]["protocolVersion"] == NEWEST_HANDSHAKE
            assert init["result"]["serverInfo"]["name"] == "sansio-mcp-example"
            conn.send(json.dumps(INITIALIZED))
            listed = exchange(conn, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert {t["name"] for t in listed["result"]["tools"]} == EXAMPLE_TOOLS
            call = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 2, "b": 40}},
            }
            assert exchange(conn, call)["result"]["structuredContent"] == {"sum": 42}
            # A message split over several frames is one message.
            conn.send(iter(['{"jsonrpc": "2.0", ', '"id": 4, ', '"method": "tools/list"}']))
            assert json.loads(conn.recv(timeout=5))["id"] == 4
            # Unparseable text is answered with a parse error; the connection stays up.
            conn.send("{not json")
            assert json.loads(conn.recv(timeout=5))["error"]["code"] == -32700
            assert exchange(conn, {"jsonrpc": "2.0", "id": 5, "method": "ping"})["result"] == {}

    def stateless(port: int) -> None:
        with third_party(port) as conn:
            discovered = exchange(conn, stateless_request("server/discover", request_id=1))
            assert STATELESS in discovered["result"]["supportedVersions"]
            call = stateless_request(
                "tools/call", {"name": "echo", "arguments": {"message": "m"}}, request_id=2
            )
            assert exchange(conn, call)["result"]["content"][0]["text"] == "m"

    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server()) as port:
            await in_thread(lambda: handshake_era(port))
            await in_thread(lambda: stateless(port))


@pytest.mark.parametrize(
    ("options", "status"),
    [
        pytest.param({"subprotocols": None}, 400, id="no-subprotocol"),
        pytest.param({"subprotocols": ["graphql-ws"]}, 400, id="other-subprotocol"),
        pytest.param({"path": "/elsewhere"}, 404, id="wrong-path"),
        pytest.param({"origin": "http://evil.example"}, 403, id="foreign-origin"),
    ],
)
async def test_handshake_refusals(options: dict[str, Any], status: int) -> None:
    def attempt(port: int) -> int:
        try:
            with third_party(port, **options):
                pass
        except InvalidStatus as exc:
            return exc.response.status_code
        return 101

    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server()) as port:
            assert await in_thread(lambda: attempt(port)) == status
            # Refused handshakes leave the server serving.
            async with open_ws_client(ws_url(port)) as client:
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


async def test_allowed_origin_is_accepted() -> None:
    def attempt(port: int) -> str | None:
        with third_party(port, origin="https://app.example") as conn:
            return conn.subprotocol

    with trio.fail_after(BUDGET):
        async with serving(
            serve_ws, build_server(), allowed_origins=["https://app.example"]
        ) as port:
            assert await in_thread(lambda: attempt(port)) == "mcp"


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        pytest.param(b"\x00binary", 1003, id="binary-frame"),
        pytest.param("x" * 2048, 1009, id="oversized-message"),
    ],
)
async def test_framing_violations_close_the_connection(payload: str | bytes, code: int) -> None:
    def attempt(port: int) -> int:
        with third_party(port) as conn:
            assert exchange(conn, initialize(1))["result"]
            conn.send(payload)
            try:
                conn.recv(timeout=5)
            except ConnectionClosedError as exc:
                assert exc.rcvd is not None
                return exc.rcvd.code
        return 0

    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server(), max_message_size=1024) as port:
            assert await in_thread(lambda: attempt(port)) == code
            async with open_ws_client(ws_url(port)) as client:
                assert texts(await client.call_tool("echo", {"message": "x" * 500})) == "x" * 500


async def test_client_ping_is_answered() -> None:
    def attempt(port: int) -> bool:
        with third_party(port, ping_interval=None) as conn:
            pong = conn.ping(b"are you there")
            return pong.wait(timeout=5)

    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server()) as port:
            assert await in_thread(lambda: attempt(port)) is True


async def test_server_keepalive_pings() -> None:
    """``ping_interval``: the server pings an idle connection (seen with wsproto)."""
    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server(), ping_interval=0.1) as port:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            async with stream:
                client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
                await stream.send_all(
                    client.send(
                        ws.Request(host=f"127.0.0.1:{port}", target="/mcp", subprotocols=["mcp"])
                    )
                )
                pings = 0
                accepted = False
                while pings < 2:
                    client.receive_data(await stream.receive_some(65536))
                    for event in client.events():
                        if isinstance(event, ws.AcceptConnection):
                            accepted = event.subprotocol == "mcp"
                        elif isinstance(event, ws.Ping):
                            pings += 1
                            await stream.send_all(client.send(event.response()))
                assert accepted
                await stream.send_all(client.send(ws.CloseConnection(code=1000)))


_GOOD_HANDSHAKE = (
    b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: mcp\r\n\r\n"
)


def _raw_reply(port: int, raw: bytes) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
        return data


def _with_origin(origin: bytes) -> bytes:
    return _GOOD_HANDSHAKE.replace(b"\r\n\r\n", b"\r\nOrigin: " + origin + b"\r\n\r\n")


_NO_KEY = _GOOD_HANDSHAKE.replace(b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", b"")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(_NO_KEY, id="no-key"),
        pytest.param(_GOOD_HANDSHAKE.replace(b"GET", b"POST"), id="post"),
        pytest.param(_GOOD_HANDSHAKE.replace(b"Host: 127.0.0.1", b"Host: [::1"), id="bad-host"),
        pytest.param(_with_origin(b"http://[zz"), id="bad-origin"),
        pytest.param(_with_origin(b"http://\xff\xfe"), id="latin-1-origin"),
        pytest.param(_GOOD_HANDSHAKE[:40], id="half-a-handshake"),
        pytest.param(b"\x16\x03\x01garbage\r\n\r\n", id="not-http"),
    ],
)
async def test_a_broken_handshake_gets_an_http_error_and_the_server_goes_on(raw: bytes) -> None:
    with trio.fail_after(BUDGET):
        async with serving(serve_ws, build_server()) as port:
            reply = await in_thread(lambda: _raw_reply(port, raw))
            assert reply == b"" or reply.startswith((b"HTTP/1.1 400", b"HTTP/1.1 403")), reply
            async with open_ws_client(ws_url(port)) as client:
                assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        pytest.param(b"\x81\x81\x00\x00\x00\x00\xff", 1007, id="invalid-utf8"),
        pytest.param(b"\x81\x01x", 1002, id="unmasked"),
        pytest.param(b"\x83\x80\x00\x00\x00\x00", 1002, id="reserved-opcode"),
    ],
)
def test_broken_frames_are_answered_with_a_close_frame(frame: bytes, code: int) -> None:
    from sansio_mcp import ServerSession
    from sansio_mcp._websocket import WebSocketFraming

    framing = WebSocketFraming(ServerSession(), client=False)
    framing.receive_data(_GOOD_HANDSHAKE)
    assert framing.data_to_send().startswith(b"HTTP/1.1 101")
    framing.receive_data(frame)
    assert framing.closed and framing.close_reason is not None
    assert framing.close_reason[0] == code
    sent = framing.data_to_send()
    assert sent[:1] == b"\x88" and int.from_bytes(sent[2:4], "big") == code


# The same machine under A2E (subprotocol ``a2e``, optional) ------------------------------


def _a2e_handshake(*lines: bytes) -> bytes:
    head = _GOOD_HANDSHAKE.replace(b"GET /mcp", b"GET /a2e").replace(
        b"Sec-WebSocket-Protocol: mcp\r\n", b""
    )
    return head.replace(b"\r\n\r\n", b"\r\n" + b"".join(lines) + b"\r\n")


@pytest.mark.parametrize(
    ("lines", "subprotocol"),
    [
        pytest.param((), None, id="none-asked"),
        pytest.param((b"Sec-WebSocket-Protocol: a2e\r\n",), b"a2e", id="a2e-asked"),
    ],
)
def test_a2e_accepts_its_subprotocol_without_requiring_it(
    lines: tuple[bytes, ...], subprotocol: bytes | None
) -> None:
    from sansio_mcp_apps.a2e import A2EWebSocket

    framing = A2EWebSocket(client=False)
    assert framing.receive_data(_a2e_handshake(*lines)) == []
    reply = framing.data_to_send()
    assert framing.open and reply.startswith(b"HTTP/1.1 101")
    assert (b"sec-websocket-protocol: a2e" in reply.lower()) is (subprotocol is not None)


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        pytest.param(_a2e_handshake().replace(b"127.0.0.1", b"[::1"), 400, id="bad-host"),
        pytest.param(_a2e_handshake(b"Origin: http://[zz\r\n"), 403, id="bad-origin"),
        pytest.param(_a2e_handshake(b"Origin: http://\xff\xfe\r\n"), 403, id="latin-1-origin"),
        pytest.param(
            _a2e_handshake().replace(b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", b""),
            400,
            id="no-key",
        ),
        pytest.param(b"\x16\x03\x01garbage\r\n\r\n", 400, id="not-http"),
    ],
)
def test_a_broken_a2e_handshake_is_refused_not_raised(raw: bytes, status: int) -> None:
    """(The A2E copy of the machine raised on these before the two became one.)"""
    from sansio_mcp_apps.a2e import A2EWebSocket

    framing = A2EWebSocket(client=False)
    assert framing.receive_data(raw) == []
    assert framing.closed and framing.refused == status
    assert framing.data_to_send().startswith(b"HTTP/1.1 %d" % status)


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        pytest.param(b"\x81\x81\x00\x00\x00\x00\xff", 1007, id="invalid-utf8"),
        pytest.param(b"\x81\x01x", 1002, id="unmasked"),
    ],
)
def test_broken_a2e_frames_are_answered_with_a_close_frame(frame: bytes, code: int) -> None:
    from sansio_mcp_apps.a2e import A2EWebSocket

    framing = A2EWebSocket(client=False)
    framing.receive_data(_a2e_handshake())
    framing.data_to_send()
    framing.receive_data(frame)
    assert framing.closed and framing.close_reason is not None
    assert framing.close_reason[0] == code
    sent = framing.data_to_send()
    assert sent[:1] == b"\x88" and int.from_bytes(sent[2:4], "big") == code


def test_after_our_close_only_the_peer_reply_is_read() -> None:
    """A binary frame closes with 1003; a message behind it in the same read is
    dropped, and the peer's close reply ends the closing handshake."""
    from sansio_mcp_apps.a2e import A2EWebSocket

    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    framing = A2EWebSocket(client=False)
    framing.receive_data(peer.send(ws.Request(host="127.0.0.1", target="/a2e")))
    peer.receive_data(framing.data_to_send())
    assert [type(event) for event in peer.events()] == [ws.AcceptConnection]
    data = peer.send(ws.Message(data=b"\x00")) + peer.send(ws.Message(data="late"))
    assert framing.receive_data(data) == []
    assert framing.closing and not framing.closed
    assert framing.close_reason == (1003, "A2E messages are text frames")
    peer.receive_data(framing.data_to_send())
    (close,) = peer.events()
    assert isinstance(close, ws.CloseConnection) and close.code == 1003
    assert framing.receive_data(peer.send(close.response())) == []
    assert framing.closed and framing.close_reason == (1003, "A2E messages are text frames")


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_a_handshake_that_never_finishes_is_closed(backend: str) -> None:
    """Half a request, then nothing: the server closes the connection after its
    handshake timeout instead of holding a session for good."""
    import asyncio
    import socket
    import time

    import asyncio_adapters.websocket

    def stall(port: int) -> float:
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.sendall(_GOOD_HANDSHAKE[:30])
            assert sock.recv(4096) == b""  # closed by the server
        return time.monotonic() - start

    async def on_trio() -> float:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(
                    lambda task_status: serve_ws(
                        build_server(), handshake_timeout=0.5, task_status=task_status
                    )
                )
                waited = await trio.to_thread.run_sync(stall, port)
                nursery.cancel_scope.cancel()
                return waited

    async def on_asyncio() -> float:
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        serving = asyncio.create_task(
            asyncio_adapters.websocket.serve_ws(
                build_server(), handshake_timeout=0.5, started=started
            )
        )
        try:
            async with asyncio.timeout(30):
                return await asyncio.to_thread(stall, await started)
        finally:
            serving.cancel()
            with pytest.raises(asyncio.CancelledError):
                await serving

    waited = trio.run(on_trio) if backend == "trio" else asyncio.run(on_asyncio())
    assert 0.4 < waited < 15


def test_a_ping_is_awaited_until_its_pong() -> None:
    """``awaiting_pong``: set by our ping, cleared by the peer's pong (what the
    server's pong deadline reads); a message is no pong."""
    from sansio_mcp._websocket import MCPWebSocket

    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    ours = MCPWebSocket(client=False)
    ours.receive_data(peer.send(ws.Request(host="127.0.0.1", target="/mcp", subprotocols=["mcp"])))
    peer.receive_data(ours.data_to_send())
    assert not ours.awaiting_pong
    ours.ping()
    assert ours.awaiting_pong
    peer.receive_data(ours.data_to_send())
    (ping,) = [event for event in peer.events() if isinstance(event, ws.Ping)]
    ours.receive_data(peer.send(ws.Message(data="{}")))
    assert ours.awaiting_pong
    ours.receive_data(peer.send(ping.response()))
    assert not ours.awaiting_pong
