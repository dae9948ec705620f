"""Server CPU and Python calls per sequential stdio ``tools/call`` (issue 37).

The raw NDJSON client (``bench/raw_client.py``) drives ``sansio-mcp example-server``
over stdio on each backend, sequential ``echo`` calls, and reads the server's own CPU
(user + system, ``/proc/PID/stat``) around the timed calls; with ``--baseline DIR``
(a checkout of another commit with its own ``.venv``) the two trees alternate, their
order turned each round, and the per-round ratio is printed (min / median / max).
Python function calls per request come from the same server under cProfile: two runs
of different lengths, the difference divided by the difference in calls, so start-up
and shutdown cancel out (the figure load does not move).

With ``--instructions`` it also counts the machine instructions per request with
valgrind's callgrind (:func:`instructions_per_request`: exact, and it sees costs cProfile
does not).

With ``--pin CPU`` this process is pinned to that one CPU before it starts anything, so
the client and every server it spawns (children inherit the affinity) take turns on
one CPU.  That removes what a virtual machine charges for each wake across CPUs (a
request written on one CPU waking the server on the other, its answer waking the
client back): on this project's 2-vCPU VM a bare json echo loop costs about 45 us of
CPU per call unpinned and 12 us pinned.  That cost is the kernel's and the
hypervisor's, the same for both trees, so unpinned it pulls every ratio toward 1;
pinned, the ratio is that of the work each tree does.  User and system time are
printed apart as well.

Run: ``python -m bench.stdio_cpu [--baseline DIR] [--rounds N] [--calls N] [--instructions]
[--pin CPU]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ._callgrind import callgrind_command, callgrind_total
from ._proc import REPO, child_env
from .raw_client import RawStdioClient

BACKENDS = ("trio", "asyncio")
#: The bare json echo loop (``--bare``): read a line, ``json.loads``, ``json.dumps``, write.
BARE_ECHO = REPO / "bench" / "servers" / "json_echo.py"
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


#: Runs the CLI counting, in our own packages' code, two per-request costs cProfile does
#: not show: enum members read off their class (on Python 3.11 each goes through
#: EnumType.__getattr__'s slot, the cost of a call) and closure cells made (a function
#: with a nested function or lambda over its locals makes them at every call, even
#: when the closure is never built).  Writes the two totals where ``BENCH_HIDDEN_OUT``
#: says.
_HIDDEN = (
    "import enum, os, runpy, sys\n"
    "ours = ('sansio_mcp', 'trio_adapters', 'asyncio_adapters')\n"
    "def own(code):\n"
    "    parts = code.co_filename.split(os.sep)\n"
    "    return any(p in ours for p in parts) and 'site-packages' not in parts\n"
    "counts = {'enum': 0, 'cells': 0}\n"
    "read = type.__getattribute__\n"
    "def counting(cls, name):\n"
    "    if not name.startswith('__') and own(sys._getframe(1).f_code):\n"
    "        counts['enum'] += 1\n"
    "    return read(cls, name)\n"
    "enum.EnumType.__getattribute__ = counting\n"
    "def calls(frame, event, arg):\n"
    "    if event == 'call' and frame.f_code.co_cellvars and own(frame.f_code):\n"
    "        counts['cells'] += len(frame.f_code.co_cellvars)\n"
    "sys.argv = ['sansio_mcp_cli', *sys.argv[1:]]\n"
    "sys.setprofile(calls)\n"
    "try:\n"
    "    runpy.run_module('sansio_mcp_cli', run_name='__main__', alter_sys=True)\n"
    "except SystemExit:\n"
    "    pass\n"
    "finally:\n"
    "    sys.setprofile(None)\n"
    "    with open(os.environ['BENCH_HIDDEN_OUT'], 'w') as out:\n"
    "        out.write(f\"{counts['enum']} {counts['cells']}\")\n"
)


def hidden_costs(tree: Path, backend: str, short: int = 50, long: int = 250) -> tuple[float, float]:
    """Enum members read off their class and closure cells made, per ``tools/call``,
    by our own code in the server (see ``_HIDDEN``); two runs, as :func:`calls_per_request`."""
    totals = []
    for calls in (short, long):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "hidden")
            env = {**_env(tree), "BENCH_HIDDEN_OUT": out}
            _drive([_python(tree), "-c", _HIDDEN, *_server_args(backend)], tree, calls, 0, env)
            with open(out) as counts:
                totals.append([int(n) for n in counts.read().split()])
    (enum_few, cells_few), (enum_many, cells_many) = totals
    span = long - short
    return (enum_many - enum_few) / span, (cells_many - cells_few) / span


def instructions_per_request(tree: Path, backend: str, calls: int = 1000) -> float:
    """User-space machine instructions the server executes per ``tools/call``, counted by
    valgrind's callgrind (zeroed after a warm-up, dumped after ``calls`` calls): exact and
    load-independent, and unlike cProfile's count it sees what no Python call shows (an
    enum member read off its class, closure cells, an attrs ``__init__``'s setattrs).
    Kernel time is not in it.  Needs ``valgrind`` on PATH; about 15 s."""
    import glob
    import shutil
    import subprocess

    if shutil.which("valgrind") is None:
        raise RuntimeError("instructions_per_request needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as folder:
        out, command = callgrind_command(
            folder, _python(tree), "-m", "sansio_mcp_cli", *_server_args(backend)
        )
        # A fixed hash seed: dict and set layouts, so the count, are the same each run.
        env = {**_env(tree), "PYTHONHASHSEED": "0"}
        client = RawStdioClient(command, cwd=str(tree), env=env)
        try:
            client.initialize()
            for i in range(300):
                client.call_tool("echo", {"message": f"w{i}"})
            pid = str(client.process.pid)
            subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
            for i in range(calls):
                client.call_tool("echo", {"message": f"m{i}"})
            subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
        finally:
            client.close()
        return callgrind_total(sorted(glob.glob(out + ".*"))[-1]) / calls


def _python(tree: Path) -> str:
    exe = tree / ".venv" / "bin" / "python"
    return str(exe) if exe.exists() else sys.executable


def _env(tree: Path) -> dict[str, str]:
    env = child_env()
    env["PYTHONPATH"] = str(tree)
    return env


def _server_args(backend: str) -> list[str]:
    return ["example-server", "--backend", backend]


def _cpu_times(pid: int) -> tuple[int, int]:
    """The process's user and system CPU so far, in clock ticks."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # utime, stime (fields 14 and 15)


def _cpu_ticks(pid: int) -> int:
    return sum(_cpu_times(pid))


def _drive(
    command: list[str], tree: Path, calls: int, warmup: int, env: dict[str, str]
) -> tuple[tuple[int, int], float]:
    """Start the server, ``warmup`` calls, then ``calls`` timed ones; the server's user
    and system CPU ticks over the timed ones, and their wall time in seconds."""
    client = RawStdioClient(command, cwd=str(tree), env=env)
    try:
        client.initialize()
        for i in range(warmup):
            client.call_tool("echo", {"message": f"w{i}"})
        (user, system), start = _cpu_times(client.process.pid), time.perf_counter()
        for i in range(calls):
            client.call_tool("echo", {"message": f"m{i}"})
        wall = time.perf_counter() - start
        user_after, system_after = _cpu_times(client.process.pid)
        return (user_after - user, system_after - system), wall
    finally:
        client.close()


def cpu_per_call(tree: Path, backend: str, calls: int = 4000, warmup: int = 300) -> float:
    """The server's CPU per timed call, in microseconds."""
    return measure(tree, backend, calls, warmup)[0]


def measure(tree: Path, backend: str, calls: int = 4000, warmup: int = 300) -> tuple[float, float]:
    """The server's CPU per timed call and the client's wall time per call, in
    microseconds; ``backend`` ``"bare"`` is the bare json echo loop
    (``bench/servers/json_echo.py``, the floor of row 2's goal) in ``tree``'s Python."""
    user, system, wall = measure_split(tree, backend, calls, warmup)
    return user + system, wall


def measure_split(
    tree: Path, backend: str, calls: int = 4000, warmup: int = 300
) -> tuple[float, float, float]:
    """:func:`measure` with the server's CPU as user and system time apart: user, system
    and wall microseconds per call."""
    if backend == "bare":
        command = [_python(tree), str(BARE_ECHO)]
    else:
        command = [_python(tree), "-m", "sansio_mcp_cli", *_server_args(backend)]
    (user, system), wall = _drive(command, tree, calls, warmup, _env(tree))
    per_call = 1e6 / TICKS / calls
    return user * per_call, system * per_call, wall / calls * 1e6


def pin(cpu: int) -> None:
    """Run this process, and every process it starts from now on, on ``cpu`` alone."""
    os.sched_setaffinity(0, {cpu})


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
    parser.add_argument(
        "--bare",
        action="store_true",
        help="also run the bare json echo loop each round (row 2's floor): the ratio of "
        "its CPU per call to ours, and of our calls/s to its",
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile counts")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count machine instructions per request (valgrind's callgrind; exact, "
        "load-independent)",
    )
    parser.add_argument(
        "--pin",
        type=int,
        metavar="CPU",
        help="run the client and the servers on this one CPU (see the module's doc: "
        "removes the VM's cost of a wake across CPUs, the same for both trees)",
    )
    args = parser.parse_args(argv)
    if args.pin is not None:
        pin(args.pin)
    trees = {"this": REPO} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    if not args.no_profile:
        for name, tree in trees.items():
            print(f"pure    {name:8} calls/request {pure_calls_per_request(tree):7.1f}")
    for backend in args.backend or BACKENDS:
        if not args.no_profile:
            for name, tree in trees.items():
                calls = calls_per_request(tree, backend)
                print(f"{backend:7} {name:8} calls/request {calls:7.1f}")
        if args.instructions:
            for name, tree in trees.items():
                counted = instructions_per_request(tree, backend)
                print(f"{backend:7} {name:8} instructions/request {counted:9.0f}")
        runs = [(name, tree, backend) for name, tree in trees.items()]
        if args.bare:
            runs.append(("bare", REPO, "bare"))
        cpu: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        user: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        system: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        wall: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        for rnd in range(args.rounds):
            for name, tree, kind in runs[rnd % len(runs) :] + runs[: rnd % len(runs)]:
                in_user, in_system, took = measure_split(tree, kind, args.calls)
                cpu[name].append(in_user + in_system)
                user[name].append(in_user)
                system[name].append(in_system)
                wall[name].append(took)
        for name, figures in cpu.items():
            print(f"{backend:7} {name:8} CPU us/call " + " ".join(f"{f:.0f}" for f in figures))
            print(f"{backend:7} {name:8} user us/call " + " ".join(f"{f:.1f}" for f in user[name]))
            print(f"{backend:7} {name:8} sys us/call " + " ".join(f"{f:.1f}" for f in system[name]))
            print(f"{backend:7} {name:8} wall us/call " + " ".join(f"{f:.0f}" for f in wall[name]))
        if args.baseline:
            _ratio(backend, "this/baseline CPU per call", cpu["this"], cpu["baseline"])
            _ratio(backend, "this/baseline user per call", user["this"], user["baseline"])
        if args.bare:
            _ratio(backend, "bare/this CPU per call", cpu["bare"], cpu["this"])
            _ratio(backend, "this/bare calls per second", wall["bare"], wall["this"])
        sys.stdout.flush()


def _ratio(backend: str, what: str, tops: list[float], bottoms: list[float]) -> None:
    """Per-round ratios, min / median / max."""
    ratios = sorted(t / b for t, b in zip(tops, bottoms, strict=True))
    print(
        f"{backend:7} {what}: min {ratios[0]:.2f} "
        f"median {statistics.median(ratios):.2f} max {ratios[-1]:.2f}"
    )


if __name__ == "__main__":
    main()
