"""Shared fixtures for the interop suite: peer locations, an HTTP server in a child, and a
child-process leak check (server-everything's command is the suite-wide ``everything_command``)."""

from __future__ import annotations

import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from leaks import leak_check

from sansio_mcp import HANDSHAKE_REVISIONS

REPO = Path(__file__).resolve().parents[2]
SDK_SERVER = Path(__file__).resolve().parent / "sdk_server.py"
EXAMPLE_SERVER = [sys.executable, "-m", "sansio_mcp_cli", "example-server"]

#: Every handshake revision, for ``parametrize("protocol_version", ...)``.
REVISIONS = tuple(HANDSHAKE_REVISIONS)


@contextmanager
def http_server(*script: str) -> Iterator[str]:
    """``run_http_server.py`` (the example server, or ``script``'s ``build_server()``)
    in a child process; yields its /mcp URL and stops it by closing its stdin."""
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve().parent / "run_http_server.py"), *script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=str(REPO),
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 15)
        assert ready, "the HTTP server did not report its port in time"
        line = process.stdout.readline().decode()
        assert line.startswith("PORT "), f"unexpected first line from the HTTP server: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        assert process.stdin is not None
        process.stdin.close()  # the script's signal to stop
        try:
            code = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail("the HTTP server did not stop when its stdin was closed")
        assert process.stdout is not None
        process.stdout.close()
    assert code == 0


@pytest.fixture(autouse=True)
def no_leaked_children() -> Iterator[None]:
    """Fail a test that leaves a child process (running or unreaped) behind."""
    yield from leak_check(fds=False, grace=2.0)
