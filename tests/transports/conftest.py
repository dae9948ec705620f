"""Fixtures for the network transport tests: leak checks (file descriptors,
child processes) around every test, and the servers under test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from leaks import leak_check

from sansio_mcp.runtime import Server
from sansio_mcp_apps.example_server import build_server


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail a test that leaves a socket, pipe or child process behind.

    Every server a test starts must be stopped and every connection closed by
    the time the test returns (the Trio run, with its own epoll and wakeup
    fds, is over by then too).
    """
    yield from leak_check(fds=True, grace=3.0)


@pytest.fixture
def example() -> Server:
    """A fresh bundled example server (tools echo, add, slow, sample, elicit, ...)."""
    return build_server()
