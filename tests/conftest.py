"""Suite-wide set-up, and the fixtures more than one test directory uses."""

from __future__ import annotations

import signal

import pytest
from hypothesis import HealthCheck, settings
from peers import EVERYTHING, node_for

# Hypothesis times each example, and the generation of its data, by the wall clock. With the
# tests running side by side (scripts/test.sh runs pytest-xdist) on a shared machine, that
# measures the load rather than the code: no deadline and no too-slow health check, suite-wide.
# What a test checks, and how many examples it tries, stay its own.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


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


# --- redis (issue 33) ---
# (This block's own imports, here so that other blocks' edits merge cleanly.)
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

from redis_service import RedisService  # noqa: E402


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:PORT/0`` of a real redis-server for the session (one per
    xdist worker), stopped after; skips with one line when redis-server is missing.
    Tests share it: each uses a namespace of its own (``open_stores(namespace=...)``)."""
    service = RedisService(tmp_path_factory.mktemp("redis"))
    service.start()
    try:
        yield service.url
    finally:
        service.stop()


@pytest.fixture
def redis_service(tmp_path: Path) -> Iterator[RedisService]:
    """A redis-server of this test's own, to stop and start again (``stop()``,
    ``start()``, ``restart()``: the same ``url``); stopped after the test."""
    service = RedisService(tmp_path)
    service.start()
    try:
        yield service
    finally:
        service.stop()
