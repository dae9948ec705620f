"""Fixtures for the network transport tests: leak checks (file descriptors,
child processes) around every test, and the servers under test."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from sansio_mcp.runtime import Server
from sansio_mcp_apps.example_server import build_server

_GRACE = 3.0


def _open_fds() -> dict[int, str]:
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the directory's own fd, closed while listing
    return found


def _children() -> dict[int, str]:
    """Children of this process (zombies included): pid -> "comm (state)"."""
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
            found[int(entry)] = f"{raw[raw.index('(') + 1 : raw.rindex(')')]} (state {fields[0]})"
    return found


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail a test that leaves a socket, pipe or child process behind.

    Every server a test starts must be stopped and every connection closed by
    the time the test returns (the Trio run, with its own epoll and wakeup
    fds, is over by then too).
    """
    if not os.path.isdir("/proc/self/fd"):  # pragma: no cover - Linux only
        yield
        return
    fds_before = _open_fds()
    children_before = set(_children())
    yield
    deadline = time.monotonic() + _GRACE
    while True:
        leaked_fds = {
            fd: target
            for fd, target in _open_fds().items()
            if fds_before.get(fd) != target
            and target.startswith(("socket:", "pipe:", "anon_inode:"))
        }
        leaked_children = {p: w for p, w in _children().items() if p not in children_before}
        if (not leaked_fds and not leaked_children) or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for pid in leaked_children:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    problems = []
    if leaked_fds:
        problems.append(f"file descriptors left open: {leaked_fds}")
    if leaked_children:
        problems.append(f"child processes left running: {leaked_children}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


@pytest.fixture
def example() -> Server:
    """A fresh bundled example server (tools echo, add, slow, sample, elicit, ...)."""
    return build_server()
