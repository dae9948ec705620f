"""Row 8: a tools/call through the gateway (``sansio-mcp gateway``) against the
same call made directly to its upstream, both over Streamable HTTP on loopback,
in the same worker, one after the other (issue 20: the gateway adds <= 25%)."""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._proc import PY, WorkerError, example_server_command, http_server, run_worker

if TYPE_CHECKING:
    from .cli import Counts, Results

__all__ = ["ROW8_MODES", "ROW8_TITLE", "row8", "row8_variants"]

ROW8_TITLE = "gateway: tools/call echo through the gateway vs direct (Streamable HTTP)"
ROW8_MODES = ("modern", "legacy")
#: The gateway's backends measured; the upstream and the client are ours on Trio.
ROW8_GATEWAYS = ("trio", "asyncio")


def row8_variants() -> dict[str, str]:
    """Variant -> label, for the table."""
    out: dict[str, str] = {}
    for mode in ROW8_MODES:
        out[f"{mode}:direct"] = f"{mode:6} Trio client -> example server (direct)"
        for backend in ROW8_GATEWAYS:
            out[f"{mode}:gateway-{backend}"] = (
                f"{mode:6} Trio client -> gateway ({backend}) -> example server"
            )
    return out


def gateway_command(config: Path, backend: str) -> list[str]:
    return [PY, "-m", "sansio_mcp_cli", "gateway", "--config", str(config), "--port", "0",
            "--backend", backend]  # fmt: skip


def row8(results: Results, c: Counts, rnd: int, log: Any) -> None:
    labels = row8_variants()
    with ExitStack() as stack:
        try:
            upstream = stack.enter_context(
                http_server(example_server_command("trio", "--transport", "http", "--port", "0"))
            )
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            config = folder / "gateway.json"
            config.write_text(
                json.dumps({"connectors": {"ex": {"transport": "http", "url": upstream}}})
            )
            gateways = {
                backend: stack.enter_context(http_server(gateway_command(config, backend)))
                for backend in ROW8_GATEWAYS
            }
        except WorkerError as exc:
            for variant, label in labels.items():
                results.add(8, variant, label, {"error": str(exc)})
            return
        jobs: list[dict[str, Any]] = []
        for mode in ROW8_MODES:
            # Direct and through the gateway alternate, their order turned each round.
            order = [("direct", upstream, "echo")] + [
                (f"gateway-{b}", url, "ex.echo") for b, url in gateways.items()
            ]
            shift = rnd % len(order)
            for name, url, tool in order[shift:] + order[:shift]:
                jobs.append({"url": url, "mode": mode, "tool": tool, "variant": f"{mode}:{name}"})
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
            for key in ("url", "mode", "tool"):
                job.pop(key, None)
            results.add(8, variant, labels[variant], job)
            log(f"    row 8 {labels[variant]}: {job.get('error') or job.get('calls_per_s')}")
