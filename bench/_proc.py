"""Child processes for the benchmarks: workers that measure, servers they talk to.

Everything the harness starts is a child of ``python -m bench``; every child
is bounded in time and stopped (stdin closed, SIGTERM, SIGKILL) by the pid
we started, never by name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
EVERYTHING = (
    REPO / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)
SDK_ECHO = REPO / "bench" / "servers" / "sdk_echo.py"
RELAY = REPO / "bench" / "servers" / "relay.py"


def child_env() -> dict[str, str]:
    """The environment for every child: ours, with the repo importable and
    bytecode caching on (so start-up is not spent compiling)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def node() -> str | None:
    return shutil.which("node")


def everything_command() -> list[str] | None:
    """server-everything over stdio, or None when node or the package is missing."""
    exe = node()
    if exe is None or not EVERYTHING.is_file():
        return None
    return [exe, str(EVERYTHING), "stdio"]


def everything_http_command() -> tuple[list[str], dict[str, str]] | None:
    """server-everything over Streamable HTTP on a free loopback port (its command
    and the environment that names the port), or None when node or it is missing."""
    command = everything_command()
    if command is None:
        return None
    with socket.socket() as sock:  # it takes no port 0: a free one, closed just before
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return [*command[:-1], "streamableHttp"], {"PORT": str(port)}


def example_server_command(backend: str, *extra: str) -> list[str]:
    return [PY, "-m", "sansio_mcp_cli", "example-server", "--backend", backend, *extra]


def sdk_server_command(transport: str) -> list[str]:
    return [PY, str(SDK_ECHO), transport]


#: Where the stdio rows put a client and its server (``python -m bench --pin``):
#: ``off`` leaves it to the kernel; ``same`` runs both on CPU 0; ``split`` runs
#: the client on CPU 0 and the server on CPU 1.
PIN_MODES = ("off", "same", "split")


def pinned(mode: str, server: Sequence[str]) -> tuple[set[int] | None, list[str]]:
    """The CPUs for a worker, and its server's command, under pin ``mode``."""
    if mode == "off":
        return None, list(server)
    if mode == "same":
        return {0}, list(server)  # the server inherits the worker's CPU
    return {0}, [PY, "-m", "bench.pin", "1", "--", *server]


class WorkerError(Exception):
    pass


def run_worker(kind: str, args: dict[str, Any], *, timeout: float) -> dict[str, Any]:
    """Run ``python -m bench.worker kind args`` and return the JSON it prints last."""
    cmd = [PY, "-m", "bench.worker", kind, json.dumps(args)]
    try:
        proc = subprocess.run(
            cmd,
            cwd=REPO,
            env=child_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            text=True,
        )
    except subprocess.TimeoutExpired:
        raise WorkerError(f"worker {kind} timed out after {timeout:.0f} s") from None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
        raise WorkerError(f"worker {kind} failed (exit {proc.returncode}): " + " | ".join(tail))
    result: dict[str, Any] = json.loads(lines[-1])
    if "error" in result:
        raise WorkerError(f"worker {kind}: {result['error']}")
    return result


def stop(process: subprocess.Popen[Any], grace: float = 5.0, *, polite: bool = True) -> None:
    """Close stdin, then SIGTERM, then SIGKILL: the process we started, by its pid."""
    if process.stdin is not None and not process.stdin.closed:
        try:
            process.stdin.close()
        except OSError:
            pass
    if polite:
        try:
            process.wait(timeout=min(grace, 2.0))
            return
        except subprocess.TimeoutExpired:
            pass
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


_URL = re.compile(rb"(?:(?:PORT|listening on port) (\d+))|(?:http://127\.0\.0\.1:(\d+)/)")


@contextmanager
def http_server(
    command: Sequence[str], *, timeout: float = 30.0, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Start an HTTP server (``env`` added to its environment) that announces its
    port (``PORT n``, ``listening on port n`` or its URL) and yield
    ``http://127.0.0.1:n/mcp``.  Its output goes to a temporary file, so it can
    never block on a full pipe."""
    with http_server_process(command, timeout=timeout, env=env) as (url, _):
        yield url


@contextmanager
def http_server_process(
    command: Sequence[str],
    *,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    polite: bool = False,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """:func:`http_server`, yielding the process too (to read its CPU); ``polite``
    gives it time to end on its own once its stdin closes."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            list(command),
            cwd=REPO,
            env={**child_env(), **(env or {})},
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + timeout
            port = None
            while port is None:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-600:].decode("utf-8", "replace")
                    raise WorkerError(f"server {command[-3:]} did not start: {tail}")
                time.sleep(0.02)
                log.seek(0)
                match = _URL.search(log.read())
                if match:
                    port = int(match.group(1) or match.group(2))
            yield f"http://127.0.0.1:{port}/mcp", process
        finally:
            stop(process, polite=polite)


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []
