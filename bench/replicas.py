"""Row 13: replicas (issue 33).

13a, the store's cost on a plain call: ``sansio-mcp example-server`` over Streamable
HTTP, sequential 2026-07-28 ``tools/call`` echo, with ``--store memory`` and with
``--store redis://...`` (plus ``--state-key-file``), on Trio and on asyncio.  The figure
is the server's own CPU per call, read from ``/proc/PID/stat`` (utime + stime) around
the timed calls; one worker drives all four servers in interleaved blocks, so each
pair shares the machine's conditions.  A plain call never touches the store: the
ratio redis / memory should be about 1.

13b, what replication costs: nginx (round-robin, HTTP/1.1 keep-alive to the
upstreams) in front of one replica, then in front of two, the replicas pinned
together to CPU 0 (the same CPUs in both cases) and nginx, redis-server and the load
generator (:mod:`bench.loadgen`) to CPU 1; calls per second and errors.

redis-server and nginx are children of the harness, on free loopback ports, with
every file in a temporary directory, stopped by their pids.  (The test suite's own
starters, ``tests/redis_service.py`` and ``tests/nginx_service.py``, skip and fail
through pytest; bench/ does not import tests/, so the few lines needed live here.)
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._proc import PY, WorkerError, example_server_command, http_server, run_worker, stop
from .worker import MESSAGE, _child_pids, _process_cpu

if TYPE_CHECKING:
    from ._model import Counts, Results

__all__ = [
    "ROW13_TITLE",
    "row13",
    "row13_counts",
    "row13_lines",
    "row13_metric",
    "row13_targets",
    "server_cpu",
]

ROW13_TITLE = "replicas: the Redis store's CPU on plain calls; 2 replicas vs 1 behind nginx"
REDIS_MISSING = "redis-server is not installed: apt-get install redis-server"
NGINX_MISSING = "nginx is not installed: apt-get install nginx"
BACKENDS = ("trio", "asyncio")
STORES = ("memory", "redis")
#: 13b: where the replicas run, and where everything else (nginx, redis, load) runs.
REPLICA_CPU, OTHER_CPU = 0, 1
#: 13b: replicas behind nginx in each variant.
REPLICA_COUNTS = (1, 2)
START_TIMEOUT = 15.0


class Missing(Exception):
    """A program the row needs is not installed (the message says what to install)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pin(cpu: int | None, command: Sequence[str]) -> list[str]:
    return list(command) if cpu is None else [PY, "-m", "bench.pin", str(cpu), "--", *command]


def _wait(ready: Any, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-600:] if log.exists() else ""
            raise WorkerError(f"{what} did not start: {tail}")
        time.sleep(0.02)  # polling for readiness


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def redis_server(directory: Path, cpu: int | None = None) -> Iterator[str]:
    """A redis-server on a free loopback port, nothing on disk; yields its URL."""
    exe = redis_path()
    if exe is None:
        raise Missing(REDIS_MISSING)
    port = _free_port()
    log = directory / "redis.log"
    argv = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
            "no", "--dir", str(directory), "--logfile", str(log), "--daemonize", "no"]  # fmt: skip
    process = subprocess.Popen(
        _pin(cpu, argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait(partial(_answers_ping, port), process, "redis-server", log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(process, polite=False)


_NGINX_CONF = """\
{user}worker_processes 1;
error_log {tmp}/error.log warn;
pid {tmp}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 1000000;
    upstream replicas {{
{servers}
        keepalive 64;
        keepalive_requests 1000000;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
        }}
    }}
}}
"""


def redis_path() -> str | None:
    """redis-server's path, or None."""
    return shutil.which(
        "redis-server", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/bin"])
    )


def nginx_path() -> str | None:
    """nginx's path (it is often outside a user's PATH), or None."""
    return shutil.which("nginx", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))


@contextmanager
def nginx_front(ports: Sequence[int], directory: Path, cpu: int | None = None) -> Iterator[str]:
    """nginx round-robin over ``ports`` (one worker) on a free loopback port; yields
    ``http://127.0.0.1:PORT/mcp``."""
    exe = nginx_path()
    if exe is None:
        raise Missing(NGINX_MISSING)
    port = _free_port()
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in ports)
    # As root, nginx would run its worker as nobody, who cannot use a private tmp dir.
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = directory / "nginx.conf"
    conf.write_text(_NGINX_CONF.format(user=user, tmp=directory, servers=servers, port=port))
    log = directory / "error.log"
    argv = [exe, "-p", str(directory), "-c", str(conf), "-e", str(log), "-g", "daemon off;"]
    process = subprocess.Popen(
        _pin(cpu, argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        _wait(partial(_listening, port), process, "nginx", log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
        stop(process, polite=True)


def _key_file(directory: Path) -> Path:
    path = directory / "state.keys"
    path.write_text(secrets.token_bytes(32).hex() + "\n")
    os.chmod(path, 0o600)
    return path


def _server(
    stack: ExitStack, backend: str, store: str, key_file: Path, replica: str, cpu: int | None
) -> tuple[str, int]:
    """Start an example server; its URL and pid."""
    command = example_server_command(backend, "--transport", "http", "--port", "0",
                                      "--store", store, "--state-key-file", str(key_file),
                                      "--replica-id", replica)  # fmt: skip
    before = set(_child_pids())
    url = stack.enter_context(http_server(_pin(cpu, command)))
    (pid,) = set(_child_pids()) - before  # bench.pin execs: the pid is the server's
    return url, pid


# 13a: the worker (in a fresh process: ``python -m bench.worker server_cpu ARGS``) ------


def server_cpu(args: dict[str, Any]) -> dict[str, Any]:
    """Sequential echo calls (our Trio client, 2026-07-28) to each job's server, in
    ``blocks`` rounds of ``calls / blocks`` calls, the order of the jobs turned every
    block; per job, the server's CPU per call (/proc/PID/stat) and the wall time."""
    from contextlib import AsyncExitStack

    import trio

    from trio_adapters.http_client import open_http_client

    jobs: list[dict[str, Any]] = args["jobs"]
    blocks = max(1, int(args["blocks"]))
    per_block = max(1, int(args["calls"]) // blocks)
    warmup, stop_at = int(args["warmup"]), time.monotonic() + float(args["deadline"])
    arguments = {"message": MESSAGE}

    async def main() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(open_http_client(job["url"], mode="modern"))
                for job in jobs
            ]
            figures = [{"calls": 0, "errors": 0, "cpu": 0.0, "wall": 0.0} for _ in jobs]
            for client in clients:
                for _ in range(warmup):
                    await client.call_tool("echo", arguments)
            for block in range(blocks):
                if time.monotonic() > stop_at:
                    break
                order = list(range(len(jobs)))
                order = order[block % len(order) :] + order[: block % len(order)]
                for i in order:
                    client, figure, pid = clients[i], figures[i], jobs[i]["pid"]
                    before, t0 = _process_cpu(pid), time.perf_counter()
                    for _ in range(per_block):
                        try:
                            result = await client.call_tool("echo", arguments)
                            if result["content"][0]["text"] != MESSAGE:
                                figure["errors"] += 1
                        except Exception:
                            figure["errors"] += 1
                    wall, after = time.perf_counter() - t0, _process_cpu(pid)
                    if before is None or after is None:
                        raise RuntimeError(f"cannot read /proc/{pid}/stat")
                    figure["calls"] += per_block
                    figure["cpu"] += after - before
                    figure["wall"] += wall
        out = {}
        for job, figure in zip(jobs, figures, strict=True):
            n = figure["calls"] or 1
            out[job["variant"]] = {
                "calls": figure["calls"],
                "errors": figure["errors"],
                "server_cpu_us_per_call": figure["cpu"] / n * 1e6,
                "us_per_call": figure["wall"] / n * 1e6,
                "calls_per_s": figure["calls"] / figure["wall"] if figure["wall"] else 0.0,
            }
        return {"variants": out}

    return trio.run(main)


# The row ---------------------------------------------------------------------------------


def _cpu_variant(backend: str, store: str) -> str:
    return f"cpu:{backend}:{store}"


def _replicas_variant(n: int) -> str:
    return f"nginx:{n}"


def _labels() -> dict[str, str]:
    out = {
        _cpu_variant(b, s): f"13a {b:7} server, --store {s}: server CPU per call"
        for b in BACKENDS
        for s in STORES
    }
    for n in REPLICA_COUNTS:
        out[_replicas_variant(n)] = (
            f"13b nginx -> {n} replica{'s' if n > 1 else ''} (Trio, --store redis), "
            f"all on CPU {REPLICA_CPU}"
        )
    return out


def _cpu_calls(c: Counts) -> int:
    """13a: calls per server (enough that a clock tick of CPU is a small part, even quick)."""
    return max(200, c.stdio_calls)


def _load_counts(c: Counts) -> tuple[int, int]:
    """13b: (clients, calls per client)."""
    return min(c.clients, 32), max(5, c.http_calls * 2 // 5)


def row13_counts(c: Counts) -> str:
    clients, calls = _load_counts(c)
    return (
        f"13a: {_cpu_calls(c)} calls per server in 10 interleaved blocks, after "
        f"{c.stdio_warmup} warm-up; 13b: {clients} clients x {calls} calls, keep-alive, "
        f"replicas on CPU {REPLICA_CPU}, nginx + redis + load generator on CPU {OTHER_CPU}"
    )


def row13(results: Results, c: Counts, rnd: int, log: Any) -> None:
    labels = _labels()
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench13-")))
        key_file = _key_file(directory)
        try:
            redis = stack.enter_context(redis_server(directory, OTHER_CPU))
        except Missing as exc:
            results.note(13, f"skipped: {exc}")
            return
        except WorkerError as exc:
            for variant, label in labels.items():
                results.add(13, variant, label, {"error": str(exc)})
            return
        _row13a(results, c, rnd, log, redis, key_file, labels)
        _row13b(results, c, rnd, log, redis, key_file, directory, labels)


def _row13a(
    results: Results,
    c: Counts,
    rnd: int,
    log: Any,
    redis: str,
    key_file: Path,
    labels: dict[str, str],
) -> None:
    variants = [(b, s) for b in BACKENDS for s in STORES]
    shift = rnd % len(variants)
    variants = variants[shift:] + variants[:shift]
    with ExitStack() as stack:
        try:
            jobs = []
            for backend, store in variants:
                url, pid = _server(
                    stack, backend, redis if store == "redis" else "memory", key_file,
                    f"{backend}-{store}", None,
                )  # fmt: skip
                jobs.append({"variant": _cpu_variant(backend, store), "url": url, "pid": pid})
            args = {
                "jobs": jobs,
                "calls": _cpu_calls(c),
                "blocks": 10,
                "warmup": c.stdio_warmup,
                "deadline": c.loop_deadline * 2,
            }
            done = run_worker("server_cpu", args, timeout=c.worker_timeout * 2)["variants"]
        except WorkerError as exc:
            done = {_cpu_variant(b, s): {"error": str(exc)} for b, s in variants}
    for variant, value in done.items():
        results.add(13, variant, labels[variant], value)
        shown = value.get("error") or f"{value['server_cpu_us_per_call']:,.0f} us server CPU/call"
        log(f"    row 13 {labels[variant]}: {shown}")


def _row13b(
    results: Results,
    c: Counts,
    rnd: int,
    log: Any,
    redis: str,
    key_file: Path,
    directory: Path,
    labels: dict[str, str],
) -> None:
    """Both set-ups run side by side (an idle replica costs nothing); the load comes in
    four bursts, A B B A (B A A B in odd rounds), so each side sees the same moments."""
    clients, calls = _load_counts(c)
    sides = list(REPLICA_COUNTS) if rnd % 2 == 0 else list(reversed(REPLICA_COUNTS))
    bursts = [sides[0], sides[1], sides[1], sides[0]]
    totals = {n: {"ok": 0, "errors": 0, "seconds": 0.0, "cpu": 0.0} for n in sides}
    kinds: dict[int, dict[str, int]] = {n: {} for n in sides}
    failed: str | None = None
    with ExitStack() as stack:
        try:
            fronts: dict[int, tuple[str, list[int]]] = {}
            for n in sides:
                servers = [
                    _server(stack, "trio", redis, key_file, f"n{n}-r{i + 1}", REPLICA_CPU)
                    for i in range(n)
                ]
                folder = directory / f"nginx-{n}"
                folder.mkdir()
                ports = [int(url.split(":")[2].split("/")[0]) for url, _ in servers]
                url = stack.enter_context(nginx_front(ports, folder, OTHER_CPU))
                fronts[n] = (url, [pid for _, pid in servers])
            for n in bursts:
                url, pids = fronts[n]
                before = [_process_cpu(pid) or 0.0 for pid in pids]
                args = {
                    "url": url,
                    "clients": clients,
                    "calls": max(1, calls // 2),
                    "deadline": c.loop_deadline,
                    "cpus": [OTHER_CPU],
                }
                value = run_worker("load", args, timeout=c.worker_timeout)
                total = totals[n]
                total["cpu"] += sum(
                    (_process_cpu(p) or 0.0) - b for p, b in zip(pids, before, strict=True)
                )
                total["ok"] += value["ok"]
                total["errors"] += value["errors"]
                total["seconds"] += value["seconds"]
                for kind, count in value["error_kinds"].items():
                    kinds[n][kind] = kinds[n].get(kind, 0) + count
        except Missing as exc:
            results.note(13, f"13b skipped: {exc}")
            return
        except WorkerError as exc:
            failed = str(exc)
    for n in REPLICA_COUNTS:
        variant, total = _replicas_variant(n), totals[n]
        if failed is not None:
            figures: dict[str, Any] = {"error": failed}
        else:
            ok, seconds = int(total["ok"]), float(total["seconds"])
            figures = {
                "clients": clients,
                "ok": ok,
                "errors": int(total["errors"]),
                "error_kinds": kinds[n],
                "seconds": seconds,
                "calls_per_s": ok / seconds if seconds else 0.0,
                "replica_cpu_us_per_call": total["cpu"] / ok * 1e6 if ok else None,
                # The share of CPU 0 the replicas used: near 1, they were the bottleneck.
                "replica_cpu_share": total["cpu"] / seconds if seconds else None,
            }
        results.add(13, variant, labels[variant], figures)
        shown = figures.get("error") or (
            f"{figures['calls_per_s']:,.0f} calls/s, {figures['errors']} errors, "
            f"replicas used {figures['replica_cpu_share'] or 0:.0%} of CPU {REPLICA_CPU}"
        )
        log(f"    row 13 {labels[variant]}: {shown}")


# Table and targets (called by bench/cli.py) ----------------------------------------------


def row13_metric(variant: str) -> str:
    """The figure the JSON summary takes the median of."""
    return "server_cpu_us_per_call" if variant.startswith("cpu:") else "calls_per_s"


def _stats(values: list[float]) -> str:
    if not values:
        return "failed"
    import statistics

    return f"{min(values):,.0f} / {statistics.median(values):,.0f} / {max(values):,.0f}"


def _ratios(results: Results, a: str, b: str, key: str) -> list[float]:
    va = results.rows.get(13, {}).get(a, [])
    vb = results.rows.get(13, {}).get(b, [])
    return [
        x[key] / y[key]
        for x, y in zip(va, vb, strict=False)
        if key in x and key in y and y[key] and "error" not in x and "error" not in y
    ]


def _ratio_text(ratios: list[float]) -> str:
    if not ratios:
        return "-"
    import statistics

    return f"{min(ratios):.2f} / {statistics.median(ratios):.2f} / {max(ratios):.2f}"


def row13_lines(results: Results) -> list[str]:
    """The row's lines: min / median / max over rounds of each figure, and of the
    per-round ratios."""
    variants = results.rows.get(13, {})
    labels = results.labels.get(13, {})
    width = max([len(label) for label in labels.values()] + [30])
    lines = [f"  {'variant (min / median / max over rounds)':{width}}  {'figure':>24}  "
             f"{'ratio':>18}  errors"]  # fmt: skip
    for variant in _labels():
        if variant not in variants:
            continue
        key = row13_metric(variant)
        rounds = variants[variant]
        values = [float(v[key]) for v in rounds if key in v and "error" not in v]
        unit = "us CPU/call" if key.startswith("server_cpu") else "calls/s"
        if variant.startswith("cpu:"):
            base = variant.rsplit(":", 1)[0] + ":memory"
        else:
            base = _replicas_variant(REPLICA_COUNTS[0])
        ratio = _ratio_text(_ratios(results, variant, base, key))
        errors = [int(v.get("errors", 0)) for v in rounds if "error" not in v]
        figure = f"{_stats(values)} {unit}"
        line = f"  {labels[variant]:{width}}  {figure:>24}  {ratio:>18}  {errors}"
        failed = [str(v["error"])[:60] for v in rounds if "error" in v]
        if failed:
            line += f"  [{len(failed)} failed: {failed[0]}]"
        lines.append(line)
    for key, unit, name in (
        ("replica_cpu_us_per_call", " us", "replicas' CPU per call (sum over them)"),
        ("replica_cpu_share", "", f"share of CPU {REPLICA_CPU} the replicas used"),
    ):
        parts = []
        for n in REPLICA_COUNTS:
            values = [
                float(v[key]) * (100 if unit == "" else 1)
                for v in variants.get(_replicas_variant(n), [])
                if v.get(key) is not None
            ]
            parts.append(f"{n} replica{'s' if n > 1 else ''} {_stats(values)}{unit or '%'}")
        lines.append(f"  13b {name}, min / median / max: " + ", ".join(parts))
    for note in results.notes.get(13, []):
        lines.append(f"  note: {note}")
    return lines


def row13_targets(results: Results) -> list[Any]:
    from .cli import Target, paired_ratio

    out = []
    for backend in BACKENDS:
        out.append(
            Target(
                f"13-store-cpu-{backend}",
                f"row 13a {backend}: server CPU per plain call with --store redis <= 1.1x "
                "--store memory",
                paired_ratio(
                    results,
                    13,
                    _cpu_variant(backend, "redis"),
                    _cpu_variant(backend, "memory"),
                    "server_cpu_us_per_call",
                ),
                1.1,
                higher_is_better=False,
            )
        )
    rounds = [
        v for n in REPLICA_COUNTS for v in results.rows.get(13, {}).get(_replicas_variant(n), [])
    ]
    errors = [int(v.get("errors", 0)) for v in rounds if "error" not in v]
    out.append(
        Target(
            "13-replicas",
            "row 13b: nginx -> 2 replicas >= 0.85x the calls/s of nginx -> 1 replica, the "
            "replicas on the same CPU, with zero errors",
            paired_ratio(results, 13, _replicas_variant(2), _replicas_variant(1), "calls_per_s"),
            0.85,
            extra_ok=bool(errors) and not any(errors) and len(errors) == len(rounds),
            detail=f"errors per run: {errors}",
        )
    )
    out.append(
        Target(
            "13-replicas-cpu",
            "row 13b, information (not judged): the replicas' CPU per call, 1 replica / 2 "
            f"replicas: the calls/s ratio when CPU {REPLICA_CPU} is the bottleneck",
            paired_ratio(
                results,
                13,
                _replicas_variant(1),
                _replicas_variant(2),
                "replica_cpu_us_per_call",
            ),
            0.85,
            judged=False,
        )
    )
    return out
