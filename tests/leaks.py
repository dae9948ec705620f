"""The leak check the suite's conftests run around their tests: no socket, pipe or
eventfd, no child process (running or unreaped) and, where asked, no thread may
outlive the test that made it. Linux only (/proc); elsewhere nothing is checked."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator

import pytest

_KINDS = ("socket:", "pipe:", "anon_inode:")


def open_fds() -> dict[int, str]:
    """This process's file descriptors: fd -> what /proc says it is."""
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the listing's own fd, closed meanwhile
    return found


def children() -> dict[int, str]:
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


def reap(pids: Iterable[int]) -> None:
    """Kill and reap ``pids``, so one test's leak does not cascade into the next tests."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)  # SIGKILL cannot be ignored: this returns at once
        except ChildProcessError:
            pass  # already reaped (by whoever spawned it)


def _idle_worker(thread: threading.Thread) -> bool:
    """Trio's worker-thread cache (``trio.to_thread``, process reaping) keeps idle
    threads for reuse; they hold no file descriptors and are not a leak."""
    return thread.name.startswith("Trio thread")


def leak_check(*, fds: bool, threads: bool = False, grace: float = 3.0) -> Iterator[None]:
    """The body of an autouse fixture: what the test leaves behind (children always,
    descriptors if ``fds``, threads if ``threads``) fails it, after ``grace`` seconds
    for things that are on their way out."""
    if not os.path.isdir("/proc/self/fd"):  # pragma: no cover - Linux only
        yield
        return
    fds_before = open_fds() if fds else {}
    children_before = set(children())
    threads_before = set(threading.enumerate()) if threads else set()
    yield
    deadline = time.monotonic() + grace
    while True:
        leaked_fds = (
            {
                fd: target
                for fd, target in open_fds().items()
                if fds_before.get(fd) != target and target.startswith(_KINDS)
            }
            if fds
            else {}
        )
        leaked_children = {p: w for p, w in children().items() if p not in children_before}
        leaked_threads = (
            [
                t.name
                for t in threading.enumerate()
                if t not in threads_before and t.is_alive() and not _idle_worker(t)
            ]
            if threads
            else []
        )
        if (
            not leaked_fds and not leaked_children and not leaked_threads
        ) or time.monotonic() >= deadline:
            break
        time.sleep(0.05)  # a poll interval: the loop ends as soon as nothing is left
    reap(leaked_children)
    problems = []
    if leaked_fds:
        problems.append(f"file descriptors left open: {leaked_fds}")
    if leaked_children:
        problems.append(f"child processes left running: {leaked_children}")
    if leaked_threads:
        problems.append(f"threads left running: {leaked_threads}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)
