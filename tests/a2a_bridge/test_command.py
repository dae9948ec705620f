"""``sansio-mcp a2a-bridge`` as a user runs it (a child process, each backend), with the
official Python SDK (``mcp``) as the MCP client on both eras, and its Host/Origin guard."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client as SDKClient
from mcp import types as sdk

from .conftest import BACKENDS

BUDGET = 60

pytestmark = pytest.mark.interop


@contextmanager
def bridge_command(config: dict[str, Any], tmp_path: Path, backend: str) -> Iterator[str]:
    """The command serving ``config`` on an ephemeral port: its URL (stopped after, by
    SIGTERM, which it must take as a clean stop)."""
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sansio_mcp_cli",
            "a2a-bridge",
            "--config",
            str(path),
            "--port",
            "0",
            "--backend",
            backend,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None and process.stdout is not None
        line = process.stderr.readline().decode()
        assert line.startswith("sansio-mcp a2a-bridge: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].split(" ", 1)[0]
        process.stderr.readline()  # "Paste this ..."
        block = json.loads(b"".join(process.stdout.readline() for _ in range(8)))
        assert block == {"mcpServers": {"a2a-bridge": {"type": "http", "url": url}}}
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail("the bridge did not stop on SIGTERM")
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert code == 0


def run_sdk(body: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(BUDGET):
            await body()

    anyio.run(bounded, backend="asyncio")


def sdk_text(result: sdk.CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, sdk.TextContent)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_sdk_client(agent_url: str, tmp_path: Path, backend: str, mode: str) -> None:
    asked: list[str] = []

    async def elicitation(context: Any, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        asked.append(params.message)
        return sdk.ElicitResult(action="accept", content={"answer": f"a{len(asked)}"})

    config = {"agents": {"fixture": {"url": agent_url}}}
    with bridge_command(config, tmp_path, backend) as url:

        async def body() -> None:
            async with SDKClient(url, mode=mode, elicitation_callback=elicitation) as client:
                tools = await client.list_tools()
                assert {t.name for t in tools.tools} == {
                    "a2a_discover",
                    "a2a_send_message",
                    "a2a_get_task",
                    "a2a_cancel_task",
                }
                card = await client.call_tool("a2a_discover", {})
                assert card.structured_content is not None
                assert card.structured_content["name"] == "fixture"
                done = await client.call_tool("a2a_send_message", {"text": "task: sdk"})
                assert done.is_error is False
                assert sdk_text(done) == ["done", "kds"]
                envelope = done.structured_content or {}
                assert envelope["a2aState"] == "TASK_STATE_COMPLETED"
                two = await client.call_tool("a2a_send_message", {"text": "ask2: pair"})
                assert sdk_text(two)[-1] == "pair: a1, a2"
                assert asked == [
                    "What value should I use for pair?",
                    "And a second value for pair?",
                ]
                error = await client.call_tool("a2a_send_message", {"text": "error:-32005"})
                assert error.is_error is True
                assert (error.structured_content or {})["a2aErrorCode"] == -32005
                data = await client.call_tool("a2a_send_message", {"text": "data: sdk"})
                assert (data.structured_content or {})["data"] == {"answer": 42, "echo": "sdk"}

        run_sdk(body)


def test_host_and_origin(agent_url: str, tmp_path: Path) -> None:
    """Loopback only, unless allowedHosts names more."""
    config = {"agents": {"fixture": {"url": agent_url}}, "allowedHosts": ["bridge.example"]}
    with bridge_command(config, tmp_path, "trio") as url:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"accept": "application/json, text/event-stream"}

        def post(**extra: str) -> int:
            return httpx.post(url, json=ping, headers={**headers, **extra}, timeout=10).status_code

        assert post(host="evil.example") == 403
        assert post(origin="http://evil.example") == 403
        assert post(host="bridge.example") != 403
        assert post(host="localhost", origin="http://localhost:1") != 403


def test_bad_config(tmp_path: Path) -> None:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps({"agents": {"x": {"url": "ftp://nope"}}}))
    done = subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli", "a2a-bridge", "--config", str(path)],
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert b"agents.x.url must be an http:// or https:// URL" in done.stderr
