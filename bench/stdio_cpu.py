"""Server CPU and Python calls per sequential stdio ``tools/call`` (issue 37).

The raw NDJSON client (``bench/raw_client.py``) drives ``sansio-mcp example-server``
over stdio on each backend, sequential ``echo`` calls, and reads the server's own CPU
(user + system, ``/proc/PID/stat``) around the timed calls; with ``--baseline DIR``
(a checkout of another commit with its own ``.venv``) the two trees alternate, their
order turned each round, and the per-round ratio is printed (min / median / max).
Python function calls per request come from the same server under cProfile: two runs
of different lengths, the difference divided by the difference in calls, so start-up
and shutdown cancel out (the figure load does not move).

Run: ``python -m bench.stdio_cpu [--baseline DIR] [--rounds N] [--calls N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from ._proc import REPO, child_env
from .raw_client import RawStdioClient

BACKENDS = ("trio", "asyncio")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

#: Runs the CLI under cProfile and writes the stats where ``BENCH_PROFILE_OUT`` says
#: (plain ``-c`` so that it runs in any tree, old or new).
_PROFILED = (
    "import cProfile, os, runpy, sys\n"
    "p = cProfile.Profile()\n"
    "sys.argv = ['sansio_mcp_cli', *sys.argv[1:]]\n"
    "p.enable()\n"
    "try:\n"
    "    runpy.run_module('sansio_mcp_cli', run_name='__main__', alter_sys=True)\n"
    "except SystemExit:\n"
    "    pass\n"
    "finally:\n"
    "    p.disable()\n"
    "    p.dump_stats(os.environ['BENCH_PROFILE_OUT'])\n"
)


#: The pure session's share of a request, alone (no runtime, no I/O): the request's
#: line in, its event out, a result answered and encoded.  Prints Python function
#: calls per request (cProfile).  Public names only, so that it runs in any tree.
_PURE = (
    "import cProfile, json, pstats, sys\n"
    "from sansio_mcp import ServerSession\n"
    "s = ServerSession(capabilities={'tools': {}}, server_info={'name': 'b', 'version': '1'})\n"
    "init = {'protocolVersion': '2025-11-25', 'capabilities': {}, 'clientInfo': {'name': 'c'}}\n"
    "s.receive_data(json.dumps({'jsonrpc': '2.0', 'id': 0, 'method': 'initialize',\n"
    "    'params': init}).encode() + b'\\n')\n"
    's.receive_data(b\'{"jsonrpc": "2.0", "method": "notifications/initialized"}\\n\')\n'
    "s.data_to_send()\n"
    "for _ in range(3):\n"
    "    s.next_event()  # the handshake's events: NEED_DATA once they are gone\n"
    "n = int(sys.argv[1])\n"
    "lines = [json.dumps({'jsonrpc': '2.0', 'id': i, 'method': 'tools/call', 'params':\n"
    "    {'name': 'echo', 'arguments': {'message': f'm{i}'}}}).encode() + b'\\n'\n"
    "    for i in range(1, n + 1)]\n"
    "result = {'content': [{'type': 'text', 'text': 'hi'}]}\n"
    "p = cProfile.Profile()\n"
    "p.enable()\n"
    "for line in lines:\n"
    "    s.receive_data(line)\n"
    "    event = s.next_event()\n"
    "    s.respond(event.request_id, result)\n"
    "    s.data_to_send()\n"
    "p.disable()\n"
    "print(pstats.Stats(p).total_calls / n)\n"
)


def pure_calls_per_request(tree: Path, n: int = 2000) -> float:
    """Python function calls of the pure session per ``tools/call`` (see ``_PURE``)."""
    import subprocess

    out = subprocess.run(
        [_python(tree), "-c", _PURE, str(n)],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def _python(tree: Path) -> str:
    exe = tree / ".venv" / "bin" / "python"
    return str(exe) if exe.exists() else sys.executable


def _env(tree: Path) -> dict[str, str]:
    env = child_env()
    env["PYTHONPATH"] = str(tree)
    return env


def _server_args(backend: str) -> list[str]:
    return ["example-server", "--backend", backend]


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


def _drive(command: list[str], tree: Path, calls: int, warmup: int, env: dict[str, str]) -> int:
    """Start the server, ``warmup`` calls, then ``calls`` timed ones; the server's CPU
    ticks over the timed ones."""
    client = RawStdioClient(command, cwd=str(tree), env=env)
    try:
        client.initialize()
        for i in range(warmup):
            client.call_tool("echo", {"message": f"w{i}"})
        before = _cpu_ticks(client.process.pid)
        for i in range(calls):
            client.call_tool("echo", {"message": f"m{i}"})
        return _cpu_ticks(client.process.pid) - before
    finally:
        client.close()


def cpu_per_call(tree: Path, backend: str, calls: int = 4000, warmup: int = 300) -> float:
    """The server's CPU per timed call, in microseconds."""
    command = [_python(tree), "-m", "sansio_mcp_cli", *_server_args(backend)]
    ticks = _drive(command, tree, calls, warmup, _env(tree))
    return ticks / TICKS / calls * 1e6


def _profiled_calls(tree: Path, backend: str, calls: int) -> tuple[int, str]:
    import pstats

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "prof")
        env = {**_env(tree), "BENCH_PROFILE_OUT": out}
        command = [_python(tree), "-c", _PROFILED, *_server_args(backend)]
        _drive(command, tree, calls, 0, env)
        return pstats.Stats(out).total_calls, out  # type: ignore[attr-defined]


def calls_per_request(tree: Path, backend: str, short: int = 200, long: int = 1200) -> float:
    """Python function calls the server makes per ``tools/call`` (cProfile)."""
    few, _ = _profiled_calls(tree, backend, short)
    many, _ = _profiled_calls(tree, backend, long)
    return (many - few) / (long - short)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.stdio_cpu", description=__doc__)
    parser.add_argument("--baseline", type=Path, help="another checkout, with its .venv")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--backend", choices=BACKENDS, action="append")
    args = parser.parse_args(argv)
    trees = {"this": REPO} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    for name, tree in trees.items():
        print(f"pure    {name:8} calls/request {pure_calls_per_request(tree):7.1f}")
    for backend in args.backend or BACKENDS:
        for name, tree in trees.items():
            print(f"{backend:7} {name:8} calls/request {calls_per_request(tree, backend):7.1f}")
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        names = list(trees)
        for rnd in range(args.rounds):
            for name in names[rnd % len(names) :] + names[: rnd % len(names)]:
                cpu[name].append(cpu_per_call(trees[name], backend, args.calls))
        for name, figures in cpu.items():
            print(f"{backend:7} {name:8} CPU us/call " + " ".join(f"{f:.0f}" for f in figures))
        if args.baseline:
            ratios = sorted(t / b for t, b in zip(cpu["this"], cpu["baseline"], strict=True))
            print(
                f"{backend:7} this/baseline CPU per call: min {ratios[0]:.2f} "
                f"median {statistics.median(ratios):.2f} max {ratios[-1]:.2f}"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
