"""Faults through real processes: servers killed mid-call, reconnect with backoff,
re-synced tools, a chatty stderr, and 200 kill-and-reconnect cycles that leave
no process or file descriptor behind."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
import trio
from leaks import children, open_fds

from sansio_mcp_apps.a2e.adapters.trio_client import A2EClient

from .conftest import running_bridge, wait_for_status

pytestmark = pytest.mark.usefixtures("no_leaked_children")

FAST_RECONNECT = {"reconnect_base": 0.02, "reconnect_max": 0.1}


async def _pid(agent: A2EClient, server_id: str = "t") -> int:
    result = await agent.call_tool(f"{server_id}__pid")
    assert result["success"], result
    return int(result["data"]["content"][0]["text"])


async def _boot_tool(agent: A2EClient) -> str:
    (name,) = [t["name"] for t in await agent.list_tools() if "__boot_" in t["name"]]
    return name


async def test_kill_mid_call_fails_it_then_reconnects_and_resyncs(tiny_command: list[str]) -> None:
    with trio.fail_after(60):
        async with running_bridge(reconnect_base=0.3, reconnect_max=1.0) as (_, agent):
            info = await agent.register({"server_id": "t", "cmd": tiny_command})
            assert info["status"] == "ready"
            pid = await _pid(agent)
            assert await _boot_tool(agent) == f"t__boot_{pid}"
            outcome: dict[str, Any] = {}

            async def slow_call() -> None:
                outcome["result"] = await agent.call_tool("t__sleep", {"seconds": 30})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow_call)
                await trio.sleep(0.2)  # the call is in flight
                os.kill(pid, signal.SIGKILL)
            result = outcome["result"]
            assert result["success"] is False
            assert result["error_code"] == "mcp_transport_error"
            assert result["retryable"] is True
            # The status shows it (reconnecting in 0.15-0.3 s).
            (info,) = await agent.list_servers()
            assert info["status"] in ("disconnected", "connecting"), info
            assert info["error"]
            down = await agent.call_tool("t__pid")
            if info["status"] != "ready":
                assert down["error_code"] == "mcp_server_unavailable" and down["retryable"]
            info = await wait_for_status(agent, "t", "ready")
            assert info["error"] == ""
            new_pid = await _pid(agent)
            assert new_pid != pid
            # Tools were re-synced from the new process.
            assert await _boot_tool(agent) == f"t__boot_{new_pid}"
            await agent.unregister("t")


async def test_list_changed_resyncs_tools(tiny_command: list[str]) -> None:
    with trio.fail_after(30):
        async with running_bridge() as (_, agent):
            await agent.register({"server_id": "t", "cmd": tiny_command})
            assert await agent.call_tool("t__grow")
            await agent.wait_for_push(lambda p: p.method == "notifications/tools/list_changed")
            with trio.fail_after(5):
                while "t__extra_0" not in {t["name"] for t in await agent.list_tools()}:
                    await trio.sleep(0.01)
            (info,) = await agent.list_servers()
            assert info["tools_count"] == 7


async def test_a_server_that_never_reconnects_stays_down(tiny_command: list[str]) -> None:
    with trio.fail_after(30):
        async with running_bridge(**FAST_RECONNECT) as (_, agent):
            await agent.register({"server_id": "t", "cmd": tiny_command, "auto_reconnect": False})
            os.kill(await _pid(agent), signal.SIGKILL)
            info = await wait_for_status(agent, "t", "disconnected")
            assert "exited" in info["error"] or "closed" in info["error"]
            await trio.sleep(0.3)
            (info,) = await agent.list_servers()
            assert info["status"] == "disconnected"


async def test_chatty_stderr_does_not_block_the_server(tiny_command: list[str]) -> None:
    """Reference defect: stderr was never drained, so a chatty server deadlocked."""
    with trio.fail_after(30):
        async with running_bridge() as (_, agent):
            info = await agent.register(
                {"server_id": "t", "cmd": tiny_command, "env": {"TINY_STDERR_KB": "1024"}}
            )
            assert info["status"] == "ready"
            assert (await agent.call_tool("t__pid"))["success"]


async def test_a_command_that_does_not_exist_fails_registration() -> None:
    with trio.fail_after(30):
        async with running_bridge() as (_, agent):
            from sansio_mcp_apps.a2e.adapters.trio_client import A2ERequestError

            with pytest.raises(A2ERequestError) as failure:
                await agent.register({"server_id": "x", "cmd": ["/no/such/mcp-server"]})
            assert failure.value.code == "mcp_transport_error"
            assert "/no/such/mcp-server" in failure.value.message


async def test_200_kill_and_reconnect_cycles_leave_nothing_behind(tiny_command: list[str]) -> None:
    before_children = set(children())
    with trio.fail_after(150):
        async with running_bridge(**FAST_RECONNECT) as (_, agent):
            await agent.register({"server_id": "t", "cmd": tiny_command})
            pid = await _pid(agent)
            fds = len(open_fds())
            seen = {pid}
            for _ in range(200):
                os.kill(pid, signal.SIGKILL)
                with trio.fail_after(10):
                    while True:
                        result = await agent.call_tool("t__pid")
                        if result["success"]:
                            pid = int(result["data"]["content"][0]["text"])
                            if pid not in seen:
                                break
                        else:
                            assert result["error_code"] in (
                                "mcp_transport_error",
                                "mcp_server_unavailable",
                            ), result
                            await trio.sleep(0.005)
                seen.add(pid)
            assert len(seen) == 201
            (info,) = await agent.list_servers()
            assert info["status"] == "ready"
            # Only the one live server process is a child; descriptors did not pile up.
            live = {p: what for p, what in children().items() if p not in before_children}
            assert list(live) == [pid], live
            assert len(open_fds()) <= fds + 4, (open_fds(), fds)
            await agent.unregister("t")
    with trio.fail_after(5):
        while {p for p in children() if p not in before_children}:
            await trio.sleep(0.02)
