#!/usr/bin/env python3
"""Run the official MCP conformance server suite against the gateway.

    python conformance/gateway.py                       # Trio, the "all" suite
    python conformance/gateway.py --backend asyncio --run 2026-07-28 --out DIR
    python conformance/gateway.py --virtual             # each virtual MCP's /mcp/ID

Starts the conformance fixture server (``conformance/server.py``), puts
``sansio-mcp gateway`` in front of it as connector ``fixture`` and runs
``conformance server`` against the gateway's URL, with the expected-failures
baseline ``conformance/gateway-baseline.yml``: the scenarios that call the
suite's own fixture tools, resources or prompts by name cannot apply to a
gateway (its tools are ``fixture.<name>``; it proxies neither resources nor
prompts), and the fixture's tasks-extension tools are disabled in the gateway's
config (:data:`TASKS_FIXTURE_TOOLS`).

``--virtual`` runs the suite against each virtual MCP endpoint instead
(:data:`VIRTUAL_MCPS`: ``/mcp/alpha`` over connector ``fixture``, ``/mcp/beta`` over
``twin``, each a fixture server of its own), with the same baseline: each endpoint
lists its connector's tools alone (checked before the suite runs), so the same
scenarios apply as at ``/mcp``.  Exit status 0 when every other scenario passed and
no baseline entry passed; 1 otherwise; 2 when the suite is not installed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (  # a script beside run.py, not a package
    LABELS,
    REPO,
    Run,
    fixture_server,
    load_baseline,
    missing_prerequisites,
    report,
    results_folder,
    run_suite,
)

__all__ = [
    "GATEWAY_BASELINE",
    "VIRTUAL_MCPS",
    "gateway_in_front_of",
    "load_baseline",
    "main",
    "virtual_gateway",
]

GATEWAY_BASELINE = Path(__file__).resolve().with_name("gateway-baseline.yml")
#: The fixture's tools for the tasks extension's scenarios, left out of the gateway's
#: listing: the gateway serves no tasks and those scenarios are in the baseline (they
#: call the tools by bare names).  Listed, ``fixture.confirm_delete`` (it needs a
#: ``filename``) would sort first, and http-header-validation calls the first tool
#: listed with no arguments.
TASKS_FIXTURE_TOOLS = (
    "confirm_delete",
    "failing_job",
    "greet",
    "multi_input",
    "protocol_error_job",
    "slow_compute",
    "test_tool_with_task",
)
#: The virtual MCPs of the ``--virtual`` run, by ID: their connectors, each over a
#: fixture server of its own (``fixture`` on Trio, ``twin`` on asyncio).  Neither has
#: API keys: the suite's CLI sends no headers of its own (no option for them).
VIRTUAL_MCPS = {"alpha": ("fixture",), "beta": ("twin",)}


def fixture_connector(upstream: str) -> dict[str, object]:
    """The connector config for the suite's fixture server at ``upstream``."""
    tools = {name: {"enabled": False} for name in TASKS_FIXTURE_TOOLS}
    return {"transport": "http", "url": upstream, "tools": tools}


@contextmanager
def gateway_in_front_of(upstream: str, backend: str, folder: Path) -> Iterator[str]:
    """``sansio-mcp gateway`` with the one connector ``fixture``; yields its URL."""
    config = {"connectors": {"fixture": fixture_connector(upstream)}}
    with gateway_serving(config, backend, folder) as url:
        yield url


@contextmanager
def gateway_serving(config: Mapping[str, object], backend: str, folder: Path) -> Iterator[str]:
    """``sansio-mcp gateway`` with ``config`` (written to ``folder``); yields the URL of
    its ``/mcp``."""
    path = folder / "gateway.json"
    path.write_text(json.dumps(config))
    command = [sys.executable, "-m", "sansio_mcp_cli", "gateway", "--config", str(path),
               "--port", "0", "--backend", backend]  # fmt: skip
    with announced(command, r"gateway: (http://\S+)", folder / f"gateway-{backend}.log") as url:
        yield url


@contextmanager
def announced(command: list[str], pattern: str, log_path: Path) -> Iterator[str]:
    """Run ``command`` until the context ends; yields the first group of ``pattern``
    once a line of its stderr (kept in ``log_path``) matches."""
    log = log_path.open("w", encoding="utf-8")
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=REPO)
    lines: list[str] = []

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            log.write(line)

    threading.Thread(target=drain, daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        while True:
            found = next((m for ln in lines if (m := re.search(pattern, ln))), None)
            if found:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{command[3]} did not start: {''.join(lines[-10:])}")
            time.sleep(0.05)
        yield found.group(1)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@contextmanager
def virtual_gateway(backend: str, folder: Path) -> Iterator[dict[str, str]]:
    """A gateway serving :data:`VIRTUAL_MCPS`, each over a fixture server of its own;
    yields each virtual MCP's URL by ID, once its listing names its connector alone."""
    with ExitStack() as stack:
        connectors = {
            connector: fixture_connector(
                stack.enter_context(
                    fixture_server(folder / f"fixture-{connector}.log", fixture_backend)
                )
            )
            for connector, fixture_backend in (("fixture", "trio"), ("twin", "asyncio"))
        }
        virtual = {vid: {"connectors": list(names)} for vid, names in VIRTUAL_MCPS.items()}
        config = {"connectors": connectors, "virtual_mcps": virtual}
        url = stack.enter_context(gateway_serving(config, backend, folder))
        urls = {vid: f"{url}/{vid}" for vid in VIRTUAL_MCPS}
        for vid, endpoint in urls.items():
            seen = listed_connectors(endpoint)
            if seen != set(VIRTUAL_MCPS[vid]):
                raise RuntimeError(f"/mcp/{vid} lists the tools of {sorted(seen)}")
        yield urls


def listed_connectors(url: str) -> set[str]:
    """The connectors whose tools the first page of ``tools/list`` at ``url`` names."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        tools = json.loads(response.read())["result"]["tools"]
    return {tool["name"].partition(".")[0] for tool in tools}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("trio", "asyncio"), default="trio")
    parser.add_argument("--run", action="append", choices=LABELS, help="default: all")
    parser.add_argument("--out", type=Path, help="results directory (default: a new temp dir)")
    parser.add_argument("--baseline", type=Path, default=GATEWAY_BASELINE)
    parser.add_argument(
        "--virtual",
        action="store_true",
        help="run against each virtual MCP endpoint (/mcp/ID, VIRTUAL_MCPS) instead of /mcp",
    )
    args = parser.parse_args(argv)
    problem = missing_prerequisites()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    out_root = results_folder(args.out, "mcp-gateway-conformance-")

    def suite(url: str, folder: Path, summary_folder: Path) -> int:
        results = [
            run_suite(Run("server", label), folder, server_url=url, baseline_path=args.baseline)
            for label in args.run or ["all"]
        ]
        return report(results, summary_folder)

    if not args.virtual:
        with fixture_server(out_root / "fixture-server.log") as upstream:
            with gateway_in_front_of(upstream, args.backend, out_root) as url:
                return suite(url, out_root / args.backend, out_root)
    status = 0
    with virtual_gateway(args.backend, out_root) as urls:
        for vid, url in urls.items():
            print(f"/mcp/{vid}:")
            folder = out_root / args.backend / vid
            status = max(status, suite(url, folder, folder))
    return status


if __name__ == "__main__":
    sys.exit(main())
