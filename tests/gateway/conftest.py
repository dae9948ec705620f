"""Real upstreams and a real gateway process for the gateway tests: the
``sansio-mcp gateway`` command on either backend, server-everything and
server-filesystem over stdio, our example server over HTTP."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
from leaks import leak_check
from peers import EVERYTHING, FILESYSTEM, free_port, node_for

from sansio_mcp_apps.example_server import TOOL_NAMES

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "sansio_mcp_cli"]
BACKENDS = ("trio", "asyncio")
API_KEY = "test-key-1"
#: The example server's tools (the bundled server, at either transport).
EXAMPLE_TOOLS = set(TOOL_NAMES)


@pytest.fixture(autouse=True)
def no_leaked_children(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves a child process behind.  The session's redis-server,
    when a test asks for it late (a ``redis`` parameter), starts first: it outlives
    the test by design."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "redis" in callspec.params.values():
        request.getfixturevalue("redis_url")
    yield from leak_check(fds=False, grace=2.0)


def node() -> str:
    return node_for(EVERYTHING, FILESYSTEM)


class Process:
    """A child whose stderr is drained (and kept) by a thread, so it never blocks."""

    def __init__(self, argv: list[str], *, cwd: Path = REPO) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} from {self.proc.args}: {self.lines[-20:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)


@contextmanager
def example_http(port: int, transport: str = "http") -> Iterator[Process]:
    """Our example server on ``port``: Streamable HTTP (both eras at /mcp), or the
    legacy HTTP+SSE (``sse``, at /sse) or WebSocket (``ws``, at /mcp) transport."""
    server = Process([*CLI, "example-server", "--transport", transport, "--port", str(port)])
    try:
        server.wait_for(r"example server: (http|ws)://")
        yield server
    finally:
        server.stop()


@contextmanager
def gateway(config: dict[str, Any], backend: str, tmp_path: Path, *options: str) -> Iterator[str]:
    """``sansio-mcp gateway`` on ``backend`` with ``config`` (and more ``options``);
    yields its URL."""
    path = tmp_path / f"gateway-{backend}.json"
    path.write_text(json.dumps(config))
    argv = [*CLI, "gateway", "--config", str(path), "--port", "0", "--backend", backend]
    process = Process([*argv, *options])
    try:
        found = process.wait_for(r"sansio-mcp gateway: (http://\S+)", timeout=60)
        yield found.group(1)
    finally:
        process.stop()
        assert process.proc.returncode == 0, process.lines[-20:]


def everything_connector(**tools: Any) -> dict[str, Any]:
    return {"transport": "stdio", "cmd": [node(), str(EVERYTHING), "stdio"], "tools": tools}


def filesystem_connector(root: Path) -> dict[str, Any]:
    return {"transport": "stdio", "cmd": [node(), str(FILESYSTEM), str(root)]}


def handshake_example_connector() -> dict[str, Any]:
    """The example server over stdio, speaking the handshake revisions alone (it asks
    mid-call by requests of its own)."""
    script = Path(__file__).with_name("handshake_example_server.py")
    return {
        "transport": "stdio",
        "cmd": [sys.executable, str(script)],
        "env": {"PYTHONPATH": str(REPO)},
    }


def example_stdio_connector() -> dict[str, Any]:
    return {"transport": "stdio", "cmd": [*CLI, "example-server"], "env": {"PYTHONPATH": str(REPO)}}


@attrs.frozen
class Setup:
    url: str
    files_root: Path
    example_url: str


@pytest.fixture(scope="package", params=BACKENDS)
def setup(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    """One gateway per backend: server-everything (echo described anew, get-sum
    disabled), server-filesystem on a directory with one file, the example server
    over HTTP."""
    tmp = tmp_path_factory.mktemp(f"gw-{request.param}")
    root = tmp / "files"
    root.mkdir()
    (root / "hello.txt").write_text("hello through the gateway\n")
    port = free_port()
    with example_http(port):
        config = {
            "connectors": {
                "everything": everything_connector(
                    echo={"description": "Echo, through the gateway"},
                    **{"get-sum": {"enabled": False}},
                ),
                "files": filesystem_connector(root),
                "example": {"transport": "http", "url": f"http://127.0.0.1:{port}/mcp"},
            },
            "api_keys": [API_KEY],
            # Its handshake-era clients are asked too (outside the spec; off by default).
            "relay_questions_to_handshake_clients": True,
            # /mcp/ex: the example server alone, on the global key.
            "virtual_mcps": {"ex": {"connectors": ["example"]}},
        }
        with gateway(config, request.param, tmp) as url:
            yield Setup(url, root, f"http://127.0.0.1:{port}/mcp")


@pytest.fixture
def gateway_url(setup: Setup) -> str:
    return setup.url


async def serve_router_on(backend: Any, group: Any, adapters: str, server: Any, router: Any) -> int:
    """Serve ``router`` in ``group`` with ``adapters``' HTTP server; its port."""
    import importlib
    from functools import partial

    http_server = importlib.import_module(f"{adapters}.http_server")
    bound: list[int] = []
    listener = partial(http_server.serve_router, router=router)
    group.start_soon(backend.serve_network, listener, server, "127.0.0.1", 0, bound.append)
    async with backend.fail_after(10):
        while not bound:
            await backend.sleep(0.01)
    return bound[0]


async def wait_ready(backend: Any, gateway: Any) -> None:
    """Until every connector of ``gateway`` is ready."""
    async with backend.fail_after(15):
        while any(s["status"] != "ready" for s in gateway.status().values()):
            await backend.sleep(0.02)


async def serve_gateway(
    backend: Any, group: Any, adapters: str, config: Any, opener: Any = None
) -> tuple[Any, str]:
    """A gateway over ``config`` run and served in ``group``, every connector ready
    (``opener``: the backend's transports by default); it and its endpoint URL."""
    from sansio_mcp_apps.gateway.runtime import Gateway, transport_opener

    gateway = Gateway(config, backend, opener or transport_opener(backend))
    group.start_soon(gateway.run)
    await wait_ready(backend, gateway)
    port = await serve_router_on(backend, group, adapters, gateway.server, gateway.router())
    return gateway, f"http://127.0.0.1:{port}/mcp"
