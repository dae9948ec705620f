"""HTTP keep-alive in both Streamable HTTP clients: sequential requests share a
connection, counted where the connections are accepted (a TCP proxy in front of
the server); a connection the server closed while idle is replaced, the request
retried once; ``Connection: close`` is honoured; an answer that broke off after
it began is never sent again; and every connection is closed with the client.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import h11
import pytest

from sansio_mcp import MCPError
from sansio_mcp._streamable_http import StreamableHTTPServer

from .harness import BACKENDS, CountingProxy, parity_server, run, serving, url_for, wait_until

BUDGET = 20.0
CALLS = 12
STATELESS = "2026-07-28"


async def _echo_calls(client: Any, count: int, tag: str = "", tool: str = "echo") -> None:
    for index in range(count):
        result = await client.call_tool(tool, {"message": f"{tag}{index}"})
        assert result["content"][0]["text"] == f"{tag}{index}"


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_sequential_calls_share_one_connection(pair: tuple[str, str], mode: str) -> None:
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]

    async def body(proxy: CountingProxy) -> None:
        async with backend.connect([], url_for("http", proxy.port), "http", mode=mode) as client:
            await _echo_calls(client, CALLS)
            # Stateless: one connection for everything.  Legacy: the POSTs' connection,
            # the GET stream's own, and at most one more for a POST sent while the
            # first was busy (notifications/initialized racing the GET).
            assert proxy.accepted <= (1 if mode == "modern" else 3), proxy.accepted
        # Closing the client closes every connection it kept.
        await wait_until(backend, lambda: proxy.open == 0)

    with serving(server_backend, "http", parity_server()) as port, CountingProxy(port) as proxy:
        run(client_backend, body, proxy, budget=BUDGET)


class _Recording:
    """A router that records (HTTP method, JSON-RPC method) in the order it handles them."""

    def __init__(self, inner: StreamableHTTPServer) -> None:
        self.inner = inner
        self.seen: list[tuple[str, str | None]] = []

    def handle(self, request: Any) -> Any:
        body = json.loads(request.body) if request.body else None
        self.seen.append((request.method, body.get("method") if isinstance(body, dict) else None))
        return self.inner.handle(request)

    def flush(self, session: Any) -> None:
        self.inner.flush(session)

    def owns(self, session: Any) -> bool:
        return self.inner.owns(session)


def test_requests_reach_the_server_in_the_order_they_were_queued(pair: tuple[str, str]) -> None:
    """Kept-alive connections must not let a request overtake one queued before it:
    notifications/initialized and the GET stream are there before the first call (a
    server may refuse early calls, or send its requests on the GET stream and drop
    them while there is none)."""
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]
    server = parity_server()
    router = _Recording(StreamableHTTPServer(server.create_session))

    async def body(port: int) -> None:
        url = url_for("http", port)
        async with backend.connect([], url, "http", mode="legacy") as client:
            await _echo_calls(client, 3)

    with serving(server_backend, "router", server, router=router) as port:
        run(client_backend, body, port, budget=BUDGET)
    seen = router.seen
    calls = [i for i, (_, method) in enumerate(seen) if method == "tools/call"]
    assert len(calls) == 3 and seen[0] == ("POST", "initialize") and seen[-1] == ("DELETE", None)
    # (Those two leave one after the other on two connections: either may be read first.)
    assert sorted(seen[1 : calls[0]]) == [("GET", None), ("POST", "notifications/initialized")]


def test_a_connection_closed_while_idle_is_replaced(backend: str) -> None:
    """The server (here: the proxy) drops the idle kept-alive connection between
    calls: the next call fails on it before any answer, so it goes again, once,
    on a fresh connection; the server sees every call exactly once."""
    api = BACKENDS[backend]
    server = parity_server()
    calls: list[Any] = []

    async def body(proxy: CountingProxy) -> None:
        async with api.connect([], url_for("http", proxy.port), "http", mode="modern") as client:
            await _echo_calls(client, 3, "a", "counted")
            assert proxy.accepted == 1
            for round_ in range(1, 4):
                proxy.drop_all()
                await wait_until(api, lambda: proxy.open == 0)
                await _echo_calls(client, 3, f"b{round_}-", "counted")
                assert proxy.accepted == 1 + round_

    @server.tool()
    def counted(message: str) -> str:
        calls.append(message)
        return message

    with serving(backend, "http", server) as port, CountingProxy(port) as proxy:
        run(backend, body, proxy, budget=BUDGET)
    expected = [f"a{i}" for i in range(3)]
    expected += [f"b{r}-{i}" for r in range(1, 4) for i in range(3)]
    assert calls == expected


# An answer that breaks off is not sent again ---------------------------------------------

DISCOVERED = {
    "supportedVersions": [STATELESS],
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "truncating", "version": "0"},
    "resultType": "complete",
    "ttlMs": 0,
    "cacheScope": "private",
}


class _ScriptedServer:
    """A blocking h11 server in threads: answers ``server/discover`` and echoes
    ``tools/call`` arguments, either with ``Connection: close`` on every answer
    (``close_each``), or keeping connections alive but cutting every call's answer
    short (``cut_calls``: its head and half its body, then the connection closes),
    or writing each answer's head and body separately with Nagle's algorithm on
    (``nagle``, as uvicorn does).  Records the JSON-RPC method of every request and
    counts connections."""

    def __init__(
        self, *, close_each: bool = False, cut_calls: bool = False, nagle: bool = False
    ) -> None:
        self.close_each = close_each
        self.cut_calls = cut_calls
        self.nagle = nagle
        self.methods: list[str] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, name="scripted-accept")]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @contextlib.contextmanager
    def running(self) -> Iterator[_ScriptedServer]:
        self._threads[0].start()
        try:
            yield self
        finally:
            self._stop.set()
            for thread in list(self._threads):
                thread.join(timeout=5)
            self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(sock,))
            self._threads.append(thread)
            thread.start()

    def _answer(self, message: dict[str, Any]) -> bytes:
        if message["method"] == "server/discover":
            result: dict[str, Any] = DISCOVERED
        else:
            text = message["params"]["arguments"]["message"]
            result = {"content": [{"type": "text", "text": text}]}
        return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()

    def _serve(self, sock: socket.socket) -> None:
        conn = h11.Connection(h11.SERVER)
        sock.settimeout(5)
        if self.nagle:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        with sock:
            body = b""
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        return
                    conn.receive_data(data)
                    if not data:
                        return
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    message = json.loads(body)
                    self.methods.append(message["method"])
                    answer = self._answer(message)
                    head = [("content-type", "application/json")]
                    head.append(("content-length", str(len(answer))))
                    if self.close_each:
                        head.append(("connection", "close"))
                    out = conn.send(h11.Response(status_code=200, headers=head)) or b""
                    if self.cut_calls and message["method"] != "server/discover":
                        sock.sendall(out + answer[: len(answer) // 2])
                        return  # closing mid-body
                    if self.nagle:
                        sock.sendall(out)  # the body waits until the head is ACKed
                        out = b""
                    out += conn.send(h11.Data(data=answer)) or b""
                    sock.sendall(out + (conn.send(h11.EndOfMessage()) or b""))
                    if conn.our_state is h11.MUST_CLOSE:
                        return
                    conn.start_next_cycle()
                    body = b""
                elif isinstance(event, h11.ConnectionClosed):
                    return


def test_connection_close_from_the_server_is_honoured(backend: str) -> None:
    api = BACKENDS[backend]
    fake = _ScriptedServer(close_each=True)

    async def body() -> None:
        async with api.connect([], fake.url, "http", mode="modern") as client:
            await _echo_calls(client, 4)

    with fake.running():
        run(backend, body, budget=BUDGET)
    assert fake.methods == ["server/discover"] + ["tools/call"] * 4
    assert fake.connections == 5  # a connection per request


@pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="Linux only")
def test_no_delayed_ack_stall_with_a_nagle_server(backend: str) -> None:
    """A server writing an answer's head and body separately, with Nagle's algorithm
    on, sends the body only once the head is ACKed; on a kept-alive connection the
    client's kernel delays that ACK by 40 ms unless the client asks it not to."""
    api = BACKENDS[backend]
    fake = _ScriptedServer(nagle=True)
    elapsed: list[float] = []

    async def body() -> None:
        async with api.connect([], fake.url, "http", mode="modern") as client:
            await _echo_calls(client, 3)  # past the connection's first, quick ACKs
            started = time.monotonic()
            await _echo_calls(client, 10)
            elapsed.append(time.monotonic() - started)

    with fake.running():
        run(backend, body, budget=BUDGET)
    assert fake.connections == 1
    assert elapsed[0] < 0.3, f"10 calls took {elapsed[0]:.3f} s: stalled on delayed ACKs"


def test_an_answer_that_broke_off_is_not_sent_again(backend: str) -> None:
    """The call went out on a reused connection and part of its answer came back
    before the connection died: the request may have run, so it fails rather than
    going again."""
    api = BACKENDS[backend]
    fake = _ScriptedServer(cut_calls=True)

    async def body() -> None:
        async with api.connect([], fake.url, "http", mode="modern") as client:
            # The part that came is read as far as it goes: its id names the call it
            # answers, which fails at once (a cut answer is a malformed one).
            with pytest.raises(
                MCPError, match=r"answer to tools/call was malformed|unreadable body"
            ):
                await client.call_tool("echo", {"message": "once"})

    with fake.running():
        run(backend, body, budget=BUDGET)
    assert fake.methods == ["server/discover", "tools/call"]
    assert fake.connections == 1
