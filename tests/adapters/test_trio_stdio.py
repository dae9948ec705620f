"""The Trio stdio adapter against real subprocesses."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import pytest
import trio

from sansio_mcp import ConnectionClosedError, InvalidParams
from sansio_mcp_apps.example_server import TOOL_NAMES
from trio_adapters import open_stdio_client

FIXTURE = [sys.executable, str(Path(__file__).with_name("fixture_server.py"))]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def _server_pid(client: object) -> int:
    result = await client.call_tool("pid")  # type: ignore[attr-defined]
    return int(result["content"][0]["text"])


async def test_child_gets_minimal_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANSIO_SECRET_TOKEN", "do-not-leak")
    async with open_stdio_client(FIXTURE, env={"EXTRA_VAR": "yes"}) as client:
        result = await client.call_tool("env")
    env = result["structuredContent"]
    assert env["EXTRA_VAR"] == "yes"
    assert "SANSIO_SECRET_TOKEN" not in env
    assert "PATH" in env


async def test_inherit_env_passes_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANSIO_SECRET_TOKEN", "visible")
    async with open_stdio_client(FIXTURE, inherit_env=True) as client:
        env = (await client.call_tool("env"))["structuredContent"]
    assert env["SANSIO_SECRET_TOKEN"] == "visible"


async def test_chatty_stderr_never_blocks() -> None:
    # 4 MiB of stderr is far beyond a pipe buffer: without draining, the server would hang.
    with trio.fail_after(20):
        async with open_stdio_client([*FIXTURE, "--chatty", "4096"]) as client:
            result = await client.call_tool("echo", {"message": "still here"})
    assert result["content"][0]["text"] == "still here"


async def test_close_stops_the_process_and_leaks_no_fds() -> None:
    before = _open_fds()
    async with open_stdio_client(FIXTURE) as client:
        pid = await _server_pid(client)
        assert _alive(pid)
    assert not _alive(pid)
    assert _open_fds() == before


async def test_stubborn_server_is_killed() -> None:
    with trio.fail_after(15):
        async with open_stdio_client([*FIXTURE, "--stubborn"], shutdown_grace=0.5) as client:
            pid = await _server_pid(client)
    assert not _alive(pid)


async def test_handlers_run_concurrently() -> None:
    async with open_stdio_client(FIXTURE) as client:
        order: list[str] = []

        async def slow() -> None:
            await client.call_tool("wait", {"seconds": 1.0})
            order.append("slow")

        async def fast() -> None:
            await trio.sleep(0.1)
            await client.call_tool("echo", {"message": "x"})
            order.append("fast")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            nursery.start_soon(fast)
    assert order == ["fast", "slow"]


async def test_cancellation_reaches_the_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="trio_adapters.stdio")
    async with open_stdio_client(FIXTURE) as client:
        with trio.move_on_after(0.3) as scope:
            await client.call_tool("wait", {"seconds": 30})
        assert scope.cancelled_caught
        assert client.session.pending_requests == frozenset()
        # The server's handler saw the cancellation (it says so on stderr, which we log).
        with trio.fail_after(5):
            while "wait cancelled" not in caplog.text:
                await trio.sleep(0.05)
        # The session goes on after the cancel.
        assert (await client.call_tool("echo", {"message": "after"}))["content"][0][
            "text"
        ] == "after"


async def test_typed_errors_cross_the_adapter() -> None:
    async with open_stdio_client(FIXTURE) as client:
        with pytest.raises(InvalidParams, match="unknown tool"):
            await client.call_tool("nope")


async def test_server_exit_fails_pending_requests() -> None:
    script = (
        "import sys, json\n"
        "line = sys.stdin.readline(); msg = json.loads(line)\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': {"
        "'protocolVersion': msg['params']['protocolVersion'], 'capabilities': {'tools': {}},"
        " 'serverInfo': {'name': 'quitter', 'version': '1'}}}), flush=True)\n"
        "sys.stdin.readline(); sys.stdin.readline()\n"
    )
    with trio.fail_after(10):
        async with open_stdio_client([sys.executable, "-c", script], mode="legacy") as client:
            with pytest.raises(ConnectionClosedError):
                await client.call_tool("anything")


async def test_missing_command_is_an_os_error() -> None:
    with pytest.raises(OSError):
        async with open_stdio_client(["/nonexistent/definitely-not-here"]):
            pass


async def test_cli_inspect_and_call_against_example_server() -> None:
    example = [sys.executable, "-m", "sansio_mcp_cli", "example-server", "--page-size", "2"]
    cli = [sys.executable, "-m", "sansio_mcp_cli"]
    inspect = await trio.run_process([*cli, "inspect", "--", *example], capture_stdout=True)
    report = json.loads(inspect.stdout)
    assert set(report) >= {
        "protocolVersion",
        "serverInfo",
        "capabilities",
        "tools",
        "resources",
        "resourceTemplates",
        "prompts",
    }
    assert "echo" in [t["name"] for t in report["tools"]]
    assert {t["name"] for t in report["tools"]} == TOOL_NAMES  # gathered over pages of 2
    called = await trio.run_process(
        [
            *cli,
            "call",
            "add",
            "--args",
            '{"a": 2, "b": 3}',
            "--protocol-version",
            "2024-11-05",
            "--",
            *example,
        ],
        capture_stdout=True,
    )
    assert json.loads(called.stdout)["structuredContent"] == {"sum": 5}
    failed = await trio.run_process(
        [*cli, "call", "fail", "--args", '{"message": "x"}', "--", *example],
        capture_stdout=True,
        check=False,
    )
    assert failed.returncode == 1 and json.loads(failed.stdout)["isError"] is True
    bad = await trio.run_process(
        [*cli, "call", "echo", "--args", "[1]", "--", *example],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert bad.returncode == 2 and b"JSON object" in bad.stderr


async def test_demo_runs() -> None:
    """``sansio-mcp demo``: the bridge tour (a scripted A2E agent, the exchange shown)."""
    demo = await trio.run_process(
        [sys.executable, "-m", "sansio_mcp_cli", "demo"], capture_stdout=True
    )
    out = demo.stdout.decode()
    for step in (
        "mcp/server/register/req",
        "mcp/server/register/resp",
        "tool/list/resp",
        "ex__add input_schema",
        "tool/event",
        "mcp/sample/req",
        "mcp/sample/resp",
        "x-mcp/elicit/req",
        "mcp/resource/list/resp",
        "mcp/resource/read/resp",
        "binary resource",
        "mcp/server/push",
        "mcp/prompt/get/resp",
        "mcp_resource_not_found",
        "mcp_sampling_refused",
        "mcp/server/unregister/resp",
        "Demo complete",
    ):
        assert step in out, step


async def test_mcp_demo_runs() -> None:
    """``sansio-mcp demo --mcp``: our MCP client tours the example server directly."""
    demo = await trio.run_process(
        [sys.executable, "-m", "sansio_mcp_cli", "demo", "--mcp"], capture_stdout=True
    )
    out = demo.stdout.decode()
    for step in (
        "handshake",
        "echo",
        "progress",
        "cancellation",
        "timeout",
        "sample",
        "elicit",
        "list_roots",
        "binary resource",
        "listen + increment",
        "survey",
        "Demo complete",
    ):
        assert step in out, step
