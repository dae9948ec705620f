"""Fixtures of the parity suite: the backends, the (server, client) backend pairs,
and a leak check around every test.

Each test body runs in its own event loop (see :func:`tests.parity.harness.run`),
which also fails a test that leaves an asyncio task behind; here, after the
test, no new socket, pipe or eventfd may be open in this process and no child
process (running or unreaped) may remain.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from leaks import leak_check

from .harness import BACKEND_NAMES, PAIRS


@pytest.fixture(params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend: "trio" or "asyncio"."""
    return str(request.param)


@pytest.fixture(params=PAIRS, ids=[f"{s}-server-{c}-client" for s, c in PAIRS])
def pair(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(server backend, client backend): both same-backend pairs and both cross pairs."""
    server, client = request.param
    return str(server), str(client)


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail a test that leaves a socket, pipe, eventfd, child process or thread behind."""
    yield from leak_check(fds=True, threads=True, grace=3.0)
