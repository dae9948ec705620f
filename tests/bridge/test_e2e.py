"""End to end through real processes: an A2E agent drives real MCP servers through
the bridge (the example server on every transport and both eras,
server-everything, server-filesystem), and the ``sansio-mcp bridge`` command
itself over stdio and WebSocket."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from sansio_mcp_apps.a2e import (
    ElicitRequest,
    MCPRootsListRequest,
    MCPSamplingRequest,
)
from sansio_mcp_apps.a2e.adapters.trio_client import A2ERequestError, open_a2e_stdio, open_a2e_ws
from sansio_mcp_apps.example_server import TOOL_NAMES, build_server

from .conftest import EXAMPLE, established_connections, running_bridge, wait_for_status

pytestmark = pytest.mark.usefixtures("no_leaked_children")

BUDGET = 60


def _text(result: dict[str, Any]) -> str:
    content = (result.get("data") or {}).get("content") or []
    return "\n".join(c.get("text", "") for c in content if c.get("type") == "text")


def _sampler(seen: list[MCPSamplingRequest]) -> Any:
    def sample(request: MCPSamplingRequest) -> dict[str, Any]:
        seen.append(request)
        question = request.messages[-1]["content"].get("text", "")
        return {
            "content": {"type": "text", "text": f"the agent's answer to: {question}"},
            "model": "agent-model",
            "stop_reason": "endTurn",
        }

    return sample


# The example server: every message type, both eras ------------------------------------------


@pytest.mark.parametrize("era", ["2025-11-25", "2025-06-18", "2024-11-05", "2026-07-28"])
async def test_every_message_type_against_the_example_server(era: str) -> None:
    samples: list[MCPSamplingRequest] = []
    asked: list[Any] = []
    with trio.fail_after(BUDGET):
        async with running_bridge(elicitation=True) as (_bridge, agent):
            agent.on_sample = _sampler(samples)
            agent.on_roots = lambda request: (
                asked.append(request) or [{"uri": "file:///agent/root", "name": "agent"}]
            )
            agent.on_elicit = lambda request: (
                asked.append(request) or {"action": "accept", "content": {"answer": "teal"}}
            )
            info = await agent.register(
                {
                    "server_id": "ex",
                    "name": "example",
                    "cmd": [*EXAMPLE, "--page-size", "2"],
                    "protocol_version": era,
                }
            )
            assert info["status"] == "ready" and info["mcp_version"] == era
            assert info["server_name"] == "sansio-mcp-example"
            assert (info["tools_count"], info["resources_count"], info["prompts_count"]) == (
                len(TOOL_NAMES),
                3,
                2,
            )
            servers = await agent.list_servers()
            assert [s["server_id"] for s in servers] == ["ex"]

            tools = await agent.list_tools()
            assert len(tools) == len(TOOL_NAMES) and all(t["source"] == "mcp" for t in tools)
            add = next(t for t in tools if t["name"] == "ex__add")
            assert add["input_schema"]["required"] == ["a", "b"]

            added = await agent.call_tool("ex__add", {"a": 40, "b": 2})
            assert added["success"] and added["data"]["structuredContent"] == {"sum": 42}
            slow = await agent.call_tool("ex__slow", {"seconds": 0.1, "steps": 2}, streaming=True)
            assert slow["success"] and [e.data["progress"] for e in agent.events] == [1, 2]
            failed = await agent.call_tool("ex__fail", {"message": "nope"})
            assert (failed["success"], failed["error_code"], failed["error"]) == (
                False,
                "tool_error",
                "nope",
            )

            sampled = await agent.call_tool("ex__sample", {"prompt": "6 x 7?"})
            assert _text(sampled) == "the agent's answer to: 6 x 7?"
            assert samples[-1].server_id == "ex" and samples[-1].max_tokens == 200

            roots = await agent.call_tool("ex__list_roots")
            assert "file:///agent/root" in _text(roots)  # no configured roots: the agent was asked
            assert isinstance(asked[0], MCPRootsListRequest)

            if era >= "2025-06-18":
                elicited = await agent.call_tool("ex__elicit", {"question": "colour?"})
                assert _text(elicited) == "teal" and isinstance(asked[-1], ElicitRequest)
                survey = await agent.call_tool("ex__survey", {"questions": ["a?", "b?"]})
                assert survey["data"]["structuredContent"]["completed"] is True

            resources = await agent.list_resources()
            assert [r["uri"] for r in resources] == [
                "example://readme",
                "example://logo.png",
                "example://counter",
                "example://colours/{colour}",
            ]
            readme = await agent.read_resource("example://readme")
            assert readme.contents[0]["type"] == "text" and readme.server_id == "ex"
            logo = await agent.read_resource("example://logo.png")
            assert (
                logo.contents[0]["type"] == "blob" and logo.contents[0]["mime_type"] == "image/png"
            )
            colour = await agent.read_resource("example://colours/green")
            assert colour.contents[0]["text"] == "green is a fine colour"
            with pytest.raises(A2ERequestError) as missing:
                await agent.read_resource("example://nothing-here")
            assert missing.value.code == "mcp_resource_not_found"

            subscribed = await agent.subscribe("example://counter")
            assert subscribed.ok
            await agent.call_tool("ex__increment", {"by": 3})
            update = await agent.wait_for_push(
                lambda p: p.method == "notifications/resources/updated"
            )
            assert update.server_id == "ex" and update.params["uri"] == "example://counter"

            prompts = await agent.list_prompts()
            assert [p["name"] for p in prompts] == ["greeting", "review"]
            review = await agent.get_prompt("review", {"code": "x = 1", "language": "python"})
            assert "Please review this python code" in review.messages[0]["content"]["text"]

            pong = await agent.ping()
            assert pong.req_id
            gone = await agent.unregister("ex")
            assert gone.ok and await agent.list_tools() == []


async def test_configured_roots_and_refused_sampling() -> None:
    with trio.fail_after(BUDGET):
        async with running_bridge(roots=[{"uri": "file:///srv/data", "name": "data"}]) as (
            _,
            agent,
        ):
            agent.on_sample = lambda request: {"error": "no budget left"}
            await agent.register({"server_id": "ex", "cmd": EXAMPLE, "protocol_version": "legacy"})
            roots = await agent.call_tool("ex__list_roots")
            assert "data: file:///srv/data" in _text(roots)
            refused = await agent.call_tool("ex__sample", {"prompt": "?"})
            # On a handshake session the refusal reaches the server as an error
            # response; the example server turns it into a tool error.
            assert refused["success"] is False
            await agent.register({"server_id": "mod", "cmd": EXAMPLE, "protocol_version": "modern"})
            refused = await agent.call_tool("mod__sample", {"prompt": "?"})
            # On 2026-07-28 the refusal ends the MRTR round: the call fails with the code.
            assert refused["error_code"] == "mcp_sampling_refused"


# The example server over the network transports --------------------------------------------


async def _serve(kind: str, nursery: trio.Nursery) -> str:
    server = build_server()
    if kind == "http":
        from trio_adapters.http_server import serve_http

        port = await nursery.start(partial(serve_http, server))
        return f"http://127.0.0.1:{port}/mcp"
    if kind == "sse":
        from trio_adapters.sse import serve_sse

        port = await nursery.start(partial(serve_sse, server))
        return f"http://127.0.0.1:{port}/sse"
    from trio_adapters.websocket import serve_ws

    port = await nursery.start(partial(serve_ws, server))
    return f"ws://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize(
    ("transport", "era"),
    [
        ("http", "legacy"),
        ("http", "modern"),
        ("sse", "auto"),
        ("ws", "legacy"),
        ("ws", "modern"),
    ],
)
async def test_network_transports(transport: str, era: str) -> None:
    samples: list[MCPSamplingRequest] = []
    with trio.fail_after(BUDGET):
        async with trio.open_nursery() as nursery:
            url = await _serve(transport, nursery)
            async with running_bridge(roots=[{"uri": "file:///r"}]) as (_, agent):
                agent.on_sample = _sampler(samples)
                info = await agent.register(
                    {
                        "server_id": "net",
                        "transport": transport,
                        "url": url,
                        "protocol_version": era,
                    }
                )
                assert info["status"] == "ready" and info["tools_count"] == len(TOOL_NAMES)
                assert info["transport"] == transport
                assert (info["mcp_version"] == "2026-07-28") == (era == "modern")
                added = await agent.call_tool("net__add", {"a": 1, "b": 2})
                assert added["data"]["structuredContent"] == {"sum": 3}
                sampled = await agent.call_tool("net__sample", {"prompt": "hi"})
                assert _text(sampled) == "the agent's answer to: hi"
                roots = await agent.call_tool("net__list_roots")
                assert "file:///r" in _text(roots)
                read = await agent.read_resource("example://readme")
                assert read.contents[0]["mime_type"] == "text/markdown"
                prompt = await agent.get_prompt("greeting")
                assert prompt.messages
                await agent.unregister("net")
            nursery.cancel_scope.cancel()


async def test_unreachable_network_server_fails_registration() -> None:
    with trio.fail_after(BUDGET):
        async with running_bridge() as (_, agent):
            for transport, url in (
                ("http", "http://127.0.0.1:9/mcp"),
                ("sse", "http://127.0.0.1:9/sse"),
                ("ws", "ws://127.0.0.1:9/mcp"),
            ):
                with pytest.raises(A2ERequestError) as failure:
                    await agent.register({"server_id": "x", "transport": transport, "url": url})
                assert failure.value.code == "mcp_transport_error" and failure.value.retryable
                assert await agent.list_servers() == []


# Third-party servers ---------------------------------------------------------------------------


async def test_server_everything(everything_command: list[str]) -> None:
    samples: list[MCPSamplingRequest] = []
    with trio.fail_after(BUDGET):
        async with running_bridge(
            roots=[{"uri": "file:///tmp/everything", "name": "scratch"}], elicitation=True
        ) as (_, agent):
            agent.on_sample = _sampler(samples)
            agent.on_elicit = lambda request: {
                "action": "accept",
                "content": {"name": "Ada Lovelace", "check": True, "integer": 7},
            }
            info = await agent.register({"server_id": "ev", "cmd": everything_command})
            assert info["server_name"] == "mcp-servers/everything"
            assert info["mcp_version"] == "2025-11-25"
            # Its conditional tools arrive after initialization, announced as a list change;
            # the bridge re-syncs.
            await agent.wait_for_push(lambda p: p.method == "notifications/tools/list_changed")
            with trio.fail_after(10):
                while True:
                    names = {t["name"] for t in await agent.list_tools()}
                    if "ev__trigger-sampling-request" in names:
                        break
                    await trio.sleep(0.05)
            assert {"ev__echo", "ev__get-sum", "ev__get-roots-list"} <= names

            echoed = await agent.call_tool("ev__echo", {"message": "hello ☃"})
            assert _text(echoed) == "Echo: hello ☃"
            structured = await agent.call_tool(
                "ev__get-structured-content", {"location": "Chicago"}
            )
            assert structured["data"]["structuredContent"]["temperature"] == 36
            sampled = await agent.call_tool(
                "ev__trigger-sampling-request", {"prompt": "what is 6 x 7?", "maxTokens": 64}
            )
            assert "the agent's answer to" in _text(sampled)
            assert samples[-1].max_tokens == 64 and samples[-1].temperature == 0.7
            assert samples[-1].system_prompt == "You are a helpful test server."
            roots = await agent.call_tool("ev__get-roots-list")
            assert "file:///tmp/everything" in _text(roots)
            elicited = await agent.call_tool("ev__trigger-elicitation-request")
            assert "Ada Lovelace" in _text(elicited)
            image = await agent.call_tool("ev__get-tiny-image")
            assert any(c["type"] == "image" for c in image["data"]["content"])
            slow = await agent.call_tool(
                "ev__trigger-long-running-operation", {"duration": 0.3, "steps": 3}, streaming=True
            )
            assert slow["success"] and len([e for e in agent.events if e.req_id]) >= 3

            resources = await agent.list_resources()
            uris = [r["uri"] for r in resources]
            assert "demo://resource/static/document/features.md" in uris
            assert "demo://resource/dynamic/text/{resourceId}" in uris
            text = await agent.read_resource("demo://resource/dynamic/text/5")
            assert text.contents[0]["uri"] == "demo://resource/dynamic/text/5"
            blob = await agent.read_resource("demo://resource/dynamic/blob/4")
            assert blob.contents[0]["type"] == "blob"
            features = await agent.read_resource("demo://resource/static/document/features.md")
            assert features.contents[0]["text"]
            subscribed = await agent.subscribe("demo://resource/static/document/features.md")
            assert subscribed.ok

            prompts = {p["name"]: p for p in await agent.list_prompts()}
            assert {"simple-prompt", "args-prompt"} <= set(prompts)
            assert [a["name"] for a in prompts["args-prompt"]["arguments"]] == ["city", "state"]
            rendered = await agent.get_prompt("args-prompt", {"city": "Paris", "state": "IDF"})
            assert "Paris" in json.dumps(rendered.messages)
            await agent.unregister("ev")


async def test_server_filesystem(filesystem_entry: list[str], tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "hello.txt").write_text("hello from the filesystem\n", encoding="utf-8")
    root = workdir.resolve().as_uri()
    with trio.fail_after(BUDGET):
        async with running_bridge(roots=[{"uri": root, "name": "work"}]) as (_, agent):
            info = await agent.register(
                {
                    "server_id": "fs",
                    "name": "filesystem",
                    "cmd": [*filesystem_entry, str(workdir)],
                    "tool_allow_list": ["read_*", "write_file", "list_*"],
                }
            )
            assert info["server_name"] == "secure-filesystem-server"
            names = {t["name"] for t in await agent.list_tools()}
            assert "fs__read_text_file" in names and "fs__move_file" not in names
            listing = await agent.call_tool("fs__list_directory", {"path": str(workdir)})
            assert "hello.txt" in _text(listing)
            read = await agent.call_tool("fs__read_text_file", {"path": str(workdir / "hello.txt")})
            assert _text(read).strip() == "hello from the filesystem"
            written = await agent.call_tool(
                "fs__write_file", {"path": str(workdir / "new.txt"), "content": "bridged"}
            )
            assert written["success"], written
            assert (workdir / "new.txt").read_text(encoding="utf-8") == "bridged"
            outside = await agent.call_tool("fs__read_text_file", {"path": "/etc/hostname"})
            assert outside["success"] is False
            denied = await agent.call_tool("fs__move_file", {"source": "a", "destination": "b"})
            assert denied["error_code"] == "mcp_tool_not_found"
            allowed = await agent.call_tool("fs__list_allowed_directories")
            assert str(workdir.resolve()) in _text(allowed)
            await agent.unregister("fs")


# The command line ---------------------------------------------------------------------------


async def test_cli_bridge_over_stdio_with_a_config(tmp_path: Path) -> None:
    lines: list[Any] = []
    config = {
        "servers": [{"server_id": "cfg", "cmd": EXAMPLE, "name": "from the config"}],
        "roots": [{"uri": "file:///from/config", "name": "cfg-root"}],
        "ping_interval": 0.2,
    }
    with trio.fail_after(BUDGET):
        async with open_a2e_stdio(
            config=config, on_message=lambda d, m: lines.append((d, m))
        ) as agent:
            info = await wait_for_status(agent, "cfg", "ready")
            assert info["name"] == "from the config"
            roots = await agent.call_tool("cfg__list_roots")
            assert "file:///from/config" in _text(roots)
            with trio.fail_after(5):
                while not (await agent.list_servers())[0]["last_ping_ms"]:
                    await trio.sleep(0.05)
    # everything the bridge wrote on stdout was A2E (no stray prints)
    assert agent.undecodable == []
    assert all(m.version == "1.0" for d, m in lines if d == "<-")


async def test_cli_rejects_bad_configs(tmp_path: Path) -> None:
    config = tmp_path / "bridge.json"
    for text, message in (
        ("{", "not JSON"),
        ('{"servers": [{"server_id": "a__b", "cmd": ["x"]}]}', "__"),
        ('{"servers": {}}', "array"),
        ('{"roots": [{"uri": 5}]}', "uri"),
        ('{"surprise": 1}', "unknown key(s): 'surprise'"),
    ):
        config.write_text(text, encoding="utf-8")
        done = await trio.run_process(
            [sys.executable, "-m", "sansio_mcp_cli", "bridge", "--config", str(config)],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2, text
        assert message in done.stderr.decode(), (text, done.stderr)
    done = await trio.run_process(
        [sys.executable, "-m", "sansio_mcp_cli", "bridge", "--listen", "tcp://x"],
        capture_stderr=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and b"--listen" in done.stderr


async def test_cli_bridge_over_websocket() -> None:
    with trio.fail_after(BUDGET):
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "sansio_mcp_cli", "bridge", "--listen", "ws://127.0.0.1:0"],
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
            assert url.startswith("ws://127.0.0.1:") and url.endswith("/a2e")
            async with open_a2e_ws(url) as agent:
                await agent.ping()
                info = await agent.register({"server_id": "w", "cmd": EXAMPLE})
                assert info["status"] == "ready"
                result = await agent.call_tool("w__echo", {"message": "over ws"})
                assert _text(result) == "over ws"
                with pytest.raises(ConnectionError, match="409"):
                    async with open_a2e_ws(url):
                        pass  # one agent at a time
            # The next agent finds the server still registered.
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
        assert process.returncode == 0  # SIGTERM is a clean stop


async def test_a_bridge_that_dies_fails_requests_at_once() -> None:
    """The agent's requests fail with ConnectionError once the bridge is gone,
    instead of waiting for their time limits."""
    from leaks import children

    with trio.fail_after(BUDGET):
        before = set(children())
        async with open_a2e_stdio() as agent:
            await agent.ping()
            (pid,) = [p for p in children() if p not in before]
            os.kill(pid, signal.SIGKILL)
            with trio.fail_after(5):
                while not agent.closed:
                    await trio.sleep(0.01)
            with trio.fail_after(1), pytest.raises(ConnectionError):
                await agent.list_servers()


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_unregistering_closes_the_connections_kept_alive(transport: str) -> None:
    """The bridge's HTTP clients keep connections alive between requests; when
    the server goes, so do they (closed, not left for the garbage collector)."""
    import gc

    gc.disable()
    try:
        with trio.fail_after(BUDGET):
            async with trio.open_nursery() as nursery:
                url = await _serve(transport, nursery)
                port = int(url.rsplit(":", 1)[1].split("/")[0])
                async with running_bridge() as (_, agent):
                    await agent.register({"server_id": "net", "transport": transport, "url": url})
                    for _ in range(3):
                        await agent.call_tool("net__add", {"a": 1, "b": 2})
                    assert established_connections(port, far_end=True) >= 1
                    await agent.unregister("net")
                    with trio.fail_after(5):
                        while established_connections(port, far_end=True):
                            await trio.sleep(0.02)
                nursery.cancel_scope.cancel()
    finally:
        gc.enable()
