"""Timing and CPU readings every bench row shares: timed call loops, their summary,
and a process's CPU from ``/proc`` (the figures workers and rows report)."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

_pc = time.perf_counter

MESSAGE = "hello, bench"


def summarize(
    latencies: list[float], wall: float, errors: int, requested: int, cpu: float = 0.0
) -> dict[str, Any]:
    latencies = sorted(latencies)
    n = len(latencies)
    if n == 0 or wall <= 0:
        return {"calls": 0, "seconds": wall, "errors": errors, "calls_per_s": 0.0}
    return {
        "calls": n,
        "seconds": round(wall, 6),
        "errors": errors,
        "calls_per_s": n / wall,
        "us_per_call": wall / n * 1e6,
        "client_cpu_us_per_call": cpu / n * 1e6,
        "p50_us": latencies[n // 2] * 1e6,
        "p90_us": latencies[min(n - 1, (n * 9) // 10)] * 1e6,
        "p99_us": latencies[min(n - 1, (n * 99) // 100)] * 1e6,
        "truncated": n < requested,
    }


async def timed_calls(
    call: Callable[[], Awaitable[str]], expect: str, calls: int, warmup: int, deadline: float
) -> dict[str, Any]:
    """``warmup`` untimed calls, then ``calls`` timed ones (stopping at ``deadline`` s)."""
    for _ in range(warmup):
        await call()
    errors = 0
    latencies: list[float] = []
    cpu = time.process_time()
    start = _pc()
    stop_at = start + deadline
    for _ in range(calls):
        t0 = _pc()
        try:
            if await call() != expect:
                errors += 1
        except Exception:
            errors += 1
        t1 = _pc()
        latencies.append(t1 - t0)
        if t1 > stop_at:
            break
    return summarize(latencies, _pc() - start, errors, calls, time.process_time() - cpu)


def sync_timed_calls(
    call: Callable[[], str], expect: str, calls: int, warmup: int, deadline: float
) -> dict[str, Any]:
    for _ in range(warmup):
        call()
    errors = 0
    latencies: list[float] = []
    cpu = time.process_time()
    start = _pc()
    stop_at = start + deadline
    for _ in range(calls):
        t0 = _pc()
        try:
            if call() != expect:
                errors += 1
        except Exception:
            errors += 1
        t1 = _pc()
        latencies.append(t1 - t0)
        if t1 > stop_at:
            break
    return summarize(latencies, _pc() - start, errors, calls, time.process_time() - cpu)


def _process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode()
        fields = raw[raw.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _child_pids() -> list[int]:
    """Processes whose parent is this one (Linux)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    raw = f.read().decode()
            except OSError:
                continue
            if int(raw[raw.rindex(")") + 2 :].split()[1]) == me:
                found.append(int(entry))
    return found


def listener_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:``port`` (Linux), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(f"socket:[{fields[9]}]")
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    if not inodes:
        return None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") in inodes:
                    return int(entry)
            except OSError:
                continue
    return None


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def _with_server_cpu(url: str, calls: int, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``fn()``'s figures, plus ``server_cpu_us_per_call``: the CPU of the process
    serving ``url`` during ``fn``, over ``calls``."""
    pid = listener_pid(_port(url))
    before = _process_cpu(pid) if pid else None
    value = fn()
    after = _process_cpu(pid) if pid else None
    if before is not None and after is not None and calls:
        value["server_cpu_us_per_call"] = (after - before) / calls * 1e6
    return value
