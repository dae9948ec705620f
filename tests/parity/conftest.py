"""Fixtures of the parity suite: the backends, the (server, client) backend pairs,
and a leak check around every test.

Each test body runs in its own event loop (see :func:`tests.parity.harness.run`),
which also fails a test that leaves an asyncio task behind; here, after the
test, no new socket, pipe or eventfd may be open in this process and no child
process (running or unreaped) may remain.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from .harness import BACKEND_NAMES, PAIRS

_GRACE = 3.0


@pytest.fixture(params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend: "trio" or "asyncio"."""
    return str(request.param)


@pytest.fixture(params=PAIRS, ids=[f"{s}-server-{c}-client" for s, c in PAIRS])
def pair(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(server backend, client backend): both same-backend pairs and both cross pairs."""
    server, client = request.param
    return str(server), str(client)


def _open_fds() -> dict[int, str]:
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the listing's own fd, closed meanwhile
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


def _idle_worker(thread: threading.Thread) -> bool:
    """Trio's worker-thread cache (``trio.to_thread``, process reaping) keeps idle
    threads for reuse; they hold no file descriptors and are not a leak."""
    return thread.name.startswith("Trio thread")


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail a test that leaves a socket, pipe, eventfd, child process or thread behind."""
    if not os.path.isdir("/proc/self/fd"):  # pragma: no cover - Linux only
        yield
        return
    fds_before = _open_fds()
    children_before = set(_children())
    threads_before = set(threading.enumerate())
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
        leaked_threads = [
            t.name
            for t in threading.enumerate()
            if t not in threads_before and t.is_alive() and not _idle_worker(t)
        ]
        if (
            not leaked_fds and not leaked_children and not leaked_threads
        ) or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for pid in leaked_children:  # so one leak does not cascade into the next tests
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
    if leaked_threads:
        problems.append(f"threads left running: {leaked_threads}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)
