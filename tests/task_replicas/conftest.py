"""Fixtures of the shared-task tests (issue 33)."""

from __future__ import annotations

import pytest

from tests.auth.test_http import Backend


@pytest.fixture(params=["trio", "asyncio"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test runs once on Trio and once on asyncio."""
    return Backend(request.param)
