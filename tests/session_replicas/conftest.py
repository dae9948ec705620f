"""Fixtures of the shared handshake-session tests (issue 33)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from leaks import leak_check

from tests.auth.test_http import Backend


@pytest.fixture(params=["trio", "asyncio"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test runs once on Trio and once on asyncio."""
    return Backend(request.param)


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every connection a test opens is closed, every process it starts stopped (the
    session's redis-server, asked for first, outlives the test by design)."""
    callspec = getattr(request.node, "callspec", None)
    late = callspec is not None and "redis" in callspec.params.values()
    if late or "redis_url" in request.fixturenames:
        request.getfixturevalue("redis_url")
    if "redis_service" in request.fixturenames:
        request.getfixturevalue("redis_service")
    yield from leak_check(fds=True, grace=3.0)
