"""The asyncio runner (``sansio-mcp bridge --backend asyncio``): the same host,
asyncio moving the bytes.  Driven from a Trio agent through the real command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from functools import partial
from typing import Any

import pytest
import trio

from sansio_mcp_apps.a2e import MCPSamplingRequest
from sansio_mcp_apps.a2e.adapters.trio_client import open_a2e_stdio, open_a2e_ws
from sansio_mcp_apps.example_server import TOOL_NAMES, build_server

from .conftest import EXAMPLE, established_connections, wait_for_status

pytestmark = pytest.mark.usefixtures("no_leaked_children")

ASYNCIO = ["--backend", "asyncio"]


def _text(result: dict[str, Any]) -> str:
    content = (result.get("data") or {}).get("content") or []
    return "\n".join(c.get("text", "") for c in content if c.get("type") == "text")


def _sample(request: MCPSamplingRequest) -> dict[str, Any]:
    return {"content": {"type": "text", "text": "asyncio says 42"}, "model": "m"}


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_example_server_through_the_asyncio_bridge(era: str) -> None:
    config = {"roots": [{"uri": "file:///aio", "name": "aio"}]}
    with trio.fail_after(60):
        async with open_a2e_stdio(config=config, bridge_args=ASYNCIO, on_sample=_sample) as agent:
            info = await agent.register(
                {"server_id": "ex", "cmd": [*EXAMPLE, "--page-size", "2"], "protocol_version": era}
            )
            assert info["status"] == "ready" and info["tools_count"] == len(TOOL_NAMES)
            assert (info["mcp_version"] == "2026-07-28") == (era == "modern")
            added = await agent.call_tool("ex__add", {"a": 1, "b": 2})
            assert added["data"]["structuredContent"] == {"sum": 3}
            slow = await agent.call_tool("ex__slow", {"seconds": 0.1, "steps": 2}, streaming=True)
            assert slow["success"] and len(agent.events) == 2
            assert _text(await agent.call_tool("ex__sample", {"prompt": "?"})) == "asyncio says 42"
            assert "file:///aio" in _text(await agent.call_tool("ex__list_roots"))
            resources = await agent.list_resources()
            assert len(resources) == 4
            blob = await agent.read_resource("example://logo.png")
            assert blob.contents[0]["type"] == "blob"
            assert (await agent.subscribe("example://counter")).ok
            await agent.call_tool("ex__increment")
            await agent.wait_for_push(lambda p: p.method == "notifications/resources/updated")
            review = await agent.get_prompt("review", {"code": "x"})
            assert review.messages
            assert (await agent.unregister("ex")).ok


async def _serve(kind: str, nursery: trio.Nursery) -> str:
    server = build_server()
    if kind == "http":
        from trio_adapters.http_server import serve_http

        return f"http://127.0.0.1:{await nursery.start(partial(serve_http, server))}/mcp"
    if kind == "sse":
        from trio_adapters.sse import serve_sse

        return f"http://127.0.0.1:{await nursery.start(partial(serve_sse, server))}/sse"
    from trio_adapters.websocket import serve_ws

    return f"ws://127.0.0.1:{await nursery.start(partial(serve_ws, server))}/mcp"


async def test_network_transports_through_the_asyncio_bridge() -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            urls = {kind: await _serve(kind, nursery) for kind in ("http", "sse", "ws")}
            async with open_a2e_stdio(bridge_args=ASYNCIO, on_sample=_sample) as agent:
                for kind, url in urls.items():
                    info = await agent.register({"server_id": kind, "transport": kind, "url": url})
                    assert info["status"] == "ready", info
                    sampled = await agent.call_tool(f"{kind}__sample", {"prompt": "?"})
                    assert _text(sampled) == "asyncio says 42"
                    read = await agent.read_resource("example://readme", server_id=kind)
                    assert read.contents
                for kind in urls:
                    await agent.unregister(kind)
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_unregistering_closes_the_connections_kept_alive_on_asyncio(transport: str) -> None:
    """The asyncio bridge's HTTP clients keep connections alive between requests;
    when the server goes, the bridge closes them (seen from the server's side)."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            url = await _serve(transport, nursery)
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            async with open_a2e_stdio(bridge_args=ASYNCIO) as agent:
                await agent.register({"server_id": "net", "transport": transport, "url": url})
                for _ in range(3):
                    await agent.call_tool("net__add", {"a": 1, "b": 2})
                assert established_connections(port, far_end=False) >= 1
                await agent.unregister("net")
                with trio.fail_after(5):
                    while established_connections(port, far_end=False):
                        await trio.sleep(0.02)
                await agent.ping()  # the bridge is still running: it closed them itself
            nursery.cancel_scope.cancel()


async def test_kill_mid_call_and_reconnect_on_asyncio(tiny_command: list[str]) -> None:
    with trio.fail_after(60):
        async with open_a2e_stdio(bridge_args=ASYNCIO) as agent:
            await agent.register({"server_id": "t", "cmd": tiny_command})
            pid = int(_text(await agent.call_tool("t__pid")))
            outcome: dict[str, Any] = {}

            async def slow() -> None:
                outcome["r"] = await agent.call_tool("t__sleep", {"seconds": 30})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow)
                await trio.sleep(0.2)
                os.kill(pid, signal.SIGKILL)
            assert outcome["r"]["error_code"] == "mcp_transport_error"
            assert outcome["r"]["retryable"] is True
            await wait_for_status(agent, "t", "ready")
            new_pid = int(_text(await agent.call_tool("t__pid")))
            assert new_pid != pid
            assert f"t__boot_{new_pid}" in {t["name"] for t in await agent.list_tools()}


async def test_websocket_agents_on_asyncio() -> None:
    with trio.fail_after(60):
        process = await trio.lowlevel.open_process(
            [
                sys.executable,
                "-m",
                "sansio_mcp_cli",
                "bridge",
                *ASYNCIO,
                "--listen",
                "ws://127.0.0.1:0",
            ],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            assert process.stderr is not None
            announced = b""
            while b"\n" not in announced:
                announced += await process.stderr.receive_some(1024)
            url = announced.decode().split("sansio-mcp bridge: ", 1)[1].split()[0]
            async with open_a2e_ws(url) as agent:
                info = await agent.register({"server_id": "w", "cmd": EXAMPLE})
                assert info["status"] == "ready"
                with pytest.raises(ConnectionError, match="409"):
                    async with open_a2e_ws(url):
                        pass
            async with open_a2e_ws(url) as agent:
                assert [s["server_id"] for s in await agent.list_servers()] == ["w"]
                await agent.unregister("w")
        finally:
            process.terminate()
            with trio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            assert process.stderr is not None
            await process.stderr.aclose()
        assert process.returncode == 0


async def test_demo_on_asyncio() -> None:
    demo = await trio.run_process(
        [sys.executable, "-m", "sansio_mcp_cli", "demo", "--backend", "asyncio"],
        capture_stdout=True,
    )
    out = demo.stdout.decode()
    assert "sansio-mcp demo (asyncio)" in out and "Demo complete" in out
    assert "mcp_sampling_refused" in out and "x-mcp/elicit/resp" in out
