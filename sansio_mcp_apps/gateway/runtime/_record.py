"""A record of every tools/call: one JSON line each in the config's ``call_log``,
and Prometheus metrics for ``GET /metrics``."""

from __future__ import annotations

import datetime
import json
import logging
from typing import Any

import attrs

from ...gateway import ConfigError, ConnectorStatus, GatewayStore

__all__ = ["CallRecord", "CallRecorder"]

logger = logging.getLogger("sansio_mcp_apps.gateway")

#: Latency histogram buckets, in seconds (a tool call may take minutes).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


@attrs.frozen
class CallRecord:
    """One tools/call: where (``endpoint``: a virtual MCP's id, None for the main
    one) and by whom (``principal``: which API key, never the key), to which tool,
    how long it took, how it ended (``ok``, ``tool_error``, the JSON-RPC error
    code, ``input_required``: a 2026-07-28 round that asks its client first, or
    ``cancelled``: its client went away, or the gateway stopped)
    and the sizes of its params and its answer, in bytes of JSON."""

    time: float
    endpoint: str | None
    principal: str | None
    connector: str
    tool: str
    duration_ms: float
    outcome: str | int
    request_bytes: int
    response_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "time": datetime.datetime.fromtimestamp(self.time, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "endpoint": self.endpoint,
            "principal": self.principal,
            "connector": self.connector,
            "tool": self.tool,
            "duration_ms": round(self.duration_ms, 3),
            "outcome": self.outcome,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
        }


class CallRecorder:
    """Appends each :class:`CallRecord` to ``call_log`` (if given) and counts it
    in a registry of its own (if ``metrics``; needs ``prometheus_client``, the
    ``gateway`` extra).

    A line is a few hundred bytes written with one ``write`` of a file opened
    for appending: small enough to go on the event loop (a thread per call
    would cost more than the write), and appends of one line each do not
    interleave, so rotating the file (rename, then new) loses nothing."""

    def __init__(
        self,
        store: GatewayStore,
        connectors: tuple[str, ...],
        *,
        call_log: str | None = None,
        metrics: bool = False,
    ) -> None:
        self.call_log = call_log
        self.store = store
        self.connectors = connectors
        self.registry: Any = None
        if metrics:
            self._metrics()

    def _metrics(self) -> None:
        try:
            import prometheus_client
        except ImportError:  # pragma: no cover - the extra is installed in tests
            raise ConfigError(
                "metrics need prometheus_client: pip install 'sansio-mcp[gateway]'"
            ) from None
        self.registry = prometheus_client.CollectorRegistry(auto_describe=True)
        self.calls = prometheus_client.Counter(
            "gateway_tool_calls",
            "tools/call answered, by connector, tool and outcome",
            ("connector", "tool", "outcome"),
            registry=self.registry,
        )
        self.latency = prometheus_client.Histogram(
            "gateway_tool_call_duration_seconds",
            "How long a tools/call took, by connector",
            ("connector",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.up = prometheus_client.Gauge(
            "gateway_upstream_up",
            "1 while a connector's upstream is connected and listed, else 0",
            ("connector",),
            registry=self.registry,
        )

    def record(self, record: CallRecord) -> None:
        if self.registry is not None:
            outcome = str(record.outcome)
            self.calls.labels(record.connector, record.tool, outcome).inc()
            self.latency.labels(record.connector).observe(record.duration_ms / 1000)
        if self.call_log is not None:
            line = json.dumps(record.to_json(), separators=(",", ":")) + "\n"
            try:
                with open(self.call_log, "a", encoding="utf-8") as file:
                    file.write(line)
            except OSError as exc:
                # The call itself went well: its record is lost, said, not the answer.
                logger.warning("cannot append to call_log %s: %s", self.call_log, exc)

    def exposition(self) -> tuple[str, bytes]:
        """``GET /metrics``: its content type and body, upstreams' state fresh."""
        import prometheus_client

        for name in self.connectors:
            ready = self.store.record(name).status is ConnectorStatus.READY
            self.up.labels(name).set(1 if ready else 0)
        return prometheus_client.CONTENT_TYPE_LATEST, prometheus_client.generate_latest(
            self.registry
        )
