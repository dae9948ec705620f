"""Shared fixtures for the interop suite: peer locations and a child-process leak check."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sansio_mcp import HANDSHAKE_REVISIONS

REPO = Path(__file__).resolve().parents[2]
EVERYTHING_DIST = REPO / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
EVERYTHING_ENTRY = EVERYTHING_DIST / "index.js"
SDK_SERVER = Path(__file__).resolve().parent / "sdk_server.py"
EXAMPLE_SERVER = [sys.executable, "-m", "sansio_mcp_cli", "example-server"]

#: Every handshake revision, for ``parametrize("protocol_version", ...)``.
REVISIONS = tuple(HANDSHAKE_REVISIONS)

_LEAK_GRACE = 2.0


@pytest.fixture
def everything_command() -> list[str]:
    """The command that runs server-everything over stdio (skips when it is not installed)."""
    if not EVERYTHING_ENTRY.is_file():
        pytest.skip(
            f"server-everything is not installed ({EVERYTHING_ENTRY} is missing): "
            f"run `npm ci` in {REPO} to install the npm interop peers"
        )
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH; the server-everything interop tests need Node 20+")
    return [node, str(EVERYTHING_ENTRY), "stdio"]


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


# Child-process leak check ------------------------------------------------------------


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(ppid, state, comm) of ``pid`` from /proc/<pid>/stat, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], comm


def _children() -> dict[int, str]:
    """Children of this process (zombies included): pid -> "comm (state)"."""
    me = os.getpid()
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        info = _stat(int(entry))
        if info is not None and info[0] == me:
            found[int(entry)] = f"{info[2]} (state {info[1]})"
    return found


def _reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)  # SIGKILL cannot be ignored: this returns at once
    except ChildProcessError:
        pass  # already reaped (by whoever spawned it)


@pytest.fixture(autouse=True)
def no_leaked_children():
    """Fail a test that leaves a child process (running or unreaped) behind."""
    if not os.path.isdir("/proc/self"):
        yield  # pragma: no cover - /proc is Linux only
        return
    before = set(_children())
    yield
    deadline = time.monotonic() + _LEAK_GRACE
    while True:
        leaked = {pid: what for pid, what in _children().items() if pid not in before}
        if not leaked or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if leaked:
        for pid in leaked:  # stop them so one leak does not cascade into the next tests
            _reap(pid)
        pytest.fail(f"child processes left running after the test: {leaked}", pytrace=False)
