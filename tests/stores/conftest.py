"""Fixtures of the store tests: both backends, and a leak check around each test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from leaks import leak_check


@pytest.fixture(params=["trio", "asyncio"])
def backend(request: pytest.FixtureRequest) -> Any:
    """Each test runs once on Trio and once on asyncio (the adapter's ``BACKEND``)."""
    if request.param == "trio":
        from trio_adapters import BACKEND
    else:
        from asyncio_adapters import BACKEND  # type: ignore[assignment]
    return BACKEND


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every connection a test opens is closed, every redis-server it starts stopped.
    The session's redis-server, when the test asks for it late (a parameter), starts
    first: it outlives the test by design."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "redis" in callspec.params.values():
        request.getfixturevalue("redis_url")
    yield from leak_check(fds=True, grace=3.0)
