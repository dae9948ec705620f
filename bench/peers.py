"""Rows 9-11: the peers that need a venv of their own (issue 37).

fastmcp 4.x (rows 9 and 10) and ``mcp-proxy`` (row 11, which needs the 1.x
SDK) cannot share the project's venv, so each gets one under ``.bench-venvs/``
made from a pinned, hashed lock (``python -m bench --setup-peers``).  A row
whose peer venv is missing (or was made from an older lock) is skipped with a
note saying how to make it; the rest of the harness runs as before.

* Row 9: stdio servers, the same raw NDJSON client as row 2 against ours, the
  SDK's ``MCPServer`` and fastmcp's ``FastMCP``: time and server CPU per call.
* Row 10: Streamable HTTP servers, our Trio client (both eras) against the same
  three: time per call, and the server's CPU per call (read from ``/proc``
  around each client run, handshake and warm-up included).
* Row 11: a proxy in front of a stdio server: ``sansio-mcp gateway`` (a stdio
  connector) and ``mcp-proxy`` (its default stdio server) in front of the same
  example server; time per call (our Trio client, handshake era) and
  throughput at 50 concurrent clients (the load generator of row 5, each
  proxy in its stateless mode).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._proc import (
    PY,
    REPO,
    WorkerError,
    example_server_command,
    http_server,
    run_worker,
    sdk_server_command,
)
from .worker import MESSAGE, _process_cpu

if TYPE_CHECKING:
    from ._model import Counts, Results

__all__ = [
    "EXTRA_ROWS",
    "PEERS",
    "ExtraRow",
    "extra_targets",
    "peer_python",
    "pinned_versions",
    "setup_command",
    "setup_peers",
]

VENVS = REPO / ".bench-venvs"
#: peer -> its lock file; the venv is ``.bench-venvs/<peer>``.
PEERS = {
    "fastmcp": REPO / "requirements" / "bench-fastmcp.lock",
    "mcp-proxy": REPO / "requirements" / "bench-mcp-proxy.lock",
}
FASTMCP_ECHO = REPO / "bench" / "servers" / "fastmcp_echo.py"
#: Written into a peer's venv once it is installed: the lock's SHA-256.
STAMP = "bench-lock.sha256"


def setup_command() -> str:
    return "python -m bench --setup-peers"


def _lock_digest(peer: str) -> str:
    return hashlib.sha256(PEERS[peer].read_bytes()).hexdigest()


def _bin(peer: str, name: str) -> Path:
    return VENVS / peer / "bin" / name


def pinned_versions(peer: str) -> dict[str, str]:
    """Package -> version, as ``peer``'s lock pins them."""
    return {
        line.split("==")[0]: line.split("==")[1].split()[0]
        for line in PEERS[peer].read_text().splitlines()
        if "==" in line and not line.startswith((" ", "#"))
    }


def _peer_note(peer: str) -> str:
    pins = pinned_versions(peer)
    return f"{peer} {pins[peer]} with mcp {pins['mcp']} ({PEERS[peer].relative_to(REPO)})"


def peer_python(peer: str) -> Path | None:
    """The peer venv's interpreter, or None when the venv is missing or was made
    from another version of its lock."""
    python = _bin(peer, "python")
    stamp = VENVS / peer / STAMP
    try:
        current = stamp.read_text().strip() == _lock_digest(peer)
    except OSError:
        return None
    return python if current and python.exists() else None


def _missing(peer: str) -> str:
    return (
        f"skipped: the {peer} peer venv is missing or stale "
        f"(.bench-venvs/{peer}); make it with `{setup_command()}` (needs PyPI)"
    )


def setup_peers(peers: list[str] | None = None) -> int:
    """Make each peer's venv from its lock (``--require-hashes``); 0 on success."""
    failed = 0
    for peer in peers or list(PEERS):
        venv = VENVS / peer
        print(f"bench: making {venv.relative_to(REPO)} from {PEERS[peer].relative_to(REPO)}")
        (venv / STAMP).unlink(missing_ok=True)
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
             "--disable-pip-version-check", "--require-hashes", "--no-deps",
             "-r", str(PEERS[peer])],
        ]  # fmt: skip
        for step in steps:
            if subprocess.run(step, cwd=REPO).returncode != 0:
                print(f"bench: {peer}: {' '.join(step[:4])} ... failed", file=sys.stderr)
                failed += 1
                break
        else:
            (venv / STAMP).write_text(_lock_digest(peer) + "\n")
    return 1 if failed else 0


# Server CPU from /proc -----------------------------------------------------------------


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


def _one_http_job(url: str, args: dict[str, Any], c: Counts) -> dict[str, Any]:
    """The figures of an ``http`` worker run of one job against ``url``, with the CPU
    per call of the process serving it."""

    def client() -> dict[str, Any]:
        (job,) = run_worker("http", args, timeout=c.worker_timeout)["jobs"]
        if "error" in job:
            raise WorkerError(job["error"])
        return {k: v for k, v in job.items() if k not in ("url", "mode", "tool")}

    return _with_server_cpu(url, args["calls"] + args["warmup"], client)


def _wait_listening(url: str, timeout: float = 30.0) -> None:
    """Wait until ``url``'s port accepts a connection (a server that names its port
    before it listens)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", _port(url)), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise WorkerError(f"nothing listens at {url}") from None
            time.sleep(0.05)


def _free_port() -> int:
    with socket.socket() as sock:  # a free one, closed just before the server takes it
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# Rows ----------------------------------------------------------------------------------


def _fastmcp_command(transport: str) -> list[str] | None:
    python = peer_python("fastmcp")
    return None if python is None else [str(python), str(FASTMCP_ECHO), transport]


ROW9_TITLE = "fastmcp, stdio: raw NDJSON client -> server, sequential tools/call echo"
ROW9_SERVERS = {
    "ours": "ours, example server (Trio)",
    "sdk": "mcp SDK MCPServer",
    "fastmcp": "fastmcp 4.x FastMCP",
}


def row9(results: Results, c: Counts, rnd: int) -> None:
    from .cli import _measure, _rotate

    fastmcp = _fastmcp_command("stdio")
    if fastmcp is None:
        results.note(9, _missing("fastmcp"))
        return
    results.note(9, _peer_note("fastmcp"))
    commands = {
        "ours": example_server_command("trio"),
        "sdk": sdk_server_command("stdio"),
        "fastmcp": fastmcp,
    }
    for name in _rotate(list(ROW9_SERVERS), rnd):
        args = {
            "impl": "raw",
            "command": commands[name],
            "expect": MESSAGE,
            "calls": c.stdio_calls,
            "warmup": c.stdio_warmup,
            "deadline": c.loop_deadline,
        }
        _measure(
            results,
            9,
            name,
            ROW9_SERVERS[name],
            partial(run_worker, "stdio", args, timeout=c.worker_timeout),
        )


ROW10_TITLE = "fastmcp, Streamable HTTP: our Trio client -> server, sequential tools/call echo"
ROW10_MODES = ("modern", "legacy")


def row10(results: Results, c: Counts, rnd: int) -> None:
    from .cli import _measure, _rotate

    fastmcp = _fastmcp_command("http")
    if fastmcp is None:
        results.note(10, _missing("fastmcp"))
        return
    results.note(10, _peer_note("fastmcp"))
    commands = {
        "ours": example_server_command("trio", "--transport", "http", "--port", "0"),
        "sdk": sdk_server_command("http"),
        "fastmcp": fastmcp,
    }
    with ExitStack() as stack:
        urls: dict[str, str] = {}
        for name, command in commands.items():
            try:
                urls[name] = stack.enter_context(http_server(command))
            except WorkerError as exc:
                for mode in ROW10_MODES:
                    results.add(10, f"{mode}:{name}", _row10_label(mode, name), {"error": str(exc)})
        pairs = [(mode, name) for mode in ROW10_MODES for name in ROW9_SERVERS if name in urls]
        for mode, name in _rotate(pairs, rnd):
            url = urls[name]
            args = {
                "impl": "trio",
                "jobs": [{"url": url, "mode": mode}],
                "calls": c.http_calls,
                "warmup": c.http_warmup,
                "deadline": c.loop_deadline,
            }

            def one(args: dict[str, Any] = args, url: str = url) -> dict[str, Any]:
                return _one_http_job(url, args, c)

            _measure(results, 10, f"{mode}:{name}", _row10_label(mode, name), one)


def _row10_label(mode: str, server: str) -> str:
    return f"{mode:6} Trio client -> {ROW9_SERVERS[server]}"


ROW11_TITLE = "proxies: sansio-mcp gateway vs mcp-proxy, each in front of a stdio server"
#: Concurrent clients of the throughput figure (issue 37 names 50).
ROW11_CLIENTS = 50
#: mcp-proxy's SDK (1.x) speaks this revision at most; the load generator names it.
MCP_PROXY_REVISION = "2025-11-25"


def _gateway_config(folder: Path) -> Path:
    config = folder / "gateway.json"
    upstream = {"transport": "stdio", "cmd": example_server_command("trio"), "cwd": str(REPO)}
    config.write_text(json.dumps({"connectors": {"ex": upstream}}))
    return config


@contextmanager
def _mcp_proxy(stateless: bool) -> Iterator[str]:
    """mcp-proxy serving the example server (stdio) over Streamable HTTP at /mcp."""
    port = _free_port()
    command = [
        str(_bin("mcp-proxy", "mcp-proxy")), "--host", "127.0.0.1", "--port", str(port),
        "--pass-environment", "--log-level", "WARNING",
        "--stateless" if stateless else "--no-stateless",
        "--", *example_server_command("trio"),
    ]  # fmt: skip
    # It names no port until asked for its log; the free port is ours to announce.
    with http_server(
        [PY, "-c", _ANNOUNCE, str(port), *command], env={"PYTHONUNBUFFERED": "1"}
    ) as url:
        _wait_listening(url)
        yield url


#: Runs a command after printing ``PORT n`` (for servers that announce no port).
_ANNOUNCE = (
    "import os, sys; print('PORT', sys.argv[1], flush=True); os.execv(sys.argv[2], sys.argv[2:])"
)


ROW11_LABELS = {
    "call:gateway": "per call: Trio client -> sansio-mcp gateway (Trio) -> example server",
    "call:mcp-proxy": "per call: Trio client -> mcp-proxy -> example server",
    "load:gateway": "load: many clients -> sansio-mcp gateway (Trio), stateless",
    "load:mcp-proxy": "load: many clients -> mcp-proxy --stateless",
}


def row11(results: Results, c: Counts, rnd: int) -> None:
    from .cli import _measure, _rotate

    if peer_python("mcp-proxy") is None:
        results.note(11, _missing("mcp-proxy"))
        return
    results.note(11, _peer_note("mcp-proxy"))
    from .gateway import gateway_command

    clients = min(ROW11_CLIENTS, c.clients)
    per_client = max(2, c.http_calls // 12)
    with tempfile.TemporaryDirectory() as folder:
        config = _gateway_config(Path(folder))
        proxies: dict[str, Callable[[bool], Any]] = {
            "gateway": lambda _stateless: http_server(gateway_command(config, "trio")),
            "mcp-proxy": _mcp_proxy,
        }
        tools = {"gateway": "ex.echo", "mcp-proxy": "echo"}
        for name in _rotate(list(proxies), rnd):
            # Per call: the handshake era, a session (mcp-proxy's SDK has no stateless era).
            def call(name: str = name) -> dict[str, Any]:
                with proxies[name](False) as url:
                    args = {
                        "impl": "trio",
                        "jobs": [{"url": url, "mode": "legacy", "tool": tools[name]}],
                        "calls": c.http_calls,
                        "warmup": c.http_warmup,
                        "deadline": c.loop_deadline,
                    }

                    return _one_http_job(url, args, c)

            _measure(results, 11, f"call:{name}", ROW11_LABELS[f"call:{name}"], call)
        for name in _rotate(list(proxies), rnd + 1):

            def load(name: str = name) -> dict[str, Any]:
                with proxies[name](True) as url:
                    args: dict[str, Any] = {
                        "url": url,
                        "clients": clients,
                        "calls": per_client,
                        "deadline": c.loop_deadline * 2,
                        "tool": tools[name],
                    }
                    if name == "mcp-proxy":
                        args["protocol"] = MCP_PROXY_REVISION
                    value = run_worker("load", args, timeout=c.worker_timeout)
                    # The row's metric: here the wall time per answered call, all clients
                    # together (1 / throughput).
                    if value.get("calls_per_s"):
                        value["us_per_call"] = 1e6 / value["calls_per_s"]
                    return value

            _measure(results, 11, f"load:{name}", ROW11_LABELS[f"load:{name}"], load)


# Hooks for bench.cli -------------------------------------------------------------------


@dataclass(frozen=True)
class ExtraRow:
    """A row defined outside ``bench.cli``: how it runs, what it measures, how it shows."""

    title: str
    run: Callable[..., None]
    metric: tuple[str, str]
    counts: Callable[[Counts], str]
    lines: Callable[[Results], list[str]]


def _table(
    results: Results,
    row: int,
    base: Callable[[str], str | None],
    vs: str,
    extra: tuple[tuple[str, str], ...] = (("server_cpu_us_per_call", "srv CPU"),),
) -> list[str]:
    """Each variant's median time per call (and ``extra`` figures), and the median of
    its per-round time ratios to ``base(variant)``."""
    from .cli import median_of, paired_ratio

    variants = results.rows.get(row, {})
    notes = [f"  note: {note}" for note in results.notes.get(row, [])]
    if not variants:
        return notes
    labels = results.labels.get(row, {})
    width = max([len(label) for label in labels.values()] + [30])
    head = f"  {'variant':{width}}  {'us/call':>9}"
    head += "".join(f"  {name:>8}" for _, name in extra)
    lines = [f"{head}  {vs:>9}"]
    for variant, rounds in variants.items():
        per = median_of(results, row, variant, "us_per_call")
        line = f"  {labels[variant]:{width}}  {_us(per):>9}"
        for key, _ in extra:
            line += f"  {_us(median_of(results, row, variant, key)):>8}"
        other = base(variant)
        ratio = paired_ratio(results, row, variant, other, "us_per_call") if other else None
        line += f"  {ratio:8.2f}x" if ratio is not None else f"  {'-':>9}"
        errs = [str(v["error"])[:80] for v in rounds if "error" in v]
        if errs:
            line += f"  [{len(errs)} failed: {errs[0]}]"
        lines.append(line)
    return lines + notes


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _row9_lines(results: Results) -> list[str]:
    return _table(results, 9, lambda v: "fastmcp", "time/fmcp")


def _row10_lines(results: Results) -> list[str]:
    return _table(results, 10, lambda v: f"{v.split(':')[0]}:fastmcp", "time/fmcp")


def _row11_lines(results: Results) -> list[str]:
    from .cli import median_of, paired_ratio

    calls = {k: v for k, v in results.rows.get(11, {}).items() if k.startswith("call:")}
    saved = results.rows.get(11, {})
    results.rows[11] = calls
    try:
        lines = _table(results, 11, lambda v: "call:mcp-proxy", "time/mcpp")
    finally:
        results.rows[11] = saved
    notes = len(results.notes.get(11, []))
    body, tail = (lines[:-notes], lines[-notes:]) if notes else (lines, [])
    width = max([len(label) for label in results.labels.get(11, {}).values()] + [30])
    body.append(
        f"  {'variant':{width}}  {'calls/s':>9}  {'errors':>8}  {'p50 ms':>8}  {'vs mcpp':>9}"
    )
    for variant in ("load:gateway", "load:mcp-proxy"):
        if variant not in saved:
            continue
        rate = median_of(results, 11, variant, "calls_per_s")
        errors = median_of(results, 11, variant, "errors")
        p50 = median_of(results, 11, variant, "p50_ms")
        ratio = paired_ratio(results, 11, variant, "load:mcp-proxy", "calls_per_s")
        line = (
            f"  {ROW11_LABELS[variant]:{width}}  {_us(rate):>9}  {_us(errors):>8}  "
            f"{'-' if p50 is None else f'{p50:,.1f}':>8}  "
            + (f"{ratio:8.2f}x" if ratio is not None else f"{'-':>9}")
        )
        errs = [str(v["error"])[:80] for v in saved[variant] if "error" in v]
        if errs:
            line += f"  [{len(errs)} failed: {errs[0]}]"
        body.append(line)
    return body + tail


def _a2a_row() -> ExtraRow:
    from . import a2a

    return ExtraRow(a2a.ROW12_TITLE, a2a.row12, ("us_per_call", "us/call"), a2a.counts, a2a.lines)


EXTRA_ROWS: dict[int, ExtraRow] = {
    9: ExtraRow(
        ROW9_TITLE,
        row9,
        ("us_per_call", "us/call"),
        lambda c: f"{c.stdio_calls} calls after {c.stdio_warmup} warm-up; server CPU from /proc",
        _row9_lines,
    ),
    10: ExtraRow(
        ROW10_TITLE,
        row10,
        ("us_per_call", "us/call"),
        lambda c: (
            f"{c.http_calls} calls after {c.http_warmup} warm-up; server CPU from /proc "
            "over the client's whole run (handshake and warm-up included)"
        ),
        _row10_lines,
    ),
    11: ExtraRow(
        ROW11_TITLE,
        row11,
        ("us_per_call", "us/call"),
        lambda c: (
            f"per call: {c.http_calls} calls after {c.http_warmup} warm-up; load: "
            f"{min(ROW11_CLIENTS, c.clients)} clients x {max(2, c.http_calls // 12)} calls, "
            "raw h11 load generator"
        ),
        _row11_lines,
    ),
    12: _a2a_row(),
}


def extra_targets(results: Results, selected: list[int]) -> list[Any]:
    """Rows 9-12's targets: issue 37's leads, and the A2A bridge's 1.0x."""
    from .cli import Target, paired_ratio

    out: list[Any] = []
    rows = results.rows
    if 9 in rows:
        out.append(
            Target(
                "9-vs-fastmcp",
                "row 9: our stdio server's time per call <= fastmcp's (issue 37: 10-22x ahead)",
                paired_ratio(results, 9, "ours", "fastmcp", "us_per_call"),
                1.0,
                higher_is_better=False,
            )
        )
    if 10 in rows:
        for mode in ROW10_MODES:
            out.append(
                Target(
                    f"10-{mode}-vs-fastmcp",
                    f"row 10 {mode}: our HTTP server's time per call <= fastmcp's",
                    paired_ratio(results, 10, f"{mode}:ours", f"{mode}:fastmcp", "us_per_call"),
                    1.0,
                    higher_is_better=False,
                )
            )
    if 11 in rows:
        out.append(
            Target(
                "11-call-vs-mcp-proxy",
                "row 11: the gateway's time per call <= mcp-proxy's (issue 37: 2-2.6x faster)",
                paired_ratio(results, 11, "call:gateway", "call:mcp-proxy", "us_per_call"),
                1.0,
                higher_is_better=False,
            )
        )
        out.append(
            Target(
                "11-load-vs-mcp-proxy",
                f"row 11: the gateway's calls/s at {ROW11_CLIENTS} clients >= mcp-proxy's "
                "(issue 37: 3-4x)",
                paired_ratio(results, 11, "load:gateway", "load:mcp-proxy", "calls_per_s"),
                1.0,
            )
        )
    if 12 in selected:
        from .a2a import targets as a2a_targets

        out.extend(a2a_targets(results))
    return out


# The docs' table -----------------------------------------------------------------------

#: row -> (variant -> the variant its ratio is taken against, or None), for ``spread``.
_BASES: dict[str, Callable[[str], str | None]] = {
    "9": lambda v: "fastmcp",
    "10": lambda v: f"{v.split(':')[0]}:fastmcp",
    "11": lambda v: f"{v.split(':')[0]}:mcp-proxy",
    "12": lambda v: f"{v.split(':')[0]}:a2a-sdk",
}


def spread(document: dict[str, Any]) -> str:
    """Rows 9-12 of a ``python -m bench`` JSON as a Markdown table: min / median / max
    over rounds of each figure, and of the per-round ratios to the row's peer (time
    per call, server CPU per call; calls/s for the load variants)."""
    import statistics

    def mmm(values: list[float], fmt: str) -> str:
        if not values:
            return "-"
        trio = (min(values), statistics.median(values), max(values))
        return " / ".join(format(v, fmt) for v in trio)

    out = [
        "| row | variant | time per call, us | server CPU per call, us | calls/s "
        "| time ratio to the peer | server CPU ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in ("9", "10", "11", "12"):
        variants = document.get("rows", {}).get(row, {}).get("variants", {})
        for variant, entry in variants.items():
            rounds = entry["rounds"]
            base = _BASES[row](variant)
            other = variants.get(base or "", {}).get("rounds", [])

            def figures(key: str, rounds: list[dict[str, Any]] = rounds) -> list[float]:
                return [r[key] for r in rounds if "error" not in r and key in r]

            def ratios(
                key: str,
                rounds: list[dict[str, Any]] = rounds,
                other: list[dict[str, Any]] = other,
                alone: bool = variant == base,
            ) -> str:
                if alone:
                    return "1" if any(key in r for r in rounds) else "-"
                pairs = zip(rounds, other, strict=False)
                found = [a[key] / b[key] for a, b in pairs if a.get(key) and b.get(key)]
                return mmm(found, ".2f")

            load = variant.startswith("load:")
            out.append(
                f"| {row} | {entry['label'].strip()} | "
                f"{'-' if load else mmm(figures('us_per_call'), ',.0f')} | "
                f"{mmm(figures('server_cpu_us_per_call'), ',.0f')} | "
                f"{mmm(figures('calls_per_s'), ',.0f') if load else '-'} | "
                f"{ratios('calls_per_s' if load else 'us_per_call')} | "
                f"{'-' if load else ratios('server_cpu_us_per_call')} |"
            )
    return "\n".join(out)


if __name__ == "__main__":
    print(spread(json.loads(Path(sys.argv[1]).read_text())))
