"""Where the suite's third-party peers are, and loopback ports for peers that cannot
report the one they bound."""

from __future__ import annotations

import shutil
import socket
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
