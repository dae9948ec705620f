"""Fixtures of the replica tests: fresh keys, and a check that no replica or nginx
outlives its test."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from leaks import leak_check


@pytest.fixture(autouse=True)
def no_leaked_children() -> Iterator[None]:
    """Fail a test that leaves a replica or nginx behind."""
    yield from leak_check(fds=False, grace=2.0)


@pytest.fixture
def keys() -> tuple[bytes, bytes]:
    """Two fresh 32-byte keys: ``old`` and ``new``."""
    return secrets.token_bytes(32), secrets.token_bytes(32)
