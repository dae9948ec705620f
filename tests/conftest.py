"""Suite-wide set-up, and the fixtures more than one test directory uses."""

from __future__ import annotations

import signal

import pytest
from peers import EVERYTHING, node_for


def pytest_configure() -> None:
    # A run started with SIGINT or SIGTERM ignored (a shell's background job, nohup, some CI
    # runners) would hand that to every server the tests start, and they would never hear
    # the signal their fixtures stop them with. A handler of our own is reset to the default
    # in each child at exec, where an ignored signal stays ignored.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture(scope="session")
def everything_command() -> list[str]:
    """The command that runs server-everything over stdio (skips when it is not installed)."""
    return [node_for(EVERYTHING), str(EVERYTHING), "stdio"]
