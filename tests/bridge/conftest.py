"""Fixtures for the bridge tests: peers, an in-process bridge, and a leak check."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from sansio_mcp_apps.a2e import BridgeHost
from sansio_mcp_apps.a2e.adapters.trio_bridge import TrioBridge, serve_agent_stream
from sansio_mcp_apps.a2e.adapters.trio_client import A2EClient, open_a2e_streams

REPO = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO / "node_modules" / "@modelcontextprotocol"
EVERYTHING = NODE_MODULES / "server-everything" / "dist" / "index.js"
FILESYSTEM = NODE_MODULES / "server-filesystem" / "dist" / "index.js"
TINY = Path(__file__).resolve().parent / "tiny_server.py"
EXAMPLE = [sys.executable, "-m", "sansio_mcp_cli", "example-server"]


def _node_command(entry: Path) -> str:
    node = shutil.which("node")
    if node is None or not entry.is_file():
        pytest.skip(f"{entry.name} needs node and `npm ci` ({entry} is missing)")
    return node


@pytest.fixture
def everything_command() -> list[str]:
    return [_node_command(EVERYTHING), str(EVERYTHING), "stdio"]


@pytest.fixture
def filesystem_entry() -> list[str]:
    return [_node_command(FILESYSTEM), str(FILESYSTEM)]


@pytest.fixture
def tiny_command() -> list[str]:
    return [sys.executable, "-I", str(TINY)]


@asynccontextmanager
async def running_bridge(
    *, shutdown_grace: float = 1.0, **host_options: Any
) -> AsyncIterator[tuple[TrioBridge, A2EClient]]:
    """A :class:`TrioBridge` in this process and an :class:`A2EClient` talking NDJSON to it."""
    host_options.setdefault("ping_interval", None)
    bridge = TrioBridge(BridgeHost(**host_options), shutdown_grace=shutdown_grace)
    agent_side, client_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(bridge.run)
        nursery.start_soon(serve_agent_stream, bridge, agent_side, agent_side)
        async with open_a2e_streams(client_side, client_side) as client:
            yield bridge, client
        nursery.cancel_scope.cancel()


async def wait_for_status(
    client: A2EClient, server_id: str, status: str, *, timeout: float = 15.0
) -> dict[str, Any]:
    with trio.fail_after(timeout):
        while True:
            for info in await client.list_servers():
                if info["server_id"] == server_id and info["status"] == status:
                    return info
            await trio.sleep(0.005)


# Child-process leak check ---------------------------------------------------------------


def children() -> dict[int, str]:
    """Children of this process (zombies too): pid -> "comm (state)"."""
    me = os.getpid()
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        if int(fields[1]) == me:
            found[int(entry)] = f"{raw[raw.index('(') + 1 : raw.rindex(')')]} ({fields[0]})"
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def no_leaked_children() -> Any:
    if not os.path.isdir("/proc/self"):
        yield
        return
    before = set(children())
    yield
    deadline = time.monotonic() + 3.0
    while True:
        leaked = {pid: what for pid, what in children().items() if pid not in before}
        if not leaked or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    assert not leaked, f"child processes left behind: {leaked}"


def established_connections(port: int, *, far_end: bool) -> int:
    """This process's established TCP connections whose far end (``far_end``) or
    own end is ``port``: a client's connections to a server, or a server's from
    its clients."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    column = 2 if far_end else 1
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in f.read().splitlines()[1:]:
                fields = row.split()
                end_port = int(fields[column].rsplit(":", 1)[1], 16)
                if end_port == port and fields[3] == "01" and fields[9] in inodes:
                    count += 1
    return count
