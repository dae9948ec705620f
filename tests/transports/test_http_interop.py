"""Network interop with third-party peers, both directions, over Streamable HTTP
and the legacy HTTP+SSE transport.

Matrix (client -> server, transport; "ours" = sansio-mcp)::

    client                                 server                              wire
    -------------------------------------  ----------------------------------  ---------------
    SDK streamable_http_client+ClientSess. ours: serve_http (handshake)        Streamable HTTP
    SDK mcp.Client(mode=2026-07-28|auto)   ours: serve_http (stateless, MRTR)  Streamable HTTP
    SDK sse_client + ClientSession         ours: serve_sse                     HTTP+SSE
    ours: open_http_client                 SDK MCPServer, uvicorn: stateful,   Streamable HTTP
                                           stateless, json_response
    ours: open_sse_client                  SDK MCPServer sse_app, uvicorn      HTTP+SSE
    ours: open_http_client                 server-everything streamableHttp    Streamable HTTP
    ours: open_sse_client                  server-everything sse               HTTP+SSE

Our servers run in a Trio thread of this process (the SDK clients are asyncio,
run with ``anyio.run`` in plain test functions); the SDK and node servers run
as child processes bound to 127.0.0.1 (node through ``loopback.cjs``).  Every
test is bounded by ``BUDGET`` seconds and stops every server it started.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio
from mcp import Client as SDKClient
from mcp import ClientSession
from mcp import types as sdk
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from sdk_peer import SDKCallbacks, sdk_text, wait_until

from sansio_mcp._legacy_sse import LegacySSEServer
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_router
from trio_adapters.sse import open_sse_client

from .helpers import (
    COUNTER_URI,
    EXAMPLE_TOOLS,
    NEWEST_HANDSHAKE,
    ROOT,
    STATELESS,
    Answers,
    RecordingRouter,
    free_port,
    serving_in_thread,
    texts,
)

pytestmark = [
    pytest.mark.interop,
    # The SDK flags sampling, roots, logging and resources/subscribe as deprecated
    # as of 2026-07-28; they are current on the handshake revisions used here.
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

BUDGET = 30
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SDK_HTTP_SERVER = HERE / "sdk_http_server.py"
LOOPBACK_PRELOAD = HERE / "loopback.cjs"
EVERYTHING = REPO / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
QUESTIONS = ["favourite colour?", "favourite number?", "favourite season?"]
SDK_TOOLS = {
    "echo",
    "add",
    "ask_user",
    "ask_model",
    "countdown",
    "touch",
    "roots",
    "resolve_user",
    "resolve_model",
    "resolve_roots",
}


def run_sdk(body: Callable[[], Awaitable[None]]) -> None:
    """Run an SDK-side (asyncio) test body, bounded in time."""

    async def bounded() -> None:
        with anyio.fail_after(BUDGET):
            await body()

    anyio.run(bounded, backend="asyncio")


def sdk_answer(question: str) -> str:
    return f"sdk: {question}"


async def exercise_legacy_session(session: ClientSession, callbacks: SDKCallbacks) -> None:
    """What the SDK's ClientSession checks against our example server (handshake era)."""
    init = await session.initialize()
    assert init.protocol_version == NEWEST_HANDSHAKE
    assert init.server_info.name == "sansio-mcp-example"
    tools = await session.list_tools()
    assert {t.name for t in tools.tools} == EXAMPLE_TOOLS
    added = await session.call_tool("add", {"a": 20, "b": 22})
    assert added.structured_content == {"sum": 42}

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    slow = await session.call_tool(
        "slow", {"seconds": 0.1, "steps": 2}, progress_callback=on_progress
    )
    assert sdk_text(slow) == "done after 0.1 seconds in 2 steps"
    assert progress == [1, 2]

    assert sdk_text(await session.call_tool("sample", {"prompt": "6 x 7?"})) == "forty-two"
    elicited = await session.call_tool("elicit", {"question": "colour?"})
    assert elicited.structured_content == {"action": "accept", "answer": "sdk: colour?"}
    roots = await session.call_tool("list_roots", {})
    assert roots.structured_content == {"roots": [ROOT]}
    assert callbacks.sampled == ["6 x 7?"] and callbacks.elicited == ["colour?"]
    assert callbacks.roots_asked == 1
    failed = await session.call_tool("fail", {"message": "nope"})
    assert failed.is_error is True


# 1. SDK clients against our servers ---------------------------------------------------------


def test_sdk_client_session_over_streamable_http() -> None:
    """``streamable_http_client`` + ``ClientSession`` (handshake era) against
    ``serve_http``; the SDK ends its session with DELETE on the way out."""
    server = build_server()
    machine = StreamableHTTPServer(server.create_session)
    callbacks = SDKCallbacks(sdk_answer, ROOT)
    with serving_in_thread(serve_router, server, router=machine) as port:

        async def body() -> None:
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
                async with ClientSession(read, write, **callbacks.session_options()) as session:
                    await exercise_legacy_session(session, callbacks)
                    # A resource update for this session's subscription.
                    await session.subscribe_resource(COUNTER_URI)
                    assert sdk_text(await session.call_tool("increment", {})) == "1"
                    await wait_until(
                        lambda: any(
                            isinstance(getattr(n, "root", n), sdk.ResourceUpdatedNotification)
                            for n in callbacks.notifications
                        )
                    )

        run_sdk(body)
    assert machine.sessions.ids == frozenset()


@pytest.mark.parametrize("mode", [STATELESS, "auto"])
def test_sdk_client_stateless_http(mode: str) -> None:
    """``mcp.Client`` on 2026-07-28 over ``serve_http``: MRTR rounds answered by the
    SDK's callbacks (one new POST per round) and ``listen()``."""
    server = build_server()
    router = RecordingRouter(StreamableHTTPServer(server.create_session))
    callbacks = SDKCallbacks(sdk_answer, ROOT)
    with serving_in_thread(serve_router, server, router=router) as port:

        async def body() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with SDKClient(url, mode=mode, **callbacks.client_options()) as client:
                assert client.protocol_version == STATELESS
                tools = await client.list_tools()
                assert {t.name for t in tools.tools} == EXAMPLE_TOOLS
                added = await client.call_tool("add", {"a": 1, "b": 2})
                assert added.structured_content == {"sum": 3}
                survey = await client.call_tool("survey", {"questions": QUESTIONS})
                assert survey.structured_content == {
                    "answers": {q: f"sdk: {q}" for q in QUESTIONS},
                    "completed": True,
                }
                assert callbacks.elicited == QUESTIONS
                assert sdk_text(await client.call_tool("sample", {"prompt": "p?"})) == "forty-two"
                roots = await client.call_tool("list_roots", {})
                assert roots.structured_content == {"roots": [ROOT]}

                async with client.listen(resource_subscriptions=[COUNTER_URI]) as subscription:
                    assert sdk_text(await client.call_tool("increment", {})) == "1"
                    with anyio.fail_after(5):
                        event = await subscription.__anext__()
                    assert getattr(event, "uri", None) == COUNTER_URI

        run_sdk(body)
    calls = router.posted("tools/call")
    # add 1 + survey (3 rounds + final) 4 + sample 2 + list_roots 2 + increment 1
    assert len(calls) == 10 and set(calls) == {200}
    assert router.posted("initialize") == []
    assert router.posted("subscriptions/listen") == [200]


def test_sdk_sse_client_against_serve_sse() -> None:
    server = build_server()
    callbacks = SDKCallbacks(sdk_answer, ROOT)
    machine = LegacySSEServer(server.create_session)
    with serving_in_thread(serve_router, server, router=machine) as port:

        async def body() -> None:
            async with sse_client(f"http://127.0.0.1:{port}/sse") as (read, write):
                async with ClientSession(read, write, **callbacks.session_options()) as session:
                    await exercise_legacy_session(session, callbacks)

        run_sdk(body)


# 2. Our clients against the SDK's servers (uvicorn, child process) --------------------------


@contextmanager
def sdk_http_server(mode: str) -> Iterator[int]:
    """The SDK MCPServer peer under uvicorn (``sdk_http_server.py MODE``); its port."""
    process = subprocess.Popen(
        [sys.executable, str(SDK_HTTP_SERVER), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(REPO),
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 20)
        assert ready, "the SDK server did not report its port in time"
        line = process.stdout.readline().decode()
        assert line.startswith("PORT "), f"unexpected first line from the SDK server: {line!r}"
        yield int(line.split()[1])
    finally:
        assert process.stdin is not None
        process.stdin.close()  # its signal to stop
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - reported below
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            pytest.fail("the SDK server did not stop when its stdin was closed")
        finally:
            assert process.stdout is not None
            process.stdout.close()


@pytest.mark.parametrize(
    ("server_mode", "client_mode", "expected"),
    [
        ("stateful", "legacy", NEWEST_HANDSHAKE),
        ("stateful", "auto", STATELESS),
        ("stateless", "legacy", NEWEST_HANDSHAKE),
        ("stateless", "auto", STATELESS),
        ("json", "legacy", NEWEST_HANDSHAKE),
        ("json", "modern", STATELESS),
    ],
)
async def test_our_http_client_against_sdk_server(
    server_mode: str, client_mode: str, expected: str
) -> None:
    answers = Answers()
    with sdk_http_server(server_mode) as port, trio.fail_after(BUDGET):
        url = f"http://127.0.0.1:{port}/mcp"
        async with open_http_client(url, mode=client_mode, handlers=answers.handlers()) as client:
            assert client.protocol_version == expected
            assert client.server_info["name"] == "sdk-interop-server"
            assert {t["name"] for t in await client.list_tools()} == SDK_TOOLS
            assert texts(await client.call_tool("echo", {"message": "hi ☃"})) == "echo: hi ☃"
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert added["structuredContent"] == {"sum": 3.0}

            progress: list[float] = []
            counted = await client.call_tool(
                "countdown", {"steps": 3}, on_progress=lambda p, t, m: progress.append(p)
            )
            assert texts(counted) == "counted 3"
            # A JSON response carries no progress; an SSE response does.
            assert progress == ([] if server_mode == "json" else [1, 2, 3])

            readme = await client.read_resource("sdk://greeting")
            assert readme["contents"][0]["text"] == "hello from the SDK"

            if expected == STATELESS:
                # Era-neutral resolvers: MRTR input_required rounds.
                user = await client.call_tool("resolve_user", {"question": "who?"})
                assert texts(user) == "user said answer to who?"
                model = await client.call_tool("resolve_model", {"prompt": "p?"})
                assert texts(model) == "model transport-test-model said forty-two"
                roots = await client.call_tool("resolve_roots", {})
                assert texts(roots) == ROOT["uri"]
            elif server_mode == "stateful":
                # Server-to-client requests on the handshake session.
                assert texts(await client.call_tool("ask_user", {"question": "q?"})) == (
                    "user said answer to q?"
                )
                assert texts(await client.call_tool("ask_model", {"prompt": "m?"})) == (
                    "model transport-test-model said forty-two"
                )
                assert texts(await client.call_tool("roots", {})) == ROOT["uri"]
            elif server_mode == "json":
                # With JSON responses the SDK sends its request on the GET stream.
                assert texts(await client.call_tool("ask_model", {"prompt": "m?"})) == (
                    "model transport-test-model said forty-two"
                )


async def test_our_sse_client_against_sdk_sse_server() -> None:
    answers = Answers()
    with sdk_http_server("sse") as port, trio.fail_after(BUDGET):
        async with open_sse_client(
            f"http://127.0.0.1:{port}/sse", handlers=answers.handlers()
        ) as client:
            assert client.protocol_version == NEWEST_HANDSHAKE
            assert {t["name"] for t in await client.list_tools()} == SDK_TOOLS
            assert texts(await client.call_tool("echo", {"message": "sse"})) == "echo: sse"
            progress: list[float] = []
            await client.call_tool(
                "countdown", {"steps": 2}, on_progress=lambda p, t, m: progress.append(p)
            )
            assert progress == [1, 2]
            assert texts(await client.call_tool("ask_user", {"question": "q?"})) == (
                "user said answer to q?"
            )
            assert texts(await client.call_tool("ask_model", {"prompt": "m?"})) == (
                "model transport-test-model said forty-two"
            )
            assert texts(await client.call_tool("roots", {})) == ROOT["uri"]
            await client.ping()


async def test_our_sse_client_on_2026_07_28_against_sdk_sse_server() -> None:
    """2026-07-28 deprecates HTTP+SSE but keeps it working: asked for, it is spoken."""
    answers = Answers()
    with sdk_http_server("sse") as port, trio.fail_after(BUDGET):
        async with open_sse_client(
            f"http://127.0.0.1:{port}/sse", handlers=answers.handlers(), protocol_version=STATELESS
        ) as client:
            assert client.protocol_version == STATELESS
            assert {t["name"] for t in await client.list_tools()} == SDK_TOOLS
            assert texts(await client.call_tool("echo", {"message": "sse"})) == "echo: sse"
            # (Its ask_user tool is not tried: the SDK's server refuses elicitation on a
            # 2026-07-28 request over SSE, "no back-channel", rather than asking by MRTR.)


# 3. Our clients against server-everything (node, loopback-bound) ----------------------------


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of the LISTEN sockets on ``port`` (from /proc/net/tcp{,6})."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:  # pragma: no cover - not Linux
            continue
        for row in rows:
            fields = row.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":
                found.add(address)
    return found


@contextmanager
def server_everything(mode: str, tmp_path: Path) -> Iterator[int]:
    node = shutil.which("node")
    entry = EVERYTHING / "index.js"
    if node is None or not entry.is_file():
        pytest.skip("server-everything (node_modules) or node is not installed")
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "PORT": str(port),
    }
    with open(tmp_path / "everything.log", "wb") as log:
        process = subprocess.Popen(
            [node, "--require", str(LOOPBACK_PRELOAD), str(entry), mode],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(REPO),
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, (tmp_path / "everything.log").read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "server-everything did not start listening"
                time.sleep(0.05)
        # Only the loopback address, never all interfaces.
        assert _listening_addresses(port) == {"0100007F"}
        yield port
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


async def exercise_everything(client: Any, answers: Answers) -> None:
    tools = {t["name"] for t in await client.list_tools()}
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= tools
    assert texts(await client.call_tool("echo", {"message": "hi ☃"})) == "Echo: hi ☃"
    summed = await client.call_tool("get-sum", {"a": 2, "b": 40})
    assert "42" in texts(summed)
    progress: list[float] = []
    await client.call_tool(
        "trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        on_progress=lambda p, t, m: progress.append(p),
    )
    assert progress == [1, 2, 3]
    resources = await client.list_resources()
    assert resources and all(r["uri"].startswith("demo://") for r in resources)
    # Offered because our client declared sampling (registered just after the
    # handshake, announced with tools/list_changed): a server-to-client request.
    with trio.fail_after(5):
        while "trigger-sampling-request" not in tools:
            await trio.sleep(0.05)
            tools = {t["name"] for t in await client.list_tools()}
    sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hello?"})
    assert "forty-two" in texts(sampled)
    assert len(answers.sampled) == 1 and answers.sampled[0].endswith("hello?")


@pytest.mark.parametrize("version", ["auto", "2025-06-18"])
async def test_our_http_client_against_server_everything(version: str, tmp_path: Path) -> None:
    answers = Answers()
    options: dict[str, Any] = (
        {"mode": "auto"} if version == "auto" else {"protocol_version": version}
    )
    with server_everything("streamableHttp", tmp_path) as port, trio.fail_after(BUDGET):
        async with open_http_client(
            f"http://127.0.0.1:{port}/mcp", handlers=answers.handlers(), **options
        ) as client:
            # A handshake-only server: auto falls back from server/discover.
            assert client.protocol_version == (NEWEST_HANDSHAKE if version == "auto" else version)
            assert client.server_info["name"] == "mcp-servers/everything"
            await exercise_everything(client, answers)


async def test_our_sse_client_against_server_everything(tmp_path: Path) -> None:
    answers = Answers()
    with server_everything("sse", tmp_path) as port, trio.fail_after(BUDGET):
        async with open_sse_client(
            f"http://127.0.0.1:{port}/sse", handlers=answers.handlers()
        ) as client:
            assert client.protocol_version == NEWEST_HANDSHAKE
            assert client.server_info["name"] == "mcp-servers/everything"
            await exercise_everything(client, answers)
