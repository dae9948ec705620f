"""Where the suite's third-party peers are, how it runs the ``sansio-mcp`` command, and
loopback ports for peers that cannot report the one they bound."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NPM = REPO / "node_modules" / "@modelcontextprotocol"
#: server-everything's entry point (``node EVERYTHING stdio``).
EVERYTHING = NPM / "server-everything" / "dist" / "index.js"
#: server-filesystem's entry point (``node FILESYSTEM <root>``).
FILESYSTEM = NPM / "server-filesystem" / "dist" / "index.js"


def node_for(*entries: Path) -> str:
    """The ``node`` that runs the npm peers at ``entries``; skips the test when node
    or a peer is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH; the npm interop peers need Node 20+")
    for entry in entries:
        if not entry.is_file():
            pytest.skip(f"{entry} is missing: run `npm ci` in {REPO} to install the npm peers")
    return node


def free_port() -> int:
    """A loopback port that was free a moment ago (for peers that cannot bind port 0
    and report it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli_command() -> list[str]:
    """This interpreter's ``sansio-mcp`` script (else ``python -m sansio_mcp_cli``)."""
    beside = Path(sys.executable).with_name("sansio-mcp")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("sansio-mcp")
    return [found] if found else [sys.executable, "-m", "sansio_mcp_cli"]


def run_cli(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``sansio-mcp *args`` in its own process group, so a hang cannot strand its server;
    never interactive (answers come from the options)."""
    with subprocess.Popen(
        [*cli_command(), *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            pytest.fail(f"sansio-mcp {' '.join(args)} timed out; stderr:\n{stderr}")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
