"""``python -m bench``: every comparison, side by side, several rounds.

Each round runs every selected row once, each variant in a fresh child
process (variants interleaved, their order rotated from round to round), so
all figures of a round share the machine's conditions.  The table shows the
median over rounds of each figure, and for each ratio the median of the
per-round ratios (a ratio is only meaningful between figures measured in
the same run).  Targets are those of issue 7.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ._judge import Target, _brief, _log, _measure, _rotate, _values, median_of, paired_ratio
from ._model import FULL, QUICK, Counts, Results
from ._proc import (
    PIN_MODES,
    PY,
    REPO,
    WorkerError,
    child_env,
    everything_command,
    example_server_command,
    http_server,
    load_average,
    node,
    pinned,
    run_worker,
    sdk_server_command,
)
from ._timing import MESSAGE
from .gateway import ROW8_GROUPS, ROW8_TITLE, row8
from .gateway_stdio import ROW14_CALLS_FACTOR, ROW14_TITLE, row14
from .peers import EXTRA_ROWS, extra_targets, setup_peers
from .replicas import ROW13_TITLE, row13, row13_counts, row13_lines, row13_metric, row13_targets

DEFAULT_JSON = REPO / "bench" / "results" / "latest.json"
ROW_IDS = (1, 2, 3, 4, 5, 6, 7, 8, *EXTRA_ROWS, 13, 14)
ROW_TITLES = {
    1: "stdio round trips: sequential tools/call echo -> server-everything",
    2: "stdio servers: raw NDJSON client -> server, sequential tools/call echo",
    3: "codec: one tools/call request + its result, serialized and parsed",
    4: "Streamable HTTP round trips: sequential tools/call echo",
    5: "concurrency: many clients in flight, 2026-07-28 tools/call echo over HTTP",
    6: "import time (fresh interpreter) and memory per idle session",
    7: "bridge: A2E tool/call through the bridge vs a direct MCP call",
    8: ROW8_TITLE,
    **{row: extra.title for row, extra in EXTRA_ROWS.items()},
    14: ROW14_TITLE,
}


# Rows ------------------------------------------------------------------------------


def row1(results: Results, c: Counts, rnd: int) -> None:
    command = everything_command()
    if command is None:
        results.note(1, "skipped: node or server-everything missing (run `npm ci`)")
        return
    variants = [
        ("trio", "ours, Trio client"),
        ("asyncio", "ours, asyncio client"),
        ("sdk", "mcp SDK client (mcp.Client)"),
        ("raw", "raw NDJSON client, blocking pipes (floor)"),
    ]
    cpus, command = pinned(c.pin, command)
    for impl, label in _rotate(variants, rnd):
        args = {
            "impl": impl,
            "command": command,
            "cpus": sorted(cpus) if cpus else None,
            "expect": f"Echo: {MESSAGE}",
            "calls": c.stdio_calls,
            "warmup": c.stdio_warmup,
            "deadline": c.loop_deadline,
        }
        _measure(
            results,
            1,
            impl,
            label,
            partial(run_worker, "stdio", args, timeout=c.worker_timeout),
        )


def row2(results: Results, c: Counts, rnd: int) -> None:
    variants = [
        ("trio", "ours, example server (Trio)", example_server_command("trio")),
        ("asyncio", "ours, example server (asyncio)", example_server_command("asyncio")),
        ("sdk", "mcp SDK MCPServer", sdk_server_command("stdio")),
    ]
    for name, label, server in _rotate(variants, rnd):
        cpus, command = pinned(c.pin, server)
        args = {
            "impl": "raw",
            "command": command,
            "cpus": sorted(cpus) if cpus else None,
            "expect": MESSAGE,
            "calls": c.stdio_calls,
            "warmup": c.stdio_warmup,
            "deadline": c.loop_deadline,
        }
        _measure(
            results,
            2,
            name,
            label,
            partial(run_worker, "stdio", args, timeout=c.worker_timeout),
        )


CODEC_LABELS = {
    "ours": "ours (session path: _json.encode, _json.loads + parse_message)",
    "ours_stdlib": "ours, stdlib json backend forced",
    "sdk": "mcp SDK (pydantic validate_json + model_dump_json)",
    "json": "bare stdlib json (no validation)",
    "orjson": "bare orjson (no validation)",
}


def row3(results: Results, c: Counts, rnd: int) -> None:
    try:
        value = run_worker("codec", {"pairs": c.codec_pairs}, timeout=c.worker_timeout)
    except WorkerError as exc:
        for name, label in CODEC_LABELS.items():
            results.add(3, name, label, {"error": str(exc)})
        _log(f"    row 3: {exc}")
        return
    for name, why in value.pop("unavailable", {}).items():
        results.note(3, f"{name}: not measured ({why})")
    for name, label in CODEC_LABELS.items():
        if name in value:
            results.add(3, name, label, value[name])
            _log(f"    row 3 {label}: {_brief(value[name])}")


HTTP_SERVERS: dict[str, tuple[str, Callable[[], list[str]]]] = {
    "trio": (
        "ours (Trio)",
        partial(example_server_command, "trio", "--transport", "http", "--port", "0"),
    ),
    "asyncio": (
        "ours (asyncio)",
        partial(example_server_command, "asyncio", "--transport", "http", "--port", "0"),
    ),
    "sdk": ("SDK", partial(sdk_server_command, "http")),
}
HTTP_CLIENTS = {"trio": "ours (Trio)", "asyncio": "ours (asyncio)", "sdk": "SDK"}
HTTP_PAIRS = [
    ("trio", "trio"),
    ("asyncio", "asyncio"),
    ("sdk", "sdk"),
    ("trio", "sdk"),
    ("asyncio", "sdk"),
    ("sdk", "trio"),
    ("sdk", "asyncio"),
]
HTTP_MODES = ("legacy", "modern")


def _http_variant(mode: str, client: str, server: str) -> str:
    return f"{mode}:{client}->{server}"


def row4(results: Results, c: Counts, rnd: int) -> None:
    from contextlib import ExitStack

    with ExitStack() as stack:
        urls: dict[str, str] = {}
        for name, (_, command) in HTTP_SERVERS.items():
            try:
                urls[name] = stack.enter_context(http_server(command()))
            except WorkerError as exc:
                _log(f"    row 4: server {name} failed: {exc}")
        for client in _rotate(list(HTTP_CLIENTS), rnd):
            jobs = [
                {"url": urls[server], "mode": mode, "server": server}
                for mode in HTTP_MODES
                for (cl, server) in HTTP_PAIRS
                if cl == client and server in urls
            ]
            args = {
                "impl": client,
                "jobs": jobs,
                "calls": c.http_calls,
                "warmup": c.http_warmup,
                "deadline": c.loop_deadline,
            }
            try:
                out = run_worker("http", args, timeout=c.worker_timeout * max(1, len(jobs)) / 2)
                done = out["jobs"]
            except WorkerError as exc:
                done = [{**job, "error": str(exc)} for job in jobs]
            for job in done:
                server, mode = job.pop("server"), job.pop("mode")
                job.pop("url", None)
                variant = _http_variant(mode, client, server)
                label = (
                    f"{mode:6} {HTTP_CLIENTS[client]} client -> {HTTP_SERVERS[server][0]} server"
                )
                results.add(4, variant, label, job)
                _log(f"    row 4 {label}: {job.get('error') or _brief(job)}")
        for mode in HTTP_MODES:
            for cl, server in HTTP_PAIRS:
                variant = _http_variant(mode, cl, server)
                if server not in urls:
                    label = (
                        f"{mode:6} {HTTP_CLIENTS[cl]} client -> {HTTP_SERVERS[server][0]} server"
                    )
                    results.add(4, variant, label, {"error": f"server {server} did not start"})


def row5(results: Results, c: Counts, rnd: int) -> None:
    for name in _rotate(list(HTTP_SERVERS), rnd):
        label = f"{HTTP_SERVERS[name][0]} server"

        def one(name: str = name) -> dict[str, Any]:
            command: list[str] = HTTP_SERVERS[name][1]()
            with http_server(command) as url:
                args = {
                    "url": url,
                    "clients": c.clients,
                    "calls": c.calls_per_client,
                    "deadline": c.loop_deadline * 2,
                }
                return run_worker("load", args, timeout=c.worker_timeout)

        _measure(results, 5, name, label, one)


IMPORT_SNIPPET = (
    "{prelude}import time; t = time.perf_counter(); {statement}; "
    "print('{{\"seconds_import\": %r}}' % (time.perf_counter() - t))"
)

#: A stdio server's imports on an adapter (its names load on first use).
STDIO_SERVER_IMPORTS = (
    "from sansio_mcp.runtime import Server; from {adapter} import serve_stdio; Server('s')"
)


def _import_time(statement: str, c: Counts, prelude: str = "") -> dict[str, Any]:
    """``statement`` timed in fresh interpreters, after ``prelude`` (not timed)."""
    env = child_env()
    code = IMPORT_SNIPPET.format(statement=statement, prelude=f"{prelude}; " if prelude else "")
    times = []
    for _ in range(c.import_runs):
        proc = subprocess.run(
            [PY, "-c", code],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=c.worker_timeout,
        )
        if proc.returncode != 0:
            raise WorkerError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
        times.append(json.loads(proc.stdout.strip().splitlines()[-1])["seconds_import"])
    return {"seconds_import": statistics.median(times), "runs": times}


def row6(results: Results, c: Counts, rnd: int) -> None:
    env = child_env()
    imports = [
        ("import:sansio_mcp", "import sansio_mcp", "import sansio_mcp", ""),
        ("import:mcp", "import mcp", "import mcp", ""),
        # The adapters' names, and their event loop, load on first use.
        ("import:trio_adapters", "import trio_adapters", "import trio_adapters", ""),
        ("import:asyncio_adapters", "import asyncio_adapters", "import asyncio_adapters", ""),
        # What a program imports with the adapter: its event loop (import mcp loads
        # asyncio too; Trio alone is 0.15x import mcp).
        (
            "import:trio_adapters_loop",
            "import trio, trio_adapters",
            "import trio, trio_adapters",
            "",
        ),
        (
            "import:asyncio_adapters_loop",
            "import asyncio, asyncio_adapters",
            "import asyncio, asyncio_adapters",
            "",
        ),
        # The adapter's own cost for a stdio server, its event loop already imported.
        (
            "import:trio_adapters_own",
            "a stdio server's imports (Server, serve_stdio), Trio already imported",
            STDIO_SERVER_IMPORTS.format(adapter="trio_adapters"),
            "import trio",
        ),
        (
            "import:asyncio_adapters_own",
            "a stdio server's imports (Server, serve_stdio), asyncio already imported",
            STDIO_SERVER_IMPORTS.format(adapter="asyncio_adapters"),
            "import asyncio",
        ),
    ]
    if rnd == 0:
        # Compile once, so every timed import reads bytecode (as an installed package does).
        for _variant, _label, statement, prelude in imports:
            subprocess.run(
                [PY, "-c", f"{prelude}\n{statement}"],
                cwd=REPO,
                env=env,
                capture_output=True,
                timeout=c.worker_timeout,
            )
    for variant, label, statement, prelude in _rotate(imports, rnd):
        _measure(results, 6, variant, label, partial(_import_time, statement, c, prelude))
    memory = [
        ("memory:ours", "idle session, ours (sans-IO ServerSession)", "ours"),
        ("memory:ours_asyncio", "idle session, ours + asyncio runner", "ours_asyncio"),
        ("memory:sdk", "idle session, mcp SDK (Server.run loop + streams)", "sdk"),
    ]
    for variant, label, impl in memory:
        _measure(
            results,
            6,
            variant,
            label,
            partial(
                run_worker,
                "memory",
                {"impl": impl, "sessions": c.sessions},
                timeout=c.worker_timeout,
            ),
        )


NO_BRIDGE = "n/a — no bridge yet"


ROW7_VARIANTS = [
    ("direct", "direct", "direct: our Trio client -> example server"),
    (
        "bridged:inprocess",
        "inprocess",
        "bridged, in-process A2E transport: agent + bridge in one process -> example server",
    ),
    (
        "bridged:stdio",
        "stdio",
        "bridged over stdio: A2E agent -> sansio-mcp bridge -> example server",
    ),
]


def row7(results: Results, c: Counts, rnd: int) -> None:
    import importlib.util

    if importlib.util.find_spec("sansio_mcp_apps.a2e.adapters.trio_client") is None:
        results.note(7, NO_BRIDGE)
        return
    cpus, server = pinned(c.pin, example_server_command("trio"))
    for variant, impl, label in _rotate(ROW7_VARIANTS, rnd):
        args = {
            "impl": impl,
            "server": server,
            "cpus": sorted(cpus) if cpus else None,
            "calls": c.bridge_calls,
            "warmup": c.stdio_warmup,
            "deadline": c.loop_deadline,
        }
        _measure(
            results,
            7,
            variant,
            label,
            partial(run_worker, "bridge", args, timeout=c.worker_timeout),
        )


def _row7_cpu(results: Results) -> str:
    """CPU per call of each side (medians over rounds), for the row-7 table."""
    parts = []
    for variant, name in (
        ("direct", "direct client"),
        ("bridged:inprocess", "in-process agent + bridge"),
        ("bridged:stdio", "stdio agent"),
    ):
        cpu = median_of(results, 7, variant, "client_cpu_us_per_call")
        if cpu is not None:
            parts.append(f"{name} {cpu:,.0f} us")
    bridge_cpu = median_of(results, 7, "bridged:stdio", "bridge_cpu_us_per_call")
    if bridge_cpu is not None:
        parts.append(f"stdio bridge process {bridge_cpu:,.0f} us")
    return "CPU per call (this side only; the server's is the same in all three): " + ", ".join(
        parts
    )


ROWS: dict[int, Callable[[Results, Counts, int], None]] = {
    1: row1,
    2: row2,
    3: row3,
    4: row4,
    5: row5,
    6: row6,
    7: row7,
    8: partial(row8, log=_log),
    **{row: extra.run for row, extra in EXTRA_ROWS.items()},
    14: partial(row14, log=_log),
}

# Row 13 (issue 33, replicas): everything but this registration is in bench/replicas.py.
ROW_TITLES[13] = ROW13_TITLE
ROWS[13] = partial(row13, log=_log)


# Summaries and targets ---------------------------------------------------------------

METRICS = {
    1: ("calls_per_s", "calls/s"),
    2: ("calls_per_s", "calls/s"),
    3: ("pairs_per_s", "pairs/s"),
    4: ("calls_per_s", "calls/s"),
    5: ("calls_per_s", "calls/s"),
    7: ("calls_per_s", "calls/s"),
    8: ("calls_per_s", "calls/s"),
    **{row: extra.metric for row, extra in EXTRA_ROWS.items()},
    14: ("calls_per_s", "calls/s"),
}


def targets(results: Results, selected: list[int]) -> list[Target]:
    out: list[Target] = []
    rows = results.rows
    if 1 in rows:
        for impl, name in (("trio", "Trio"), ("asyncio", "asyncio")):
            out.append(
                Target(
                    f"1-{impl}-vs-sdk",
                    f"row 1: our {name} client >= 2.0x the SDK client's calls/s",
                    paired_ratio(results, 1, impl, "sdk", "calls_per_s"),
                    2.0,
                )
            )
            out.append(
                Target(
                    f"1-{impl}-vs-raw",
                    f"row 1: our {name} client's time per call <= 1.25x the raw client's",
                    paired_ratio(results, 1, impl, "raw", "us_per_call"),
                    1.25,
                    higher_is_better=False,
                )
            )
    if 2 in rows:
        for impl, name in (("trio", "Trio"), ("asyncio", "asyncio")):
            out.append(
                Target(
                    f"2-{impl}-vs-sdk",
                    f"row 2: our {name} server >= 5x the SDK server's calls/s",
                    paired_ratio(results, 2, impl, "sdk", "calls_per_s"),
                    5.0,
                )
            )
    if 3 in rows:
        out.append(
            Target(
                "3-codec",
                "row 3: our codec >= 3x the SDK's pairs/s",
                paired_ratio(results, 3, "ours", "sdk", "pairs_per_s"),
                3.0,
            )
        )
    if 4 in rows:
        for mode in HTTP_MODES:
            base = _http_variant(mode, "sdk", "sdk")
            for impl, name in (("trio", "Trio"), ("asyncio", "asyncio")):
                out.append(
                    Target(
                        f"4-{mode}-{impl}-ours-vs-sdk",
                        f"row 4 {mode}: ours-to-ours ({name}) >= 5x SDK-to-SDK",
                        paired_ratio(
                            results, 4, _http_variant(mode, impl, impl), base, "calls_per_s"
                        ),
                        5.0,
                    )
                )
            for impl, name in (("trio", "Trio"), ("asyncio", "asyncio")):
                out.append(
                    Target(
                        f"4-{mode}-{impl}-client-vs-sdk",
                        f"row 4 {mode}: our {name} client -> SDK server >= SDK-to-SDK",
                        paired_ratio(
                            results, 4, _http_variant(mode, impl, "sdk"), base, "calls_per_s"
                        ),
                        1.0,
                    )
                )
                out.append(
                    Target(
                        f"4-{mode}-{impl}-server-vs-sdk",
                        f"row 4 {mode}: SDK client -> our {name} server >= SDK-to-SDK",
                        paired_ratio(
                            results, 4, _http_variant(mode, "sdk", impl), base, "calls_per_s"
                        ),
                        1.0,
                    )
                )
    if 5 in rows:
        for impl, name in (("trio", "Trio"), ("asyncio", "asyncio")):
            errors = [v for v in _values(results, 5, impl, "errors") if v is not None]
            zero = bool(errors) and all(e == 0 for e in errors)
            out.append(
                Target(
                    f"5-{impl}",
                    f"row 5: our {name} server: zero errors, and ahead of the SDK server",
                    paired_ratio(results, 5, impl, "sdk", "calls_per_s"),
                    1.0,
                    extra_ok=zero,
                    detail=f"errors per round: {[int(e) for e in errors]}",
                )
            )
    if 6 in rows:
        out.append(
            Target(
                "6-import",
                "row 6: import sansio_mcp <= 10% of import mcp",
                paired_ratio(results, 6, "import:sansio_mcp", "import:mcp", "seconds_import"),
                0.10,
                higher_is_better=False,
            )
        )
        for adapter in ("trio_adapters", "asyncio_adapters"):
            loop = adapter.split("_")[0]
            out.append(
                Target(
                    f"6-import-{adapter}",
                    f"row 6: import {loop}, {adapter} <= 12% of import mcp (the adapter with "
                    "its event loop; median of paired per-round ratios, in the same run)",
                    paired_ratio(
                        results, 6, f"import:{adapter}_loop", "import:mcp", "seconds_import"
                    ),
                    0.12,
                    higher_is_better=False,
                )
            )
            for variant, what in (
                ("", f"import {adapter} alone (its names and {loop} load on first use)"),
                ("_own", f"a stdio server's imports on {adapter}, {loop} already imported"),
            ):
                out.append(
                    Target(
                        f"6-import-{adapter}-{variant.strip('_') or 'alone'}",
                        f"row 6, information (not judged): {what}, against import mcp",
                        paired_ratio(
                            results, 6, f"import:{adapter}{variant}", "import:mcp", "seconds_import"
                        ),
                        0.12,
                        higher_is_better=False,
                        judged=False,
                    )
                )
    if 7 in selected:
        measured = 7 in rows
        out.append(
            Target(
                "7-bridge",
                "row 7: the bridge adds <= 20% to a call, judged on the in-process A2E "
                "transport (bridged in-process / direct time per call)",
                paired_ratio(results, 7, "bridged:inprocess", "direct", "us_per_call")
                if measured
                else None,
                1.2,
                higher_is_better=False,
                detail="" if measured else NO_BRIDGE,
            )
        )
        if measured:
            out.append(
                Target(
                    "7-bridge-stdio",
                    "row 7, information (not judged): over stdio, bridged / direct time per "
                    "call (two pipe round trips per call instead of one)",
                    paired_ratio(results, 7, "bridged:stdio", "direct", "us_per_call"),
                    1.2,
                    higher_is_better=False,
                    judged=False,
                )
            )
    if 8 in rows:
        for group in ROW8_GROUPS:
            out.append(
                Target(
                    f"8-{group}-relay",
                    f"row 8 {group}, information (not judged): a transparent TCP relay "
                    "(plain Python, parsing nothing) / direct: the least any hop adds here",
                    paired_ratio(results, 8, f"{group}:relay", f"{group}:direct", "us_per_call"),
                    1.25,
                    higher_is_better=False,
                    judged=False,
                )
            )
            for backend in ("trio", "asyncio"):
                out.append(
                    Target(
                        f"8-{group}-gateway-{backend}",
                        f"row 8 {group}: the gateway ({backend}) adds <= 25% to a call "
                        "(time per call through it / direct)",
                        paired_ratio(
                            results,
                            8,
                            f"{group}:gateway-{backend}",
                            f"{group}:direct",
                            "us_per_call",
                        ),
                        1.25,
                        higher_is_better=False,
                    )
                )
                out.append(
                    Target(
                        f"8-{group}-virtual-{backend}",
                        f"row 8 {group}, information (not judged): the gateway's ({backend}) "
                        "virtual MCP endpoint (/mcp/ID) / its /mcp, same upstream: 1.0x when "
                        "a virtual MCP costs nothing extra",
                        paired_ratio(
                            results,
                            8,
                            f"{group}:virtual-{backend}",
                            f"{group}:gateway-{backend}",
                            "us_per_call",
                        ),
                        1.05,
                        higher_is_better=False,
                        judged=False,
                    )
                )
    if 13 in rows:
        out.extend(row13_targets(results))
    out.extend(extra_targets(results, selected))
    if 14 in rows:
        out.extend(_row14_targets(results))
    return out


def _row14_targets(results: Results) -> list[Target]:
    """Row 14 (issue 37): our gateway against the minimal one (time, and the gateway
    process's CPU per call) and against a direct call."""
    out = [
        Target(
            "14-mini-direct",
            "row 14, information (not judged): the minimal gateway / direct, time per call",
            paired_ratio(results, 14, "mini", "direct", "us_per_call"),
            1.25,
            higher_is_better=False,
            judged=False,
        )
    ]
    for backend in ("trio", "asyncio"):
        ours = f"gateway-{backend}"
        cpu = paired_ratio(results, 14, ours, "mini", "hop_cpu_us_per_call")
        out += [
            Target(
                f"14-gateway-{backend}-time",
                f"row 14: our gateway ({backend}) <= 1.5x the minimal one's time per call",
                paired_ratio(results, 14, ours, "mini", "us_per_call"),
                1.5,
                higher_is_better=False,
            ),
            Target(
                f"14-gateway-{backend}-cpu",
                f"row 14: our gateway ({backend}) <= 2x the minimal one's CPU per call "
                "(the gateway process's own)",
                cpu,
                2.0,
                higher_is_better=False,
                detail="" if cpu is not None else "too few calls to read the CPU (a --quick run)",
            ),
            Target(
                f"14-gateway-{backend}-direct",
                f"row 14: our gateway ({backend}) <= 1.25x a direct call's time",
                paired_ratio(results, 14, ours, "direct", "us_per_call"),
                1.25,
                higher_is_better=False,
            ),
        ]
    return out


# Table -----------------------------------------------------------------------------


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "failed"
    if unit == "s":
        return f"{value * 1000:,.1f} ms"
    if unit == "B":
        return f"{value / 1024:,.1f} KiB"
    if unit == "us":
        return f"{value:,.0f} us"
    return f"{value:,.0f}"


def _row_lines(results: Results, row: int) -> list[str]:
    if row == 13:
        return row13_lines(results)
    lines: list[str] = []
    variants = results.rows.get(row, {})
    labels = results.labels.get(row, {})
    width = max([len(label) for label in labels.values()] + [30])
    if row in (1, 2, 3, 4, 5, 7, 8, 9):
        key, unit = METRICS[row]
        baseline = {1: "sdk", 2: "sdk", 3: "sdk", 5: "sdk", 7: "direct", 9: "direct"}.get(row)
        vs = "vs dir." if row in (7, 8, 9) else "vs SDK"
        head = f"  {'variant':{width}}  {unit:>10}  {'us/call':>9}  {vs:>7}"
        if row == 5:
            head = f"  {'variant':{width}}  {unit:>10}  {'errors':>7}  {'p50 ms':>8}  {'vs SDK':>7}"
        if row == 3:
            head = f"  {'variant':{width}}  {unit:>10}  {'us/pair':>9}  {'vs SDK':>7}"
        lines.append(head)
        for variant in variants:
            med = median_of(results, row, variant, key)
            base = baseline
            if row == 4:
                base = _http_variant(variant.split(":")[0], "sdk", "sdk")
            if row == 8:
                base = f"{variant.split(':')[0]}:direct"
            ratio = paired_ratio(results, row, variant, base, key) if base else None
            ratio_s = f"{ratio:6.2f}x" if ratio is not None else "      -"
            errs = [str(v.get("error"))[:60] for v in variants[variant] if "error" in v]
            if row == 5:
                errors = median_of(results, row, variant, "errors")
                p50 = median_of(results, row, variant, "p50_ms")
                line = (
                    f"  {labels[variant]:{width}}  {_fmt(med, unit):>10}  "
                    f"{_fmt(errors, 'n'):>7}  {_fmt(p50, 'n'):>8}  {ratio_s:>7}"
                )
            else:
                per = median_of(results, row, variant, "us_per_call" if row != 3 else "us_per_pair")
                per_s = f"{per:,.1f}" if row == 3 and per is not None else _fmt(per, "n")
                line = (
                    f"  {labels[variant]:{width}}  {_fmt(med, unit):>10}  {per_s:>9}  {ratio_s:>7}"
                )
            if errs:
                line += f"  [{len(errs)} failed: {errs[0]}]"
            lines.append(line)
    elif row == 6:
        lines.append(f"  {'variant':{width}}  {'median':>10}  {'vs mcp':>7}")
        for variant in variants:
            if variant.startswith("import:"):
                med = median_of(results, row, variant, "seconds_import")
                ratio = paired_ratio(results, row, variant, "import:mcp", "seconds_import")
                ratio_s = f"{ratio:6.1%}" if ratio is not None else "      -"
                lines.append(f"  {labels[variant]:{width}}  {_fmt(med, 's'):>10}  {ratio_s:>7}")
            else:
                med = median_of(results, row, variant, "bytes_per_session")
                ratio = paired_ratio(results, row, variant, "memory:sdk", "bytes_per_session")
                ratio_s = f"{ratio:6.1%}" if ratio is not None else "      -"
                lines.append(f"  {labels[variant]:{width}}  {_fmt(med, 'B'):>10}  {ratio_s:>7}")
    for note in results.notes.get(row, []):
        lines.append(f"  note: {note}")
    return lines


def render(results: Results, c: Counts, selected: list[int], found: list[Target]) -> str:
    placement = {
        "off": "",
        "same": "; stdio rows pinned: client and server on CPU 0",
        "split": "; stdio rows pinned: client on CPU 0, server on CPU 1",
    }[c.pin]
    out = [
        f"sansio-mcp benchmarks: {c.rounds} round(s); medians over rounds; "
        f"ratios are medians of per-round ratios{placement}",
        "",
    ]
    counts = {
        1: f"{c.stdio_calls} calls after {c.stdio_warmup} warm-up",
        2: f"{c.stdio_calls} calls after {c.stdio_warmup} warm-up",
        3: f"median of 5 batches of {c.codec_pairs} pairs per round",
        4: f"{c.http_calls} calls after {c.http_warmup} warm-up; legacy = handshake "
        "session, modern = 2026-07-28 stateless",
        5: f"{c.clients} clients x {c.calls_per_client} calls, keep-alive, raw h11 load generator",
        6: f"import: median of {c.import_runs} fresh interpreters per round; "
        f"memory: tracemalloc over {c.sessions} sessions",
        7: f"{c.bridge_calls} calls after {c.stdio_warmup} warm-up; the server on stdio, "
        "handshake revision",
        8: f"{c.http_calls} calls after {c.http_warmup} warm-up; ratios: time per call "
        "through the gateway / direct",
        **{row: extra.counts(c) for row, extra in EXTRA_ROWS.items()},
        14: f"{ROW14_CALLS_FACTOR * c.http_calls} calls after {c.http_warmup} warm-up; the "
        "example server on stdio, "
        "the gateways serving handshake-era Streamable HTTP",
        13: row13_counts(c),
    }
    for row in selected:
        out.append(f"row {row}. {ROW_TITLES[row]}" + (f" ({counts[row]})" if counts[row] else ""))
        if row in EXTRA_ROWS:
            out.extend(EXTRA_ROWS[row].lines(results))
        elif row == 7 and not results.rows.get(7):
            out.append(f"  {NO_BRIDGE}")
        else:
            out.extend(_row_lines(results, row))
            if row == 7:
                out.append(f"  {_row7_cpu(results)}")
        out.append("")
    out.append("targets (ratios measured in the same run)")
    for t in found:
        if t.value is None:
            value = t.detail or "no data"
        elif t.id == "6-import":
            value = f"{t.value:.1%} (limit {t.threshold:.0%})"
        elif not t.judged:
            value = f"{t.value:.2f}x"
        else:
            sign = ">=" if t.higher_is_better else "<="
            value = f"{t.value:.2f}x (need {sign} {t.threshold:g}x)"
            if t.detail:
                value += f"; {t.detail}"
        status = "n/a " if t.id.startswith("7-bridge") and t.value is None else t.status
        out.append(f"  {status:5} {t.text}: {value}")
    return "\n".join(out)


# Entry point -----------------------------------------------------------------------


def _parse_rows(text: str | None) -> list[int]:
    if not text:
        return list(ROW_IDS)
    rows: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            rows.update(range(int(lo), int(hi) + 1))
        else:
            rows.add(int(part))
    bad = rows - set(ROW_IDS)
    if bad:
        raise SystemExit(f"unknown rows: {sorted(bad)} (rows are 1-{max(ROW_IDS)})")
    return sorted(rows)


def _meta(c: Counts, args: argparse.Namespace) -> dict[str, Any]:
    def version(module: str) -> str | None:
        try:
            from importlib.metadata import version as v

            return v(module)
        except Exception:
            return None

    def git(*cmd: str) -> str:
        try:
            return subprocess.run(
                ["git", *cmd], cwd=REPO, capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except Exception:
            return ""

    node_version = None
    exe = node()
    if exe:
        try:
            node_version = subprocess.run(
                [exe, "--version"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except Exception:
            pass
    everything = None
    pkg = REPO / "node_modules" / "@modelcontextprotocol" / "server-everything" / "package.json"
    if pkg.is_file():
        everything = json.loads(pkg.read_text()).get("version")
    return {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "pin": args.pin,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": {
            "sansio-mcp": version("sansio-mcp"),
            "mcp": version("mcp"),
            "trio": version("trio"),
            "orjson": version("orjson"),
            "pydantic": version("pydantic"),
            "uvicorn": version("uvicorn"),
            "node": node_version,
            "server-everything": everything,
        },
        "git": {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))},
        "counts": c.__dict__,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="sansio-mcp vs the mcp SDK, side by side"
    )
    parser.add_argument("--quick", action="store_true", help="tiny counts (a smoke run)")
    parser.add_argument("--rounds", type=int, help="rounds (default: 3, or 1 with --quick)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write JSON")
    parser.add_argument("--only", help="rows to run, e.g. 1,3 or 2-4 (default: all)")
    parser.add_argument(
        "--pin",
        choices=PIN_MODES,
        default="off",
        help="stdio rows (1, 2, 7): client and server on CPU 0 (same), on CPUs 0 and 1"
        " (split), or wherever the kernel puts them (off, the default)",
    )
    parser.add_argument(
        "--setup-peers",
        action="store_true",
        help="make the peer venvs of rows 9-11 (.bench-venvs/) from requirements/bench-*.lock"
        " (needs PyPI), then stop",
    )
    args = parser.parse_args(argv)
    if args.setup_peers:
        return setup_peers()

    c = Counts(**(QUICK if args.quick else FULL).__dict__)
    if args.pin != "off" and (os.cpu_count() or 1) < 2:
        parser.error("--pin needs at least two CPUs")
    c.pin = args.pin
    if args.rounds is not None:
        if args.rounds < 1:
            parser.error("--rounds must be at least 1")
        c.rounds = args.rounds
    selected = _parse_rows(args.only)
    results = Results()
    meta = _meta(c, args)
    meta["load_average_start"] = load_average()
    started = time.perf_counter()
    for rnd in range(c.rounds):
        for row in selected:
            _log(f"round {rnd + 1}/{c.rounds}, row {row}: {ROW_TITLES[row]}")
            ROWS[row](results, c, rnd)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    meta["load_average_end"] = load_average()

    found = targets(results, selected)
    table = render(results, c, selected, found)
    print(table)

    summary: dict[str, Any] = {}
    for row, variants in results.rows.items():
        key = METRICS.get(row, ("", ""))[0]
        summary[str(row)] = {}
        for variant, rounds in variants.items():
            if row == 6:
                key = "seconds_import" if variant.startswith("import:") else "bytes_per_session"
            if row == 13:
                key = row13_metric(variant)
            summary[str(row)][variant] = {
                "label": results.labels[row][variant],
                "metric": key,
                "median": median_of(results, row, variant, key),
                "rounds": rounds,
            }
    document = {
        "meta": meta,
        "rows": {
            str(row): {
                "title": ROW_TITLES[row],
                "variants": summary.get(str(row), {}),
                "notes": results.notes.get(row, []),
            }
            for row in selected
        },
        "targets": [t.to_json() for t in found],
        "table": table,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    _log(f"wrote {args.json} ({meta['seconds']} s)")
    return 0
