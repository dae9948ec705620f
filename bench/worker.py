"""One measurement in a fresh process: ``python -m bench.worker KIND 'JSON-ARGS'``.

It prints one JSON object as its last line of output (``{"error": ...}`` on
failure).  The orchestrator (:mod:`bench.cli`) starts these; each is bounded
in time by its ``deadline`` argument (seconds for the timed loop) and by the
orchestrator's subprocess timeout.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from ._proc import REPO

MESSAGE = "hello, bench"
_pc = time.perf_counter


# Timing ---------------------------------------------------------------------------


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


# stdio clients ----------------------------------------------------------------------


def _process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode()
        fields = raw[raw.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def stdio(args: dict[str, Any]) -> dict[str, Any]:
    """Sequential echo calls over stdio with one client implementation."""
    impl = args["impl"]
    command: list[str] = args["command"]
    expect: str = args["expect"]
    arguments = {"message": MESSAGE}
    n, warmup, deadline = args["calls"], args["warmup"], args["deadline"]

    if impl == "raw":
        from .raw_client import RawStdioClient

        client = RawStdioClient(command, cwd=str(REPO))
        try:
            client.initialize()

            def call() -> str:
                return str(client.call_tool("echo", arguments)["content"][0]["text"])

            for _ in range(warmup):
                call()
            before = _process_cpu(client.process.pid)
            result = sync_timed_calls(call, expect, n, 0, deadline)
            after = _process_cpu(client.process.pid)
            if before is not None and after is not None and result["calls"]:
                result["server_cpu_us_per_call"] = (after - before) / result["calls"] * 1e6
            return result
        finally:
            client.close()

    if impl == "trio":
        import trio

        from trio_adapters import open_stdio_client as trio_open

        async def main_trio() -> dict[str, Any]:
            async with trio_open(command, mode="legacy", cwd=REPO, inherit_env=True) as client:

                async def call() -> str:
                    result = await client.call_tool("echo", arguments)
                    return str(result["content"][0]["text"])

                return await timed_calls(call, expect, n, warmup, deadline)

        return trio.run(main_trio)

    if impl == "asyncio":
        import asyncio

        from asyncio_adapters import open_stdio_client as asyncio_open

        async def main_asyncio() -> dict[str, Any]:
            async with asyncio_open(command, mode="legacy", cwd=REPO, inherit_env=True) as client:

                async def call() -> str:
                    result = await client.call_tool("echo", arguments)
                    return str(result["content"][0]["text"])

                return await timed_calls(call, expect, n, warmup, deadline)

        return asyncio.run(main_asyncio())

    if impl == "sdk":
        import anyio
        import mcp
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=command[0], args=command[1:], cwd=str(REPO), env=dict(os.environ)
        )

        async def main_sdk() -> dict[str, Any]:
            with open(os.devnull, "w") as errlog:
                async with mcp.Client(stdio_client(params, errlog=errlog), mode="legacy") as client:

                    async def call() -> str:
                        result = await client.call_tool("echo", arguments)
                        return str(result.content[0].text)  # type: ignore[union-attr]

                    return await timed_calls(call, expect, n, warmup, deadline)

        return anyio.run(main_sdk, backend="asyncio")

    raise ValueError(f"unknown stdio client {impl!r}")


# HTTP clients ------------------------------------------------------------------------


def http(args: dict[str, Any]) -> dict[str, Any]:
    """Sequential echo calls over Streamable HTTP: one client implementation,
    several jobs (server URL, mode) in turn.  Returns ``{"jobs": [...]}``."""
    impl = args["impl"]
    jobs: list[dict[str, Any]] = args["jobs"]
    arguments = {"message": MESSAGE}
    n, warmup, deadline = args["calls"], args["warmup"], args["deadline"]
    results: list[dict[str, Any]] = []

    def record(job: dict[str, Any], fn: Callable[[], dict[str, Any]]) -> None:
        try:
            results.append({**job, **fn()})
        except BaseException as exc:  # one failed pairing must not hide the others
            if isinstance(exc, KeyboardInterrupt):
                raise
            results.append({**job, "error": _describe(exc)})

    if impl in ("trio", "asyncio"):
        if impl == "trio":
            import trio

            from trio_adapters.http_client import open_http_client as trio_open

            run: Callable[[Callable[[], Awaitable[dict[str, Any]]]], dict[str, Any]] = trio.run
            open_http_client: Any = trio_open
        else:
            import asyncio

            from asyncio_adapters.http_client import open_http_client as asyncio_open

            def run(fn: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
                return asyncio.run(fn())  # type: ignore[arg-type]

            open_http_client = asyncio_open

        for job in jobs:

            async def one(job: dict[str, Any] = job) -> dict[str, Any]:
                async with open_http_client(job["url"], mode=job["mode"]) as client:
                    tool = job.get("tool", "echo")  # a gateway names it {connector}.echo

                    async def call() -> str:
                        result = await client.call_tool(tool, arguments)
                        return str(result["content"][0]["text"])

                    # server-everything's echo answers "Echo: <message>".
                    expect = job.get("expect", MESSAGE)
                    return await timed_calls(call, expect, n, warmup, deadline)

            record(job, partial(run, one))
        return {"jobs": results}

    if impl == "sdk":
        import warnings

        import anyio
        import mcp

        warnings.simplefilter("ignore")

        for job in jobs:
            mode = "legacy" if job["mode"] == "legacy" else "2026-07-28"

            async def one_sdk(job: dict[str, Any] = job, mode: str = mode) -> dict[str, Any]:
                async with mcp.Client(job["url"], mode=mode) as client:

                    async def call() -> str:
                        result = await client.call_tool("echo", arguments)
                        return str(result.content[0].text)  # type: ignore[union-attr]

                    return await timed_calls(call, MESSAGE, n, warmup, deadline)

            record(job, partial(anyio.run, one_sdk, backend="asyncio"))
        return {"jobs": results}

    raise ValueError(f"unknown HTTP client {impl!r}")


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


# The rest ----------------------------------------------------------------------------


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


def bridge(args: dict[str, Any]) -> dict[str, Any]:
    """Row 7: the example server's echo called by our Trio client directly
    (``direct``), or through the A2E bridge: ``inprocess`` (the bridge in the
    agent's process and event loop, the in-process A2E transport) or ``stdio``
    (an A2E agent -> ``sansio-mcp bridge`` as a child process over stdio).  The
    server is always a child on stdio, spoken to in the handshake revision.
    ``client_cpu_us_per_call`` is this process's CPU (agent and bridge, for
    ``inprocess``); ``bridge_cpu_us_per_call`` the bridge process's (``stdio``)."""
    import trio

    server = args.get("server") or [sys.executable, "-m", "sansio_mcp_cli", "example-server"]
    arguments = {"message": MESSAGE}
    n, warmup, deadline = args["calls"], args["warmup"], args["deadline"]
    impl = args["impl"]

    if impl == "direct":
        from trio_adapters import open_stdio_client

        async def direct() -> dict[str, Any]:
            async with open_stdio_client(server, mode="legacy", cwd=REPO, inherit_env=True) as c:

                async def call() -> str:
                    result = await c.call_tool("echo", arguments)
                    return str(result["content"][0]["text"])

                return await timed_calls(call, MESSAGE, n, warmup, deadline)

        return trio.run(direct)

    from sansio_mcp_apps.a2e.adapters.trio_client import A2EClient, open_a2e_direct, open_a2e_stdio

    async def measure(agent: A2EClient, bridge_pid: int | None) -> dict[str, Any]:
        await agent.register(
            {"server_id": "ex", "cmd": server, "cwd": str(REPO), "protocol_version": "legacy"}
        )

        async def call() -> str:
            result = await agent.call_tool("ex__echo", arguments)
            if not result.get("success"):
                raise RuntimeError(str(result.get("error")))
            return str(result["data"]["content"][0]["text"])

        for _ in range(warmup):
            await call()
        before = _process_cpu(bridge_pid) if bridge_pid is not None else None
        figures = await timed_calls(call, MESSAGE, n, 0, deadline)
        after = _process_cpu(bridge_pid) if bridge_pid is not None else None
        if before is not None and after is not None and figures.get("calls"):
            figures["bridge_cpu_us_per_call"] = (after - before) / figures["calls"] * 1e6
        return figures

    async def inprocess() -> dict[str, Any]:
        async with open_a2e_direct() as agent:
            return await measure(agent, None)

    async def stdio() -> dict[str, Any]:
        before = set(_child_pids())
        async with open_a2e_stdio(cwd=str(REPO), env={"PYTHONPATH": str(REPO)}) as agent:
            (pid,) = [p for p in _child_pids() if p not in before] or [None]
            return await measure(agent, pid)

    if impl == "inprocess":
        return trio.run(inprocess)
    if impl == "stdio":
        return trio.run(stdio)
    raise ValueError(f"unknown row-7 variant {impl!r}")


def load(args: dict[str, Any]) -> dict[str, Any]:
    from .loadgen import run_load

    return run_load(**args)


def codec(args: dict[str, Any]) -> dict[str, Any]:
    from .codec import run_codec

    return run_codec(**args)


def memory(args: dict[str, Any]) -> dict[str, Any]:
    from .memory import run_memory

    return run_memory(**args)


def a2a(args: dict[str, Any]) -> dict[str, Any]:
    from .a2a import run_a2a

    return run_a2a(**args)


def gateway_stdio(args: dict[str, Any]) -> dict[str, Any]:
    from .gateway_stdio import worker_job

    return dict(worker_job(args))


def server_cpu(args: dict[str, Any]) -> dict[str, Any]:
    from .replicas import server_cpu

    return server_cpu(args)


KINDS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "server_cpu": server_cpu,  # row 13 (bench/replicas.py)
    "stdio": stdio,
    "http": http,
    "load": load,
    "bridge": bridge,
    "codec": codec,
    "memory": memory,
    "a2a": a2a,
    "gateway_stdio": gateway_stdio,
}


def main() -> None:
    kind, raw = sys.argv[1], sys.argv[2]
    try:
        args = json.loads(raw)
        cpus = args.pop("cpus", None)
        if cpus is not None:  # --pin: this process (and what it starts) on these CPUs
            os.sched_setaffinity(0, set(cpus))
        result = KINDS[kind](args)
    except BaseException as exc:
        traceback.print_exc()
        result = {"error": _describe(exc)}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
