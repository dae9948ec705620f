"""The gateway with its upstream on stdio, against a minimal pass-through gateway
and a direct call (issue 37).

Our Trio client makes sequential ``tools/call echo`` calls to the example server
(over stdio, on Trio) three ways: directly over stdio; through
``bench/servers/mini_gateway.py`` (about 100 lines of asyncio: parse, rename the
tool, forward, relay the answer); and through ``sansio-mcp gateway`` (Trio and
asyncio), the last two serving the client handshake-era Streamable HTTP on
loopback.  The variants alternate, their order turned each round; each round
gives the time per call (wall clock, the client's) and the gateway process's own
CPU per call (``/proc/PID/stat``, user + system; the upstream is its child and not
counted).  The ratios are per round, then min / median / max.

Run: ``python -m bench.gateway_stdio [--rounds N] [--calls N] [--warmup N]``;
``--profile`` counts Python calls per call (cProfile), ``--instructions`` machine
instructions per call (callgrind), both load-independent.  It is also row 14 of
``python -m bench`` (each variant timed in a worker, ``bench.worker gateway_stdio``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._proc import (
    PY,
    REPO,
    WorkerError,
    child_env,
    example_server_command,
    http_server_process,
    run_worker,
)
from .stdio_cpu import _PROFILED, TICKS, _cpu_ticks

if TYPE_CHECKING:
    from ._model import Counts, Results

MINI = REPO / "bench" / "servers" / "mini_gateway.py"
UPSTREAM = example_server_command("trio")
VARIANTS = ("direct", "mini", "gateway-trio", "gateway-asyncio")
#: Row 14's calls, in HTTP rows' calls (``Counts.http_calls``).
ROW14_CALLS_FACTOR = 4
#: The fewest clock ticks of the gateway's CPU a row-14 figure is given from.
MIN_TICKS = 10
ROW14_TITLE = (
    "gateway, upstream on stdio: tools/call echo through our gateway vs a minimal "
    "pass-through gateway vs direct"
)
ROW14_LABELS = {
    "direct": "Trio client -> example server (stdio, direct)",
    "mini": "Trio client -> mini gateway (HTTP, ~100 lines) -> stdio",
    "gateway-trio": "Trio client -> gateway (trio, HTTP) -> stdio",
    "gateway-asyncio": "Trio client -> gateway (asyncio, HTTP) -> stdio",
}


@contextmanager
def http_server(command: list[str]) -> Iterator[tuple[str, int]]:
    """Start a server that prints its port; its URL and pid."""
    with http_server_process(command, polite=True) as (url, process):
        yield url, process.pid


async def _timed(call: Any, n: int, warmup: int, pid: int | None) -> dict[str, float]:
    for _ in range(warmup):
        await call()
    ticks = _cpu_ticks(pid) if pid else 0
    start = time.perf_counter()
    for _ in range(n):
        await call()
    wall = time.perf_counter() - start
    out = {"us_per_call": wall / n * 1e6}
    if pid:
        ticks = _cpu_ticks(pid) - ticks
        out["hop_cpu_ticks"] = ticks
        out["hop_cpu_us_per_call"] = ticks / TICKS / n * 1e6
    return out


def measure(variant: str, target: tuple[str, int] | None, n: int, warmup: int) -> dict[str, float]:
    """One variant's figures (``target``: the gateway's URL and pid, None: direct)."""
    import trio

    from trio_adapters.client import open_stdio_client
    from trio_adapters.http_client import open_http_client

    arguments = {"message": "hello"}

    async def run() -> dict[str, float]:
        if target is None:
            opened: Any = open_stdio_client(UPSTREAM, cwd=str(REPO), env=child_env())
            tool = "echo"
        else:
            opened = open_http_client(target[0], mode="legacy")
            tool = "ex.echo"
        async with opened as client:

            async def call() -> None:
                result = await client.call_tool(tool, arguments)
                assert result["content"][0]["text"] == "hello", result

            return await _timed(call, n, warmup, target[1] if target else None)

    return trio.run(run)


def worker_job(args: dict[str, Any]) -> dict[str, float]:
    """``python -m bench.worker gateway_stdio``: one variant's figures, with calls/s."""
    target = (args["url"], args["pid"]) if args.get("url") else None
    out = measure(args["variant"], target, args["calls"], args["warmup"])
    out["calls_per_s"] = 1e6 / out["us_per_call"]
    if out.get("hop_cpu_ticks", MIN_TICKS) < MIN_TICKS:
        del out["hop_cpu_us_per_call"]  # a few clock ticks say nothing (a --quick run)
    return out


@contextmanager
def _targets() -> Iterator[dict[str, tuple[str, int] | None]]:
    """The mini gateway and ours on each backend, running, before the upstream."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        config = folder / "gateway.json"
        connector = {"transport": "stdio", "cmd": UPSTREAM, "cwd": str(REPO)}
        config.write_text(json.dumps({"connectors": {"ex": connector}}))
        targets: dict[str, tuple[str, int] | None] = {"direct": None}
        targets["mini"] = stack.enter_context(http_server([PY, str(MINI), "ex", "--", *UPSTREAM]))
        for backend in ("trio", "asyncio"):
            command = [PY, "-m", "sansio_mcp_cli", "gateway", "--config", str(config),
                       "--port", "0", "--backend", backend]  # fmt: skip
            targets[f"gateway-{backend}"] = stack.enter_context(http_server(command))
        yield targets


def row14(results: Results, c: Counts, rnd: int, log: Any) -> None:
    """Row 14 of ``python -m bench``: the variants in one round, their order turned."""
    with ExitStack() as stack:
        try:
            targets = stack.enter_context(_targets())
        except WorkerError as exc:
            for variant in VARIANTS:
                results.add(14, variant, ROW14_LABELS[variant], {"error": str(exc)})
            return
        order = VARIANTS[rnd % len(VARIANTS) :] + VARIANTS[: rnd % len(VARIANTS)]
        for variant in order:
            target = targets[variant]
            args = {
                "variant": variant,
                "url": target[0] if target else None,
                "pid": target[1] if target else None,
                # Four times an HTTP row's calls: the CPU is read in clock ticks of 10 ms.
                "calls": ROW14_CALLS_FACTOR * c.http_calls,
                "warmup": c.http_warmup,
            }
            try:
                value = run_worker("gateway_stdio", args, timeout=c.worker_timeout)
            except WorkerError as exc:
                value = {"error": str(exc)}
            results.add(14, variant, ROW14_LABELS[variant], value)
            log(f"    row 14 {ROW14_LABELS[variant]}: {value.get('error') or value['us_per_call']}")


def run_rounds(rounds: int, n: int, warmup: int) -> dict[str, list[dict[str, float]]]:
    figures: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    with _targets() as targets:
        for rnd in range(rounds):
            order = VARIANTS[rnd % len(VARIANTS) :] + VARIANTS[: rnd % len(VARIANTS)]
            for variant in order:
                figures[variant].append(measure(variant, targets[variant], n, warmup))
    return figures


def _ratios(top: list[dict[str, float]], bottom: list[dict[str, float]], key: str) -> str:
    """Per-round ``top / bottom`` of ``key``, as min / median / max."""
    values = [t[key] / max(b[key], 1e-9) for t, b in zip(top, bottom, strict=True)]
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def report(figures: dict[str, list[dict[str, float]]]) -> list[str]:
    """The table's lines: per variant, time and hop CPU per call; per gateway, the
    per-round ratios (min / median / max) against the mini gateway and direct."""
    lines = []
    for variant, rounds in figures.items():
        times = " ".join(f"{r['us_per_call']:.0f}" for r in rounds)
        cpu = " ".join(f"{r['hop_cpu_us_per_call']:.0f}" for r in rounds if len(r) > 1)
        lines.append(f"{variant:16} us/call {times:30} gateway CPU us/call {cpu or '-'}")
    mini, direct = figures["mini"], figures["direct"]
    for backend in ("trio", "asyncio"):
        ours = figures[f"gateway-{backend}"]
        lines.append(
            f"gateway ({backend}) / mini: time {_ratios(ours, mini, 'us_per_call')}, "
            f"CPU {_ratios(ours, mini, 'hop_cpu_us_per_call')}; / direct: time "
            f"{_ratios(ours, direct, 'us_per_call')} (min / median / max)"
        )
    lines.append(f"mini / direct: time {_ratios(mini, direct, 'us_per_call')}")
    return lines


#: What ``--profile`` counts: each gateway, and the example server over Streamable
#: HTTP (the same HTTP service, no upstream), by the CLI arguments that start it.
PROFILED = ("gateway-trio", "gateway-asyncio", "http-trio", "http-asyncio")


def _profile_run(variant: str, config: Path, calls: int, out: str) -> None:
    """Start ``variant`` under cProfile, make ``calls`` calls, stop it (stats in ``out``)."""
    kind, backend = variant.split("-")
    if kind == "gateway":
        args = ["gateway", "--config", str(config), "--port", "0"]
        target = "ex.echo"
    else:
        args = ["example-server", "--transport", "http", "--port", "0"]
        target = "echo"
    command = [PY, "-c", _PROFILED, *args, "--backend", backend]
    with http_server_process(command, env={"BENCH_PROFILE_OUT": out}, polite=True) as (url, _):
        import trio

        from trio_adapters.http_client import open_http_client

        async def run() -> None:
            async with open_http_client(url, mode="legacy") as client:
                for _ in range(calls):
                    await client.call_tool(target, {"message": "hello"})

        trio.run(run)


def _profiled_config(folder: str) -> Path:
    config = Path(folder) / "gateway.json"
    connector = {"transport": "stdio", "cmd": UPSTREAM, "cwd": str(REPO)}
    config.write_text(json.dumps({"connectors": {"ex": connector}}))
    return config


def calls_per_call(variant: str, short: int = 50, long: int = 250) -> float:
    """Python calls per relayed call of ``variant`` (of :data:`PROFILED`): the
    difference of a ``long``- and a ``short``-call run under cProfile (load-independent:
    the gateway's call-count guard in tests/test_bench_smoke.py)."""
    import pstats

    totals: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        config = _profiled_config(folder)
        for calls in (short, long):
            out = str(Path(folder) / f"{variant}-{calls}.prof")
            _profile_run(variant, config, calls, out)
            stats = pstats.Stats(out).stats  # type: ignore[attr-defined]
            totals[calls] = sum(v[1] for v in stats.values())
    return (totals[long] - totals[short]) / (long - short)


def profile(short: int = 100, long: int = 600, top: int = 0) -> list[str]:
    """Python function calls per call (cProfile) of each of ``PROFILED``: the difference
    of a ``long``- and a ``short``-call run, so start-up and shutdown cancel out; with
    ``top``, the functions that make the most of them."""
    import pstats

    lines = []
    with tempfile.TemporaryDirectory() as folder:
        config = _profiled_config(folder)
        for variant in PROFILED:
            stats = {}
            for calls in (short, long):
                out = str(Path(folder) / f"{variant}-{calls}.prof")
                _profile_run(variant, config, calls, out)
                stats[calls] = pstats.Stats(out).stats  # type: ignore[attr-defined]
            total = {n: sum(v[1] for v in s.values()) for n, s in stats.items()}
            per_call = (total[long] - total[short]) / (long - short)
            lines.append(f"{variant:16} Python calls per call {per_call:7.1f}")
            if top:
                diff = {
                    key: (value[1] - stats[short].get(key, (0, 0))[1]) / (long - short)
                    for key, value in stats[long].items()
                }
                for key, n in sorted(diff.items(), key=lambda kv: -kv[1])[:top]:
                    where = f"{Path(key[0]).name}:{key[1]}({key[2]})"
                    lines.append(f"    {n:6.1f} {where}")
    return lines


#: What ``--instructions`` counts: the mini gateway, ours on each backend, and the
#: example server answering over our HTTP service itself (no upstream: the share of a
#: gateway call that is our HTTP serving alone).
COUNTED = ("mini", "gateway-trio", "gateway-asyncio", "http-trio", "http-asyncio")


def instructions_per_call(variant: str, config: Path, calls: int = 300, warmup: int = 100) -> float:
    """User-space machine instructions the server process (``variant`` of
    :data:`COUNTED`) executes per ``tools/call`` (relayed, by a gateway), counted by
    valgrind's callgrind (zeroed after ``warmup`` calls, dumped after ``calls`` more):
    exact and load-independent, the one CPU figure of ours against the mini gateway's
    that no other helper's load moves.  The upstream (a child) is not traced; kernel
    time is not in it.  Needs ``valgrind`` on PATH; about a minute a variant."""
    import glob
    import re
    import shutil
    import subprocess

    import trio

    from trio_adapters.http_client import open_http_client

    if shutil.which("valgrind") is None:
        raise RuntimeError("instructions_per_call needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "callgrind.out")
        kind, _, backend = variant.partition("-")
        tool = "ex.echo"
        if kind == "mini":
            served = [PY, str(MINI), "ex", "--", *UPSTREAM]
        elif kind == "gateway":
            served = [PY, "-m", "sansio_mcp_cli", "gateway", "--config", str(config),
                      "--port", "0", "--backend", backend]  # fmt: skip
        else:
            served = [PY, "-m", "sansio_mcp_cli", "example-server", "--transport", "http",
                      "--port", "0", "--backend", backend]  # fmt: skip
            tool = "echo"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                   f"--log-file={folder}/log", *served]  # fmt: skip
        # A fixed hash seed: dict and set layouts, so the count, are the same each run.
        env = {"PYTHONHASHSEED": "0"}
        with http_server_process(command, env=env, polite=True, timeout=300) as (url, process):

            async def run(n: int) -> None:
                async with open_http_client(url, mode="legacy") as client:
                    for _ in range(n):
                        await client.call_tool(tool, {"message": "hello"})

            trio.run(run, warmup)
            pid = str(process.pid)
            subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
            trio.run(run, calls)
            subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
        with open(sorted(glob.glob(out + ".*"))[-1]) as dump:
            found = re.search(r"^(?:summary|totals): (\d+)", dump.read(), re.MULTILINE)
        assert found is not None, "no totals in callgrind's dump"
        # (Each run opens one connection and a handshake: the same for every variant.)
        return int(found.group(1)) / calls


def instructions(calls: int = 300) -> list[str]:
    """Instructions per call of each of :data:`COUNTED`, and ours / the mini gateway's."""
    lines, counted = [], {}
    with tempfile.TemporaryDirectory() as folder:
        config = _profiled_config(folder)
        for variant in COUNTED:
            counted[variant] = instructions_per_call(variant, config, calls)
            lines.append(f"{variant:16} instructions per call {counted[variant]:10.0f}")
    for variant in COUNTED[1:]:
        lines.append(f"{variant} / mini: instructions {counted[variant] / counted['mini']:.2f}")
    for backend in ("trio", "asyncio"):
        share = counted[f"http-{backend}"] / counted[f"gateway-{backend}"]
        lines.append(f"gateway-{backend}: its HTTP serving alone (http-{backend}) {share:.0%}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gateway_stdio", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="count Python calls per call (cProfile) of each gateway and of the example "
        "server over HTTP instead of timing",
    )
    parser.add_argument("--top", type=int, default=0, help="with --profile: the top functions")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count machine instructions per call (valgrind's callgrind; exact, load-"
        "independent) of the mini gateway and ours instead of timing",
    )
    args = parser.parse_args(argv)
    if args.instructions:
        lines = instructions()
    elif args.profile:
        lines = profile(top=args.top)
    else:
        lines = report(run_rounds(args.rounds, args.calls, args.warmup))
    for line in lines:
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
