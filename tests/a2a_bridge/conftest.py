"""Fixtures of the A2A bridge tests: the fixture agent (a child process on an ephemeral
loopback port, stopped after), and the bridge served in-process on either backend."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("a2a")

from sansio_mcp.runtime import TransportBackend
from sansio_mcp_apps.a2a import BridgeConfig, parse_config
from sansio_mcp_apps.a2a.runtime import A2ABridge

BACKENDS = ("trio", "asyncio")
AGENT_MODULE = "sansio_mcp_testing.a2a_agent"


@contextmanager
def running_agent(*extra: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The fixture agent in a child process: its URL and the process (stopped after)."""
    process = subprocess.Popen(
        [sys.executable, "-m", AGENT_MODULE, "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("a2a fixture agent: "), f"the agent said {line!r}"
        yield line.split(": ", 1)[1].strip(), process
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with running_agent() as (url, _):
        yield url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> TransportBackend:
    if request.param == "asyncio":
        from asyncio_adapters import BACKEND as asyncio_backend

        return asyncio_backend
    from trio_adapters import BACKEND as trio_backend

    return trio_backend


def config_for(url: str, **extra: Any) -> BridgeConfig:
    return parse_config({"agents": {"fixture": {"url": url}}, **extra})


async def serving(
    backend: TransportBackend,
    config: BridgeConfig,
    body: Callable[[str, A2ABridge], Awaitable[Any]],
    **options: Any,
) -> Any:
    """Serve an :class:`A2ABridge` on ``backend`` at an ephemeral loopback port and
    run ``body(url, bridge)``; the listener stops after."""
    bridge = A2ABridge(config, backend, **options)
    bound = backend.new_signal()
    port: list[int] = []

    def on_bound(value: int) -> None:
        port.append(value)
        bound.set()

    listeners: dict[str, Any] = getattr(backend, "listeners")  # noqa: B009
    try:
        async with backend.open_task_group() as group:
            group.start_soon(
                getattr(backend, "serve_network"),  # noqa: B009
                listeners["http"],
                bridge.server,
                "127.0.0.1",
                0,
                on_bound,
            )
            await bound.wait()
            try:
                return await body(f"http://127.0.0.1:{port[0]}/mcp", bridge)
            finally:
                group.cancel()
    finally:
        await bridge.aclose()
