"""Row 8: a tools/call through the gateway (``sansio-mcp gateway``) against the
same call made directly to its upstream, both over Streamable HTTP on loopback,
in the same worker, interleaved (issue 20: the gateway adds <= 25%).

Two upstreams: our example server (its echo costs next to nothing, so the
gateway's own work shows at its largest), and server-everything in its
Streamable HTTP mode, a real server that is not ours.

Beside them, for reference, the same call through a transparent TCP relay
(``bench/servers/relay.py``: plain Python, parsing nothing): the least any
process between client and server adds on this machine; and through the same
gateway's virtual MCP endpoint (``/mcp/{VIRTUAL_MCP}``, serving the same
connectors), which should cost no more than its ``/mcp``."""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._proc import (
    PY,
    RELAY,
    WorkerError,
    everything_http_command,
    example_server_command,
    http_server,
    run_worker,
)
from .worker import MESSAGE

if TYPE_CHECKING:
    from ._model import Counts, Results

__all__ = ["ROW8_GROUPS", "ROW8_MODES", "ROW8_TITLE", "row8", "row8_variants"]

ROW8_TITLE = "gateway: tools/call echo through the gateway vs direct (Streamable HTTP)"
ROW8_MODES = ("modern", "legacy")
#: Each group is a direct variant and one per gateway backend; the first two call
#: our example server (the client in that mode), ``everything`` server-everything
#: (a handshake-era server: the client is legacy).
ROW8_GROUPS = (*ROW8_MODES, "everything")
#: The gateway's backends measured; the client is ours on Trio.
ROW8_GATEWAYS = ("trio", "asyncio")
#: The gateway's virtual MCP (over every connector) whose endpoint the ``virtual-*``
#: variants call.
VIRTUAL_MCP = "bench"
#: group -> (client mode, connector, what the echo of the worker's message answers).
_GROUPS = {
    "modern": ("modern", "ex", None),
    "legacy": ("legacy", "ex", None),
    "everything": ("legacy", "ev", "Echo: {message}"),
}
_UPSTREAM_LABELS = {"ex": "example server", "ev": "server-everything"}
EVERYTHING_MISSING = "everything variants skipped: node or server-everything missing (npm ci)"


def row8_variants() -> dict[str, str]:
    """Variant -> label, for the table."""
    out: dict[str, str] = {}
    for group in ROW8_GROUPS:
        mode, connector, _ = _GROUPS[group]
        upstream = _UPSTREAM_LABELS[connector]
        out[f"{group}:direct"] = f"{mode:6} Trio client -> {upstream} (direct)"
        out[f"{group}:relay"] = f"{mode:6} Trio client -> TCP relay -> {upstream}"
        for backend in ROW8_GATEWAYS:
            out[f"{group}:gateway-{backend}"] = (
                f"{mode:6} Trio client -> gateway ({backend}) -> {upstream}"
            )
            out[f"{group}:virtual-{backend}"] = (
                f"{mode:6} Trio client -> gateway ({backend}) /mcp/{VIRTUAL_MCP} -> {upstream}"
            )
    return out


def relay_command(url: str) -> list[str]:
    port = url.split(":")[2].split("/")[0]
    return [PY, str(RELAY), port]


def gateway_command(config: Path, backend: str) -> list[str]:
    return [PY, "-m", "sansio_mcp_cli", "gateway", "--config", str(config), "--port", "0",
            "--backend", backend]  # fmt: skip


def row8(results: Results, c: Counts, rnd: int, log: Any) -> None:
    labels = row8_variants()
    everything = everything_http_command()
    groups = [g for g in ROW8_GROUPS if everything is not None or _GROUPS[g][1] != "ev"]
    if everything is None:
        results.note(8, EVERYTHING_MISSING)
    with ExitStack() as stack:
        try:
            upstreams = {
                "ex": stack.enter_context(
                    http_server(
                        example_server_command("trio", "--transport", "http", "--port", "0")
                    )
                )
            }
            if everything is not None:
                upstreams["ev"] = stack.enter_context(http_server(everything[0], env=everything[1]))
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            config = folder / "gateway.json"
            connectors = {
                name: {"transport": "http", "url": url} for name, url in upstreams.items()
            }
            virtual = {VIRTUAL_MCP: {"connectors": list(connectors)}}
            config.write_text(json.dumps({"connectors": connectors, "virtual_mcps": virtual}))
            relays = {
                name: stack.enter_context(http_server(relay_command(url)))
                for name, url in upstreams.items()
            }
            gateways = {
                backend: stack.enter_context(http_server(gateway_command(config, backend)))
                for backend in ROW8_GATEWAYS
            }
        except WorkerError as exc:
            for group in groups:
                for variant, label in labels.items():
                    if variant.startswith(f"{group}:"):
                        results.add(8, variant, label, {"error": str(exc)})
            return
        jobs: list[dict[str, Any]] = []
        for group in groups:
            mode, connector, answer = _GROUPS[group]
            expect = {"expect": answer.format(message=MESSAGE)} if answer else {}
            # Direct and through the gateway alternate, their order turned each round.
            order = [
                ("direct", upstreams[connector], "echo"),
                ("relay", relays[connector], "echo"),
            ] + [
                (f"{kind}-{b}", url + suffix, f"{connector}.echo")
                for b, url in gateways.items()
                for kind, suffix in (("gateway", ""), ("virtual", f"/{VIRTUAL_MCP}"))
            ]
            shift = rnd % len(order)
            for name, url, tool in order[shift:] + order[:shift]:
                jobs.append(
                    {"url": url, "mode": mode, "tool": tool, "variant": f"{group}:{name}", **expect}
                )
        args = {
            "impl": "trio",
            "jobs": jobs,
            "calls": c.http_calls,
            "warmup": c.http_warmup,
            "deadline": c.loop_deadline,
        }
        try:
            done = run_worker("http", args, timeout=c.worker_timeout * len(jobs) / 2)["jobs"]
        except WorkerError as exc:
            done = [{**job, "error": str(exc)} for job in jobs]
        for job in done:
            variant = job.pop("variant")
            for key in ("url", "mode", "tool", "expect"):
                job.pop(key, None)
            results.add(8, variant, labels[variant], job)
            log(f"    row 8 {labels[variant]}: {job.get('error') or job.get('calls_per_s')}")
