"""Fixtures for the bridge tests: peers, an in-process bridge, and a leak check."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from leaks import leak_check
from peers import FILESYSTEM, node_for

from sansio_mcp_apps.a2e import BridgeHost
from sansio_mcp_apps.a2e.adapters.trio_bridge import TrioBridge, serve_agent_stream
from sansio_mcp_apps.a2e.adapters.trio_client import A2EClient, open_a2e_streams

REPO = Path(__file__).resolve().parents[2]
TINY = Path(__file__).resolve().parent / "tiny_server.py"
EXAMPLE = [sys.executable, "-m", "sansio_mcp_cli", "example-server"]


@pytest.fixture
def filesystem_entry() -> list[str]:
    return [node_for(FILESYSTEM), str(FILESYSTEM)]


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


@pytest.fixture
def no_leaked_children() -> Iterator[None]:
    yield from leak_check(fds=False, grace=3.0)


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
